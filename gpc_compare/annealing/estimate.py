"""The estimators' common front: their options, the record of an estimate, and the run.

:func:`anneal` runs SMC or AIS on a problem already set up (the prior's Cholesky factor,
the likelihood, EP's sites) and returns an :class:`EvidenceEstimate`. It is the one place
both callers go through: :func:`gpc_compare.evidence.estimate` (which checks the input and
fits EP first) and the MCMC engine's ``evidence=True`` (which has both already), so the
same seed gives the same estimate either way.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .._validation import OptionCheck, check_fraction, count, option_checker, optional
from .ais import ais
from .smc import smc

#: The estimators by name; ``"auto"`` is SMC.
METHODS = ("auto", "smc", "ais")
#: Where a path may start.
STARTS = ("ep", "prior")
#: How each method's options are checked (:data:`check_options`); they are passed on to
#: :func:`~gpc_compare.annealing.smc` or :func:`~gpc_compare.annealing.ais`.
OPTION_CHECKS: dict[str, dict[str, OptionCheck]] = {
    "smc": {
        "particles": count(2),
        "runs": count(2),
        "moves": count(0),
        "sweeps": count(0),
        "cess": lambda v, name: check_fraction(v, name, closed=False),
        "max_steps": count(1),
    },
    "ais": {"temperatures": optional(count(1)), "runs": count(2)},
}
#: Their defaults: those of the functions that take them (one place for each).
OPTIONS: dict[str, dict[str, Any]] = {
    method: {k: inspect.signature(fn).parameters[k].default for k in OPTION_CHECKS[method]}
    for method, fn in (("smc", smc), ("ais", ais))
}
#: ``check_options[method](options)``: each method's options checked, as
#: :func:`gpc_compare.evidence.estimate`, the MCMC engine and a study's ``[evidence.NAME]``
#: check them.
check_options = {
    method: option_checker(checks, f"method {method!r}") for method, checks in OPTION_CHECKS.items()
}


@dataclass(frozen=True)
class EvidenceEstimate:
    """An estimate of log p(y | X, theta) and the record of how it was made.

    Attributes
    ----------
    log_evidence, standard_error : float
        The estimate and its standard error (across independent runs).
    method : {"smc", "ais"}
    start : {"ep", "prior"}
        Where the path started.
    start_log_evidence : float
        EP's own log evidence (R&W eq. 3.65) at these hyperparameters (where the path
        started, or, from the prior, the Gaussian SMC's moves propose about).
    seconds : float
        Wall time, the start's fit included.
    health : dict
        The estimator's own record: for SMC ``steps``, ``ess_min``, ``resampled``,
        ``stuck``, ``capped``, ``particles``, ``runs``, ``moves``, ``run_log_evidence``;
        for AIS ``temperatures``, ``runs``.
    """

    log_evidence: float
    standard_error: float
    method: str
    start: str
    start_log_evidence: float | None
    seconds: float
    health: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """The estimate as a JSON-ready dict (a study job's ``evidence`` record)."""
        return asdict(self)


def resolve(method: str, start: str, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The method (``"auto"`` is ``"smc"``) and its options, checked, for :func:`anneal`.

    Raises
    ------
    ValueError
        For an unknown method or start, or an option the method does not take or a bad
        value (:data:`check_options`).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
    if start not in STARTS:
        raise ValueError(f"start must be 'ep' or 'prior', got {start!r}")
    method = "smc" if method == "auto" else method
    return method, check_options[method](dict(options))


def anneal(
    L: np.ndarray,
    m: float,
    y: np.ndarray,
    likelihood: Any,
    *,
    K: np.ndarray,
    ep_sites: tuple[np.ndarray, np.ndarray],
    ep_log_evidence: float,
    method: str,
    start: str,
    random_seed: np.random.Generator,
    t0: float | None = None,
    **options: Any,
) -> EvidenceEstimate:
    """log p(y | X, theta) by SMC or AIS on a problem set up by the caller.

    Parameters
    ----------
    L : ndarray, shape (n, n)
        Cholesky factor of K (with its jitter); ``K = L L^T``.
    m : float
        Constant prior mean.
    y : ndarray, shape (n,)
        Labels in {-1, +1}, or real targets under the Gaussian likelihood.
    likelihood : Likelihood
    ep_sites : (tau, nu)
        EP's site parameters at these hyperparameters (R&W eqs. 3.56-3.57): the start from
        ``start="ep"``; SMC's moves propose about them from either start.
    ep_log_evidence : float
        EP's log evidence there (recorded as ``start_log_evidence``).
    method, start : str
        As :func:`resolve` returns them (``"smc"`` or ``"ais"``; ``"ep"`` or ``"prior"``).
    random_seed : Generator
    t0 : float, optional
        ``time.perf_counter()`` when the caller began (its set-up counts in ``seconds``).
    **options
        The method's options, checked (:func:`resolve`).
    """
    t0 = time.perf_counter() if t0 is None else t0
    sites = ep_sites if start == "ep" else None
    run = {**OPTIONS[method], **options}
    if method == "smc":
        r = smc(L, m, y, likelihood, K=K, sites=sites, reference=ep_sites,
                random_seed=random_seed, **run)  # fmt: skip
        left_out = ("log_evidence", "standard_error", "start", "schedule")
        health = {k: v for k, v in asdict(r).items() if k not in left_out}
    else:
        r = ais(L, m, y, likelihood, K=K, sites=sites, random_seed=random_seed, **run)
        health = {"temperatures": r.temperatures, "runs": r.runs}
    return EvidenceEstimate(
        log_evidence=r.log_evidence,
        standard_error=r.standard_error,
        method=method,
        start=start,
        start_log_evidence=ep_log_evidence,
        seconds=time.perf_counter() - t0,
        health=health,
    )
