"""Calibration of predicted probabilities: the expected calibration error and reliability curves.

Both bin exactly as :func:`sklearn.calibration.calibration_curve` does (the same edges,
the same ``np.searchsorted`` rule) but count the cases themselves: the expected calibration
error weights each bin by its count, and the Jeffreys interval needs the numbers of cases
and positives, which ``calibration_curve`` does not return.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special

from .._validation import check_count
from ._checks import _labels01, _probabilities

__all__ = ["expected_calibration_error", "reliability_curve"]


def _binned(
    y: np.ndarray, p: np.ndarray, n_bins: int, strategy: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Bin edges and, per bin, the number of cases, of positives and the sum of ``p``.

    The edges and the bin of each case are exactly those of
    :func:`sklearn.calibration.calibration_curve` (scikit-learn 1.4-1.9): case i falls in
    bin b when ``edges[b] < p_i <= edges[b + 1]``, except that the first bin also holds
    ``p_i = edges[0]``, i.e. ``b = np.searchsorted(edges[1:-1], p_i)``.
    """
    n_bins = check_count(n_bins, "n_bins")
    if strategy == "uniform":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
    elif strategy == "quantile":
        edges = np.percentile(p, np.linspace(0.0, 1.0, n_bins + 1) * 100)
    else:
        raise ValueError(f"strategy must be 'uniform' or 'quantile', got {strategy!r}")
    ids = np.searchsorted(edges[1:-1], p)  # side="left": right-closed bins
    count = np.bincount(ids, minlength=n_bins)
    positives = np.bincount(ids[y == 1], minlength=n_bins)
    p_sum = np.bincount(ids, weights=p, minlength=n_bins)
    return edges, count, positives, p_sum


def expected_calibration_error(
    y_true: object, p1: object, n_bins: int = 10, strategy: str = "uniform"
) -> float:
    """Expected calibration error of the predicted probabilities of the positive class.

    Defined as

        ``ECE = sum_b (n_b / n) |o_b - c_b|  =  (1/n) sum_b |k_b - sum_{i in b} p1_i|``,

    where bin b holds n_b of the n cases, k_b of them positive, o_b = k_b / n_b is the
    observed frequency of the positive class and c_b the mean ``p1`` in the bin. Empty
    bins contribute nothing. 0 is perfect calibration at this resolution; predicting
    p1 = 1 for every negative case and p1 = 0 for every positive one gives 1.

    The bins are over ``p1``, the predicted probability of the positive class (the
    binary reliability diagram, not the confidence max(p1, 1 - p1)). With
    ``strategy="uniform"`` there are ``n_bins`` equal-width bins with edges
    ``e = np.linspace(0, 1, n_bins + 1)``; with ``strategy="quantile"`` the edges are the
    percentiles ``np.percentile(p1, np.linspace(0, 1, n_bins + 1) * 100)``, so the bins hold
    about equal numbers of cases (tied probabilities can leave some empty). Bins are
    right-closed: case i is in bin b when e[b] < p1_i <= e[b + 1], and the first bin is
    closed on both sides, so p1 = 0 (or the smallest p1, for quantile bins) is in the first
    bin and p1 = 1 in the last; a p1 equal to an inner edge belongs to the bin below it.
    This is :func:`sklearn.calibration.calibration_curve`'s binning, and empty bins are
    skipped as it skips them.

    Parameters
    ----------
    y_true : array_like, shape (n,)
        Labels in {0, 1} or {-1, +1}.
    p1 : array_like, shape (n,)
        Predicted P(y = positive), in [0, 1] (0 and 1 included).
    n_bins : int, default 10
        The number of bins.
    strategy : {"uniform", "quantile"}, default "uniform"
        Equal-width or equal-count bins.

    Returns
    -------
    float
        The ECE, in [0, 1].
    """
    y = _labels01(y_true)
    p = _probabilities(p1, y.shape[0])
    _, _, positives, p_sum = _binned(y, p, n_bins, strategy)
    return float(np.sum(np.abs(positives - p_sum)) / y.shape[0])


def reliability_curve(
    y_true: object,
    p1: object,
    n_bins: int = 10,
    strategy: str = "uniform",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Data for a reliability diagram: observed frequency against mean ``p1`` per bin.

    The bins are those of :func:`expected_calibration_error` (over ``p1``, right-closed,
    equal-width or quantile edges: :func:`sklearn.calibration.calibration_curve`'s binning),
    and empty bins are skipped.

    The interval on each observed frequency is the **Jeffreys** interval (Brown, Cai and
    DasGupta 2001, Statistical Science 16, sec. 4.1.2): the equal-tailed ``confidence``
    interval of the Beta(k + 1/2, n_b - k + 1/2) posterior of the bin's frequency under
    the Jeffreys prior, with the lower end set to 0 when k = 0 and the upper end to 1 when
    k = n_b.

    Parameters
    ----------
    y_true : array_like, shape (n,)
        Labels in {0, 1} or {-1, +1}.
    p1 : array_like, shape (n,)
        Predicted P(y = positive), in [0, 1].
    n_bins : int, default 10
        The number of bins.
    strategy : {"uniform", "quantile"}, default "uniform"
        Equal-width or equal-count bins.
    confidence : float, default 0.95
        The coverage of the interval, in (0, 1).

    Returns
    -------
    pandas.DataFrame
        One row per non-empty bin, in increasing order of p1, with columns
        ``bin_lower``, ``bin_upper`` (the bin's edges), ``count`` (n_b), ``positives``
        (k), ``mean_predicted`` (mean p1 in the bin), ``observed_frequency`` (k / n_b),
        ``observed_lower`` and ``observed_upper`` (the Jeffreys interval).
    """
    y = _labels01(y_true)
    p = _probabilities(p1, y.shape[0])
    conf = float(confidence)
    if not 0.0 < conf < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    edges, count, positives, p_sum = _binned(y, p, n_bins, strategy)
    keep = count > 0
    n_b, k = count[keep], positives[keep]
    a, b = k + 0.5, n_b - k + 0.5
    tail = 0.5 * (1.0 - conf)
    lower = np.where(k == 0, 0.0, special.betaincinv(a, b, tail))
    upper = np.where(k == n_b, 1.0, special.betaincinv(a, b, 1.0 - tail))
    return pd.DataFrame(
        {
            "bin_lower": edges[:-1][keep],
            "bin_upper": edges[1:][keep],
            "count": n_b,
            "positives": k,
            "mean_predicted": p_sum[keep] / n_b,
            "observed_frequency": k / n_b,
            "observed_lower": lower,
            "observed_upper": upper,
        }
    )
