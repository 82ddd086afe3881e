"""Expectation propagation for binary GP classification (R&W section 3.6, Alg. 3.5, 3.6).

Each likelihood term is replaced by an unnormalised Gaussian site in canonical form,
t~_i(f_i) = exp(nu~_i f_i - tau~_i f_i^2 / 2); the posterior is
N(f | mu, Sigma), Sigma = (K^-1 + T~)^-1, mu = Sigma (K^-1 m + nu~). A site update removes
the site from the marginal to form the cavity (R&W eq. 3.56)

    tau_-i = 1/Sigma_ii - tau~_i,       nu_-i = mu_i/Sigma_ii - nu~_i,

matches the moments of the tilted distribution p(y_i | f_i) N(f_i | nu_-i/tau_-i, 1/tau_-i)
(closed form for probit, quadrature otherwise) and puts back the site that reproduces
them (R&W eq. 3.59): tau~_i = 1/s^2 - tau_-i, nu~_i = mu^/s^2 - nu_-i.

Naming (R&W): ``ttau, tnu`` site precisions and precision-means; ``tau_cav, nu_cav`` the
cavities; ``sW = sqrt(ttau)``; ``L = chol(I + sW K sW)``; ``p = nu~ - tau~ m`` and
``q = nu_- - tau_- m`` the sites and cavities of g = f - m, which has a zero-mean prior.

The leave-one-out predictive log-likelihood (Opper and Winther 2000; Vehtari et al. 2016,
JMLR 17(103)) is the sum of the log
tilted normalisers, sum_i log Phi(y_i mu_-i / sqrt(1 + s^2_-i)) for probit. Its gradient
comes in two forms (:meth:`EPPosterior.loo_log_predictive_gradient`): with the sites held
fixed (following Vehtari et al. 2016), and the total derivative, in which the sites move with the
hyperparameters, computed through the EP fixed point by the implicit function theorem.
"""

from __future__ import annotations

import warnings
from functools import cached_property
from typing import Any, ClassVar, NamedTuple

import numpy as np
import scipy.linalg

from .._validation import (
    any_value,
    check_fraction,
    check_kernel_matrix,
    check_positive,
    check_random_seed,
    choice,
    count,
    optional,
)
from ..likelihoods import MultinomialProbit, Probit
from ..numerics import (
    add_outer,
    cho_solve,
    chol_B,
    probit_ratio,
    solve_lower,
)
from ..posterior import Convergence, GaussianPosterior
from ..posterior.gaussian import marginal_variances
from ._engine import Engine, EngineOptions, Problem, engine_options, option
from ._ep_sites import ep_log_evidence, probit_site_jacobian, sequential_sweep, site_update
from ._sites import Anderson, check_site_warm_start
from .ep_multiclass import infer_multiclass

__all__ = ["ENGINE", "EPEngine", "EPOptions", "EPPosterior", "infer"]


@engine_options
class EPOptions(EngineOptions):
    """Options of the EP engine (``gc.fit(method="ep", ...)``)."""

    #: Old names, accepted for one release with a DeprecationWarning.
    renamed: ClassVar[dict[str, str]] = {"max_sweeps": "max_iter", "min_sweeps": "min_iter"}

    schedule: str = option(
        "auto",
        choice("auto", "sequential", "parallel"),
        "'sequential': sites updated one at a time in random order with rank-one updates of "
        "Sigma, the posterior rebuilt from a fresh Cholesky after each sweep (R&W Alg. 3.5). "
        "'parallel': every site from the same posterior, one Cholesky a sweep. 'auto': "
        "parallel, with adaptive damping, where it converges; where it does not (a sweep "
        "loses a cavity's positive precision, the damping falls below AUTO_MIN_DAMPING, or "
        "AUTO_PARALLEL_SWEEPS sweeps pass), sequential from the last finite state. Which ran "
        "is on convergence.schedule and in its message.",
    )
    damping: float | None = option(
        None,
        optional(check_fraction),
        "In (0, 1]: new sites are (1 - damping) old + damping new, in natural parameters. "
        "None: 1 for sequential; for parallel and 'auto', adaptive: it starts at 1 and is "
        "halved (down to 0.05) whenever a sweep moves the sites more than the sweep before, "
        "the sign of the oscillation parallel EP is prone to.",
    )
    tol: float = option(
        1e-10,
        check_positive,
        "Converged when a sweep changes the log evidence by less than tol (or than its "
        "rounding noise, where a large prior mean or signal variance makes that larger) ...",
    )
    site_tol: float = option(
        1e-6,
        check_positive,
        "... and the undamped update would move no site parameter by more than site_tol. The "
        "evidence is stationary in the sites, so a tolerance on it alone leaves the sites (and "
        "the predictions and leave-one-out quantities, which are not stationary) converged "
        "only to about sqrt(tol); the site tolerance closes that gap.",
    )
    min_iter: int = option(
        2, count(1), "Fewest sweeps before convergence is declared (formerly min_sweeps)."
    )
    max_iter: int = option(
        200,
        count(1),
        "Most sweeps; not converging by then warns and is recorded (formerly max_sweeps).",
    )
    warm_start: Any = option(
        None,
        any_value,
        "A previous EP posterior, or its site parameters (ttau, tnu) to start from (e.g. "
        "previous.warm_start); used if their evidence is above that of no sites.",
    )
    random_seed: Any = option(
        None,
        check_random_seed,
        "Seeds the sequential schedule's random order; None uses seed 0, so repeated fits "
        "agree exactly rather than to within the tolerances.",
    )

    def check_together(self) -> None:
        _iterations_in_order(self)


def _iterations_in_order(options: EngineOptions) -> None:
    """min_iter <= max_iter (EP's and FITC-EP's options), or a ValueError saying so."""
    if options.min_iter > options.max_iter:
        raise ValueError(f"min_iter ({options.min_iter}) exceeds max_iter ({options.max_iter})")


_EVIDENCE = frozenset({"evidence", "evidence_gradient"})


class EPEngine(Engine):
    """Expectation propagation: Gaussian sites matching the tilted moments (R&W section
    3.6, Alg. 3.5 and 3.6)."""

    name = "ep"
    label = "EP"
    summary = "Gaussian sites matching the tilted moments (R&W 3.6)"
    #: measured peaks (tests/engines/test_memory.py; n = 200 to 600): a fit 6.1-6.4 (K,
    #: Sigma, L and the sweep's temporaries), an optimisation 11.2-11.6
    dense_matrices = (7.0, 12.0)
    Options = EPOptions
    # the leave-one-out predictive's gradient is implemented for probit (Vehtari et al. 2016)
    likelihoods = {
        "probit": _EVIDENCE | {"loo"},
        "logistic": _EVIDENCE,
        "gaussian": _EVIDENCE,
        # nested EP, C classes (Riihimaki et al. 2013): engines/ep_multiclass.py
        "multinomial_probit": _EVIDENCE | {"multiclass"},
    }

    def infer(self, problem: Problem, options: EPOptions) -> EPPosterior:
        """EP at fixed hyperparameters (see :class:`Engine`); with the multinomial probit,
        nested EP over C classes (:mod:`gpc_compare.engines.ep_multiclass`)."""
        if isinstance(problem.likelihood, MultinomialProbit):
            return infer_multiclass(problem, options)
        return _infer(problem, options)


#: The engine (registered by :mod:`gpc_compare.engines`).
ENGINE = EPEngine()


def infer(X, y, kernel, likelihood, mean=None, **options) -> EPPosterior:
    """The EP engine on checked arrays, options as keywords (:class:`EPOptions`):
    ``ENGINE.run``."""
    return ENGINE.run(X, y, kernel, likelihood, mean, **options)


#: "auto": parallel sweeps at most, before falling back to sequential ...
AUTO_PARALLEL_SWEEPS = 60
#: ... or once adaptive damping has been halved below this (persistent oscillation).
AUTO_MIN_DAMPING = 0.2
#: Anderson's memory in the "auto" schedule's parallel part (:class:`._sites.Anderson`).
ANDERSON_MEMORY = 4


class _SiteState:
    """The Gaussian approximation implied by a set of sites (R&W Alg. 3.5 lines 10-13).

    Built from scratch with one Cholesky of B = I + sW K sW: diag(Sigma), mu, the
    cavities and the log evidence. V = L^-1 sW K (for the whole of Sigma) is computed
    only when asked for.
    """

    def __init__(self, K, y, lik, ttau, tnu, m):
        n = K.shape[0]
        self.K = K
        self.ttau, self.tnu = ttau, tnu
        self.sW = np.sqrt(ttau)
        # with no site information yet B = I: nothing to factorise
        self.L = chol_B(K, self.sW) if np.any(ttau) else np.eye(n)
        self.dSigma = self._diag_sigma()
        self.p = tnu - ttau * m  # sites of g = f - m
        Kp = K @ self.p
        # Sigma p = K p - K sW B^-1 sW K p  (O(n^2) given L)
        self.Sigma_p = Kp - K @ (self.sW * cho_solve(self.L, self.sW * Kp))
        self.mu = m + self.Sigma_p  # mu = Sigma (K^-1 m + nu~) = m + Sigma p
        # rounding noise of the evidence: p^T Sigma p is a difference of terms of size
        # |p|^T |K p|, which a large prior mean or signal variance makes huge
        self.noise = 4.0 * np.finfo(float).eps * float(np.abs(self.p) @ np.abs(Kp))
        self.tau_cav = 1.0 / self.dSigma - ttau
        self.nu_cav = self.mu / self.dSigma - tnu
        self.log_z = np.full(n, -np.inf)
        self.tilted_mean = self.tilted_var = None
        if np.all(self.tau_cav > 0):
            self.log_z, self.tilted_mean, self.tilted_var = lik.tilted_moments(
                y, self.nu_cav / self.tau_cav, 1.0 / self.tau_cav
            )
        self.log_marginal_likelihood = ep_log_evidence(
            self, 2.0 * float(np.log(np.diag(self.L)).sum()), m
        )

    def _diag_sigma(self) -> np.ndarray:
        """diag(Sigma) from a triangular inverse (:func:`marginal_variances`), which is kept
        (``Linv``) for the gradient's B^-1."""
        d, self.Linv = marginal_variances(self.K, self.ttau, self.sW, self.L, lambda: self.V)
        return d

    @cached_property
    def V(self) -> np.ndarray:
        """V = L^-1 sW K, so that Sigma = K - V^T V."""
        return solve_lower(self.L, self.sW[:, None] * self.K)

    def alpha(self, K):
        """alpha = (K + T~^-1)^-1 (mu~ - m) = p - sW B^-1 sW K p (R&W Alg. 3.6 line 5)."""
        return self.p - self.sW * cho_solve(self.L, self.sW * (K @ self.p))


class EPPosterior(GaussianPosterior):
    """The EP approximation N(f | mu, (K^-1 + T~)^-1): the Posterior contract, plus
    the site parameters ``ttau``, ``tnu``, the cavities ``tau_cav``, ``nu_cav``, and the
    leave-one-out predictive log-likelihood with its gradients."""

    method = "ep"

    def __init__(self, *args, state: _SiteState, **kwargs):
        super().__init__(*args, **kwargs)
        self._state = state
        self.ttau, self.tnu = state.ttau, state.tnu
        self.tau_cav, self.nu_cav = state.tau_cav, state.nu_cav

    @property
    def latent_mean(self) -> np.ndarray:
        return self._state.mu

    @cached_property
    def latent_var(self) -> np.ndarray:
        return self._state.dSigma.copy()

    @cached_property
    def _R(self) -> np.ndarray:
        """R = sW B^-1 sW, B^-1 = L^-T L^-1 from the triangular inverse the final sweep's
        marginal variances computed (one ``dlauum``, not a ``dpotri``)."""
        if self._state.Linv is None:
            return super()._R
        return self._R_from_triangular_inverse(self._state.Linv)

    @property
    def warm_start(self) -> tuple[np.ndarray, np.ndarray]:
        """(ttau, tnu): pass as ``warm_start`` to start a nearby fit from these sites."""
        return self.ttau.copy(), self.tnu.copy()

    @cached_property
    def log_marginal_likelihood_gradient(self) -> np.ndarray:
        """Gradient of the EP evidence (R&W eq. 5.27): at the fixed point the sites' own
        dependence on theta contributes nothing, so
        d log Z / d theta_j = 1/2 alpha^T dK alpha - 1/2 tr(R dK), R = sW B^-1 sW,
        and d log Z / d m = sum(alpha) (:meth:`GaussianPosterior._stationary_gradient`)."""
        return self._stationary_gradient()

    def record(self) -> dict[str, Any]:
        """:meth:`Posterior.record`, plus ``loo_log_predictive``."""
        return {**super().record(), "loo_log_predictive": self.loo_log_predictive}

    # --------------------------------------------------- leave-one-out predictive
    @property
    def loo_log_predictive(self) -> float:
        """sum_i log p(y_i | cavity_i) = sum_i log Phi(y_i mu_-i / sqrt(1 + s2_-i)) for
        probit (Opper and Winther 2000; Vehtari et al. 2016): EP's leave-one-out predictive
        log-likelihood (the sum of :attr:`loo_log_predictive_pointwise`)."""
        return float(self._state.log_z.sum())

    @property
    def loo_log_predictive_pointwise(self) -> np.ndarray:
        """log p(y_i | cavity_i) for each case, shape (n,): the log normalisers of the
        tilted distributions at EP's fixed point (``gc.loo(post, "cavity")`` reads them)."""
        return self._state.log_z.copy()

    def loo_log_predictive_gradient(self, total: bool = False) -> np.ndarray:
        """Gradient of :attr:`loo_log_predictive`, in the order of ``hyperparameter_names``.

        Parameters
        ----------
        total : bool
            False: the sites held at their fixed point (Vehtari et al. 2016, JMLR 17(103)).
            True: the true derivative, the sites re-converging as the hyperparameters
            move, by the implicit function theorem at the EP fixed point.
        """
        if not isinstance(self.likelihood, Probit):
            raise NotImplementedError(
                "the leave-one-out gradient is implemented for the probit likelihood "
                f"(Vehtari et al. 2016), not for {self.likelihood.name}"
            )
        return self._loo_gradient(total)

    @cached_property
    def _Sigma(self) -> np.ndarray:
        return self.latent_cov

    def _loo_gradient(self, total: bool) -> np.ndarray:
        y, n = self.y, self.y.size
        tau_c = self.tau_cav
        mu_c, v_c = self.nu_cav / tau_c, 1.0 / tau_c  # cavity moments (R&W eq. 3.56)
        s = np.sqrt(1.0 + v_c)
        z = y * mu_c / s
        r, _, _ = probit_ratio(z)
        # the LOO term through (mu_c, v_c): J_i = log Phi(z), z = y mu_c / sqrt(1 + v_c)
        dJ_dmu = y * r / s
        dJ_dv = -r * z / (2.0 * s**2)
        # ... and through the canonical cavity: mu_c = nu/tau, v_c = 1/tau
        g_tau = -dJ_dmu * mu_c / tau_c - dJ_dv / tau_c**2
        g_nu = dJ_dmu / tau_c
        if total:
            g_tau, g_nu = self._adjoint(g_tau, g_nu)
        # d cavity / d theta at fixed sites:
        # d tau_- = -dSigma_ii / Sigma_ii^2, d nu_- = dmu_i / Sigma_ii - mu_i dSigma_ii / Sigma_ii^2
        dS = self._state.dSigma
        mu = self._state.mu
        a = -g_tau / dS**2 - g_nu * mu / dS**2  # coefficient of dSigma_ii
        b = g_nu / dS  # coefficient of dmu_i
        # dSigma = A dK A^T, dmu = A dK A^T p (+ A 1 dm), A = Sigma K^-1 = I - Sigma T~
        A = np.eye(n) - self._Sigma * self.ttau[None, :]
        M = A.T @ (a[:, None] * A)
        u, v = A.T @ b, A.T @ self._state.p
        add_outer(M, 0.5, u, v)  # u^T dK v, dK symmetric
        add_outer(M, 0.5, v, u)
        grads = list(self.kernel.gradient_terms(self.X, M, K=self.K)[0])
        if self.mean is not None:
            grads.append(float(b @ A.sum(axis=1)))
        return np.asarray(grads, dtype=float)

    def _adjoint(self, g_tau: np.ndarray, g_nu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """lambda = (I - C_s D)^-T g: the sensitivity of the objective to the cavities
        once the sites re-converge (d cav / d theta = (I - C_s D)^-1 C_theta)."""
        n = self.y.size
        Sigma = self._Sigma
        dS = np.diag(Sigma)
        mu = self._state.mu
        D_tt_tau, D_tt_nu, D_tn_tau, D_tn_nu = probit_site_jacobian(
            self.y, self.tau_cav, self.nu_cav
        )
        # C_s: d(tau_-, nu_-) / d(ttau, tnu), from dSigma_ii/dttau_j = -Sigma_ij^2,
        # dmu_i/dttau_j = -Sigma_ij mu_j, dmu_i/dtnu_j = Sigma_ij
        S2 = Sigma**2
        I = np.eye(n)
        Ctau_tt = S2 / dS[:, None] ** 2 - I
        Cnu_tt = -Sigma * mu[None, :] / dS[:, None] + mu[:, None] * S2 / dS[:, None] ** 2
        Cnu_tn = Sigma / dS[:, None] - I
        # C_s D in blocks [[tau<-tau, tau<-nu], [nu<-tau, nu<-nu]] (Ctau_tn = 0)
        CD = np.block(
            [
                [Ctau_tt * D_tt_tau[None, :], Ctau_tt * D_tt_nu[None, :]],
                [
                    Cnu_tt * D_tt_tau[None, :] + Cnu_tn * D_tn_tau[None, :],
                    Cnu_tt * D_tt_nu[None, :] + Cnu_tn * D_tn_nu[None, :],
                ],
            ]
        )
        lam = scipy.linalg.solve((np.eye(2 * n) - CD).T, np.concatenate([g_tau, g_nu]))
        return lam[:n], lam[n:]


def _infer(problem: Problem, options: EPOptions) -> EPPosterior:
    """EP at fixed hyperparameters: from the start (:func:`_start`), sweeps by the
    options' schedule (:func:`_sweep`) until converged, then the posterior."""
    m = 0.0 if problem.mean is None else float(problem.mean)
    K = check_kernel_matrix(problem.kernel, problem.X)
    rng = np.random.default_rng(0 if options.random_seed is None else options.random_seed)
    state = _start(problem, K, m, options.warm_start)
    run = _Run(
        K, problem.y, problem.likelihood, m, options.tol, options.site_tol, options.min_iter, rng
    )
    out, ran = _sweep(run, state, options)
    return _posterior(problem, K, out, ran, options)


def _start(problem: Problem, K: np.ndarray, m: float, warm_start: Any) -> _SiteState:
    """The state the sweeps start from: no sites (q = the prior), or the warm start's sites
    (ttau, tnu) where their evidence is above the prior's."""
    n, y, lik = problem.n, problem.y, problem.likelihood
    zero = _SiteState(K, y, lik, np.zeros(n), np.zeros(n), m)
    if warm_start is None:
        return zero
    ttau, tnu = check_site_warm_start(warm_start, n, "(ttau, tnu)")
    state = _SiteState(K, y, lik, ttau, tnu, m)
    return state if zero.log_marginal_likelihood < state.log_marginal_likelihood else zero


def _sweep(run: _Run, state: _SiteState, options: EPOptions) -> tuple[_Outcome, str]:
    """Sweeps of the options' schedule from ``state``: where they ended, and which
    schedule(s) ran (for ``Convergence.schedule``)."""
    schedule, max_iter = options.schedule, options.max_iter
    adaptive = options.damping is None and schedule in ("parallel", "auto")
    damping = 1.0 if options.damping is None else options.damping
    if schedule != "auto":
        return run.iterate(state, schedule, damping, adaptive, max_iter), schedule
    # parallel first (one factorisation a sweep); sequential from the last finite state if
    # it oscillates, loses a cavity, or exceeds its budget of sweeps
    budget = min(max_iter, AUTO_PARALLEL_SWEEPS)
    out = run.iterate(
        state, "parallel", damping, adaptive, budget, stop_on_oscillation=True, accelerate=True
    )
    if out.converged or out.sweeps >= max_iter:
        return out, "parallel"
    seq = run.iterate(out.state, "sequential", 1.0, False, max_iter - out.sweeps)
    ran = f"parallel ({out.sweeps} sweeps: {out.why}), then sequential"
    return seq._replace(sweeps=out.sweeps + seq.sweeps), ran


def _posterior(
    problem: Problem, K: np.ndarray, out: _Outcome, ran: str, options: EPOptions
) -> EPPosterior:
    """The posterior where the sweeps ended (a warning if they did not converge)."""
    state = out.state
    if not np.isfinite(state.log_marginal_likelihood):
        raise FloatingPointError(
            "EP produced a non-finite evidence (a cavity lost positive precision); "
            "try schedule='sequential' or stronger damping"
        )
    message = out.message(ran, options.tol, options.site_tol)
    if not out.converged:
        warnings.warn(f"EP {message}", RuntimeWarning, stacklevel=2)
    return EPPosterior(
        problem.X,
        problem.y,
        problem.kernel,
        problem.likelihood,
        problem.mean,
        K=K,
        alpha=state.alpha(K),
        sW=state.sW,
        L=state.L,
        log_marginal_likelihood=state.log_marginal_likelihood,
        convergence=Convergence(out.converged, out.sweeps, float(out.change), message, ran),
        state=state,
    )


class _Outcome(NamedTuple):
    """Where a run of sweeps ended: the state, sweeps taken, whether converged, the last
    evidence and (undamped) site changes, and why a parallel run gave up (or "")."""

    state: _SiteState
    sweeps: int
    converged: bool
    change: float
    site_change: float
    why: str = ""

    def message(self, ran: str, tol: float, site_tol: float) -> str:
        """How the run ended, for ``Convergence.message`` (``ran``: the schedule(s))."""
        changes = f"evidence change {self.change:.2e}, site change {self.site_change:.2e}"
        if self.converged:
            return f"converged after {self.sweeps} sweeps ({ran}): {changes}"
        return (
            f"not converged after {self.sweeps} sweeps ({ran}; {changes}; tol {tol:g}, "
            f"site_tol {site_tol:g})"
        )


def _distance(up_ttau, up_tnu, ttau, tnu) -> float:
    """The largest change of any site parameter, max(|up_ttau - ttau|, |up_tnu - tnu|)."""
    return max(np.max(np.abs(up_ttau - ttau)), np.max(np.abs(up_tnu - tnu)))


class _Run:
    """Sweeps of one schedule from a state until converged (R&W Alg. 3.5 lines 3-14)."""

    def __init__(self, K, y, lik, m, tol, site_tol, min_iter, rng, make_state=None):
        self.K, self.y, self.lik, self.m = K, y, lik, m
        self.tol, self.site_tol, self.min_iter, self.rng = tol, site_tol, min_iter, rng
        # the state of a set of sites (ttau, tnu) -> state; FITC-EP passes its own
        self.make_state = make_state or (lambda ttau, tnu: _SiteState(K, y, lik, ttau, tnu, m))

    def iterate(
        self,
        state: _SiteState,
        schedule: str,
        damping: float,
        adaptive: bool,
        max_iter: int,
        stop_on_oscillation: bool = False,
        accelerate: bool = False,
    ) -> _Outcome:
        """At most ``max_iter`` sweeps. With ``stop_on_oscillation`` (the parallel part
        of "auto"), stop early, unconverged, at the last finite state when a sweep loses a
        cavity (non-finite evidence) or adaptive damping has fallen below
        ``AUTO_MIN_DAMPING`` (persistent oscillation). With ``accelerate`` (parallel,
        undamped), each sweep first tries the sites of Anderson's extrapolation
        (:class:`._sites.Anderson`) over the last few sweeps, kept if every site precision
        and cavity precision stays non-negative and the evidence finite."""
        K, y, lik = self.K, self.y, self.lik
        ttau, tnu = state.ttau, state.tnu
        sweeps, change, site_change = 0, np.inf, np.inf
        acceleration = Anderson(ANDERSON_MEMORY)  # (sites, update - sites)
        extrapolated = False  # whether the current state came from Anderson's step
        while sweeps < max_iter:
            sweeps += 1
            if schedule == "sequential":
                new_ttau, new_tnu = sequential_sweep(K, y, lik, state, ttau, tnu, damping, self.rng)
            else:
                up_ttau, up_tnu = self._update(state)
                # this state's own residual: where it and the last evidence change are within
                # the tolerances, the state is converged as it stands (no further state,
                # i.e. no further factorisation, needed to say so)
                residual = _distance(up_ttau, up_tnu, ttau, tnu)
                if self._converged(state, sweeps - 1, change, residual):
                    return _Outcome(state, sweeps - 1, True, change, residual)
                new_ttau = (1 - damping) * ttau + damping * up_ttau
                new_tnu = (1 - damping) * tnu + damping * up_tnu
            new_state, candidate = None, False
            if accelerate and damping == 1.0:
                x = np.concatenate([ttau, tnu])
                acceleration.push(x, np.concatenate([up_ttau, up_tnu]) - x)
                new_state = self._extrapolate(acceleration.extrapolate())
                if new_state is None:
                    acceleration.restart()  # failed: start its memory afresh
                else:
                    new_ttau, new_tnu, candidate = new_state.ttau, new_state.tnu, True
            if new_state is None:
                new_state = self.make_state(new_ttau, new_tnu)
            if stop_on_oscillation and not np.isfinite(new_state.log_marginal_likelihood):
                why = "a cavity lost positive precision"
                return _Outcome(state, sweeps - 1, False, change, site_change, why)
            change = abs(new_state.log_marginal_likelihood - state.log_marginal_likelihood)
            previous_site_change = site_change
            # the undamped step: damping shrinks the change without bringing the sites closer
            # (parallel: the residual of the site update at the old sites, whatever step
            # was taken)
            if schedule == "sequential":
                site_change = _distance(new_ttau, new_tnu, ttau, tnu) / damping
            else:
                site_change = residual
            if adaptive and site_change > previous_site_change:
                if extrapolated:  # Anderson's residuals need not fall monotonically:
                    acceleration.restart()  # restart its memory rather than damp
                else:
                    damping = max(0.5 * damping, 0.05)
            extrapolated = candidate
            state, ttau, tnu = new_state, new_ttau, new_tnu
            if not np.isfinite(state.log_marginal_likelihood):
                break  # the caller raises
            if self._converged(state, sweeps, change, site_change):
                return _Outcome(state, sweeps, True, change, site_change)
            if stop_on_oscillation and damping < AUTO_MIN_DAMPING:
                why = f"oscillating: damping fell to {damping:g}"
                return _Outcome(state, sweeps, False, change, site_change, why)
        if schedule != "sequential" and state.tilted_mean is not None:
            # the last state's own residual, as at the top of a sweep (no factorisation)
            residual = _distance(*self._update(state), ttau, tnu)
            if self._converged(state, sweeps, change, residual):
                return _Outcome(state, sweeps, True, change, residual)
        why = "" if sweeps < max_iter else f"not converged in {max_iter} sweeps"
        return _Outcome(state, sweeps, False, change, site_change, why)

    def _update(self, state: _SiteState) -> tuple[np.ndarray, np.ndarray]:
        """The parallel site update at the state's cavities (R&W eq. 3.59), tau~ kept
        non-negative; the state's tilted moments are those of its cavities (no
        recomputation)."""
        up_ttau, up_tnu = site_update(
            self.lik, self.y, state.tau_cav, state.nu_cav, (state.tilted_mean, state.tilted_var)
        )
        return np.maximum(up_ttau, 0.0), up_tnu

    def _converged(self, state: _SiteState, sweeps: int, change: float, site_change: float) -> bool:
        """Whether a state reached after ``sweeps`` sweeps, the evidence having moved by
        ``change`` into it and its sites ``site_change`` from their update, is converged."""
        evidence_tol = max(self.tol, state.noise)  # no tighter than its rounding
        return sweeps >= self.min_iter and change < evidence_tol and site_change < self.site_tol

    def _extrapolate(self, trial: np.ndarray | None) -> _SiteState | None:
        """The state at Anderson's extrapolation ``trial`` of the parallel site iteration,
        or None if there is none (too little history) or it leaves a site or cavity
        precision negative."""
        if trial is None:
            return None
        n = trial.size // 2
        if not np.all(np.isfinite(trial)) or np.any(trial[:n] < 0):
            return None
        state = self.make_state(trial[:n], trial[n:])
        if not (np.isfinite(state.log_marginal_likelihood) and np.all(state.tau_cav > 0)):
            return None
        return state
