"""Intervals that respect a metric's range: a bootstrap over test cases, a clipped t-interval.

A t-interval across three splits can leave a metric's range (an error rate of
[-0.022, 0.091], an AUC of 1.007). Two intervals that cannot:

- :func:`bootstrap_scores`: the held-out scores recomputed on resampled test cases. Each
  split's test cases are resampled with replacement within each class (so every
  replicate has both classes and an AUC), each split's scores are recomputed exactly as
  :func:`~gpc_compare.metrics.score` computes them, and averaged over the splits as the
  table's mean is. The same resampled cases serve every engine (the resampling depends
  only on the split's labels and the seed), so differences between engines are paired.
  A (bias-corrected) percentile interval of replicates of a statistic that stays in its
  range stays in it.
  The training folds are held fixed: the interval shows the variability due to the test
  cases, not that due to the training set.
  Multi-class predictions (``proba``, one column per class) are rescored the same way
  with the scores of :func:`~gpc_compare.metrics.score_multiclass`
  (:data:`BOOTSTRAP_METRICS_MULTICLASS`), resampled within each class.
- :func:`clipped_t_interval`: mean -/+ t sd / sqrt(k) across k splits, clipped to the
  metric's range (:data:`METRIC_RANGES`), for metrics without per-case values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats

from ._checks import _labels01
from .scores import SCORE_ECE_BINS, base_rate_entropy_bits

__all__ = [
    "BOOTSTRAP_METRICS",
    "BOOTSTRAP_METRICS_MULTICLASS",
    "METRIC_RANGES",
    "bootstrap_indices",
    "bootstrap_scores",
    "clipped_t_interval",
    "percentile_interval",
]

#: The range of each metric: an interval never leaves it.
METRIC_RANGES: dict[str, tuple[float, float]] = {
    "mean_log_predictive": (-math.inf, 0.0),
    "information_bits": (-math.inf, 1.0),
    "error_rate": (0.0, 1.0),
    "brier": (0.0, 1.0),
    "ece": (0.0, 1.0),
    "auc": (0.0, 1.0),
    "latent_mean_rmse": (0.0, math.inf),
    "latent_var_rmse": (0.0, math.inf),
    "marginal_kl_mean": (0.0, math.inf),
    "log_evidence": (-math.inf, 0.0),
    "brier_multiclass": (0.0, 2.0),
    "ece_top_label": (0.0, 1.0),
    "auc_ovr_macro": (0.0, 1.0),
}
#: The held-out scores :func:`bootstrap_scores` recomputes (those of ``score``).
BOOTSTRAP_METRICS = (
    "mean_log_predictive",
    "information_bits",
    "error_rate",
    "brier",
    "auc",
    "ece",
)
#: The multi-class held-out scores it recomputes (those of ``score_multiclass``).
BOOTSTRAP_METRICS_MULTICLASS = (
    "mean_log_predictive",
    "information_bits",
    "error_rate",
    "brier_multiclass",
    "auc_ovr_macro",
    "ece_top_label",
)


def clipped_t_interval(
    values: Sequence[float], metric: str, level: float = 0.95
) -> tuple[float, float, float, bool]:
    """The mean of ``values`` and a t-interval across them, clipped to the metric's range.

    Parameters
    ----------
    values : sequence of float
        One value per split (NaN dropped by the caller).
    metric : str
        Its name; the range is :data:`METRIC_RANGES` (unbounded when not listed).
    level : float
        Coverage of the interval.

    Returns
    -------
    mean, low, high : float
        ``low = high = mean`` for one value or an infinite one.
    clipped : bool
        Whether the t-interval left the range and was clipped to it.
    """
    v = np.asarray(values, dtype=float)
    k = v.size
    mean = float(np.mean(v))
    if k < 2 or not np.all(np.isfinite(v)):
        return mean, mean, mean, False
    half = float(stats.t.ppf(0.5 + level / 2, k - 1) * np.std(v, ddof=1) / math.sqrt(k))
    lo_bound, hi_bound = METRIC_RANGES.get(metric, (-math.inf, math.inf))
    low, high = mean - half, mean + half
    clipped = low < lo_bound or high > hi_bound
    return mean, max(low, lo_bound), min(high, hi_bound), clipped


def bootstrap_indices(
    y_splits: Mapping[int, Sequence[int]], n_boot: int = 2000, seed: int = 0
) -> dict[int, np.ndarray]:
    """Resampled test cases of each split, stratified by class.

    Parameters
    ----------
    y_splits : mapping of split -> labels
        Each split's test labels: {0, 1} or {-1, +1}, or class indices 0..C-1.
    n_boot : int
        Replicates.
    seed : int
        With the split number, seeds the resampling: the same labels, split and seed give
        the same indices, whichever engine they are used for.

    Returns
    -------
    dict of split -> ndarray of int, shape (n_boot, n)
        Row b holds replicate b's case indices: as many of each class as the split has
        (the classes in increasing order of their labels).
    """
    out = {}
    for split, labels in y_splits.items():
        y = np.asarray(labels)
        rng = np.random.default_rng([seed, int(split)])
        idx = np.empty((n_boot, y.size), dtype=np.intp)
        start = 0
        for cls in np.unique(y):
            members = np.flatnonzero(y == cls)
            idx[:, start : start + members.size] = rng.choice(members, (n_boot, members.size))
            start += members.size
        out[int(split)] = idx
    return out


def _replicate(y: np.ndarray, p1: np.ndarray, log_p: np.ndarray, base_rate: float, idx):
    """The held-out scores of each row of case indices ``idx`` (n_boot, n)."""
    yb = y[idx].astype(float)
    pb = p1[idx]
    with np.errstate(invalid="ignore"):
        mlp = np.mean(log_p[idx], axis=1)
    return {
        "mean_log_predictive": mlp,
        "information_bits": base_rate_entropy_bits(base_rate) + mlp / np.log(2.0),
        "error_rate": np.mean((pb > 0.5) != (yb == 1), axis=1),
        "brier": np.mean((pb - yb) ** 2, axis=1),
        "auc": _mann_whitney(p1, y == 1, idx),
        "ece": _binned_ece(y.astype(float), p1, idx),
    }


def _row_counts(values: np.ndarray, n_values: int, idx: np.ndarray, weights=None) -> np.ndarray:
    """counts[b, k] = the sum of ``weights`` (or 1) over replicate b's cases whose
    ``values`` (integers in 0..n_values-1, one per original case) is k."""
    keys = (np.arange(idx.shape[0])[:, None] * n_values + values[idx]).ravel()
    w = None if weights is None else np.asarray(weights, dtype=float)[idx].ravel()
    return np.bincount(keys, w, minlength=idx.shape[0] * n_values).reshape(-1, n_values)


def _mann_whitney(score: np.ndarray, positive: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Each replicate's AUC: the probability that a positive case outranks a negative one
    (ties 1/2), NaN without both. ``score``, ``positive``: the original cases; ``idx``
    (n_boot, n): each replicate's cases, as many positives in each (stratified).

    Counted over the original distinct scores (no sort per replicate): with P[b, k] and
    N[b, k] replicate b's positives and negatives at the k-th smallest score,
    U_b = sum_k P[b, k] (sum_{l<k} N[b, l] + N[b, k] / 2)."""
    n = idx.shape[1]
    n1 = int(np.sum(positive[idx[0]]))
    if n1 == 0 or n1 == n:
        return np.full(idx.shape[0], np.nan)
    distinct, rank = np.unique(score, return_inverse=True)
    pos = _row_counts(rank, distinct.size, idx, positive)
    neg = _row_counts(rank, distinct.size, idx) - pos
    below = np.cumsum(neg, axis=1) - neg
    return np.sum(pos * (below + 0.5 * neg), axis=1) / (n1 * (n - n1))


def _binned_ece(outcome: np.ndarray, prob: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Each replicate's expected calibration error,
    (1/n) sum_b |sum_{i in b} (outcome_i - prob_i)| over the equal-width bins of
    :func:`~gpc_compare.metrics.score` (right-closed). ``outcome``, ``prob``: the original
    cases; ``idx`` (n_boot, n): each replicate's cases."""
    bins = np.searchsorted(np.linspace(0.0, 1.0, SCORE_ECE_BINS + 1)[1:-1], prob)
    gap = _row_counts(bins, SCORE_ECE_BINS, idx, outcome - prob)
    return np.sum(np.abs(gap), axis=1) / idx.shape[1]


def _replicate_multiclass(
    y: np.ndarray, P: np.ndarray, log_p: np.ndarray, entropy_bits: float, idx: np.ndarray
) -> dict[str, np.ndarray]:
    """The multi-class held-out scores of each row of case indices ``idx`` (n_boot, n)."""
    C = P.shape[1]
    with np.errstate(invalid="ignore"):
        mlp = np.mean(log_p[idx], axis=1)
    onehot = y[:, None] == np.arange(C)
    brier = np.mean(np.sum((P - onehot) ** 2, axis=1)[idx], axis=1)
    correct = np.argmax(P, axis=1) == y  # ties to the lowest index, as np.argmax
    # one-vs-rest AUC of each class (NaN, as the macro mean, when a class is absent)
    auc = np.mean([_mann_whitney(P[:, c], onehot[:, c], idx) for c in range(C)], axis=0)
    return {
        "mean_log_predictive": mlp,
        "information_bits": entropy_bits + mlp / np.log(2.0),
        "error_rate": 1.0 - np.mean(correct[idx], axis=1),
        "brier_multiclass": brier,
        "auc_ovr_macro": auc,
        "ece_top_label": _binned_ece(correct.astype(float), P.max(axis=1), idx),
    }


def bootstrap_scores(
    splits: Mapping[int, Mapping[str, object]], indices: Mapping[int, np.ndarray]
) -> dict[str, np.ndarray]:
    """Bootstrap replicates of the mean over splits of each held-out score.

    Parameters
    ----------
    splits : mapping of split -> dict
        One engine's test predictions per split: binary ``y`` (labels), ``p1``, ``log_p``
        and ``base_rate`` (the training fold's, as for ``information_bits``); or
        multi-class ``y`` (class indices), ``proba`` (n, C), ``log_p`` and
        ``entropy_bits`` (of the training class frequencies, as for ``information_bits``).
    indices : mapping of split -> ndarray
        :func:`bootstrap_indices` of the same splits' labels (every split of ``splits``
        must be there).

    Returns
    -------
    dict of metric -> ndarray, shape (n_boot,)
        For each metric of :data:`BOOTSTRAP_METRICS` (binary) or
        :data:`BOOTSTRAP_METRICS_MULTICLASS`, the mean over the splits of the metric
        recomputed on each replicate's cases. With the identity resample each split's
        value equals :func:`~gpc_compare.metrics.score`'s (or ``score_multiclass``'s).
    """
    per_split = []
    names = BOOTSTRAP_METRICS
    for split, case in splits.items():
        log_p = np.asarray(case["log_p"], dtype=float)
        if "proba" in case:
            names = BOOTSTRAP_METRICS_MULTICLASS
            y = np.asarray(case["y"], dtype=int)
            P = np.asarray(case["proba"], dtype=float)
            entropy = float(case["entropy_bits"])
            per_split.append(_replicate_multiclass(y, P, log_p, entropy, indices[split]))
        else:
            y = _labels01(case["y"])
            p1 = np.asarray(case["p1"], dtype=float)
            base_rate = float(case["base_rate"])
            per_split.append(_replicate(y, p1, log_p, base_rate, indices[split]))
    return {m: np.mean([s[m] for s in per_split], axis=0) for m in names}


def percentile_interval(
    replicates: np.ndarray, estimate: float | None = None, level: float = 0.95
) -> tuple[float, float]:
    """The percentile interval of bootstrap replicates, bias-corrected about ``estimate``.

    With ``estimate`` this is Efron's (1981) bias-corrected percentile interval: with
    z0 = Phi^-1(fraction of replicates below the estimate), the quantiles
    Phi(2 z0 -/+ z_{(1+level)/2}) of the replicates. It matters for a statistic the
    bootstrap biases (the ECE of resampled cases is larger than the ECE), whose plain
    percentile interval can sit beside the estimate. Where the bias is so large that fewer
    than (1 - level) / 2 of the replicates fall on one side of the estimate (``|z0|`` >
    z_{(1+level)/2}: the ECE of a few dozen cases), the correction would move the interval
    past the estimate, where the normal model behind it has broken down; the interval is
    then widened to reach the estimate, so it always contains it. The ends are replicates
    or the estimate, so the interval never leaves the statistic's range; they are the
    order statistics just outside the quantiles (an infinite replicate is never
    interpolated into a NaN).

    Parameters
    ----------
    replicates : ndarray
        Bootstrap replicates of the statistic (NaN dropped).
    estimate : float, optional
        The statistic on the original cases.
    level : float
        Coverage.

    Returns
    -------
    low, high : float
    """
    r = np.asarray(replicates, dtype=float)
    r = r[~np.isnan(r)]
    if r.size == 0:
        return math.nan, math.nan
    tail = (1.0 - level) / 2
    q_low, q_high = tail, 1.0 - tail
    if estimate is not None and np.isfinite(estimate):
        below = (np.sum(r < estimate) + 0.5 * np.sum(r == estimate)) / r.size
        z0 = stats.norm.ppf(np.clip(below, 1.0 / (r.size + 1), r.size / (r.size + 1)))
        z = stats.norm.ppf(q_high)
        q_low, q_high = stats.norm.cdf(2 * z0 - z), stats.norm.cdf(2 * z0 + z)
    low = float(np.quantile(r, q_low, method="lower"))
    high = float(np.quantile(r, q_high, method="higher"))
    if estimate is not None and np.isfinite(estimate):  # (see above: always contains it)
        low, high = min(low, float(estimate)), max(high, float(estimate))
    return low, high
