"""The multi-class whitened model's log density, compiled once, for nutpie.

At fixed hyperparameters the multi-class MCMC model (:mod:`._mcmc_multiclass`) samples z
in f_c = G u_c, u = (u_1, ..., u_C) = a + B z, whitened by an approximation's C x C site
terms t_i(f_i) = exp(-1/2 f_i^T T_i f_i + b_i^T f_i) (:func:`._whitening.block_site_whitening`),
with the density N(u; 0, I) p(y | F). As in the binary case (:mod:`._compiled`) the prior
is written over the sites: N(u; 0, I) prod_i t_i(f_i) is N(z; 0, I) up to a constant, so

    log p(z | y) = -|z|^2 / 2 + sum_i [log p(y_i | f_i) + 1/2 f_i^T T_i f_i - b_i^T f_i]
                   + const,

F = F0 + H z with H = G_blk B (n C x C r, rows case-major; B turned so that H is lower
trapezoidal, whose zeros the products skip, as in the binary density); its gradient is
-z + H^T d, d_i = d log p(y_i | f_i) / df_i + T_i f_i - b_i: two (n C) x (C r)
matrix-vector products, where -|u|^2 / 2 would take two (C r) x (C r) ones and four n x r
ones (more work unless r < n (C - 1) / C). The constant,
-|a|^2 / 2 - sum_i [1/2 F0_i^T T_i F0_i - b_i^T F0_i], is kept, so the value is the PyMC
model's own (tested to 1e-10 against its compiled log density and gradient). The products
stay in double precision (the binary density's float32 product would gain a few per cent,
less with the multinomial probit, whose quadrature is most of the cost).

The likelihoods (the PyMC model's, the same arithmetic):

- softmax, log p(y = c | f) = f_c - log sum_j exp f_j (R&W eq. 3.34), by the log-sum-exp
  from the largest f_j; its gradient e_c - pi, the c-th as sum_{j != c} pi_j (no
  cancellation where pi_c is close to one);
- multinomial probit, log int N(v | 0, 1) prod_{j != c} Phi(v + f_c - f_j) dv (Girolami
  and Rogers 2006) by :func:`._mcmc_multiclass.probit_log_lik`'s adaptive Gauss-Hermite
  rule: its Newton steps for the mode from v = 0, its scale, its nodes (Hermite's, in the
  buffer with their log weights, computed as there), the log-sum-exp over them; the
  gradient holds the centre and scale fixed, as there (the rule is exact for any), so
  d/dd_j = sum_k p_k r(v_k + d_j), p_k the nodes' normalised terms and r = phi / Phi
  (:func:`._compiled.log_phi_ratio`).

Everything that varies between problems (n, C, r, the likelihood, the rule's nodes and
Newton steps, the constant, H, F0, the labels, the sites) is in one float64 buffer
(:func:`pack`), handed to nutpie as the model's user data, so numba compiles the density
once, and later processes load it from numba's cache.

Measured (benchmarks/bench_mcmc_multiclass.py: one Iris fold, n = 120, C = 3, r = 83; SE
kernel, ell = 4, sigma_f^2 = 400; 4 chains x (1000 tuning + 1000 draws); CPU seconds of
the whole fit, on a loaded 2-core machine, so +-30%): the softmax 8-10 s (sampling 5-7),
where nutpie compiling the PyMC model took 22 s (compilation 10, sampling 9) with
PyTensor's kernel cache warm and 83 s (61 + 13) with it empty; the multinomial probit
53-70 s (sampling 51-67) against 127 s (36 + 87) and 228 s (96 + 127). The same trees,
15 leapfrog steps per draw. A softmax gradient took 50 us, 40 of them the two products,
before they skipped H's zeros (since: 33 us against 62 at n = 120, C = 3, r = 120, and
3.7 ms against 6.1 at n = 677, C = 4, r = 677, synthetic data, one after the other); a
multinomial probit one 500 us, 90% of it the rule (54 log Phi a case). Compiling this
module into an empty numba cache takes 10 s, once; loading it from the cache 0.1 s.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..likelihoods import Likelihood, MultinomialProbit, Softmax
from ._compiled import (
    EXPAND,
    LOGP,
    kept_entries,
    log_phi_ratio,
    lower_part,
    lower_product,
    lower_transpose_product,
    nutpie_model,
    status,
)

__all__ = ["log_density", "pack", "rule", "whitened_model"]

#: The buffer's header: n, C, r, the likelihood's code, the rule's nodes, its Newton
#: steps, the density's constant.
_HEADER = 7
_SOFTMAX, _PROBIT = 0, 1
_SQRT2 = math.sqrt(2.0)


@numba.njit(cache=True)
def _size(n: int, C: int, r: int, nodes: int) -> int:
    """The buffer's length: the header, H, F0, the labels, T, b, the nodes, their terms."""
    return _HEADER + kept_entries(n * C, C * r) + n * C + n + n * C * C + n * C + 2 * nodes


@numba.njit(cache=True)
def _unpack(data: np.ndarray):
    n, C, r, nodes = int(data[0]), int(data[1]), int(data[2]), int(data[4])
    o = _HEADER
    e = kept_entries(n * C, C * r)
    H = data[o : o + e]
    o += e
    F0 = data[o : o + n * C]
    labels = data[o + n * C : o + n * C + n]
    o += n * C + n
    T = data[o : o + n * C * C].reshape((n, C, C))
    o += n * C * C
    b = data[o : o + n * C].reshape((n, C))
    o += n * C
    return H, F0, labels, T, b, data[o : o + nodes], data[o + nodes : o + 2 * nodes]


@numba.njit(cache=True)
def _softmax(f: np.ndarray, c: int, grad: np.ndarray) -> float:
    """log p(y = c | f) (R&W eq. 3.34) from the largest f_j; e_c - pi into ``grad``."""
    top = f.max()
    total = 0.0
    for j in range(f.shape[0]):
        grad[j] = math.exp(f[j] - top)
        total += grad[j]
    others = 0.0
    for j in range(f.shape[0]):
        grad[j] = -grad[j] / total
        if j != c:
            others -= grad[j]
    grad[c] = others  # 1 - pi_c = sum_{j != c} pi_j
    return f[c] - top - math.log(total)


@numba.njit(cache=True)
def _probit(
    f: np.ndarray, c: int, x: np.ndarray, w0: np.ndarray, steps: int, grad: np.ndarray
) -> float:
    """log int N(v | 0, 1) prod_{j != c} Phi(v + f_c - f_j) dv by the adaptive
    Gauss-Hermite rule of :func:`._mcmc_multiclass.probit_log_lik`, step for step; its
    gradient in f, the rule's centre and scale held fixed, into ``grad``."""
    C, nodes = f.shape[0], x.shape[0]
    d = np.empty(C - 1)
    k = 0
    for j in range(C):
        if j != c:
            d[k] = f[c] - f[j]
            k += 1
    u = 0.0
    for _ in range(steps):  # Newton on -u + sum_j r(u + d_j), from 0
        num, den = -u, 1.0
        for j in range(C - 1):
            v = u + d[j]
            ratio = log_phi_ratio(v)[1]
            num += ratio
            den += ratio * (v + ratio)
        u = u + num / den
    den = 1.0
    for j in range(C - 1):
        v = u + d[j]
        ratio = log_phi_ratio(v)[1]
        den += ratio * (v + ratio)
    s = 1.0 / math.sqrt(den)
    log_s = math.log(s)
    terms = np.empty(nodes)
    ratios = np.empty((nodes, C - 1))
    for k in range(nodes):
        uk = u + _SQRT2 * s * x[k]
        terms[k] = w0[k] + log_s - 0.5 * uk * uk
        for j in range(C - 1):
            log_cdf, ratios[k, j] = log_phi_ratio(uk + d[j])
            terms[k] += log_cdf
    top = terms.max()
    total = 0.0
    for k in range(nodes):
        terms[k] = math.exp(terms[k] - top)
        total += terms[k]
    grad[c] = 0.0
    k = 0
    for j in range(C):  # d log p / d d_j = sum_k p_k r(v_k + d_j); d_j = f_c - f_j
        if j != c:
            slope = 0.0
            for m in range(nodes):
                slope += terms[m] * ratios[m, k]
            grad[j] = -slope / total
            grad[c] += slope / total
            k += 1
    return top + math.log(total)


@numba.njit(cache=True)
def _log_density(z: np.ndarray, grad: np.ndarray, data: np.ndarray) -> float:
    """The log density of z (the PyMC model's, its constant included); its gradient is
    written to ``grad``."""
    n, C, code, steps, const = int(data[0]), int(data[1]), int(data[3]), int(data[5]), data[6]
    H, F0, labels, T, b, x, w0 = _unpack(data)
    F = (F0 + lower_product(H, z, n * C)).reshape((n, C))
    d = np.empty((n, C))
    value = const - 0.5 * np.dot(z, z)
    for i in range(n):
        c = int(labels[i])
        if code == _SOFTMAX:
            value += _softmax(F[i], c, d[i])
        else:
            value += _probit(F[i], c, x, w0, steps, d[i])
        for j in range(C):  # p(y | f) / t(f): + 1/2 f^T T f - b^T f, d + T f - b
            Tf = 0.0
            for k in range(C):
                Tf += T[i, j, k] * F[i, k]
            value += F[i, j] * (0.5 * Tf - b[i, j])
            d[i, j] += Tf - b[i, j]
    grad[:] = lower_transpose_product(d.reshape(n * C), H, z.shape[0]) - z
    return value


@numba.cfunc(LOGP, cache=True)
def _logp_cfunc(dim, x_ptr, grad_ptr, logp_ptr, data_ptr):  # pragma: no cover - called by nutpie
    head = numba.carray(data_ptr, (_HEADER,), np.float64)
    n, C, r, nodes = int(head[0]), int(head[1]), int(head[2]), int(head[4])
    if dim != C * r:
        return -1
    data = numba.carray(data_ptr, (_size(n, C, r, nodes),), np.float64)
    grad = numba.carray(grad_ptr, (dim,))
    try:  # (as nutpie's own callbacks: an exception cannot cross the C boundary)
        value = _log_density(numba.carray(x_ptr, (dim,)), grad, data)
    except Exception:  # noqa: BLE001
        return 1
    logp_ptr[0] = value
    return status(value, grad)


@numba.cfunc(EXPAND, cache=True)
def _expand_cfunc(dim, expanded, x_ptr, f_ptr, data_ptr):  # pragma: no cover - by nutpie
    head = numba.carray(data_ptr, (_HEADER,), np.float64)
    n, C, r, nodes = int(head[0]), int(head[1]), int(head[2]), int(head[4])
    if dim != C * r or expanded != n * C:
        return -1
    data = numba.carray(data_ptr, (_size(n, C, r, nodes),), np.float64)
    H, F0, _, _, _, _, _ = _unpack(data)
    f = numba.carray(f_ptr, (n * C,))
    try:
        f[:] = F0 + lower_product(H, numba.carray(x_ptr, (dim,)), n * C)  # F = F0 + H z, case-major
    except Exception:  # noqa: BLE001
        return -2
    return 0


def _code(likelihood: Likelihood) -> int:
    if isinstance(likelihood, Softmax):
        return _SOFTMAX
    if isinstance(likelihood, MultinomialProbit):
        return _PROBIT
    raise ValueError(f"no compiled multi-class density for the {likelihood!r} likelihood")


def rule(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """The multinomial probit rule's nodes x_k and the constant part of its terms,
    log w_k + x_k^2 + log sqrt 2 - log sqrt(2 pi), as :func:`._mcmc_multiclass.probit_log_lik`
    computes them (Hermite's nodes and weights)."""
    x, w = np.polynomial.hermite.hermgauss(nodes)
    return x, np.log(w) + x**2 + 0.5 * np.log(2.0) - 0.5 * np.log(2 * np.pi)


def pack(
    G: np.ndarray,
    a: np.ndarray,
    H: np.ndarray,
    T: np.ndarray,
    b: np.ndarray,
    codes: np.ndarray,
    likelihood: Likelihood,
    nodes: int,
    steps: int,
) -> np.ndarray:
    """The buffer the compiled density reads.

    Parameters
    ----------
    G : ndarray, shape (n, r)
        K ~= G G^T (:func:`._whitening.prior_factor`).
    a : ndarray, shape (C r,)
        u = a + B z, class-major, f_c = G u_c (:func:`._whitening.block_site_whitening`).
    H : ndarray, shape (n C, C r)
        G_blk B, rows case-major (i C + c), lower trapezoidal: B turned by
        :func:`._whitening.turned_block`, which returns this H (anything above its
        diagonal is refused).
    T : ndarray, shape (n, C, C)
    b : ndarray, shape (n, C)
        The sites t_i(f_i) = exp(-1/2 f_i^T T_i f_i + b_i^T f_i) that whitened.
    codes : ndarray, shape (n,)
        The labels, class indices 0..C-1.
    likelihood : Softmax or MultinomialProbit
    nodes, steps : int
        The multinomial probit rule's Gauss-Hermite nodes and Newton steps
        (:data:`._mcmc_multiclass.GH_NODES`, ``_mcmc_multiclass._NEWTON_STEPS``).

    Returns
    -------
    ndarray
        float64, read-only: the header (n, C, r, the likelihood's code, the rule's nodes
        and Newton steps, the constant), H's kept entries row by row (rows i C + c,
        min(i C + c + 1, C r) each), F0 (n, C), the
        labels, T, b, the Hermite nodes and their log weights with the rule's constants.
    """
    code = _code(likelihood)
    n, r = G.shape
    C = T.shape[1]
    codes = np.asarray(codes)
    shapes = {"a": (a.shape, (C * r,)), "H": (H.shape, (n * C, C * r)), "T": (T.shape, (n, C, C))}
    shapes |= {"b": (b.shape, (n, C)), "codes": (codes.shape, (n,))}
    for name, (shape, expected) in shapes.items():
        if shape != expected:
            raise ValueError(f"{name} must have shape {expected}, got {shape}")
    if C < 2 or not np.all((codes >= 0) & (codes < C) & (codes == np.round(codes))):
        raise ValueError(f"codes must be class indices 0..{C - 1}, with C >= 2")
    T = 0.5 * (T + T.transpose(0, 2, 1))  # (the gradient T f takes the symmetric part)
    F0 = G @ a.reshape(C, r).T
    sites = 0.5 * np.einsum("ic,icd,id->", F0, T, F0) - np.sum(b * F0)
    const = -0.5 * float(a @ a) - float(sites)
    x, w0 = rule(nodes)
    data = np.empty(_size(n, C, r, nodes))
    data[:_HEADER] = [n, C, r, code, nodes, steps, const]
    e = kept_entries(n * C, C * r)
    data[_HEADER : _HEADER + e] = lower_part(H)
    rest = [F0.ravel(), codes, T.ravel(), b.ravel(), x, w0]
    data[_HEADER + e :] = np.concatenate([np.asarray(v, dtype=float) for v in rest])
    data.flags.writeable = False
    return data


def _checked(data: np.ndarray) -> np.ndarray:
    """The buffer as the C functions read it, or a ValueError (they trust its header)."""
    data = np.ascontiguousarray(data, dtype=np.float64)
    head = [int(v) for v in data[:_HEADER]] if data.size >= _HEADER else [0] * _HEADER
    n, C, r, nodes = head[0], head[1], head[2], head[4]
    if data.ndim != 1 or min(n, C - 1, r, nodes) < 1 or data.size != _size(n, C, r, nodes):
        raise ValueError("the compiled multi-class density needs the buffer pack() returns")
    return data


def log_density(z: np.ndarray, data: np.ndarray) -> tuple[float, np.ndarray]:
    """The compiled log density of z (the PyMC model's, constant included) and its
    gradient, from Python.

    Parameters
    ----------
    z : ndarray, shape (C r,)
    data : ndarray
        From :func:`pack`.
    """
    data = _checked(data)
    grad = np.empty(int(data[1]) * int(data[2]))
    return float(_log_density(np.asarray(z, dtype=float), grad, data)), grad


def whitened_model(data: np.ndarray):
    """A nutpie model of z with the compiled density, recording F = F0 + H z (dims
    ``("obs", "class")``) for every draw.

    Parameters
    ----------
    data : ndarray
        From :func:`pack` (held by the model for as long as it samples).

    Returns
    -------
    nutpie.compile_pymc.CompiledPyMCModel
        Its initial points are standard normal draws (the whitening's approximation of the
        posterior).
    """
    data = _checked(data)
    n, C, r = (int(v) for v in data[:3])
    coords = {"obs": n, "class": C}
    return nutpie_model(data, C * r, (n, C), coords, logp=_logp_cfunc, expand=_expand_cfunc)
