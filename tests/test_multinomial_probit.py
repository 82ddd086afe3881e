"""The multinomial probit likelihood: its 1-D rule against adaptive quadrature, the C = 3
predictive against scipy's bivariate normal CDF, Monte Carlo against the quadrature, and
C = 2 against the probit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from gpc_compare.likelihoods import MultinomialProbit, get_likelihood
from gpc_compare.likelihoods.multinomial_probit import _mode, log_gauss_probit_integral

LIK = MultinomialProbit()


def _adaptive(a: np.ndarray, b: np.ndarray) -> float:
    """log int N(u) prod Phi(a + b u) du by scipy's adaptive quadrature (rel. 1e-13),
    scaled by the integrand at its mode so that tiny values keep their digits."""
    u0 = _mode(a[None], b[None])[0]
    top = stats.norm.logpdf(u0) + stats.norm.logcdf(a + b * u0).sum()

    def f(u):
        return np.exp(stats.norm.logpdf(u) + stats.norm.logcdf(a + b * u).sum() - top)

    val = integrate.quad(f, u0 - 15, u0 + 15, points=[u0], epsabs=0, epsrel=1e-13, limit=500)
    return float(np.log(val[0]) + top)


def test_the_rule_against_adaptive_quadrature():
    rng = np.random.default_rng(1)
    worst = 0.0
    for t in range(12):
        J = int(rng.integers(1, 7))
        a = rng.normal(size=J) * rng.choice([0.5, 3.0, 15.0])
        b = rng.normal(size=J) * rng.choice([0.3, 1.0, 5.0]) if t % 2 else np.ones(J)
        worst = max(worst, abs(log_gauss_probit_integral(a, b) - _adaptive(a, b)))
    assert worst < 1e-12  # measured 1.1e-13 over 300 such cases (12 here, for time)


def test_log_prob_is_a_distribution_over_classes_and_log_space_in_the_tails():
    F = np.random.default_rng(0).normal(size=(6, 4)) * 3
    np.testing.assert_allclose(np.exp(LIK.log_proba(F)).sum(axis=1), 1.0, atol=1e-13)
    np.testing.assert_allclose(LIK.log_prob(np.array([2] * 6), F), LIK.log_proba(F)[:, 2])
    far = LIK.log_prob(np.array([0]), np.array([[-60.0, 0.0, 0.0]]))[0]
    assert far == pytest.approx(_adaptive(np.array([-60.0, -60.0]), np.ones(2)), abs=1e-9)
    assert -1e4 < far < -800  # p below the smallest double: finite in log space
    assert get_likelihood("multinomial_probit").name == "multinomial_probit"


def test_two_classes_are_the_probit_of_the_scaled_difference():
    f = np.array([[0.3, -1.1], [2.0, 0.5]])
    np.testing.assert_allclose(
        LIK.log_proba(f)[:, 1], stats.norm.logcdf((f[:, 1] - f[:, 0]) / np.sqrt(2)), atol=1e-13
    )


def _covariances(rng, m):
    R = rng.normal(size=(m, 3, 3))
    return R @ np.swapaxes(R, 1, 2)


def test_three_class_predictive_against_the_bivariate_normal_cdf():
    rng = np.random.default_rng(3)
    mean, cov = rng.normal(size=(5, 3)) * 2, _covariances(rng, 5)
    lp = LIK.log_predictive_all(mean, cov)
    np.testing.assert_allclose(np.exp(lp).sum(axis=1), 1.0, atol=1e-13)
    for c in range(3):
        others = [j for j in range(3) if j != c]
        B = np.zeros((3, 2))
        B[c], B[others, [0, 1]] = 1.0, -1.0
        for i in range(5):  # P(z > 0), z ~ N(B^T mu, B^T Sigma B + I + 1 1^T)
            S = B.T @ cov[i] @ B + np.eye(2) + 1.0
            ref = stats.multivariate_normal(np.zeros(2), S).cdf(mean[i] @ B)
            assert np.exp(lp[i, c]) == pytest.approx(ref, abs=1e-12)


def test_monte_carlo_within_its_standard_errors():
    rng = np.random.default_rng(4)
    mean, cov = rng.normal(size=(4, 3)), _covariances(rng, 4)
    exact = np.exp(LIK.log_predictive_all(mean, cov))
    lp, se = LIK.log_predictive_all(mean, cov, integration="mc", n_samples=500, return_se=True)
    assert np.all(np.abs(np.exp(lp) - exact) < 4 * se)
    np.testing.assert_allclose(np.exp(lp).sum(axis=1), 1.0, atol=1e-12)
    four, se = LIK.log_predictive_all(np.zeros(4), np.eye(4), n_samples=400, return_se=True)
    assert np.all(np.abs(np.exp(four) - 0.25) < 4 * se)  # 1/4 by symmetry
    np.testing.assert_allclose(np.exp(four).sum(), 1.0, atol=1e-12)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="n_classes"):
        MultinomialProbit(n_classes=1)
    with pytest.raises(ValueError, match="C <= 3"):
        LIK.log_predictive_all(np.zeros(4), np.eye(4), integration="quadrature")
    with pytest.raises(ValueError, match="finite"):
        LIK.log_predictive_all(np.array([np.nan, 0.0, 0.0]), np.eye(3))
    with pytest.raises(ValueError, match="classes"):
        MultinomialProbit(n_classes=3).check_n_classes(4)
