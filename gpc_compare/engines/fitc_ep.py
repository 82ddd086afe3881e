"""Expectation propagation on the sparse FITC prior (Naish-Guzman and Holden 2008).

EP (R&W section 3.6) with the prior covariance K replaced by FITC's
K~ = Q + diag(K - Q) on M inducing inputs, as GPML's ``infEP`` with ``apxSparse``. The
sites are updated in parallel from one posterior (each sweep one M x M Cholesky and
O(n M^2) products: :class:`~gpc_compare.posterior.FITCSites`), with the dense engine's
adaptive damping and Anderson extrapolation (:class:`.ep._Run`); a sequential schedule's
rank-one updates would cost O(M^2) a site, the same per sweep, and are not needed for
these log-concave likelihoods. The evidence is R&W eq. 3.65 in the stable form of Alg.
3.5, with log|B| from the determinant lemma; its gradient at the fixed point is that of
a Gaussian integral at fixed sites (R&W eq. 5.27) with dK~ in place of dK, covering the
kernel's hyperparameters, the prior mean and (``optimize_inducing=True``) the inducing
inputs.

Naming as in :mod:`.ep`: ``ttau, tnu`` the sites, ``tau_cav, nu_cav`` the cavities,
``p = tnu - ttau m`` the sites of g = f - m.
"""

from __future__ import annotations

import warnings
from functools import cached_property

import numpy as np

from .._validation import any_value, check_fraction, check_positive, count, option_checker, optional
from ..kernels import Kernel
from ..likelihoods import Likelihood
from ..posterior import Convergence, FITCPrior, FITCSites, SparsePosterior
from ._ep_sites import ep_log_evidence
from ._inducing import SPARSE_OPTION_CHECKS, SPARSE_OPTIONS, choose_inducing
from ._sites import check_site_warm_start
from .ep import _Run

__all__ = ["FITCEPPosterior", "check_options", "infer"]

#: How this engine is named in messages.
LABEL = "FITC-EP"
#: Options ``gc.fit(method="fitc_ep", ...)`` accepts, with their defaults.
OPTIONS = {
    **SPARSE_OPTIONS,
    "damping": None,
    "tol": 1e-10,
    "site_tol": 1e-6,
    "min_sweeps": 2,
    "max_sweeps": 500,
    "warm_start": None,
}
#: How each option is checked (:func:`check_options`).
OPTION_CHECKS = {
    **SPARSE_OPTION_CHECKS,
    "damping": optional(check_fraction),
    "tol": check_positive,
    "site_tol": check_positive,
    "min_sweeps": count(1),
    "max_sweeps": count(1),
    "warm_start": any_value,
}
#: What this engine can do (see :data:`gpc_compare.engines.CAPABILITY_NAMES`).
CAPABILITIES = frozenset({"evidence", "evidence_gradient", "sparse"})
#: The likelihoods it takes (by name).
LIKELIHOODS = frozenset({"probit", "logistic", "gaussian"})


def _sweeps_in_order(options: dict) -> None:
    if options["min_sweeps"] > options["max_sweeps"]:
        raise ValueError(f"min_sweeps ({options['min_sweeps']}) exceeds max_sweeps "
                         f"({options['max_sweeps']})")  # fmt: skip


#: The options checked before any fit (``warm_start``'s shape is :func:`infer`'s).
check_options = option_checker(OPTION_CHECKS, "method 'fitc_ep'", OPTIONS, _sweeps_in_order)


class _FITCState:
    """The approximation implied by a set of sites on the FITC prior: what
    :class:`.ep._Run` reads (cavities, tilted moments, the evidence), as
    :class:`.ep._SiteState` gives it for a dense prior."""

    def __init__(self, prior: FITCPrior, y, lik, ttau, tnu, m) -> None:
        self.ttau, self.tnu = ttau, tnu
        self.sites = FITCSites(prior, ttau)
        self.p = tnu - ttau * m
        self.Sigma_p = self.sites.mean(self.p)
        self.mu = m + self.Sigma_p
        self.dSigma = self.sites.diag_sigma()
        Kp = prior @ self.p
        # rounding noise of the evidence, as the dense state's (p^T Sigma p's terms)
        self.noise = 4.0 * np.finfo(float).eps * float(np.abs(self.p) @ np.abs(Kp))
        self.alpha = self.p - self.sites.R(Kp)  # (K~ + T~^-1)^-1 (mu~ - m), R&W Alg. 3.6
        self.tau_cav = 1.0 / self.dSigma - ttau
        self.nu_cav = self.mu / self.dSigma - tnu
        self.log_z = np.full(ttau.size, -np.inf)
        self.tilted_mean = self.tilted_var = None
        if np.all(self.tau_cav > 0):
            self.log_z, self.tilted_mean, self.tilted_var = lik.tilted_moments(
                y, self.nu_cav / self.tau_cav, 1.0 / self.tau_cav
            )
        self.log_marginal_likelihood = ep_log_evidence(self, self.sites.log_det_B, m)


class FITCEPPosterior(SparsePosterior):
    """FITC-EP: N(f | mu, (K~^-1 + T~)^-1) on the FITC prior (the Posterior contract),
    plus the sites ``ttau``, ``tnu`` and the cavities ``tau_cav``, ``nu_cav``."""

    method = "fitc_ep"

    def __init__(self, *args, state: _FITCState, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._state = state
        self.ttau, self.tnu = state.ttau, state.tnu
        self.tau_cav, self.nu_cav = state.tau_cav, state.nu_cav

    @property
    def latent_mean(self) -> np.ndarray:
        return self._state.mu.copy()  # (m + Sigma p, as the last sweep computed it)

    @property
    def latent_var(self) -> np.ndarray:
        return self._state.dSigma.copy()

    @property
    def warm_start(self) -> tuple[np.ndarray, np.ndarray]:
        """The sites (ttau, tnu): pass as ``warm_start`` to start a nearby fit here."""
        return self.ttau.copy(), self.tnu.copy()

    @cached_property
    def log_marginal_likelihood_gradient(self) -> np.ndarray:
        """1/2 alpha^T dK~ alpha - 1/2 tr(R dK~) (R&W eq. 5.27 with K~), and sum(alpha)
        for the prior mean: the sites are stationary at EP's fixed point."""
        return self._gradient([(self.alpha, 0.5 * self.alpha)])


def infer(
    X: np.ndarray,
    y: np.ndarray,
    kernel: Kernel,
    likelihood: Likelihood,
    mean: float | None = None,
    *,
    inducing: int | np.ndarray | None = OPTIONS["inducing"],
    optimize_inducing: bool = OPTIONS["optimize_inducing"],
    jitter: float = OPTIONS["jitter"],
    random_seed: int | np.random.Generator | None = OPTIONS["random_seed"],
    damping: float | None = OPTIONS["damping"],
    tol: float = OPTIONS["tol"],
    site_tol: float = OPTIONS["site_tol"],
    min_sweeps: int = OPTIONS["min_sweeps"],
    max_sweeps: int = OPTIONS["max_sweeps"],
    warm_start: tuple[np.ndarray, np.ndarray] | None = None,
) -> FITCEPPosterior:
    """Run parallel EP on the FITC prior at fixed hyperparameters and inducing inputs.

    Parameters
    ----------
    X, y, kernel, likelihood, mean
        As for :func:`gpc_compare.engines.ep.infer`.
    inducing, optimize_inducing, jitter, random_seed
        As for :func:`gpc_compare.engines.fitc_laplace.infer`.
    damping : float in (0, 1], optional
        Fixed damping of the parallel updates; None (default): adaptive, as dense EP's
        parallel schedule (halved whenever a sweep moves the sites more than the last).
    tol, site_tol, min_sweeps, max_sweeps
        As for dense EP.
    warm_start : (ttau, tnu), optional
        Sites to start from (``previous.warm_start``).
    """
    checked = check_options(
        {"inducing": inducing, "optimize_inducing": optimize_inducing, "jitter": jitter,
         "damping": damping, "tol": tol, "site_tol": site_tol, "min_sweeps": min_sweeps,
         "max_sweeps": max_sweeps}
    )  # fmt: skip
    Z = choose_inducing(X, checked["inducing"], random_seed)
    prior = FITCPrior(kernel, X, Z, checked["jitter"])
    n = X.shape[0]
    m = 0.0 if mean is None else float(mean)

    def make_state(ttau: np.ndarray, tnu: np.ndarray) -> _FITCState:
        return _FITCState(prior, y, likelihood, ttau, tnu, m)

    state = make_state(np.zeros(n), np.zeros(n))
    if warm_start is not None:
        ttau, tnu = check_site_warm_start(warm_start, n, "(ttau, tnu)")
        warm = make_state(ttau, tnu)
        if warm.log_marginal_likelihood > state.log_marginal_likelihood:
            state = warm
    adaptive = checked["damping"] is None
    run = _Run(None, y, likelihood, m, checked["tol"], checked["site_tol"],
               checked["min_sweeps"], None, make_state=make_state)  # fmt: skip
    out = run.iterate(state, "parallel", checked["damping"] or 1.0, adaptive,
                      checked["max_sweeps"], accelerate=True)  # fmt: skip
    state, sweeps = out.state, out.sweeps
    prior.drop_scratch()  # (the posterior keeps V and Z, not the work buffer)
    if not np.isfinite(state.log_marginal_likelihood):
        raise FloatingPointError(
            "FITC-EP produced a non-finite evidence (a cavity lost positive precision); "
            "try a fixed damping below 1, e.g. damping=0.5"
        )
    message = out.message("parallel", checked["tol"], checked["site_tol"])
    if not out.converged:
        warnings.warn(f"FITC-EP {message}", RuntimeWarning, stacklevel=2)
    return FITCEPPosterior(
        X,
        y,
        kernel,
        likelihood,
        mean,
        prior=prior,
        sites=state.sites,
        alpha=state.alpha,
        log_marginal_likelihood=state.log_marginal_likelihood,
        convergence=Convergence(out.converged, sweeps, float(out.change), message, "parallel"),
        optimize_inducing=checked["optimize_inducing"],
        state=state,
    )
