"""E_q[log p(y | f)] for C classes under independent Gaussian latents (the multi-class
SVGP's): the softmax's quadrature and Monte Carlo estimate, the robust-max's quadrature, each
against closed forms, independent integration and finite differences of itself."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import owens_t
from scipy.stats import norm

from gpc_compare.likelihoods import Logistic, RobustMax, Softmax
from gpc_compare.likelihoods import _softmax_gumbel as gumbel_module
from gpc_compare.likelihoods import softmax as softmax_module
from gpc_compare.likelihoods._diagonal import prob_largest
from gpc_compare.likelihoods._softmax_gumbel import gumbel_diagonal_expectation

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


def _grid(y, mean, var, step: float = 0.6, span: float = 8.0):
    """E[log p_y], dE/d mean and dE/d var on the trapezoid grid over the differences (the
    rule below _ELBO_GRID_SD), at any sd, with its step and span as given."""
    n, C = mean.shape
    cov = np.zeros((n, C, C))
    cov[:, np.arange(C), np.arange(C)] = var
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(softmax_module, "_ELBO_STEP", step)
        mp.setattr(softmax_module, "_ELBO_SPAN", span)
        value, Ep, Epq = softmax_module._grid_sums(y, *softmax_module._difference_factor(mean, cov))
    return value, np.eye(C)[y] - Ep, -0.5 * Epq


def test_softmax_gumbel_integrals_against_the_two_dimensional_grid():
    """Large variances (sd of the differences above 1): the one-dimensional Gumbel-max
    integrals against the trapezoid grid over the differences refined to step 0.3 (a
    different rule: its error below 1e-14 here), to 1e-12 in the value and 1e-14 in the
    derivatives, for sds from 1e-3 to 6 (mixed within an input) and means up to +-30; and
    the default expected_log_prob_diag takes them there."""
    rng = np.random.default_rng(11)
    sd = np.exp(rng.uniform(np.log(1e-3), np.log(6.0), (8, 3)))
    sd[:3] = rng.uniform(3.0, 6.0, (3, 3))
    mean = (
        rng.uniform(-30.0, 30.0, (8, 3)) * np.array([0.03, 0.3, 1.0, 0.03, 0.3, 1, 1, 1])[:, None]
    )
    y = rng.integers(0, 3, 8)
    e = gumbel_diagonal_expectation(y, mean, sd**2)
    ref = _grid(y, mean, sd**2, step=0.3, span=9.0)
    np.testing.assert_allclose(e.value, ref[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(e.d_mean, ref[1], rtol=0, atol=1e-14)
    np.testing.assert_allclose(e.d_var, ref[2], rtol=0, atol=1e-14)
    default = Softmax().expected_log_prob_diag(y, mean, sd**2)
    np.testing.assert_allclose(default.value, e.value, rtol=0, atol=1e-12)
    np.testing.assert_allclose(default.d_var, e.d_var, rtol=0, atol=1e-14)


def test_softmax_gumbel_integrals_at_very_large_variances():
    """sd 20 to 100 (where the grid would need 10^5 to 10^7 nodes an input): for two
    classes the logistic on the difference (its own quadrature); for three, the same rule
    refined (step 0.15, span 9.5) to 2e-12 in the value and 1e-14 in the derivatives, and
    central differences of the value."""
    rng = np.random.default_rng(12)
    sd = rng.uniform(20.0, 100.0, (6, 3))
    sd[0, 2] = 1e-3  # one latent all but known
    mean = rng.uniform(-50.0, 50.0, (6, 3))
    y = rng.integers(0, 3, 6)
    r = np.arange(6)
    e2 = gumbel_diagonal_expectation(y % 2, mean[:, :2], sd[:, :2] ** 2)
    E, dE_dm, dE_dv = Logistic().expected_log_prob(
        1.0 - 2.0 * (y % 2), mean[:, 0] - mean[:, 1], (sd[:, :2] ** 2).sum(1)
    )
    np.testing.assert_allclose(e2.value, E, rtol=0, atol=1e-12)
    np.testing.assert_allclose(e2.d_mean[r, 0], dE_dm, atol=1e-13)
    np.testing.assert_allclose(e2.d_var[r, 1], dE_dv, atol=1e-13)
    e = gumbel_diagonal_expectation(y, mean, sd**2)
    with pytest.MonkeyPatch.context() as mp:
        for name, value in (("_STEP", 0.15), ("_SPAN", 9.5), ("_NARROW_STEP", 0.3)):
            mp.setattr(gumbel_module, name, value)
        fine = gumbel_diagonal_expectation(y, mean, sd**2)
    np.testing.assert_allclose(e.value, fine.value, rtol=0, atol=2e-12)
    np.testing.assert_allclose(e.d_mean, fine.d_mean, rtol=0, atol=1e-14)
    np.testing.assert_allclose(e.d_var, fine.d_var, rtol=0, atol=1e-14)
    assert np.all(e.d_var <= 0) and np.allclose(e.d_mean.sum(axis=1), 0.0, atol=1e-14)
    # central differences with steps 1e-4 sd in the mean and 1e-4 var in the variance (the
    # value varies on the scale sd; its rounding, ~1e-12, over such steps is 1e-10), at
    # the inputs without the all but known latent
    y, mean, var = y[1:], mean[1:], sd[1:] ** 2
    for c in range(3):
        e_c = np.eye(3)[c]
        for arg, d_arg, h in ((0, e.d_mean[1:], 1e-4 * sd[1:]), (1, e.d_var[1:], 1e-4 * var)):
            step = h[:, c, None] * e_c
            plus, minus = [mean, var], [mean, var]
            plus[arg] = plus[arg] + step
            minus[arg] = minus[arg] - step
            fd = (
                gumbel_diagonal_expectation(y, *plus).value
                - gumbel_diagonal_expectation(y, *minus).value
            ) / (2 * h[:, c])
            np.testing.assert_allclose(d_arg[:, c], fd, rtol=0, atol=2e-9)


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
    # the value alone (predictions): the same P without the derivatives, three ways
    P, _, _ = prob_largest(y, mean, var)
    Q, dm, dv = prob_largest(y, mean, var, derivatives=False)
    np.testing.assert_allclose(Q, P, rtol=1e-13, atol=1e-16)
    assert dm is None and dv is None
    np.testing.assert_allclose(
        sum(prob_largest(np.full(8, c), mean, var, derivatives=False)[0] for c in range(7)),
        1.0,
        atol=1e-13,
    )
    y, mean, var = _moments(8, 2, 6)
    t = (mean[r, y] - mean[r, 1 - y]) / np.sqrt(var.sum(1))
    Q = prob_largest(y, mean, var, derivatives=False)[0]
    np.testing.assert_allclose(Q, norm.cdf(t), atol=1e-15)


@pytest.mark.parametrize("variance", [0.0, 1e-300, 1e-200, 1e-100])
def test_robustmax_derivatives_are_finite_where_the_latents_are_point_masses(variance):
    """Variances at (or near) their floor, sd down to 1e-150: P is the indicator of the
    largest mean and, where no two means tie, its derivatives are 0 (they overflowed to
    NaN at variances below 1e-154, t / sd^2 ~ 1e300 meeting a node of weight 0)."""
    mean = np.array([[0.3, 0.1, -0.2], [0.0, 0.5, 1.0], [2.0, -1.0, 1.9]])
    var = np.full(mean.shape, variance)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P, dm, dv = prob_largest(np.array([0, 1, 2]), mean, var)
    np.testing.assert_allclose(P, [1.0, 0.0, 0.0], atol=1e-15)  # (the weights' sum, rounded)
    np.testing.assert_array_equal(dm, 0.0)
    np.testing.assert_array_equal(dv, 0.0)


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
