"""studies/approximations_grid.py on a cheap configuration: one data set, n = 30, a 2 x 2 grid."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpc_compare as gc
from gpc_compare.study import load_study_script

SCRIPT = Path(__file__).resolve().parent.parent / "studies" / "approximations_grid.py"


@pytest.fixture(scope="module")
def study():
    return load_study_script(SCRIPT)


def test_prepare_is_a_stratified_standardised_subsample(study):
    X, y = study.prepare("sonar", 30)
    full = gc.datasets.load("sonar")
    assert X.shape == (30, full.X.shape[1])
    # stratified: the class proportions of the full set, to the nearest case
    assert abs(y.sum() - 30 * full.y.mean()) <= 1
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(X.std(axis=0), 1.0, atol=1e-12)


def test_tasks_match_gc_fit_and_ais_agrees_with_ep_and_cache_is_read(study, tmp_path, monkeypatch):
    specs = study.task_specs(
        tmp_path / "cache", datasets=("crabs",), g=2, n_max=30, temperatures=100, runs=8
    )
    records = study.run_tasks(specs, workers=1)
    assert [r["from_cache"] for r in records] == [False] * 4
    X, y = study.prepare("crabs", 30)
    for spec, record in zip(specs, records, strict=True):
        rows = {row["method"]: row for row in record["rows"]}
        kernel = gc.kernels.SquaredExponential(
            lengthscale=np.exp(spec["log_ell"]), variance=np.exp(2 * spec["log_sf"])
        )
        laplace = gc.fit(X, y, method="laplace", kernel=kernel)
        ep = gc.fit(X, y, method="ep", kernel=kernel, schedule="parallel")
        assert rows["laplace"]["log_evidence"] == pytest.approx(
            laplace.log_marginal_likelihood, abs=1e-10
        )
        assert rows["ep"]["log_evidence"] == pytest.approx(ep.log_marginal_likelihood, abs=1e-10)
        # AIS is an independent (sampling) estimate of log p(y). EP is accurate here: over
        # three AIS seeds at these four points |AIS - EP| / se stayed below 2.4 (EP's own
        # bias, ~0.02 nats at (5, 5), is of the order of AIS's se), so 5 se is a test
        # that fails if either estimate is off by more than sampling noise. At
        # (log ell, log sf) = (0, 5) AIS's se is ~0.5-0.8 (the degenerate corner the
        # study flags), so there the check is weak; elsewhere se is 1e-4 to 0.01 nats.
        ais = rows["ais"]
        assert ais["se"] > 0
        assert abs(ais["log_evidence"] - rows["ep"]["log_evidence"]) < 5 * ais["se"]
        # Laplace's evidence is a lower approximation here (K&R 2005): never above AIS's
        assert rows["laplace"]["log_evidence"] < ais["log_evidence"] + 5 * ais["se"]
    # a cache file per task, and a rerun reads them all without recomputing
    files = sorted((tmp_path / "cache").glob("*.json"))
    assert len(files) == 4
    mtimes = [f.stat().st_mtime_ns for f in files]
    again = study.run_tasks(specs, workers=1)
    assert [r["from_cache"] for r in again] == [True] * 4
    assert [f.stat().st_mtime_ns for f in files] == mtimes
    assert [r["rows"] for r in again] == [json.loads(json.dumps(r["rows"])) for r in records]
    # the check: only the degenerate point (0, 5) (se 0.50 > SE_MAX at T = 100) is annealed
    # again; 1000 temperatures bring its se under SE_MAX (0.27) and it agrees with EP
    monkeypatch.setattr(study, "CHECK_TEMPERATURES", 1000)
    df = study.tidy(records)
    check = study.check_disagreements(df, specs, workers=1)
    assert list(zip(check.log_lengthscale, check.log_sf, strict=True)) == [(0.0, 5.0)]
    row = check.iloc[0]
    assert row.ais_se > study.SE_MAX >= row.ais_long_se
    assert abs(row.ais_long - row.ep) < 5 * row.ais_long_se
    best = study.with_gold_standard(df, check)
    replaced = best[best.checked]
    assert len(replaced) == 1 and replaced.method.iloc[0] == "ais"
    assert replaced.log_evidence.iloc[0] == row.ais_long
    pd.testing.assert_frame_equal(best.drop(columns="checked")[~best.checked], df[~best.checked])
    # a changed setting (more AIS runs) does not reuse a stale file
    changed = study.task_specs(
        tmp_path / "cache", datasets=("crabs",), g=2, n_max=30, temperatures=100, runs=4
    )
    assert study.read_cache(changed[0]) is None


def test_forkserver_workers_give_the_serial_results(study, tmp_path):
    # the workers import the script by name from its directory (not as this test's module
    # name): the pool must run, and with the same seeds reproduce the in-process numbers
    kwargs = {"datasets": ("crabs",), "g": 2, "n_max": 20, "temperatures": 20, "runs": 4}
    serial = study.run_tasks(study.task_specs(tmp_path / "a", **kwargs), workers=1)
    pooled = study.run_tasks(study.task_specs(tmp_path / "b", **kwargs), workers=2)
    assert [r["from_cache"] for r in pooled] == [False] * 4
    for a, b in zip(serial, pooled, strict=True):
        for ra, rb in zip(a["rows"], b["rows"], strict=True):
            assert ra["log_evidence"] == rb["log_evidence"]
            assert ra["se"] == rb["se"] or (np.isnan(ra["se"]) and np.isnan(rb["se"]))
