"""The gold-standard evidence, one path: a problem set up once, a first estimate, a recheck.

:func:`estimate` runs SMC or AIS as an :class:`~.options.EvidenceOptions` record says on
a :class:`Prepared` problem (K's Cholesky factor with its jitter, the likelihood, EP's
sites and log evidence at the same hyperparameters) and, where the record's
:class:`~.options.Recheck` policy says the first estimate is unhealthy, estimates again
with more runs (SMC) or temperatures (AIS). It returns an :class:`EvidenceEstimate` that
says whether and why it estimated again. Its three callers all go through it, so the
same problem, options and seed give the same estimate by each:
:func:`gpc_compare.evidence.estimate` (which checks the input, prepares the problem with
:func:`gpc_compare.evidence.prepare` and fits EP), a study's evidence jobs
(:mod:`gpc_compare.study.worker`, with the same preparation) and the MCMC engine's
``evidence=True`` (with the Cholesky factor and the EP fit it already holds: this package
sits below the engines and fits nothing itself).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from ..likelihoods import Likelihood
from .ais import ais
from .options import (
    METHODS,
    OPTION_CHECKS,
    OPTIONS,
    STARTS,
    EvidenceOptions,
    Recheck,
    check_options,
)
from .smc import smc

__all__ = [
    "METHODS",
    "OPTIONS",
    "OPTION_CHECKS",
    "STARTS",
    "EvidenceEstimate",
    "EvidenceOptions",
    "Prepared",
    "Recheck",
    "check_options",
    "estimate",
]


@dataclass(frozen=True)
class EvidenceEstimate:
    """An estimate of log p(y | X, theta) and the record of how it was made.

    Parameters
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
        Wall time, the set-up (EP's fit) included, and with a recheck both estimates.
    health : dict
        The estimator's own record: for SMC ``steps``, ``ess_min``, ``resampled``,
        ``stuck``, ``capped``, ``particles``, ``runs``, ``moves``, ``run_log_evidence``;
        for AIS ``temperatures``, ``runs``.
    recheck : str or None
        Why the first estimate was made again (:class:`~.options.Recheck`), or None: this
        estimate is then the second, and final, one.
    first : EvidenceEstimate or None
        The first estimate, where it was made again.
    """

    log_evidence: float
    standard_error: float
    method: str
    start: str
    start_log_evidence: float | None
    seconds: float
    health: dict[str, Any] = field(default_factory=dict)
    recheck: str | None = None
    first: EvidenceEstimate | None = None

    def record(self) -> dict[str, Any]:
        """The estimate as a JSON-ready dict (e.g. an MCMC job's ``reference_evidence``);
        ``recheck`` and ``first`` only where it was made again.

        Returns
        -------
        dict
            The fields, ``first`` as its own record.
        """
        out = asdict(self)
        del out["recheck"], out["first"]
        if self.first is not None:
            out.update(recheck=self.recheck, first=self.first.record())
        return out


@dataclass(frozen=True)
class Prepared:
    """A problem set up for the estimators: K's Cholesky factor (with the jitter the MCMC
    engine adds) and L L^T, the constant prior mean, the labels, EP's approximation at
    the same hyperparameters (the start, or SMC's moves' reference) and the seconds the
    set-up took. Several estimates (a first and a recheck) share one set-up.

    Parameters
    ----------
    L : ndarray, shape (n, n)
        The lower Cholesky factor of K (with the MCMC engine's jitter).
    K : ndarray, shape (n, n)
        L L^T: the prior covariance the estimators use.
    mean : float
        The constant prior mean m.
    y : ndarray, shape (n,)
        The labels in {-1, +1} (real targets with the Gaussian likelihood).
    likelihood : Likelihood
    ep_sites : (ndarray, ndarray)
        EP's site parameters (ttau, tnu) (R&W eqs. 3.56-3.57).
    ep_log_evidence : float
        EP's log marginal likelihood (R&W eq. 3.65).
    seconds : float
        The set-up's wall time.
    """

    L: np.ndarray
    K: np.ndarray  # L L^T: the prior the estimators use (K with that jitter)
    mean: float
    y: np.ndarray
    likelihood: Likelihood
    ep_sites: tuple[np.ndarray, np.ndarray] | None  # EP's (ttau, tnu) (R&W eqs. 3.56-3.57)
    ep_log_evidence: float | None
    seconds: float

    @classmethod
    def from_ep(cls, L, mean, y, likelihood, ep, seconds: float) -> Prepared:
        """The problem from K's Cholesky factor and an EP fit (an ``EPPosterior``)."""
        sites = (ep.ttau, ep.tnu)
        return cls(
            L, L @ L.T, mean, y, likelihood, sites, float(ep.log_marginal_likelihood), seconds
        )

    @classmethod
    def multiclass(cls, L, y, likelihood, log_evidence: float | None, seconds: float) -> Prepared:
        """A problem with C latent functions: L = I_C (x) chol(K) (class-major), class
        indices ``y``, no sites (the path starts at the prior) and an approximation's log
        evidence to record (nested EP's for the multinomial probit), or None."""
        return cls(L, L @ L.T, 0.0, y, likelihood, None, log_evidence, seconds)


def estimate(
    problem: Prepared,
    options: EvidenceOptions,
    random_seed: int | Sequence[int] | np.random.Generator | None = None,
) -> EvidenceEstimate:
    """log p(y | X, theta) by SMC or AIS, estimated again where ``options.recheck`` says.

    Parameters
    ----------
    problem : Prepared
    options : EvidenceOptions
    random_seed : int, sequence of int, Generator or None
        The first estimate's generator is ``np.random.default_rng(random_seed)``. A
        recheck's is ``np.random.default_rng([seed, size])``, ``seed`` the first integer
        of ``random_seed`` and ``size`` the recheck's runs (SMC) or temperatures (AIS),
        independent of the first; from a Generator or None it goes on with the first's.
        (A study's AIS job seeds its first anneal ``[job seed, temperatures]``.)

    Returns
    -------
    EvidenceEstimate
        The final estimate; its ``recheck`` and ``first`` say whether and why it was made
        again, and its ``seconds`` include the set-up's.
    """
    t0 = time.perf_counter() - problem.seconds
    rng = np.random.default_rng(random_seed)
    first = _run(problem, options, rng, t0)
    reason = recheck_reason(first, options)
    if reason is None:
        return first
    again = options.again()
    size = again.runs if options.estimator == "smc" else again.temperatures
    if isinstance(random_seed, int | np.integer | Sequence):
        root = random_seed if isinstance(random_seed, int | np.integer) else random_seed[0]
        rng = np.random.default_rng([root, size])
    second = _run(problem, again, rng, time.perf_counter())
    return replace(second, seconds=time.perf_counter() - t0, recheck=reason, first=first)


def recheck_reason(first: EvidenceEstimate, options: EvidenceOptions) -> str | None:
    """Why ``first`` is to be estimated again (``options.recheck``), or None: its standard
    error exceeds ``se_max`` (for AIS, one run carries the weight: degenerate, and biased
    low), or, from EP's start, it and EP differ by more than ``z`` of its standard errors
    and more than ``nats``. None also where the policy never estimates again."""
    policy, ais = options.recheck, options.estimator == "ais"
    if policy is None or not (policy.temperatures if ais else policy.runs):
        return None
    se = first.standard_error
    if not se <= policy.se_max:  # (a NaN se is unhealthy too)
        if ais:
            return f"degenerate: se {se:.2f} > {policy.se_max}"
        return f"se {se:.3g} > se_max {policy.se_max}"
    if policy.z is not None and options.start == "ep" and first.start_log_evidence is not None:
        gap = abs(first.start_log_evidence - first.log_evidence)
        if gap > policy.z * se and gap > policy.nats:
            return f"|start - estimate| = {gap:.2f} nats" + (f", {gap / se:.1f} se" if se else "")
    return None


def _run(
    problem: Prepared, options: EvidenceOptions, rng: np.random.Generator, t0: float
) -> EvidenceEstimate:
    """One estimate with ``options``' settings (its recheck aside); ``seconds`` from ``t0``."""
    p = problem
    sites = p.ep_sites if options.start == "ep" else None  # (None with C latents)
    args = (p.L, p.mean, p.y, p.likelihood)
    if options.estimator == "smc":
        run = {k: getattr(options, k) for k in OPTIONS["smc"]}
        r = smc(*args, K=p.K, sites=sites, reference=p.ep_sites, random_seed=rng, **run)
        left_out = ("log_evidence", "standard_error", "start", "schedule")
        health = {k: v for k, v in asdict(r).items() if k not in left_out}
    else:
        run = {"temperatures": options.temperatures, "runs": options.runs}
        r = ais(*args, K=p.K, sites=sites, random_seed=rng, **run)
        health = {"temperatures": r.temperatures, "runs": r.runs}
    return EvidenceEstimate(
        log_evidence=r.log_evidence,
        standard_error=r.standard_error,
        method=options.estimator,
        start=options.start,
        start_log_evidence=p.ep_log_evidence,
        seconds=time.perf_counter() - t0,
        health=health,
    )
