"""The damped Newton iteration the Laplace approximations share (binary and softmax).

Both minimise Psi(x) = 1/2 x^T K x - log p(y | f) over the coefficients x with f = m + K x
(alpha in R&W Alg. 3.1, a in Alg. 3.3; R&W eqs. 3.12 and 3.39, Bishop 6.80 and 6.83).
Each iteration takes the Newton step the caller computes (``direction``), halved until
Psi does not increase (beyond rounding, so that the last, tiny Newton correction is
always taken and the mode is exact to machine precision); the iteration has converged
when a step lowers Psi by less than ``tol`` and the full Newton step moves f by less than
sqrt(tol): where Psi is nearly flat (large signal variance) a small decrease in Psi does
not mean f has settled, so both must be small. At very large signal variance the Newton
direction itself carries rounding error larger than sqrt(tol) in f; the iteration then
stops once the step neither lowers Psi beyond its rounding nor shrinks, and says so.

Neither test looks at the gradient: a step lost to rounding (zero, or a few ulp of x) passes
both at any point. It was seen: R&W's step (I + W K)^-1 b = b - sW B^-1 sW K b cancels
where W_i K_ii is large, and at K = v I with v = 3e15 it rounded to one ulp of alpha, f
stopped at 0.67 instead of about 8, and "converged" with an evidence of -354.6 (the true
Laplace evidence -41.9). The engines now take that part in a form that does not cancel
(:func:`gpc_compare.numerics.solve_I_plus_WK`), and a caller may give
``likelihood_gradient``, grad log p(y | f) in x's shape, which x equals at the mode (R&W
eqs. 3.17 and 3.34): convergence then also asks |x - grad log p|_max <= ``STATIONARY_TOL``
max(|x|_max, |grad log p|_max), and an iteration whose steps have stopped short of that
ends not converged, saying why, instead of reporting a wrong mode as one.

Chord steps
-----------
A caller may also give ``chord``: the step from the last factorised Hessian, held fixed
(the chord, or simplified Newton, method; Kelley 1995, ch. 5). Near the mode W hardly
changes between iterations, so a step that reuses the last Cholesky factor (two
triangular solves, O(n^2)) contracts the error by a factor rho ~ |f - f^| where a Newton
step (a new O(n^3) factorisation) would square it. A chord step follows every full
Newton step, and further ones follow while each shrinks the step by ``CHORD_RATE`` or
better (rho, estimated by the ratio of successive steps); otherwise, or after a damped
step, the next iteration factorises again. Since a chord step converges linearly, it
counts as converged only if it was taken whole and its predicted remaining error
rho |step| / (1 - rho), times the largest prior variance max K_ii, is below ``tol``
(besides Psi's change below tol and the step below sqrt(tol)). The scale is there because
the evidence moves with f through 1/2 sum_i Sigma_ii d3_i (R&W eq. 5.23), Sigma_ii up to
K_ii: an error in f below tol is not an evidence accurate to tol at a large signal
variance.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import real_array
from ..posterior import Convergence

__all__ = [
    "CHORD_RATE",
    "STATIONARY_TOL",
    "NewtonResult",
    "check_warm_start",
    "newton",
    "start",
]

#: The largest |x - grad log p(y | f)|, relative to the larger of the two, that counts as a
#: mode (see the module note). A mode found by Newton leaves it at rounding level: at most
#: 1.8e-7 over the Laplace, FITC-Laplace, softmax, estimator and hyperparameter tests (the
#: breast-cancer fold at sigma_f^2 = 4140, stopped at the limit of rounding), 2e-11 in all
#: the others; a stalled iteration leaves it ~1.
STATIONARY_TOL = 1e-4

#: A chord step is tried again only if the last step shrank the step in f by at least this
#: factor (then the frozen Hessian is good enough that several chord steps, at a few per
#: cent of a factorisation each, beat one more factorisation).
CHORD_RATE = 0.1

#: psi and whatever else the caller keeps about a point (f, derivatives, ...).
State = Callable[[np.ndarray], tuple[float, Any]]


@dataclass(frozen=True)
class NewtonResult:
    """Where the iteration ended.

    Attributes
    ----------
    x : ndarray
        The coefficients at the mode (alpha, or a for softmax).
    psi : float
        Psi there.
    extra : Any
        What the caller's ``state`` returned with Psi there.
    converged : bool
    iterations : int
    change : float
        The decrease in Psi at the last iteration.
    message : str
    factorizations : int
        Calls of ``direction`` (each factorises the Hessian; chord steps do not).
    """

    x: np.ndarray
    psi: float
    extra: Any
    converged: bool
    iterations: int
    change: float
    message: str
    factorizations: int = 0

    def convergence(self) -> Convergence:
        """The record of a fit that factorises once more at the mode (binary Laplace,
        FITC-Laplace): ``factorizations`` counts that one too."""
        return Convergence(
            self.converged,
            self.iterations,
            self.change,
            self.message,
            factorizations=self.factorizations + 1,
        )


def check_warm_start(warm_start, shape: tuple[int, ...], name: str) -> np.ndarray:
    """``warm_start`` as a finite float array of ``shape``, or a ValueError saying why."""
    try:
        x0 = real_array(warm_start, "warm_start")
    except ValueError:
        raise ValueError(f"warm_start must be an array of {name} values") from None
    if x0.shape != shape:
        raise ValueError(f"warm_start must have shape {shape}, got {x0.shape}")
    if not np.all(np.isfinite(x0)):
        raise ValueError("warm_start contains NaN or infinity")
    return x0


def start(
    state: State, shape: tuple[int, ...], warm_start, name: str, *, candidates: bool = False
) -> tuple[np.ndarray, float, Any]:
    """The starting point: x = 0, or ``warm_start`` if it is no worse (as GPML does).

    With ``candidates``, ``warm_start`` may also stack several points (shape (k, *shape)):
    the one with the lowest Psi competes with x = 0.
    """
    x = np.zeros(shape)
    psi, extra = state(x)
    if warm_start is not None:
        points = [warm_start]
        if candidates and np.ndim(warm_start) == len(shape) + 1:
            points = list(np.asarray(warm_start, dtype=float))
        for point in points:
            x0 = check_warm_start(point, shape, name)
            psi0, extra0 = state(x0)
            if psi0 < psi:  # as GPML: fall back to zero if the warm start is worse
                x, psi, extra = x0, psi0, extra0
    return x, psi, extra


def newton(
    state: State,
    direction: Callable[[np.ndarray, Any], np.ndarray],
    x: np.ndarray,
    psi: float,
    extra: Any,
    K: np.ndarray,
    *,
    tol: float,
    max_iter: int,
    stacklevel: int = 1,
    chord: Callable[[np.ndarray, Any], np.ndarray] | None = None,
    likelihood_gradient: Callable[[np.ndarray, Any], np.ndarray] | None = None,
) -> NewtonResult:
    """Damped Newton from x: at most ``max_iter`` iterations; not converging warns.

    Parameters
    ----------
    state : callable
        x -> (Psi(x), extra).
    direction : callable
        (x, extra) -> the full Newton iterate x_new (R&W Alg. 3.1 lines 6-8, Alg. 3.3
        lines 4-14).
    x, psi, extra
        The starting point (from :func:`start`).
    K : ndarray, shape (n, n), or an operator with ``@`` and ``diagonal()``
        The kernel matrix (or FITC's, :class:`~gpc_compare.posterior.FITCPrior`): the
        Newton step moves f by K (x_new - x).
    tol : float
    max_iter : int
    stacklevel : int
        Of the warning, counted from the caller.
    chord : callable, optional
        (x, extra) -> the iterate from the Hessian of the last ``direction`` call, held
        fixed (see the module note on chord steps); None takes Newton steps only.
    likelihood_gradient : callable, optional
        (x, extra) -> grad log p(y | f), which x equals at the mode: converged then also
        asks that it does, to ``STATIONARY_TOL`` (see the module note).
    """

    def off_mode() -> float:
        return _off_mode(likelihood_gradient, x, extra)

    converged, change, it, message = False, np.inf, 0, ""
    newton_df = prev_df = np.inf
    use_chord = False  # (the first step factorises)
    factorizations = 0
    scale = max(1.0, float(np.max(np.abs(K.diagonal())))) if chord is not None else 1.0
    while it < max_iter:
        it += 1
        factorizations += not use_chord
        step = (chord if use_chord else direction)(x, extra) - x
        # the full Newton (or chord) step in f (see the module notes)
        prev_df, newton_df = newton_df, float(np.max(np.abs(K @ step)))
        # step halving: Psi must not increase (beyond rounding). A Newton step below
        # sqrt(tol) in f is taken whole: its decrease in Psi (~ its square) is below Psi's
        # rounding, which at a large signal variance is well above the slack (Psi sums
        # terms far larger than itself: seen 1e-11 at Psi = 4), so the test would refuse
        # the step that settles the mode, and leave f off by it
        slack = 1e-13 * max(1.0, abs(psi))
        settles = not use_chord and newton_df < np.sqrt(tol)
        cand, psi_c, extra_c, s = _halve(state, x, psi, extra, step, slack, settles)
        change = max(psi - psi_c, 0.0)
        rose = max(psi_c - psi, 0.0)  # (a small Newton step taken whole despite rounding)
        x, psi, extra = cand, psi_c, extra_c
        was_chord = use_chord
        rate = newton_df / prev_df if prev_df > 0 else 0.0
        use_chord = chord is not None and s == 1.0 and (not was_chord or rate <= CHORD_RATE)
        # a chord step converges linearly: what is left after it is about rate / (1 - rate)
        # times the step just taken, if it was taken whole (see the module note)
        settled = not was_chord or (
            s == 1.0 and rate < 1.0 and rate * newton_df * scale < tol * (1.0 - rate)
        )
        stopped = change < tol and newton_df < np.sqrt(tol) and settled
        if stopped and (off := off_mode()) > STATIONARY_TOL:
            if was_chord:  # a fresh Newton step may yet move it
                use_chord = False
                continue
            message = _stalled(it, newton_df, change, off, K)
            break
        if stopped:
            converged = True
            kind = "chord" if was_chord else "Newton"
            message = (
                f"converged at iteration {it} ({factorizations} Newton, "
                f"{it - factorizations} chord steps): Psi changed by {change:.2e} < tol = "
                f"{tol:g}, {kind} step in f {newton_df:.1e}"
                + (f" (taken whole: Psi rose by {rose:.1e}, within its rounding)" if rose else "")
            )
            break
        if not was_chord and s < 1.0 and change <= slack and newton_df > 0.5 * prev_df:
            # the full step raised Psi beyond its rounding, the damped one did not lower it,
            # and the step no longer shrinks (near the mode Newton's would, quadratically):
            # what is left of the step is rounding error in the Newton direction, whose
            # size grows with K's scale (largest entries ~ the signal variance)
            if (off := off_mode()) > STATIONARY_TOL:
                message = _stalled(it, newton_df, change, off, K)
                break
            converged = True
            message = _at_rounding(it, change, slack, newton_df, K)
            break
    if not converged:
        message = message or _not_converged(max_iter, newton_df, change, tol)
        warnings.warn(f"Laplace mode finding {message}", RuntimeWarning, stacklevel=stacklevel + 1)
    return NewtonResult(x, psi, extra, converged, it, float(change), message, factorizations)


def _halve(
    state: State,
    x: np.ndarray,
    psi: float,
    extra: Any,
    step: np.ndarray,
    slack: float,
    settles: bool,
) -> tuple[np.ndarray, float, Any, float]:
    """Step halving from x along ``step`` until Psi does not rise beyond ``slack`` (or at
    once where the step ``settles``, see :func:`newton`): the new point, its Psi and
    extra, and the fraction of the step taken (x itself, if no fraction above 1e-12 does)."""
    s = 1.0
    while True:
        cand = x + s * step
        psi_c, extra_c = state(cand)
        if np.isfinite(psi_c) and (psi_c <= psi + slack or settles):
            return cand, psi_c, extra_c, s
        s *= 0.5
        if s < 1e-12:
            return x, psi, extra, s


def _off_mode(likelihood_gradient, x: np.ndarray, extra: Any) -> float:
    """|x - grad log p|_max relative to the larger of the two (0 if not checked)."""
    if likelihood_gradient is None:
        return 0.0
    g = np.asarray(likelihood_gradient(x, extra))
    size = max(float(np.max(np.abs(x))), float(np.max(np.abs(g))))
    return float(np.max(np.abs(x - g))) / size if size > 0 else 0.0


def _at_rounding(it: int, change: float, slack: float, step: float, K) -> str:
    """The message of an iteration that converged at the limit of rounding."""
    return (
        f"converged at iteration {it} at the limit of rounding: Psi changed by "
        f"{change:.2e} (its rounding {slack:.1e}); the remaining Newton step in f, "
        f"{step:.1e}, is rounding error of K's scale "
        f"({float(np.max(np.abs(K.diagonal()))):.3g})"
    )


def _not_converged(max_iter: int, step: float, change: float, tol: float) -> str:
    """The message of an iteration that ran out of iterations."""
    return (
        f"not converged after {max_iter} Newton iterations: the Newton step in f is "
        f"still {step:.1e} (converged needs < sqrt(tol) = {np.sqrt(tol):.1e}) and "
        f"Psi last changed by {change:.2e} (needs < tol = {tol:g}); raise max_iter, or "
        "bound the signal variance lower if K is too large to factorise accurately"
    )


def _stalled(it: int, step: float, change: float, off: float, K) -> str:
    """The message of an iteration whose steps stopped short of the mode."""
    return (
        f"not converged: stalled at iteration {it} short of the mode. The steps no longer "
        f"move it (Newton step in f {step:.1e}, Psi changed by {change:.1e}), but the "
        "coefficients differ from grad log p(y | f), which they equal at the mode (R&W eq. "
        f"3.17), by {off:.1e} of their size (a mode: < {STATIONARY_TOL:g}): the Newton "
        "direction is lost to rounding at K's scale "
        f"({float(np.max(np.abs(K.diagonal()))):.3g}); bound the signal variance lower"
    )
