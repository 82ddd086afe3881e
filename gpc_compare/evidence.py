"""The gold-standard log evidence: one entry point, :func:`estimate`.

``gc.evidence.estimate(X, y, kernel=..., likelihood=...)`` estimates log p(y | X, theta) at
fixed hyperparameters by an annealed estimator (:mod:`gpc_compare.annealing`) started from
EP's Gaussian approximation at the same hyperparameters (or from the prior):

- ``method="smc"`` (``"auto"``): sequential Monte Carlo with an adaptive tempering schedule
  (Del Moral, Doucet and Jasra 2006; Zhou, Johansen and Aston 2016) and elliptical slice
  moves, several independent runs for the standard error;
- ``method="ais"``: annealed importance sampling on a fixed schedule (Neal 2001; Kuss and
  Rasmussen 2005), the second, independent estimator.

The returned :class:`EvidenceEstimate` carries the estimate, its standard error, the
method and start, and the estimator's health (steps, ESS, stuck moves). The AIS pieces
are re-exported here as they always were (``gc.evidence.ais``).
"""

from __future__ import annotations

import inspect
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ._validation import (
    OptionCheck,
    check_fraction,
    check_random_seed,
    check_Xy,
    count,
    option_checker,
    optional,
)
from .annealing import (
    AISResult,
    SMCResult,
    ais,
    ais_log_evidence,
    ais_log_evidence_from_sites,
    elliptical_slice,
    smc,
)
from .engines import ep
from .kernels import Kernel, SquaredExponential
from .likelihoods import Likelihood, get_likelihood
from .numerics import JITTER, cholesky

__all__ = [
    "AISResult",
    "EvidenceEstimate",
    "SMCResult",
    "ais",
    "ais_log_evidence",
    "ais_log_evidence_from_sites",
    "elliptical_slice",
    "estimate",
    "smc",
]

METHODS = ("auto", "smc", "ais")
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
#: :func:`estimate` and a study's ``[evidence.NAME]`` are.
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


def estimate(
    X: np.ndarray,
    y: np.ndarray,
    *,
    kernel: Kernel | None = None,
    likelihood: str | Likelihood = "probit",
    mean: float | None = None,
    method: str = "auto",
    start: str = "ep",
    random_seed: int | np.random.Generator | None = 0,
    **options: Any,
) -> EvidenceEstimate:
    """log p(y | X, theta) at the kernel's (and the mean's) values, by SMC or AIS.

    Parameters
    ----------
    X : array_like, shape (n, d)
    y : array_like, shape (n,)
        Binary labels ({0, 1}, {-1, +1} or booleans), or real targets with the Gaussian
        likelihood (whose evidence is exact: a check of the estimators).
    kernel : Kernel, optional
        Default ``SquaredExponential(1.0, 1.0)``.
    likelihood : {"probit", "logistic", "gaussian"} or Likelihood
    mean : float, optional
        Constant prior mean (None: zero).
    method : {"auto", "smc", "ais"}
        "auto" is "smc".
    start : {"ep", "prior"}
        Start the path at EP's approximation (parallel schedule, default tolerances) or at
        the prior (SMC's moves still propose about EP's approximation, tempered).
    random_seed : int or Generator, optional
    **options
        The method's options (:data:`OPTIONS`): for SMC ``particles``, ``runs``,
        ``moves``, ``sweeps``, ``cess``, ``max_steps`` (:func:`~gpc_compare.annealing.smc`);
        for AIS ``temperatures``, ``runs`` (:func:`~gpc_compare.annealing.ais`).

    Returns
    -------
    EvidenceEstimate

    Raises
    ------
    ValueError
        For a bad input, method, start or option, or a kernel matrix that is not finite.
    """
    lik = get_likelihood(likelihood)
    if lik.latent_dim != 1:
        raise ValueError("the evidence estimators take binary likelihoods or the Gaussian")
    X, y = check_Xy(X, y, regression=lik.regression)
    kernel = SquaredExponential(1.0, 1.0) if kernel is None else kernel
    if not isinstance(kernel, Kernel):
        raise ValueError(f"kernel must be a gpc_compare Kernel, got {type(kernel).__name__}")
    kernel.check_input_dim(X.shape[1])
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
    method = "smc" if method == "auto" else method
    if start not in ("ep", "prior"):
        raise ValueError(f"start must be 'ep' or 'prior', got {start!r}")
    options = check_options[method](options)
    rng = np.random.default_rng(check_random_seed(random_seed))
    m = 0.0 if mean is None else float(mean)
    t0 = time.perf_counter()
    with np.errstate(over="ignore", invalid="ignore"):
        K0 = kernel(X)
    if not np.all(np.isfinite(K0)):
        raise ValueError("the kernel matrix contains NaN or infinity: the hyperparameters are "
                         "too extreme")  # fmt: skip
    # K as the MCMC engine holds it: with the jitter its Cholesky factor adds
    L = cholesky(K0, jitter=JITTER, what="kernel matrix K")
    K = L @ L.T
    # EP's approximation: the start, or (SMC from the prior) the moves' reference
    approx = ep.infer(X, y, kernel, lik, mean, schedule="parallel")
    ep_sites, start_evidence = (approx.ttau, approx.tnu), float(approx.log_marginal_likelihood)
    sites = ep_sites if start == "ep" else None
    run = {**OPTIONS[method], **options}
    if method == "smc":
        r = smc(L, m, y, lik, K=K, sites=sites, reference=ep_sites, random_seed=rng, **run)
        left_out = ("log_evidence", "standard_error", "start", "schedule")
        health = {k: v for k, v in asdict(r).items() if k not in left_out}
    else:
        r = ais(L, m, y, lik, K=K, sites=sites, random_seed=rng, **run)
        health = {"temperatures": r.temperatures, "runs": r.runs}
    return EvidenceEstimate(
        log_evidence=r.log_evidence,
        standard_error=r.standard_error,
        method=method,
        start=start,
        start_log_evidence=start_evidence,
        seconds=time.perf_counter() - t0,
        health=health,
    )
