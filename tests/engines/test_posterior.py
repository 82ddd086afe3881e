"""The shared Gaussian posterior: prediction, sampling and export."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import gpc_compare as gc
from gpc_compare.kernels import SquaredExponential


@pytest.fixture
def post(data):
    X, y = data
    return gc.fit(X, y, kernel=SquaredExponential(0.9, 2.0), likelihood="probit", mean=0.2)


def test_contract_names(post):
    assert post.hyperparameter_names == ["log_lengthscale", "log_variance", "mean"]
    np.testing.assert_allclose(post.hyperparameters, [np.log(0.9), np.log(2.0), 0.2])
    assert post.log_marginal_likelihood_gradient.shape == (3,)
    assert post.latent_mean.shape == post.latent_var.shape == (20,)
    assert post.method == "laplace"
    assert post.optimization is None
    assert "laplace" in repr(post)


def test_prediction_at_training_inputs_recovers_the_latent_moments(post):
    mean, var = post.predict_latent(post.X)
    np.testing.assert_allclose(mean, post.latent_mean, atol=1e-10)
    np.testing.assert_allclose(var, post.latent_var, atol=1e-10)
    np.testing.assert_allclose(np.diag(post.latent_cov), post.latent_var, atol=1e-12)
    # Sigma = (K^-1 + W)^-1 (R&W eq. 3.27)
    direct = np.linalg.inv(np.linalg.inv(post.K) + np.diag(post.W))
    np.testing.assert_allclose(post.latent_cov, direct, atol=1e-8)


def test_predictive_probabilities_are_the_probit_integral(post):
    Xs = np.random.default_rng(4).normal(size=(7, 2))
    mean, var = post.predict_latent(Xs)
    np.testing.assert_allclose(
        post.predict_proba(Xs), stats.norm.cdf(mean / np.sqrt(1 + var)), rtol=1e-12
    )
    ys = np.array([1, 0, 1, 1, 0, 0, 1])
    lp = post.log_predictive(Xs, ys)
    expected = stats.norm.logcdf(np.where(ys == 1, 1, -1) * mean / np.sqrt(1 + var))
    np.testing.assert_allclose(lp, expected, rtol=1e-12)
    # far from the data the prediction returns to the prior: mean m, variance k(x, x)
    far_mean, far_var = post.predict_latent(np.full((1, 2), 50.0))
    assert far_mean[0] == pytest.approx(0.2, abs=1e-12)
    assert far_var[0] == pytest.approx(2.0, abs=1e-12)


def test_inference_data_holds_draws_of_the_gaussian(post):
    idata = post.to_inference_data(draws=4000, random_seed=1)
    f = idata.posterior["f"]
    assert f.shape == (1, 4000, 20)
    assert f.dims == ("chain", "draw", "obs")
    np.testing.assert_array_equal(idata.observed_data["y"].values, post.y)
    se = np.sqrt(post.latent_var / 4000)
    assert np.all(np.abs(f.mean(("chain", "draw")).values - post.latent_mean) < 5 * se)
    np.testing.assert_allclose(f.var(("chain", "draw")).values, post.latent_var, rtol=0.1)
    assert idata.attrs["method"] == "laplace"
    again = post.to_inference_data(draws=10, random_seed=1).posterior["f"].values
    np.testing.assert_array_equal(
        again, post.to_inference_data(draws=10, random_seed=1).posterior["f"].values
    )


# ------------------------------------------------------------- every engine's contract
_FAST_MCMC = {
    "draws": 200,
    "tune": 200,
    "chains": 2,
    "random_seed": 1,
    "rhat_max": np.inf,
    "ess_min": 0.0,
}
_OPTIONS = {
    "laplace": {},
    "ep": {},
    "mcmc": {
        **_FAST_MCMC,
        "evidence": "ais",
        "evidence_options": {"runs": 4, "temperatures": 20},
    },
}


@pytest.fixture(scope="module", params=sorted(_OPTIONS))
def any_post(request):
    from ..helpers import toy_data

    X, y = toy_data(n=20, d=2, seed=0)
    kernel = SquaredExponential(0.9, 2.0)
    return gc.fit(X, y, method=request.param, kernel=kernel, mean=0.2, **_OPTIONS[request.param])


def test_every_engine_keeps_the_contract(any_post):
    post = any_post
    caps = gc.engines.capabilities(post.method)
    n = post.X.shape[0]
    assert post.hyperparameter_names == ["log_lengthscale", "log_variance", "mean"]
    np.testing.assert_allclose(post.hyperparameters, [np.log(0.9), np.log(2.0), 0.2])
    assert post.latent_mean.shape == post.latent_var.shape == (n,)
    assert np.all(post.latent_var >= 0)
    assert isinstance(post.convergence, gc.Convergence) and post.optimization is None
    Xs = np.random.default_rng(3).normal(size=(6, 2))
    mean, var = post.predict_latent(Xs)
    assert mean.shape == var.shape == (6,) and np.all(var >= 0)
    p = post.predict_proba(Xs)
    assert p.shape == (6,) and np.all((p >= 0) & (p <= 1))
    np.testing.assert_allclose(p, np.exp(post.log_predictive(Xs, np.ones(6))), rtol=1e-10)
    np.testing.assert_allclose(
        1 - p, np.exp(post.log_predictive(Xs, -np.ones(6))), rtol=1e-8, atol=1e-12
    )
    if "evidence_gradient" in caps:
        assert post.log_marginal_likelihood_gradient.shape == (3,)


def test_every_engine_records_what_it_can(any_post):
    import json

    post = any_post
    caps = gc.engines.capabilities(post.method)
    record = post.record()
    json.dumps(record)  # JSON-ready
    expected = {"convergence", "log_evidence", "log_evidence_se"}
    expected |= {"loo_log_predictive"} if "loo" in caps else set()
    expected |= {"diagnostics", "reference_evidence"} if "draws" in caps else set()
    assert set(record) == expected
    counted = post.convergence.factorizations is not None  # (Laplace and FITC-Laplace)
    assert set(record["convergence"]) == {"converged", "iterations"} | (
        {"factorizations"} if counted else set()
    )
    if counted:
        assert record["convergence"]["factorizations"] == post.convergence.factorizations >= 1
    assert record["log_evidence"] == pytest.approx(post.log_marginal_likelihood)
    if "draws" in caps:  # an estimate with its standard error
        assert record["log_evidence_se"] == post.log_marginal_likelihood_se > 0
        assert record["diagnostics"]["divergences"] >= 0
    else:
        assert record["log_evidence_se"] is None
    if "draws" in caps:  # fitted without evidence=True: no evidence, and no error either
        import copy

        without = copy.copy(post)
        without.evidence_estimate = None
        assert without.record()["log_evidence"] is None
        assert without.record()["log_evidence_se"] is None


def test_every_engine_exports_inference_data(any_post):
    post = any_post
    idata = post.to_inference_data()
    groups = set(idata.groups())
    assert {"posterior", "observed_data"} <= groups
    assert idata.posterior["f"].dims == ("chain", "draw", "obs")
    assert idata.posterior["f"].shape[-1] == post.X.shape[0]
    np.testing.assert_array_equal(idata.observed_data["y"].values, post.y)
    if "draws" in gc.engines.capabilities(post.method):
        assert "sample_stats" in groups and post.idata is not None


_MULTICLASS = [
    ("laplace", "softmax"),
    ("mcmc", "softmax"),
    ("ep", "multinomial_probit"),
    ("svgp", "softmax"),
    ("kl", "softmax"),
]


@pytest.fixture(scope="module", params=_MULTICLASS, ids=[f"{m}-{k}" for m, k in _MULTICLASS])
def any_multiclass_post(request):
    method, likelihood = request.param
    assert "multiclass" in gc.engines.capabilities(method, likelihood)
    rng = np.random.default_rng(5)
    X = rng.normal(size=(21, 2))
    y = np.digitize(X[:, 0], [-0.4, 0.4])
    options = _FAST_MCMC if method == "mcmc" else {}
    options |= gc.engines.get_engine(method).quick_options
    return gc.fit(X, y, method=method, likelihood=likelihood, **options)


def test_every_multiclass_engine_keeps_the_contract(any_multiclass_post):
    post = any_multiclass_post
    assert isinstance(post, gc.posterior.MulticlassPosterior)
    assert post.n_classes == 3 and post.latent_mean.shape == post.latent_var.shape == (21, 3)
    Xs = np.random.default_rng(6).normal(size=(4, 2))
    mean, cov = post.predict_latent(Xs)
    assert mean.shape == (4, 3) and cov.shape == (4, 3, 3)
    p = post.predict_proba(Xs)
    assert p.shape == (4, 3) and np.all((p >= 0) & (p <= 1))
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-10)
    ys = np.array([0, 1, 2, 1])
    np.testing.assert_allclose(np.exp(post.log_predictive(Xs, ys)), p[np.arange(4), ys], rtol=1e-10)
    record = post.record()
    assert {"convergence", "log_evidence", "log_evidence_se"} <= set(record)
    assert idata_groups(post) >= {"posterior", "observed_data"}


def idata_groups(post) -> set[str]:
    return set(post.to_inference_data().groups())
