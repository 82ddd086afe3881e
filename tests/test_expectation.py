"""The expected log likelihood E_q[log p(y | f)], q = N(mean, var), and its gradients
(Likelihood.expected_log_prob): against 30-digit integration over a grid of means and
variances (mpmath, committed in tests/data by its script), against finite differences, at
the point mass, and for finiteness."""

from __future__ import annotations

import functools
import importlib.util
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from gpc_compare.likelihoods import Logistic, Probit, Softmax

LIKELIHOODS = [Probit(), Logistic()]
MEANS = [-1e3, -30.0, -5.0, -1.0, 0.0, 0.5, 3.0, 30.0, 1e3]
VARS = [0.0, 1e-8, 1e-2, 1.0, 10.0, 1e2, 1e4, 1e6]
_MAKER = Path(__file__).parent / "data" / "make_expectation_reference.py"


def _reference_module():
    """tests/data/make_expectation_reference.py, imported by path (tests/data is no package)."""
    spec = importlib.util.spec_from_file_location("make_expectation_reference", _MAKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def _reference(name: str, a: float, v: float) -> tuple[float, float, float]:
    """E[g(z)], E[g'(z)], E[g''(z)] / 2 for z ~ N(a, v) with 30 digits: the committed
    table (written by mpmath: tests/data/make_expectation_reference.py)."""
    table = json.loads(_MAKER.with_name("expectation_reference.json").read_text())
    for case in table["cases"]:
        if (case["likelihood"], case["mean"], case["var"]) == (name, a, v):
            return tuple(case["values"])
    raise KeyError(f"no reference for {name} mean={a} var={v}: rerun {_MAKER.name}")


@pytest.mark.parametrize(
    ("name", "a", "v"), [("probit", 3.0, 10.0), ("logistic", -30.0, 1e4), ("probit", -1e3, 1e6)]
)
def test_the_committed_reference_is_mpmaths(name, a, v):
    """The table is what its script computes (three entries recomputed, 30 digits)."""
    maker = _reference_module()
    assert maker.MEANS == MEANS and maker.VARS == VARS
    assert maker.reference(name, a, v) == _reference(name, a, v)


@pytest.mark.parametrize("lik", LIKELIHOODS, ids=lambda lk: lk.name)
@pytest.mark.parametrize("var", VARS)
def test_matches_high_precision_integration(lik, var):
    a = np.array(MEANS)
    for y in (1.0, -1.0):
        E, dm, dv = lik.expected_log_prob(y, y * a, var)  # y mean = a: the same integral
        for i, ai in enumerate(MEANS):
            ref = _reference(lik.name, ai, var)
            where = f"{lik.name} y={y} a={ai} var={var}"
            # relative error where |value| >= 1, absolute below
            assert abs(E[i] - ref[0]) <= 1e-10 * max(1.0, abs(ref[0])), where
            assert abs(y * dm[i] - ref[1]) <= 1e-8 * max(1.0, abs(ref[1])), where
            assert abs(dv[i] - ref[2]) <= 1e-8 * max(1.0, abs(ref[2])), where


@pytest.mark.parametrize("lik", LIKELIHOODS, ids=lambda lk: lk.name)
def test_finite_without_floating_point_errors(lik):
    # overflow, division by zero and invalid operations raise; underflow to zero is the
    # intended value of a term below 1e-308 (as in log_sigmoid), so it is not an error
    a, v = (x.ravel() for x in np.meshgrid(MEANS, VARS))
    with warnings.catch_warnings(), np.errstate(all="raise", under="ignore"):
        warnings.simplefilter("error")
        for y in (1.0, -1.0):
            out = lik.expected_log_prob(y, a, v)
            assert all(np.all(np.isfinite(o)) for o in out)
            E, _, dv = out
            assert np.all(E <= 0) and np.all(dv <= 0)  # log p <= 0, log-concave


@pytest.mark.parametrize("lik", LIKELIHOODS, ids=lambda lk: lk.name)
@pytest.mark.parametrize(
    ("m", "v"), [(0.0, 0.3), (0.4, 0.8), (-1.5, 2.0), (2.0, 30.0), (-40.0, 900.0), (5.0, 5e4)]
)
def test_gradients_match_finite_differences(lik, m, v):
    y = np.array([1.0, -1.0])
    _, dm, dv = lik.expected_log_prob(y, m, v)
    hm, hv = 1e-5 * max(1.0, abs(m)), 1e-5 * v
    fd_m = lik.expected_log_prob(y, m + hm, v)[0] - lik.expected_log_prob(y, m - hm, v)[0]
    fd_v = lik.expected_log_prob(y, m, v + hv)[0] - lik.expected_log_prob(y, m, v - hv)[0]
    scale = max(1.0, abs(m))
    np.testing.assert_allclose(dm, fd_m / (2 * hm), rtol=1e-6, atol=1e-8 * scale)
    np.testing.assert_allclose(dv, fd_v / (2 * hv), rtol=1e-6, atol=1e-8 * scale / v)


@pytest.mark.parametrize("lik", LIKELIHOODS, ids=lambda lk: lk.name)
def test_point_mass_and_small_variance(lik):
    y = np.array([1.0, -1.0, 1.0, -1.0, 1.0])
    m = np.array([-30.0, 0.3, 0.0, 4.0, 1e3])
    log_p, d1, d2, _ = lik.derivatives(y, m)
    E, dm, dv = lik.expected_log_prob(y, m, 0.0)
    np.testing.assert_allclose(E, log_p, rtol=1e-13)
    np.testing.assert_allclose(dm, d1, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(dv, 0.5 * d2, rtol=1e-12, atol=1e-300)
    # E = log p(y | m) + v d2 / 2 + O(v^2) as v -> 0 (for the probit: log Phi(y m))
    v = 1e-6
    E, dm, dv = lik.expected_log_prob(y, m, v)
    np.testing.assert_allclose(E, log_p + 0.5 * v * d2, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(dm, d1, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("v", [0.01, 1.0, 10.0, 1e3, 1e6])
def test_logistic_label_symmetry(v):
    # log sigma(f) - log sigma(-f) = f, so E(y = 1) - E(y = -1) = mean exactly, at any var
    m = np.array([-1e3, -7.0, -0.5, 0.0, 2.0, 60.0, 1e3])
    lik = Logistic()
    up, down = lik.expected_log_prob(1.0, m, v), lik.expected_log_prob(-1.0, m, v)
    np.testing.assert_allclose(up[0] - down[0], m, rtol=1e-13, atol=1e-12 * np.sqrt(v))
    np.testing.assert_allclose(up[1] - down[1], 1.0, rtol=1e-13)
    np.testing.assert_allclose(up[2], down[2], rtol=1e-12, atol=1e-300)


def test_probit_below_its_closed_form_predictive():
    # Jensen: E_q[log Phi(f)] <= log E_q[Phi(f)] = log Phi(m / sqrt(1 + v)) (R&W eq. 3.82)
    lik = Probit()
    m, v = np.array([-3.0, 0.0, 0.5, 4.0, -30.0]), np.array([0.5, 2.0, 40.0, 1e4, 9.0])
    E, _, _ = lik.expected_log_prob(1.0, m, v)
    assert np.all(E <= lik.log_predictive(1.0, m, v))


def test_broadcasting_and_validation():
    lik = Probit()
    E, dm, dv = lik.expected_log_prob(np.array([[1.0], [-1.0]]), np.zeros(3), 1.0)
    assert E.shape == dm.shape == dv.shape == (2, 3)
    assert lik.expected_log_prob(1.0, 0.5, 2.0)[0].shape == ()
    assert lik.expected_log_prob(1.0, np.zeros(0), 1.0)[0].shape == (0,)
    with pytest.raises(ValueError, match="non-negative"):
        lik.expected_log_prob(1.0, 0.0, -1e-12)
    with pytest.raises(ValueError, match="finite"):
        lik.expected_log_prob(1.0, np.nan, 1.0)
    with pytest.raises(ValueError, match="finite"):
        lik.expected_log_prob(1.0, 0.0, np.inf)


def test_many_sites_in_one_call_match_one_at_a_time():
    # sites of every regime in one call (and more than one block of work) agree with
    # the same sites evaluated alone
    rng = np.random.default_rng(3)
    n = 6000
    m = rng.normal(0, 20, n)
    v = 10.0 ** rng.uniform(-9, 6, n)
    v[::7] = 0.0
    y = rng.choice([-1.0, 1.0], n)
    lik = Logistic()
    E, dm, dv = lik.expected_log_prob(y, m, v)
    for i in rng.choice(n, 25, replace=False):
        one = [float(o) for o in lik.expected_log_prob(y[i], m[i], v[i])]
        # equal up to the order of summation
        assert [E[i], dm[i], dv[i]] == pytest.approx(one, rel=1e-13, abs=1e-300)


def test_softmax_has_no_expected_log_prob():
    with pytest.raises(NotImplementedError, match="binary"):
        Softmax(n_classes=3).expected_log_prob(0, np.zeros(3), np.ones(3))
