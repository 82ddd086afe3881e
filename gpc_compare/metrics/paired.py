"""Two engines on the same splits: the corrected resampled t-interval of their difference.

The J = r x k held-out scores of two engines on the same splits (r repeats of k-fold
cross-validation) are paired: ``d_j = a_j - b_j``. A plain paired t-interval,
``mean(d) -/+ t s / sqrt(J)``, treats the J differences as independent. They are not:
the training sets of any two folds share most of their cases (k - 2 of k folds within a
repeat; about as much across repeats), so the differences are positively correlated and
s^2 / J understates the variance of their mean. Nadeau and Bengio (2003) model the
correlation of any two differences as rho = n_test / n (n = n_train + n_test); then

    Var(mean d) = sigma^2 (rho + (1 - rho) / J),    E[s^2] = (1 - rho) sigma^2,

so Var(mean d) = (1 / J + rho / (1 - rho)) E[s^2] = (1 / J + n_test / n_train) E[s^2].
The *corrected resampled t* uses that variance,

    mean(d) -/+ t_{(1 + confidence) / 2, J - 1} sqrt((1 / J + n_test / n_train) s^2),

with J - 1 degrees of freedom, as Bouckaert and Frank (2004) use it for r repeats of
k-fold (their "corrected repeated k-fold cv test"). Under the model with Gaussian
differences, mean(d) and s^2 are independent (s^2 depends only on the differences'
deviations from their mean, which the common component does not touch), so the statistic
is exactly t with J - 1 degrees of freedom. tests/metrics/test_paired.py measures the false-win
rate of two engines equal by construction on 2 repeats of 5-fold: under the model 5.2%
over 20000 seeds (the plain paired t: 26%); on drawn data sets, split by the study's split
code, 2.4% over 2000 seeds (the plain t: 17%), so there the correction is conservative.

In a study, ``[splits] kind = "kfold"`` with ``n_splits = 5`` and ``n_repeats = 2`` gives
J = 10 paired splits (split index = repeat x 5 + fold), the default for 5 folds
(``n_repeats`` = ceil(10 / k)); one repeat gives J = 5, where the t quantile (2.78 on 4
degrees of freedom) and the correction (1/5 + 1/4) make the interval wide. Pass the
splits' training- and test-set sizes. Against a sampling reference, :func:`against_reference`
adds the reference's own Monte Carlo error to the verdict.

Why this statistic and not a hierarchical bootstrap (over repeats, then test cases):

- It is what the machine-learning literature uses to compare learners by repeated
  cross-validation (Nadeau and Bengio 2003; Bouckaert and Frank 2004, who found it better
  calibrated and more replicable than the uncorrected tests; Weka's "corrected paired
  t-tester"), so a reviewer can check it against a known method.
- It needs only the per-split table (one score per engine and split, ``results.csv``),
  not each engine's per-case predictions.
- The test-case bootstrap (:func:`~gpc_compare.metrics.bootstrap_scores`) holds the
  training folds fixed: it sees the variability due to the test cases but none of that
  due to the training set, which is what makes fold scores correlated. Resampling
  repeats instead has only r (one to a few) values to resample, too few to estimate that
  component, and resampling training sets would mean refitting every engine (MCMC
  included) for every replicate.

Its limits: rho = n_test / n is Nadeau and Bengio's heuristic, not a property of every
learner; and the interval is for the expected difference between the engines trained on
n_train cases from the same population, not a statement about this one data set.

A "win" is claimed only where the interval excludes zero. One split (J = 1) has no
interval and never wins. Zero variance: identical scores (every difference zero) give the
point interval [0, 0] and no win; a constant nonzero difference ``c`` on every one of J >= 2
splits gives the point interval [c, c] and a win, flagged in ``note``. That is the limit
of the interval as s -> 0: any differences that vary by a little give a narrow interval
around c that excludes zero and a win, so refusing one at s = 0 exactly would make the
verdict jump at a single point. (A constant difference of scores that should agree, e.g.
a rounding offset, is a difference of the computation, not of the engines: the caller
should compare scores at the precision that matters.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = [
    "A_BETTER",
    "B_BETTER",
    "CANNOT_DECIDE",
    "INDISTINGUISHABLE",
    "LOWER_IS_BETTER",
    "NO_DIFFERENCE",
    "PairedDifference",
    "against_reference",
    "paired_difference",
]

#: The held-out scores for which a lower value is better (the rest: higher is better).
LOWER_IS_BETTER = frozenset(
    {"error_rate", "brier", "ece", "brier_multiclass", "ece_top_label", "marginal_kl_mean"}
)
#: The verdicts of :func:`paired_difference`.
A_BETTER, B_BETTER, NO_DIFFERENCE = "a better", "b better", "no difference"
#: The verdicts :func:`against_reference` adds, where a sampling reference's own Monte Carlo
#: error is at least the difference.
INDISTINGUISHABLE, CANNOT_DECIDE = "indistinguishable", "the reference cannot decide"


@dataclass(frozen=True)
class PairedDifference:
    """The corrected resampled t-interval of engine a's score minus engine b's.

    Parameters
    ----------
    mean : float
        Mean over the splits of ``a - b``.
    lower, upper : float
        The interval (NaN for one split).
    n_pairs : int
        J, the number of paired splits (r repeats x k folds).
    df : int
        Degrees of freedom of the t quantile, J - 1.
    verdict : str
        ``"a better"``, ``"b better"`` (the interval excludes zero), or ``"no difference"``
        (it includes zero, or there is none).
    sd : float
        s, the standard deviation of the J differences (NaN for one split).
    se : float
        The corrected standard error sqrt((1/J + n_test/n_train) s^2) (NaN for one split).
    confidence : float
        The interval's nominal coverage.
    note : str
        Empty, or why the interval is special: one split, or zero variance.
    """

    mean: float
    lower: float
    upper: float
    n_pairs: int
    df: int
    verdict: str
    sd: float
    se: float
    confidence: float
    note: str = ""

    def __str__(self) -> str:
        interval = "no interval" if self.n_pairs < 2 else f"[{self.lower:+.4g}, {self.upper:+.4g}]"
        splits = f"{self.n_pairs} split" + ("s" if self.n_pairs > 1 else "")
        return (
            f"{self.mean:+.4g} {interval} (corrected t, {splits}, "
            f"{self.df} df): {self.verdict}" + (f"; {self.note}" if self.note else "")
        )


def paired_difference(
    scores_a: Sequence[float],
    scores_b: Sequence[float],
    n_train: float | Sequence[float],
    n_test: float | Sequence[float],
    confidence: float = 0.95,
    *,
    higher_is_better: bool = True,
) -> PairedDifference:
    """The corrected resampled t-interval (Nadeau and Bengio 2003) of ``a - b``.

    Parameters
    ----------
    scores_a, scores_b : sequence of float
        The two engines' held-out scores on the same J splits, in the same order (one
        value per split, e.g. each fold's mean log predictive probability). Finite.
    n_train, n_test : float or sequence of float
        Training- and test-set sizes: numbers, or one per split (their means are used).
        For k-fold cross-validation n_test / n_train is about 1 / (k - 1).
    confidence : float
        Nominal coverage of the interval, in (0, 1).
    higher_is_better : bool
        Whether a higher score is better (log predictive, information, AUC) or a lower one
        (error rate, Brier score, ECE): it decides which engine a positive difference
        favours. ``mean``, ``lower`` and ``upper`` are always of ``a - b``.

    Returns
    -------
    PairedDifference
        The interval, mean(d) -/+ t_{(1 + confidence)/2, J-1} sqrt((1/J + n_test/n_train)
        s^2), and the verdict: a win only where it excludes zero. See the module
        docstring for the model, the choice of this statistic, and the cases J = 1 and
        zero variance.

    References
    ----------
    Nadeau, C. and Bengio, Y. (2003). Inference for the generalization error. Machine
    Learning 52:239-281.
    Bouckaert, R. R. and Frank, E. (2004). Evaluating the replicability of significance
    tests for comparing learning algorithms. PAKDD 2004, LNCS 3056:3-12.
    """
    d, ratio = _differences(scores_a, scores_b, n_train, n_test, confidence)
    j = d.size
    if j == 1:
        nan = math.nan
        note = "one split: no interval, so no verdict"
        return PairedDifference(
            float(d[0]), nan, nan, 1, 0, NO_DIFFERENCE, nan, nan, confidence, note
        )
    note = ""
    if np.ptp(d) == 0.0:  # every split gives the same difference: a point interval
        mean, sd = float(d[0]), 0.0
        same = "identical scores" if d[0] == 0.0 else "the same difference"
        note = f"zero variance: {same} on every split"
    else:
        mean, sd = float(np.mean(d)), float(np.std(d, ddof=1))
    se = math.sqrt(1.0 / j + ratio) * sd
    half = float(stats.t.ppf(0.5 + confidence / 2.0, j - 1)) * se
    lower, upper = mean - half, mean + half
    verdict = NO_DIFFERENCE
    if lower > 0.0 or upper < 0.0:
        verdict = A_BETTER if (lower > 0.0) == higher_is_better else B_BETTER
    return PairedDifference(mean, lower, upper, j, j - 1, verdict, sd, se, confidence, note)


def _differences(scores_a, scores_b, n_train, n_test, confidence) -> tuple[np.ndarray, float]:
    """The checked differences a - b and the ratio mean(n_test) / mean(n_train)."""
    a = np.asarray(scores_a, dtype=float)
    b = np.asarray(scores_b, dtype=float)
    if a.ndim != 1 or b.ndim != 1 or a.size == 0 or a.size != b.size:
        raise ValueError(
            f"scores_a and scores_b must be 1-D with one score per split, the same number "
            f"(at least one); got shapes {a.shape} and {b.shape}"
        )
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("scores must be finite (no NaN or infinite score on any split)")
    sizes = {}
    for name, value in (("n_train", n_train), ("n_test", n_test)):
        v = np.asarray(value, dtype=float)
        if v.ndim > 1 or v.ndim == 1 and v.size not in (1, a.size):
            raise ValueError(f"{name} must be a number or one per split ({a.size})")
        if not (np.all(np.isfinite(v)) and np.all(v > 0)):
            raise ValueError(f"{name} must be positive, got {value!r}")
        sizes[name] = float(np.mean(v))
    if isinstance(confidence, bool) or not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return a - b, sizes["n_test"] / sizes["n_train"]


def against_reference(difference: PairedDifference, mcse: float | None) -> str:
    """The verdict on an engine against a sampling reference, given the reference's own
    Monte Carlo error (issue 29's rule).

    Parameters
    ----------
    difference : PairedDifference
        engine - reference over the splits (:func:`paired_difference`).
    mcse : float or None
        The Monte Carlo standard error of the reference's score averaged over the same
        splits (:func:`~gpc_compare.metrics.mean_log_predictive_mcse` of the splits'); None
        or NaN where it is unknown.

    Returns
    -------
    str
        Where ``|mean| <= 2 mcse`` (the difference lies within the reference's own Monte
        Carlo error): :data:`INDISTINGUISHABLE` if the interval includes zero, and
        :data:`CANNOT_DECIDE` if it excludes zero, for the interval then claims a
        difference the reference's draws cannot resolve (rerun it with more draws).
        Otherwise, or without ``mcse``, ``difference.verdict``.
    """
    if mcse is None or not np.isfinite(mcse):
        return difference.verdict
    if mcse < 0:
        raise ValueError(f"mcse must be >= 0, got {mcse!r}")
    if abs(difference.mean) > 2.0 * mcse:
        return difference.verdict
    return INDISTINGUISHABLE if difference.verdict == NO_DIFFERENCE else CANNOT_DECIDE
