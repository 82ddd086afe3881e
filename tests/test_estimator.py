"""GPClassifier: scikit-learn's estimator checks, and agreement with gc.fit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import estimator_checks_generator

import gpc_compare as gc
from gpc_compare.kernels import SquaredExponential

from .helpers import toy_data

# check_classifiers_train fits three large problems with hyperparameter optimisation
# (about 12 s each for the softmax on two busy cores); the binary default runs it, and
# tests/engines/test_softmax.py checks multi-class training on its own problems
_SLOW_FOR_SOFTMAX = {"check_classifiers_train"}


def _checks():
    for estimator, check in estimator_checks_generator(gc.GPClassifier(), mark="skip"):
        name = getattr(check, "func", check).__name__
        yield pytest.param(estimator, check, id=name)
    for method, likelihood in (("kl", "probit"), ("vb", "logistic")):
        variational = gc.GPClassifier(method=method, likelihood=likelihood)
        for estimator, check in estimator_checks_generator(variational, mark="skip"):
            name = getattr(check, "func", check).__name__
            yield pytest.param(estimator, check, id=f"{method}-{name}")
    softmax = gc.GPClassifier(likelihood="softmax")
    for estimator, check in estimator_checks_generator(softmax, mark="skip"):
        name = getattr(check, "func", check).__name__
        if name not in _SLOW_FOR_SOFTMAX:
            yield pytest.param(estimator, check, id=f"softmax-{name}")
    # the multi-class SVGP at the kernel's values (its fit is tested in
    # tests/engines/test_svgp_multiclass.py; here the estimator's contract)
    sparse = gc.GPClassifier(method="svgp", likelihood="softmax", optimizer=None,
                             engine_options={"inducing": 8})  # fmt: skip
    for estimator, check in estimator_checks_generator(sparse, mark="skip"):
        name = getattr(check, "func", check).__name__
        if name not in _SLOW_FOR_SOFTMAX:
            yield pytest.param(estimator, check, id=f"svgp-softmax-{name}")


@pytest.mark.parametrize(("estimator", "check"), list(_checks()))
def test_scikit_learn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # non-convergence on random data
        check(estimator)


@pytest.mark.parametrize("method", ["laplace", "ep", "kl", "vb"])
def test_same_posterior_as_fit_and_any_two_labels(method):
    X, y = toy_data(n=40, d=2, seed=2)
    labels = np.where(y > 0, "spam", "ham")
    k = SquaredExponential(1.0, 2.0)
    lik = "logistic" if method == "vb" else "probit"  # (VB: logistic only)
    clf = gc.GPClassifier(method=method, kernel=k, likelihood=lik, optimizer=None)
    clf.fit(X, labels)
    post = gc.fit(X, y, method=method, kernel=k, likelihood=lik)
    np.testing.assert_array_equal(clf.classes_, ["ham", "spam"])
    np.testing.assert_allclose(clf.predict_proba(X)[:, 1], post.predict_proba(X), rtol=1e-12)
    lp = clf.predict_log_proba(X)
    np.testing.assert_allclose(np.exp(lp).sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(lp[:, 1], post.log_predictive(X, np.ones(40)), rtol=1e-12)
    assert set(clf.predict(X)) <= {"ham", "spam"}
    assert clone(clf).get_params()["method"] == method


def test_drops_into_pipelines_and_cross_validation():
    X, y = toy_data(n=60, d=2, seed=3)
    pipe = make_pipeline(StandardScaler(), gc.GPClassifier(random_state=0))
    scores = cross_val_score(pipe, X, y, cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.6)


def test_optimised_hyperparameters_and_mcmc_via_ep():
    X, y = toy_data(n=25, d=2, seed=4)
    clf = gc.GPClassifier(random_state=0).fit(X, y)
    assert clf.posterior_.optimization is not None
    mc = gc.GPClassifier(method="mcmc", random_state=0,
                         # a short run for the suite's time: diagnostics are not the
                         # point here (tests/engines/test_mcmc.py tests them)
                         engine_options={"draws": 200, "tune": 200, "chains": 2,
                                         "ess_min": 0, "rhat_max": np.inf}).fit(X, y)  # fmt: skip
    ep = gc.fit(X, y, method="ep", optimize=True, random_seed=0)
    np.testing.assert_allclose(mc.kernel_.theta, ep.kernel.theta)  # EP's fitted values
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        gc.GPClassifier().fit(X, np.arange(25) % 3)
