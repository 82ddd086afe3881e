"""Every engine under the Gaussian likelihood is GP regression, checked against its closed form.

With p(y | f) = N(y | f, s2) the posterior of f is Gaussian and the evidence is known
(R&W section 2.2): Laplace's mode is the posterior mean and its curvature the posterior
precision, EP's sites are exact after one sweep, a variational Gaussian is the posterior
itself. So every deterministic engine must give the exact log marginal likelihood (R&W
eq. 2.30), its gradient (eq. 5.9) and the exact predictive moments (eqs. 2.25-2.26) to
rounding, and a sampling engine must agree within its Monte Carlo error: the GPflow way
(GPflow's tests/integration/test_method_equivalence.py), here with the regression
computed directly in numpy rather than by another engine.

Engines come from :data:`gpc_compare.engines.ENGINES` and their capabilities, so a new
engine is picked up here automatically; one that refuses the Gaussian likelihood (a
ValueError, e.g. VB for the logistic likelihood only) is skipped with its message.

Also here: annealed importance sampling (:func:`gpc_compare.evidence.ais`) against the
closed-form evidence at n = 50, where only the Gaussian likelihood gives an exact answer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import gpc_compare as gc
from gpc_compare.engines import ENGINES, capabilities, get_engine
from gpc_compare.evidence import ais
from gpc_compare.likelihoods import Gaussian
from gpc_compare.numerics import JITTER, cholesky

N, N_TEST = 30, 10
EXACT_TOL = 1e-8
#: Monte Carlo standard errors allowed (latent moments, AIS evidence).
MC_Z = 4.0
#: Sampler settings for engines that draw (chosen to keep a fit under ~20 s).
SAMPLER = {"draws": 1000, "tune": 1000, "chains": 2, "random_seed": 20240611, "evidence": True}


@dataclass(frozen=True)
class Exact:
    """GP regression in closed form (R&W Alg. 2.1)."""

    lml: float
    gradient: np.ndarray
    mean: np.ndarray  # latent posterior mean at the training inputs
    var: np.ndarray
    mean_s: np.ndarray  # ... and at the test inputs
    var_s: np.ndarray
    log_predictive: np.ndarray  # log N(ys | mean_s, var_s + s2)


def exact_regression(X, y, Xs, ys, kernel, s2: float, mean: float | None) -> Exact:
    """Exact GP regression with numpy: K + s2 I by Cholesky (R&W Alg. 2.1)."""
    n = X.shape[0]
    m = 0.0 if mean is None else mean
    K = kernel(X)
    Ky = K + s2 * np.eye(n)
    L = np.linalg.cholesky(Ky)
    r = y - m
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, r))
    # R&W eq. 2.30
    lml = -0.5 * r @ alpha - np.log(np.diag(L)).sum() - 0.5 * n * np.log(2.0 * np.pi)
    # R&W eq. 5.9: 1/2 tr((alpha alpha^T - Ky^-1) dK); d/dm = 1^T alpha
    Kyinv = np.linalg.inv(Ky)
    A = np.outer(alpha, alpha) - Kyinv
    grad = [0.5 * np.sum(A * dK) for dK in kernel.gradient(X)]
    if mean is not None:
        grad.append(alpha.sum())
    # R&W eqs. 2.25-2.26, for the latent f (no noise added)
    fmean = m + K @ alpha
    fvar = np.diag(K - K @ Kyinv @ K)
    Ks = kernel(X, Xs)
    mean_s = m + Ks.T @ alpha
    var_s = kernel.diag(Xs) - np.einsum("ij,ij->j", Ks, Kyinv @ Ks)
    tot = var_s + s2
    lp = -0.5 * (np.log(2.0 * np.pi * tot) + (ys - mean_s) ** 2 / tot)
    return Exact(float(lml), np.asarray(grad), fmean, fvar, mean_s, var_s, lp)


def regression_data(n: int = N, n_test: int = N_TEST, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(n + n_test, 2))
    y = np.sin(2.0 * X[:, 0]) + 0.5 * np.cos(X[:, 1]) + 0.3 * rng.normal(size=n + n_test)
    return X[:n], y[:n], X[n:], y[n:]


def _fit_or_skip(method: str, X, y, kernel, lik, mean, **options):
    """gc.fit, skipping an engine that does not take the Gaussian likelihood (its declared
    likelihoods); such an engine must refuse it with a ValueError naming it."""
    if not get_engine(method).takes("gaussian"):
        with pytest.raises(ValueError, match="gaussian"):
            gc.fit(X, y, method, kernel, lik, mean, **options)
        pytest.skip(f"the {method!r} engine does not take the Gaussian likelihood")
    if "sparse" in capabilities(method):
        # with every training input an inducing input the sparse prior is the full one up
        # to the jitter (K~ - K is of the order of snu^2 = jitter sigma_f^2: 1e-12 here)
        options = {"inducing": X, "jitter": 1e-12, **options}
    return gc.fit(X, y, method, kernel, lik, mean, **options)


def _sampler_options(method: str) -> dict:
    return {k: v for k, v in SAMPLER.items() if get_engine(method).takes_option(k)}


#: Largest deviations seen, per engine and quantity (printed with ``pytest -s``).
DEVIATIONS: dict[tuple, float] = {}

CASES = [(s2, mean) for s2 in (0.1, 1.0) for mean in (None, 0.7)]


@pytest.mark.parametrize("method", list(ENGINES))
@pytest.mark.parametrize(("s2", "mean"), CASES, ids=lambda v: repr(v))
def test_every_engine_is_exact_gp_regression(method: str, s2: float, mean: float | None):
    X, y, Xs, ys = regression_data()
    kernel = gc.kernels.SquaredExponential(lengthscale=0.8, variance=1.5)
    lik = Gaussian(variance=s2)
    ex = exact_regression(X, y, Xs, ys, kernel, s2, mean)
    can = capabilities(method)
    if "draws" in can:
        _check_sampler(method, X, y, Xs, ys, kernel, lik, mean, ex)
        return
    post = _fit_or_skip(method, X, y, kernel, lik, mean)
    mean_s, var_s = post.predict_latent(Xs)
    got = {
        "log evidence": (post.log_marginal_likelihood, ex.lml),
        "latent mean (train)": (post.latent_mean, ex.mean),
        "latent var (train)": (post.latent_var, ex.var),
        "latent mean (test)": (mean_s, ex.mean_s),
        "latent var (test)": (var_s, ex.var_s),
        "log_predictive (test)": (post.log_predictive(Xs, ys), ex.log_predictive),
    }
    if "evidence_gradient" in can:
        got["evidence gradient"] = (post.log_marginal_likelihood_gradient, ex.gradient)
    for what, (value, want) in got.items():
        dev = float(np.max(np.abs(np.asarray(value) - want)))
        DEVIATIONS[(method, s2, mean, what)] = dev
        assert dev < EXACT_TOL, f"{method}: {what} is off by {dev:.2e}"
    with pytest.raises(ValueError, match="regression"):
        post.predict_proba(Xs)


def _check_sampler(method, X, y, Xs, ys, kernel, lik, mean, ex: Exact):
    """A sampling engine: latent moments within MC_Z Monte Carlo standard errors of the
    exact ones, and its evidence (if it estimates one) within MC_Z of its own standard
    errors (plus rounding: from EP's exact sites the AIS weights are all equal)."""
    post = _fit_or_skip(method, X, y, kernel, lik, mean, **_sampler_options(method))
    f = post.idata.posterior["f"].values  # (chains, draws, n)
    m = post.prior_mean
    # the test-input latent mean is linear in f: its draws are m + (f - m) K^-1 K*, and
    # its variance adds the conditional variance of f* | f (the law of total variance)
    L = cholesky(kernel(X), jitter=JITTER)
    Ks = kernel(X, Xs)
    A = np.linalg.solve(L.T, np.linalg.solve(L, Ks))
    fs = m + (f - m) @ A
    cond_var = kernel.diag(Xs) - np.einsum("ij,ij->j", Ks, A)
    z_mean, z_var = [], []
    for draws, want_mean, want_var in ((f, ex.mean, ex.var), (fs, ex.mean_s, ex.var_s - cond_var)):
        for i in range(draws.shape[-1]):
            se_m, se_v = gc.metrics.mc_standard_errors(draws[..., i])
            z_mean.append((draws[..., i].mean() - want_mean[i]) / se_m)
            z_var.append((draws[..., i].var() - want_var[i]) / se_v)
    z_mean, z_var = np.abs(z_mean), np.abs(z_var)
    DEVIATIONS[(method, lik.variance, mean, "max |z| latent mean")] = float(z_mean.max())
    DEVIATIONS[(method, lik.variance, mean, "max |z| latent var")] = float(z_var.max())
    assert z_mean.max() < MC_Z, f"latent means off by up to {z_mean.max():.2f} MC s.e."
    assert z_var.max() < MC_Z, f"latent variances off by up to {z_var.max():.2f} MC s.e."
    mean_s, var_s = post.predict_latent(Xs)
    flat = fs.reshape(-1, Xs.shape[0])
    np.testing.assert_allclose(mean_s, flat.mean(axis=0), atol=1e-10)
    np.testing.assert_allclose(var_s, cond_var + flat.var(axis=0), atol=1e-10)
    lp = post.log_predictive(Xs, ys)  # real ys accepted; a mixture over draws
    DEVIATIONS[(method, lik.variance, mean, "log_predictive |error|")] = float(
        np.max(np.abs(lp - ex.log_predictive))
    )
    with pytest.raises(ValueError, match="regression"):
        post.predict_proba(Xs)
    try:
        lml, se = post.log_marginal_likelihood, post.log_marginal_likelihood_se
    except ValueError:  # this engine estimated no evidence
        return
    DEVIATIONS[(method, lik.variance, mean, "evidence |error|")] = abs(lml - ex.lml)
    DEVIATIONS[(method, lik.variance, mean, "evidence se")] = se
    # (gc.evidence.estimate's SMC) from EP's exact sites every weight is equal (se = 0):
    # allow rounding
    assert abs(lml - ex.lml) <= MC_Z * se + 1e-6, (lml, se, ex.lml)


def test_laplace_converges_in_one_newton_step_and_ep_in_one_sweep():
    X, y, _, _ = regression_data()
    kernel = gc.kernels.SquaredExponential(lengthscale=0.8, variance=1.5)
    lik = Gaussian(variance=0.3)
    ex = exact_regression(X, y, X, y, kernel, 0.3, 0.5)
    # one Newton step reaches the mode; the stopping rule needs a second to see it
    with pytest.warns(RuntimeWarning, match="not converged after 1 Newton"):
        one = gc.fit(X, y, "laplace", kernel, lik, 0.5, max_iter=1)
    assert one.log_marginal_likelihood == pytest.approx(ex.lml, abs=1e-9)
    np.testing.assert_allclose(one.f_hat, ex.mean, atol=1e-12)
    np.testing.assert_allclose(one.W, 1.0 / 0.3, rtol=1e-15)
    assert gc.fit(X, y, "laplace", kernel, lik, 0.5).convergence.iterations == 2
    ep = gc.fit(X, y, "ep", kernel, lik, 0.5, min_iter=1, max_iter=2)
    np.testing.assert_allclose(ep.ttau, 1.0 / 0.3, rtol=1e-10)  # the sites are the likelihood
    np.testing.assert_allclose(ep.tnu, y / 0.3, rtol=1e-10)
    assert ep.log_marginal_likelihood == pytest.approx(ex.lml, abs=1e-9)
    # EP's leave-one-out predictive is GP regression's: sum log N(y_i | mu_-i, s2_-i + s2)
    Ky = kernel(X) + 0.3 * np.eye(X.shape[0])
    Ki = np.linalg.inv(Ky)
    a = Ki @ (y - 0.5)
    loo = -0.5 * np.log(2 * np.pi / np.diag(Ki)) - 0.5 * a**2 / np.diag(Ki)  # R&W eq. 5.12
    assert ep.loo_log_predictive == pytest.approx(loo.sum(), abs=1e-8)


def test_hyperparameter_fitting_reaches_the_regression_optimum():
    X, y, _, _ = regression_data()
    lik = Gaussian(variance=0.1)
    kernel = gc.kernels.SquaredExponential(lengthscale=1.0, variance=1.0)
    lap = gc.fit(X, y, "laplace", kernel, lik, 0.0, optimize=True, n_restarts=0)
    ep = gc.fit(X, y, "ep", kernel, lik, 0.0, optimize=True, n_restarts=0)
    np.testing.assert_allclose(lap.hyperparameters, ep.hyperparameters, atol=1e-4)
    ex = exact_regression(X, y, X, y, lap.kernel, 0.1, lap.mean)
    assert np.max(np.abs(ex.gradient)) < 1e-3  # a stationary point of the exact evidence


# ------------------------------------------------------------ AIS against the closed form
def _ais_problem(signal_variance: float, n: int = 50):
    rng = np.random.default_rng(2)
    X = rng.uniform(-2.0, 2.0, size=(n, 2))
    y = np.sin(2.0 * X[:, 0]) + 0.5 * X[:, 1] + rng.normal(size=n)
    kernel = gc.kernels.SquaredExponential(lengthscale=1.0, variance=signal_variance)
    L = cholesky(kernel(X), jitter=JITTER)
    K = L @ L.T  # AIS samples the prior N(0, L L^T): K with its jitter
    Ly = np.linalg.cholesky(K + np.eye(n))
    a = np.linalg.solve(Ly.T, np.linalg.solve(Ly, y))
    lml = -0.5 * y @ a - np.log(np.diag(Ly)).sum() - 0.5 * n * np.log(2.0 * np.pi)
    return X, y, kernel, K, L, float(lml)


#: From the prior at sigma_f^2 = e^4 a 2000-step schedule is too short: over 16 seeds its
#: standard error understated the error (z down to -7.3, 6 of 16 beyond -2.5), as is typical
#: of AIS weights with a heavy right tail; with 8000 steps z lay in [-2.98, 1.73] over 16
#: seeds (mean -0.6: a small low bias remains). At sigma_f^2 = 1, 2000 steps: z in
#: [-2.17, 2.59] over 16 seeds.
AIS_TEMPERATURES = {1.0: 2000, float(np.exp(4.0)): 8000}


@pytest.mark.parametrize("signal_variance", [1.0, float(np.exp(4.0))], ids=["sf2=1", "sf2=e^4"])
@pytest.mark.parametrize("start", ["prior", "ep_sites", "perturbed_sites"])
def test_ais_recovers_the_closed_form_evidence(signal_variance: float, start: str):
    """AIS under N(y | f, 1) at n = 50 within 3 standard errors of R&W eq. 2.30.

    From EP's sites, which are exact here, the starting distribution is the posterior: every
    weight is equal and the estimate exact to rounding. From sites that are wrong (those of
    noise variance 2 where it is 1) the path has work to do, as it has from the prior.
    """
    X, y, kernel, K, L, lml = _ais_problem(signal_variance)
    lik = Gaussian(variance=1.0)
    if start == "prior":
        r = ais(L, 0.0, y, lik, temperatures=AIS_TEMPERATURES[signal_variance], random_seed=1)
    else:
        if start == "ep_sites":
            ep = gc.fit(X, y, "ep", kernel, lik)
            sites = (ep.ttau, ep.tnu)
        else:
            sites = (np.full(y.size, 0.5), y / 2.0)
        r = ais(L, 0.0, y, lik, K=K, sites=sites, temperatures=300, random_seed=1)
    err = r.log_evidence - lml
    DEVIATIONS[("ais", signal_variance, start, "error")] = err
    DEVIATIONS[("ais", signal_variance, start, "se")] = r.standard_error
    if start == "ep_sites":
        assert abs(err) < 1e-9 and r.standard_error < 1e-12
    else:
        assert r.standard_error < 1.0
        assert abs(err) <= 3.0 * r.standard_error, (err, r.standard_error)


@pytest.fixture(scope="module", autouse=True)
def _report_deviations():
    yield
    if DEVIATIONS:
        width = max(len(str(k)) for k in DEVIATIONS)
        lines = [f"{str(k):<{width}}  {v:.3g}" for k, v in DEVIATIONS.items()]
        print("\nmethod equivalence, largest deviations:\n" + "\n".join(lines))
