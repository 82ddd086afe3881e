"""The sparse variational GP classifier (SVGP): the KL engine at Z = X, the collapsed
bound of Titsias (2009) under a Gaussian likelihood, finite differences, memory."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import gpc_compare as gc
from gpc_compare.engines import kl, svgp
from gpc_compare.engines._inducing import choose_inducing
from gpc_compare.kernels import Matern52, SquaredExponential
from gpc_compare.likelihoods import Gaussian, get_likelihood
from gpc_compare.posterior import FITCPrior

from ..helpers import central_difference, load_gpml, toy_data

TIGHT = {"tol": 1e-14, "site_tol": 1e-10}


@pytest.mark.parametrize("likelihood", ["probit", "logistic"])
def test_inducing_at_the_training_inputs_is_the_kl_engine(likelihood):
    """With Z = X, q(f) ranges over every Gaussian and the bound is the KL method's, up to
    the jitter: differences proportional to it (measured: 3e-6 to 2e-5 at 1e-6, 1e-11 to
    3e-8 at 1e-10, the largest in the test means, which pass through K_uu^-1)."""
    case = load_gpml("synth50")
    X, y, Xs = case["X"], case["y"], case["X_test"]
    kernel = SquaredExponential(case["lengthscale"], case["variance"])
    lik = get_likelihood(likelihood)
    full = kl.infer(X, y, kernel, lik, 0.3, **TIGHT)
    for jitter, tol in [(1e-6, 1e-5), (1e-10, 1e-9)]:
        post = svgp.infer(X, y, kernel, lik, 0.3, inducing=X, jitter=jitter, **TIGHT)
        assert post.convergence.converged
        assert abs(post.log_marginal_likelihood - full.log_marginal_likelihood) < tol
        np.testing.assert_allclose(post.log_marginal_likelihood_gradient,
                                   full.log_marginal_likelihood_gradient, atol=tol)  # fmt: skip
        np.testing.assert_allclose(post.latent_mean, full.latent_mean, atol=10 * tol)
        np.testing.assert_allclose(post.latent_var, full.latent_var, atol=tol)
        mu_s, var_s = post.predict_latent(Xs)
        mu_f, var_f = full.predict_latent(Xs)
        np.testing.assert_allclose(var_s, var_f, atol=tol)
        np.testing.assert_allclose(mu_s, mu_f, atol=100 * tol)


def test_gaussian_likelihood_gives_the_collapsed_bound():
    """Under a Gaussian likelihood the optimal q(u) is known and the bound is Titsias's
    (2009): log N(y | m, Q + s2 I) - tr(K - Q) / (2 s2), computed here from the formed
    matrices; the predictive mean and variance are those of the optimal q(u)."""
    rng = np.random.default_rng(1)
    X = rng.uniform(-3, 3, size=(60, 1))
    yr = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=60)
    kernel, s2, m = SquaredExponential(0.8, 1.5), 0.09, 0.2
    Z = np.linspace(-3, 3, 8)[:, None]
    prior = FITCPrior(kernel, X, Z, 1e-6)
    Q = prior.V.T @ prior.V
    C = Q + s2 * np.eye(60)
    r = yr - m
    logdet = np.linalg.slogdet(C)[1]
    titsias = (-0.5 * r @ np.linalg.solve(C, r) - 0.5 * logdet - 30 * np.log(2 * np.pi)
               - 0.5 * float(np.sum(prior.Lam)) / s2)  # fmt: skip
    # optimal q(v): S = (I + V V^T / s2)^-1, m_v = S V r / s2
    S = np.linalg.inv(np.eye(8) + prior.V @ prior.V.T / s2)
    m_v = S @ prior.V @ r / s2
    Xs = np.array([[-1.0], [0.5], [2.9]])
    A = np.linalg.solve(prior.L_uu, kernel(Z, Xs))  # L^-1 K_u*
    mean_s = m + A.T @ m_v
    var_s = kernel.diag(Xs) - np.einsum("ij,ij->j", A, A) + np.einsum("ij,ij->j", A, S @ A)
    post = gc.fit(X, yr, method="svgp", kernel=kernel, likelihood=Gaussian(s2), mean=m,
                  inducing=Z, **TIGHT)  # fmt: skip
    assert post.log_marginal_likelihood == pytest.approx(titsias, rel=1e-10)
    np.testing.assert_allclose(post.q_mean, m_v, atol=1e-9)
    np.testing.assert_allclose(post.q_cov, S, atol=1e-9)
    mu, var = post.predict_latent(Xs)
    np.testing.assert_allclose(mu, mean_s, atol=1e-9)
    np.testing.assert_allclose(var, var_s, atol=1e-9)


@pytest.mark.parametrize(
    "kernel,likelihood",
    [(SquaredExponential([0.8, 1.5], 2.0), "logistic"), (Matern52(1.2, 3.0), "probit")],
    ids=["se-ard", "matern52"],
)
def test_gradient_matches_central_differences(kernel, likelihood):
    """The bound's gradient in the hyperparameters, the mean and the inducing inputs, with
    snu^2 held at its value (the jitter rescaled as sigma_f^2 moves)."""
    X, y = toy_data(n=40, d=2, seed=3)
    Z = X[::5] + 0.1
    lik = get_likelihood(likelihood)
    post = svgp.infer(X, y, kernel, lik, 0.2, inducing=Z, optimize_inducing=True, **TIGHT)
    p = kernel.n_hyperparameters
    snu2 = 1e-6 * kernel.variance

    def bound(x):
        k = kernel.with_theta(x[:p])
        return svgp.infer(X, y, k, lik, float(x[p]), inducing=x[p + 1 :].reshape(Z.shape),
                          jitter=snu2 / k.variance, **TIGHT).log_marginal_likelihood  # fmt: skip

    x0 = np.concatenate([kernel.theta, [0.2], Z.ravel()])
    fd = central_difference(bound, x0, h=1e-5)
    np.testing.assert_allclose(post.log_marginal_likelihood_gradient, fd, rtol=1e-5, atol=1e-6)


def test_the_bound_is_below_the_kl_bound_and_rises_with_m():
    """Fewer inducing inputs restrict q: the bound at M = 5 < M = 20 < the full KL bound
    (nested inducing sets: each bound is the maximum over a larger family)."""
    X, y = toy_data(n=60, d=2, seed=8)
    kernel, lik = SquaredExponential(1.0, 2.0), get_likelihood("probit")
    full = kl.infer(X, y, kernel, lik, None, **TIGHT).log_marginal_likelihood
    small = svgp.infer(X, y, kernel, lik, None, inducing=X[:5], **TIGHT)
    large = svgp.infer(X, y, kernel, lik, None, inducing=X[:20], **TIGHT)
    assert small.log_marginal_likelihood < large.log_marginal_likelihood < full


def test_optimize_and_draws():
    X, y = toy_data(n=60, d=2, seed=5)
    post = gc.fit(X, y, method="svgp", inducing=6, optimize=True, optimize_inducing=True,
                  n_restarts=0, random_seed=2)  # fmt: skip
    assert post.hyperparameter_names[2] == "inducing[0,0]"
    assert len(post.hyperparameter_names) == post.hyperparameters.size == 14
    assert np.max(np.abs(post.log_marginal_likelihood_gradient)) < 1e-2
    f = post.sample_latent(20_000, random_seed=0)
    se = np.sqrt(post.latent_var / 20_000)
    assert np.all(np.abs(f.mean(axis=0) - post.latent_mean) < 4.5 * se)
    np.testing.assert_allclose(f.var(axis=0), post.latent_var, rtol=0.05)
    assert post.to_inference_data(draws=10).posterior["f"].shape == (1, 10, 60)


def test_batches_give_the_same_fit_in_a_fraction_of_the_memory():
    """batch_size forms K_uf a block at a time: the same bound, gradient and predictions as
    the in-memory fit (every pass is over all cases). At n = 20,000, M = 100 its peak is
    O(n) vectors, not n x M arrays: below 24 MB (measured 16 MB: the optimiser's states
    and Anderson's history of the 2n site parameters) where the in-memory fit peaks at
    about 67 MB (V, P and the kernel's n x M temporaries, 16 MB each)."""
    rng = np.random.default_rng(9)
    X = rng.normal(size=(20_000, 2))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=20_000) > 0, 1, -1)
    Z = choose_inducing(X, 100, 0)
    kernel, lik = SquaredExponential(1.0, 1.0), get_likelihood("probit")
    whole = svgp.infer(X, y, kernel, lik, 0.1, inducing=Z, optimize_inducing=True)
    tracemalloc.start()
    try:
        post = svgp.infer(X, y, kernel, lik, 0.1, inducing=Z, optimize_inducing=True,
                          batch_size=1000)  # fmt: skip
        grad = post.log_marginal_likelihood_gradient
        mu, var = post.predict_latent(X[:500])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert post.prior.V is None
    assert post.log_marginal_likelihood == pytest.approx(whole.log_marginal_likelihood, rel=1e-12)
    np.testing.assert_allclose(grad, whole.log_marginal_likelihood_gradient, rtol=1e-8, atol=1e-8)
    mu_w, var_w = whole.predict_latent(X[:500])
    np.testing.assert_allclose(mu, mu_w, atol=1e-10)
    np.testing.assert_allclose(var, var_w, atol=1e-10)
    assert peak < 24e6, f"peak {peak / 1e6:.1f} MB"
    with pytest.raises(ValueError, match="batch_size"):
        gc.fit(X[:50], y[:50], method="svgp", batch_size=0)
