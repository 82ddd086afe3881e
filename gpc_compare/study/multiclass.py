"""Studies of C classes (``likelihood = "softmax"``): what a study file may ask of them, what
a job scores and stores, and how its class probabilities compare with the reference's.

A likelihood with more than one latent value per input (``latent_dim != 1``: the softmax,
R&W section 3.5) makes a study multi-class; the engines that take it declare
``"multiclass"`` (:data:`gpc_compare.engines.CAPABILITY_NAMES`) and list it in their
``LIKELIHOODS``, which :func:`gpc_compare.study.load_study` checks. A multi-class job scores
its test predictions with :func:`gpc_compare.metrics.score_multiclass` and stores the class
probabilities (n, C) and the C latent moments per case, so the table can compare them with
the reference engine's (:func:`gpc_compare.metrics.probability_differences`,
:func:`gpc_compare.metrics.latent_errors` over cases and classes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import metrics
from ..likelihoods import get_likelihood

__all__ = ["is_multiclass", "multiclass_problem", "multiclass_record", "probability_comparison"]


def is_multiclass(likelihood: str) -> bool:
    """Whether a study's likelihood takes one latent function per class (the softmax)."""
    return get_likelihood(likelihood).latent_dim != 1


def multiclass_problem(
    likelihood: str,
    mean: float | None,
    policy: str,
    evidence: Mapping[str, Any],
    engines: Mapping[str, Mapping[str, Any]],
) -> tuple[str, str] | None:
    """What a multi-class study asks that cannot be done, as (field, message), or None.

    The softmax model has no prior mean (a constant shared by the classes cancels), and
    its MCMC samples the latent values at fixed hyperparameters only: no ``full_bayes``,
    no gold-standard evidence (``[evidence.*]`` or an engine's ``evidence = true``).
    """
    if not is_multiclass(likelihood):
        return None
    if mean is not None:
        return "mean", (
            f"the {likelihood} likelihood takes no prior mean (a constant shared by the classes "
            "cancels): remove it"
        )
    if policy == "full_bayes":
        return "hyperparameters.policy", (
            f"'full_bayes' is binary only (MCMC samples the {likelihood} model at fixed "
            "hyperparameters): use 'optimize', 'shared', 'fixed' or 'grid'"
        )
    if evidence:
        return "evidence", f"the gold-standard evidence (SMC, AIS) is binary only, not {likelihood}"
    for label, options in engines.items():
        if options.get("evidence"):
            return f"engines.{label}.evidence", f"the evidence is binary only, not {likelihood}"
    return None


def multiclass_record(
    y_train: np.ndarray,
    y_test: np.ndarray,
    proba: np.ndarray,
    log_p: np.ndarray,
    mean_test: np.ndarray,
    cov_test: np.ndarray,
    post: Any,
) -> tuple[dict[str, float], dict[str, Any]]:
    """A multi-class job's held-out scores and the per-case arrays it stores.

    Parameters
    ----------
    y_train, y_test : ndarray of int
        Class indices 0..C-1 of the training and test cases.
    proba : ndarray, shape (m, C)
        Predicted class probabilities at the test inputs.
    log_p : ndarray, shape (m,)
        log p(y* | x*, data) of the test labels.
    mean_test, cov_test : ndarray, shapes (m, C) and (m, C, C)
        Mean and covariance of the C latent values at each test input.
    post : MulticlassPosterior
        The fit (its ``latent_mean`` and ``latent_var``, (n, C), at the training inputs).

    Returns
    -------
    scores : dict
        :func:`gpc_compare.metrics.score_multiclass`.
    arrays : dict
        JSON-ready lists: ``y_test``, ``proba_test`` (m x C), ``log_p_test``, and the latent
        moments ``mean_test``, ``var_test`` (m x C) and ``mean_train``, ``var_train`` (n x C).
    """
    C = proba.shape[1]
    rates = np.bincount(np.asarray(y_train, dtype=int), minlength=C) / len(y_train)
    scores = metrics.score_multiclass(y_test, proba, log_p, rates)
    var_test = np.diagonal(cov_test, axis1=1, axis2=2)

    def nested(a: np.ndarray) -> list[list[float]]:
        return np.asarray(a, dtype=float).tolist()

    arrays = {
        "y_test": [int(v) for v in y_test],
        "proba_test": nested(proba),
        "log_p_test": [float(v) for v in log_p],
        "mean_test": nested(mean_test),
        "var_test": nested(var_test),
        "mean_train": nested(post.latent_mean),
        "var_train": nested(post.latent_var),
    }
    return scores, arrays


def probability_comparison(arrays: Any, ref_arrays: Any) -> dict[str, float]:
    """Class probabilities at the test inputs against the reference's (both records'
    :class:`~gpc_compare.study.record.Arrays` hold ``proba_test``), else nothing:
    :func:`gpc_compare.metrics.probability_differences`."""
    if arrays.proba_test is None or ref_arrays.proba_test is None:
        return {}
    return metrics.probability_differences(arrays.proba_test, ref_proba=ref_arrays.proba_test)
