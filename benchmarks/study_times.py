"""A study's running time, computed from its committed records (issue 34).

A study's time is a property of its committed run, so it is computed, not quoted: the
runner's ``jobs.csv`` (each job's ``seconds``, its wall time in its worker), a script's
seconds columns, or the total its README states. The runs may have shared the machine with
other work, so a time here is an upper bound on an idle run, not a promise; "on 2 workers"
is the jobs' time over 2 workers, or the longest job where that is longer.

``python benchmarks/study_times.py`` writes these cells into results/README.md's index
(the "time" column); ``--check`` only reports the cells that differ (exit 1).
``tests/docs/test_study_times.py`` fails where one differs, and
``benchmarks/quote_registry.py`` lists each cell as a quote computed from the records.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
INDEX = RESULTS / "README.md"
WORKERS = 2


class StudyTime(NamedTuple):
    """A study's time: ``seconds`` as the cell states it (its headline, rounded as shown),
    ``exact`` as computed, and the ``cell`` itself."""

    seconds: float
    exact: float
    cell: str


def minutes(seconds: float) -> tuple[str, float]:
    """``seconds`` as the cells show it ("45 s", "6.1 min", "81 min"), and the seconds it
    states."""
    if seconds < 60:
        return f"{seconds:.0f} s", float(round(seconds))
    if seconds < 600:
        return f"{seconds / 60:.1f} min", round(seconds / 60, 1) * 60
    return f"{seconds / 60:.0f} min", round(seconds / 60) * 60.0


def column(path: Path, *names: str) -> list[float]:
    """The sum of the columns ``names`` in each row of the CSV ``path`` (empty cells and
    NaN count 0)."""
    with path.open() as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for r in rows:
        values = [float(r[n]) for n in names if r[n] not in ("", "nan", "NaN")]
        out.append(sum(values))
    return out


def on_workers(jobs: list[float], workers: int = WORKERS) -> float:
    """The jobs' seconds over ``workers``, or the longest job where that is longer."""
    return max(sum(jobs) / workers, max(jobs, default=0.0))


def stated(path: Path, pattern: str) -> float:
    """The number the regex ``pattern`` (its group 1) finds in the file ``path``."""
    found = re.search(pattern, path.read_text())
    if found is None:
        raise ValueError(f"{path}: {pattern!r} not found")
    return float(found[1])


def _time(exact: float, text: Callable[[str], str]) -> StudyTime:
    shown, seconds = minutes(exact)
    return StudyTime(seconds, exact, text(shown))


def runner(*folders: str) -> StudyTime:
    """A runner study (one or several folders of ``jobs.csv``)."""
    jobs = [s for f in folders for s in column(RESULTS / f / "jobs.csv", "seconds")]
    total = minutes(sum(jobs))[0]
    return _time(
        on_workers(jobs),
        lambda t: f"~{t} on {WORKERS} workers ({len(jobs):,} jobs, {total} of job time)",
    )


def approximations_grid() -> StudyTime:
    """Both grids' jobs on 2 workers, then the AIS points annealed again, one by one."""
    grid = RESULTS / "approximations_grid"
    jobs = [s for g in ("probit", "logistic") for s in column(grid / g / "jobs.csv", "seconds")]
    checks = [
        s
        for g in ("probit", "logistic")
        for s in column(grid / g / "ais_check.csv", "ais_seconds", "ais_long_seconds")
    ]
    total, then = minutes(sum(jobs))[0], minutes(sum(checks))[0]
    return _time(
        on_workers(jobs) + sum(checks),
        lambda t: (
            f"~{t} ({len(jobs):,} jobs, {total} of job time, on {WORKERS} workers; "
            f"then {then} of AIS checks)"
        ),
    )


def gold_standard() -> StudyTime:
    """The estimates' seconds columns (what its README sums), one core each."""
    g = RESULTS / "gold_standard"
    est = column(g / "gaussian.csv", "seconds") + column(g / "grid_hard.csv", "seconds")
    return _time(sum(est), lambda t: f"{t} of estimates on one core ({len(est)} estimates)")


def loo() -> StudyTime:
    """Its two parts' seconds columns; the parts run in parallel, one process each."""
    folds = sum(column(RESULTS / "loo" / "folds.csv", *_LOO_COLUMNS))
    ep_loo = sum(column(RESULTS / "loo" / "ep_loo.csv", "seconds"))
    first, second = minutes(folds)[0], minutes(ep_loo)[0]
    return _time(
        max(folds, ep_loo),
        lambda t: (
            f"~{t} (two parts in parallel, one process each: {first} and {second} in "
            "their tables' seconds columns)"
        ),
    )


_LOO_COLUMNS = tuple(
    f"seconds_{kind}_{engine}"
    for engine in ("ep", "laplace_at_ep", "laplace")
    for kind in ("cheap", "exact")
)


def trust() -> StudyTime:
    """trust.py's grid (each check's job seconds) and trust_sonar.py's experiments; the
    splits' part times only its checks (not the fits they check)."""
    t = RESULTS / "trust"
    grid = column(t / "grid.csv", "job_seconds")
    splits = column(t / "trust.csv", "psis_seconds")
    sonar = column(t / "sonar" / "sonar.csv", "seconds")
    parts = minutes(sum(splits))[0], minutes(sum(sonar))[0]
    return _time(
        sum(grid),
        lambda t: (
            f"{t} for the grid's {len(grid)} checks, one process (the splits' "
            f"{len(splits)} checks {parts[0]}, their fits not timed); trust_sonar.py: {parts[1]}"
        ),
    )


def iris() -> StudyTime:
    """Its study's jobs on 2 workers, and the rest of the script as its README states it
    (the script's run less its study part, which resumed from the job records)."""
    jobs = column(RESULTS / "iris" / "jobs.csv", "seconds")
    readme = RESULTS / "iris" / "README.md"
    rest = stated(readme, r"this script's run (\d+) s") - stated(readme, r"its study part (\d+) s")
    total, maps = minutes(sum(jobs))[0], minutes(rest)[0]
    return _time(
        on_workers(jobs) + rest,
        lambda t: (
            f"~{t} ({len(jobs)} jobs, {total} of job time, on {WORKERS} workers; the "
            f"rest {maps}, its README)"
        ),
    )


def synthetic_2d() -> StudyTime:
    """The total its README states."""
    total = stated(RESULTS / "synthetic_2d" / "README.md", r"Total run time (\d+) s")
    return _time(total, lambda t: f"{t} on one BLAS thread (its README's total)")


#: Each study of the index whose time its records give: its script, and how.
STUDIES: dict[str, Callable[[], StudyTime]] = {
    "approximations.toml": lambda: runner("approximations"),
    "approximations_logistic.toml": lambda: runner("approximations_logistic"),
    "approximations_grid.py": approximations_grid,
    "kernels.toml": lambda: runner("kernels"),
    "ep_loo.toml": lambda: runner("ep_loo"),
    "gold_standard.py": gold_standard,
    "trust.py": trust,
    "trust_at_laplace.toml": lambda: runner("trust_at_laplace", "trust_at_kl"),
    "approximations_multiclass.toml": lambda: runner(
        "approximations_multiclass",
        "approximations_multiclass_probit",
        "approximations_multiclass_vowel",
        "approximations_multiclass_vehicle",
        "approximations_multiclass_robustmax",
    ),
    "multiclass_sparse.toml": lambda: runner("multiclass_sparse"),
    "multiclass_sparse_large.toml": lambda: runner("multiclass_sparse_large"),
    "loo.py": loo,
    "synthetic_2d.py": synthetic_2d,
    "iris.py": iris,
    "scale.py": lambda: runner("scale/scale_full", "scale/scale_sparse", "scale/scale_dense"),
}


def study_time(script: str) -> StudyTime:
    """The time of the study ``script`` (a key of :data:`STUDIES`)."""
    return STUDIES[script]()


#: Parts of studies a docstring quotes: the seconds their records give.
PARTS: dict[str, Callable[[], float]] = {
    "trust.py grid": lambda: sum(column(RESULTS / "trust" / "grid.csv", "job_seconds")),
}


def seconds(key: str) -> float:
    """The computed seconds of a study (a key of :data:`STUDIES`) or a part (of
    :data:`PARTS`)."""
    return PARTS[key]() if key in PARTS else study_time(key).exact


def _row(script: str) -> re.Pattern[str]:
    """An index row whose command starts with ``gpc-compare run studies/SCRIPT``: groups
    (the row up to the time cell, the cell, the rest)."""
    command = re.escape(f"`gpc-compare run studies/{script}")
    return re.compile(rf"^(\|[^|\n]*\| {command}[^|\n]*\| )([^|\n]*?)( \|.*)$", re.M)


def index_cells(text: str) -> dict[str, str]:
    """The time cell of each study of :data:`STUDIES` in the index ``text``."""
    out = {}
    for script in STUDIES:
        found = _row(script).findall(text)
        if len(found) != 1:
            raise ValueError(f"results/README.md: {len(found)} index rows for {script}")
        out[script] = found[0][1]
    return out


def rewrite(text: str) -> str:
    """The index ``text`` with every time cell computed."""
    for script in STUDIES:
        cell = study_time(script).cell
        text = _row(script).sub(lambda m, c=cell: m[1] + c + m[3], text)
    return text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="report differing cells, write nothing")
    args = p.parse_args(argv)
    text = INDEX.read_text()
    new = rewrite(text)
    if args.check:
        old, computed = index_cells(text), index_cells(new)
        differ = [f"{s}: {old[s]!r} -> {computed[s]!r}" for s in STUDIES if old[s] != computed[s]]
        print("\n".join(differ) or "every cell is computed", file=sys.stderr)
        return 1 if differ else 0
    if new != text:
        INDEX.write_text(new)
    for script, cell in index_cells(new).items():
        print(f"{script}: {cell}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
