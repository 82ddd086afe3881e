"""Held-out scores for probabilistic binary classifiers, and errors against a reference.

Labels may be {0, 1}, {-1, +1} or booleans; the positive class is 1 / +1 / True.
``p1`` is always the predicted probability of the positive class.

Log scores are taken from log predictive probabilities ``log_p = log p(y* | x*, data)``
as the model computes them in log space (``Posterior.log_predictive``), never from
probabilities clipped away from 0 and 1: a confident mistake (``log_p = -inf``) makes
the mean log predictive probability ``-inf``, as it should.

Scikit-learn computes what it has: the error rate, Brier score and AUC.
:func:`expected_calibration_error` and :func:`reliability_curve` bin exactly as
:func:`sklearn.calibration.calibration_curve` does (the same edges, the same
``np.searchsorted`` rule, so the same means in every non-empty bin; the tests check it)
but count the cases themselves, since the expected calibration error weights each bin by
its count and the Jeffreys interval needs the whole numbers of cases and positives, which
``calibration_curve`` does not return.

Against a reference posterior (MCMC at the same hyperparameters), :func:`latent_errors`,
:func:`kl_gaussian`, :func:`mean_marginal_kl` and :func:`evidence_gap` take plain arrays
and numbers (``post.latent_mean``, ``post.latent_var``, ``post.log_marginal_likelihood``);
the reference's arguments are keyword-only (``ref_mean=``, ``ref_var=``, ...), so an
approximation and its reference cannot be swapped by position.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import sklearn.metrics
from scipy import special

from ._validation import check_count, check_labels

__all__ = [
    "auc",
    "base_rate_entropy_bits",
    "brier",
    "error_rate",
    "evidence_gap",
    "expected_calibration_error",
    "information_bits",
    "kl_gaussian",
    "latent_errors",
    "log_predictive",
    "mean_marginal_kl",
    "reliability_curve",
    "score",
]

#: The number of equal-width bins of the expected calibration error in :func:`score`.
SCORE_ECE_BINS = 10


def _labels01(y: object) -> np.ndarray:
    """Labels as ints in {0, 1} (1 = positive class)."""
    return (check_labels(y, name="y_true", both_classes=False) > 0).astype(int)


def _probabilities(p1: object, n: int | None = None) -> np.ndarray:
    p = np.asarray(p1, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"p1 must be a 1-D array of probabilities, got shape {p.shape}")
    if n is not None and p.shape[0] != n:
        raise ValueError(f"y_true has {n} labels but p1 has {p.shape[0]} probabilities")
    if not np.all((p >= 0.0) & (p <= 1.0)):  # also refuses NaN
        raise ValueError("p1 must hold probabilities in [0, 1] (no NaN)")
    return p


def _log_probabilities(log_p: object) -> np.ndarray:
    lp = np.asarray(log_p, dtype=float)
    if lp.ndim != 1 or lp.size == 0:
        raise ValueError(f"log_p must be a non-empty 1-D array, got shape {lp.shape}")
    if np.any(np.isnan(lp)):
        raise ValueError("log_p contains NaN")
    if np.any(lp > 1e-12):
        raise ValueError(f"log_p must be <= 0 (log probabilities), got max {lp.max():.3g}")
    return np.minimum(lp, 0.0)


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

        ECE = sum_b (n_b / n) |o_b - c_b|  =  (1/n) sum_b |k_b - sum_{i in b} p1_i|,

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


# ------------------------------------------------------------ against a reference posterior
def _moments(value: object, name: str, *, variance: bool) -> np.ndarray:
    """A non-empty finite float array; strictly positive when it holds variances."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a numeric array") from None
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinity")
    if variance and not np.all(arr > 0.0):
        raise ValueError(f"{name} must hold variances > 0, got min {arr.min():.3g}")
    return arr


def _gaussians(**arrays: object) -> dict[str, np.ndarray]:
    """Check means and variances (names containing "var") and that their shapes agree."""
    out = {k: _moments(v, k, variance="var" in k) for k, v in arrays.items()}
    (first, shape), *rest = ((k, a.shape) for k, a in out.items())
    for k, other in rest:
        if other != shape:
            raise ValueError(f"{k} has shape {other} but {first} has shape {shape}")
    return out


def _x_minus_log1p(x: np.ndarray) -> np.ndarray:
    """x - log(1 + x) for x > -1, without cancellation near 0.

    For |x| < 0.1 the series sum_{k>=2} (-1)^k x^k / k, 24 terms (truncation below
    0.1^24 / 26, far under a double's resolution of x^2 / 2); elsewhere the direct form.
    """
    x = np.asarray(x, dtype=float)
    small = np.abs(x) < 0.1
    with np.errstate(invalid="ignore"):
        out = np.where(np.isposinf(x), np.inf, x - np.log1p(x))  # inf - inf would be NaN
    xs = x[small]
    series = np.zeros_like(xs)
    for k in range(25, 1, -1):  # Horner in x: x^2 (1/2 - x (1/3 - x (1/4 - ...)))
        series = 1.0 / k - xs * series
    out[small] = xs * xs * series
    return out


def kl_gaussian(mean_p: object, var_p: object, mean_q: object, var_q: object) -> np.ndarray:
    """Elementwise KL divergence KL(N(mean_p, var_p) || N(mean_q, var_q)), in nats.

    Defined as

        KL(p || q) = 1/2 [ log(v_q / v_p) + (v_p + (m_p - m_q)^2) / v_q - 1 ],

    computed as 1/2 [ d - log1p(d) ] + (m_p - m_q)^2 / (2 v_q) with d = (v_p - v_q) / v_q,
    so that it stays accurate (not a difference of nearly equal numbers) when v_p and v_q
    nearly agree.

    Parameters
    ----------
    mean_p, var_p : array_like
        Means and variances (> 0) of the first distribution, p.
    mean_q, var_q : array_like
        Means and variances (> 0) of the second, q; all four of one shape.

    Returns
    -------
    ndarray
        KL(p_i || q_i) for each element, >= 0, and 0 where the two Gaussians are equal.
    """
    a = _gaussians(mean_p=mean_p, var_p=var_p, mean_q=mean_q, var_q=var_q)
    vp, vq = a["var_p"], a["var_q"]
    with np.errstate(over="ignore"):  # v_p / v_q beyond the doubles: KL is +inf
        d = (vp - vq) / vq  # v_p / v_q - 1
    return 0.5 * _x_minus_log1p(d) + 0.5 * (a["mean_p"] - a["mean_q"]) ** 2 / vq


def mean_marginal_kl(mean: object, var: object, *, ref_mean: object, ref_var: object) -> float:
    """Mean KL divergence from the reference marginals to the approximate ones, in nats.

    Defined as (1/n) sum_i KL(N(ref_mean_i, ref_var_i) || N(mean_i, var_i)): the direction
    is KL(reference || approximation), where the reference (MCMC) marginal is summarised
    by its mean and variance. This is the divergence that EP's moment matching minimises
    site by site (R&W sec. 3.6), it is finite whenever both variances are, and it grows
    without bound as an approximation's variance shrinks below the reference's (the
    overconfidence Laplace is known for). For the other direction use
    :func:`kl_gaussian` with the arguments swapped.

    Parameters
    ----------
    mean, var : array_like, shape (n,)
        The approximation's latent means and variances (variances > 0).
    ref_mean, ref_var : array_like, shape (n,)
        The reference's latent means and variances, at the same inputs (keyword-only).

    Returns
    -------
    float
        The mean KL divergence, >= 0.
    """
    return float(np.mean(kl_gaussian(ref_mean, ref_var, mean, var)))


def latent_errors(
    mean: object, var: object, *, ref_mean: object, ref_var: object
) -> dict[str, float]:
    """How far an approximation's latent marginals are from a reference's.

    Parameters
    ----------
    mean, var : array_like
        The approximation's latent means and variances (variances > 0), e.g.
        ``post.latent_mean`` and ``post.latent_var``.
    ref_mean, ref_var : array_like
        The reference's (MCMC's, at the same hyperparameters) means and variances at the
        same inputs, the same shape (keyword-only).

    Returns
    -------
    dict
        ``latent_mean_rmse`` = sqrt(mean_i (mean_i - ref_mean_i)^2),
        ``latent_mean_max_abs`` = max_i |mean_i - ref_mean_i|,
        ``latent_var_rmse`` = sqrt(mean_i (var_i - ref_var_i)^2),
        ``latent_var_max_abs`` = max_i |var_i - ref_var_i|,
        ``latent_sd_ratio_mean`` = mean_i sqrt(var_i / ref_var_i) (below 1: the
        approximation is too narrow on average), and
        ``marginal_kl_mean`` = :func:`mean_marginal_kl`, KL(reference || approximation)
        averaged over the inputs; in that order.
    """
    a = _gaussians(mean=mean, var=var, ref_mean=ref_mean, ref_var=ref_var)
    dm = a["mean"] - a["ref_mean"]
    dv = a["var"] - a["ref_var"]
    return {
        "latent_mean_rmse": float(np.sqrt(np.mean(dm**2))),
        "latent_mean_max_abs": float(np.max(np.abs(dm))),
        "latent_var_rmse": float(np.sqrt(np.mean(dv**2))),
        "latent_var_max_abs": float(np.max(np.abs(dv))),
        "latent_sd_ratio_mean": float(np.mean(np.sqrt(a["var"] / a["ref_var"]))),
        "marginal_kl_mean": mean_marginal_kl(
            a["mean"], a["var"], ref_mean=a["ref_mean"], ref_var=a["ref_var"]
        ),
    }


def _finite_number(value: object, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number, got {value!r}") from None
    if not np.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return v


def evidence_gap(
    log_evidence: object, *, ref_log_evidence: object, ref_se: object | None = None
) -> dict[str, float]:
    """Gap between an engine's log evidence and a gold-standard estimate.

    Parameters
    ----------
    log_evidence : float
        The engine's log p(y | X, theta) (e.g. ``post.log_marginal_likelihood``).
    ref_log_evidence : float
        The reference estimate at the same hyperparameters (e.g. the MCMC engine's
        annealed-importance-sampling estimate), keyword-only.
    ref_se : float, optional
        The reference's standard error (> 0), e.g. ``ref.log_marginal_likelihood_se``.

    Returns
    -------
    dict
        ``evidence_gap`` = log_evidence - ref_log_evidence (in nats; positive when the
        engine overestimates), and ``evidence_gap_z`` = evidence_gap / ref_se, the gap
        in reference standard errors (NaN when ``ref_se`` is not given).
    """
    approx = _finite_number(log_evidence, "log_evidence")
    ref = _finite_number(ref_log_evidence, "ref_log_evidence")
    gap = approx - ref
    if ref_se is None:
        return {"evidence_gap": gap, "evidence_gap_z": float("nan")}
    se = _finite_number(ref_se, "ref_se")
    if se <= 0.0:
        raise ValueError(f"ref_se must be a standard error > 0, got {ref_se!r}")
    return {"evidence_gap": gap, "evidence_gap_z": gap / se}
