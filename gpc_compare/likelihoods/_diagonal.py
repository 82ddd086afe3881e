"""The robust-max likelihood's integrals under independent Gaussian latents.

The multi-class SVGP (one q(u_c) per class, Hensman, Matthews and Ghahramani 2015) gives
each input C independent Gaussian latent values, q(f_i) = N(mean_i, diag(var_i)); its
bound needs E_i = E_q[log p(y_i | f_i)], dE_i / d mean_ic and dE_i / d var_ic (for the
softmax: :meth:`Softmax.expected_log_prob_diag`), and its predictions the class
probabilities. The variance derivatives come from the heat equation of the Gaussian (Price
1958; Opper and Archambeau 2009, eq. 9): d/d var_c E[g(f)] = 1/2 E[d^2 g / d f_c^2].

The robust-max (Girolami and Rogers 2006; Hernandez-Lobato et al. 2011)
    p(y | f) = 1 - eps where y = argmax f, else eps / (C - 1), so E_i = log(eps / (C - 1))
    + P_i log((1 - eps)(C - 1) / eps), P_i = Pr(f_y > f_k for every k != y) =
    int phi(z) prod_k Phi((mean_y + sd_y z - mean_k) / sd_k) dz: one dimension whatever
    C (GPflow's ``RobustMax`` uses 20 Gauss-Hermite nodes; here a trapezoid rule on
    |z| <= 9, the softmax grid's, with step 0.25 / max(1, rho), rho the largest ratio
    sd_y / sd_k among the classes whose Phi changes within the span, so each Phi's rise
    is resolved: P within 2e-15 and its derivatives within 1e-12 (relative) of a rule
    four times finer, for C = 3 to 26 and rho from 0.1 to 256, measured). The products
    are formed in log space from log Phi, and the derivatives from the inverse Mills
    ratio (:func:`~gpc_compare.numerics.log_phi_d2`), so nothing underflows.
"""

from __future__ import annotations

import numpy as np

from ..numerics import log_phi, log_phi_d2
from .softmax import _CHUNK_ELEMENTS, quadrature_grid, quadrature_half_nodes

__all__ = ["prob_largest"]

# Variances below this are raised to it (a point mass, to rounding) before dividing by sd.
_VAR_FLOOR = 1e-300
# Standard deviations either side of the mean beyond which a class's Phi no longer changes
# (Phi(-9) = 1e-19) in the robust-max integral.
_SPAN = 9.0
# The robust-max rule's most nodes either side of 0: ratios sd_c / sd_k up to 512 are
# resolved; a class with a sd below sd_c / 512 has its Phi's rise under-resolved.
_LARGEST_MAX_HALF = 18 * 2**9
# A class's variance is at least this fraction of the input's largest (a point mass to
# rounding; its Phi is then a step, whose position the rule resolves to within its step).
_RELATIVE_VAR_FLOOR = 1e-16


# -------------------------------------------------------------------------- robust-max
def prob_largest(
    c: np.ndarray, mean: np.ndarray, var: np.ndarray, derivatives: bool = True
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """P_i = Pr(f_ic_i > f_ik for every k != c_i) under N(mean_i, diag(var_i)), with
    dP/d mean and dP/d var (n, C), by the one-dimensional trapezoid rule of the module
    note. ``derivatives=False`` (predictions) gives P alone, the same nodes and the same
    value to rounding, from :func:`~gpc_compare.numerics.log_phi` (six times cheaper than
    log Phi with its two derivatives); the derivatives are then None.

    With x = mean_c + sd_c z and t_k = (x - mean_k) / sd_k, G = prod_k Phi(t_k),
    P = E_z[G]; by the heat equation dP/d var_k = 1/2 d^2 P / d mean_k^2:
    dP/d mean_k = -E[G r_k] / sd_k, dP/d var_k = -E[G r_k t_k] / (2 sd_k^2) (k != c),
    dP/d mean_c = -sum_k dP/d mean_k, dP/d var_c = 1/2 E[G (g1^2 + g2)] with
    g1 = sum_k r_k / sd_k, g2 = sum_k r'_k / sd_k^2, r = phi / Phi, r' = -r (t + r).
    """
    n, C = mean.shape
    floor = _RELATIVE_VAR_FLOOR * np.max(var, axis=1, keepdims=True) + _VAR_FLOOR
    sd = np.sqrt(np.maximum(var, floor))
    rows = np.arange(n)
    m_c, s_c = mean[rows, c], sd[rows, c]
    other = np.ones((n, C), dtype=bool)
    other[rows, c] = False
    # the classes whose Phi rises within |z| <= _SPAN set the step: ratio sd_c / sd_k
    near = other & (np.abs(mean - m_c[:, None]) <= _SPAN * (s_c[:, None] + sd))
    rho = np.max(np.where(near, s_c[:, None] / sd, 0.0), axis=1)
    # step 0.25 / max(1, rho): twice the softmax grid's density (the product of Phi's is
    # sharper than one softmax; at 0.5 / rho the error was 6e-12 at rho = 1)
    half = np.minimum(quadrature_half_nodes(2.0 * rho, 1), _LARGEST_MAX_HALF)
    P = np.empty(n)
    dP_dm, dP_dv = (np.empty((n, C)), np.empty((n, C))) if derivatives else (None, None)
    for K in np.unique(half):
        Z, log_w = quadrature_grid(int(K), 1)
        z, w = Z[0, 0], np.exp(log_w)
        idx = np.flatnonzero(half == K)
        chunk = max(1, _CHUNK_ELEMENTS // (z.size * C))
        for start in range(0, idx.size, chunk):
            j = idx[start : start + chunk]
            if not derivatives:
                P[j] = _largest_value(m_c[j], s_c[j], mean[j], sd[j], other[j], z, w)
                continue
            out = _largest_nodes(m_c[j], s_c[j], mean[j], sd[j], other[j], z, w)
            P[j], dP_dm[j], dP_dv[j] = out
    return P, dP_dm, dP_dv


def _node_arguments(m_c, s_c, mean, sd, z):
    """t_k = (x - mean_k) / sd_k at the nodes x = mean_c + sd_c z, shape (k, C, P)."""
    x = m_c[:, None] + s_c[:, None] * z  # (k, P)
    return (x[:, None, :] - mean[:, :, None]) / sd[:, :, None]


def _largest_value(m_c, s_c, mean, sd, other, z, w):
    """:func:`prob_largest`'s P alone for a block of inputs on the nodes z, weights w."""
    t = _node_arguments(m_c, s_c, mean, sd, z)
    log_G = np.sum(log_phi(t) * other[:, :, None], axis=1)  # class c: Phi = 1
    return np.exp(log_G) @ w


def _largest_nodes(m_c, s_c, mean, sd, other, z, w):
    """:func:`prob_largest` for a block of inputs on the nodes z with weights w."""
    t = _node_arguments(m_c, s_c, mean, sd, z)
    log_Phi, r, r_prime = log_phi_d2(t)
    mask = other[:, :, None]
    log_Phi, r, r_prime = log_Phi * mask, r * mask, r_prime * mask  # class c: Phi = 1
    G = np.exp(log_Phi.sum(axis=1))  # (k, P)
    Gw = G * w
    inv_sd = 1.0 / sd[:, :, None]
    # A node where G underflowed to 0 adds nothing (log G ~ -t^2 / 2 outweighs any r t /
    # sd^2), but its factors can overflow where the variances are at their floor (sd ~
    # 1e-150: t / sd ~ 1e300); they are computed and then left out, so no inf meets a zero.
    live = (Gw > 0)[:, None, :]
    with np.errstate(over="ignore", invalid="ignore"):
        a = np.where(live, r * inv_sd, 0.0)
        b = np.where(live, r * t * inv_sd**2, 0.0)
        g2 = np.sum(np.where(live, r_prime * inv_sd**2, 0.0), axis=1)
        g1 = np.sum(a, axis=1)
        own_term = np.where(live[:, 0, :], g1 * g1 + g2, 0.0)
    dP_dm = -np.einsum("kcp,kp->kc", a, Gw)
    dP_dv = -0.5 * np.einsum("kcp,kp->kc", b, Gw)
    own = ~other
    dP_dm[own] = -dP_dm.sum(axis=1)
    dP_dv[own] = 0.5 * np.sum(own_term * Gw, axis=1)
    return Gw.sum(axis=1), dP_dm, dP_dv
