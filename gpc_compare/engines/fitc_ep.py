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
from typing import Any, ClassVar

import numpy as np

from .._validation import any_value, check_fraction, check_positive, count, optional
from ..posterior import Convergence, FITCPrior, FITCSites, SparsePosterior
from ._engine import Engine, Problem, engine_options, option
from ._ep_sites import ep_log_evidence
from ._inducing import SparseOptions, choose_inducing
from ._sites import check_site_warm_start
from .ep import _iterations_in_order, _Run

__all__ = ["ENGINE", "FITCEPEngine", "FITCEPOptions", "FITCEPPosterior", "infer"]


@engine_options
class FITCEPOptions(SparseOptions):
    """Options of the FITC-EP engine (``gc.fit(method="fitc_ep", ...)``): the inducing
    inputs' (:class:`._inducing.SparseOptions`), then EP's."""

    #: Old names, accepted for one release with a DeprecationWarning.
    renamed: ClassVar[dict[str, str]] = {"max_sweeps": "max_iter", "min_sweeps": "min_iter"}

    damping: float | None = option(
        None,
        optional(check_fraction),
        "Fixed damping in (0, 1] of the parallel updates; None: adaptive, as dense EP's "
        "parallel schedule (halved whenever a sweep moves the sites more than the last).",
    )
    tol: float = option(
        1e-10,
        check_positive,
        "Converged when a sweep changes the log evidence by less than tol (or its rounding "
        "noise) ...",
    )
    site_tol: float = option(
        1e-6,
        check_positive,
        "... and the undamped update would move no site parameter by more than site_tol.",
    )
    min_iter: int = option(
        2, count(1), "Fewest sweeps before convergence is declared (formerly min_sweeps)."
    )
    max_iter: int = option(
        500,
        count(1),
        "Most sweeps; not converging by then warns and is recorded (formerly max_sweeps).",
    )
    warm_start: Any = option(
        None,
        any_value,
        "A previous FITC-EP posterior, or its sites (ttau, tnu) to start from "
        "(previous.warm_start); used if their evidence is above that of no sites.",
    )

    def check_together(self) -> None:
        _iterations_in_order(self)


_SPARSE = frozenset({"evidence", "evidence_gradient", "sparse"})


class FITCEPEngine(Engine):
    """Parallel EP on the FITC prior (Naish-Guzman and Holden 2008)."""

    name = "fitc_ep"
    label = "FITC-EP"
    summary = "EP on the sparse FITC prior, M inducing inputs (Naish-Guzman and Holden 2008)"
    Options = FITCEPOptions
    likelihoods = {"probit": _SPARSE, "logistic": _SPARSE, "gaussian": _SPARSE}
    dense_matrices = None  # (no n x n matrix: O(n M) memory)
    quick_options = {"inducing": 8}

    def infer(self, problem: Problem, options: FITCEPOptions) -> FITCEPPosterior:
        """Parallel EP on the FITC prior at fixed hyperparameters and inducing inputs (see
        :class:`Engine`)."""
        return _infer(problem, options)


#: The engine (registered by :mod:`gpc_compare.engines`).
ENGINE = FITCEPEngine()


def infer(X, y, kernel, likelihood, mean=None, **options) -> FITCEPPosterior:
    """The FITC-EP engine on checked arrays, options as keywords
    (:class:`FITCEPOptions`): ``ENGINE.run``."""
    return ENGINE.run(X, y, kernel, likelihood, mean, **options)


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


def _infer(problem: Problem, options: FITCEPOptions) -> FITCEPPosterior:
    """Parallel EP on the FITC prior (:class:`.ep._Run` with FITC's states)."""
    X, y, lik, mean = problem.X, problem.y, problem.likelihood, problem.mean
    Z = choose_inducing(X, options.inducing, options.random_seed)
    prior = FITCPrior(problem.kernel, X, Z, options.jitter)
    n = problem.n
    m = 0.0 if mean is None else float(mean)

    def make_state(ttau: np.ndarray, tnu: np.ndarray) -> _FITCState:
        return _FITCState(prior, y, lik, ttau, tnu, m)

    state = make_state(np.zeros(n), np.zeros(n))
    if options.warm_start is not None:
        warm = make_state(*check_site_warm_start(options.warm_start, n, "(ttau, tnu)"))
        if warm.log_marginal_likelihood > state.log_marginal_likelihood:
            state = warm
    adaptive = options.damping is None
    run = _Run(None, y, lik, m, options.tol, options.site_tol, options.min_iter, None, make_state)
    out = run.iterate(
        state, "parallel", options.damping or 1.0, adaptive, options.max_iter, accelerate=True
    )
    state = out.state
    prior.drop_scratch()  # (the posterior keeps V and Z, not the work buffer)
    if not np.isfinite(state.log_marginal_likelihood):
        raise FloatingPointError(
            "FITC-EP produced a non-finite evidence (a cavity lost positive precision); "
            "try a fixed damping below 1, e.g. damping=0.5"
        )
    message = out.message("parallel", options.tol, options.site_tol)
    if not out.converged:
        warnings.warn(f"FITC-EP {message}", RuntimeWarning, stacklevel=2)
    return FITCEPPosterior(
        X,
        y,
        problem.kernel,
        lik,
        mean,
        prior=prior,
        sites=state.sites,
        alpha=state.alpha,
        log_marginal_likelihood=state.log_marginal_likelihood,
        convergence=Convergence(out.converged, out.sweeps, float(out.change), message, "parallel"),
        optimize_inducing=options.optimize_inducing,
        state=state,
    )
