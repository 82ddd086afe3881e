"""Held-out scores for C-class probabilistic classifiers, and class probabilities against a
reference.

Labels are class indices 0..C-1 (``y``); ``proba`` is the (n, C) matrix of predicted class
probabilities, column c for class c, rows summing to one. As for two classes
(:mod:`.scores`), log scores are taken from the log predictive probabilities of the observed
labels computed in log space (``MulticlassPosterior.log_predictive``), never from clipped
probabilities.

The scores and their names in a study's table (the binary ones keep theirs: a multi-class
Brier score is twice the binary one at C = 2, so the two never share a name):

- ``mean_log_predictive``: (1/n) sum_i log p(y_i | x_i), nats; a uniform guess scores -log C.
- ``information_bits``: H(pi) + mean log2 p, pi the training class frequencies (R&W section
  3.7.3's information, for C classes): about 0 for the class-frequency predictor.
- ``error_rate``: the fraction of cases whose most probable class (ties to the lowest
  index, ``np.argmax``) is not the label.
- ``brier_multiclass``: (1/n) sum_i sum_c (p_ic - [y_i = c])^2, Brier's (1950) original score,
  in [0, 2].
- ``ece_top_label``: the expected calibration error of the top label (Guo et al. 2017): the
  confidence max_c p_ic against whether that class is the label, in 10 equal-width bins of
  [0, 1], with the bins of :func:`.calibration.expected_calibration_error`.
- ``auc_ovr_macro``: the one-vs-rest AUC of each class's probability, averaged over the
  classes (``sklearn.metrics.roc_auc_score(multi_class="ovr", average="macro")``); NaN when a
  class is missing from the test labels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import sklearn.metrics

from ._checks import _log_probabilities
from .calibration import expected_calibration_error, reliability_curve
from .scores import SCORE_ECE_BINS

__all__ = [
    "class_entropy_bits",
    "multiclass_auc",
    "multiclass_brier",
    "multiclass_error_rate",
    "probability_differences",
    "score_multiclass",
    "top_label",
    "top_label_ece",
    "top_label_reliability_curve",
]

#: Rows of ``proba`` must sum to one within this (they come from a log-sum-exp).
_ROW_SUM_TOL = 1e-8


def _class_problem(y: object, proba: object) -> tuple[np.ndarray, np.ndarray]:
    """Class indices (n,) and probabilities (n, C), checked against each other."""
    P = np.asarray(proba, dtype=float)
    if P.ndim != 2 or P.shape[1] < 2:
        raise ValueError(f"proba must be an (n, C) array with C >= 2, got shape {P.shape}")
    if not np.all((P >= 0.0) & (P <= 1.0)):  # also refuses NaN
        raise ValueError("proba must hold probabilities in [0, 1] (no NaN)")
    if not np.allclose(P.sum(axis=1), 1.0, rtol=0.0, atol=_ROW_SUM_TOL):
        raise ValueError("each row of proba must sum to one")
    yi = np.asarray(y)
    if yi.ndim != 1 or yi.shape[0] != P.shape[0]:
        raise ValueError(f"y must hold {P.shape[0]} labels (one per row of proba)")
    if yi.size and (
        not np.issubdtype(yi.dtype, np.integer) or yi.min() < 0 or yi.max() >= P.shape[1]
    ):
        raise ValueError(f"y must hold class indices 0..{P.shape[1] - 1}")
    return yi.astype(int), P


def top_label(y: object, proba: object) -> tuple[np.ndarray, np.ndarray]:
    """The top label's confidence and whether it is right.

    Parameters
    ----------
    y : array_like of int, shape (n,)
        Class indices 0..C-1.
    proba : array_like, shape (n, C)
        Predicted class probabilities.

    Returns
    -------
    correct : ndarray of int, shape (n,)
        1 where ``argmax_c proba[i]`` (ties to the lowest index) is ``y[i]``.
    confidence : ndarray, shape (n,)
        ``max_c proba[i, c]``, in [1/C, 1].
    """
    yi, P = _class_problem(y, proba)
    return (np.argmax(P, axis=1) == yi).astype(int), P.max(axis=1)


def multiclass_error_rate(y: object, proba: object) -> float:
    """The fraction of cases whose most probable class is not the label (see the module
    notes); in [0, 1].

    Parameters
    ----------
    y : array_like of int, shape (n,)
        Class indices 0..C-1.
    proba : array_like, shape (n, C)
        Predicted class probabilities, rows summing to one.

    Returns
    -------
    float
        The error rate, in [0, 1].
    """
    correct, _ = top_label(y, proba)
    return float(1.0 - correct.mean())


def multiclass_brier(y: object, proba: object) -> float:
    """The multi-class Brier score (1/n) sum_i sum_c (p_ic - [y_i = c])^2, in [0, 2].

    Parameters
    ----------
    y : array_like of int, shape (n,)
    proba : array_like, shape (n, C)

    Returns
    -------
    float
        0 is perfect, 1 - 1/C a uniform guess, lower is better.
    """
    yi, P = _class_problem(y, proba)
    onehot = np.eye(P.shape[1])[yi]
    return float(np.mean(np.sum((P - onehot) ** 2, axis=1)))


def top_label_ece(y: object, proba: object, n_bins: int = SCORE_ECE_BINS) -> float:
    """The top-label expected calibration error (Guo et al. 2017).

    ``ECE = sum_b (n_b / n) |acc_b - conf_b|`` over ``n_bins`` equal-width bins of the
    confidence max_c p_ic on [0, 1], where acc_b is the fraction of the bin's cases whose
    top label is right and conf_b their mean confidence; the bins are those of
    :func:`~gpc_compare.metrics.expected_calibration_error` (right-closed, empty bins skipped).

    Parameters
    ----------
    y : array_like of int, shape (n,)
        Class indices 0..C-1.
    proba : array_like, shape (n, C)
        Predicted class probabilities, rows summing to one.
    n_bins : int
        The number of equal-width bins of the confidence.

    Returns
    -------
    float
        In [0, 1]; 0 is perfect calibration of the confidences at this resolution.
    """
    correct, confidence = top_label(y, proba)
    return expected_calibration_error(correct, confidence, n_bins=n_bins, strategy="uniform")


def top_label_reliability_curve(
    y: object, proba: object, n_bins: int = SCORE_ECE_BINS, confidence: float = 0.95
) -> pd.DataFrame:
    """The top-label reliability diagram's data: per bin of the confidence, the fraction of
    right top labels (:func:`~gpc_compare.metrics.reliability_curve` of the correctness
    against the confidence, with its Jeffreys intervals; ``positives`` counts right labels).

    Parameters
    ----------
    y : array_like of int, shape (n,)
        Class indices 0..C-1.
    proba : array_like, shape (n, C)
        Predicted class probabilities, rows summing to one.
    n_bins : int
        The number of equal-width bins of the confidence.
    confidence : float
        The level of the Jeffreys intervals of each bin's fraction of right labels.

    Returns
    -------
    pandas.DataFrame
        One row per non-empty bin, with the columns of
        :func:`~gpc_compare.metrics.reliability_curve` (``mean_predicted`` the mean
        confidence, ``observed_frequency`` the fraction of right top labels).
    """
    correct, conf = top_label(y, proba)
    return reliability_curve(correct, conf, n_bins=n_bins, confidence=confidence)


def multiclass_auc(y: object, proba: object) -> float:
    """The one-vs-rest AUC averaged over the classes (macro), or NaN when a class is absent
    from ``y`` (its AUC is undefined).

    ``sklearn.metrics.roc_auc_score(y, proba, multi_class="ovr", average="macro")``: for each
    class c, the probability that a case of class c gets a higher p_c than a case of another
    class (ties one half), averaged over c.

    Parameters
    ----------
    y : array_like of int, shape (n,)
        Class indices 0..C-1.
    proba : array_like, shape (n, C)
        Predicted class probabilities, rows summing to one.

    Returns
    -------
    float
        The macro-averaged one-vs-rest AUC, in [0, 1], or NaN when a class is absent.
    """
    yi, P = _class_problem(y, proba)
    if np.unique(yi).size < P.shape[1]:
        return float("nan")
    return float(
        sklearn.metrics.roc_auc_score(
            yi, P, multi_class="ovr", average="macro", labels=np.arange(P.shape[1])
        )
    )


def class_entropy_bits(rates: object) -> float:
    """Entropy in bits of a class distribution, -sum_c pi_c log2 pi_c (0 log 0 = 0).

    Parameters
    ----------
    rates : array_like, shape (C,)
        Class frequencies, non-negative and summing to one.

    Returns
    -------
    float
        H(pi) in bits, in [0, log2 C].

    Raises
    ------
    ValueError
        If ``rates`` is not a distribution over classes.
    """
    pi = np.asarray(rates, dtype=float)
    if pi.ndim != 1 or np.any(pi < 0.0) or not np.isclose(pi.sum(), 1.0):
        raise ValueError(f"rates must be class frequencies summing to one, got {rates!r}")
    nz = pi[pi > 0.0]
    return float(-np.sum(nz * np.log2(nz)))


def score_multiclass(
    y: object, proba: object, log_p: object, class_rates: object
) -> dict[str, float]:
    """All held-out scores of a C-class classifier at once (the module notes define them).

    Parameters
    ----------
    y : array_like of int, shape (n,)
        Test labels as class indices 0..C-1.
    proba : array_like, shape (n, C)
        Predicted class probabilities.
    log_p : array_like, shape (n,)
        log p(y_i | x_i, data) of the observed labels, computed in log space.
    class_rates : array_like, shape (C,)
        The training class frequencies (for ``information_bits``).

    Returns
    -------
    dict
        ``mean_log_predictive``, ``information_bits``, ``error_rate``, ``brier_multiclass``,
        ``auc_ovr_macro`` and ``ece_top_label``, in that order.
    """
    yi, P = _class_problem(y, proba)
    lp = _log_probabilities(log_p)
    if lp.shape[0] != yi.shape[0]:
        raise ValueError(f"y has {yi.shape[0]} labels but log_p has {lp.shape[0]} values")
    mean_lp = float(np.mean(lp))
    return {
        "mean_log_predictive": mean_lp,
        "information_bits": class_entropy_bits(class_rates) + mean_lp / np.log(2.0),
        "error_rate": multiclass_error_rate(yi, P),
        "brier_multiclass": multiclass_brier(yi, P),
        "auc_ovr_macro": multiclass_auc(yi, P),
        "ece_top_label": top_label_ece(yi, P),
    }


def probability_differences(proba: object, *, ref_proba: object) -> dict[str, float]:
    """How far an approximation's class probabilities are from a reference's at the same
    inputs (keyword-only reference, as in :mod:`.comparison`).

    Parameters
    ----------
    proba, ref_proba : array_like, shape (n, C)
        Class probabilities of the approximation and of the reference (MCMC at the same
        hyperparameters).

    Returns
    -------
    dict
        ``proba_diff_max`` = ``max_ic |p_ic - ref_ic|``, ``proba_diff_mean`` = the mean of
        ``|p_ic - ref_ic|`` over cases and classes, and ``top_label_disagreement``, the fraction
        of cases whose most probable class differs.
    """
    P = np.asarray(proba, dtype=float)
    R = np.asarray(ref_proba, dtype=float)
    if P.shape != R.shape or P.ndim != 2 or P.size == 0:
        raise ValueError(f"proba {P.shape} and ref_proba {R.shape} must be one (n, C) shape")
    diff = np.abs(P - R)
    return {
        "proba_diff_max": float(diff.max()),
        "proba_diff_mean": float(diff.mean()),
        "top_label_disagreement": float(np.mean(P.argmax(1) != R.argmax(1))),
    }
