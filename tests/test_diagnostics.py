"""MCMC convergence diagnostics (gpc_compare.diagnostics) on hand-made traces."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from gpc_compare.diagnostics import Diagnostics, check_complete, diagnose


def _idata(f: np.ndarray, diverging: np.ndarray | None = None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz as az

    if diverging is None:
        diverging = np.zeros(f.shape[:2], dtype=bool)
    return az.from_dict(posterior={"f": f}, sample_stats={"diverging": diverging})


def test_well_mixed_independent_draws_pass():
    f = np.random.default_rng(0).standard_normal((4, 500, 3))
    d = diagnose(_idata(f), 1.01, 400.0, ["f"])
    assert isinstance(d, Diagnostics)
    assert d.passed and d.message == "passed" and d.divergences == 0
    assert d.r_hat_max < 1.01 and d.ess_bulk_min > 400 and d.ess_tail_min > 400


def test_stuck_chains_divergences_and_one_chain_are_named():
    rng = np.random.default_rng(1)
    f = rng.standard_normal((2, 200, 2)) + np.array([0.0, 5.0])[:, None, None]
    diverging = np.zeros((2, 200), dtype=bool)
    diverging[0, :3] = True
    d = diagnose(_idata(f, diverging), 1.01, 400.0, ["f"])
    assert not d.passed and d.divergences == 3
    assert "R-hat" in d.message and "bulk ESS" in d.message and "3 divergences" in d.message
    one = diagnose(_idata(f[:1]), 1.01, 10.0, ["f"])
    assert "R-hat undefined" in one.message and not one.passed


def test_a_partial_trace_is_refused():
    idata = _idata(np.zeros((2, 50, 1)))
    check_complete(idata, 50, 2)
    with pytest.raises(RuntimeError, match="sampling stopped early"):
        check_complete(idata, 100, 2)


def test_the_run_is_recorded_beside_the_diagnostics():
    """draws, tune and chains: 0 until the sampler's run records them (``run_nuts``)."""
    import dataclasses

    d = diagnose(_idata(np.random.default_rng(2).standard_normal((2, 50, 1))), 1.1, 10.0, ["f"])
    assert (d.draws, d.tune, d.chains) == (0, 0, 0)
    run = dataclasses.replace(d, draws=50, tune=20, chains=2)
    assert {k: dataclasses.asdict(run)[k] for k in ("draws", "tune", "chains")} == {
        "draws": 50,
        "tune": 20,
        "chains": 2,
    }
