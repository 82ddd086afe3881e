"""results/README.md's time column is computed from the studies' committed records (issue 34:
a study's time is a property of its committed run). ``benchmarks/study_times.py`` computes
each cell; a cell that differs fails here (rewrite them with ``python
benchmarks/study_times.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import study_times as st  # noqa: E402


def test_every_time_cell_of_the_index_is_computed() -> None:
    cells = st.index_cells(st.INDEX.read_text())
    differ = {s: (c, st.study_time(s).cell) for s, c in cells.items() if c != st.study_time(s).cell}
    assert not differ, f"run python benchmarks/study_times.py: {differ}"


def test_a_runner_study_is_its_jobs_over_two_workers() -> None:
    """Against pandas' sum of the committed jobs.csv (approximations: 360 jobs, 162 min)."""
    jobs = pd.read_csv(ROOT / "results" / "approximations" / "jobs.csv").seconds
    time = st.study_time("approximations.toml")
    assert time.exact == pytest.approx(max(jobs.sum() / 2, jobs.max()), rel=1e-12)
    assert time.cell == (
        f"~{jobs.sum() / 120:.0f} min on 2 workers ({len(jobs)} jobs, "
        f"{jobs.sum() / 60:.0f} min of job time)"
    )
    assert time.seconds == round(time.exact / 60) * 60


def test_the_arithmetic() -> None:
    assert st.on_workers([10.0, 20.0, 30.0]) == 30.0
    assert st.on_workers([100.0, 1.0]) == 100.0  # (the longest job)
    assert st.minutes(44.6) == ("45 s", 45.0)
    assert st.minutes(366.0) == ("6.1 min", pytest.approx(366.0))
    assert st.minutes(4870.0) == ("81 min", 4860.0)


def test_rewrite_changes_only_the_time_cells(tmp_path: Path, monkeypatch) -> None:
    text = st.INDEX.read_text()
    cell = st.study_time("kernels.toml").cell
    stale = text.replace(cell, "8.5 min")
    assert stale != text and st.rewrite(stale) == text
    index = tmp_path / "README.md"
    index.write_text(stale)
    monkeypatch.setattr(st, "INDEX", index)
    assert st.main(["--check"]) == 1 and index.read_text() == stale
    assert st.main([]) == 0 and index.read_text() == text
    assert st.main(["--check"]) == 0


def test_a_missing_row_or_statement_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="0 index rows for approximations.toml"):
        st.index_cells("| study | command | time |\n")
    readme = tmp_path / "README.md"
    readme.write_text("no total here")
    with pytest.raises(ValueError, match="not found"):
        st.stated(readme, r"Total run time (\d+) s")
