"""Measure every time the documentation quotes (issue 34), and say which hold within 2x.

``python benchmarks/quoted_times.py`` runs each entry of ``benchmarks/quote_registry.py``
as the quote means it (in a fresh interpreter or a subprocess, outputs in a temporary
folder; the best of a few repeats where a run is cheap), reads a benchmark's committed
measurement where the quote is one (and a study's time from its committed records,
``benchmarks/study_times.py``), and writes ``results/benchmarks/quoted_times.md`` and
``quoted_times.csv``: each quote, where it stands, the seconds quoted and measured, their
ratio and whether it lies within [1/2, 2].

The machine must be idle: with a 1-minute load average above 0.5 per core at the start it
refuses (exit 2); ``--force`` runs anyway and titles the table NOT IDLE (not for
committing). ``--skip-long`` skips the runs of a minute or more (the README's two
commands, a few studies' parts and calls); ``--only KEY ...`` runs those entries and, where
``--output`` already holds a table, puts their rows in place of theirs there (the other
rows and the page's text kept, a line under the title saying which rows came from that
run); ``--output DIR`` writes elsewhere.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import quote_registry as reg
import study_times

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "benchmarks"
IDLE_PER_CORE = 0.5
FIELDS = ["key", "what", "where", "quoted_s", "measured_s", "clock", "wall_s", "cpu_s"]
FIELDS += ["ratio", "within_2x", "load_1min", "status"]

#: Runs a Code entry in a fresh interpreter: setup, then each repeat timed (wall, CPU).
RUNNER = """
import json, sys, time
setup, stmt, repeats = json.loads(sys.argv[1])
ns = {"__name__": "__quoted__"}
exec(compile(setup, "<setup>", "exec"), ns)
out = []
for _ in range(repeats):
    w, c = time.perf_counter(), time.process_time()
    exec(compile(stmt, "<stmt>", "exec"), ns)
    out.append((time.perf_counter() - w, time.process_time() - c))
print("QUOTED_TIMES " + json.dumps(out))
"""


class Failed(Exception):
    """A measurement's process failed; the message says how."""


def _run(argv: list[str], env: dict[str, str] | None = None) -> tuple[str, float, float]:
    """Run ``argv`` from the repository root: (stdout, wall seconds, CPU seconds of it and
    its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(
        argv, cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True, text=True
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        raise Failed(f"exit {done.returncode}: {tail[0][:200]}")
    return done.stdout, wall, cpu


def measure_code(m: reg.Code) -> tuple[float, float]:
    """The fastest repeat's (wall, CPU), each repeat in this entry's fresh interpreter or,
    with ``fresh``, each in its own."""
    times: list[tuple[float, float]] = []
    per_process = 1 if m.fresh else m.repeats
    for _ in range(m.repeats if m.fresh else 1):
        arg = json.dumps([m.setup, m.stmt, per_process])
        out, _, _ = _run([sys.executable, "-c", RUNNER, arg])
        line = next(s for s in out.splitlines() if s.startswith("QUOTED_TIMES "))
        times += [tuple(t) for t in json.loads(line.split(" ", 1)[1])]
    return min(times)


def measure_command(m: reg.Command) -> tuple[float, float, float | None]:
    """The fastest repeat's (wall, CPU, the time the command wrote where ``parse`` asks)."""
    best: tuple[float, float, float | None] | None = None
    for _ in range(m.repeats):
        tmp = tempfile.mkdtemp(prefix="quoted-times-")
        try:
            argv = [a.replace(reg.PY, sys.executable).replace(reg.TMP, tmp) for a in m.argv]
            _, wall, cpu = _run(argv, dict(m.env))
            parsed = None
            if m.parse is not None:
                name, pattern, unit = m.parse
                found = re.search(pattern, (Path(tmp) / name).read_text())
                if found is None:
                    raise Failed(f"{pattern!r} not found in {name}")
                parsed = float(found[1]) * unit
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if best is None or wall < best[0]:
            best = (wall, cpu, parsed)
    assert best is not None
    return best


def read_table(m: reg.Table) -> float:
    """A benchmark's committed value (the CSV row whose columns equal ``m.row``)."""
    with (ROOT / m.csv).open() as fh:
        rows = [r for r in csv.DictReader(fh) if all(r[k] == v for k, v in m.row)]
    if len(rows) != 1:
        raise Failed(f"{len(rows)} rows of {m.csv} match {dict(m.row)}")
    return float(rows[0]["value"])


def measure(q: reg.Quote, skip_long: bool, cache: dict) -> dict:
    """One row of the table: the entry measured (or why not)."""
    row = {"key": q.key, "what": q.what, "quoted_s": q.quoted, "clock": q.clock}
    row["load_1min"] = os.getloadavg()[0]  # (this script's previous run included)
    row["where"] = " ; ".join(f'{f}: "{p}"' for f, p in q.places) or "(not quoted)"
    if q.measure is None:
        return {**row, "status": q.reason}
    if q.long and skip_long:
        return {**row, "status": "skipped (--skip-long)"}
    m = q.measure
    try:
        if isinstance(m, reg.Table):
            value = read_table(m)
            row.update(status=f"benchmarks/{m.script}, committed in {m.csv}", clock="table")
        elif isinstance(m, reg.Records):
            value = study_times.seconds(m.key)
            row.update(status="computed from the committed records (benchmarks/study_times.py)")
        else:
            if m not in cache:
                print(f"  {q.key} ...", end=" ", flush=True, file=sys.stderr)
                cache[m] = measure_code(m) if isinstance(m, reg.Code) else measure_command(m)
                print(f"{cache[m][0]:.2f} s", file=sys.stderr)
            wall, cpu, *parsed = cache[m]
            row.update(wall_s=wall, cpu_s=cpu, status="measured")
            value = {"wall": wall, "cpu": cpu}.get(q.clock, parsed[0] if parsed else None)
    except Exception as exc:  # (one entry's failure must not lose an afternoon's table)
        print(f"failed: {exc}", file=sys.stderr)
        return {**row, "status": f"failed: {type(exc).__name__}: {exc}"[:300]}
    row["measured_s"] = value
    if q.quoted is not None and value is not None:
        row["ratio"] = value / q.quoted
        row["within_2x"] = 0.5 <= row["ratio"] <= 2.0
    return row


def _seconds(value) -> str:
    if value is None or value == "":
        return ""
    v = float(value)
    if v >= 100:
        return f"{v:.0f}"
    return f"{v:.3g}"


def markdown(rows: list[dict], facts: dict[str, str], note: str = "") -> str:
    """The table and how it was made; ``note`` follows the title (why it is not for
    committing)."""
    title = "# Quoted times, measured" + note
    lines = [
        title,
        "",
        "Every time README.md, docs/, the docstrings and the study files quote (found by "
        "`benchmarks/quote_scan.py`, listed in `benchmarks/quote_registry.py`), measured "
        "by `benchmarks/quoted_times.py` as the quote means it. Seconds; ratio = "
        "measured / quoted; within 2x: 1/2 <= ratio <= 2. CPU: of the timed "
        "process and its children.",
        "",
        "| quote | where | quoted | measured | CPU | ratio | within 2x? |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        measured = _seconds(r.get("measured_s"))
        if r.get("clock") in ("cpu", "parsed", "table", "records"):
            measured += f" ({r['clock']})" if measured else ""
        if not measured:
            measured = r["status"]
        ratio = f"{r['ratio']:.2f}" if r.get("ratio") is not None else ""
        ok = {True: "yes", False: "**NO**"}.get(r.get("within_2x"), "")
        where = r["where"].replace("|", "\\|")
        cpu = _seconds(r.get("cpu_s"))
        lines.append(
            f"| {r['what']} | {where} | {_seconds(r['quoted_s'])} | {measured} | {cpu} | "
            f"{ratio} | {ok} |"
        )
    lines += ["", "## Machine", ""] + [f"- {k}: {v}" for k, v in facts.items()]
    return "\n".join(lines) + "\n"


def write(rows: list[dict], facts: dict[str, str], note: str, output: Path) -> None:
    output.mkdir(parents=True, exist_ok=True)
    with (output / "quoted_times.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    (output / "quoted_times.md").write_text(markdown(rows, facts, note))


def merge(rows: list[dict], facts: dict[str, str], note: str, output: Path) -> bool:
    """Put ``rows`` (an ``--only`` run's) in place of theirs in the table at ``output``,
    keeping the other rows and the page's text, and say under the title which rows this
    run measured (in place of an earlier run's line about the same rows); rows it did not
    finish keep their earlier values. False (nothing written) where ``output`` holds no
    table."""
    table, page = output / "quoted_times.csv", output / "quoted_times.md"
    if not (table.exists() and page.exists()):
        return False
    rows = [r for r in rows if r.get("status") != "interrupted"]
    with table.open(newline="") as fh:
        old = list(csv.DictReader(fh))
    new = {r["key"]: r for r in rows}
    merged = [new.pop(r["key"], r) for r in old] + list(new.values())
    with table.open("w", newline="") as fh:
        w = csv.DictWriter(fh, FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(merged)
    lines = page.read_text().splitlines()
    header = lines.index("| quote | where | quoted | measured | CPU | ratio | within 2x? |")
    fresh = markdown(rows, facts).splitlines()
    fresh = fresh[fresh.index(lines[header]) + 2 :][: len(rows)]
    for r, line in zip(rows, fresh, strict=True):
        at = [i for i, old_line in enumerate(lines) if old_line.startswith(f"| {r['what']} |")]
        if at:
            lines[at[0]] = line
        else:  # (a new entry: after the table's last row)
            end = header + 2
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            lines.insert(end, line)
    opening = f"The rows of {', '.join(r['key'] for r in rows)} come from a run of their own "
    said = (
        f"{opening}(`{facts['command']}`, {facts['date (UTC)']} UTC, load "
        f"{facts['load average (1, 5, 15 min) at the start'].split(',')[0]} at its start){note}."
    )
    # an earlier run's line about the same rows is replaced (with the blank line after it,
    # where there is one)
    for i in reversed([i for i, line in enumerate(lines[:header]) if line.startswith(opening)]):
        gone = 2 if i + 1 < header and lines[i + 1] == "" else 1
        del lines[i : i + gone]
        header -= gone
    lines[header:header] = [said, ""]
    page.write_text("\n".join(lines) + "\n")
    return True


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--skip-long", action="store_true", help="skip runs of a minute or more")
    p.add_argument("--force", action="store_true", help="run on a busy machine (NOT IDLE)")
    p.add_argument("--only", nargs="+", metavar="KEY", help="measure only these entries")
    p.add_argument("--output", type=Path, default=OUT, help="folder of the table")
    args = p.parse_args(argv)
    unknown = set(args.only or ()) - set(reg.by_key())
    if unknown:
        p.error(f"no entries {sorted(unknown)} in benchmarks/quote_registry.py")
    cores = os.cpu_count() or 1
    load = os.getloadavg()
    idle = load[0] <= IDLE_PER_CORE * cores
    if not idle and not args.force:
        print(
            f"quoted_times: the 1-minute load average is {load[0]:.2f} on {cores} cores "
            f"(above {IDLE_PER_CORE} a core): the times would be inflated; wait for an idle "
            "machine, or --force for a trial table marked NOT IDLE",
            file=sys.stderr,
        )
        return 2
    previous = signal.signal(signal.SIGTERM, _interrupt)  # (a kill, as Ctrl-C)
    quotes = [q for q in reg.QUOTES if not args.only or q.key in args.only]
    t0, cache, rows = time.perf_counter(), {}, []
    note = "" if idle else " (NOT IDLE: not for committing)"
    try:
        for q in quotes:
            rows.append(measure(q, args.skip_long, cache))
    except KeyboardInterrupt:  # (the table so far, said to be partial)
        note += " (INTERRUPTED: partial)"
        rows += [{"key": q.key, "what": q.what, "quoted_s": q.quoted, "status": "interrupted",
                  "where": ""} for q in quotes[len(rows):]]  # fmt: skip
    finally:
        signal.signal(signal.SIGTERM, previous)
    after = os.getloadavg()
    facts = {
        "load average (1, 5, 15 min) at the start": ", ".join(f"{x:.2f}" for x in load),
        "load average at the end (this script's own runs included)": ", ".join(
            f"{x:.2f}" for x in after
        ),
        "idle at the start": f"{'yes' if idle else 'NO'} (1-minute load <= {IDLE_PER_CORE} x "
        f"{cores} cores)",
        "this script's time": f"{time.perf_counter() - t0:.0f} s",
        "python": sys.version.split()[0],
        "date (UTC)": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "command": "python benchmarks/quoted_times.py " + " ".join(argv or sys.argv[1:]),
    }
    if not (args.only and merge(rows, facts, note, args.output)):
        write(rows, facts, note, args.output)
    print(f"wrote {args.output / 'quoted_times.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
