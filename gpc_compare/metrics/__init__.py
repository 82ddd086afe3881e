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

Against a known truth (synthetic data with the true p(y | x)), :func:`decide`,
:func:`expected_error_rate`, :func:`disagreement_fraction` and :func:`mean_class_kl` score a
classifier against the Bayes-optimal rule. Across repetitions, :func:`summarize` gives
means with t-intervals over a study's splits (clipped to each metric's range),
:func:`bootstrap_scores` an interval over test cases that stays in the range, and
:func:`mc_standard_errors` the Monte Carlo standard errors of MCMC draws;
:func:`log_predictive_mcse`, :func:`mean_log_predictive_mcse` and
:func:`joint_mean_log_predictive_mcse` those of an MCMC reference's held-out log
predictive, per case and of the mean.

For C classes (the softmax likelihood), :func:`score_multiclass` gives the multi-class
scores (multi-class Brier, top-label ECE, one-vs-rest macro AUC) and
:func:`probability_differences` the class probabilities against a reference.

Modules: ``scores`` (scoring rules), ``multiclass`` (their C-class counterparts),
``calibration`` (ECE, reliability curves),
``comparison`` (against a reference posterior), ``bayes_rule`` (against the truth),
``summary`` and ``intervals`` (across repetitions and test cases), ``paired`` (two engines on
the same splits: :func:`paired_difference`, the corrected resampled t-interval of Nadeau and
Bengio 2003), ``mcse`` (a reference's Monte Carlo error); every public name is importable
from here.
"""

from __future__ import annotations

from .bayes_rule import decide, disagreement_fraction, expected_error_rate, mean_class_kl
from .calibration import expected_calibration_error, reliability_curve
from .comparison import evidence_gap, kl_gaussian, latent_errors, mean_marginal_kl
from .intervals import (
    BOOTSTRAP_METRICS,
    BOOTSTRAP_METRICS_MULTICLASS,
    METRIC_RANGES,
    bootstrap_indices,
    bootstrap_scores,
    clipped_t_interval,
    percentile_interval,
)
from .mcse import (
    joint_mean_log_predictive_mcse,
    log_predictive_mcse,
    mean_log_predictive_mcse,
)
from .multiclass import (
    class_entropy_bits,
    multiclass_auc,
    multiclass_brier,
    multiclass_error_rate,
    probability_differences,
    score_multiclass,
    top_label,
    top_label_ece,
    top_label_reliability_curve,
)
from .paired import (
    A_BETTER,
    B_BETTER,
    CANNOT_DECIDE,
    INDISTINGUISHABLE,
    LOWER_IS_BETTER,
    NO_DIFFERENCE,
    PairedDifference,
    against_reference,
    paired_difference,
)
from .scores import (
    SCORE_ECE_BINS,
    auc,
    base_rate_entropy_bits,
    brier,
    error_rate,
    information_bits,
    log_predictive,
    score,
)
from .summary import mc_standard_errors, summarize

__all__ = [
    "A_BETTER",
    "BOOTSTRAP_METRICS",
    "BOOTSTRAP_METRICS_MULTICLASS",
    "B_BETTER",
    "CANNOT_DECIDE",
    "INDISTINGUISHABLE",
    "LOWER_IS_BETTER",
    "METRIC_RANGES",
    "NO_DIFFERENCE",
    "SCORE_ECE_BINS",
    "PairedDifference",
    "against_reference",
    "auc",
    "base_rate_entropy_bits",
    "bootstrap_indices",
    "bootstrap_scores",
    "brier",
    "clipped_t_interval",
    "class_entropy_bits",
    "decide",
    "disagreement_fraction",
    "error_rate",
    "evidence_gap",
    "expected_calibration_error",
    "expected_error_rate",
    "information_bits",
    "joint_mean_log_predictive_mcse",
    "kl_gaussian",
    "latent_errors",
    "log_predictive",
    "log_predictive_mcse",
    "mc_standard_errors",
    "mean_class_kl",
    "mean_log_predictive_mcse",
    "mean_marginal_kl",
    "percentile_interval",
    "multiclass_auc",
    "multiclass_brier",
    "multiclass_error_rate",
    "paired_difference",
    "probability_differences",
    "reliability_curve",
    "score",
    "score_multiclass",
    "summarize",
    "top_label",
    "top_label_ece",
    "top_label_reliability_curve",
]
