"""The delicate numerics, in one place.

Everything that can lose precision or overflow lives here: the log of the normal
CDF and of the logistic sigmoid far in their tails, the inverse Mills ratio that
the probit likelihood's derivatives and EP's tilted moments are built from,
and Cholesky helpers with the project's single jitter
constant. Nothing here clips a probability: results are computed in log space
and stay exact (to double precision) for arguments such as ``log_phi(-40)`` or
``log_sigmoid(-800)``. :func:`newton_1d` finds the mode of a 1-D log-concave density.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.linalg
from scipy import special

__all__ = [
    "CANCELLATION",
    "JITTER",
    "LOG_2PI",
    "add_outer",
    "cho_inverse",
    "cho_solve",
    "chol_B",
    "cholesky",
    "inverse_from_triangular_inverse",
    "log_mean_exp",
    "log_phi",
    "log_phi_d2",
    "log_sigmoid",
    "log_sigmoid_d2",
    "newton_1d",
    "probit_ratio",
    "sigmoid",
    "solve_I_plus_WK",
]

#: Where W_i K_ii exceeds this, R&W's (I + W K)^-1 b = b - sW B^-1 sW K b has lost
#: eps W_i K_ii ~ 2e-10 of its i-th component to cancellation, and :func:`solve_I_plus_WK`
#: takes that part in another form.
CANCELLATION = 1e6

#: Added to the diagonal of a kernel matrix whose Cholesky factor is needed on its own
#: (never to B = I + W^1/2 K W^1/2, whose eigenvalues are at least one).
JITTER = 1e-10

LOG_2PI = float(np.log(2.0 * np.pi))
_SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))
_SQRT_HALF = float(np.sqrt(0.5))

# Below this argument the inverse Mills ratio comes from its continued fraction, which
# gives z + r(z) and (z + r)(z + 2r) - 1 without cancellation; 80 terms reach double
# precision for every z <= -3.
_CF_Z = -4.0
_CF_TERMS = 80
# Below -_ASYMPTOTIC_T, log_phi_d2 takes z + r(z) from the asymptotic series of the Mills
# ratio, whose terms (2k - 1)!! / t^(2k) are below 3e-16 by k = 11 there.
_ASYMPTOTIC_T = 20.0
_ASYMPTOTIC_TERMS = 11


def log_phi(z: np.ndarray | float) -> np.ndarray:
    """Log of the standard normal CDF, log Phi(z), accurate for every finite z.

    Uses :func:`scipy.special.log_ndtr`, which switches to an asymptotic expansion
    in the lower tail, so ``log_phi(-40) = -804.608...`` rather than ``-inf``.

    Parameters
    ----------
    z : float or ndarray
        The argument, any finite value.

    Returns
    -------
    ndarray
        log Phi(z), elementwise, with z's shape.
    """
    return special.log_ndtr(np.asarray(z, dtype=float))


def probit_ratio(z: np.ndarray | float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The inverse Mills ratio r(z) = phi(z) / Phi(z) and two differences built from it.

    These give every derivative of log Phi without cancellation:
    d/dz log Phi = r, d2/dz2 = -r (z + r), d3/dz3 = r ((z + r)(z + 2r) - 1).

    For -4 <= z < 0 the ratio is sqrt(2/pi) / erfcx(-z / sqrt(2)), which never
    underflows. Below z = -4 the differences z + r and (z + r)(z + 2r) - 1 are
    differences of nearly equal numbers, so they come from the Laplace continued fraction
    of the Mills ratio, Phi(z)/phi(z) = 1/(t + 1/(t + 2/(t + 3/(t + ...)))), t = -z
    (Abramowitz and Stegun 26.2.14): with e_k = k/(t + e_{k+1}),
    r = t + e_1, z + r = e_1, and (z + r)(z + 2r) - 1 = 2 e_1^2 (e_3 - e_2) / (t + e_3).

    Parameters
    ----------
    z : float or ndarray
        The argument, any finite value.

    Returns
    -------
    r, gap, curvature_gap : ndarray
        r(z), z + r(z) and (z + r)(z + 2r) - 1, each accurate to a few ulp for every
        finite z.
    """
    z = np.asarray(z, dtype=float)
    r = np.empty_like(z)
    neg = z < 0
    r[neg] = _SQRT_2_OVER_PI / special.erfcx(-z[neg] * _SQRT_HALF)
    pos = ~neg
    r[pos] = np.exp(-0.5 * z[pos] ** 2 - 0.5 * LOG_2PI - special.log_ndtr(z[pos]))
    gap = z + r
    curvature_gap = gap * (gap + r) - 1.0
    far = z < _CF_Z
    if np.any(far):
        t = -z[far]
        e = np.zeros_like(t)
        for k in range(_CF_TERMS, 2, -1):
            e = k / (t + e)
        e3 = e
        e2 = 2.0 / (t + e3)
        e1 = 1.0 / (t + e2)
        r[far] = t + e1
        gap[far] = e1
        # e1 (t + e2) = 1, so (z+r)(z+2r) - 1 = e1 (t + 2 e1) - 1 = e1 (2 e1 - e2), and
        # 2 e1 - e2 = 2 (e3 - e2) / ((t + e2)(t + e3)); e3 - e2 ~ 1/t does not cancel
        curvature_gap[far] = 2.0 * e1 * e1 * (e3 - e2) / (t + e3)
    return r, gap, curvature_gap


def log_phi_d2(z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log Phi(z) and its first two derivatives r(z) and -r(z) (z + r(z)), elementwise.

    A faster relative of :func:`log_phi` and :func:`probit_ratio` for quadrature nodes:
    one call of the scaled complementary error function w = ``erfcx(|z| / sqrt 2)`` gives
    ``Phi(-|z|) = w exp(-z^2 / 2) / 2``, hence log Phi(z) = log(w / 2) - z^2 / 2 for z < 0 and
    log1p(-Phi(-z)) for z >= 0, and r = sqrt(2 / pi) / w for z < 0. Below z = -20 the
    difference z + r would lose about log10(z^2) digits, so it comes from the asymptotic
    series of the Mills ratio (Abramowitz and Stegun 26.2.12), t R(t) = 1 - u S(u) with
    u = 1/t^2, t = -z, S(u) = 1 - 3u + 15u^2 - ...: z + r = t u S / (1 - u S).
    Every output is accurate to about 1e-13 relative for every finite z.

    Parameters
    ----------
    z : ndarray
        The arguments, any finite values.

    Returns
    -------
    log_phi, d1, d2 : ndarray
        log Phi(z), r(z) and -r(z) (z + r(z)), each with z's shape.
    """
    z = np.asarray(z, dtype=float)
    half_z2 = 0.5 * z * z
    w = special.erfcx(np.abs(z) * _SQRT_HALF)
    neg = z < 0
    lower_tail = 0.5 * w * np.exp(-half_z2)  # Phi(-|z|)
    g = np.where(neg, np.log(0.5 * w) - half_z2, np.log1p(-lower_tail))
    r = np.where(neg, _SQRT_2_OVER_PI / w, np.exp(-half_z2 - 0.5 * LOG_2PI) / (1.0 - lower_tail))
    gap = z + r
    far = z < -_ASYMPTOTIC_T
    if np.any(far):
        t = -z[far]
        u = 1.0 / (t * t)
        series = np.ones_like(t)
        for k in range(2 * _ASYMPTOTIC_TERMS - 1, 1, -2):
            series = 1.0 - k * u * series
        us = u * series
        gap[far] = t * us / (1.0 - us)
        r[far] = t + gap[far]
    return g, r, -r * gap


def log_sigmoid_d2(f: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log sigma(f) and its first two derivatives sigma(-f) and -sigma(f) sigma(-f).

    From ``e = exp(-|f|)`` alone: log sigma(f) = min(f, 0) - log1p(e), sigma(-f) = e / (1 + e)
    for f >= 0 and 1 / (1 + e) otherwise, sigma(f) sigma(-f) = e / (1 + e)^2; each exact to
    a few ulp for every finite f, without overflow.

    Parameters
    ----------
    f : ndarray
        The arguments, any finite values.

    Returns
    -------
    log_sigma, d1, d2 : ndarray
        log sigma(f), sigma(-f) and -sigma(f) sigma(-f), each with f's shape.
    """
    f = np.asarray(f, dtype=float)
    e = np.exp(-np.abs(f))
    d = 1.0 + e
    g = np.minimum(f, 0.0) - np.log1p(e)
    return g, np.where(f >= 0, e, 1.0) / d, -e / (d * d)


def log_sigmoid(f: np.ndarray | float) -> np.ndarray:
    """log sigma(f) = -log(1 + exp(-f)), exact in both tails (log_sigmoid(-800) = -800).

    Parameters
    ----------
    f : float or ndarray
        The argument.

    Returns
    -------
    ndarray
        log sigma(f), elementwise, with f's shape.
    """
    f = np.asarray(f, dtype=float)
    return -np.logaddexp(0.0, -f)


def sigmoid(f: np.ndarray | float) -> np.ndarray:
    """The logistic sigmoid 1 / (1 + exp(-f)) without overflow (scipy's expit).

    Parameters
    ----------
    f : float or ndarray
        The argument.

    Returns
    -------
    ndarray
        sigma(f), elementwise, with f's shape.
    """
    return special.expit(np.asarray(f, dtype=float))


def logsumexp_finite(x: np.ndarray, axis: int) -> np.ndarray:
    """log sum exp along ``axis`` where the largest term of every slice is finite (a lean
    scipy.special.logsumexp: the quadratures call it once per point and site)."""
    mx = x.max(axis=axis, keepdims=True)
    return np.squeeze(mx, axis=axis) + np.log(np.sum(np.exp(x - mx), axis=axis))


def log_mean_exp(x: np.ndarray, axis: int | tuple[int, ...] | None = None) -> np.ndarray:
    """log mean exp(x) along ``axis`` (a Monte Carlo average of probabilities in log space).

    Computed as m + log(mean(exp(x - m))), m the largest term: every exp(x - m) is at most
    one, so is their mean in floating point, and the result never exceeds max(x). A
    predictive probability averaged over draws that each give log p = 0 therefore stays
    at most 0; ``logsumexp(x) - log(S)`` can land a few ulp above it (scipy 1.17 gives
    +8.9e-16 for 399 zeros and one -6e-15), and exp of that is a probability above one.
    Slices whose terms are all -inf give -inf.

    Parameters
    ----------
    x : array_like
        Log values.
    axis : int or tuple of int, optional
        The axis or axes averaged over; all of them by default.

    Returns
    -------
    ndarray
        ``x`` with ``axis`` removed.
    """
    x = np.asarray(x, dtype=float)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = m + np.log(np.mean(np.exp(x - m), axis=axis, keepdims=True))
    return np.squeeze(out, axis=axis)


def cholesky(A: np.ndarray, *, jitter: float = 0.0, what: str = "matrix") -> np.ndarray:
    """Lower Cholesky factor of a symmetric positive-definite matrix.

    Parameters
    ----------
    A : ndarray, shape (n, n)
    jitter : float
        Added to the diagonal first (relative to the mean diagonal when it is positive).
    what : str
        Names the matrix in the error message.

    Returns
    -------
    ndarray, shape (n, n)
        The lower triangular L with L L^T = A (plus the jitter on the diagonal).

    Raises
    ------
    numpy.linalg.LinAlgError
        If the matrix is not positive definite even with the jitter; the message names it.
    """
    if jitter:
        scale = float(np.mean(np.diag(A))) if A.size else 1.0
        A = A + (jitter * max(scale, 1.0)) * np.eye(A.shape[0])
    try:
        return scipy.linalg.cholesky(A, lower=True, check_finite=False)
    except np.linalg.LinAlgError as exc:
        raise np.linalg.LinAlgError(
            f"the {what} is not positive definite (Cholesky failed): {exc}"
        ) from exc


def chol_B(K: np.ndarray, sW: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor of B = I + sW K sW (R&W eq. 3.26), built in one buffer.

    B's eigenvalues are at least one, so it needs no jitter (R&W section 3.4.3).

    Parameters
    ----------
    K : ndarray, shape (n, n)
        The prior covariance matrix.
    sW : ndarray, shape (n,)
        W^1/2, the square roots of the (non-negative) diagonal of W.

    Returns
    -------
    ndarray, shape (n, n)
        The lower triangular L with L L^T = B.

    Raises
    ------
    numpy.linalg.LinAlgError
        If B is not positive definite in floating point (a kernel scale too large for
        double precision).
    """
    # B is symmetric: built in Fortran order (from the transposed view of K), LAPACK
    # factorises it in place with no copy
    B = np.empty(K.shape, order="F")
    np.multiply(K.T, sW[:, None], out=B)
    B *= sW[None, :]
    B.flat[:: B.shape[0] + 1] += 1.0
    try:
        return scipy.linalg.cholesky(B, lower=True, overwrite_a=True, check_finite=False)
    except np.linalg.LinAlgError:
        raise np.linalg.LinAlgError(
            "B = I + sW K sW is not positive definite in floating point: the kernel's scale "
            f"(largest entry of K {np.max(np.abs(K)):.3g}) is too large for double precision"
        ) from None


def cho_solve(L: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve (L L^T) x = b given the lower Cholesky factor L.

    Parameters
    ----------
    L : ndarray, shape (n, n)
        The lower Cholesky factor.
    b : ndarray, shape (n,) or (n, k)
        The right-hand side(s).

    Returns
    -------
    ndarray
        x = (L L^T)^-1 b, with b's shape.
    """
    return scipy.linalg.cho_solve((L, True), b, check_finite=False)


def solve_I_plus_WK(K: np.ndarray, sW: np.ndarray, L: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(I + W K)^-1 b, W = sW^2 diagonal, from L = chol(B), B = I + sW K sW (:func:`chol_B`),
    without cancellation: the Newton step of the Laplace engines (alpha_new, R&W Alg. 3.1
    line 7) and the sites' mean of the variational ones (alpha = K^-1 (mu - m)).

    R&W compute it as b - sW B^-1 sW K b, a difference of two terms of b's size whose
    result, where W_i K_ii >> 1, is about b_i / (1 + W_i K_ii): it keeps only about
    eps W_i K_ii of b_i's precision there (at K = v I, v = 3e15 Laplace's step in alpha
    rounded to one ulp, f = K alpha moved by multiples of v eps, and Newton "converged" at
    a wrong f; KL's means at v = 1e30 came out as multiples of 6e28). Since
    (I + W K)^-1 = sW B^-1 sW^-1, the part of b where W_i K_ii > :data:`CANCELLATION` (so
    sW_i is not small) is taken as sW B^-1 (b / sW), which does not cancel, and the rest as
    R&W do (also where W_i = 0); one solve with both right-hand sides. Below that R&W's
    form is kept, being as accurate or, with a strongly correlated K, more so
    (sigma_f^2 = 1e4 on 60 points at ell = 1: the other form left Laplace's Newton step at
    6e-6 in f, R&W's at 2e-11).

    Parameters
    ----------
    K : ndarray, shape (n, n)
        The prior covariance matrix.
    sW : ndarray, shape (n,)
        W^1/2, the square roots of W's diagonal.
    L : ndarray, shape (n, n)
        The lower Cholesky factor of B = I + sW K sW, from :func:`chol_B`.
    b : ndarray, shape (n,)
        The right-hand side.

    Returns
    -------
    ndarray, shape (n,)
        (I + W K)^-1 b.
    """
    big = sW * sW * np.diag(K) > CANCELLATION
    if not big.any():
        return b - sW * cho_solve(L, sW * (K @ b))
    b_big = np.where(big, b, 0.0)
    b_rest = b - b_big
    rhs = np.column_stack(
        [np.divide(b_big, sW, out=np.zeros_like(b), where=big), sW * (K @ b_rest)]
    )
    u, t = cho_solve(L, rhs).T
    return sW * u + b_rest - sW * t


def cho_inverse(L: np.ndarray) -> np.ndarray:
    """(L L^T)^-1, symmetric, from the lower Cholesky factor L.

    LAPACK ``dpotri``: one triangular inverse and one triangular product (``dtrtri`` and
    ``dlauum``), about two Cholesky factorisations' work, where ``cho_solve(L, I)`` costs
    about six.

    Parameters
    ----------
    L : ndarray, shape (n, n)
        The lower Cholesky factor.

    Returns
    -------
    ndarray, shape (n, n)
        (L L^T)^-1, both triangles filled.

    Raises
    ------
    numpy.linalg.LinAlgError
        If L is singular.
    """
    inv, info = scipy.linalg.lapack.dpotri(L, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"dpotri failed (info = {info}): L is singular")
    return _mirror_lower(inv)  # (dpotri fills the lower triangle only)


def _mirror_lower(A: np.ndarray, block: int = 128) -> np.ndarray:
    """A's lower triangle copied onto its upper one, in place, by blocks of columns (no
    n x n temporary: at n = 500 each fresh n x n array costs page faults as well)."""
    n = A.shape[0]
    for j in range(0, n, block):
        e = min(j + block, n)
        D = A[j:e, j:e]
        D[...] = np.tril(D) + np.tril(D, -1).T
        A[j:e, e:] = A[e:, j:e].T
    return A


def inverse_from_triangular_inverse(Linv: np.ndarray) -> np.ndarray:
    """(L L^T)^-1 = L^-T L^-1, symmetric, from the lower triangular inverse L^-1 (LAPACK
    ``dlauum``: the second half of :func:`cho_inverse`'s work).

    Parameters
    ----------
    Linv : ndarray, shape (n, n)
        L^-1, lower triangular.

    Returns
    -------
    ndarray, shape (n, n)
        (L L^T)^-1, both triangles filled.
    """
    inv, info = scipy.linalg.lapack.dlauum(Linv, lower=1)
    if info != 0:  # pragma: no cover - dlauum fails only on bad arguments
        raise np.linalg.LinAlgError(f"dlauum failed (info = {info})")
    return _mirror_lower(inv)


def add_outer(A: np.ndarray, c: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """A += c x y^T in place (BLAS ``dger``: one pass over A, no n x n temporary).

    ``A`` must be a C- or Fortran-contiguous float64 array; returned for chaining.

    Parameters
    ----------
    A : ndarray, shape (n, m)
        The matrix updated in place.
    c : float
        The scale of the outer product.
    x : ndarray, shape (n,)
        The left vector.
    y : ndarray, shape (m,)
        The right vector.

    Returns
    -------
    ndarray
        ``A`` itself, updated.

    Raises
    ------
    ValueError
        If ``A`` is neither C- nor Fortran-contiguous.
    """
    x = np.ascontiguousarray(x, dtype=float)
    y = np.ascontiguousarray(y, dtype=float)
    if A.flags.f_contiguous:
        out = scipy.linalg.blas.dger(c, x, y, a=A, overwrite_a=1)
    elif A.flags.c_contiguous:  # A^T is Fortran-ordered: A^T += c y x^T
        out = scipy.linalg.blas.dger(c, y, x, a=A.T, overwrite_a=1)
    else:
        raise ValueError("add_outer needs a contiguous array")
    if not np.shares_memory(out, A):  # pragma: no cover - only if BLAS copied
        A[...] = out if A.flags.f_contiguous else out.T
    return A


def solve_lower(L: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve L x = b for lower-triangular L."""
    return scipy.linalg.solve_triangular(L, b, lower=True, check_finite=False)


def solve_lower_transpose(L: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve L^T x = b for lower-triangular L."""
    return scipy.linalg.solve_triangular(L, b, lower=True, trans="T", check_finite=False)


def newton_1d(
    grad_hess: Callable[[float], tuple[float, float]],
    lo: float,
    hi: float,
    tol: float = 1e-12,
    *,
    x0: float | None = None,
    max_iter: int = 300,
) -> float:
    """The root of a decreasing function in [lo, hi], by Newton safeguarded by bisection.

    Made for the mode of a 1-D log-concave density: ``grad_hess(x)`` returns the first and
    second derivatives (g, h) of its log, g decreasing (h < 0) with one root in the
    bracket. Each step shrinks the bracket to the side of x where the root lies (x
    becomes ``lo`` when g(x) > 0, else ``hi``), then takes the Newton step x - g / h, or
    the bracket's midpoint when that step leaves the open bracket. It stops after the
    step that moves x by less than ``tol`` or leaves a bracket narrower than ``tol``, and
    after ``max_iter`` steps at the latest.

    Parameters
    ----------
    grad_hess : callable
        x -> (g(x), g'(x)), with g'(x) < 0.
    lo, hi : float
        A bracket of the root, lo < hi.
    tol : float, default 1e-12
        Tolerance on the step and on the bracket's width.
    x0 : float, optional
        The starting point (default: the bracket's midpoint).
    max_iter : int, default 300
        The most Newton steps taken.

    Returns
    -------
    float
        The root (the mode of the density), to ``tol``.
    """
    x = 0.5 * (lo + hi) if x0 is None else x0
    for _ in range(max_iter):
        g, h = grad_hess(x)
        if g > 0:
            lo = max(lo, x)
        else:
            hi = min(hi, x)
        new = x - g / h
        if not lo < new < hi:
            new = 0.5 * (lo + hi)
        done = abs(new - x) < tol or hi - lo < tol
        x = new
        if done:
            break
    return x
