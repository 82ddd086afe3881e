"""Gaussian sites: the algebra the variational engines share.

q(f) ∝ N(f; m, K) prod_i exp(-1/2 W_i f_i^2 + b_i f_i) is Gaussian with covariance
Sigma = (K^-1 + W)^-1 and mean mu = Sigma (K^-1 m + b); in R&W's stable form, with
B = I + sW K sW and L = chol(B) (R&W eq. 3.26), mu = m + K alpha and
alpha = K^-1 Sigma r = r - sW B^-1 sW K r, r = b - W m (the sites in g = f - m). The KL
engine's sites are its optimum's (Opper and Archambeau 2009), the VB engine's those of
the Jaakkola-Jordan bound. Also here: Anderson's extrapolation (:class:`Anderson`, the one
driver EP's parallel sweeps, the site iteration of KL and SVGP and VB's EM use to speed up
their fixed-point iterations).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from .._validation import real_array
from ..numerics import cho_solve, chol_B, solve_I_plus_WK
from ..posterior import GaussianPosterior
from ..posterior.gaussian import marginal_variances

__all__ = [
    "Anderson",
    "GaussianSites",
    "SitePosterior",
    "BoundRun",
    "anderson",
    "bound_message",
    "check_site_warm_start",
    "gaussian_sites",
    "maximize_bound",
    "site_mean_cg",
]


class GaussianSites(NamedTuple):
    """q at sites (W, b): its factor and moments.

    Attributes
    ----------
    W, b : ndarray, shape (n,)
        The sites' precisions (>= 0) and linear coefficients.
    sW : ndarray
        sqrt(W).
    L : ndarray, shape (n, n)
        chol(I + sW K sW).
    alpha : ndarray
        K^-1 (mu - m).
    mu, v : ndarray
        The posterior mean and marginal variances of f (v None when not asked for).
    log_det_B : float
        log|B| = log|K| - log|Sigma|.
    """

    W: np.ndarray
    b: np.ndarray
    sW: np.ndarray
    L: np.ndarray
    alpha: np.ndarray
    mu: np.ndarray
    v: np.ndarray | None
    log_det_B: float


def gaussian_sites(
    K: np.ndarray, m: float, W: np.ndarray, b: np.ndarray, *, variances: bool = True
) -> GaussianSites:
    """q(f) ∝ N(f; m, K) exp(-1/2 f^T W f + b^T f): one Cholesky of B and, if
    ``variances``, one triangular inverse for the marginal variances
    (:func:`marginal_variances`, as EP's sweep); without, ``v`` is None."""
    sW = np.sqrt(W)
    L = chol_B(K, sW)
    r = b - W * m
    alpha = solve_I_plus_WK(K, sW, L, r)  # r - sW B^-1 sW K r, without its cancellation
    v = np.maximum(marginal_variances(K, W, sW, L)[0], 0.0) if variances else None
    log_det_B = 2.0 * float(np.log(np.diag(L)).sum())
    return GaussianSites(W, b, sW, L, alpha, m + K @ alpha, v, log_det_B)


def site_mean_cg(
    K: np.ndarray,
    m: float,
    W: np.ndarray,
    b: np.ndarray,
    L_near: np.ndarray,
    *,
    rtol: float = 1e-10,
    max_iter: int = 50,
) -> np.ndarray | None:
    """The mean of q at sites (W, b) without factorising: mu = m + K alpha with
    alpha = r - sW B^-1 sW K r (module note), B^-1 applied by conjugate gradients
    preconditioned with the Cholesky factor ``L_near`` of a nearby B (Golub and Van Loan,
    section 11.5). Each iteration costs a product with K and two triangular solves;
    returns None if the relative residual is not below ``rtol`` after ``max_iter``.
    """
    sW = np.sqrt(W)
    r = b - W * m
    Kr = K @ r
    rhs = sW * Kr
    x = np.zeros_like(rhs)
    res = rhs.copy()
    z = cho_solve(L_near, res)
    p = z.copy()
    rz = float(res @ z)
    target = rtol * float(np.linalg.norm(rhs))
    for _ in range(max_iter):
        if float(np.linalg.norm(res)) <= target:
            return m + Kr - K @ (sW * x)  # K alpha = K r - K sW B^-1 sW K r
        Bp = p + sW * (K @ (sW * p))
        step = rz / float(p @ Bp)
        x += step * p
        res -= step * Bp
        z = cho_solve(L_near, res)
        rz, rz_old = float(res @ z), rz
        p = z + (rz / rz_old) * p
    return None


def anderson(history: list[tuple[np.ndarray, np.ndarray]], beta: float = 1.0) -> np.ndarray:
    """Anderson's extrapolation of a fixed-point iteration x <- F(x) (Anderson 1965;
    Walker and Ni 2011, type II, with a mixing parameter beta as in their algorithm:
    x_k + beta f_k - (dx + beta df) gamma).

    Parameters
    ----------
    history : list of (x_k, F(x_k) - x_k)
        The last few iterates and their residuals, oldest first (at least two).
    beta : float
        The mixing: 1 extrapolates x <- F(x), rho < 1 the damped iteration
        x <- x + rho (F(x) - x) (the same gamma).

    Returns
    -------
    ndarray
        x_k + beta f_k - sum_j gamma_j (dx_j + beta df_j), gamma minimising
        |f_k - sum_j gamma_j df_j| (with beta = 1, F(x_k) - sum_j gamma_j (dx_j + df_j)).
    """
    xs = np.array([h[0] for h in history])
    fs = np.array([h[1] for h in history])
    dx, df = np.diff(xs, axis=0), np.diff(fs, axis=0)
    gamma = np.linalg.lstsq(df.T, fs[-1], rcond=None)[0]
    return xs[-1] + beta * fs[-1] - (dx + beta * df).T @ gamma


class Anderson:
    """Anderson's acceleration of a fixed-point iteration x <- F(x): the one driver EP's
    parallel sweeps, the variational bounds' site iteration (:func:`maximize_bound`) and
    VB's EM share, each with its own ``memory``.

    It remembers the last ``memory`` + 1 iterates with their residuals F(x) - x, so an
    extrapolation (:func:`anderson`) combines up to ``memory`` differences (EP 4, KL,
    SVGP and VB 5).
    """

    def __init__(self, memory: int) -> None:
        self.memory = memory
        #: (x, F(x) - x), oldest first
        self.history: list[tuple[np.ndarray, np.ndarray]] = []

    def push(self, x: np.ndarray, residual: np.ndarray) -> None:
        """Remember an iterate and its residual F(x) - x (forgetting the oldest beyond
        ``memory`` + 1)."""
        self.history = [*self.history[-self.memory :], (x, residual)]

    def extrapolate(self, beta: float = 1.0) -> np.ndarray | None:
        """Anderson's extrapolation over the iterates remembered (:func:`anderson`, mixing
        ``beta``), or None while fewer than two are."""
        return anderson(self.history, beta) if len(self.history) > 1 else None

    def restart(self) -> None:
        """Forget all but the last iterate (an extrapolation failed, or its residuals
        grew): the memory starts afresh from there."""
        self.history = self.history[-1:]

    def clear(self) -> None:
        """Forget every iterate."""
        self.history = []


# the smallest step before the iteration gives up (the bound cannot be raised further)
_MIN_STEP = 1e-12
# below this step, a bound that no longer changes beyond its rounding has stalled ...
_STALL_STEP = 1e-6
# ... and is converged at the limit of rounding if the sites are within this many site_tol
_ROUNDING_FACTOR = 10.0
#: The site iteration's Anderson memory (:class:`Anderson`)
_ANDERSON_MEMORY = 5


def check_site_warm_start(
    warm_start, n: int, names: str = "(W, b)"
) -> tuple[np.ndarray, np.ndarray]:
    """A warm start of Gaussian sites, ``names`` = (precisions, linear coefficients): two
    finite arrays of shape (n,), the precisions >= 0 (copies), or a ValueError saying so
    (EP's (ttau, tnu), the variational engines' (W, b), as ``posterior.warm_start`` gives)."""
    try:
        a, b = (real_array(v, "warm_start") for v in warm_start)
    except (TypeError, ValueError):
        a = b = np.zeros(0)
    finite = np.all(np.isfinite(a)) and np.all(np.isfinite(b))
    if a.shape != (n,) or b.shape != (n,) or not finite or np.any(a < 0):
        first = names.strip("()").split(",")[0]
        raise ValueError(
            f"warm_start must be a pair {names} of finite arrays of shape ({n},) with "
            f"{first} >= 0, as posterior.warm_start gives"
        )
    return a, b


class BoundRun(NamedTuple):
    """Where :func:`maximize_bound` ended: the state, whether converged (and whether only at
    the limit of rounding), iterations, the last bound and site changes, steps
    extrapolated and halvings, and the last step rho."""

    state: Any
    converged: bool
    rounding_limited: bool
    iterations: int
    change: float
    site_change: float
    accelerated: int
    halvings: int
    rho: float


def _diagonal_fixed_point(state: Any) -> tuple[np.ndarray, np.ndarray]:
    """The fixed point of diagonal sites: W = -2 dE/dvar (>= 0 for a log-concave
    likelihood), b = dE/dmu + W mu (Opper and Archambeau 2009, eqs. 11-12)."""
    _, dE_dmu, dE_dv = state.expected
    W_fix = np.maximum(-2.0 * dE_dv, 0.0)
    return W_fix, dE_dmu + W_fix * state.mu


def _signed_fixed_point(state: Any) -> tuple[np.ndarray, np.ndarray]:
    """As :func:`_diagonal_fixed_point`, W left as it comes (it may be negative where E
    is not concave in the mean)."""
    _, dE_dmu, dE_dv = state.expected
    W_fix = -2.0 * dE_dv
    return W_fix, dE_dmu + W_fix * state.mu


def _nonnegative(W: np.ndarray) -> np.ndarray:
    return np.maximum(W, 0.0)


def _unchanged(W: np.ndarray) -> np.ndarray:
    return W


def maximize_bound(
    make_state: Callable[[np.ndarray, np.ndarray], Any],
    state: Any,
    *,
    tol: float,
    site_tol: float,
    max_iter: int,
    nonnegative: bool = True,
    fixed_point: Callable[[Any], tuple[np.ndarray, np.ndarray]] | None = None,
    project: Callable[[np.ndarray], np.ndarray] | None = None,
    polish: Callable[[Any], Any] | None = None,
) -> BoundRun:
    """Raise a variational bound over Gaussian sites (W, b) to its optimum (the KL
    engine's and SVGP's optimiser: Khan and Lin 2017's natural-gradient steps on the sites).

    A state (``make_state(W, b)``) carries ``W``, ``b``, ``mu`` (the mean the sites act
    on), ``expected`` = (E_i, dE/dmu, dE/dvar), ``elbo`` and ``noise`` (its rounding). Each
    iteration first tries Anderson's extrapolation of the natural-gradient step
    W <- (1 - rho) W + rho W_fix, b <- (1 - rho) b + rho b_fix towards the fixed point
    W_fix = -2 dE/dvar, b_fix = dE/dmu + W mu (mixing beta = rho), then that step itself,
    halving rho until the bound does not drop (beyond rounding); rho grows back towards 1
    after each step.
    Converged when the bound changes by less than ``tol`` and the fixed-point update would
    move no site by more than ``site_tol`` relative to 1 + its size; where no step raises
    the bound above its rounding, converged "at the limit of rounding" if the sites are
    within ten times ``site_tol``.

    ``nonnegative``: the fixed point's precisions W = -2 dE/dvar are >= 0 for a
    log-concave likelihood, and are then held there (against rounding). With False
    (the robust-max likelihood, whose E is not concave in the mean, or a Monte Carlo
    estimate of E) they may be negative: ``make_state`` must then give a bound of -inf
    where q's covariance is not positive definite, and such a step is halved like one
    that lowers the bound.

    ``fixed_point(state)`` gives the sites' fixed point (W_fix, b_fix) (by default the
    diagonal sites' above) and ``project`` maps extrapolated precisions back to the
    admissible ones (by default W >= 0 when ``nonnegative``): blocks of sites (the
    multi-class KL engine's d x d precisions per case) pass their own.

    ``polish(state)``, if given, maps every accepted state to one whose bound is not
    lower, exactly (the multi-class SVGP's step along the common mode of its latent means,
    a direction the fixed point is slow in); the iteration continues from it.
    """
    if fixed_point is None:
        fixed_point = _diagonal_fixed_point if nonnegative else _signed_fixed_point
    if project is None:
        project = _nonnegative if nonnegative else _unchanged
    n = state.W.size
    shapes = state.W.shape, state.b.shape
    rho, converged, change, site_change = 1.0, False, np.inf, np.inf
    iterations = halvings = accelerated = 0
    rounding_limited = False
    acceleration = Anderson(_ANDERSON_MEMORY)
    for iterations in range(1, max_iter + 1):  # noqa: B007 (reported after the loop)
        W_fix, b_fix = fixed_point(state)
        site_change = max(  # relative to the sites' size (they reach 1e3 and more)
            np.max(np.abs(W_fix - state.W) / (1.0 + np.abs(W_fix))),
            np.max(np.abs(b_fix - state.b) / (1.0 + np.abs(b_fix))),
        )
        noise = state.noise
        x = np.concatenate([state.W.ravel(), state.b.ravel()])
        acceleration.push(x, np.concatenate([W_fix.ravel(), b_fix.ravel()]) - x)
        new = None
        # try the Anderson-extrapolated sites first; after a halving, those of the damped
        # step x + rho (F(x) - x). Where only short steps raise the bound (a direction the
        # full step overshoots: the multi-class SVGP at sigma_f^2 ~ e^8), those steps alone
        # creep, and once the bound's changes are within its rounding rho cycles between
        # a step that shrinks the residual and its double, which the bound can no longer
        # refuse and which grows it (satimage: the site change stuck near 1e-5)
        trial = acceleration.extrapolate(rho)
        if trial is not None:
            if np.all(np.isfinite(trial)):
                W_trial = project(trial[:n].reshape(shapes[0]))
                candidate = make_state(W_trial, trial[n:].reshape(shapes[1]))
                if candidate.elbo >= state.elbo - noise:
                    new, accelerated = candidate, accelerated + 1
        if new is None:
            acceleration.restart()  # the extrapolation failed: start its memory afresh
            while True:  # the natural-gradient step, halved until the bound does not drop
                W_step = (1.0 - rho) * state.W + rho * W_fix
                new = make_state(W_step, (1.0 - rho) * state.b + rho * b_fix)
                if new.elbo >= state.elbo - noise:
                    break
                if rho <= _MIN_STEP:  # no step is accepted: keep the sites, and stop
                    new = state
                    break
                rho *= 0.5
                halvings += 1
        if polish is not None and new is not state:
            new = polish(new)
        if not (np.isfinite(new.elbo) or np.isfinite(state.elbo)):
            state = new  # no bound to raise (the caller's states refuse them: KL's)
            break
        change = new.elbo - state.elbo
        state = new
        if abs(change) < max(tol, noise) and site_change < site_tol:
            converged = True
            break
        if (rho < _STALL_STEP and abs(change) <= noise) or rho <= _MIN_STEP:
            # no step raises the bound above its rounding: it is at its optimum as far as
            # floating point can tell (ill-conditioned K: long length-scales, large
            # sigma_f), where the fixed-point map itself is only good to about site_change;
            # accepted as converged within ten times site_tol, and said so
            rounding_limited = site_change < _ROUNDING_FACTOR * site_tol
            converged = rounding_limited
            break
        rho = min(1.0, 2.0 * rho)
    changes = float(change), float(site_change)
    return BoundRun(
        state, converged, rounding_limited, iterations, *changes, accelerated, halvings, rho
    )


def bound_message(run: BoundRun, tol: float, site_tol: float) -> str:
    """How :func:`maximize_bound` ended, for ``Convergence.message`` and warnings."""
    if run.converged:
        return (
            f"converged after {run.iterations} iterations ({run.accelerated} extrapolated, "
            f"{run.halvings} step halvings): bound change {run.change:.2e}, site change "
            f"{run.site_change:.2e}"
            + (" (the limit of rounding: no step raises the bound)" if run.rounding_limited else "")
        )
    return (
        f"not converged after {run.iterations} iterations (bound change {run.change:.2e}, "
        f"site change {run.site_change:.2e}; tol {tol:g}, site_tol {site_tol:g}; last step "
        f"{run.rho:.1e}): raise max_iter, or check the hyperparameters for an extreme scale"
    )


class SitePosterior(GaussianPosterior):
    """The posterior of a bound optimised over Gaussian sites (KL, VB): the shared Gaussian
    form with the marginal variances of the last factorisation kept, and the exact gradient
    of a bound that is stationary in its own parameters at the optimum."""

    def __init__(self, *args, v: np.ndarray, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._v = v

    @cached_property
    def latent_var(self) -> np.ndarray:
        """diag (K^-1 + W)^-1, from the iteration's last factorisation."""
        return self._v.copy()

    @cached_property
    def log_marginal_likelihood_gradient(self) -> np.ndarray:
        """Exact gradient of the bound: stationary in its own parameters at the optimum, so
        the partial derivative at fixed q, 1/2 alpha^T dK alpha - 1/2 tr(R dK) and sum(alpha)
        for the mean (:meth:`GaussianPosterior._stationary_gradient`)."""
        return self._stationary_gradient()
