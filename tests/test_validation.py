"""Bad input: a ValueError whose message names the problem."""

from __future__ import annotations

import numpy as np
import pytest

import gpc_compare as gc
from gpc_compare.kernels import SquaredExponential

from .helpers import toy_data

X, Y = toy_data(n=10, d=2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"y": np.array([1, 2] * 5)}, r"binary labels .* got the values \[1.0, 2.0\]"),
        ({"y": np.array([0, -1] * 5)}, "binary labels"),
        ({"y": np.array(["a", "b"] * 5)}, "binary labels"),
        ({"y": np.ones(10)}, "single class"),
        ({"y": np.zeros(10, dtype=bool)}, "single class"),
        ({"y": np.r_[np.nan, Y[1:]]}, "y contains NaN or infinity"),
        ({"y": np.r_[np.inf, Y[1:]]}, "y contains NaN or infinity"),
        ({"y": Y[:9]}, "X has 10 samples but y has 9 labels"),
        ({"y": np.ones((10, 2))}, "y must be a 1-D array"),
        ({"X": np.where(np.eye(10, 2) > 0, np.nan, X)}, r"X contains NaN or infinity .* row 0"),
        ({"X": np.where(np.eye(10, 2) > 0, np.inf, X)}, "X contains NaN or infinity"),
        ({"X": X[:, 0]}, r"X must be a 2-D array .*X.reshape\(-1, 1\)"),
        ({"X": np.zeros((0, 2)), "y": np.zeros(0)}, "X is empty"),
        ({"X": np.zeros((10, 0))}, "X has 0 features"),
        ({"X": [["a", "b"]] * 10}, "X must be numeric"),
        ({"X": None}, "X is None"),
        ({"method": "nope"}, "method must be one of"),
        ({"likelihood": "cauchit"}, "likelihood must be one of"),
        ({"kernel": "rbf"}, "kernel must be a gpc_compare Kernel"),
        ({"kernel": SquaredExponential([1.0, 1.0, 1.0])}, "3 length-scales but X has 2 columns"),
        ({"mean": np.nan}, "mean must be finite"),
        ({"tolerance": 1e-3}, r"unknown option\(s\) \['tolerance'\]"),
    ],
)
def test_bad_input_raises_a_named_value_error(kwargs, message):
    args = {"X": X, "y": Y, **kwargs}
    with pytest.raises(ValueError, match=message):
        gc.fit(**args)


@pytest.mark.parametrize(
    "labels",
    [
        lambda y: (y > 0).astype(int),
        lambda y: y.astype(int),
        lambda y: y > 0,
        lambda y: (y > 0).astype(float).tolist(),
    ],
    ids=["0/1", "-1/+1", "bool", "list"],
)
def test_label_encodings_give_the_same_fit(labels):
    ref = gc.fit(X, Y, kernel=SquaredExponential(1.0, 1.0))
    post = gc.fit(X, labels(Y), kernel=SquaredExponential(1.0, 1.0))
    assert post.log_marginal_likelihood == ref.log_marginal_likelihood
    np.testing.assert_array_equal(post.y, ref.y)


def test_prediction_input_is_checked():
    post = gc.fit(X, Y)
    with pytest.raises(ValueError, match="Xs has 3 features but the model was fit with 2"):
        post.predict_proba(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="Xs contains NaN"):
        post.predict_latent(np.full((1, 2), np.nan))
    with pytest.raises(ValueError, match="Xs has 2 samples but ys has 3 labels"):
        post.log_predictive(np.zeros((2, 2)), [1, 0, 1])
    # a test fold may hold one class only
    assert post.log_predictive(np.zeros((2, 2)), [1, 1]).shape == (2,)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tol": "1e-6"}, "tol must be a positive number, got '1e-6'"),  # (as draws="100")
        ({"method": "mcmc", "draws": "100"}, "draws must be a whole number"),
        ({"method": "ep", "damping": True}, r"damping must be in \(0, 1\], got True"),
        ({"tol": None}, "tol must be a positive number"),
        ({"max_iter": 2.5}, "max_iter must be a whole number"),
        ({"warm_start": np.full(10, np.inf)}, "warm_start contains NaN"),
        ({"method": "ep", "warm_start": np.zeros(10)}, "warm_start must be a pair"),
        ({"method": "ep", "min_iter": 10, "max_iter": 3}, "exceeds max_iter"),
        ({"method": "ep", "damping": "strong"}, r"damping must be in \(0, 1\]"),
        ({"method": "ep", "site_tol": -1.0}, "site_tol must be a positive number"),
        ({"mean": np.array([1.0, 2.0])}, "mean must be a single number"),
        ({"n_restarts": 1.5, "optimize": True}, "n_restarts must be a whole number"),
        ({"mean_bounds": (0, 1, 2), "optimize": True}, "mean_bounds must be a pair"),
        ({"method": "ep", "objective": "loo"}, "applies to optimize=True"),
        (
            {"method": "ep", "likelihood": "logistic", "objective": "loo", "optimize": True},
            "needs the probit likelihood",
        ),
        ({"X": X * 1e200, "kernel": gc.kernels.Linear(1.0)}, "kernel matrix contains NaN"),
    ],
)
def test_bad_options_raise_a_named_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gc.fit(**{"X": X, "y": Y, **kwargs})


def test_a_kernel_scale_beyond_double_precision_says_so():
    with pytest.raises(np.linalg.LinAlgError, match="too large for double precision"):
        gc.fit(X, Y, kernel=gc.kernels.Linear(1e300))


# ------------------------------------------------------ the Gaussian likelihood (regression)
Y_REAL = np.sin(X[:, 0]) + 0.1 * X[:, 1]


@pytest.mark.parametrize(
    ("y", "message"),
    [
        (np.r_[np.nan, Y_REAL[1:]], r"y contains NaN or infinity .* NaN, at index 0"),
        (np.r_[Y_REAL[:3], -np.inf, Y_REAL[4:]], r"y contains NaN .* infinity, at index 3"),
        (Y_REAL[:9], "X has 10 samples but y has 9 labels"),
        (np.ones((10, 2)), "y must be a 1-D array of real-valued targets"),
        (np.array(["a", "b"] * 5), "y must hold real numbers"),
        (np.zeros(10, dtype=bool), "y must hold real numbers"),
        (None, "y is None"),
    ],
)
def test_gaussian_targets_are_checked(y, message):
    with pytest.raises(ValueError, match=message):
        gc.fit(X, y, likelihood=gc.likelihoods.Gaussian(variance=0.5))


def test_gaussian_takes_real_targets_without_label_checks():
    lik = gc.likelihoods.Gaussian(variance=0.5)
    # a single "class", values outside {0, 1} and {-1, +1}: all fine for regression
    for y in (Y_REAL, np.full(10, 3.0), np.arange(10), Y_REAL[:, None]):
        post = gc.fit(X, y, likelihood=lik)
        assert post.y.dtype == float and post.y.shape == (10,)
    post = gc.fit(X, Y_REAL, likelihood="gaussian")
    lp = post.log_predictive(X[:3], np.array([0.25, -1.7, 12.0]))
    assert lp.shape == (3,) and np.all(np.isfinite(lp))
    with pytest.raises(ValueError, match="ys contains NaN"):
        post.log_predictive(X[:2], np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="Xs has 3 samples but ys has 2"):
        post.log_predictive(X[:3], np.array([0.0, 1.5]))
    with pytest.raises(ValueError, match="regression"):
        post.predict_proba(X[:3])
    idata = post.to_inference_data(draws=10, random_seed=0)
    np.testing.assert_array_equal(idata.observed_data["y"].values, Y_REAL)
    # and the binary likelihoods still insist on labels
    with pytest.raises(ValueError, match="binary labels"):
        gc.fit(X, Y_REAL)


def test_the_classifier_refuses_the_gaussian_likelihood():
    for lik in ("gaussian", gc.likelihoods.Gaussian(variance=0.1)):
        with pytest.raises(ValueError, match="GPClassifier is a classifier"):
            gc.GPClassifier(likelihood=lik).fit(X, (Y > 0).astype(int))
