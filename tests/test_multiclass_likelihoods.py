"""E_q[log p(y | f)] for C classes under independent Gaussian latents (the multi-class
SVGP's): the softmax's quadrature and Monte Carlo estimate, the robust-max's quadrature, each
against closed forms, independent integration and finite differences of itself."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import owens_t
from scipy.stats import norm

from gpc_compare.likelihoods import Logistic, RobustMax, Softmax
from gpc_compare.likelihoods._diagonal import prob_largest

from .helpers import central_difference


def _moments(n: int, C: int, seed: int, scale: float = 1.0):
    rng = np.random.default_rng(seed)
    mean = scale * rng.normal(size=(n, C))
    var = rng.uniform(0.05, 3.0, size=(n, C))
    return rng.integers(0, C, n), mean, var


def _check_derivatives(fun, y, mean, var, d_mean, d_var, atol):
    """d_mean, d_var against central differences of ``fun(y, mean, var)`` (n,) per class."""
    for c in range(mean.shape[1]):
        e = np.zeros_like(mean)
        e[:, c] = 1.0
        fd_m = central_difference(lambda h, e=e: fun(y, mean + h[0] * e, var), np.zeros(1))[0]
        fd_v = central_difference(lambda h, e=e: fun(y, mean, var + h[0] * e), np.zeros(1))[0]
        np.testing.assert_allclose(d_mean[:, c], fd_m, atol=atol)
        np.testing.assert_allclose(d_var[:, c], fd_v, atol=atol)


def test_softmax_with_two_classes_is_the_logistic_on_the_difference():
    """log softmax_y(f) = log sigma(f_y - f_o), and f_y - f_o ~ N(m_y - m_o, v_y + v_o): the
    binary logistic's expected_log_prob (its own quadrature, 1e-14) and its derivatives."""
    y, mean, var = _moments(9, 2, 0, scale=2.0)
    e = Softmax().expected_log_prob_diag(y, mean, var)
    r, o = np.arange(9), 1 - y
    E, dE_dm, dE_dv = Logistic().expected_log_prob(np.ones(9), mean[r, y] - mean[r, o], var.sum(1))
    np.testing.assert_allclose(e.value, E, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(e.d_mean[r, y], dE_dm, atol=1e-13)
    np.testing.assert_allclose(e.d_mean[r, o], -dE_dm, atol=1e-13)
    np.testing.assert_allclose(e.d_var[r, y], dE_dv, atol=1e-13)
    np.testing.assert_allclose(e.d_var[r, o], dE_dv, atol=1e-13)
    assert e.variance is None


def test_softmax_quadrature_against_a_tensor_gauss_hermite_rule_and_its_derivatives():
    """Three classes: against a 60^3-node Gauss-Hermite rule in f itself (independent of the
    grid over the differences), and d/d mean, d/d var against central differences."""
    y, mean, var = _moments(6, 3, 1)
    sm = Softmax()
    e = sm.expected_log_prob_diag(y, mean, var)
    x, w = np.polynomial.hermite_e.hermegauss(60)
    w = w / w.sum()
    grid = np.stack(np.meshgrid(x, x, x, indexing="ij")).reshape(3, -1).T
    weights = np.einsum("i,j,k->ijk", w, w, w).ravel()
    for i in range(6):
        lp = sm.log_prob(np.full(grid.shape[0], y[i]), mean[i] + np.sqrt(var[i]) * grid)
        assert e.value[i] == pytest.approx(lp @ weights, abs=1e-12)
    _check_derivatives(lambda *a: sm.expected_log_prob_diag(*a).value, y, mean, var,
                       e.d_mean, e.d_var, atol=1e-8)  # fmt: skip
    assert np.all(e.d_var < 0) and np.allclose(e.d_mean.sum(axis=1), 0.0, atol=1e-13)


def test_softmax_monte_carlo_is_unbiased_and_differentiates_its_own_estimate():
    """Five classes: the estimate within 4 of its standard errors of the quadrature (C = 3 is
    where both apply: compared there), deterministic for a seed, and its derivatives are
    exactly those of the estimate (central differences with the same draws)."""
    sm = Softmax()
    y, mean, var = _moments(40, 3, 2)
    quad = sm.expected_log_prob_diag(y, mean, var).value
    mc = sm.expected_log_prob_diag(y, mean, var, integration="mc", n_samples=2000, random_seed=3)
    z = (mc.value - quad) / np.sqrt(mc.variance)
    assert np.max(np.abs(z)) < 4.0 and np.abs(z.sum() / np.sqrt(40)) < 4.0
    y, mean, var = _moments(70, 5, 4)  # (two seeded blocks of 64 inputs)

    def fun(y, m, v):
        return sm.expected_log_prob_diag(y, m, v, integration="mc", n_samples=8, random_seed=5)

    e = fun(y, mean, var)
    np.testing.assert_array_equal(e.value, fun(y, mean, var).value)
    # an input's estimate depends on its block and the seed, not on the other inputs
    np.testing.assert_array_equal(fun(y[:64], mean[:64], var[:64]).value, e.value[:64])
    _check_derivatives(lambda *a: fun(*a).value, y, mean, var, e.d_mean, e.d_var, atol=1e-8)


def _bivariate_normal_cdf(h: np.ndarray, k: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Phi_2(h, k; rho) by Owen's T function (Owen 1956, eq. 2.1), for h, k != 0."""
    s = np.sqrt(1.0 - rho**2)
    beta = np.where(h * k > 0, 0.0, 0.5)
    return (0.5 * norm.cdf(h) + 0.5 * norm.cdf(k) - owens_t(h, (k - rho * h) / (h * s))
            - owens_t(k, (h - rho * k) / (k * s)) - beta)  # fmt: skip


def test_robustmax_probability_of_the_largest_against_closed_forms():
    """Two classes: Pr(f_y > f_o) = Phi(d / sqrt(v_y + v_o)) and its derivatives; three: the
    bivariate normal CDF of (f_a - f_y, f_b - f_y) by Owen's T function; the probabilities
    of the C classes sum to one."""
    y, mean, var = _moments(8, 2, 6)
    P, dm, dv = prob_largest(y, mean, var)
    r, o = np.arange(8), 1 - y
    s = np.sqrt(var.sum(1))
    t = (mean[r, y] - mean[r, o]) / s
    np.testing.assert_allclose(P, norm.cdf(t), atol=1e-15)
    np.testing.assert_allclose(dm[r, y], norm.pdf(t) / s, atol=1e-14)
    np.testing.assert_allclose(dv[r, o], -0.5 * t * norm.pdf(t) / s**2, atol=1e-14)
    y, mean, var = _moments(8, 3, 7)
    P = prob_largest(y, mean, var)[0]
    r = np.arange(8)
    a, b = (y + 1) % 3, (y + 2) % 3
    sa, sb = np.sqrt(var[r, a] + var[r, y]), np.sqrt(var[r, b] + var[r, y])
    h, k = (mean[r, y] - mean[r, a]) / sa, (mean[r, y] - mean[r, b]) / sb
    np.testing.assert_allclose(P, _bivariate_normal_cdf(h, k, var[r, y] / (sa * sb)), atol=1e-14)
    y, mean, var = _moments(8, 7, 8)
    total = sum(prob_largest(np.full(8, c), mean, var)[0] for c in range(7))
    np.testing.assert_allclose(total, 1.0, atol=1e-13)


def test_robustmax_expectation_derivatives_and_predictive():
    """Six classes, variances a factor 100 apart: E's derivatives against central
    differences; the predictive sums to one, is never below eps / (C - 1), and equals
    eps / (C - 1) + (1 - eps C / (C - 1)) P_c."""
    lik = RobustMax(epsilon=0.01)
    y, mean, var = _moments(10, 6, 9)
    var[:, ::2] /= 100.0
    e = lik.expected_log_prob_diag(y, mean, var)
    _check_derivatives(lambda *a: lik.expected_log_prob_diag(*a).value, y, mean, var,
                       e.d_mean, e.d_var, atol=1e-7)  # fmt: skip
    cov = np.zeros((10, 6, 6))
    cov[:, np.arange(6), np.arange(6)] = var
    p = np.exp(lik.log_predictive_all(mean, cov))
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-13)
    P1 = prob_largest(np.ones(10, int), mean, var)[0]
    np.testing.assert_allclose(p[:, 1], 0.01 / 5 + (1 - 0.01 * 6 / 5) * P1, rtol=1e-14)
    assert p.min() >= 0.01 / 5
    assert lik.log_prob(np.array([2]), mean[:1])[0] == pytest.approx(
        np.log(0.99) if mean[0].argmax() == 2 else np.log(0.002)
    )
    np.testing.assert_allclose(lik.proba(mean).sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="diagonal"):
        lik.log_predictive_all(mean, cov + 0.1)
    with pytest.raises(ValueError, match="epsilon"):
        RobustMax(epsilon=1.0)
