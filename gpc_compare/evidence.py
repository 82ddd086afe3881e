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
method and start, and the estimator's health (steps, ESS, stuck moves). Its options form
an :class:`EvidenceOptions` record, which may add a :class:`Recheck` policy (estimate
again, longer, where the first estimate is unhealthy or disagrees with EP, as a study's
evidence jobs do); :func:`prepare` sets a problem up and
:func:`gpc_compare.annealing.estimate.estimate` runs it, the path a study's jobs and the
MCMC engine's ``evidence=True`` take too. The AIS pieces are re-exported here as they
always were (``gc.evidence.ais``).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ._validation import check_random_seed, check_X, check_Xy
from .annealing import (
    AISResult,
    SMCResult,
    ais,
    ais_log_evidence,
    ais_log_evidence_from_sites,
    elliptical_slice,
    smc,
)
from .annealing import estimate as _annealing
from .annealing.estimate import (
    METHODS,
    OPTION_CHECKS,
    OPTIONS,
    EvidenceEstimate,
    EvidenceOptions,
    Prepared,
    Recheck,
    check_options,
)
from .engines import ep
from .kernels import Kernel, SquaredExponential
from .likelihoods import Likelihood, MultinomialProbit, get_likelihood
from .numerics import JITTER, cholesky

__all__ = [
    "AISResult",
    "EvidenceEstimate",
    "EvidenceOptions",
    "Prepared",
    "METHODS",
    "OPTIONS",
    "OPTION_CHECKS",
    "Recheck",
    "SMCResult",
    "ais",
    "ais_log_evidence",
    "ais_log_evidence_from_sites",
    "check_options",
    "elliptical_slice",
    "estimate",
    "prepare",
    "smc",
]


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
        likelihood (whose evidence is exact: a check of the estimators), or class indices
        0..C-1 with a multi-class likelihood ("softmax", "multinomial_probit": C latent
        GPs sharing the kernel; ``start="prior"`` only, no coordinate sweeps, and
        ``start_log_evidence`` nested EP's log Z for the multinomial probit, else None).
    kernel : Kernel, optional
        Default ``SquaredExponential(1.0, 1.0)``.
    likelihood : {"probit", "logistic", "gaussian", "softmax", "multinomial_probit"} or Likelihood
    mean : float, optional
        Constant prior mean (None: zero).
    method : {"auto", "smc", "ais"}
        "auto" is "smc".
    start : {"ep", "prior"}
        Start the path at EP's approximation (EP's default options, as gc.fit gives it) or at
        the prior (SMC's moves still propose about EP's approximation, tempered).
    random_seed : int or Generator, optional
        Seeds the estimate (and a recheck: :func:`gpc_compare.annealing.estimate.estimate`).
    **options
        The method's options (:data:`OPTIONS`): for SMC ``particles``, ``runs``,
        ``moves``, ``sweeps``, ``cess``, ``max_steps`` (:func:`~gpc_compare.annealing.smc`);
        for AIS ``temperatures``, ``runs`` (:func:`~gpc_compare.annealing.ais`); and for
        either ``recheck``, a :class:`Recheck` (or a dict of its fields; default None: the
        first estimate is final). They form an :class:`EvidenceOptions` record.

    Returns
    -------
    EvidenceEstimate

    Raises
    ------
    ValueError
        For a bad input, method, start or option, or a kernel matrix that is not finite.
    """
    record = EvidenceOptions.from_arguments(method, start, options)
    seed = check_random_seed(random_seed)
    if get_likelihood(likelihood).latent_dim != 1 and start != "prior":
        raise ValueError(
            "with a multi-class likelihood the path starts at the prior (the Gaussian "
            "start's sites are binary): pass start='prior'"
        )
    problem = prepare(X, y, kernel=kernel, likelihood=likelihood, mean=mean)
    return _annealing.estimate(problem, record, seed)


def prepare(
    X: np.ndarray,
    y: np.ndarray,
    *,
    kernel: Kernel | None = None,
    likelihood: str | Likelihood = "probit",
    mean: float | None = None,
) -> Prepared:
    """Check the problem and set it up for the estimators (:class:`Prepared`): one Cholesky
    factor of K (with the jitter the MCMC engine adds) and one EP fit (default options).

    Parameters
    ----------
    X : array_like, shape (n, d)
    y : array_like, shape (n,)
        Binary labels ({0, 1}, {-1, +1} or booleans), or real targets with the Gaussian
        likelihood.
    kernel : Kernel, optional
        Default ``SquaredExponential(1.0, 1.0)``.
    likelihood : {"probit", "logistic", "gaussian"} or Likelihood
    mean : float, optional
        Constant prior mean (None: zero).

    Returns
    -------
    Prepared
        The set-up, for :func:`gpc_compare.annealing.estimate.estimate` (one or several
        estimates).

    Raises
    ------
    ValueError
        For a bad input, or a kernel matrix that is not finite.
    """
    lik = get_likelihood(likelihood)
    multiclass = lik.latent_dim != 1
    if multiclass:
        if mean is not None:
            raise ValueError(f"the {lik.name} likelihood takes no prior mean (mean=None)")
        X = check_X(X)
        y, C = _class_indices(y, lik)
        if y.size != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y.size} labels")
    else:
        X, y = check_Xy(X, y, regression=lik.regression)
    kernel = SquaredExponential(1.0, 1.0) if kernel is None else kernel
    if not isinstance(kernel, Kernel):
        raise ValueError(f"kernel must be a gpc_compare Kernel, got {type(kernel).__name__}")
    kernel.check_input_dim(X.shape[1])
    t0 = time.perf_counter()
    with np.errstate(over="ignore", invalid="ignore"):
        K0 = kernel(X)
    if not np.all(np.isfinite(K0)):
        extreme = "the hyperparameters are too extreme"
        raise ValueError(f"the kernel matrix contains NaN or infinity: {extreme}")
    # K as the MCMC engine holds it: with the jitter its Cholesky factor adds
    L = cholesky(K0, jitter=JITTER, what="kernel matrix K")
    if multiclass:  # the C n latents class-major, prior I_C (x) K; nested EP's log Z recorded
        start = None
        if isinstance(lik, MultinomialProbit) and np.unique(y).size == C:  # (EP's labels)
            start = ep.infer(X, y, kernel, lik).log_marginal_likelihood
        big = np.kron(np.eye(C), L)
        return Prepared.multiclass(big, y, lik, start, time.perf_counter() - t0)
    approx = ep.infer(X, y, kernel, lik, mean)
    m = 0.0 if mean is None else float(mean)
    return Prepared.from_ep(L, m, y, lik, approx, time.perf_counter() - t0)


def _class_indices(y: object, likelihood: Likelihood) -> tuple[np.ndarray, int]:
    """Class indices 0..C-1 (n,) and C: the likelihood's ``n_classes`` where it is set
    (a class need not occur: p(y | X) is defined all the same), else the largest index + 1."""
    y = np.asarray(y)
    codes = y.astype(int) if y.ndim == 1 and np.issubdtype(y.dtype, np.number) else None
    if codes is None or y.size == 0 or not np.array_equal(codes, y) or codes.min() < 0:
        raise ValueError(f"the {likelihood.name} likelihood takes y as class indices 0..C-1 (1-D)")
    C = likelihood.latent_dim or max(int(codes.max()) + 1, 2)
    if codes.max() >= C:
        raise ValueError(f"y has class index {codes.max()} but the likelihood has {C} classes")
    return codes, C
