"""Hyperparameter fitting by each engine's evidence."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

import gpc_compare as gc
from gpc_compare.kernels import SquaredExponential

from .helpers import toy_data


def test_optimum_is_a_stationary_point_and_is_recorded():
    X, y = toy_data(n=40, d=2, seed=8)
    start = gc.fit(X, y, kernel=SquaredExponential(1.0, 1.0), likelihood="probit", mean=0.0)
    post = gc.fit(
        X,
        y,
        kernel=SquaredExponential(1.0, 1.0),
        likelihood="probit",
        mean=0.0,
        optimize=True,
        n_restarts=2,
        random_seed=0,
    )
    opt = post.optimization
    assert opt.objective == "evidence" and opt.names == post.hyperparameter_names
    assert len(opt.restarts) == 3 and opt.n_evaluations > 3
    assert opt.best_value == pytest.approx(post.log_marginal_likelihood, abs=1e-9)
    assert post.log_marginal_likelihood >= start.log_marginal_likelihood
    assert post.log_marginal_likelihood >= max(r.value for r in opt.restarts) - 1e-9
    np.testing.assert_allclose(post.hyperparameters, opt.theta)
    bounds = np.vstack([SquaredExponential().bounds, [[-10.0, 10.0]]])
    for run in opt.restarts:
        assert np.all((run.start >= bounds[:, 0]) & (run.start <= bounds[:, 1]))
    inside = (opt.theta > bounds[:, 0] + 1e-3) & (opt.theta < bounds[:, 1] - 1e-3)
    assert opt.converged
    np.testing.assert_allclose(post.log_marginal_likelihood_gradient[inside], 0.0, atol=2e-3)


def test_restarts_are_reproducible_and_drawn_in_log_space():
    X, y = toy_data(n=20, d=2, seed=9)
    a = gc.fit(X, y, optimize=True, n_restarts=2, random_seed=3)
    b = gc.fit(X, y, optimize=True, n_restarts=2, random_seed=3)
    np.testing.assert_array_equal(a.optimization.theta, b.optimization.theta)
    starts = np.array([r.start for r in a.optimization.restarts[1:]])
    # uniform in log space within log bounds: some starts have log values below zero
    lo, hi = SquaredExponential().bounds.T
    assert np.all((starts >= lo) & (starts <= hi))


def test_same_optimum_as_scikit_learn():
    X, y = toy_data(n=50, d=2, seed=10)
    post = gc.fit(
        X,
        y,
        kernel=SquaredExponential(1.0, 1.0),
        likelihood="logistic",
        optimize=True,
        n_restarts=0,
    )
    sk = GaussianProcessClassifier(ConstantKernel(1.0, (1e-2, 1e5)) * RBF(1.0, (1e-2, 1e3)))
    sk.fit(X, y)
    assert post.log_marginal_likelihood == pytest.approx(
        sk.log_marginal_likelihood_value_, abs=1e-5
    )
    np.testing.assert_allclose(post.kernel.theta, sk.kernel_.theta[::-1], atol=2e-3)


def test_fixed_hyperparameters_stay_fixed():
    X, y = toy_data(n=30, d=2, seed=12)
    k = SquaredExponential(1.0, 1.0, variance_bounds="fixed")
    post = gc.fit(X, y, kernel=k, optimize=True, n_restarts=1, random_seed=0)
    assert post.hyperparameter_names == ["log_lengthscale"]
    assert post.kernel.variance == 1.0
    assert post.kernel.lengthscale != 1.0
    with pytest.raises(ValueError, match="n_restarts must be a whole number >= 0"):
        gc.fit(X, y, optimize=True, n_restarts=-1)
