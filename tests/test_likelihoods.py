"""Likelihoods: derivatives against finite differences, closed forms against quadrature,
quadrature against 30-digit integration, and finiteness deep in the tails."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from gpc_compare.likelihoods import Gaussian, Likelihood, Logistic, Probit, get_likelihood

LIKELIHOODS = [Probit(), Logistic()]
F_GRID = np.array([-30.0, -8.0, -2.0, -0.3, 0.0, 0.7, 3.0, 9.0, 30.0])


@pytest.mark.parametrize("lik", LIKELIHOODS, ids=lambda lk: lk.name)
@pytest.mark.parametrize("y", [1.0, -1.0])
def test_derivatives_match_finite_differences(lik, y):
    f = F_GRID[np.abs(F_GRID) < 10]  # beyond, differences of d2 ~ -1 drown in rounding
    h = 1e-5
    ys = np.full_like(f, y)
    derivs = lik.derivatives(ys, f)
    np.testing.assert_allclose(derivs[0], lik.log_prob(ys, f), rtol=1e-15)
    for k in range(3):
        numeric = (lik.derivatives(ys, f + h)[k] - lik.derivatives(ys, f - h)[k]) / (2 * h)
        np.testing.assert_allclose(
            derivs[k + 1], numeric, rtol=2e-6, atol=1e-9, err_msg=f"d{k + 1}"
        )


def _mp_log_lik(name: str, y: float):
    if name == "probit":
        return lambda f: (
            mpmath.log(mpmath.ncdf(y * f)) if y * f < 0 else mpmath.log1p(-mpmath.ncdf(-y * f))
        )
    return lambda f: -mpmath.log1p(mpmath.exp(-y * f))


@pytest.mark.parametrize("lik", LIKELIHOODS, ids=lambda lk: lk.name)
@pytest.mark.parametrize("y", [1.0, -1.0])
def test_derivatives_match_high_precision(lik, y):
    fun = _mp_log_lik(lik.name, y)
    grid = np.concatenate([F_GRID, [-150.0, 150.0]])
    derivs = lik.derivatives(np.full_like(grid, y), grid)
    with mpmath.workdps(100):  # enough digits for derivatives of size exp(-150)
        for i, f in enumerate(grid):
            for k in range(1, 4):
                ref = float(mpmath.diff(fun, mpmath.mpf(f), k))
                assert derivs[k][i] == pytest.approx(ref, rel=1e-9, abs=1e-300), (f, k)


@pytest.mark.parametrize("lik", LIKELIHOODS, ids=lambda lk: lk.name)
def test_log_concave_with_bounded_curvature(lik):
    f = np.linspace(-50, 50, 1001)
    _, _, d2, _ = lik.derivatives(np.ones_like(f), f)
    assert np.all(d2 <= 0)
    assert np.all(-d2 <= 1.0 + 1e-12)


@pytest.mark.parametrize("f", [-1e6, -800.0, -40.0, 40.0, 800.0, 1e6])
@pytest.mark.parametrize("lik", LIKELIHOODS, ids=lambda lk: lk.name)
def test_finite_deep_in_the_tails(lik, f):
    out = lik.derivatives(np.array([1.0, -1.0]), np.array([f, f]))
    for arr in out:
        assert np.all(np.isfinite(arr))


def test_tail_values_are_exact():
    assert Probit().log_prob(1.0, -40.0) == pytest.approx(-804.6084420137538, rel=1e-14)
    assert Logistic().log_prob(1.0, -800.0) == -800.0
    # probit curvature W -> 1 far in the lower tail (the Mills ratio asymptote)
    _, _, d2, _ = Probit().derivatives(np.array([1.0]), np.array([-1e4]))
    assert -d2[0] == pytest.approx(1.0 - 1.0 / 1e8, rel=1e-10)


MV_GRID = [
    (0.0, 0.5),
    (0.4, 2.0),
    (-3.0, 0.01),
    (30.0, 1.0),
    (-30.0, 10.0),
    (30.0, 100.0),
    (2.0, 1e4),
    (700.0, 1.0),
]


@pytest.mark.parametrize(("m", "v"), MV_GRID)
@pytest.mark.parametrize("y", [1.0, -1.0])
def test_probit_closed_forms_equal_quadrature(m, v, y):
    p = Probit()
    logz_q, mean_q, var_q = Likelihood.quadrature(p, np.array([y]), np.array([m]), np.array([v]))
    logz, mean, var = p.tilted_moments(np.array([y]), np.array([m]), np.array([v]))
    assert p.log_predictive(y, m, v) == pytest.approx(logz_q[0], rel=1e-10, abs=1e-12)
    assert logz[0] == pytest.approx(logz_q[0], rel=1e-10, abs=1e-12)
    assert mean[0] == pytest.approx(mean_q[0], rel=1e-9, abs=1e-9 * np.sqrt(v))
    assert var[0] == pytest.approx(var_q[0], rel=1e-8)


def _mp_logistic_log_z(y: float, m: float, v: float) -> float:
    """log int sigma(y f) N(f | m, v) df with 30-digit arithmetic."""
    with mpmath.workdps(30):
        s = mpmath.sqrt(v)

        def integrand(f):
            return (
                mpmath.exp(-((f - m) ** 2) / (2 * v))
                / (s * mpmath.sqrt(2 * mpmath.pi))
                / (1 + mpmath.exp(-y * f))
            )

        pts = sorted({m - 40 * s, min(max(0.0, m - 40 * s), m + 40 * s), m, m + 40 * s})
        return float(mpmath.log(mpmath.quad(integrand, pts)))


@pytest.mark.parametrize(
    ("m", "v"), [(0.0, 1.0), (3.0, 0.01), (30.0, 1.0), (-30.0, 4.0), (30.0, 100.0), (-2.0, 10.0)]
)
@pytest.mark.parametrize("y", [1.0, -1.0])
def test_logistic_quadrature_equals_brute_force(m, v, y):
    ours = Logistic().log_predictive(y, m, v)
    assert ours == pytest.approx(_mp_logistic_log_z(y, m, v), abs=1e-8, rel=1e-10)


def test_logistic_predictive_never_clipped():
    lik = Logistic()
    # a confident mistake: log p(y = +1) at m = -40 is about -40, not log(1e-15) or -inf
    lp = lik.log_predictive(1.0, -40.0, 0.01)
    assert lp == pytest.approx(-39.995, abs=1e-3)
    assert 0.0 < lik.predict_proba(np.array([-40.0]), np.array([0.01]))[0] < 1e-17


def test_probit_approximation_option():
    lik = Logistic()
    m, v = np.array([-2.0, 0.5, 3.0]), np.array([0.5, 2.0, 10.0])
    kappa = 1.0 / np.sqrt(1.0 + np.pi * v / 8.0)  # Bishop 4.154
    approx = lik.predict_proba(m, v, integration="probit_approximation")
    np.testing.assert_allclose(approx, 1.0 / (1.0 + np.exp(-kappa * m)), rtol=1e-14)
    exact = lik.predict_proba(m, v)
    # Bishop's approximation is good to about 0.02 in probability (R&W section 3.4)
    assert np.max(np.abs(approx - exact)) < 0.02
    assert np.max(np.abs(approx - exact)) > 1e-5  # ... and it is an approximation
    # for the probit link the "approximation" is the exact answer
    np.testing.assert_allclose(
        Probit().predict_proba(m, v, integration="probit_approximation"),
        Probit().predict_proba(m, v),
    )
    with pytest.raises(ValueError, match="integration must be one of"):
        lik.predict_proba(m, v, integration="laplace")


def test_quadrature_is_exact_for_a_point_mass():
    lz, mean, var = Logistic().quadrature(np.array([1.0]), np.array([0.3]), np.array([0.0]))
    assert lz[0] == Logistic().log_prob(1.0, 0.3)
    assert (mean[0], var[0]) == (0.3, 0.0)


def test_get_likelihood():
    assert isinstance(get_likelihood("probit"), Probit)
    assert isinstance(get_likelihood("Logistic"), Logistic)
    lik = Logistic()
    assert get_likelihood(lik) is lik
    with pytest.raises(ValueError, match="likelihood must be one of"):
        get_likelihood("cauchit")
    with pytest.raises(ValueError, match="non-negative"):
        Probit().log_predictive(1.0, 0.0, -1.0)


# ------------------------------------------------------------------- Gaussian (regression)
GAUSS_CASES = [
    (0.1, 0.3, -0.2, 0.5),
    (1.0, -2.0, 1.0, 2.0),
    (2.5, 4.0, -1.0, 0.01),
    (0.3, 0.0, 3.0, 50.0),
]


def _gauss_integral(fun, m, v):
    """int fun(f) N(f | m, v) df by adaptive quadrature (scipy), over +-40 sd."""
    from scipy import integrate

    sd = np.sqrt(v)

    def integrand(f):
        return fun(f) * np.exp(-0.5 * (f - m) ** 2 / v) / np.sqrt(2 * np.pi * v)

    return integrate.quad(integrand, m - 40 * sd, m + 40 * sd, points=[m], limit=400,
                          epsabs=0.0, epsrel=1e-13)[0]  # fmt: skip


@pytest.mark.parametrize("s2", [0.05, 1.0, 7.0])
def test_gaussian_derivatives_match_finite_differences(s2):
    lik = Gaussian(variance=s2)
    f = np.linspace(-4.0, 4.0, 17)
    y = np.full_like(f, 0.7)
    derivs = lik.derivatives(y, f)
    np.testing.assert_allclose(derivs[0], lik.log_prob(y, f), rtol=1e-15)
    expected = -0.5 * np.log(2 * np.pi * s2) - (y - f) ** 2 / (2 * s2)
    np.testing.assert_allclose(derivs[0], expected, rtol=1e-14)
    h = 1e-5
    for k in range(3):
        numeric = (lik.derivatives(y, f + h)[k] - lik.derivatives(y, f - h)[k]) / (2 * h)
        np.testing.assert_allclose(
            derivs[k + 1], numeric, rtol=1e-7, atol=1e-7, err_msg=f"d{k + 1}"
        )
    assert np.all(derivs[3] == 0.0) and derivs[2].shape == f.shape


@pytest.mark.parametrize(("s2", "y", "m", "v"), GAUSS_CASES)
def test_gaussian_tilted_moments_and_predictive_equal_integration(s2, y, m, v):
    lik = Gaussian(variance=s2)

    def p(f):
        return np.exp(lik.log_prob(y, f))

    Z = _gauss_integral(p, m, v)
    mean = _gauss_integral(lambda f: f * p(f), m, v) / Z
    var = _gauss_integral(lambda f: (f - mean) ** 2 * p(f), m, v) / Z
    log_z, t_mean, t_var = lik.tilted_moments(np.array([y]), np.array([m]), np.array([v]))
    assert log_z[0] == pytest.approx(np.log(Z), rel=1e-10, abs=1e-10)
    assert t_mean[0] == pytest.approx(mean, rel=1e-9, abs=1e-10)
    assert t_var[0] == pytest.approx(var, rel=1e-8)
    assert lik.log_predictive(y, m, v) == pytest.approx(np.log(Z), rel=1e-10, abs=1e-10)


@pytest.mark.parametrize(("s2", "y", "m", "v"), GAUSS_CASES)
def test_gaussian_expected_log_prob_equals_integration(s2, y, m, v):
    lik = Gaussian(variance=s2)
    E, dm, dv = lik.expected_log_prob(np.array([y]), np.array([m]), np.array([v]))
    assert E[0] == pytest.approx(_gauss_integral(lambda f: lik.log_prob(y, f), m, v), rel=1e-10)
    h = 1e-5
    num_dm = (lik.expected_log_prob(y, m + h, v)[0] - lik.expected_log_prob(y, m - h, v)[0]) / (
        2 * h
    )
    num_dv = (lik.expected_log_prob(y, m, v + h)[0] - lik.expected_log_prob(y, m, v - h)[0]) / (
        2 * h
    )
    assert dm[0] == pytest.approx(float(num_dm), rel=1e-7, abs=1e-8)
    assert dv[0] == pytest.approx(float(num_dv), rel=1e-7)
    assert dm[0] == pytest.approx((y - m) / s2, rel=1e-14) and dv[0] == -0.5 / s2


def test_gaussian_point_mass_and_broadcasting():
    lik = Gaussian(variance=0.5)
    log_z, mean, var = lik.tilted_moments(np.array([1.0, 2.0]), 0.3, 0.0)
    np.testing.assert_allclose(log_z, lik.log_prob(np.array([1.0, 2.0]), 0.3))
    assert np.all(mean == 0.3) and np.all(var == 0.0)
    assert lik.log_predictive(np.zeros((3, 1)), np.zeros(4), 1.0).shape == (3, 4)


@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan, np.inf, "big", None])
def test_gaussian_variance_must_be_positive_and_finite(bad):
    with pytest.raises(ValueError, match="variance must be a positive finite number"):
        Gaussian(variance=bad)


def test_gaussian_refuses_class_probabilities_and_the_probit_approximation():
    lik = Gaussian(variance=2.0)
    with pytest.raises(ValueError, match="Gaussian likelihood is for regression"):
        lik.predict_proba(np.zeros(2), np.ones(2))
    with pytest.raises(ValueError, match="probit approximation"):
        lik.log_predictive(0.0, 0.0, 1.0, integration="probit_approximation")
    with pytest.raises(ValueError, match="integration must be one of"):
        lik.log_predictive(0.0, 0.0, 1.0, integration="laplace")
    with pytest.raises(ValueError, match="non-negative"):
        lik.log_predictive(0.0, 0.0, -1.0)


def test_get_gaussian_likelihood():
    import gpc_compare as gc

    lik = get_likelihood("gaussian")
    assert isinstance(lik, Gaussian) and lik.variance == 1.0
    assert (lik.name, lik.latent_dim, lik.regression) == ("gaussian", 1, True)
    assert gc.likelihoods.Gaussian is Gaussian
    assert not Probit().regression and not Logistic().regression
    assert repr(Gaussian(0.25)) == "Gaussian(variance=0.25)"


def test_logistic_predictive_is_never_above_one():
    """Where Z(y) > 1/2 the quadrature's sum cannot resolve 1 - Z below rounding (it gave
    log Z = +4e-16 at mean 48, var 19): log Z(y) = log1p(-Z(-y)) there."""
    lik = Logistic()
    mean = np.array([48.4, 30.0, 5.0, 0.3, -3.0])
    var = np.array([19.2, 1e4, 1.0, 0.5, 2.0])
    up, down = lik.log_predictive(1.0, mean, var), lik.log_predictive(-1.0, mean, var)
    assert np.all(up <= 0.0) and np.all(down <= 0.0)
    np.testing.assert_allclose(np.exp(up) + np.exp(down), 1.0, atol=1e-15)
    assert up[0] < 0.0 and up[0] == pytest.approx(-np.exp(down[0]), rel=1e-12)
    assert np.all(lik.predict_proba(mean, var) <= 1.0)
