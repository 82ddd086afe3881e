"""The whitened model's log density, compiled once, for nutpie.

At fixed hyperparameters the MCMC engine samples z in g = f - m = g0 + H z (g0 = G a,
H = G B Q: :mod:`._whitening`) with density

    log p(z | y) = log N(z; 0, I) + log p(y | m + g) + 1/2 g^T T g - b^T g + const,

the prior written over the approximation's sites t(g) = exp(-1/2 g^T T g + b^T g) (EP's or
Laplace's), which the whitening makes close to N(0, I). Its gradient is
-z + H^T (d log p(y | f) / df + T g - b): two n x r matrix-vector products. H is lower
trapezoidal (G B turned by an orthogonal Q, which leaves z's N(0, I) as it is:
:func:`._whitening.lower_trapezoidal`), and only its min(i + 1, r) leading entries of row i
are kept and multiplied: at r ~ n (the usual case) half of the arithmetic and of the
memory read, which is what bounds these products.

PyMC can build this density (the engine does, for PyMC's own sampler), but nutpie's route
from a PyMC model generates and compiles numba code for every model, about 10 s at n = 300,
more than the sampling itself. Here the density is written once, by hand, in numba and
compiled once per process (cached on disk: later processes load it in a fraction of a
second), with everything that changes between problems (n, r, H, g0, y, T, b, the
likelihood) in one float64 buffer handed to nutpie as the model's user data. The compiled
functions follow the C interface nutpie uses for PyMC models (``CompiledPyMCModel``:
``logp(dim, x, grad, logp, data) -> status`` and ``expand(dim, n, x, f, data) -> status``).

The gradient's product H^T d is taken in single precision, from a float32 copy of H kept
in the same buffer: it is half of the density's arithmetic, and single precision does it
in about half the time (at n = 300 the density 9% faster, a gradient in the sampler
4-8%). The value stays exact, and the value is all that NUTS's choice of the next draw
uses; a leapfrog step whose force depends on the position alone, rounded or not, is still
reversible and volume-preserving, so the chain's stationary distribution is still the
exact posterior (Neal 2011, "MCMC using Hamiltonian dynamics", Handbook of MCMC,
sec. 5.5.5, on computing trajectories with approximations). nutpie uses the gradient
nowhere else after tuning (during tuning, for its mass matrix). The rounding, about 1e-7
relative to |H|^T |d| (tested against its bound), perturbs the trajectories far less than
the leapfrog's own error does. Its limit is single precision's range: a d beyond 3e38
(e.g. a Gaussian noise variance below ~1e-60) makes the gradient infinite, which nutpie
refuses, and the engine falls back to PyMC's sampler and says so.

The probit's log Phi and its derivative phi / Phi are computed here as they are in
:func:`gpc_compare.numerics.log_phi_d2` (the asymptotic series of the Mills ratio below
z = -20, Abramowitz and Stegun 26.2.12) and tested against it: numba cannot call SciPy's
special functions from a cached function.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pandas as pd

from ..likelihoods import Gaussian, Likelihood, Logistic, Probit

__all__ = [
    "EXPAND",
    "LOGP",
    "kept_entries",
    "log_density",
    "log_phi_ratio",
    "lower_part",
    "lower_product",
    "lower_transpose_product",
    "nutpie_model",
    "pack",
    "status",
    "whitened_model",
]

#: The buffer's header: n, r, the likelihood's code, m, the Gaussian noise variance.
_HEADER = 5
_PROBIT, _LOGISTIC, _GAUSSIAN = 0, 1, 2
_SQRT_HALF = math.sqrt(0.5)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
# Below -_ASYMPTOTIC_T the Mills ratio's asymptotic series; (2k - 1)!! / t^(2k) < 3e-16
# by k = 11 there (as in gpc_compare.numerics)
_ASYMPTOTIC_T = 20.0
_ASYMPTOTIC_TERMS = 11


@numba.njit(cache=True)
def log_phi_ratio(z: float) -> tuple[float, float]:
    """log Phi(z) and r(z) = phi(z) / Phi(z) = d/dz log Phi(z), for every finite z.

    z >= 0: log1p(-Phi(-z)); -20 <= z < 0: log(erfc(-z / sqrt 2) / 2), which does not
    underflow there (Phi(-20) ~ 3e-89); below, with t = -z and u = 1/t^2,
    Phi(z) = phi(t) (1 - u S(u)) / t, S(u) = 1 - 3u + 15u^2 - ... (A&S 26.2.12), so
    log Phi = -t^2/2 - log sqrt(2 pi) - log t + log1p(-u S) and r = t / (1 - u S).
    """
    if z < -_ASYMPTOTIC_T:
        t = -z
        u = 1.0 / (t * t)
        series = 1.0
        for k in range(2 * _ASYMPTOTIC_TERMS - 1, 1, -2):
            series = 1.0 - k * u * series
        us = u * series
        return -0.5 * t * t - _HALF_LOG_2PI - math.log(t) + math.log1p(-us), t / (1.0 - us)
    if z < 0.0:
        log_cdf = math.log(0.5 * math.erfc(-z * _SQRT_HALF))
    else:
        log_cdf = math.log1p(-0.5 * math.erfc(z * _SQRT_HALF))
    return log_cdf, math.exp(-0.5 * z * z - _HALF_LOG_2PI - log_cdf)


@numba.njit(cache=True)
def _log_likelihood(code: int, y: float, f: float, variance: float) -> tuple[float, float]:
    """log p(y | f) and its derivative in f, for one observation."""
    if code == _PROBIT:  # log Phi(y f) (R&W eq. 3.16 for its derivatives)
        value, ratio = log_phi_ratio(y * f)
        return value, y * ratio
    if code == _LOGISTIC:  # log sigma(y f) = -log(1 + exp(-y f)) (R&W eq. 3.15), both signs
        s = -y * f
        if s > 0.0:
            e = math.exp(-s)
            return -(s + math.log1p(e)), y / (1.0 + e)
        e = math.exp(s)
        return -math.log1p(e), y * e / (1.0 + e)
    residual = y - f  # Gaussian, up to its constant
    return -0.5 * residual * residual / variance, residual / variance


@numba.njit(cache=True)
def kept_entries(n: int, r: int) -> int:
    """The entries of a lower trapezoidal n x r H kept: min(i + 1, r) in row i."""
    k = min(n, r)
    return k * (k + 1) // 2 + (n - k) * r


@numba.njit(cache=True)
def _size(n: int, r: int) -> int:
    """The buffer's length: the header, H, four n-vectors, H in float32 (two a float64)."""
    e = kept_entries(n, r)
    return _HEADER + e + 4 * n + (e + 1) // 2


@numba.njit(cache=True)
def _unpack(data: np.ndarray):
    n, r = int(data[0]), int(data[1])
    e = kept_entries(n, r)
    o = _HEADER
    H = data[o : o + e]
    o += e
    single = data[o + 4 * n : _size(n, r)].view(np.float32)[:e]
    return (
        H,
        data[o : o + n],
        data[o + n : o + 2 * n],
        data[o + 2 * n : o + 3 * n],
        data[o + 3 * n : o + 4 * n],
        single,
    )


# (reassociation lets the loops run in SIMD lanes; no assumption about NaN or infinities,
# which the status check must see)
@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def lower_product(H: np.ndarray, z: np.ndarray, n: int) -> np.ndarray:
    """H z, H lower trapezoidal with its rows' kept entries in a row (see :func:`pack`)."""
    r = z.shape[0]
    g = np.empty(n)
    o = 0
    for i in range(n):
        k = min(i + 1, r)
        s = 0.0
        for j in range(k):
            s += H[o + j] * z[j]
        g[i] = s
        o += k
    return g


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def lower_transpose_product(d: np.ndarray, H: np.ndarray, r: int) -> np.ndarray:
    """H^T d in d's precision (here single: d and H float32), H as in :func:`lower_product`."""
    out = np.zeros(r, dtype=d.dtype)
    o = 0
    for i in range(d.shape[0]):
        k = min(i + 1, r)
        d_i = d[i]
        for j in range(k):
            out[j] += d_i * H[o + j]
        o += k
    return out


@numba.njit(cache=True)
def _log_density(z: np.ndarray, grad: np.ndarray, data: np.ndarray) -> float:
    """The log density of z (up to a constant); its gradient, with H^T d in single
    precision (see the module note), is written to ``grad``."""
    code, m, variance = int(data[2]), data[3], data[4]
    H, g0, y, T, b, H_single = _unpack(data)
    g = g0 + lower_product(H, z, g0.shape[0])
    d = np.empty(g.shape[0], dtype=np.float32)
    value = 0.0
    for i in range(g.shape[0]):
        ll, dll = _log_likelihood(code, y[i], m + g[i], variance)
        value += ll + g[i] * (0.5 * T[i] * g[i] - b[i])  # p(y | f) / t(g)
        d[i] = dll + T[i] * g[i] - b[i]
    grad[:] = lower_transpose_product(d, H_single, z.shape[0]) - z
    return value - 0.5 * np.dot(z, z)


#: nutpie's C signatures for a model's functions (``CompiledPyMCModel``): the log density
#: logp(dim, x, grad, logp, data) and expand(dim, n, x, f, data), returning a status.
LOGP = numba.types.int64(
    numba.types.uint64,
    numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double),
    numba.types.voidptr,
)
EXPAND = numba.types.int64(
    numba.types.uint64,
    numba.types.uint64,
    numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double),
    numba.types.voidptr,
)


@numba.njit(cache=True)
def status(value: float, grad: np.ndarray) -> int:
    """nutpie's status of a log density: 0, or 3 a non-finite gradient, 4 a non-finite
    value."""
    for j in range(grad.shape[0]):
        if not math.isfinite(grad[j]):
            return 3
    return 0 if math.isfinite(value) else 4


@numba.cfunc(LOGP, cache=True)
def _logp_cfunc(dim, x_ptr, grad_ptr, logp_ptr, data_ptr):  # pragma: no cover - called by nutpie
    head = numba.carray(data_ptr, (_HEADER,), np.float64)
    n, r = int(head[0]), int(head[1])
    if dim != r:
        return -1
    data = numba.carray(data_ptr, (_size(n, r),), np.float64)
    grad = numba.carray(grad_ptr, (r,))
    try:  # (as nutpie's own callbacks: an exception cannot cross the C boundary)
        value = _log_density(numba.carray(x_ptr, (r,)), grad, data)
    except Exception:  # noqa: BLE001
        return 1
    logp_ptr[0] = value
    return status(value, grad)


@numba.cfunc(EXPAND, cache=True)
def _expand_cfunc(dim, expanded, x_ptr, f_ptr, data_ptr):  # pragma: no cover - by nutpie
    head = numba.carray(data_ptr, (_HEADER,), np.float64)
    n, r = int(head[0]), int(head[1])
    if dim != r or expanded != n:
        return -1
    data = numba.carray(data_ptr, (_size(n, r),), np.float64)
    H, g0, _, _, _, _ = _unpack(data)
    f = numba.carray(f_ptr, (n,))
    try:
        f[:] = head[3] + g0 + lower_product(H, numba.carray(x_ptr, (r,)), n)  # f = m + g0 + H z
    except Exception:  # noqa: BLE001
        return -2
    return 0


def _code(likelihood: Likelihood) -> tuple[int, float]:
    if isinstance(likelihood, Probit):
        return _PROBIT, 1.0
    if isinstance(likelihood, Logistic):
        return _LOGISTIC, 1.0
    if isinstance(likelihood, Gaussian):
        return _GAUSSIAN, float(likelihood.variance)
    raise ValueError(f"no compiled density for the {likelihood!r} likelihood")


def lower_part(H: np.ndarray) -> np.ndarray:
    """The entries of a lower trapezoidal H the compiled densities keep: min(i + 1, r) of
    row i, row by row (:func:`kept_entries` of them).

    Raises
    ------
    ValueError
        Where anything stands above H's diagonal (it would be dropped silently).
    """
    H = np.asarray(H, dtype=float)
    if H.ndim != 2 or np.any(np.triu(H, 1) != 0.0):
        raise ValueError(
            "the compiled density needs H lower trapezoidal (zero above the diagonal): "
            "turn it with _whitening.lower_trapezoidal or turned_block"
        )
    r = H.shape[1]
    return np.concatenate([H[i, : min(i + 1, r)] for i in range(H.shape[0])])


def pack(
    H: np.ndarray,
    g0: np.ndarray,
    m: float,
    y: np.ndarray,
    T: np.ndarray,
    b: np.ndarray,
    likelihood: Likelihood,
) -> np.ndarray:
    """The buffer the compiled density reads.

    Parameters
    ----------
    H : ndarray, shape (n, r)
        G B Q, lower trapezoidal (:func:`._whitening.lower_trapezoidal`): g = g0 + H z.
    g0 : ndarray, shape (n,)
        G a.
    m : float
        The constant prior mean (f = m + g).
    y : ndarray, shape (n,)
        Labels in {-1, +1}, or the targets under the Gaussian likelihood.
    T, b : ndarray, shape (n,)
        The sites t(g) = exp(-1/2 g^T diag(T) g + b^T g) the prior is written over.
    likelihood : Probit, Logistic or Gaussian

    Returns
    -------
    ndarray
        float64, read-only: the header (n, r, the likelihood's code, m, the noise
        variance), H's kept entries row by row (min(i + 1, r) in row i), g0, y, T, b,
        and the same entries in float32 (two values to a float64, the last padded with a
        zero).
    """
    n, r = np.shape(H)
    kept = lower_part(H)
    code, variance = _code(likelihood)
    head = np.array([n, r, code, m, variance], dtype=float)
    vectors = [np.asarray(v, dtype=float).reshape(n) for v in (g0, y, T, b)]
    single = np.zeros(2 * ((kept.size + 1) // 2), dtype=np.float32)  # (an even count)
    single[: kept.size] = kept
    data = np.concatenate([head, kept, *vectors, single.view(np.float64)])
    data.flags.writeable = False
    return data


def _checked(data: np.ndarray) -> np.ndarray:
    """The buffer as the C functions read it, or a ValueError (they trust its header)."""
    data = np.ascontiguousarray(data, dtype=np.float64)
    n, r = (int(v) for v in data[:2]) if data.size >= _HEADER else (0, 0)
    if data.ndim != 1 or n < 1 or r < 1 or data.size != _size(n, r):
        raise ValueError("the compiled density needs the buffer pack() returns")
    return data


def log_density(z: np.ndarray, data: np.ndarray) -> tuple[float, np.ndarray]:
    """The compiled log density of z (up to a constant) and its gradient as nutpie gets it
    (H^T d in single precision: see the module note), from Python.

    Parameters
    ----------
    z : ndarray, shape (r,)
    data : ndarray
        From :func:`pack`.
    """
    data = _checked(data)
    grad = np.empty(int(data[1]))
    return float(_log_density(np.asarray(z, dtype=float), grad, data)), grad


def whitened_model(data: np.ndarray):
    """A nutpie model of z with the compiled density, recording f = m + g0 + H z
    (dims ``("obs",)``) for every draw.

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
    n, r = int(data[0]), int(data[1])
    return nutpie_model(data, r, (n,), {"obs": n}, logp=_logp_cfunc, expand=_expand_cfunc)


def nutpie_model(
    data: np.ndarray,
    dim: int,
    shape: tuple[int, ...],
    coords: dict[str, int],
    *,
    logp,
    expand,
):
    """nutpie's model of a compiled density: ``logp`` and ``expand`` (numba cfuncs of the
    signatures :data:`LOGP` and :data:`EXPAND`) reading ``data``, which nutpie hands them
    as its user data, in ``dim`` coordinates started from standard normal draws, recording
    one variable ``f`` of ``shape`` (dims the names of ``coords``, each with its length)
    for every draw."""
    from nutpie.compile_pymc import CompiledPyMCModel

    size = int(np.prod(shape))

    def initial_point(seed: int) -> np.ndarray:
        return np.random.default_rng(seed).standard_normal(dim)

    return CompiledPyMCModel(
        _n_dim=dim,
        dims={"f": tuple(coords)},
        _coords={name: pd.RangeIndex(length) for name, length in coords.items()},
        _shapes={"f": shape},
        compiled_logp_func=logp,
        compiled_expand_func=expand,
        initial_point_func=initial_point,
        shared_data={},
        user_data=data,
        n_expanded=size,
        shape_info=(["f"], [slice(0, size)], [shape]),
        logp_func=None,
        expand_func=None,
    )
