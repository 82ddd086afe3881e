"""The vectorised R-hat and bulk and tail ESS (gpc_compare._convergence) against ArviZ.

ArviZ 0.23 computes them one scalar entry at a time (``az.rhat`` with method "rank",
``az.ess`` with methods "bulk" and "tail"); ``rank_diagnostics`` must give its numbers,
to 1e-10 relative, NaN where it gives NaN, on well-mixed, autocorrelated, anti-correlated,
non-converged, heavy-tailed, tied, constant and too-short chains; and ``diagnose`` must
give the Diagnostics the ArviZ route gave.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from scipy.signal import lfilter

from gpc_compare._convergence import ess_mean, rank_diagnostics
from gpc_compare.diagnostics import diagnose

from .helpers import arviz_extremes

RTOL = 1e-10


def _az():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import arviz as az
    return az


def _ar1(phi: float, shape: tuple[int, int, int], seed: int) -> np.ndarray:
    """AR(1) chains x_t = phi x_{t-1} + e_t along the draws."""
    e = np.random.default_rng(seed).standard_normal(shape)
    return lfilter([1.0], [1.0, -phi], e, axis=1)


def _balanced_signs(shape: tuple[int, int, int], seed: int) -> np.ndarray:
    """+-1 with each half-chain exactly balanced: the median is 0 and the folded draws are
    all 1, so ArviZ's folded R-hat is NaN and its rank R-hat the bulk one."""
    rng = np.random.default_rng(seed)
    chains, draws, k = shape
    half = draws // 2
    x = np.empty(shape)
    for c in range(chains):
        for j in range(k):
            x[c, :, j] = np.concatenate(
                [rng.permutation(np.repeat([-1.0, 1.0], half // 2)) for _ in range(2)]
            )
    return x


def _cases() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    with_odd = rng.standard_normal((4, 200, 4))
    with_odd[:, :, 1] = 2.5  # a constant entry
    with_odd[0, 7, 2] = np.nan  # an entry holding a NaN
    stuck = np.zeros((2, 40, 2))
    stuck[1] = 1.0  # each chain constant, at different values (see below)
    return {
        "normal": rng.standard_normal((4, 1000, 3)),
        "normal k=1, 2 chains, odd draws": rng.standard_normal((2, 101, 1)),
        "one chain": rng.standard_normal((1, 60, 2)),
        "four draws": rng.standard_normal((3, 4, 2)),
        "three draws": rng.standard_normal((2, 3, 2)),
        "AR(1) 0.95": _ar1(0.95, (4, 500, 3), 1),
        "AR(1) 0.999": _ar1(0.999, (4, 300, 2), 2),
        "AR(1) -0.8 (antithetic)": _ar1(-0.8, (2, 300, 3), 3),
        "different means": rng.standard_normal((4, 300, 3)) + np.arange(4.0)[:, None, None],
        "Cauchy": rng.standard_cauchy((4, 300, 3)),
        "float32 AR(1) 0.9": _ar1(0.9, (4, 100, 4), 20).astype(np.float32),
        "Poisson(0.4) ties": rng.poisson(0.4, (4, 300, 3)).astype(float),
        "integers 0..2": rng.integers(0, 3, (3, 150, 3)),
        "balanced signs": _balanced_signs((4, 100, 2), 4),
        "constant and NaN entries": with_odd,
        "stuck chains": stuck,
    }


CASES = _cases()


def _arviz(x: np.ndarray, numba: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ArviZ's numbers; ``numba=False``: by its numpy path (``np.var``, not its numba
    one-pass variance sum(x^2)/n - mean^2, whose rounding decides "stuck chains")."""
    az = _az()
    ds = az.convert_to_dataset({"x": x})
    had_numba = az.Numba.numba_flag
    if not numba:
        az.Numba.disable_numba()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return (
                az.rhat(ds)["x"].to_numpy(),
                az.ess(ds, method="bulk")["x"].to_numpy(),
                az.ess(ds, method="tail")["x"].to_numpy(),
            )
    finally:
        if had_numba and not numba:
            az.Numba.enable_numba()


@pytest.mark.parametrize("name", list(CASES))
def test_rank_diagnostics_are_arviz_s(name):
    """Stuck chains (each chain constant) are compared with ArviZ's numpy path: their
    within-chain variance is rounding error (np.var of 40 equal z values is 0, R-hat inf),
    and ArviZ's numba variance makes other rounding error of it (here NaN)."""
    x = CASES[name]
    ours = rank_diagnostics(x)
    theirs = _arviz(x, numba=name != "stuck chains")
    for label, mine, az_value in zip(("R-hat", "bulk ESS", "tail ESS"), ours, theirs, strict=True):
        assert mine.shape == (x.shape[2],)
        np.testing.assert_allclose(mine, az_value, rtol=RTOL, err_msg=f"{name}: {label}")


@pytest.mark.parametrize("name", list(CASES))
def test_ess_mean_is_arviz_s(name):
    """``ess_mean`` is ``az.ess(method="mean")`` (the draws' own ESS over split chains, no
    ranks) entry by entry, NaN where ArviZ gives NaN (numpy path for the stuck chains, as
    above)."""
    x = CASES[name]
    az = _az()
    had_numba = az.Numba.numba_flag
    if name == "stuck chains":
        az.Numba.disable_numba()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = az.ess(az.convert_to_dataset({"x": x}), method="mean")["x"].to_numpy()
    finally:
        if had_numba and name == "stuck chains":
            az.Numba.enable_numba()
    np.testing.assert_allclose(ess_mean(x), theirs, rtol=RTOL, err_msg=name)


def test_the_cases_reach_the_edges_they_are_named_for():
    """What the ArviZ comparison above covers, asserted on ArviZ's own numbers."""
    r, b, t = _arviz(CASES["one chain"])
    assert np.isnan(r).all() and np.isfinite(b).all()
    assert all(np.isnan(v).all() for v in _arviz(CASES["three draws"]))
    r, b, t = _arviz(CASES["constant and NaN entries"])
    assert np.isnan(r[1]) and b[1] == t[1] == 800 and np.isnan([r[2], b[2], t[2]]).all()
    assert np.isinf(_arviz(CASES["stuck chains"], numba=False)[0]).all()
    assert (_arviz(CASES["different means"])[0] > 1.5).all()
    assert (_arviz(CASES["AR(1) -0.8 (antithetic)"])[1] > 600).all()  # ESS above S
    assert (_arviz(CASES["AR(1) 0.999"])[1] < 40).all()
    # float32 draws: ArviZ folds them in float32, and in float64 R-hat would differ
    x = CASES["float32 AR(1) 0.9"]
    assert x.dtype == np.float32
    in_float64 = rank_diagnostics(x.astype(np.float64))[0]
    assert np.max(np.abs(in_float64 / _arviz(x)[0] - 1)) > 1e-5


def _idata(f: np.ndarray, theta: np.ndarray, divergences: int = 0):
    diverging = np.zeros(f.shape[:2], dtype=bool)
    diverging.flat[:divergences] = True
    return _az().from_dict(
        posterior={"f": f, "theta": theta}, sample_stats={"diverging": diverging}
    )


@pytest.mark.parametrize(
    "name", ["normal", "one chain", "AR(1) 0.999", "different means", "constant and NaN entries"]
)
@pytest.mark.parametrize("var_names", [["f"], ["f", "theta"], ["theta", "f"]])
def test_diagnose_is_the_arviz_route(name, var_names, monkeypatch):
    """The Diagnostics of the ArviZ route (``diagnose`` with ArviZ's numbers taken as it
    took them before): each variable's NaN-skipping extreme, then Python's max (min) over
    the variables, which keeps a first variable's NaN; a scalar theta is one entry."""
    import gpc_compare.diagnostics as diagnostics

    f = CASES[name]
    theta = np.random.default_rng(5).standard_normal(f.shape[:2])
    if name == "constant and NaN entries":
        theta[:] = 1.0  # a constant scalar: R-hat NaN, first in ["theta", "f"]
    idata = _idata(f, theta, divergences=2)
    ours = diagnose(idata, 1.01, 400.0, var_names)
    monkeypatch.setattr(diagnostics, "_extremes", lambda post, names: arviz_extremes(idata, names))
    theirs = diagnose(idata, 1.01, 400.0, var_names)
    numbers = ("r_hat_max", "ess_bulk_min", "ess_tail_min")
    np.testing.assert_allclose(
        [getattr(ours, a) for a in numbers], [getattr(theirs, a) for a in numbers], rtol=RTOL
    )
    assert dataclasses.replace(ours, **{a: getattr(theirs, a) for a in numbers}) == theirs
    assert ours.divergences == 2 and not ours.passed


def test_diagnose_keeps_a_first_variable_s_nan():
    """R-hat NaN for a constant theta listed first (Python's max keeps it), the largest of
    f's when listed second."""
    f = CASES["normal"]
    idata = _idata(f, np.ones(f.shape[:2]))
    assert np.isnan(diagnose(idata, 1.01, 400.0, ["theta", "f"]).r_hat_max)
    later = diagnose(idata, 1.01, 400.0, ["f", "theta"]).r_hat_max
    assert later == pytest.approx(float(np.max(rank_diagnostics(f)[0])), rel=1e-15)


def test_entries_in_blocks_are_the_entries_alone(monkeypatch):
    """Blocks of entries (bounding the memory) change nothing."""
    import gpc_compare._convergence as conv

    x = CASES["AR(1) 0.95"]
    whole = rank_diagnostics(x)
    monkeypatch.setattr(conv, "_BLOCK", x.shape[0] * x.shape[1])  # one entry a block
    np.testing.assert_array_equal(rank_diagnostics(x), whole)


def test_not_three_dimensional_is_refused():
    with pytest.raises(ValueError, match=r"\(chains, draws, k\)"):
        rank_diagnostics(np.zeros((4, 100)))
