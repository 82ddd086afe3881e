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
