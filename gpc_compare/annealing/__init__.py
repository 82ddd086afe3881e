"""Annealed estimators of the log evidence of a GP classifier at fixed hyperparameters.

From a tractable start (the prior, or EP's Gaussian approximation) to the posterior along
tempered targets (:mod:`.paths`): annealed importance sampling on a fixed schedule
(:func:`ais`, :mod:`.ais`) and sequential Monte Carlo with an adaptive one (:func:`smc`,
:mod:`.smc`), both moving by elliptical slice sampling. Everything comes in as arguments
(the prior factor, the likelihood, the sites): this package sits below the engines and
imports none of them; :mod:`.estimate` holds what the estimators share (their options,
the :class:`~.estimate.EvidenceEstimate` record and :func:`~.estimate.anneal`, the run
that :func:`gpc_compare.evidence.estimate` and the MCMC engine's ``evidence=True`` both
call), and :func:`gpc_compare.evidence.estimate` is the entry point that fits the start.
"""

from .ais import AISResult, ais, ais_log_evidence, ais_log_evidence_from_sites
from .paths import GaussianPath, PriorPath, elliptical_slice
from .smc import SMCResult, smc

__all__ = [
    "AISResult",
    "GaussianPath",
    "PriorPath",
    "SMCResult",
    "ais",
    "ais_log_evidence",
    "ais_log_evidence_from_sites",
    "elliptical_slice",
    "smc",
]
