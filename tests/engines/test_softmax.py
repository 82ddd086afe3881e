"""Multi-class classification with the softmax likelihood: Laplace (R&W Alg. 3.3, 3.4,
section 5.5.1) and MCMC, checked against dense linear algebra, the binary logistic
engine, finite differences and each other."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.base import clone
from sklearn.datasets import load_iris

import gpc_compare as gc
from gpc_compare.engines import laplace
from gpc_compare.kernels import Matern52, SquaredExponential
from gpc_compare.likelihoods import Softmax

from ..helpers import central_difference


def three_classes(n: int = 30, seed: int = 0, scale: float = 1.0):
    """An overlapping three-class problem in two dimensions."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    scores = scale * np.c_[X[:, 0], X[:, 1], -X[:, 0] - X[:, 1]] + 0.7 * rng.normal(size=(n, 3))
    return X, np.argmax(scores, axis=1)


def dense_reference(post, Xs):
    """The Laplace evidence, mode equation and predictive moments by dense (Cn x Cn)
    linear algebra, with W = D - Pi Pi^T formed explicitly (R&W eqs. 3.38-3.44)."""
    K, f, pi = post.K, post.f_hat, post.pi
    n, C = f.shape
    Kb = np.kron(np.eye(C), K)
    fv, piv = f.T.ravel(), pi.T.ravel()
    Pi = np.vstack([np.diag(pi[:, c]) for c in range(C)])
    W = np.diag(piv) - Pi @ Pi.T
    yv = np.eye(C)[post.y].T.ravel()
    B = np.eye(C * n) + Kb @ W
    lml = (
        -0.5 * fv @ np.linalg.solve(Kb, fv)
        + yv @ fv
        - logsumexp(f, axis=1).sum()
        - 0.5 * np.linalg.slogdet(B)[1]
    )
    m = Xs.shape[0]
    Qs = np.kron(np.eye(C), post.kernel(post.X, Xs))
    mean = (Qs.T @ (yv - piv)).reshape(C, m).T
    S = np.kron(np.eye(C), post.kernel(Xs)) - Qs.T @ W @ np.linalg.solve(B, Qs)
    S = S.reshape(C, m, C, m)
    cov = np.stack([S[:, i, :, i] for i in range(m)])
    return lml, fv - Kb @ (yv - piv), mean, cov


def test_structured_laplace_matches_dense_linear_algebra():
    """R&W Alg. 3.3's O(C n^3) form, with its log determinant corrected (the log|sum E_c|
    term), against the dense (Cn)^3 computation; the mode equation f = K (y - pi)."""
    X, y = three_classes()
    post = laplace.infer(X, y, SquaredExponential(0.8, 2.0), Softmax())
    assert post.convergence.converged
    Xs = np.random.default_rng(5).normal(size=(6, 2))
    lml, residual, mean, cov = dense_reference(post, Xs)
    assert abs(post.log_marginal_likelihood - lml) < 1e-10
    assert np.max(np.abs(residual)) < 1e-8  # the mode equation, per class
    m, c = post.predict_latent(Xs)
    np.testing.assert_allclose(m, mean, atol=1e-10)
    np.testing.assert_allclose(c, cov, atol=1e-10)
    np.testing.assert_allclose(c, np.swapaxes(c, 1, 2), atol=1e-14)
    # the training-point covariance blocks against the dense Sigma = (K^-1 + W)^-1
    n, C = post.f_hat.shape
    Kb = np.kron(np.eye(C), post.K)
    Pi = np.vstack([np.diag(post.pi[:, k]) for k in range(C)])
    Sigma = np.linalg.inv(np.linalg.inv(Kb) + np.diag(post.pi.T.ravel()) - Pi @ Pi.T)
    np.testing.assert_allclose(post.latent_cov, Sigma, atol=1e-8)
    np.testing.assert_allclose(post.latent_var, np.diag(Sigma).reshape(C, n).T, atol=1e-8)


@pytest.mark.parametrize("lengthscale", [0.3, 1.0, 3.0])
def test_two_classes_are_the_binary_logistic_with_twice_the_kernel(lengthscale):
    """With C = 2 the softmax depends only on g = f_2 - f_1 ~ GP(0, 2K), and f_1 + f_2 is
    independent of it and of the data: the softmax Laplace with K is the binary logistic
    Laplace with 2K (the approximation is invariant to this linear change of variables)."""
    X, y3 = three_classes(n=40, seed=1)
    y = (y3 == 0).astype(int)
    soft = gc.fit(X, y, kernel=SquaredExponential(lengthscale, 1.5), likelihood="softmax")
    bina = gc.fit(X, y, kernel=SquaredExponential(lengthscale, 3.0), likelihood="logistic")
    assert abs(soft.log_marginal_likelihood - bina.log_marginal_likelihood) < 1e-6
    g = soft.f_hat[:, 1] - soft.f_hat[:, 0]
    np.testing.assert_allclose(g, bina.f_hat, atol=1e-6)
    np.testing.assert_allclose(
        soft.log_marginal_likelihood_gradient, bina.log_marginal_likelihood_gradient, atol=1e-6
    )
    Xs = np.random.default_rng(2).normal(size=(25, 2)) * 2
    # the two-class quadrature is one-dimensional, accurate to about 1e-13 like the
    # binary logistic quadrature it is compared with
    np.testing.assert_allclose(soft.predict_proba(Xs)[:, 1], bina.predict_proba(Xs), atol=1e-10)
    lp = soft.predict_log_proba(Xs)
    np.testing.assert_allclose(lp[:, 0], bina.log_predictive(Xs, -np.ones(25)), atol=1e-10)
    # Monte Carlo (R&W Alg. 3.4) within four of its own standard errors
    mean, cov = soft.predict_latent(Xs)
    p_mc, se = Softmax().log_predictive_all(
        mean, cov, integration="mc", n_samples=2000, random_seed=3, return_se=True
    )
    err = np.abs(np.exp(p_mc[:, 1]) - bina.predict_proba(Xs))
    assert np.all(err < 4 * se[:, 1] + 1e-12)
    assert np.all(se <= 0.5 / np.sqrt(2000))  # the stated bound on the MC error


def test_quadrature_against_a_finer_rule_and_monte_carlo():
    from gpc_compare.likelihoods import softmax as likelihoods

    rng = np.random.default_rng(4)
    sm = Softmax()
    for s in (0.3, 1.0, 3.0):
        mean = rng.normal(size=(20, 3)) * 3
        B = rng.normal(size=(20, 3, 3))
        cov = s**2 * B @ np.swapaxes(B, 1, 2) / 3
        quad = sm.log_predictive_all(mean, cov, integration="quadrature")
        half = likelihoods._QUAD_HALF
        try:
            likelihoods._QUAD_HALF = 2 * half  # twice as many nodes per dimension
            fine = sm.log_predictive_all(mean, cov, integration="quadrature")
        finally:
            likelihoods._QUAD_HALF = half
        assert np.max(np.abs(quad - fine)) < 1e-12
        np.testing.assert_allclose(np.exp(quad).sum(axis=1), 1.0, atol=1e-13)
        mc, se = sm.log_predictive_all(
            mean, cov, integration="mc", n_samples=4000, random_seed=1, return_se=True
        )
        assert np.all(np.abs(np.exp(mc) - np.exp(quad)) < 4.5 * se + 1e-12)


@pytest.mark.parametrize(
    ("kernel", "lengthscales"),
    [
        (SquaredExponential, [0.1, 1.0, 10.0]),
        (SquaredExponential, [[0.5, 2.0]]),
        (Matern52, [[0.7, 1.5]]),
    ],  # fmt: skip
    ids=["se-iso", "se-ard", "matern52-ard"],
)
def test_evidence_gradient_against_finite_differences(kernel, lengthscales):
    X, y = three_classes(n=25, seed=2)
    for ell in lengthscales:
        k = kernel(ell, 1.7)
        post = laplace.infer(X, y, k, Softmax(), tol=1e-14)

        def lml(theta, k=k):
            kt = k.with_theta(theta)
            return laplace.infer(X, y, kt, Softmax(), tol=1e-14).log_marginal_likelihood

        fd = central_difference(lml, k.theta, h=1e-5)
        np.testing.assert_allclose(post.log_marginal_likelihood_gradient, fd, rtol=1e-6, atol=1e-7)


def test_three_classes_predictions_and_labels():
    X, y = three_classes(n=40, seed=3, scale=2.0)
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    post = gc.fit(X, labels, likelihood="softmax", kernel=SquaredExponential(1.0, 2.0))
    assert post.convergence.converged and post.n_classes == 3
    np.testing.assert_array_equal(post.classes_, ["setosa", "versicolor", "virginica"])
    assert post.hyperparameter_names == ["log_lengthscale", "log_variance"]
    Xs = np.random.default_rng(0).normal(size=(50, 2)) * 3
    p = post.predict_proba(Xs)
    assert p.shape == (50, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-13)
    lp = post.log_predictive(Xs[:4], labels[:4])
    np.testing.assert_allclose(lp, np.log(p[np.arange(4), y[:4]]), rtol=1e-12)
    assert np.mean(post.predict(X) == labels) > 0.8
    # a far-away point under a large signal variance: Monte Carlo by default there
    big = gc.fit(X, labels, likelihood="softmax", kernel=SquaredExponential(1.0, 50.0))
    far = big.predict_proba(np.array([[30.0, 30.0]]))
    np.testing.assert_allclose(far.sum(), 1.0, atol=1e-13)
    np.testing.assert_allclose(far, 1 / 3, atol=4 * 0.5 / np.sqrt(2000))
    # warm start: the same mode from the previous a
    again = laplace.infer(X, post.y, post.kernel, Softmax(), warm_start=post.warm_start)
    assert again.convergence.iterations <= 2
    assert abs(again.log_marginal_likelihood - post.log_marginal_likelihood) < 1e-10
    idata = post.to_inference_data(draws=50, random_seed=0)
    assert idata.posterior["f"].shape == (1, 50, 40, 3)


def test_iris_petal_length_and_width():
    """The Iris lecture demo: SE kernel, sigma_f = 1 fixed, learned length-scale, Species ~
    Petal.Length + Petal.Width (standardised)."""
    iris = load_iris()
    X = iris.data[:, 2:4]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = iris.target_names[iris.target]
    k = SquaredExponential(1.0, 1.0, variance_bounds="fixed")
    post = gc.fit(X, y, likelihood="softmax", kernel=k, optimize=True, n_restarts=1,
                  random_seed=0)  # fmt: skip
    assert post.optimization.converged
    assert post.hyperparameter_names == ["log_lengthscale"]
    np.testing.assert_allclose(post.log_marginal_likelihood_gradient, 0.0, atol=1e-3)
    error = np.mean(post.predict(X) != y)
    # petal measurements separate setosa perfectly; versicolor and virginica overlap in
    # a handful of flowers (a linear classifier misclassifies about 4%)
    assert error < 0.06
    p = post.predict_proba(X)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-13)
    assert np.all(p[iris.target == 0, 0] > 0.8)  # setosa is certain


def test_mcmc_agrees_with_laplace_on_an_easy_problem():
    """sigma_f^2 = 0.5 keeps the posterior close to Gaussian, so the Laplace class
    probabilities should be near the sampled ones. Measured: Laplace is 0.014 (largest
    difference over the 15 test points) from a long run (4 x 5000 draws, ESS 35,000);
    this short run (2 x 500 draws) is 0.009 from the long one. The tolerance 0.03 allows
    the Laplace error and twice the Monte Carlo error. (Two short chains give R-hat
    about 1.02, above the 1.01 of ``diagnostics.passed``; ESS and divergences are
    checked.)"""
    X, y = three_classes(n=30, seed=4, scale=2.0)
    k = SquaredExponential(1.0, 0.5)
    lap = gc.fit(X, y, likelihood="softmax", kernel=k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mc = gc.fit(X, y, method="mcmc", likelihood="softmax", kernel=k, draws=500, tune=500,
                    chains=2, random_seed=1)  # fmt: skip
    assert mc.diagnostics.divergences == 0 and mc.diagnostics.ess_bulk_min > 400
    Xs = np.random.default_rng(1).normal(size=(15, 2))
    p_mc, p_lap = mc.predict_proba(Xs), lap.predict_proba(Xs)
    np.testing.assert_allclose(p_mc.sum(axis=1), 1.0, atol=1e-13)
    assert np.max(np.abs(p_mc - p_lap)) < 0.03
    assert mc.latent_mean.shape == (30, 3)
    np.testing.assert_allclose(mc.latent_mean, lap.f_hat, atol=0.15)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"y": np.zeros(10)}, "single class"),
        ({"y": np.r_[np.nan, np.arange(9) % 3]}, "y contains NaN or infinity"),
        ({"y": np.arange(9) % 3}, "X has 10 samples but y has 9 labels"),
        ({"y": np.ones((10, 2))}, "y must be a 1-D array"),
        (
            {"method": "ep"},
            "EP does not take the 'softmax' likelihood.*'laplace' or 'kl' or 'mcmc' or 'svgp'",
        ),
        ({"mean": 0.5}, "softmax likelihood takes no prior mean"),
        ({"X": np.full((10, 2), np.nan)}, "X contains NaN"),
        ({"method": "mcmc", "full_bayes": True}, "fixed hyperparameters only"),
        ({"method": "mcmc", "optimize": True}, "needs an evidence gradient"),
    ],
)
def test_bad_input(kwargs, message):
    X = np.random.default_rng(0).normal(size=(10, 2))
    args = {"X": X, "y": np.arange(10) % 3, "likelihood": "softmax", **kwargs}
    with pytest.raises(ValueError, match=message):
        gc.fit(**args)


def test_bad_test_labels_and_binary_likelihood_with_three_classes():
    X, y = three_classes(n=20)
    post = gc.fit(X, y, likelihood="softmax")
    with pytest.raises(ValueError, match="labels the model was not fit on"):
        post.log_predictive(X[:2], [0, 7])
    with pytest.raises(ValueError, match="use likelihood='softmax'"):
        gc.fit(X, y, likelihood="logistic")
    with pytest.raises(ValueError, match="integration must be"):
        post.predict_proba(X, integration="exact")


def test_classifier_multiclass():
    X, y = three_classes(n=45, seed=6, scale=2.0)
    labels = np.array([10, 20, 30])[y]
    clf = gc.GPClassifier(likelihood="softmax", random_state=0).fit(X, labels)
    np.testing.assert_array_equal(clf.classes_, [10, 20, 30])
    p = clf.predict_proba(X)
    assert p.shape == (45, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-13)
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X)), p, rtol=1e-12)
    assert clf.score(X, labels) > 0.8
    post = gc.fit(X, labels, likelihood="softmax", optimize=True, random_seed=0, n_restarts=0)
    np.testing.assert_allclose(p, post.predict_proba(X), rtol=1e-12)
    assert clone(clf).get_params()["likelihood"] == "softmax"
    with pytest.raises(ValueError, match="use likelihood='softmax'"):
        gc.GPClassifier().fit(X, labels)
