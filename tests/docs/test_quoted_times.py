"""Every time the documentation quotes has a measurement (issue 34).

``benchmarks/quote_scan.py`` finds the quoted times in what a user reads;
``benchmarks/quote_registry.py`` says how each is measured (``benchmarks/quoted_times.py``
runs them). A new quote without an entry fails here, as does an entry whose phrase left
its file or whose seconds are not those the phrase states. Once the table is committed
(``results/benchmarks/quoted_times.csv``, written on an idle machine) its rows must be the
registry's. Nothing here is timed.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import quote_registry as reg  # noqa: E402
import quote_scan as scan  # noqa: E402

TABLE = ROOT / "results" / "benchmarks" / "quoted_times.csv"


@pytest.fixture(scope="module")
def matches() -> list[scan.Match]:
    return scan.scan(ROOT)


def _spans(file: str, phrase: str) -> list[tuple[str, int, int]]:
    """(text, start, end) of each occurrence of ``phrase`` in ``file``'s scanned texts."""
    phrase = scan.normalise(phrase)
    out = []
    for text in scan.texts(ROOT / file):
        start = text.find(phrase)
        while start >= 0:
            out.append((text, start, start + len(phrase)))
            start = text.find(phrase, start + 1)
    return out


def _places() -> list[tuple[str, str]]:
    return [p for q in reg.QUOTES for p in q.places] + [(f, p) for f, p, _ in reg.NOT_TIMES]


def test_the_scan_finds_times_in_every_form() -> None:
    text = scan.normalise(
        "the run about 3\n#    minutes, 2m53s; (a few minutes); about five minutes; a 14-minute"
        " run; 0.05 s a fit; 1h40m; 10 ms. Not: Bishop 2006, secs. 4.4; 0.0 s.e.; 0.5 min(1, s)"
    )
    found = [m[0] for m in scan.TIME.finditer(text)]
    assert found == [
        "3 minutes", "2m53s", "a few minutes", "five minutes", "14-minute", "0.05 s", "1h40m",
        "10 ms",
    ]  # fmt: skip
    assert scan.phrase_seconds("45 and 57 minutes") == [2700.0, 3420.0]
    stated = scan.phrase_seconds("about 10 minutes on 2 cores for the splits, 15 for the grid")
    assert stated == [600.0, 120.0, 900.0]  # (the 2 of "2 cores" too: a superset)


def test_every_quoted_time_has_an_entry(matches: list[scan.Match]) -> None:
    covered: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for file, phrase in _places():
        for text, start, end in _spans(file, phrase):
            covered.setdefault((file, text), []).append((start, end))
    missing = [
        f"{m.file}: ...{m.context()}..."
        for m in matches
        if not any(s <= m.start and m.end <= e for s, e in covered.get((m.file, m.text), []))
    ]
    assert not missing, "quoted times without an entry in benchmarks/quote_registry.py:\n" + (
        "\n".join(missing)
    )
    assert len(matches) >= 40  # (the scan still reads the files: 49 matches when written)


def test_every_place_stands_once_and_quotes_its_seconds() -> None:
    for file, phrase in _places():
        assert len(_spans(file, phrase)) == 1, f"{file}: {phrase!r} is not found exactly once"
    for q in reg.QUOTES:
        for _file, phrase in q.places:
            stated = scan.phrase_seconds(scan.normalise(phrase))
            assert any(abs(s - q.quoted) <= 1e-9 * q.quoted for s in stated), (q.key, stated)


def test_every_entry_is_measured_or_says_why_not() -> None:
    assert len(reg.by_key()) == len(reg.QUOTES)  # (keys unique)
    for q in reg.QUOTES:
        assert q.clock in {"wall", "cpu", "parsed", "records"}, q.key
        assert (q.clock == "parsed") == (getattr(q.measure, "parse", None) is not None), q.key
        assert (q.clock == "records") == isinstance(q.measure, reg.Records), q.key
        if q.measure is None:
            assert q.reason.split(":")[0] in {"pending", "history", "estimate"}, q.key
            assert q.quoted is not None, q.key  # (an unquoted case is there to be measured)
        if q.quoted is None:
            assert not q.places, q.key
        if isinstance(q.measure, reg.Table):
            assert (ROOT / q.measure.csv).exists() and (
                ROOT / "benchmarks" / q.measure.script
            ).exists()


def test_the_benchmark_quotes_are_their_committed_tables() -> None:
    """A quote of a benchmark's result is its committed value, rounded as quoted."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import quoted_times

    for q in reg.QUOTES:
        if isinstance(q.measure, reg.Table):
            value = quoted_times.read_table(q.measure)
            # (quoted to 3 significant figures, or to the second: 149.8 as "150 s")
            assert abs(value - q.quoted) <= 0.005 * q.quoted + 0.005, (q.key, value)


def test_the_committed_table_is_the_registrys() -> None:
    if not TABLE.exists():
        pytest.skip("results/benchmarks/quoted_times.csv is not committed yet (needs an idle run)")
    with TABLE.open() as fh:
        rows = list(csv.DictReader(fh))
    assert [r["key"] for r in rows] == [q.key for q in reg.QUOTES]
    for r, q in zip(rows, reg.QUOTES, strict=True):
        assert (float(r["quoted_s"]) if r["quoted_s"] else None) == q.quoted, q.key
        if r["ratio"]:
            ratio = float(r["measured_s"]) / q.quoted
            assert abs(float(r["ratio"]) - ratio) <= 1e-9 * ratio, q.key
            assert r["within_2x"] == str(0.5 <= ratio <= 2.0), q.key
    md = (TABLE.parent / "quoted_times.md").read_text()
    title = md.splitlines()[0]  # (not "NOT IDLE", not "INTERRUPTED")
    assert title == "# Quoted times, measured", f"not a table for committing: {title}"


def test_every_measured_quote_holds_within_2x() -> None:
    """The issue's claim: a quote the committed table measured is within 2x of it."""
    if not TABLE.exists():
        pytest.skip("results/benchmarks/quoted_times.csv is not committed yet (needs an idle run)")
    with TABLE.open() as fh:
        off = [f"{r['key']}: {r['where']} quoted {r['quoted_s']}, measured {r['measured_s']}"
               for r in csv.DictReader(fh) if r["within_2x"] == "False"]  # fmt: skip
    assert not off, "quotes more than 2x off their measurement:\n" + "\n".join(off)


def _script():
    import quoted_times

    return quoted_times


@pytest.mark.parametrize("load", [0.0, 9.0])
def test_the_script_refuses_a_busy_machine_and_marks_a_forced_table(
    load: float, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above 0.5 a core it writes nothing without --force, and titles a forced table NOT
    IDLE; a benchmark's entry reads its committed table (no process is run here)."""
    qt = _script()
    monkeypatch.setattr(qt.os, "getloadavg", lambda: (load * (qt.os.cpu_count() or 1), 0, 0))
    only = ["--only", "svgp_fit_100k", "trust_sonar", "--skip-long", "--output", str(tmp_path)]
    code = qt.main(only)
    assert (code, any(tmp_path.iterdir())) == ((0, True) if load == 0 else (2, False))
    assert qt.main([*only, "--force"]) == 0
    title = (tmp_path / "quoted_times.md").read_text().splitlines()[0]
    assert ("NOT IDLE" in title) == (load > 0)
    with (tmp_path / "quoted_times.csv").open() as fh:
        rows = {r["key"]: r for r in csv.DictReader(fh)}
    assert abs(float(rows["svgp_fit_100k"]["ratio"]) - 5.9743888579978375 / 5.97) < 1e-12
    assert rows["svgp_fit_100k"]["within_2x"] == "True"
    assert rows["trust_sonar"]["status"] == "skipped (--skip-long)"


def test_an_interrupted_run_writes_its_table_so_far_marked_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    qt = _script()
    measured = qt.measure

    def measure(q, skip_long, cache):
        if q.key != "svgp_fit_100k":
            raise KeyboardInterrupt
        return measured(q, skip_long, cache)

    monkeypatch.setattr(qt, "measure", measure)
    monkeypatch.setattr(qt.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert qt.main(["--only", "svgp_fit_100k", "keel_magic", "--output", str(tmp_path)]) == 0
    assert "INTERRUPTED" in (tmp_path / "quoted_times.md").read_text().splitlines()[0]
    with (tmp_path / "quoted_times.csv").open() as fh:
        assert [r["status"][:11] for r in csv.DictReader(fh)] == ["benchmarks/", "interrupted"]


def test_an_only_run_puts_its_rows_in_place_in_an_existing_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--only`` into a folder that holds a table replaces its own rows there and keeps
    the others and the page's text (before, it wrote a table of its rows alone)."""
    qt = _script()
    monkeypatch.setattr(qt.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    first = ["svgp_fit_100k", "approximations_multiclass", "multiclass_sparse"]
    assert qt.main(["--only", *first, "--output", str(tmp_path)]) == 0
    page = (tmp_path / "quoted_times.md").read_text()
    with (tmp_path / "quoted_times.csv").open() as fh:
        before = {r["key"]: r for r in csv.DictReader(fh)}
    extra = page.replace("## Machine", "A note of the page's own.\n\n## Machine")
    (tmp_path / "quoted_times.md").write_text(extra)
    assert qt.main(["--only", "multiclass_sparse", "--output", str(tmp_path)]) == 0
    with (tmp_path / "quoted_times.csv").open() as fh:
        after = {r["key"]: r for r in csv.DictReader(fh)}
    assert list(after) == first and after == before  # (the records give the same seconds)
    merged = (tmp_path / "quoted_times.md").read_text()
    assert "A note of the page's own." in merged
    assert merged.count("| gpc-compare run studies/multiclass_sparse.toml") == 1
    assert merged.count("| one SVGP fit at n = 100,000") == 1
    assert "The rows of multiclass_sparse come from a run of their own (`python" in merged
    # the same rows measured again: their line is replaced, not repeated
    assert qt.main(["--only", "multiclass_sparse", "--output", str(tmp_path)]) == 0
    again = (tmp_path / "quoted_times.md").read_text()
    assert again.count("The rows of multiclass_sparse come from a run of their own") == 1
    assert len(again.splitlines()) == len(merged.splitlines())
    # an earlier line right above the table (no blank line between): the header stays
    lines = again.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("The rows of multiclass_"))
    del lines[at + 1]
    (tmp_path / "quoted_times.md").write_text("\n".join(lines) + "\n")
    assert qt.main(["--only", "multiclass_sparse", "--output", str(tmp_path)]) == 0
    third = (tmp_path / "quoted_times.md").read_text()
    assert third.count("| quote | where | quoted | measured | CPU | ratio | within 2x? |") == 1
    assert third.count("The rows of multiclass_sparse come from a run of their own") == 1
