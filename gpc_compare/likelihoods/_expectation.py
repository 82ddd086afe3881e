"""Gaussian expectations E[g(f)], E[g'(f)], E[g''(f)] for f ~ N(m, v), by quadrature.

The rule behind :meth:`Likelihood.expected_log_prob`. The integrand g is a binary log
likelihood: smooth, with its one feature (the bend between log p ~ 0 and log p ~ -f^2/2
or -|f|) at f = 0 on a scale of about one, and no other. Its singularities in the
complex plane stay a fixed distance from the real axis near 0 (the logistic's at
+-i pi, the probit's nearest at 1.9 +- 2.8i) and recede in proportion to |f| beyond,
so a panel [f0, f1] with (|f1| + 1) / (|f0| + 1) bounded sees them at a bounded relative
distance; the Gaussian asks for panels no wider than a few standard deviations.

- v = 0: the point mass, exact.
- s = sqrt(v) <= 0.5 and <= 1: Gauss-Hermite with 24 and 48 nodes; g is smooth on the
  Gaussian's scale there (error below 1e-14, measured against a 400-panel rule).
- s > 1: composite Gauss-Legendre, 20 nodes a panel, on [m - Z s, m + Z s] with Z = 10
  (the Gaussian mass beyond is 1.5e-23, and |g| grows at most quadratically, so what is
  left out is below 1e-20 relative) or, at a large scale, wider: what lies beyond,
  about phi(Z) (|m| + s Z)^2 / Z, is below 1e-16 absolute with
  Z = sqrt(4 log(|m| + s + 1) + 74). (With Z = 10 at s = 1e15, m = 11 s, the whole bend
  of g at 0 lay outside: E came out 0 instead of -0.0065, and the KL engine raised its
  "bound" by moving q there.) The panels are equal steps in the coordinate
  u(f) = sign(f) [log1p(min(|f|, f*)) / b + max(|f| - f*, 0) / (8 s)], b = log 8,
  f* = 8 s / b - 1: geometric panels (ratio 8 in |f| + 1) about 0 out to where
  they would be wider than 8 s, equal panels of width 8 s beyond. A site needs
  P = u(m + 10 s) - u(m - 10 s) panels; it gets ceil(P) + 2 (sites are grouped by that
  count, so each group is one vectorised array): 5 to 8 panels (100 to 160 nodes) for
  s up to 10, at most 12 (240 nodes) at s = 1e3. Measured error below 5e-14 relative for
  |m| <= 1e3, 1 < s <= 1e3, for the probit and the logistic and for all three moments.
- s > 1 and |m| > 100 s: Gauss-Hermite with 48 nodes. The bend is more than 100 standard
  deviations away, and g's singularities recede in proportion to |f|, so g is smooth on
  the Gaussian's scale; the panel coordinate, of size |m| / (8 s), would have no bits left
  for panels of size one beyond |m| / s ~ 1e15 (at m = -1e20, s = 1.4 every panel
  collapsed and E came out 0, not -5e39).

All the sums are of one sign for a log-concave likelihood (g <= 0, g'' <= 0), so nothing
cancels.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["gaussian_expectations"]

#: Node function: (site indices (k,), nodes f (k, q)) -> g, g', g'' at the nodes.
NodeFunction = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]

# Gauss-Hermite tiers: (largest sd, nodes).
_GH_TIERS = ((0.5, 24), (1.0, 48))
_GL_NODES = 20
_SPAN = 10.0  # standard deviations either side of the mean (at least)
_FAR = 100.0  # beyond this many standard deviations from 0, Gauss-Hermite
_PANEL_SD = 8.0  # widest panel, in standard deviations
_PANEL_LOG_RATIO = float(np.log(8.0))  # geometric panels about 0: ratio of |f| + 1
_FEATURE = 1.0  # the feature's scale at f = 0
_EXTRA_PANELS = 2
# Nodes times sites per block of work: temporaries of 128 kB stay in cache (2-3 times
# faster than one block at 1000 sites).
_CHUNK_ELEMENTS = 1 << 14

_SQRT2 = float(np.sqrt(2.0))
_INV_SQRT_2PI = float(1.0 / np.sqrt(2.0 * np.pi))


def _hermite(n: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.hermite.hermgauss(n)
    return _SQRT2 * x, w / np.sqrt(np.pi)  # for the standard normal


_GH_RULES = {n: _hermite(n) for _, n in _GH_TIERS}
_GL_X, _GL_W = np.polynomial.legendre.leggauss(_GL_NODES)


def gaussian_expectations(
    fun: NodeFunction, mean: np.ndarray, var: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """E[g(f)], E[g'(f)] and E[g''(f)] for f ~ N(mean, var), elementwise (1-D arrays).

    ``fun(idx, F)`` evaluates g, g' and g'' at the nodes ``F`` (shape (len(idx), q)) of
    the sites ``idx``. var must be non-negative and finite (the caller checks).
    """
    n = mean.shape[0]
    out = [np.empty(n), np.empty(n), np.empty(n)]
    sd = np.sqrt(var)
    point = sd == 0.0
    if np.any(point):
        idx = np.flatnonzero(point)
        for o, val in zip(out, fun(idx, mean[idx, None]), strict=True):
            o[idx] = val[:, 0]
    lower = 0.0
    far = np.abs(mean) > _FAR * sd
    for upper, nodes in _GH_TIERS:
        tier = (sd > lower) & (sd <= upper)
        lower = upper
        if nodes == _GH_TIERS[-1][1]:
            tier |= (sd > upper) & far
        idx = np.flatnonzero(tier)
        if idx.size:
            x, w = _GH_RULES[nodes]
            for chunk in _chunks(idx, nodes):
                vals = fun(chunk, mean[chunk, None] + sd[chunk, None] * x)
                for o, val in zip(out, vals, strict=True):
                    o[chunk] = val @ w
    idx = np.flatnonzero((sd > lower) & ~far)
    if idx.size:
        edges, panels = _panel_edges(mean[idx], sd[idx])
        for p in np.unique(panels):
            sel = np.flatnonzero(panels == p)
            for part in _chunks(sel, p * _GL_NODES):
                _composite(fun, idx[part], edges[part, : p + 1], mean, sd, out)
    return out[0], out[1], out[2]


def _chunks(idx: np.ndarray, nodes: int) -> list[np.ndarray]:
    return np.array_split(idx, max(1, -(-idx.size * nodes // _CHUNK_ELEMENTS)))


def _u(f: np.ndarray, fstar: np.ndarray, width: np.ndarray) -> np.ndarray:
    """The panel coordinate: log1p(|f|) / b up to f*, then linear with slope 1 / width."""
    t = np.abs(f)
    inner = np.log1p(np.minimum(t, fstar) / _FEATURE) / _PANEL_LOG_RATIO
    return np.copysign(inner + np.maximum(t - fstar, 0.0) / width, f)


def _u_inverse(u: np.ndarray, fstar: np.ndarray, ustar: np.ndarray, width: np.ndarray):
    t = np.abs(u)
    inner = _FEATURE * np.expm1(_PANEL_LOG_RATIO * np.minimum(t, ustar))
    return np.copysign(inner + np.maximum(t - ustar, 0.0) * width, u)


def _panel_edges(mean: np.ndarray, sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Panel edges (k, max panels + 1) and each site's panel count (k,)."""
    width = _PANEL_SD * sd
    fstar = np.maximum(width / _PANEL_LOG_RATIO - _FEATURE, 0.0)
    ustar = np.log1p(fstar / _FEATURE) / _PANEL_LOG_RATIO
    span = np.maximum(_SPAN, np.sqrt(4.0 * np.log1p(np.abs(mean) + sd) + 74.0))
    lo, hi = mean - span * sd, mean + span * sd
    u_lo, u_hi = _u(lo, fstar, width), _u(hi, fstar, width)
    panels = np.ceil(u_hi - u_lo).astype(int) + _EXTRA_PANELS
    steps = np.arange(panels.max() + 1) / panels[:, None]  # beyond a site's count: > 1
    u = u_lo[:, None] + (u_hi - u_lo)[:, None] * np.minimum(steps, 1.0)
    edges = _u_inverse(u, fstar[:, None], ustar[:, None], width[:, None])
    edges[:, 0] = lo
    edges[np.arange(mean.size), panels] = hi
    return edges, panels


def _composite(fun: NodeFunction, idx, edges, mean, sd, out) -> None:
    """Composite Gauss-Legendre on the panels ``edges`` (k, P + 1) of the sites ``idx``."""
    half = 0.5 * (edges[:, 1:] - edges[:, :-1])
    mid = 0.5 * (edges[:, 1:] + edges[:, :-1])
    k = idx.size
    f = (mid[:, :, None] + half[:, :, None] * _GL_X).reshape(k, -1)
    m, s = mean[idx, None], sd[idx, None]
    x = (f - m) / s
    weights = (half[:, :, None] * _GL_W).reshape(k, -1) * (_INV_SQRT_2PI * np.exp(-0.5 * x * x))
    weights /= s
    for o, val in zip(out, fun(idx, f), strict=True):
        o[idx] = np.einsum("ij,ij->i", weights, val)
