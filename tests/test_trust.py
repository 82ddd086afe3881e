"""gc.psis (issue 30): Pareto-smoothed importance sampling from each engine's Gaussian q.

The proofs: the weights of a one-case problem against quadrature (and every form's log
weight against the dense densities it stands for); k-hat is ArviZ's; under the Gaussian
likelihood every engine's q is its model's exact posterior, so the weights are equal and
the evidence is the closed form; Laplace fails where it is known to (separable data at a
large signal variance) and EP does not; the corrected predictions are the plain ones when
the weights are equal.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import expit, log_expit

import gpc_compare as gc
from gpc_compare.engines import ep, laplace
from gpc_compare.kernels import SquaredExponential
from gpc_compare.likelihoods import Gaussian, Logistic
from gpc_compare.posterior import SamplePosterior
from gpc_compare.trust import _record, _targets

DENSE = ["laplace", "ep", "kl"]
SPARSE = ["fitc_laplace", "fitc_ep", "svgp"]


def _psislw(log_weights: np.ndarray):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz as az

    return az.psislw(log_weights.copy(), reff=1.0)


def _first_draws(rec: _record.PSISDiagnosis) -> tuple[np.ndarray, _targets.Draws]:
    """The log weights and draws of the record's first block, drawn again."""
    generators, sizes, df = rec._blocks
    return next(_record.draw_blocks(rec._target, generators[:1], sizes[:1], df))


# ----------------------------------------------------------------- one case, quadrature
@pytest.mark.parametrize("proposal", ["gaussian", "student_t"])
@pytest.mark.parametrize("method", ["laplace", "ep"])
def test_one_case_against_quadrature(method: str, proposal: str) -> None:
    """n = 1, logistic, prior N(0.5, 4): the weights are sigma(f) N(f | 0.5, 4) / q(f)
    draw by draw; the IS evidence is within its se of the quadrature's and the
    self-normalised mean within its Monte Carlo error."""
    k, m = 4.0, 0.5
    engine = {"laplace": laplace, "ep": ep}[method]  # (gc.fit wants both classes)
    post = engine.infer(np.zeros((1, 1)), np.ones(1), SquaredExponential(variance=k), Logistic(), m)
    rec = gc.psis(post, draws=4000, random_seed=3, proposal=proposal)
    prior = stats.norm(m, math.sqrt(k))
    z = integrate.quad(lambda f: expit(f) * prior.pdf(f), -60, 60, epsabs=0, epsrel=1e-13)[0]
    mean = integrate.quad(lambda f: f * expit(f) * prior.pdf(f), -60, 60, epsrel=1e-13)[0] / z
    var = integrate.quad(lambda f: (f - mean) ** 2 * expit(f) * prior.pdf(f), -60, 60)[0] / z
    assert 0 < rec.log_evidence_se < 0.01
    assert abs(rec.log_evidence - math.log(z)) < 3 * rec.log_evidence_se
    assert abs(rec.latent_mean[0] - mean) < 4 * math.sqrt(var / rec.ess)
    # the weights themselves, draw by draw
    lw, d = _first_draws(rec)
    f = d.latent[:, 0]
    mu, sd = float(post.latent_mean[0]), math.sqrt(float(post.latent_var[0]))
    q = stats.norm(mu, sd) if proposal == "gaussian" else stats.t(4.0, mu, sd)
    np.testing.assert_allclose(lw, log_expit(f) + prior.logpdf(f) - q.logpdf(f), atol=1e-8)
    np.testing.assert_array_equal(lw, rec.log_weights[: lw.size])
    if (method, proposal) == ("ep", "gaussian"):
        # EP's q has the posterior's variance (2.62) but not its N(., 4) tails: the weights'
        # tail index is 1 - 2.62 / 4 = 0.34, which the top 190 of 4000 draws do not reach
        # (k-hat 2.9: most sit just above the cutoff, at the body's flat ratio); 10^5 do
        assert gc.psis(post, draws=100_000, random_seed=3).pareto_k < 0.5
    else:
        assert rec.verdict == "reliable" and rec.pareto_k < 0.5


# ------------------------------------------------------- every form's log weight, densely
def _small_problem() -> tuple[np.ndarray, np.ndarray, SquaredExponential]:
    """Six cases on a line, well apart: K is well conditioned, so dense densities are exact."""
    X = np.linspace(-3.0, 3.0, 6)[:, None]
    return X, np.array([1, -1, 1, 1, -1, 1]), SquaredExponential(lengthscale=1.0, variance=2.0)


@pytest.mark.parametrize("method", ["laplace", "ep", "kl", "vb", "fitc_laplace", "fitc_ep"])
def test_log_weights_are_the_dense_densities(method: str) -> None:
    """log p(y | f) + log N(f | m, K) - log N(f | mu, Sigma) from scipy's dense densities
    (K~ for FITC) equals each form's K^-1-free log ratio to rounding."""
    X, y, kernel = _small_problem()
    opts = {"inducing": 3} if method.startswith("fitc") else {}
    post = gc.fit(X, y, method=method, kernel=kernel, likelihood="logistic", mean=0.3, **opts)
    rec = gc.psis(post, draws=200, random_seed=0)
    lw, d = _first_draws(rec)
    if method.startswith("fitc"):
        V, lam = post.prior.V, post.prior.Lam
        K = V.T @ V + np.diag(lam)
        Sigma = np.linalg.inv(np.linalg.inv(K) + np.diag(post.sites.W))
    else:
        K, Sigma = post.K, post.latent_cov
    mu = 0.3 + K @ post.alpha
    f = d.latent
    direct = (
        Logistic().log_prob(y[None, :], f).sum(axis=1)
        + stats.multivariate_normal(np.full(6, 0.3), K).logpdf(f)
        - stats.multivariate_normal(mu, Sigma).logpdf(f)
    )
    np.testing.assert_allclose(lw, direct, atol=1e-9)


def test_svgp_log_weights_are_its_targets_density() -> None:
    """SVGP: log N(v | 0, I) + sum_i log int p(y_i | f) N(f | m + a_i^T v, Lambda_i) df
    - log N(v | m_v, S), with the case integrals by scipy's adaptive quadrature."""
    X, y, kernel = _small_problem()
    post = gc.fit(X, y, method="svgp", kernel=kernel, likelihood="logistic", inducing=3)
    rec = gc.psis(post, draws=200, random_seed=0)
    lw, d = _first_draws(rec)
    V, lam = post.prior.V, post.prior.Lam
    v = d.latent[:5]

    def case(i: int, h: float) -> float:
        sd = math.sqrt(lam[i])
        integrand = lambda f: expit(y[i] * f) * stats.norm.pdf(f, h, sd)  # noqa: E731
        return math.log(integrate.quad(integrand, h - 12 * sd, h + 12 * sd, epsrel=1e-12)[0])

    cases = [sum(case(i, float(V[:, i] @ vs)) for i in range(6)) for vs in v]
    direct = (
        np.array(cases)
        + stats.multivariate_normal(np.zeros(3), np.eye(3)).logpdf(v)
        - stats.multivariate_normal(post.q_mean, post.q_cov).logpdf(v)
    )
    np.testing.assert_allclose(lw[:5], direct, atol=1e-8)


def test_softmax_log_weights_are_the_dense_densities() -> None:
    """Softmax Laplace over the C n latent values, against scipy's dense densities."""
    X = np.linspace(-3.0, 3.0, 9)[:, None]
    y = np.array([0, 0, 1, 2, 1, 1, 2, 2, 0])
    kernel = SquaredExponential(lengthscale=0.8, variance=3.0)
    post = gc.fit(X, y, method="laplace", kernel=kernel, likelihood="softmax")
    rec = gc.psis(post, draws=200, random_seed=0)
    lw, d = _first_draws(rec)
    f = d.latent  # (b, n, C)
    prior = sum(stats.multivariate_normal(np.zeros(9), post.K).logpdf(f[:, :, c]) for c in range(3))
    q = stats.multivariate_normal(post.latent_mean.T.ravel(), post.latent_cov)
    direct = post.likelihood.log_prob(post.y[None, :], f).sum(axis=1) + prior
    direct -= q.logpdf(f.transpose(0, 2, 1).reshape(f.shape[0], -1))
    np.testing.assert_allclose(lw, direct, atol=1e-9)
    assert np.isfinite(rec.pareto_k) and rec.log_evidence_se < 0.1


@pytest.mark.parametrize("method", ["laplace", "fitc_ep", "softmax"])
def test_draws_have_q_moments(method: str) -> None:
    """20,000 draws' mean and covariance are q's (dense; FITC through the inducing
    values; softmax over C n values), within Monte Carlo error."""
    X, y, kernel = _small_problem()
    if method == "softmax":
        post = gc.fit(X, y + 1, method="laplace", kernel=kernel, likelihood="softmax")
        mean, cov = post.latent_mean.T.ravel(), post.latent_cov
    else:
        opts = {"inducing": 3} if method == "fitc_ep" else {}
        post = gc.fit(X, y, method=method, kernel=kernel, **opts)
        mean = post.latent_mean
        if method == "laplace":
            cov = post.latent_cov
        else:
            K = post.prior.V.T @ post.prior.V + np.diag(post.prior.Lam)
            cov = np.linalg.inv(np.linalg.inv(K) + np.diag(post.sites.W))
    target = _targets.target_for(post, 20_000)
    f = target.draw(np.random.default_rng(0), np.ones(20_000)).latent
    f = f.transpose(0, 2, 1).reshape(f.shape[0], -1) if f.ndim == 3 else f
    sd = np.sqrt(np.diag(cov))
    assert np.max(np.abs(f.mean(axis=0) - mean) / sd) < 4.5 / math.sqrt(20_000)
    # Var of a sample covariance: (s_ij^2 + s_ii s_jj) / S
    err = (np.cov(f.T) - cov) / np.sqrt((cov**2 + np.outer(sd**2, sd**2)) / 20_000)
    assert np.max(np.abs(err)) < 4.5


# -------------------------------------------------------------------------- the k-hat
def test_pareto_k_is_arviz_psislw() -> None:
    X, y = gc.datasets.load("crabs").X[::4], gc.datasets.load("crabs").y[::4]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    post = gc.fit(X, y, method="laplace", kernel=SquaredExponential(lengthscale=2.0, variance=4.0))
    rec = gc.psis(post, draws=1000, random_seed=0)
    smoothed, k = _psislw(rec.log_weights)
    assert rec.pareto_k == float(k)
    np.testing.assert_array_equal(rec.smoothed_log_weights, smoothed)
    assert rec.ess == pytest.approx(1.0 / np.sum(np.exp(2.0 * smoothed)), rel=1e-12)
    w = np.exp(rec.log_weights)
    assert rec.log_evidence == pytest.approx(math.log(w.mean()), abs=1e-12)
    assert rec.log_evidence_se == pytest.approx(w.std(ddof=1) / math.sqrt(1000) / w.mean())
    assert rec.khat_threshold == pytest.approx(1.0 - 1.0 / 3.0)


def test_verdicts_and_thresholds() -> None:
    """Vehtari et al. (2024): k_S = min(1 - 1/log10 S, 0.7); 10^(1/(1-k)) draws needed."""
    assert _record.khat_threshold(100) == pytest.approx(0.5)
    assert _record.khat_threshold(4000) == 0.7
    assert _record.verdict(0.69, 4000) == "reliable"
    assert _record.verdict(0.6, 100) == "usable with care"
    assert _record.verdict(0.7, 100) == "usable with care"
    assert _record.verdict(0.71, 10**6) == "not reliable"
    assert _record.verdict(-math.inf, 100) == "reliable"
    for bad in (math.inf, math.nan):
        assert _record.verdict(bad, 4000) == "not reliable"
    assert _record.min_draws(0.6) == pytest.approx(10**2.5)
    assert _record.min_draws(-0.3) == 10.0 and _record.min_draws(1.2) == math.inf
    assert _record.min_draws(0.9975) == math.inf  # (10^400 overflowed a float: OverflowError)
    assert _record.min_draws(0.99) == pytest.approx(1e100)


# ------------------------------------------------------ the Gaussian likelihood: q is exact
def _regression() -> tuple[np.ndarray, np.ndarray, SquaredExponential, Gaussian]:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(25, 2))
    y = np.sin(X[:, 0]) + 0.3 * rng.normal(size=25)
    return X, y, SquaredExponential(lengthscale=1.0, variance=1.5), Gaussian(0.1)


def _gp_regression_evidence(K: np.ndarray, y: np.ndarray, s2: float) -> float:
    """log N(y | 0, K + s2 I) (R&W eq. 2.30)."""
    return float(stats.multivariate_normal(np.zeros(y.size), K + s2 * np.eye(y.size)).logpdf(y))


#: Every approximation that takes the Gaussian likelihood, with the options that make its q
#: its model's exact posterior (SVGP: Z = X, the full GP up to its 1e-12 jitter).
GAUSSIAN_EXACT = {
    "laplace": {},
    "ep": {},
    "kl": {},
    "fitc_laplace": {"inducing": 8},
    "fitc_ep": {"inducing": 8},
    "svgp": {"inducing": 25, "jitter": 1e-12},
}


def test_every_approximation_that_takes_the_gaussian_likelihood_is_checked() -> None:
    """The registry's Gaussian approximations (engines without draws: MCMC's are the
    posterior, and gc.psis refuses them) that take the Gaussian likelihood are exactly those
    checked below. VB (the Jaakkola-Jordan bound) takes the logistic likelihood only, and
    the softmax and multinomial-probit forms are multi-class: none has a Gaussian case."""
    approximations = [
        name
        for name, engine in gc.engines.registered().items()
        if "draws" not in engine.capabilities() and engine.takes("gaussian")
    ]
    assert sorted(approximations) == sorted(GAUSSIAN_EXACT)
    assert not gc.engines.get_engine("vb").takes("gaussian")


@pytest.mark.parametrize("method", list(GAUSSIAN_EXACT))
def test_gaussian_likelihood_weights_are_equal(method: str) -> None:
    """Every engine's q is its model's exact posterior under the Gaussian likelihood, so
    every log weight is log p(y), the evidence, to rounding. k-hat is then at the
    equal-weights value: constant weights have no tail to fit (ArviZ's psislw returns
    inf for them, and a meaningless fit for rounding-level noise), and gc.psis returns
    -inf, below any finite k-hat; ESS = S. The IS evidence is the closed form (GP
    regression, R&W eq. 2.30; FITC regression on K~ for FITC; SVGP with Z = X is the full
    GP up to its 1e-12 jitter) to 1e-10 (SVGP: 1e-7), within its own standard error."""
    X, y, kernel, lik = _regression()
    post = gc.fit(X, y, method=method, kernel=kernel, likelihood=lik, **GAUSSIAN_EXACT[method])
    rec = gc.psis(post, draws=500, random_seed=0)
    assert np.ptp(rec.log_weights) < _record.EQUAL_SPREAD
    constant = np.full(500, rec.log_weights[0])
    assert _psislw(constant)[1] == math.inf  # (what ArviZ says of exactly equal weights)
    assert rec.pareto_k == -math.inf and rec.verdict == "reliable"
    assert rec.ess == pytest.approx(500) and rec.log_evidence_se < 1e-9
    if method.startswith("fitc"):
        V, lam = post.prior.V, post.prior.Lam
        exact = _gp_regression_evidence(V.T @ V + np.diag(lam), y, 0.1)
        assert rec.log_evidence == pytest.approx(post.log_marginal_likelihood, abs=1e-9)
    else:
        exact = _gp_regression_evidence(kernel(X), y, 0.1)
    tol = 1e-7 if method == "svgp" else 1e-10
    assert abs(rec.log_evidence - exact) < max(tol, 3 * rec.log_evidence_se)
    assert rec.log_evidence == pytest.approx(exact, abs=tol)


def test_svgp_with_fewer_inducing_inputs_is_not_exact_but_its_is_evidence_is() -> None:
    """SVGP with M = 8 < n: its q(v) is Titsias's (covariance (I + A^T A / s2)^-1), not
    the posterior of the model it is weighed against (each f_i | v independent: FITC on
    SVGP's inducing inputs, covariance (I + A^T diag(1 / (lambda + s2)) A)^-1), so the
    weights are unequal and k-hat is finite; the IS evidence is still that model's closed
    form, N(y | 0, Q + diag(K - Q) + s2 I), within 3 of its standard errors."""
    X, y, kernel, lik = _regression()
    post = gc.fit(X, y, method="svgp", kernel=kernel, likelihood=lik, inducing=8)
    rec = gc.psis(post, draws=4000, random_seed=0)
    V, lam = post.prior.V, post.prior.Lam
    exact = _gp_regression_evidence(V.T @ V + np.diag(lam), y, 0.1)
    assert np.ptp(rec.log_weights) > 1e-3 and np.isfinite(rec.pareto_k)
    assert 0 < rec.log_evidence_se < 0.1
    assert abs(rec.log_evidence - exact) < 3 * rec.log_evidence_se
    assert post.log_marginal_likelihood < exact  # (the bound)


# ----------------------------------------------------------- where Laplace is known to fail
def _separable() -> tuple[np.ndarray, np.ndarray, SquaredExponential]:
    """Separable data at sigma_f^2 = 1e4 (Kuss and Rasmussen 2005; Nickisch and Rasmussen 2008)."""
    X = np.random.default_rng(1).normal(size=(40, 2))
    return X, np.where(X[:, 0] > 0, 1, -1), SquaredExponential(lengthscale=1.0, variance=1e4)


def test_laplace_fails_on_separable_data_and_ep_does_not() -> None:
    X, y, kernel = _separable()
    k = {}
    for method in ("laplace", "ep"):
        post = gc.fit(X, y, method=method, kernel=kernel, likelihood="probit")
        k[method] = gc.psis(post, draws=4000, random_seed=0)
    assert k["laplace"].pareto_k > 0.7 and k["laplace"].verdict == "not reliable"
    assert k["ep"].pareto_k < min(0.7, k["laplace"].pareto_k)
    assert k["ep"].verdict == "reliable"
    # EP's IS evidence there, against SMC's (gc.evidence.estimate, seed 0: -10.918 +- 0.033;
    # measured -11.06 +- 0.05: with k-hat above 1/2 the raw weights' se is an underestimate)
    assert abs(k["ep"].log_evidence + 10.918) < 4 * math.hypot(k["ep"].log_evidence_se, 0.033)
    # the corrected held-out score's Monte Carlo error: NaN where k-hat says the weights
    # cannot be trusted (Laplace's), a real error below the threshold (EP's)
    Xs = np.array([[0.5, 0.0], [-0.3, 1.0], [0.05, -0.5]])
    ys = np.array([1, -1, 1])
    score, se = k["laplace"].mean_log_predictive(Xs, ys)
    assert np.isfinite(score) and math.isnan(se)
    score, se = k["ep"].mean_log_predictive(Xs, ys)
    assert np.isfinite(score) and 1e-5 < se < 0.05


def test_student_t_in_the_laplace_failure_regime() -> None:
    """What was measured: in 40 dimensions the t's common radius does not rescue Laplace,
    whose q is centred far out (k-hat 89 Gaussian, 62 Student-t with 4 degrees of
    freedom: both "not reliable"); on one case it is what it is for (test above)."""
    X, y, kernel = _separable()
    post = gc.fit(X, y, method="laplace", kernel=kernel, likelihood="probit")
    t = gc.psis(post, draws=4000, random_seed=0, proposal="student_t")
    assert t.pareto_k > 0.7 and t.verdict == "not reliable" and t.df == 4.0


# ------------------------------------------------------------ predictions, equal weights
def _equal(rec: _record.PSISDiagnosis) -> _record.PSISDiagnosis:
    S = rec.draws
    return dataclasses.replace(rec, smoothed_log_weights=np.full(S, -math.log(S)))


def _mc_se(rec: _record.PSISDiagnosis, Xs: np.ndarray, log_p) -> np.ndarray:
    """The Monte Carlo error of an equally weighted mean of the per-draw p(y* | draw)."""
    p = np.exp(log_p(*rec._target.conditional(Xs, rec._keep)))
    return p.std(axis=0) / math.sqrt(p.shape[0])


@pytest.mark.parametrize("method", ["laplace", "ep", "fitc_ep", "svgp"])
def test_corrected_predictions_are_the_plain_ones_for_equal_weights(method: str) -> None:
    """With every weight 1/S the corrected p(y* = 1) is q's own predictive, within the
    Monte Carlo error of the mixture over draws (dense: f* | f; sparse: f* | u)."""
    X, y = gc.datasets.load("crabs").X[::5], gc.datasets.load("crabs").y[::5]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    opts = {"inducing": 10} if method in SPARSE else {}
    post = gc.fit(X, y, method=method, kernel=SquaredExponential(lengthscale=2.0), **opts)
    rec = _equal(gc.psis(post, draws=2000, random_seed=0))
    Xs = np.random.default_rng(5).normal(size=(30, X.shape[1]))
    Xs[:10] = X[:10]
    p = rec.predict_proba(Xs)
    se = _mc_se(rec, Xs, lambda m, v: post.likelihood.log_predictive(1.0, m, v[None, :]))
    assert np.all(np.abs(p - post.predict_proba(Xs)) < 4.5 * se + 1e-12)
    ys = np.where(np.arange(30) % 2, 1, -1)
    lp = rec.log_predictive(Xs, ys)
    assert np.all(np.abs(np.exp(lp) - np.exp(post.log_predictive(Xs, ys))) < 4.5 * se + 1e-12)


def test_corrected_regression_predictive_is_exact_for_equal_weights() -> None:
    """Gaussian likelihood: the weights are equal by themselves, and the corrected
    log p(y* | data) is the plain one within Monte Carlo error; predict_proba is refused."""
    X, y, kernel, lik = _regression()
    post = gc.fit(X, y, method="ep", kernel=kernel, likelihood=lik)
    rec = gc.psis(post, draws=4000, random_seed=2)
    Xs, ys = X[:8] + 0.3, y[:8]
    p = np.exp(rec.log_predictive(Xs, ys))
    se = _mc_se(rec, Xs, lambda m, v: lik.log_predictive(ys, m, v[None, :]))
    assert np.all(np.abs(p - np.exp(post.log_predictive(Xs, ys))) < 4.5 * se)
    with pytest.raises(ValueError, match="regression"):
        rec.predict_proba(Xs)


def test_softmax_corrected_predictions_for_equal_weights() -> None:
    X, y = gc.datasets.load("iris").X[::5], gc.datasets.load("iris").y[::5]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    post = gc.fit(X, y, method="laplace", likelihood="softmax")
    rec = _equal(gc.psis(post, draws=2000, random_seed=0))
    Xs = X[:6] + 0.2
    p = rec.predict_proba(Xs)
    lik = post.likelihood

    def log_p(m, v):
        return lik.log_predictive_all(m, (v[:, None, None] * np.eye(3))[None])

    se = _mc_se(rec, Xs, log_p)
    assert np.all(np.abs(p - post.predict_proba(Xs)) < 4.5 * se + 1e-12)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    lp = rec.log_predictive(Xs, y[:6])
    np.testing.assert_allclose(lp, np.log(p[np.arange(6), y[:6]]), atol=1e-12)


# --------------------------------------------------------------- sparse targets, cross-checked
def test_sparse_targets_with_every_input_inducing_estimate_the_gp_evidence() -> None:
    """With Z = X, the FITC model is the GP (up to the jitter): EP's, FITC-EP's and
    SVGP's importance-sampling evidences agree within their standard errors. SVGP's
    bound is below the mean of its log weights (Jensen, per case)."""
    X, y = gc.datasets.load("crabs").X[::5], gc.datasets.load("crabs").y[::5]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    kernel = SquaredExponential(lengthscale=2.0, variance=3.0)
    recs, bound = {}, None
    for method in ("ep", "fitc_ep", "svgp"):
        opts = {} if method == "ep" else {"inducing": X.shape[0], "jitter": 1e-10}
        post = gc.fit(X, y, method=method, kernel=kernel, likelihood="logistic", **opts)
        recs[method] = gc.psis(post, draws=2000, random_seed=1)
        bound = post.log_marginal_likelihood
    for method in ("fitc_ep", "svgp"):
        se = math.hypot(recs[method].log_evidence_se, recs["ep"].log_evidence_se)
        assert abs(recs[method].log_evidence - recs["ep"].log_evidence) < 4 * se
    lw = recs["svgp"].log_weights
    assert lw.mean() > bound - 4 * lw.std() / math.sqrt(lw.size)
    assert "FITC model" in recs["svgp"].diagnosed and "not the full GP" in recs["fitc_ep"].diagnosed


def test_log_gaussian_integral_is_the_adaptive_quadrature() -> None:
    """The logistic's int sigma(y f) N(f | m, v) df in log space (the fast rule) against
    the likelihood's adaptive quadrature, from var 0 to 1e3 and far into the tails."""
    rng = np.random.default_rng(0)
    m = np.concatenate([rng.normal(0, 5, 300), [-300.0, 300.0, -40.0, 0.0]])
    v = np.concatenate([10 ** rng.uniform(-4, 3, 300), [900.0, 1.0, 0.0, 0.0]])
    y = np.where(rng.random(m.size) < 0.5, 1.0, -1.0)
    got = _targets.log_gaussian_integral(Logistic(), y, m, v)
    np.testing.assert_allclose(got, Logistic().log_predictive(y, m, v), rtol=1e-11, atol=1e-13)
    assert got.shape == m.shape


# ---------------------------------------------------------------------- refusals, record
def test_refusals() -> None:
    X, y, kernel = _small_problem()
    post = gc.fit(X, y, method="laplace", kernel=kernel)
    with pytest.raises(ValueError, match="MCMC"):
        gc.psis(object.__new__(SamplePosterior))
    with pytest.raises(ValueError, match="none of them"):
        gc.psis(object())
    with pytest.raises(ValueError, match="draws"):
        gc.psis(post, draws=99)
    with pytest.raises(ValueError, match="proposal"):
        gc.psis(post, proposal="t")
    with pytest.raises(ValueError, match="df"):
        gc.psis(post, proposal="student_t", df=0)


def test_refuses_beyond_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    X, y, kernel = _small_problem()
    post = gc.fit(X, y, method="laplace", kernel=kernel)
    monkeypatch.setattr(_targets, "available_memory", lambda: 2**20)
    with pytest.raises(ValueError, match="GiB"):
        gc.psis(post)


def test_record_is_json_ready_and_repeatable() -> None:
    X, y, kernel = _small_problem()
    post = gc.fit(X, y, method="kl", kernel=kernel)
    rec = gc.psis(post, draws=300, random_seed=7)
    out = json.loads(json.dumps(rec.record()))
    assert out["method"] == "kl" and out["draws"] == 300 and out["verdict"] in repr(rec)
    assert set(out) == set(_record.RECORD_KEYS)
    again = gc.psis(post, draws=300, random_seed=np.random.default_rng(7))
    np.testing.assert_array_equal(rec.log_weights, again.log_weights)
    assert rec.seconds > 0 and rec.df is None
