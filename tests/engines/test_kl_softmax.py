"""The multi-class KL engine (gc.fit(method="kl", likelihood="softmax")): its expectation
rules against a plain reference and each other, its block algebra against dense linear
algebra, the far-apart problem solved point by point by brute force, the binary engine at
C = 2, finite differences of the bound and of E_q, and the bound below the evidence."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, optimize, stats
from scipy.special import expit, log_expit, logsumexp, softmax

import gpc_compare as gc
from gpc_compare.engines import kl_softmax
from gpc_compare.engines._block_sites import (
    block_sites,
    covariance,
    inverse_blocks_trace,
    predict_blocks,
)
from gpc_compare.kernels import SquaredExponential
from gpc_compare.likelihoods import _softmax_expectation as expectation

from ..helpers import central_difference

TIGHT = {"tol": 1e-14, "site_tol": 1e-10}


def three_classes(n: int = 20, seed: int = 0, C: int = 3):
    """An overlapping problem of C classes in two dimensions."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    angles = 2 * np.pi * np.arange(C) / C
    scores = X @ np.stack([np.cos(angles), np.sin(angles)]) + 0.7 * rng.normal(size=(n, C))
    y = np.argmax(scores, axis=1)
    y[:C] = np.arange(C)  # every class present
    return X, y


def plain_expectation(y, mean, F, z, w):
    """E[log softmax_y], E[e_y - pi], E[Hessian], E[(e_y - pi) z^T] at nodes z (d, P) with
    weights w, written out with scipy's logsumexp and softmax (the reference)."""
    f = mean[:, None] + F @ z
    pi = softmax(f, axis=0)
    e = np.eye(len(mean))[y][:, None]
    hess = np.einsum("cp,dp,p->cd", pi, pi, w) - np.diag(pi @ w)
    return (f[y] - logsumexp(f, axis=0)) @ w, (e - pi) @ w, hess, ((e - pi) * w) @ z.T


# ------------------------------------------------------------------ E_q[log softmax]
def test_expectation_kernels_equal_the_plain_sums():
    """The compiled node sums equal the plain ones on the same nodes: the trapezoid grid
    and weights; for Monte Carlo the gap (log softmax minus Titsias' one-vs-each bound) on
    the same draws, plus the one-vs-each part by scipy's adaptive quadrature."""
    rng = np.random.default_rng(0)
    N, C, d = 4, 3, 2
    y = rng.integers(0, C, N)
    mean, F = 2 * rng.normal(size=(N, C)), rng.normal(size=(N, C, d))
    quad = expectation.expected_log_softmax_quadrature(y, mean, F)
    h, n = expectation._half_counts(F)
    for i in range(N):
        axes = [h[i, k] * np.arange(-n[i, k], n[i, k] + 1) for k in range(d)]
        z = np.stack(np.meshgrid(*axes, indexing="ij")).reshape(d, -1)
        log_w = -0.5 * np.sum(z**2, axis=0)
        ref = plain_expectation(y[i], mean[i], F[i], z, np.exp(log_w - logsumexp(log_w)))
        assert quad.value[i] == pytest.approx(ref[0], abs=1e-13)
        np.testing.assert_allclose(quad.grad[i], ref[1], atol=1e-13)
        np.testing.assert_allclose(quad.hess[i], ref[2], atol=1e-13)
    C, d = 4, 3
    y = rng.integers(0, C, N)
    mean, F = 2 * rng.normal(size=(N, C)), rng.normal(size=(N, C, d))
    z = expectation.antithetic_normal(N, 400, d, 1)
    mc = expectation.expected_log_softmax_mc(y, mean, F, z)
    for i in range(N):
        ove, ove_grad, ove_hess = one_vs_each_by_quad(y[i], mean[i], F[i] @ F[i].T)
        gap, gap_grad, gap_z = plain_gap(y[i], mean[i], F[i], z[i].T)
        assert mc.value[i] == pytest.approx(ove + gap, abs=1e-10)
        np.testing.assert_allclose(mc.grad[i], ove_grad + gap_grad, atol=1e-10)
        np.testing.assert_allclose(mc.hess[i], ove_hess, atol=1e-10)
        np.testing.assert_allclose(mc.grad_z[i], gap_z, atol=1e-13)
        # the whole estimate: within four standard errors of the plain Monte Carlo one
        plain = plain_expectation(y[i], mean[i], F[i], z[i].T, np.full(400, 1 / 400))[0]
        assert abs(mc.value[i] - plain) < 4 * np.std(
            plain_log_softmax(y[i], mean[i], F[i], z[i].T)
        ) / np.sqrt(400)


def plain_log_softmax(y, mean, F, z):
    f = mean[:, None] + F @ z
    return f[y] - logsumexp(f, axis=0)


def plain_gap(y, mean, F, z):
    """The gap log softmax_y - sum_{c != y} log sigma(f_y - f_c) on draws z (d, M): its
    mean, mean gradient in f and mean of gradient times z^T."""
    f = mean[:, None] + F @ z
    others = [c for c in range(len(mean)) if c != y]
    gap = plain_log_softmax(y, mean, F, z) - sum(log_expit(f[y] - f[c]) for c in others)
    g = np.eye(len(mean))[y][:, None] - softmax(f, axis=0)
    for c in others:
        s = expit(f[c] - f[y])
        g[y] -= s
        g[c] += s
    M = z.shape[1]
    return gap.mean(), g.mean(axis=1), g @ z.T / M


def one_vs_each_by_quad(y, mean, Sigma):
    """sum_{c != y} E[log sigma(x_c)], x_c = f_y - f_c ~ N(m_c, v_c), its gradient in the
    mean and twice its gradient in Sigma, by scipy's adaptive quadrature."""
    C = len(mean)
    value, grad, hess = 0.0, np.zeros(C), np.zeros((C, C))
    for c in (c for c in range(C) if c != y):
        a = np.zeros(C)
        a[y], a[c] = 1.0, -1.0
        m, s = a @ mean, np.sqrt(a @ Sigma @ a)

        def gauss(g, m=m, s=s):
            return lambda x: g(x) * stats.norm.pdf(x, m, s)

        lo, hi = m - 12 * s, m + 12 * s
        value += integrate.quad(gauss(log_expit), lo, hi, epsabs=1e-14, limit=200)[0]
        d1 = integrate.quad(gauss(lambda x: expit(-x)), lo, hi, epsabs=1e-14, limit=200)[0]
        d2 = integrate.quad(
            gauss(lambda x: -expit(x) * expit(-x)), lo, hi, epsabs=1e-14, limit=200
        )[0]
        grad += d1 * a
        hess += d2 * np.outer(a, a)
    return value, grad, hess


@pytest.mark.parametrize("r", [0.5, 3.0, 12.0])
def test_quadrature_against_a_finer_rule_and_monte_carlo(r):
    """The trapezoid rule (module note) against one with a quarter of its step, for
    spreads r from 0.5 to 12 (the range of a factor's column over the classes): within
    1e-9 in the value and 1e-8 in the derivatives; Monte Carlo within four standard
    errors of it."""
    rng = np.random.default_rng(1)
    N, C = 6, 3
    y = rng.integers(0, C, N)
    mean = 3 * rng.normal(size=(N, C))
    F = np.linalg.qr(rng.normal(size=(N, C, C)))[0][:, :, :2] * rng.uniform(0.3, 1, (N, 1, 2))
    F *= r / np.ptp(F, axis=1).max(axis=1)[:, None, None]
    quad = expectation.expected_log_softmax_quadrature(y, mean, F)
    saved = expectation.QUAD_STEP, expectation.QUAD_MAX_STEP
    try:
        expectation.QUAD_STEP, expectation.QUAD_MAX_STEP = saved[0] / 4, saved[1] / 4
        fine = expectation.expected_log_softmax_quadrature(y, mean, F)
    finally:
        expectation.QUAD_STEP, expectation.QUAD_MAX_STEP = saved
    np.testing.assert_allclose(quad.value, fine.value, atol=1e-9)
    np.testing.assert_allclose(quad.grad, fine.grad, atol=1e-8)
    np.testing.assert_allclose(quad.hess, fine.hess, atol=1e-8)
    z = expectation.antithetic_normal(N, 4000, 2, 2)
    mc = expectation.expected_log_softmax_mc(y, mean, F, z)
    assert np.all(np.abs(mc.value - quad.value) < 4 * mc.se + 1e-12)


@pytest.mark.parametrize("rule", ["quadrature", "mc"])
def test_expectation_derivatives_against_finite_differences(rule):
    """The engine's dE/dmu and dE/dS over the contrasts: for Monte Carlo the exact
    derivatives of the estimate on its fixed draws (through S^1/2), for the quadrature
    Price's theorem, equal to the rule's derivatives to its accuracy."""
    rng = np.random.default_rng(2)
    n, C = 3, 3
    y = rng.integers(0, C, n)
    mu = 2 * rng.normal(size=(n, C - 1))
    A = rng.normal(size=(n, 2, 2))
    S = A @ np.swapaxes(A, 1, 2) + 0.3 * np.eye(2)
    z = expectation.antithetic_normal(n, 300, 2, 0)
    ex = kl_softmax._Expectation(y, kl_softmax.contrasts(C), rule, z)
    _, grad, G, _ = ex(mu, S)
    h, tol = 1e-5, (1e-9 if rule == "mc" else 1e-7)
    for i in range(n):
        fd = central_difference(
            lambda m, i=i: ex(np.vstack([mu[:i], m, mu[i + 1 :]]), S)[0][i], mu[i], h
        )
        np.testing.assert_allclose(grad[i], fd, atol=tol)
        for a, b in [(0, 0), (0, 1), (1, 1)]:
            E = np.zeros((2, 2))
            E[a, b] = E[b, a] = 1.0

            def value(t, i=i, E=E):
                Si = S.copy()
                Si[i] += t[0] * E
                return ex(mu, Si)[0][i]

            fd = central_difference(value, np.zeros(1), h)[0]
            assert np.sum(G[i] * E) == pytest.approx(fd, abs=tol)


# ---------------------------------------------------------------------- the algebra
@pytest.mark.parametrize("negative", [False, True])
def test_block_sites_equal_dense_linear_algebra(negative):
    """q's mean, blocks, full covariance, log determinant, K^-1 mu, the gradient's trace
    term and the predictions against (K_big^-1 + Lam)^-1 formed densely; with a site block
    of a negative eigenvalue too (Woodbury's part)."""
    rng = np.random.default_rng(3)
    n, d = 7, 2
    X, Xs = rng.normal(size=(n, 2)), rng.normal(size=(3, 2))
    k = SquaredExponential(1.0, 2.0)
    K, Ks, kss = k(X), k(X, Xs), k.diag(Xs)
    A = rng.normal(size=(n, d, d))
    Lam = A @ np.swapaxes(A, 1, 2)
    Lam[0] = 0.0  # a site without precision
    if negative:
        Lam[3] = np.diag([0.3, -0.02])
    b = rng.normal(size=(n, d))
    q = block_sites(K, Lam, b)
    assert (q.negative is not None) == negative
    Kb = np.kron(np.eye(d), K)
    dense = np.zeros((d * n, d * n))
    for i in range(n):
        dense[np.ix_(i + n * np.arange(d), i + n * np.arange(d))] = Lam[i]
    Sigma = np.linalg.inv(np.linalg.inv(Kb) + dense)
    mu = Sigma @ b.T.ravel()
    np.testing.assert_allclose(q.mu.T.ravel(), mu, atol=1e-13)
    np.testing.assert_allclose(covariance(q, K), Sigma, atol=1e-13)
    blocks = np.stack([Sigma[np.ix_(i + n * np.arange(d), i + n * np.arange(d))] for i in range(n)])
    np.testing.assert_allclose(q.S, blocks, atol=1e-13)
    logdet = np.linalg.slogdet(Kb)[1] - np.linalg.slogdet(Sigma)[1]
    assert q.log_det_B == pytest.approx(logdet, abs=1e-12)
    Kinv = np.linalg.inv(Kb)
    np.testing.assert_allclose(q.alpha.T.ravel(), Kinv @ mu, atol=1e-12)
    RBR = Kinv - Kinv @ Sigma @ Kinv
    T = sum(RBR[a * n : (a + 1) * n, a * n : (a + 1) * n] for a in range(d))
    np.testing.assert_allclose(inverse_blocks_trace(q, K), T, atol=1e-12)
    Ksb = np.kron(np.eye(d), Ks)
    mean, cov = predict_blocks(q, K, Ks, kss, chunk=2)
    np.testing.assert_allclose(mean.T.ravel(), Ksb.T @ Kinv @ mu, atol=1e-12)
    full = np.kron(np.eye(d), np.diag(kss)) - Ksb.T @ RBR @ Ksb
    for j in range(3):
        np.testing.assert_allclose(cov[j], full[np.ix_([j, 3 + j], [j, 3 + j])], atol=1e-12)


# ----------------------------------------------------------------- the engine's optimum
def _one_point_optimum(y: int, v: float, C: int = 3, nodes: int = 32):
    """max over q = N(m, L L^T) on R^C of E_q[log softmax_y(f)] - KL(q || N(0, v I)), by
    BFGS on (m, L) with the integral by a C-dimensional Gauss-Hermite rule (its exact
    derivatives: E[e_y - pi] in m, E[(e_y - pi) z^T] in L): the brute force of one case."""
    x, w = np.polynomial.hermite.hermgauss(nodes)
    grid = np.stack(np.meshgrid(*[np.sqrt(2) * x] * C, indexing="ij")).reshape(C, -1)
    weight = np.prod(np.stack(np.meshgrid(*[w / np.sqrt(np.pi)] * C, indexing="ij")), 0).ravel()
    low = np.tril_indices(C)

    def neg_elbo(p):
        m, L = p[:C], np.zeros((C, C))
        L[low] = p[C:]
        f = m[:, None] + L @ grid
        lse = logsumexp(f, axis=0)
        g = np.eye(C)[y][:, None] - np.exp(f - lse)
        S = L @ L.T
        kl = 0.5 * (np.trace(S) / v + m @ m / v - C + C * np.log(v) - np.linalg.slogdet(S)[1])
        d_m = g @ weight - m / v
        d_L = (g * weight) @ grid.T - L / v + np.linalg.inv(L).T
        return -((f[y] - lse) @ weight - kl), -np.concatenate([d_m, d_L[low]])

    start = np.concatenate([np.zeros(C), np.sqrt(v) * np.eye(C)[low]])
    res = optimize.minimize(neg_elbo, start, jac=True, method="BFGS", options={"gtol": 1e-11})
    L = np.zeros((C, C))
    L[low] = res.x[C:]
    return res.x[:C], L @ L.T, -res.fun


def test_far_apart_points_are_one_point_problems_solved_by_brute_force():
    """K = v I (points 1e3 length-scales apart): the bound separates into one C-dimensional
    problem per case, solved here over all C latent values (the mean and the full C x C
    covariance of q, with a 3-D Gauss-Hermite rule) with nothing of the engine's reduction
    to the C - 1 contrasts: mean, covariance and bound agree; Monte Carlo integration
    within its standard errors."""
    X = np.array([[0.0], [1e3], [2e3]])
    y = np.array([0, 2, 1])
    v = 2.0
    kernel = SquaredExponential(1.0, v)
    post = gc.fit(X, y, method="kl", likelihood="softmax", kernel=kernel, integration="quadrature",
                  **TIGHT)  # fmt: skip
    assert post.convergence.converged and post.integration == "quadrature"
    total = 0.0
    for i in range(3):
        m, S, elbo = _one_point_optimum(y[i], v)
        np.testing.assert_allclose(post.latent_mean[i], m, atol=1e-7)
        np.testing.assert_allclose(post.latent_point_cov[i], S, atol=1e-7)
        total += elbo
    assert post.log_marginal_likelihood == pytest.approx(total, abs=1e-8)
    full = post.latent_cov.reshape(3, 3, 3, 3)  # (class, case, class, case)
    for i in range(3):
        np.testing.assert_allclose(full[:, i, :, i], post.latent_point_cov[i], atol=1e-13)
    mc = gc.fit(X, y, method="kl", likelihood="softmax", kernel=kernel, mc_seed=3)
    assert mc.integration == "mc" and 0 < mc.log_marginal_likelihood_se < 0.02
    assert abs(mc.log_marginal_likelihood - total) < 4 * mc.log_marginal_likelihood_se
    # (the optimum of the estimated bound, about a standard error from the exact one)
    np.testing.assert_allclose(mc.latent_point_cov, post.latent_point_cov, atol=0.05)


@pytest.mark.parametrize("lengthscale", [0.5, 2.0])
def test_two_classes_are_the_binary_logistic_kl_with_twice_the_kernel(lengthscale):
    """C = 2: the softmax sees only g = f_2 - f_1 ~ GP(0, 2K), and at the optimum f_1 + f_2
    keeps its prior: the bound, the difference's moments and the gradient are the binary
    logistic KL's with 2K (a separate engine, with its own quadrature)."""
    X, y3 = three_classes(n=25, seed=1)
    y = (y3 == 0).astype(int)
    soft = gc.fit(X, y, "kl", SquaredExponential(lengthscale, 1.5), "softmax", **TIGHT)
    bina = gc.fit(X, 2 * y - 1, "kl", SquaredExponential(lengthscale, 3.0), "logistic", **TIGHT)
    assert soft.log_marginal_likelihood == pytest.approx(bina.log_marginal_likelihood, abs=1e-9)
    np.testing.assert_allclose(soft.latent_mean[:, 1] - soft.latent_mean[:, 0],
                               bina.latent_mean, atol=1e-7)  # fmt: skip
    cov = soft.latent_point_cov
    np.testing.assert_allclose(cov[:, 0, 0] + cov[:, 1, 1] - 2 * cov[:, 0, 1], bina.latent_var,
                               atol=1e-7)  # fmt: skip
    np.testing.assert_allclose(soft.log_marginal_likelihood_gradient,
                               bina.log_marginal_likelihood_gradient, atol=1e-7)  # fmt: skip
    Xs = np.random.default_rng(2).normal(size=(6, 2))
    np.testing.assert_allclose(soft.predict_proba(Xs)[:, 1], bina.predict_proba(Xs), atol=1e-7)


@pytest.mark.parametrize(
    ("C", "integration", "lengthscale"),
    [(3, "quadrature", 0.7), (3, "quadrature", [0.5, 2.0]), (3, "mc", 1.5), (4, "mc", 1.0)],
)
def test_bound_gradient_matches_finite_differences(C, integration, lengthscale):
    """The bound's gradient (the partial derivative at the optimal q) against central
    differences of the bound refitted: with the quadrature, and with Monte Carlo on its
    fixed draws (the bound is then the estimate's, one smooth function of theta, and its
    gradient is exact for it)."""
    X, y = three_classes(n=14, seed=4, C=C)
    kernel = SquaredExponential(lengthscale, 3.0)
    options = {"integration": integration, **TIGHT}
    post = gc.fit(X, y, "kl", kernel, "softmax", **options)

    def bound(theta):
        fit = gc.fit(X, y, "kl", kernel.with_theta(theta), "softmax", warm_start=post, **options)
        return fit.log_marginal_likelihood

    fd = central_difference(bound, kernel.theta, h=1e-5)
    np.testing.assert_allclose(post.log_marginal_likelihood_gradient, fd, rtol=1e-6, atol=1e-7)


def _log_evidence_two_points(X, y, kernel, nodes: int = 20) -> float:
    """log p(y | X) for two cases of three classes by brute force: over the contrasts
    g = Q^T f (the softmax's only argument; the prior I (x) K), whitened by chol(K), a
    four-dimensional Gauss-Hermite rule."""
    Q = kl_softmax.contrasts(3)
    L = np.linalg.cholesky(kernel(X))
    x, w = np.polynomial.hermite.hermgauss(nodes)
    Z = np.stack(np.meshgrid(*[np.sqrt(2) * x] * 4, indexing="ij")).reshape(4, -1)
    logw = np.log(np.stack(np.meshgrid(*[w / np.sqrt(np.pi)] * 4, indexing="ij"))).sum(0)
    g = np.stack([L @ Z[:2], L @ Z[2:]])  # (contrast, case, node)
    total = logw.ravel()
    for i in range(2):
        f = Q @ g[:, i]
        total = total + f[y[i]] - logsumexp(f, axis=0)
    return float(logsumexp(total))


def test_the_bound_lies_below_the_evidence():
    """Two correlated cases and a third far from them (K block diagonal): log p(y) is a
    4-D brute-force integral over the pair plus the third's predictive integral under the
    prior (the softmax quadrature of the likelihood module). The bound (quadrature and
    Monte Carlo) lies below it, and close; Laplace's evidence, an approximation and not a
    bound, is within 0.5 of it too."""
    kernel = SquaredExponential(0.5, 2.0)
    X, y = np.array([[0.0], [0.4], [1e3]]), np.array([0, 2, 1])
    pair = _log_evidence_two_points(X[:2], y[:2], kernel)
    # (Gauss-Hermite converges slowly on the softmax's bends: 2e-6 from 26 nodes an axis)
    assert pair == pytest.approx(_log_evidence_two_points(X[:2], y[:2], kernel, 26), abs=1e-5)
    log_z = pair + gc.likelihoods.Softmax().log_predictive(1, np.zeros(3), 2.0 * np.eye(3))
    for integration in ("quadrature", "mc"):
        post = gc.fit(X, y, "kl", kernel, "softmax", integration=integration)
        assert log_z - 0.3 < post.log_marginal_likelihood < log_z
    laplace = gc.fit(X, y, "laplace", kernel, "softmax")
    assert abs(laplace.log_marginal_likelihood - log_z) < 0.5


# ------------------------------------------------------------------ options and callers
def test_options_are_checked_and_the_binary_refuses_the_softmax_ones():
    X, y = three_classes(n=12, seed=5)
    with pytest.raises(ValueError, match=r"integration must be one of \['quadrature', 'mc'\]"):
        gc.fit(X, y, "kl", likelihood="softmax", integration="exact")
    with pytest.raises(ValueError, match="n_samples must be"):
        gc.fit(X, y, "kl", likelihood="softmax", n_samples=1)
    with pytest.raises(
        ValueError, match="integration, n_samples and mc_seed options are the softmax's"
    ):
        gc.fit(X, (y == 0).astype(int), "kl", likelihood="probit", integration="mc")
    with pytest.raises(ValueError, match="takes no prior mean"):
        gc.fit(X, y, "kl", likelihood="softmax", mean=0.0)
    with pytest.raises(ValueError, match=r"warm_start must be a pair \(Lam, b\)"):
        gc.fit(X, y, "kl", likelihood="softmax", warm_start=(np.zeros((12, 2)), np.zeros(12)))
    binary = gc.fit(X, (y == 0).astype(int), "kl", likelihood="probit")
    with pytest.raises(ValueError, match=r"warm_start must be a pair \(Lam, b\)"):
        gc.fit(X, y, "kl", likelihood="softmax", warm_start=binary)


def test_seeded_draws_warm_starts_and_optimisation():
    """The Monte Carlo draws follow mc_seed, not gc.fit's random_seed (they are part of
    the rule: a fit is repeatable, the bound one function of theta); a warm
    start from the fit converges at once to the same bound; optimize=True raises the bound
    (the exact gradient followed by L-BFGS-B)."""
    X, y = three_classes(n=15, seed=6)
    kernel = SquaredExponential(1.0, 2.0)
    a = gc.fit(X, y, "kl", kernel, "softmax")
    b = gc.fit(X, y, "kl", kernel, "softmax", random_seed=5)
    c = gc.fit(X, y, "kl", kernel, "softmax", mc_seed=1)
    assert a.log_marginal_likelihood == b.log_marginal_likelihood != c.log_marginal_likelihood
    assert (
        abs(a.log_marginal_likelihood - c.log_marginal_likelihood)
        < 5 * a.log_marginal_likelihood_se
    )
    again = gc.fit(X, y, "kl", kernel, "softmax", warm_start=a)
    assert again.convergence.iterations <= 2
    assert again.log_marginal_likelihood == pytest.approx(a.log_marginal_likelihood, abs=1e-9)
    best = gc.fit(X, y, "kl", kernel, "softmax", optimize=True, n_restarts=0)
    assert best.optimization.converged
    assert best.log_marginal_likelihood > a.log_marginal_likelihood
    assert np.all(np.abs(best.log_marginal_likelihood_gradient) < 1e-3)
    assert best.record()["log_evidence_se"] == best.log_marginal_likelihood_se > 0


def test_classifier_on_three_classes():
    """GPClassifier(method="kl", likelihood="softmax"): any labels, probabilities (m, C)
    summing to one, the same posterior as gc.fit."""
    X, y = three_classes(n=24, seed=7)
    labels = np.array(["a", "b", "c"])[y]
    kernel = SquaredExponential(1.0, 2.0)
    clf = gc.GPClassifier(method="kl", likelihood="softmax", kernel=kernel, optimizer=None)
    clf.fit(X, labels)
    assert list(clf.classes_) == ["a", "b", "c"]
    P = clf.predict_proba(X[:5])
    assert P.shape == (5, 3)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    post = gc.fit(X, y, "kl", kernel, "softmax")
    np.testing.assert_allclose(P, post.predict_proba(X[:5]), rtol=1e-12)
    assert set(clf.predict(X)) <= {"a", "b", "c"}


def test_a_problem_too_large_is_refused_before_allocating(monkeypatch):
    monkeypatch.setattr(kl_softmax, "available_memory", lambda: 10**6)
    X, y = three_classes(n=200, seed=8)
    with pytest.raises(ValueError, match=r"need about [\d.]+ GiB for the softmax KL engine's"):
        gc.fit(X, y, "kl", likelihood="softmax")


@pytest.mark.parametrize("integration", ["quadrature", "mc"])
def test_the_optimum_is_stationary_in_the_sites(integration):
    """The inner objective: central differences of the bound along random directions of
    the sites (Lam, b) vanish at the fitted optimum (what makes the partial derivative in
    theta the gradient), and do not halfway to it."""
    X, y = three_classes(n=12, seed=9)
    kernel = SquaredExponential(0.8, 2.5)
    post = gc.fit(X, y, "kl", kernel, "softmax", integration=integration, **TIGHT)
    z = expectation.antithetic_normal(12, 1000, 2, 0)
    ex = kl_softmax._Expectation(post.y, kl_softmax.contrasts(3), integration, z)
    rng = np.random.default_rng(10)
    for scale in (1.0, 0.5):
        Lam, b = scale * post.Lam, scale * post.b
        for _ in range(3):
            dL = rng.normal(size=Lam.shape)
            dL = 0.01 * (dL + np.swapaxes(dL, 1, 2))
            db = 0.01 * rng.normal(size=b.shape)

            def bound(t, Lam=Lam, b=b, dL=dL, db=db):
                return kl_softmax._state(post.K, ex, Lam + t[0] * dL, b + t[0] * db).elbo

            slope = central_difference(bound, np.zeros(1), h=1e-4)[0]
            if scale == 1.0:
                assert abs(slope) < 1e-7
            else:
                assert abs(slope) > 1e-4
