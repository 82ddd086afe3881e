"""The run plan's constants and its check (results/benchmarks/plan.md) are recomputed
from the committed observations (``benchmarks/plan_calibration.py``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd

from gpc_compare.study import plan

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "results" / "benchmarks"


def _calibration():
    spec = importlib.util.spec_from_file_location(
        "plan_calibration", ROOT / "benchmarks" / "plan_calibration.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_plans_constants_are_those_the_observations_fit() -> None:
    obs = pd.read_csv(OUT / "plan_observations.csv")
    assert _calibration().fit_constants(obs) == plan.ENGINE_COSTS


def test_plan_md_is_the_estimate_against_the_actual_time() -> None:
    cal = _calibration()
    obs = pd.read_csv(OUT / "plan_observations.csv")
    table = cal.estimate_vs_actual(obs)
    committed = pd.read_csv(OUT / "plan.csv")
    np.testing.assert_allclose(committed["ratio"], table["ratio"], rtol=1e-3)
    assert (OUT / "plan.md").read_text() == cal.summary_text(table, cal.job_factors(obs))
    factor = np.maximum(table["ratio"], 1 / table["ratio"])
    assert (factor <= 2).mean() > 0.9  # the claim: a study's time within 2x, bar a few
