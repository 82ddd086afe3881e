"""results/trust/README.md: its findings are :func:`studies/trust.py`'s ``findings`` of the
committed trust.csv, word for word."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..helpers import study_script

ROOT = Path(__file__).resolve().parents[2]


def test_the_trust_findings_are_computed_from_the_committed_table() -> None:
    trust = study_script("trust")
    df = pd.read_csv(ROOT / "results" / "trust" / "trust.csv")
    readme = (ROOT / "results" / "trust" / "README.md").read_text()
    assert len(df) == 90  # six data sets x 5 splits x (Laplace, EP, KL)
    for line in trust.findings(df):
        assert line in readme, line
