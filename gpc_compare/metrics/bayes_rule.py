"""A classifier against a known truth: its decisions and probabilities against the Bayes rule.

For synthetic data whose true p(y = k | x) is known (``Dataset.true_log_proba``), these
score a fitted classifier against the Bayes-optimal one (Bishop 2006, sec. 1.5.1): the
expected error rate of its decisions (without the label noise of counting mistakes), the
fraction of inputs where it decides differently from another rule (an area on a regular
grid, a probability mass on draws from p(x)), and the mean KL divergence of its class
probabilities from the true ones. Every function takes (m, 2) arrays of log class
probabilities, log p(y = 0 | x) and log p(y = 1 | x), as computed in log space.
"""

from __future__ import annotations

import numpy as np

__all__ = ["decide", "disagreement_fraction", "expected_error_rate", "mean_class_kl"]


def _log_proba(value: object, name: str) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{name} must have shape (m, 2), got {arr.shape}")
    return arr


def decide(log_proba: object) -> np.ndarray:
    """The decision of the rule that predicts the more probable class.

    Parameters
    ----------
    log_proba : array_like, shape (m, 2)
        log p(y = 0 | x) and log p(y = 1 | x) at each of m inputs.

    Returns
    -------
    ndarray of int, shape (m,)
        1 where log p(y = 1 | x) > log p(y = 0 | x), else 0: a tie goes to class 0, as in
        :func:`error_rate` (which predicts the positive class only when p1 > 0.5).
    """
    lp = _log_proba(log_proba, "log_proba")
    return (lp[:, 1] > lp[:, 0]).astype(int)


def disagreement_fraction(log_proba_a: object, log_proba_b: object) -> float:
    """Fraction of the inputs at which two rules decide differently.

    Both rules decide by :func:`decide`. On a regular grid of cell centres (every point
    standing for the same area) this is the midpoint-rule estimate of the fraction of the
    region where the two decision boundaries enclose different classes; on draws from
    p(x) it estimates the probability mass there.

    Parameters
    ----------
    log_proba_a, log_proba_b : array_like, shape (m, 2)
        The two rules' log class probabilities at the same m inputs.

    Returns
    -------
    float
        (1/m) #{i : decide(a)_i != decide(b)_i}, in [0, 1].
    """
    a, b = decide(log_proba_a), decide(log_proba_b)
    if a.shape != b.shape:
        raise ValueError(f"the two arrays cover {a.size} and {b.size} points")
    return float(np.mean(a != b))


def expected_error_rate(true_log_proba: object, decision: object) -> float:
    """Mean over the inputs of the true probability that a decision is wrong.

    Defined as (1/m) sum_i p(y != d_i | x_i) with the true posterior. For inputs drawn
    from p(x) this estimates the rule's error rate E_x[p(y != d(x) | x)] without the
    label noise of counting mistakes; for the Bayes decision d = ``decide(true_log_proba)``
    it is the Bayes error E_x[min_k p(y = k | x)] (Bishop 2006, eq. 1.78), and no rule
    has a smaller one on the same inputs.

    Parameters
    ----------
    true_log_proba : array_like, shape (m, 2)
        The true log p(y = k | x_i), k = 0, 1.
    decision : array_like of int, shape (m,)
        The rule's decisions d_i in {0, 1}, e.g. from :func:`decide`.

    Returns
    -------
    float
        The expected error rate, in [0, 1].
    """
    lp = _log_proba(true_log_proba, "true_log_proba")
    d = np.asarray(decision).astype(int)
    if d.shape != (lp.shape[0],) or not np.all((d == 0) | (d == 1)):
        raise ValueError(
            f"decision must hold {lp.shape[0]} decisions in {{0, 1}}, got shape {d.shape}"
        )
    return float(np.mean(np.exp(lp[np.arange(d.size), 1 - d])))


def mean_class_kl(true_log_proba: object, log_proba: object) -> float:
    """Mean KL divergence from the true class probabilities to a classifier's, in nats.

    Defined as (1/m) sum_i sum_k p(y = k | x_i) [log p(y = k | x_i) - log q(y = k | x_i)],
    p the true posterior and q the classifier's: the expected shortfall of the
    classifier's log predictive probability against the Bayes-optimal predictor's
    (so 0 for the true probabilities, and never negative).

    Parameters
    ----------
    true_log_proba : array_like, shape (m, 2)
        The true log p(y = k | x_i).
    log_proba : array_like, shape (m, 2)
        The classifier's log q(y = k | x_i) at the same inputs.

    Returns
    -------
    float
        The mean KL(p(y | x) || q(y | x)) over the m inputs.
    """
    lt = _log_proba(true_log_proba, "true_log_proba")
    le = _log_proba(log_proba, "log_proba")
    if lt.shape != le.shape:
        raise ValueError(f"true_log_proba has shape {lt.shape} but log_proba has {le.shape}")
    return float(np.mean(np.sum(np.exp(lt) * (lt - le), axis=1)))
