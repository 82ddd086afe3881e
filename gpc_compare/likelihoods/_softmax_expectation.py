"""E_q[log softmax_y(f)] under a Gaussian q(f) = N(m, F F^T), with its derivatives: the
expected log-likelihood of the multi-class KL engine (Opper and Archambeau 2009; its
gradients are Gaussian expectations too, Bonnet's and Price's theorems:
dE/dm = E[d log p / df], dE/d Sigma = 1/2 E[d^2 log p / df^2]).

With f = m + F z, z ~ N(0, I_d) (d <= C - 1: the softmax depends on f only through the
C - 1 differences), two rules:

``quadrature`` (:func:`expected_log_softmax_quadrature`)
    A tensor-product trapezoid rule in z, |z_k| <= 8.5 (the Gaussian mass left out is
    below 1e-16 an axis), its weights the normalised Gaussian density. log softmax is
    analytic, its nearest complex singularities where two of the exp(f_c) cancel: along
    axis k, f_c = m_c + F_ck z_k, so with z_k = x + i t the imaginary parts of the f_c
    span t r_k, r_k = max_c F_ck - min_c F_ck, and while that is below pi every
    exp(f_c) lies in one open half-plane and their sum is not zero. The integrand is
    analytic in the strip |Im z_k| < pi / r_k, and the trapezoid rule's error falls as
    exp(-2 pi a / h) there (Trefethen and Weideman 2014, section 5): the step
    h_k = min(0.35, 1.0 / r_k) makes that exp(-2 pi^2) ~ 3e-9 at the strip's edge,
    and measured, against a rule four times finer, errors below 1e-10 in the value and
    its derivatives for r up to 40 (tests/test_softmax_expectation.py). The cost grows
    as r^d: at most 2^16 nodes a case, beyond which (r above about 16 for three classes)
    the step widens and the error grows (about 1e-9 at r = 25, 1e-7 at r = 40); every
    case reports its node count.
``mc`` (:func:`expected_log_softmax_mc`)
    log softmax_y(f) = sum_{c != y} log sigma(f_y - f_c) + gap(f): the first part is
    Titsias' (2016) one-vs-each bound, whose expectation is C - 1 one-dimensional
    logistic-normal integrals (:meth:`Logistic.expected_log_prob`, about 1e-13), and the
    gap, log[prod_c (1 + e^{D_c}) / (1 + sum_c e^{D_c})] >= 0 with D_c = f_c - f_y, is
    near zero wherever at most one class competes with y, so Monte Carlo on it has a small
    variance (a control variate; on Iris the bound's standard error is twenty times
    smaller than plain Monte Carlo's; for two classes the gap is zero). The draws z are
    fixed by a seed (:func:`antithetic_normal`: pairs z, -z), so the estimate is one smooth
    function of (m, F) that an optimiser can follow (a sample average approximation).
    Besides the value and dE/dm it gives 2 dE/dSigma of the one-vs-each part and
    E[(d gap / df) z^T], the exact derivative of the gap's estimate in F, and the standard
    error of the value from the spread of the pairs' means. For any C.

Everything is computed in log space: log softmax_y(f) = -log(1 + sum_{c != y}
exp(f_c - f_y)) by log1p, the probabilities pi_c and 1 - pi_c = -expm1(log pi_c) without
cancellation, so confident cases (pi_y = 1 - 1e-12) keep their small derivatives exactly.
Every sum is of one sign (log p <= 0, the Hessian negative semi-definite at every node,
all weights positive), so nothing cancels.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from .binary import Logistic

__all__ = [
    "SoftmaxExpectation",
    "antithetic_normal",
    "expected_log_softmax_mc",
    "expected_log_softmax_quadrature",
]

#: Half-width of the trapezoid grid in each whitened axis.
QUAD_SPAN = 8.5
#: Largest step (where r_k is small the Gaussian alone sets it).
QUAD_MAX_STEP = 0.35
#: The step is QUAD_STEP / r_k: the error at the strip's edge is exp(-2 pi^2 / QUAD_STEP).
QUAD_STEP = 1.0
#: Most nodes per case; beyond, the step widens.
QUAD_MAX_NODES = 2**16


class SoftmaxExpectation(NamedTuple):
    """E_q[log softmax_y(f)] and its derivatives, for N cases of C classes.

    Attributes
    ----------
    value : ndarray, shape (N,)
        E[log p(y | f)].
    grad : ndarray, shape (N, C)
        E[d log p / df] = E[e_y - pi]: dE/dm.
    hess : ndarray, shape (N, C, C)
        2 dE/dSigma of the part integrated deterministically: the whole
        E[d^2 log p / df^2] = -E[diag(pi) - pi pi^T] (quadrature, Price's theorem), or the
        one-vs-each part's (Monte Carlo).
    grad_z : ndarray, shape (N, C, d), or None
        E[(d gap / df) z^T] (Monte Carlo): the derivative of the gap's estimate in F (so
        dE/dF = hess F + grad_z); None for the quadrature.
    se : ndarray, shape (N,)
        Standard error of ``value`` (0 for the quadrature).
    nodes : ndarray, shape (N,)
        Nodes (quadrature) or draws (Monte Carlo) per case.
    """

    value: np.ndarray
    grad: np.ndarray
    hess: np.ndarray
    grad_z: np.ndarray | None
    se: np.ndarray
    nodes: np.ndarray


def antithetic_normal(
    n: int, n_samples: int, d: int, random_seed: int | np.random.Generator | None
) -> np.ndarray:
    """Standard normal draws z, shape (n, 2 * ceil(n_samples / 2), d): for each case its
    own draws, the second half the negatives of the first (antithetic pairs)."""
    half = -(-int(n_samples) // 2)
    z = np.random.default_rng(random_seed).standard_normal((n, half, d))
    return np.concatenate([z, -z], axis=1)


@numba.njit(cache=True)
def _node(yi: int, f: np.ndarray, pi: np.ndarray, om: np.ndarray) -> float:
    """log softmax_yi(f) at one node f (C,), filling pi (C,) and om = 1 - pi (C,).

    With D_c = f_c - f_yi and t = max(0, max_c D_c), the terms e_c = exp(D_c - t) (the
    largest is 1) sum to T: pi_c = e_c / T and log p(yi | f) = log pi_yi = -t - l,
    l = log1p(T - 1), T - 1 summed as (exp(-t) - 1) + sum_{c != yi} e_c (exactly 0 + the
    small terms when yi leads). 1 - pi_c is the sum of the other terms over T where
    pi_c >= 1/2 (no cancellation). C + 1 transcendental functions a node.
    """
    C = f.shape[0]
    fy = f[yi]
    top = 0.0
    for c in range(C):
        top = max(top, f[c] - fy)
    e_top = math.exp(-top)
    rest = 0.0
    for c in range(C):
        if c != yi:
            pi[c] = math.exp(f[c] - fy - top)
            rest += pi[c]
    pi[yi] = e_top
    total = e_top + rest
    ell = math.log1p((e_top - 1.0) + rest)
    for c in range(C):
        pi[c] /= total
    for c in range(C):
        if pi[c] < 0.5:
            om[c] = 1.0 - pi[c]
        else:  # the leading class: the others' share, summed
            others = 0.0
            for c2 in range(C):
                if c2 != c:
                    others += pi[c2]
            om[c] = others
    return -(top + ell)


@numba.njit(cache=True)
def _quadrature_sums(y, mean, F, h, grid, value, grad, second):  # pragma: no cover (numba)
    """The trapezoid sums (module note) for every case: value (N,), grad (N, C) and
    second = E[d^2 log p / df^2] (N, C, C), the Gaussian weights normalised per case.
    ``grid`` (d, P) holds the integer node offsets; node p is z = h_i * grid[:, p]."""
    N, C, d = F.shape
    P = grid.shape[1]
    f, pi, om, z = np.empty(C), np.empty(C), np.empty(C), np.empty(d)
    half = np.empty(d, dtype=np.int64)
    for k in range(d):
        half[k] = -grid[k, 0]  # the grid starts at -n_k on every axis
    for i in range(N):
        yi = y[i]
        axis_w = np.empty((d, 2 * half.max() + 1))  # exp(-(h j)^2 / 2) per axis and offset
        for k in range(d):
            for j in range(-half[k], half[k] + 1):
                axis_w[k, j + half[k]] = math.exp(-0.5 * (h[i, k] * j) ** 2)
        total = v = 0.0
        g = np.zeros(C)
        s2 = np.zeros((C, C))
        for p in range(P):
            w = 1.0
            for k in range(d):
                j = grid[k, p]
                z[k] = h[i, k] * j
                w *= axis_w[k, j + half[k]]
            for c in range(C):
                acc = mean[i, c]
                for k in range(d):
                    acc += F[i, c, k] * z[k]
                f[c] = acc
            lp = _node(yi, f, pi, om)
            total += w
            v += w * lp
            for c in range(C):
                g[c] += w * (om[c] if c == yi else -pi[c])
                s2[c, c] -= w * pi[c] * om[c]  # -pi_c (1 - pi_c)
                for c2 in range(c):
                    s2[c, c2] += w * pi[c] * pi[c2]
        value[i] = v / total
        for c in range(C):
            grad[i, c] = g[c] / total
            for c2 in range(c + 1):
                second[i, c, c2] = second[i, c2, c] = s2[c, c2] / total


@numba.njit(cache=True)
def _gap_node(yi: int, f: np.ndarray, e: np.ndarray, g: np.ndarray) -> float:
    """The gap log softmax_yi(f) - sum_{c != yi} log sigma(f_yi - f_c) >= 0 at one node,
    and its gradient in f (filled into g): (e_yi - pi) - sum_{c != yi} sigma(D_c)
    (e_yi - e_c), D_c = f_c - f_yi; ``e`` is workspace (C,).

    As in :func:`_node`, t = max(0, max_c D_c), e_c = exp(D_c - t) and T = exp(-t) +
    sum_{c != yi} e_c give log softmax_yi = -t - log1p(T - 1), pi_c = e_c / T and
    1 - pi_yi = (T - exp(-t)) / T, summed; exp(-|D_c|) is e_c / exp(-t) (D_c <= 0) or
    exp(-t) / e_c, so a node costs 2 C transcendental functions.
    """
    C = f.shape[0]
    fy = f[yi]
    top = 0.0
    for c in range(C):
        top = max(top, f[c] - fy)
    e_top = math.exp(-top)
    rest = 0.0
    for c in range(C):
        if c != yi:
            e[c] = math.exp(f[c] - fy - top)
            rest += e[c]
    total = e_top + rest
    value = -(top + math.log1p((e_top - 1.0) + rest))
    g[yi] = rest / total  # 1 - pi_yi
    for c in range(C):
        if c != yi:
            D = f[c] - fy
            if e_top > 1e-300:
                t = e[c] / e_top if D <= 0.0 else e_top / e[c]
            else:
                t = math.exp(-abs(D))
            value += max(D, 0.0) + math.log1p(t)  # softplus(D) = -log sigma(-D)
            sig = 1.0 / (1.0 + t) if D >= 0.0 else t / (1.0 + t)
            g[c] = sig - e[c] / total
            g[yi] -= sig
    return value


@numba.njit(cache=True)
def _mc_sums(y, mean, F, z, value, grad, grad_z, se):  # pragma: no cover (numba)
    """Monte Carlo averages of the gap (:func:`_gap_node`) over the draws z (N, M, d) for
    every case: value, grad, grad_z = E[(d gap / df) z^T] (N, C, d), and the standard error
    from the antithetic pairs (draw p and draw p + M/2)."""
    N, C, d = F.shape
    M = z.shape[1]
    half = M // 2
    f, work, gn, vals = np.empty(C), np.empty(C), np.empty(C), np.empty(M)
    for i in range(N):
        yi = y[i]
        v = 0.0
        g = np.zeros(C)
        gz = np.zeros((C, d))
        for p in range(M):
            for c in range(C):
                acc = mean[i, c]
                for k in range(d):
                    acc += F[i, c, k] * z[i, p, k]
                f[c] = acc
            vals[p] = _gap_node(yi, f, work, gn)
            v += vals[p]
            for c in range(C):
                g[c] += gn[c]
                for k in range(d):
                    gz[c, k] += gn[c] * z[i, p, k]
        value[i] = v / M
        for c in range(C):
            grad[i, c] = g[c] / M
            for k in range(d):
                grad_z[i, c, k] = gz[c, k] / M
        ss = 0.0
        for p in range(half):
            u = 0.5 * (vals[p] + vals[p + half]) - value[i]
            ss += u * u
        se[i] = math.sqrt(ss / (half - 1) / half) if half > 1 else math.inf


def _one_vs_each(y: np.ndarray, mean: np.ndarray, F: np.ndarray):
    """sum_{c != y} E[log sigma(f_y - f_c)] (Titsias 2016's one-vs-each bound on log softmax,
    which it equals for two classes) and its derivatives: the value (N,), dE/dmean (N, C)
    and 2 dE/dSigma (N, C, C), each term a one-dimensional expectation under
    f_y - f_c ~ N(mean_y - mean_c, a^T Sigma a), a = e_y - e_c
    (:meth:`Logistic.expected_log_prob`, accurate to about 1e-13)."""
    N, C, _ = F.shape
    rows = np.arange(N)
    others = np.array([[c for c in range(C) if c != yi] for yi in y]).reshape(N, C - 1)
    A = np.zeros((N, C - 1, C))  # the a's: +1 at y, -1 at c
    A[rows[:, None], np.arange(C - 1)[None, :], y[:, None]] = 1.0
    A[rows[:, None], np.arange(C - 1)[None, :], others] = -1.0
    AF = A @ F  # (N, C - 1, d)
    m = np.einsum("nkc,nc->nk", A, mean)
    v = np.einsum("nkd,nkd->nk", AF, AF)
    E, dm, dv = Logistic().expected_log_prob(1.0, m, v)
    grad = np.einsum("nk,nkc->nc", dm, A)
    second = 2.0 * np.einsum("nk,nkc,nkd->ncd", dv, A, A)
    return E.sum(axis=1), grad, second


def _check(y: np.ndarray, mean: np.ndarray, F: np.ndarray) -> None:
    if mean.ndim != 2 or F.ndim != 3 or F.shape[:2] != mean.shape or y.shape != mean.shape[:1]:
        raise ValueError(
            f"expected y (N,), mean (N, C) and F (N, C, d); got {y.shape}, {mean.shape}, {F.shape}"
        )
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(F))):
        raise ValueError("the Gaussian's mean and factor must be finite")


def _half_counts(F: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per case and axis: the trapezoid step h (N, d) and half-count n (N, d), so that the
    grid h * (-n..n) covers |z| <= QUAD_SPAN (module note). The counts are rounded up to
    n0 * 2^j (n0 the count at the largest step), so that cases share few grids, and
    capped at QUAD_MAX_NODES a case (the step then widens)."""
    N, _, d = F.shape
    r = np.ptp(F, axis=1)  # (N, d): the range of each axis's column over the classes
    with np.errstate(divide="ignore"):
        h = np.minimum(QUAD_MAX_STEP, QUAD_STEP / r)
    n0 = int(np.ceil(QUAD_SPAN / QUAD_MAX_STEP))
    need = np.ceil(QUAD_SPAN / h)
    n = n0 * 2 ** np.ceil(np.log2(np.maximum(need / n0, 1.0))).astype(int)
    cap = max(n0, int((QUAD_MAX_NODES ** (1.0 / d) - 1) // 2))
    over = n > cap
    n = np.minimum(n, cap)
    h = np.where(over, QUAD_SPAN / cap, h)
    return h, n.astype(int)


def expected_log_softmax_quadrature(
    y: np.ndarray, mean: np.ndarray, F: np.ndarray
) -> SoftmaxExpectation:
    """E_q[log softmax_y(f)] for q = N(mean, F F^T) by the trapezoid rule (module note),
    with dE/dmean and E[d^2 log p / df^2].

    Parameters
    ----------
    y : ndarray of int, shape (N,)
        Class indices.
    mean : ndarray, shape (N, C)
    F : ndarray, shape (N, C, d)
        f = mean + F z, z ~ N(0, I_d); best with orthogonal columns (the eigenvectors of
        the covariance scaled by the square roots of its eigenvalues), whose ranges set
        each axis's step.
    """
    y, mean, F = np.asarray(y, dtype=int), np.asarray(mean, float), np.asarray(F, float)
    _check(y, mean, F)
    N, C, d = F.shape
    value, se, nodes = np.empty(N), np.zeros(N), np.empty(N)
    grad, hess = np.empty((N, C)), np.empty((N, C, C))
    h, n = _half_counts(F)
    groups, inverse = np.unique(n, axis=0, return_inverse=True)
    for gi, counts in enumerate(groups):
        idx = np.flatnonzero(inverse.ravel() == gi)
        axes = [np.arange(-k, k + 1) for k in counts]
        grid = np.stack(np.meshgrid(*axes, indexing="ij")).reshape(d, -1)  # (d, P)
        nodes[idx] = grid.shape[1]
        grid = grid.astype(np.int64)
        out = np.empty(idx.size), np.empty((idx.size, C)), np.empty((idx.size, C, C))
        _quadrature_sums(y[idx], mean[idx], F[idx], h[idx], grid, *out)
        value[idx], grad[idx], hess[idx] = out
    return SoftmaxExpectation(value, grad, hess, None, se, nodes)


def expected_log_softmax_mc(
    y: np.ndarray, mean: np.ndarray, F: np.ndarray, z: np.ndarray
) -> SoftmaxExpectation:
    """E_q[log softmax_y(f)] for q = N(mean, F F^T): the one-vs-each part exactly, the gap
    by Monte Carlo on the draws ``z`` (N, M, d) (module note).

    Returns the estimate, dE/dmean, ``hess`` = 2 dE/dSigma of the one-vs-each part,
    ``grad_z`` = E[(d gap / df) z^T] (the derivative of the gap's estimate in F) and the
    standard error from the antithetic pairs (the second half of the draws negates the
    first, as :func:`antithetic_normal` makes them).
    """
    y, mean, F = np.asarray(y, dtype=int), np.asarray(mean, float), np.asarray(F, float)
    _check(y, mean, F)
    N, C, d = F.shape
    if z.ndim != 3 or z.shape[0] != N or z.shape[2] != d or z.shape[1] % 2:
        raise ValueError(f"z must have shape ({N}, an even M, {d}), got {z.shape}")
    M = z.shape[1]
    value, se = np.empty(N), np.empty(N)
    grad, grad_z = np.empty((N, C)), np.empty((N, C, d))
    _mc_sums(y, mean, F, np.ascontiguousarray(z, dtype=float), value, grad, grad_z, se)
    ove, ove_grad, ove_second = _one_vs_each(y, mean, F)
    return SoftmaxExpectation(
        ove + value, ove_grad + grad, ove_second, grad_z, se, np.full(N, float(M))
    )
