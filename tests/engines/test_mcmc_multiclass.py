"""The MCMC engine's multi-class models (:mod:`gpc_compare.engines._mcmc_multiclass`): the
multinomial probit's Gauss-Hermite rule against the likelihood module, the whitening by
C x C site blocks against each approximation's own posterior, and the PyMC model's density
against one written out with the likelihood modules."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gpc_compare as gc
from gpc_compare.engines._engine import Problem
from gpc_compare.engines._mcmc_multiclass import _sites, multiclass_model, probit_log_lik
from gpc_compare.engines._whitening import (
    block_site_whitening,
    prior_factor,
    site_whitening,
    turned_block,
)
from gpc_compare.kernels import SquaredExponential
from gpc_compare.likelihoods import MultinomialProbit, Softmax
from gpc_compare.likelihoods.multinomial_probit import log_gauss_probit_integral


@pytest.fixture(scope="module")
def rule():
    """The rule compiled (pytensor's Python linker: no C compilation in a test)."""
    import pytensor
    import pytensor.tensor as pt

    d = pt.matrix("d")
    return pytensor.function([d], probit_log_lik(d), mode="FAST_COMPILE")


@pytest.mark.parametrize("J", [1, 2, 4, 9])
def test_gauss_hermite_rule_matches_the_likelihood_module(rule, J):
    """log int N(u) prod_j Phi(u + d_j) du over differences in [-30, 30] (log p down to
    about -450) and C = 2..10: within 3e-9 of the module's trapezoid rule (1e-13), the
    rule's own error (2.3e-9 at J = 4, measured). (With PyMC's normal_lcdf, whose sqrt 2
    is a float32 constant, it was 2e-7: log_phi's note.)"""
    rng = np.random.default_rng(J)
    d = np.vstack([rng.uniform(-30, 30, (300, J)), rng.normal(0, 3, (300, J)), np.full((2, J), 30)])
    d[-1] = -30
    ref = log_gauss_probit_integral(d)
    err = np.abs(rule(d) - ref)
    assert err.max() < 3e-9


def test_gauss_hermite_rule_gradient_matches_finite_differences():
    """The rule's gradient (its centre and scale held fixed) against central differences
    of the module's log p: the rule is exact for any centre, so they agree."""
    import pytensor
    import pytensor.tensor as pt

    d = pt.matrix("d")
    grad = pytensor.function([d], pytensor.grad(probit_log_lik(d).sum(), d), mode="FAST_COMPILE")
    D = np.random.default_rng(0).normal(0, 3, (6, 2))
    D[0] = [-12.0, 4.0]
    eps, num = 1e-5, np.zeros_like(D)
    for j in range(D.shape[1]):
        step = np.zeros_like(D)
        step[:, j] = eps
        num[:, j] = (log_gauss_probit_integral(D + step) - log_gauss_probit_integral(D - step)) / (
            2 * eps
        )
    np.testing.assert_allclose(grad(D), num, rtol=1e-6, atol=1e-8)


def _problem(likelihood, n=12, seed=0, C=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    codes = np.arange(n) % C
    return Problem(X, codes, SquaredExponential(1.0, 2.0), likelihood, None), codes


def test_block_site_whitening_with_one_class_is_the_binary_whitening():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(8, 2))
    G, _ = prior_factor(SquaredExponential(1.0, 1.5)(X))
    ttau, b = rng.uniform(0.1, 2.0, 8), rng.normal(size=8)
    a1, B1 = site_whitening(ttau, b, G)
    a2, B2 = block_site_whitening(ttau[:, None, None], b[:, None], G)
    np.testing.assert_allclose(a2, a1, atol=1e-12)
    np.testing.assert_allclose(B2 @ B2.T, B1 @ B1.T, atol=1e-12)


@pytest.mark.parametrize(
    ("likelihood", "parameterization"),
    [(Softmax(), "laplace"), (Softmax(), "kl"), (MultinomialProbit(), "ep")],
)
def test_whitened_coordinates_carry_the_approximation_itself(likelihood, parameterization):
    """f = G_blk (a + B z), z ~ N(0, I), has the approximation's own mean and covariance
    (each engine's latent_mean and latent_cov, class-major), up to the prior directions
    the factor G leaves out (1e-8 of the prior variance)."""
    problem, codes = _problem(likelihood)
    K = problem.kernel(problem.X)
    G, _ = prior_factor(K)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        T, b, post = _sites(problem, codes, 3, parameterization)
    a, B = block_site_whitening(T, b, G)
    Gb = np.kron(np.eye(3), G)
    mean = (Gb @ a).reshape(3, -1).T
    np.testing.assert_allclose(mean, post.latent_mean, atol=1e-6)
    np.testing.assert_allclose(Gb @ B @ B.T @ Gb.T, post.latent_cov, atol=1e-6)


@pytest.mark.parametrize("likelihood", [Softmax(), MultinomialProbit()])
def test_model_density_is_prior_times_likelihood(likelihood):
    """The whitened PyMC model's log density at random z equals -|a + B z|^2 / 2 + sum_i
    log p(y_i | f_i) with the likelihood module's log p (the Jacobian is constant)."""
    problem, codes = _problem(likelihood, n=9)
    K = problem.kernel(problem.X)
    L = np.linalg.cholesky(K + 1e-10 * np.eye(9))
    parameterization = "kl" if isinstance(likelihood, Softmax) else "ep"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, dropped = multiclass_model(problem, codes, 3, K, L, parameterization)
        T, b, _ = _sites(problem, codes, 3, parameterization)
        logp = model.compile_logp(mode="FAST_COMPILE")
    G, _ = prior_factor(K)
    a, B = block_site_whitening(T, b, G)
    B, _ = turned_block(G, B)  # (as the engine turns it for the compiled density)
    r = G.shape[1]
    rng = np.random.default_rng(2)
    values = []
    for _ in range(3):
        z = rng.normal(size=3 * r)
        u = a + B @ z
        F = G @ u.reshape(3, r).T
        expected = -0.5 * u @ u + likelihood.log_prob(codes, F).sum()
        values.append((logp({"z": z}), expected))
    np.testing.assert_allclose(*np.array(values).T, rtol=1e-9, atol=1e-6)
    assert 0 <= dropped < 1e-6 * np.trace(K)


@pytest.mark.parametrize(
    ("likelihood", "parameterization", "message"),
    [
        ("softmax", "ep", "not available with the softmax likelihood.*'kl', 'laplace', 'prior'"),
        ("multinomial_probit", "kl", "not available with the multinomial_probit.*'ep', 'prior'"),
        ("probit", "kl", "parameterization='kl' whitens the multi-class models"),
    ],
)
def test_whitening_that_does_not_fit_the_likelihood_is_refused(
    likelihood, parameterization, message
):
    X = np.random.default_rng(0).normal(size=(12, 2))
    y = np.arange(12) % 3 if likelihood != "probit" else np.arange(12) % 2
    with pytest.raises(ValueError, match=message):
        gc.fit(X, y, method="mcmc", likelihood=likelihood, parameterization=parameterization,
               draws=10)  # fmt: skip
