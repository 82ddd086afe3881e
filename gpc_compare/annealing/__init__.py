"""Annealed estimators of the log evidence of a GP classifier at fixed hyperparameters.

From a tractable start (the prior, or EP's Gaussian approximation) to the posterior along
tempered targets (:mod:`.paths`): annealed importance sampling on a fixed schedule
(:func:`ais`, :mod:`.ais`) and sequential Monte Carlo with an adaptive one (:func:`smc`,
:mod:`.smc`), both moving by elliptical slice sampling. Everything comes in as arguments
(the prior factor, the likelihood, the sites): this package sits below the engines and
imports none of them. :mod:`.options` holds the options record
(:class:`~.options.EvidenceOptions`, with its :class:`~.options.Recheck` policy) and
:mod:`.estimate` the one path every gold-standard evidence takes
(:func:`~.estimate.estimate`: a first estimate on a problem set up by the caller, and a
recheck), which :func:`gpc_compare.evidence.estimate`, a study's evidence jobs and the
MCMC engine's ``evidence=True`` all call (the problem set up by
:func:`gpc_compare.evidence.prepare`, which fits EP, or from the engine's own fit).
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
