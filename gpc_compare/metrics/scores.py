"""Scoring rules for held-out predictions: log score, information, error rate, Brier, AUC.

Labels may be {0, 1}, {-1, +1} or booleans; the positive class is 1 / +1 / True, and ``p1``
is the predicted probability of the positive class. Log scores are taken from log
predictive probabilities computed in log space, never from clipped probabilities.
"""

from __future__ import annotations

import numpy as np
import sklearn.metrics

from ._checks import _labels01, _log_probabilities, _probabilities
from .calibration import expected_calibration_error

__all__ = [
    "SCORE_ECE_BINS",
    "auc",
    "base_rate_entropy_bits",
    "brier",
    "error_rate",
    "information_bits",
    "log_predictive",
    "score",
]

#: The number of equal-width bins of the expected calibration error in :func:`score`.
SCORE_ECE_BINS = 10


def log_predictive(log_p: object) -> float:
    """Mean log predictive probability, in nats.

    Parameters
    ----------
    log_p : array_like, shape (n,)
        log p(y*_i | x*_i, data) for each test case (values <= 0; ``-inf`` allowed).

    Returns
    -------
    float
        (1/n) sum_i log p(y*_i | x*_i). Higher is better; 0 is perfect, ``-log 2`` is
        a coin flip, and ``-inf`` means at least one test label was given probability 0.
    """
    return float(np.mean(_log_probabilities(log_p)))


def base_rate_entropy_bits(base_rate: float) -> float:
    """Entropy in bits of a Bernoulli(base_rate) label, H(pi) = -pi log2 pi - (1-pi) log2(1-pi).

    Parameters
    ----------
    base_rate : float
        The fraction pi of positive labels, in [0, 1] (H(0) = H(1) = 0).

    Returns
    -------
    float
        H(pi) in bits, between 0 and 1.
    """
    pi = float(base_rate)
    if not 0.0 <= pi <= 1.0:
        raise ValueError(f"base_rate must be in [0, 1], got {base_rate}")
    return float(sum(-q * np.log2(q) for q in (pi, 1.0 - pi) if q > 0.0))


def information_bits(log_p: object, base_rate: float) -> float:
    """Information about the test targets, in bits (Rasmussen & Williams, GPML sec. 3.7.3).

    Defined as

        I = H(pi) + (1/n) sum_i log2 p(y*_i | x*_i, data),

    where pi is the **training-set** fraction of positive labels and
    H(pi) = -pi log2 pi - (1 - pi) log2(1 - pi) is the entropy in bits of a predictor that
    always outputs the base rate. So I is (approximately, when the test set has the
    training base rate) the gain in mean log2 predictive probability over that trivial
    predictor: about 0 for the base-rate predictor, H(pi) for a perfect one (1 bit when the
    classes are balanced, where I reduces to 1 + mean log2 p), negative for a model worse
    than the base rate, and ``-inf`` after a confident mistake.

    Parameters
    ----------
    log_p : array_like, shape (n,)
        log p(y*_i | x*_i, data) in nats (natural log), values <= 0.
    base_rate : float
        Fraction of positive labels in the training set, in [0, 1].

    Returns
    -------
    float
        I in bits.
    """
    return base_rate_entropy_bits(base_rate) + log_predictive(log_p) / np.log(2.0)


def error_rate(y_true: object, p1: object) -> float:
    """Fraction of test cases misclassified by thresholding at 0.5.

    Parameters
    ----------
    y_true : array_like, shape (n,)
        Labels in {0, 1} or {-1, +1}.
    p1 : array_like, shape (n,)
        Predicted P(y = positive). A case is predicted positive when ``p1 > 0.5``
        (a tie at exactly 0.5 is predicted negative).

    Returns
    -------
    float
        The zero-one loss (``sklearn.metrics.zero_one_loss``), in [0, 1].
    """
    y = _labels01(y_true)
    p = _probabilities(p1, y.shape[0])
    return float(sklearn.metrics.zero_one_loss(y, (p > 0.5).astype(int)))


def brier(y_true: object, p1: object) -> float:
    """Brier score: mean squared difference between ``p1`` and the 0/1 outcome.

    Parameters
    ----------
    y_true : array_like, shape (n,)
        Labels in {0, 1} or {-1, +1}.
    p1 : array_like, shape (n,)
        Predicted P(y = positive).

    Returns
    -------
    float
        (1/n) sum_i (p1_i - [y_i positive])^2 (``sklearn.metrics.brier_score_loss``);
        0 is perfect, 0.25 is a constant 0.5, lower is better.
    """
    y = _labels01(y_true)
    p = _probabilities(p1, y.shape[0])
    return float(sklearn.metrics.brier_score_loss(y, p, pos_label=1))


def auc(y_true: object, p1: object) -> float:
    """Area under the ROC curve of ``p1`` as a score for the positive class.

    Parameters
    ----------
    y_true : array_like, shape (n,)
        Labels in {0, 1} or {-1, +1}; both classes must be present.
    p1 : array_like, shape (n,)
        Predicted P(y = positive) (any monotone score gives the same AUC).

    Returns
    -------
    float
        ``sklearn.metrics.roc_auc_score``: the probability that a random positive case
        is ranked above a random negative one (ties count one half).
    """
    y = _labels01(y_true)
    p = _probabilities(p1, y.shape[0])
    if np.unique(y).size < 2:
        raise ValueError("the AUC needs both classes in y_true")
    return float(sklearn.metrics.roc_auc_score(y, p))


def score(y_true: object, p1: object, log_p: object, base_rate: float) -> dict[str, float]:
    """All held-out scores at once.

    Parameters
    ----------
    y_true : array_like, shape (n,)
        Test labels in {0, 1} or {-1, +1}.
    p1 : array_like, shape (n,)
        Predicted P(y = positive) for each test case.
    log_p : array_like, shape (n,)
        log p(y*_i | x*_i, data) of the *observed* label, computed in log space.
    base_rate : float
        Fraction of positive labels in the training set (for :func:`information_bits`).

    Returns
    -------
    dict
        ``mean_log_predictive`` (nats), ``information_bits`` (bits), ``error_rate``,
        ``brier``, ``auc`` and ``ece`` (:func:`expected_calibration_error` with 10
        equal-width bins), in that order.
    """
    y = _labels01(y_true)
    lp = _log_probabilities(log_p)
    if lp.shape[0] != y.shape[0]:
        raise ValueError(f"y_true has {y.shape[0]} labels but log_p has {lp.shape[0]} values")
    return {
        "mean_log_predictive": log_predictive(lp),
        "information_bits": information_bits(lp, base_rate),
        "error_rate": error_rate(y, p1),
        "brier": brier(y, p1),
        "auc": auc(y, p1),
        "ece": expected_calibration_error(y, p1, n_bins=SCORE_ECE_BINS, strategy="uniform"),
    }
