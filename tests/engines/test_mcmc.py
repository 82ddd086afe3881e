"""The MCMC reference against closed forms, brute-force integration and EP.

MCMC fits are the slow part of the suite (a few seconds each, mostly compilation), so
there are few of them, with small n and short chains.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import gpc_compare as gc
from gpc_compare.engines import mcmc
from gpc_compare.kernels import Constant, SquaredExponential
from gpc_compare.likelihoods import Probit

from ..helpers import arviz_extremes, toy_data
from .test_ep import _brute_force

FAST = {"draws": 1000, "tune": 500, "chains": 2, "random_seed": 3}


def _mcse(post) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo standard errors of the posterior mean and variance of each f_i: the sd
    of f_i over the square root of its bulk ESS, and the sd of (f_i - mean)^2 over the
    square root of that quantity's own ESS (its fourth moment from the draws: a normal
    approximation, var sqrt(2 / ESS), is too small for these skewed posteriors)."""
    import arviz as az

    f = post.idata.posterior["f"].values  # (chain, draw, n)
    dev2 = (f - f.mean(axis=(0, 1))) ** 2

    def ess(x: np.ndarray, method: str) -> np.ndarray:
        return az.ess(az.convert_to_dataset({"x": x}), method=method)["x"].values

    se_mean = np.sqrt(f.var(axis=(0, 1)) / ess(f, "bulk"))
    se_var = np.sqrt(dev2.var(axis=(0, 1)) / ess(dev2, "mean"))
    return se_mean, se_var


def test_one_probit_point_matches_the_tilted_gaussian():
    m, k = -0.5, 4.0
    post = mcmc.infer(np.zeros((1, 1)), np.ones(1), Constant(k), Probit(), m, **FAST)
    z = m / np.sqrt(1 + k)
    r = np.exp(stats.norm.logpdf(z) - stats.norm.logcdf(z))
    mean = m + k * r / np.sqrt(1 + k)  # R&W eq. 3.58: the tilted moments are exact here
    var = k - k**2 * r * (z + r) / (1 + k)
    se_mean, se_var = _mcse(post)
    assert abs(post.latent_mean[0] - mean) < 4 * se_mean[0]
    assert abs(post.latent_var[0] - var) < 4 * se_var[0]
    assert post.diagnostics.passed


@pytest.mark.parametrize("variance", [0.01, 1.0, 1e4])
def test_the_prior_factor_leaves_out_only_what_it_records(variance):
    """K - G G^T is the discarded eigen-directions: positive semi-definite, no eigenvalue
    above RANK_TOL times the mean prior variance, its trace the recorded ``dropped``; the
    directions kept are every one above that level (a smooth kernel: fewer than n)."""
    from gpc_compare.engines._whitening import RANK_TOL, prior_factor

    X, _ = toy_data(n=80, d=2, seed=3)
    K = SquaredExponential(1.0, variance)(X)
    G, dropped = prior_factor(K)
    level = RANK_TOL * variance
    rest = np.linalg.eigvalsh(K - G @ G.T)
    rounding = 1e-13 * variance
    assert rest.min() > -rounding and rest.max() < level + rounding
    assert abs(np.trace(K - G @ G.T) - dropped) < rounding * 80
    assert 0 < dropped < 80 * level
    assert G.shape[1] == int(np.sum(np.linalg.eigvalsh(K) > level)) < 80


def test_the_whitening_gives_eps_and_laplaces_gaussians():
    """f = m + G (a + B z), z ~ N(0, I), has EP's (R&W eqs. 3.53-3.58) or Laplace's mean and
    covariance in the span of G: the coordinates NUTS moves in are the approximation whitened."""
    from gpc_compare.engines._whitening import laplace_sites, prior_factor, site_whitening

    X, y = toy_data(n=25, d=2, seed=4)
    kernel, m = SquaredExponential(0.8, 9.0), 0.3
    ep = gc.fit(X, y, method="ep", kernel=kernel, mean=m)
    G, dropped = prior_factor(ep.K)
    a, B = site_whitening(ep.ttau, ep.tnu - ep.ttau * m, G)
    assert dropped < 1e-3
    np.testing.assert_allclose(m + G @ a, ep.latent_mean, atol=1e-3)
    np.testing.assert_allclose(G @ B @ B.T @ G.T, ep.latent_cov, atol=1e-3)
    # Laplace's approximation as sites: its mode and covariance (R&W eqs. 3.17, 3.20)
    lap = gc.fit(X, y, method="laplace", kernel=kernel, mean=m)
    a, B = site_whitening(*laplace_sites(lap), G)
    np.testing.assert_allclose(m + G @ a, lap.f_hat, atol=1e-3)
    np.testing.assert_allclose(G @ B @ B.T @ G.T, lap.latent_cov, atol=1e-3)


@pytest.mark.parametrize("shape", [(9, 9), (9, 4), (3, 5)])
def test_the_whitening_turned_lower_trapezoidal_is_the_same_gaussian(shape):
    """H Q (what the compiled density reads) has H's covariance H H^T and zeros above its
    diagonal; the whitened model's H is in that form."""
    from gpc_compare.engines._engine import Problem
    from gpc_compare.engines._mcmc_models import whiten
    from gpc_compare.engines._whitening import lower_trapezoidal

    H = np.random.default_rng(3).standard_normal(shape)
    HQ = lower_trapezoidal(H)
    assert HQ.shape == shape and np.all(np.triu(HQ, 1) == 0.0)
    np.testing.assert_allclose(HQ @ HQ.T, H @ H.T, atol=1e-12)
    X, y = toy_data(n=25, d=2, seed=4)
    ep = gc.fit(X, y, method="ep", kernel=SquaredExponential(0.8, 9.0))
    w = whiten(Problem(X, y, ep.kernel, Probit(), None), ep.K, "ep")
    assert np.all(np.triu(w.H, 1) == 0.0)
    np.testing.assert_allclose(w.H @ w.H.T, ep.latent_cov, atol=1e-3)


@pytest.mark.parametrize("parameterization", ["laplace", "prior"])
def test_every_parameterization_samples_the_same_posterior(parameterization):
    """The default ("ep") is held to brute force below; the others sample the same."""
    X, y = np.array([[0.0], [0.8], [1.5]]), np.array([1.0, -1.0, 1.0])
    kernel = SquaredExponential(1.0, 4.0)
    exact = _brute_force(X, y, kernel, Probit(), 0.3)
    post = mcmc.infer(X, y, kernel, Probit(), 0.3, parameterization=parameterization, **FAST)
    assert post.diagnostics.parameterization == parameterization
    se_mean, se_var = _mcse(post)
    assert np.all(np.abs(post.latent_mean - exact[1]) < 4 * se_mean)
    assert np.all(np.abs(post.latent_var - exact[2]) < 4 * se_var)


@pytest.mark.parametrize("n", [2, 3])
def test_small_problems_match_brute_force(n):
    X = np.array([[0.0], [0.8], [1.5]])[:n]
    y = np.array([1.0, -1.0, 1.0])[:n]
    kernel = SquaredExponential(1.0, 4.0)
    exact = _brute_force(X, y, kernel, Probit(), 0.3)
    post = mcmc.infer(X, y, kernel, Probit(), 0.3, evidence=True, **FAST)
    assert post.diagnostics.parameterization == "ep"  # the default for a binary likelihood
    se_mean, se_var = _mcse(post)
    assert np.all(np.abs(post.latent_mean - exact[1]) < 4 * se_mean)
    assert np.all(np.abs(post.latent_var - exact[2]) < 4 * se_var)
    # the SMC evidence within four of its standard errors (and the error bar is small)
    assert abs(post.log_marginal_likelihood - exact[0]) < 4 * post.log_marginal_likelihood_se
    assert post.log_marginal_likelihood_se < 0.02


@pytest.fixture(scope="module")
def easy():
    X, y = toy_data(n=30, d=2, seed=0)
    k = SquaredExponential(1.0, 2.0)
    post = gc.fit(X, y, method="mcmc", kernel=k, evidence=True, **FAST)
    return X, y, k, post


def _diagnostic_numbers(post) -> list[float]:
    d = post.diagnostics
    return [d.r_hat_max, d.ess_bulk_min, d.ess_tail_min]


def test_the_diagnostics_are_arviz_s(easy):
    """The run's R-hat and bulk and tail ESS are ArviZ's (az.rhat, az.ess) over f."""
    post = easy[3]
    expected = arviz_extremes(post.idata, ["f"])
    np.testing.assert_allclose(_diagnostic_numbers(post), expected, rtol=1e-10)


def test_agrees_with_ep_on_an_easy_problem(easy):
    X, y, k, post = easy
    ep = gc.fit(X, y, method="ep", kernel=k)
    # EP is close to exact on easy probit problems (Kuss & Rasmussen 2005); the residual
    # is Monte Carlo error, sd / sqrt(ESS) ~ 0.6 / sqrt(600) ~ 0.025, plus EP's own
    # small bias: 0.1 is four Monte Carlo standard errors
    np.testing.assert_allclose(post.latent_mean, ep.latent_mean, atol=0.1)
    np.testing.assert_allclose(post.latent_var, ep.latent_var, rtol=0.25)
    assert abs(post.log_marginal_likelihood - ep.log_marginal_likelihood) < max(
        4 * post.log_marginal_likelihood_se, 0.1
    )
    np.testing.assert_allclose(post.predict_proba(X[:10]), ep.predict_proba(X[:10]), atol=0.03)


def test_prediction_at_training_points_returns_the_draws_moments(easy):
    X, y, k, post = easy
    mean, var = post.predict_latent(X[:5] + 1e-9)
    np.testing.assert_allclose(mean, post.latent_mean[:5], atol=1e-5)
    np.testing.assert_allclose(var, post.latent_var[:5], rtol=1e-4, atol=1e-6)
    # per-draw integration, averaged: probit in closed form
    expected = stats.norm.cdf(post.f_draws[:, :5] / np.sqrt(1.0 + 0.0)).mean(axis=0)
    np.testing.assert_allclose(post.predict_proba(X[:5]), expected, atol=1e-4)
    lp = post.log_predictive(X[:5], y[:5])
    assert np.all(np.isfinite(lp)) and np.all(lp < 0)


def test_inference_data_and_diagnostics(easy):
    X, y, k, post = easy
    idata = post.to_inference_data(random_seed=0, Xs=X[:4])
    for group in ("posterior", "sample_stats", "observed_data", "predictions"):
        assert group in idata.groups()
    assert idata.posterior["f"].shape == (2, 1000, 30)
    assert idata.predictions["f_star"].shape == (2, 1000, 4)
    with pytest.warns(DeprecationWarning, match=r"now to_inference_data\(Xs=Xs\)"):
        old = post.to_inference_data(X[:4])  # (the old order: Xs first)
    assert old.predictions["f_star"].shape == (2, 1000, 4)
    d = post.diagnostics
    assert d.passed and d.r_hat_max <= 1.01 and d.ess_bulk_min >= 400 and d.divergences == 0
    assert post.hyperparameter_names == ["log_lengthscale", "log_variance"]


def test_no_evidence_gradient_says_why(easy):
    with pytest.raises(NotImplementedError, match="too noisy"):
        easy[3].log_marginal_likelihood_gradient  # noqa: B018


def test_a_starved_run_is_reported_as_not_passed():
    X, y = toy_data(n=20, d=2, seed=1)
    with pytest.warns(RuntimeWarning, match="not passed"):
        post = gc.fit(X, y, method="mcmc", draws=30, tune=30, chains=2, random_seed=0)
    assert not post.diagnostics.passed
    assert "bulk ESS" in post.diagnostics.message
    with pytest.raises(ValueError, match="evidence=True"):
        post.log_marginal_likelihood  # noqa: B018
    with pytest.warns(RuntimeWarning, match="R-hat undefined"):
        gc.fit(X, y, method="mcmc", draws=30, tune=30, chains=1, random_seed=0)
    with pytest.raises(ValueError, match="optimize=True needs an evidence gradient"):
        gc.fit(X, y, method="mcmc", optimize=True)


def test_same_seed_same_draws():
    X, y = toy_data(n=8, d=1, seed=2)
    a = gc.fit(
        X, y, method="mcmc", draws=50, tune=50, chains=2, random_seed=5, rhat_max=np.inf, ess_min=0
    )
    b = gc.fit(
        X, y, method="mcmc", draws=50, tune=50, chains=2, random_seed=5, rhat_max=np.inf, ess_min=0
    )
    np.testing.assert_array_equal(a.f_draws, b.f_draws)


@pytest.mark.parametrize("nuts_sampler", ["nutpie", "pymc"])
def test_the_draws_do_not_depend_on_how_many_chains_run_at_once(nuts_sampler):
    """``cores`` (PyMC's name) only says how many chains run at once: each chain has its
    own seed, so one at a time gives the same draws as two together."""
    X, y = toy_data(n=8, d=1, seed=2)
    fit = {"draws": 30, "tune": 30, "chains": 2, "random_seed": 5, "rhat_max": np.inf}
    fit.update(ess_min=0, nuts_sampler=nuts_sampler)
    if nuts_sampler == "pymc":
        fit["parameterization"] = "prior"  # (the PyMC model, not the compiled density)
    one = gc.fit(X, y, method="mcmc", cores=1, **fit)
    two = gc.fit(X, y, method="mcmc", cores=2, **fit)
    np.testing.assert_array_equal(one.f_draws, two.f_draws)
    with pytest.raises(ValueError, match="cores"):
        gc.fit(X, y, method="mcmc", cores=0, **fit)


def test_full_bayes_with_a_tight_prior_is_the_fixed_hyperparameter_posterior(easy):
    """A prior on the log hyperparameters with sd 1e-3 pins them: the latent posterior must
    then be the fixed-hyperparameter one, within Monte Carlo error."""
    X, y, k, fixed = easy
    tight = {
        name: (value, 1e-3) for name, value in zip(k.hyperparameter_names, k.theta, strict=True)
    }
    post = gc.fit(X, y, method="mcmc", kernel=k, full_bayes=True, priors=tight, **FAST)
    assert post.theta_draws.shape == (2000, 2)
    np.testing.assert_allclose(post.theta_draws.mean(axis=0), k.theta, atol=2e-4)
    np.testing.assert_allclose(post.latent_mean, fixed.latent_mean, atol=0.1)
    np.testing.assert_allclose(post.predict_proba(X[:5]), fixed.predict_proba(X[:5]), atol=0.03)
    assert post.diagnostics.passed


# the chains are kept short for the suite's time; hyperparameters mix slowly, so at this
# length their diagnostics may legitimately fail (the warning), which is not tested here
@pytest.mark.filterwarnings("ignore:MCMC diagnostics not passed")
def test_full_bayes_learns_the_hyperparameters():
    X, y = toy_data(n=25, d=1, seed=4)
    k = SquaredExponential(1.0, 1.0)
    post = gc.fit(X, y, method="mcmc", kernel=k, mean=0.0, full_bayes=True, **FAST)
    assert post.theta_draws.shape == (2000, 3)
    names = post.idata.posterior["theta"].coords["hyperparameter"].values.tolist()
    assert names == ["log_lengthscale", "log_variance", "mean"]
    mean, var = post.predict_latent(X[:4])
    assert np.all(np.isfinite(mean)) and np.all(var > 0)
    # the diagnostics over f and theta together are ArviZ's
    expected = arviz_extremes(post.idata, ["f", "theta"])
    np.testing.assert_allclose(_diagnostic_numbers(post), expected, rtol=1e-10)
    with pytest.raises(ValueError, match="does not combine with full_bayes"):
        gc.fit(X, y, method="mcmc", full_bayes=True, evidence=True)
    with pytest.raises(ValueError, match="unknown hyperparameter 'log_ell'"):
        gc.fit(X, y, method="mcmc", full_bayes=True, priors={"log_ell": (0, 1)})


def test_the_evidence_is_gc_evidence_estimates(easy):
    """``evidence=True`` runs gc.evidence.estimate's estimator (SMC by default) on the same
    problem with the same seed: the same number, not merely a close one."""
    X, y, k, post = easy
    est = post.evidence_estimate
    assert (est.method, est.start) == ("smc", "ep") and est.health["steps"] >= 1
    same = gc.evidence.estimate(X, y, kernel=k, random_seed=FAST["random_seed"])
    assert post.log_marginal_likelihood == same.log_evidence
    assert post.log_marginal_likelihood_se == same.standard_error > 0
    assert post.record()["reference_evidence"]["health"] == same.health


def test_the_evidence_by_ais_with_its_options():
    X, y = toy_data(n=20, d=2, seed=2)
    k = SquaredExponential(1.0, 2.0)
    opts = {"temperatures": 40, "runs": 4}
    post = gc.fit(X, y, method="mcmc", kernel=k, evidence="ais", evidence_start="prior",
                  evidence_options=opts, **FAST)  # fmt: skip
    same = gc.evidence.estimate(X, y, kernel=k, method="ais", start="prior",
                                random_seed=FAST["random_seed"], **opts)  # fmt: skip
    assert post.evidence_estimate.method == "ais" and post.evidence_estimate.start == "prior"
    assert post.log_marginal_likelihood == same.log_evidence
    assert post.evidence_estimate.health == {"temperatures": 40, "runs": 4}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"evidence": "mcmc"}, r"evidence must be True, False or one of \['auto', 'smc', 'ais'\]"),
        ({"evidence": 1}, "evidence must be True or False"),
        ({"evidence": True, "evidence_start": "laplace"}, "evidence_start must be one of"),
        ({"evidence": True, "evidence_options": {"temperatures": 9}},
         r"evidence_options: unknown option\(s\) \['temperatures'\] for method 'smc'"),
        ({"evidence": "ais", "evidence_options": {"runs": 1}},
         "evidence_options: runs must be"),
        ({"evidence": True, "evidence_options": 3}, "evidence_options must be a dict"),
    ],
)  # fmt: skip
def test_evidence_options_are_checked_before_sampling(options, message):
    X, y = toy_data(n=10, d=2, seed=0)
    with pytest.raises(ValueError, match=message):
        gc.fit(X, y, method="mcmc", **options)


def test_the_softmax_model_has_no_ep_whitening():
    X, y = toy_data(n=12, d=2, seed=0)
    y3 = np.arange(12) % 3
    with pytest.raises(ValueError, match="parameterization='ep' is not available with the softmax"):
        gc.fit(X, y3, method="mcmc", likelihood="softmax", parameterization="ep", draws=10)


def test_where_ep_fails_laplace_whitens_and_a_warning_says_so(monkeypatch):
    """Any Gaussian whitens NUTS's coordinates (the posterior sampled is the same): where
    EP cannot be fitted, Laplace's is used and recorded."""
    X, y = toy_data(n=10, d=2, seed=3)

    def failing(*args, **kwargs):
        raise FloatingPointError("injected: EP diverged")

    monkeypatch.setattr(mcmc.ep, "infer", failing)
    with pytest.warns(RuntimeWarning, match="EP failed .injected: EP diverged.; NUTS's coord"):
        post = gc.fit(X, y, method="mcmc", draws=100, tune=100, chains=2, random_seed=0,
                      rhat_max=np.inf, ess_min=0.0)  # fmt: skip
    assert post.diagnostics.parameterization == "laplace"


def test_the_options_are_declared_once():
    """MCMCOptions: PyMC's names and defaults, each checked where it is declared and the
    evidence options together; the module's old declarations are gone."""
    opts = mcmc.MCMCOptions()
    assert (opts.draws, opts.tune, opts.chains, opts.random_seed) == (1000, 1000, 4, None)
    assert (opts.rhat_max, opts.ess_min, opts.evidence, opts.evidence_start) == (
        1.01,
        400.0,
        False,
        "ep",
    )
    assert gc.engines.get_engine("mcmc") is mcmc.ENGINE and mcmc.ENGINE.Options is mcmc.MCMCOptions
    assert all(doc for _, _, doc in mcmc.MCMCOptions.describe())
    with pytest.raises(ValueError, match="draws must be a whole number >= 1"):
        mcmc.MCMCOptions(draws=0)
    with pytest.raises(ValueError, match="does not combine with full_bayes"):
        mcmc.MCMCOptions(full_bayes=True, evidence=True)
    for gone in ("OPTIONS", "OPTION_CHECKS", "CAPABILITIES", "LIKELIHOODS", "LABEL"):
        assert not hasattr(mcmc, gone), gone
    assert not hasattr(mcmc, "check_options")


def test_capabilities_are_declared_per_likelihood():
    """Full Bayes (and the evidence) are binary only; the softmax and multinomial probit
    models are multi-class."""
    for lik in ("probit", "logistic", "gaussian"):
        assert gc.engines.capabilities("mcmc", lik) == {
            "draws",
            "hyperparameter_sampling",
            "reference",
        }
    for lik in ("softmax", "multinomial_probit"):
        assert gc.engines.capabilities("mcmc", lik) == {"draws", "multiclass", "reference"}


def test_repr_shows_the_evidence_where_there_is_one(easy):
    """``repr`` formats the evidence only where it was computed (without it, it raised)."""
    import copy

    post = easy[3]
    assert f"log_marginal_likelihood={post.log_marginal_likelihood:.6g}>" in repr(post)
    without = copy.copy(post)
    without.evidence_estimate = None
    text = repr(without)
    assert "log_marginal_likelihood" not in text
    assert text.startswith("<SamplePosterior method='mcmc' n=30 ") and text.endswith("'probit'>")


@pytest.mark.parametrize("likelihood", ["probit", "softmax"])
def test_a_quick_fit_prints_and_records_its_run(likelihood, recwarn):
    """The quick options fit without a warning; ``repr`` shows no evidence where none was
    computed (it raised before); Convergence holds the iterations each chain ran and no
    change (NaN), the diagnostics the run."""
    X, y = toy_data(n=12, d=2, seed=5)
    if likelihood == "softmax":
        y = np.arange(12) % 3
    quick = mcmc.ENGINE.quick_options
    post = gc.fit(X, y, method="mcmc", likelihood=likelihood, random_seed=0, **quick)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    text = repr(post)
    assert text.startswith("<") and "method='mcmc'" in text and "n=12" in text
    assert "log_marginal_likelihood" not in text
    d, conv = post.diagnostics, post.convergence
    assert (d.draws, d.tune, d.chains) == (100, 100, 2)
    assert conv.iterations == d.tune + d.draws == 200 and np.isnan(conv.last_change)
    assert conv.converged == d.passed and conv.message == d.message
    assert post.record()["diagnostics"]["draws"] == 100
    assert post.record()["convergence"]["iterations"] == 200


def test_every_posterior_exports_inference_data_with_one_signature():
    """``to_inference_data(random_seed=None)`` for every posterior class, an engine's own
    options (``draws=``, ``Xs=``) keyword-only."""
    import inspect

    from gpc_compare.posterior import Posterior

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    classes = set(subclasses(Posterior))
    assert len(classes) >= 8
    for cls in classes:
        params = list(inspect.signature(cls.to_inference_data).parameters.values())[1:]
        assert params[0].name == "random_seed" and params[0].default is None, cls
        assert all(p.kind is p.KEYWORD_ONLY for p in params[1:]), cls
