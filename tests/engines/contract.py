"""The Posterior contract every registered engine keeps, with each likelihood it declares.

:func:`check_contract` fits a small problem with the engine's ``quick_options`` and checks
what every caller relies on: ``repr``, ``record()``, ``predict_proba`` (shape, range, rows
summing to one for several classes; refused for the Gaussian likelihood), the latent
moments, ``to_inference_data``, and ``log_marginal_likelihood`` and its gradient exactly
as the capabilities say (a finite number, or a clear ValueError).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import gpc_compare as gc
from gpc_compare.engines import Engine
from gpc_compare.kernels import SquaredExponential
from gpc_compare.likelihoods import get_likelihood

from ..helpers import toy_data

N, C = 20, 3


def multiclass(likelihood: str) -> bool:
    """Whether ``likelihood`` takes one latent function per class (softmax, multinomial
    probit, robust-max)."""
    return get_likelihood(likelihood).latent_dim != 1


def problem(likelihood: str) -> tuple[np.ndarray, np.ndarray, float | None]:
    """A small problem for ``likelihood``: X, y and the prior mean (None for C classes)."""
    X, y = toy_data(n=N, d=2, seed=0)
    if likelihood == "gaussian":
        return X, np.sin(X[:, 0]) + 0.1 * X[:, 1], 0.2
    if multiclass(likelihood):
        return X, np.digitize(X[:, 0], np.quantile(X[:, 0], [1 / 3, 2 / 3])), None
    return X, y, 0.2


def fit(engine: Engine, likelihood: str):
    X, y, mean = problem(likelihood)
    kernel = SquaredExponential(0.9, 2.0)
    options = dict(engine.quick_options)
    return gc.fit(X, y, engine.name, kernel, likelihood, mean, **options)


def check_contract(engine: Engine, likelihood: str) -> None:
    """Every promise of the contract, for ``engine`` with ``likelihood``."""
    caps = engine.capabilities(likelihood)
    post = fit(engine, likelihood)
    assert post.method == engine.name
    assert engine.name in repr(post)
    _check_evidence(post, caps)
    _check_prediction(post, likelihood)
    record = post.record()
    json.dumps(record)  # JSON-ready
    assert {"convergence", "log_evidence", "log_evidence_se"} <= set(record)
    assert isinstance(record["convergence"]["converged"], bool)
    if "evidence" in caps:
        assert record["log_evidence"] == pytest.approx(post.log_marginal_likelihood)
    idata = post.to_inference_data(random_seed=0)
    assert {"posterior", "observed_data"} <= set(idata.groups())
    f = idata.posterior["f"]
    assert f.dims[:2] == ("chain", "draw") and N in f.shape
    assert np.all(np.isfinite(f.values))
    if "draws" in caps:
        assert "sample_stats" in idata.groups()


def _check_evidence(post, caps: frozenset[str]) -> None:
    if "evidence" in caps:
        assert np.isfinite(post.log_marginal_likelihood)
        if "bound" in caps or post.likelihood.name != "gaussian":
            assert post.log_marginal_likelihood < 0  # log p(y) of discrete labels, or a bound
    else:
        with pytest.raises(ValueError, match=r"\w"):
            _ = post.log_marginal_likelihood
    if "evidence_gradient" in caps:
        g = post.log_marginal_likelihood_gradient
        assert g.shape == (len(post.hyperparameter_names),) and np.all(np.isfinite(g))


def _check_prediction(post, likelihood: str) -> None:
    Xs = np.random.default_rng(3).normal(size=(6, 2))
    mean, var = post.predict_latent(Xs)  # (C classes: mean (m, C) and covariance (m, C, C))
    if multiclass(likelihood):
        assert mean.shape == (6, C) and var.shape == (6, C, C)
        var = np.diagonal(var, axis1=1, axis2=2)
    assert np.all(np.isfinite(mean)) and np.all(var >= 0)
    if likelihood == "gaussian":
        with pytest.raises(ValueError):
            post.predict_proba(Xs)
        return
    p = post.predict_proba(Xs)
    if multiclass(likelihood):
        assert p.shape == (6, C)
        np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-10)
        ys = np.array([0, 1, 2, 1, 0, 2])
        expected = p[np.arange(6), ys]
    else:
        assert p.shape == (6,)
        ys = np.ones(6)
        expected = p
    assert np.all((p >= 0) & (p <= 1))
    np.testing.assert_allclose(np.exp(post.log_predictive(Xs, ys)), expected, rtol=1e-8)
