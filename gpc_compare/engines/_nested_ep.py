"""The inner EP of nested EP for the multinomial probit (Riihimaki, Jylanki and Vehtari
2013, JMLR 14, section 4.2 and appendix A): the tilted moments of one case, for every
case at once.

Case i with label c has the tilted distribution p(y_i = c | f) N(f | mu_-, Sigma_-) over
its C latent values f. With the auxiliary u ~ N(0, 1) of the likelihood and the C - 1
differences z_j = u + f_c - f_j (j != c), the likelihood is prod_j Phi(z_j), and z has the
Gaussian prior N(z | m, S), m = B^T mu_-, S = B^T Sigma_- B + 1 1^T (B: columns e_c - e_j).
The inner EP is binary probit EP on these C - 1 "cases": sites
exp(-alpha_j z_j^2 / 2 + beta_j z_j), updated in turn with rank-one updates (R&W Alg.
3.5 in the coordinates z), q(z) = N(mu_q, Sigma_q), Sigma_q = (S^-1 + A)^-1.

Integrating u out of N(u | 0, 1) prod_j t~_j(g + u 1) leaves the outer site, a Gaussian in
the differences g = B^T f with precision P = (A^-1 + 1 1^T)^-1 = A - alpha alpha^T /
(1 + sum alpha) and linear term h = beta - alpha (sum beta) / (1 + sum alpha): the site of
f is exp(-f^T B P B^T f / 2 + h^T B^T f), of rank C - 1, blind to adding a constant to
every f_c as the likelihood is. These (P, h) are what the outer EP holds per case.

Naming: ``m, S`` the prior of z; ``alpha, beta`` the inner sites (N, J), J = C - 1;
``mu_q, Sigma_q`` the inner posterior; ``P, h`` the outer site in g coordinates.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..numerics import log_phi, probit_ratio

__all__ = ["InnerEP", "difference_matrices", "inner_ep", "outer_site", "site_from_moments"]


class InnerEP(NamedTuple):
    """The inner EP at convergence, for N cases.

    Attributes
    ----------
    alpha, beta : ndarray, shape (N, J)
        Its site parameters (warm start for the next call).
    log_z : ndarray, shape (N,)
        EP's approximation of log int N(z | m, S) prod_j Phi(z_j) dz = log p(y | cavity).
    sweeps : int
        Sweeps done.
    change : float
        The largest site change in the last sweep.
    """

    alpha: np.ndarray
    beta: np.ndarray
    log_z: np.ndarray
    sweeps: int
    change: float


def difference_matrices(y: np.ndarray, C: int) -> np.ndarray:
    """B_i (n, C, C - 1): columns e_c - e_j for the other classes j, c = y_i."""
    n = y.shape[0]
    B = np.zeros((n, C, C - 1))
    B[np.arange(n), y, :] = 1.0
    for i, c in enumerate(y):
        others = [j for j in range(C) if j != c]
        B[i, others, np.arange(C - 1)] = -1.0
    return B


def _posterior(m, S, alpha, beta):
    """mu_q and Sigma_q from scratch, without S^-1: with sA = A^1/2 and
    M = I + sA S sA, Sigma_q = S - S sA M^-1 sA S and mu_q = Sigma_q beta + m - S sA M^-1 sA m
    (= Sigma_q (S^-1 m + beta))."""
    J = m.shape[1]
    sA = np.sqrt(alpha)
    M = np.eye(J) + sA[:, :, None] * S * sA[:, None, :]
    SsA = S * sA[:, None, :]
    Sigma_q = S - SsA @ np.linalg.solve(M, np.swapaxes(SsA, 1, 2))
    corr = (SsA @ np.linalg.solve(M, (sA * m)[:, :, None]))[:, :, 0]
    mu_q = np.einsum("nij,nj->ni", Sigma_q, beta) + m - corr
    return mu_q, 0.5 * (Sigma_q + np.swapaxes(Sigma_q, 1, 2)), M


def _tilted_site(mean: np.ndarray, var: np.ndarray, tau_cav, nu_cav):
    """New site (alpha, beta) and log Z of Phi(z) N(z | m_-, v_-) (R&W eqs. 3.58-3.59),
    written without the cancellation of 1/s^2 - tau_-: with k = r (z + r) / (1 + v_-),
    alpha = k / (1 - v_- k) and beta = (rho + m_- k) / (1 - v_- k), rho = r / sqrt(1 + v_-)."""
    v = 1.0 / tau_cav
    mc = nu_cav * v
    s = np.sqrt(1.0 + v)
    zz = mc / s
    r, gap, _ = probit_ratio(zz)
    k = r * gap / (1.0 + v)
    denom = 1.0 - v * k
    return k / denom, (r / s + mc * k) / denom, log_phi(zz), mc, v


def _sweep(m, S, alpha, beta):
    """One sequential sweep over the J factors, rank-one updates of q (R&W Alg. 3.5)."""
    mu_q, Sigma_q, _ = _posterior(m, S, alpha, beta)
    alpha, beta = alpha.copy(), beta.copy()
    change = 0.0
    for j in range(m.shape[1]):
        s2 = Sigma_q[:, j, j]
        tau_cav = 1.0 / s2 - alpha[:, j]
        nu_cav = mu_q[:, j] / s2 - beta[:, j]
        a_new, b_new, *_ = _tilted_site(mu_q[:, j], s2, tau_cav, nu_cav)
        da, db = a_new - alpha[:, j], b_new - beta[:, j]
        change = max(change, float(np.max(np.abs(da))), float(np.max(np.abs(db))))
        alpha[:, j], beta[:, j] = a_new, b_new
        # Sigma <- Sigma - s s^T da / (1 + da s2); mu <- mu + s (db - da mu_j) / (1 + da s2)
        col = Sigma_q[:, :, j]
        scale = 1.0 / (1.0 + da * s2)
        mu_q = mu_q + col * ((db - da * mu_q[:, j]) * scale)[:, None]
        Sigma_q = Sigma_q - (da * scale)[:, None, None] * col[:, :, None] * col[:, None, :]
    return alpha, beta, change


def _log_z(m, S, alpha, beta) -> np.ndarray:
    """EP's log normaliser at the sites (canonical form): sum_j log Z~_j + log int N(z | m,
    S) exp(-z^T A z / 2 + beta^T z) dz, log Z~_j = log Z^_j - log int N(z | cavity_j)
    exp(-alpha_j z^2 / 2 + beta_j z) dz."""
    mu_q, Sigma_q, M = _posterior(m, S, alpha, beta)
    s2 = np.diagonal(Sigma_q, axis1=1, axis2=2)
    tau_cav = 1.0 / s2 - alpha
    nu_cav = mu_q / s2 - beta
    _, _, log_zhat, mc, v = _tilted_site(mu_q, s2, tau_cav, nu_cav)
    # 1-D: log int N(z | mc, v) exp(-a z^2/2 + b z) dz
    #      = -log(1 + a v)/2 + (v b^2 + 2 mc b - a mc^2) / (2 (1 + a v))
    one = -0.5 * np.log1p(alpha * v) + 0.5 * (v * beta**2 + 2 * mc * beta - alpha * mc**2) / (
        1.0 + alpha * v
    )
    # J-D, in g = z - m: exp(-m^T A m / 2 + beta^T m) |M|^-1/2 exp(r^T Sigma_q r / 2),
    # r = beta - A m
    r = beta - alpha * m
    _, logdet = np.linalg.slogdet(M)
    joint = (
        -0.5 * np.sum(alpha * m * m, axis=1)
        + np.sum(beta * m, axis=1)
        - 0.5 * logdet
        + 0.5 * np.einsum("ni,nij,nj->n", r, Sigma_q, r)
    )
    return np.sum(log_zhat - one, axis=1) + joint


def inner_ep(
    m: np.ndarray,
    S: np.ndarray,
    alpha: np.ndarray | None = None,
    beta: np.ndarray | None = None,
    *,
    tol: float = 1e-12,
    max_iter: int = 100,
) -> InnerEP:
    """Run the inner EP to convergence for N cases at once (see the module notes).

    Parameters
    ----------
    m : ndarray, shape (N, J)
    S : ndarray, shape (N, J, J)
        The Gaussian prior of z (positive definite).
    alpha, beta : ndarray, shape (N, J), optional
        Sites to start from (default: none, alpha = beta = 0).
    tol : float
        Converged when a sweep changes no site parameter by more than tol.
    max_iter : int
        Most sweeps.
    """
    N, J = m.shape
    alpha = np.zeros((N, J)) if alpha is None else alpha
    beta = np.zeros((N, J)) if beta is None else beta
    change = np.inf
    sweeps = 0
    while sweeps < max_iter and change > tol:
        alpha, beta, change = _sweep(m, S, alpha, beta)
        sweeps += 1
    return InnerEP(alpha, beta, _log_z(m, S, alpha, beta), sweeps, change)


def outer_site(alpha: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The outer site (P, h) in g = B^T f from the inner sites, u integrated out:
    P = A - alpha alpha^T / (1 + sum alpha), h = beta - alpha sum(beta) / (1 + sum alpha)."""
    total = 1.0 + alpha.sum(axis=1)
    P = (
        alpha[:, :, None] * np.eye(alpha.shape[1])
        - alpha[:, :, None] * alpha[:, None, :] / (total[:, None, None])
    )
    h = beta - alpha * (beta.sum(axis=1) / total)[:, None]
    return P, h


def site_from_moments(B, mu_cav, Sigma_cav, mean, cov) -> tuple[np.ndarray, np.ndarray]:
    """The outer site (P, h) that turns the cavity N(mu_cav, Sigma_cav) into N(mean, cov):
    T~ = cov^-1 - Sigma_cav^-1 and nu~ = cov^-1 mean - Sigma_cav^-1 mu_cav, which are
    B P B^T and B h for a likelihood of the differences B^T f only (for an exact tilted
    computation in place of the inner EP). B (N, C, J), the rest per case."""
    T = np.linalg.inv(cov) - np.linalg.inv(Sigma_cav)
    nu = np.linalg.solve(cov, mean[..., None])[..., 0]
    nu -= np.linalg.solve(Sigma_cav, mu_cav[..., None])[..., 0]
    pinv = np.linalg.pinv(B)  # (B^T B)^-1 B^T
    P = pinv @ T @ np.swapaxes(pinv, 1, 2)
    return 0.5 * (P + np.swapaxes(P, 1, 2)), np.einsum("nji,ni->nj", pinv, nu)
