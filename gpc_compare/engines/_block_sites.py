"""Gaussian sites with a d x d block per case: the algebra of the multi-class KL engine.

d latent functions g_1..g_d, each with the prior GP(0, K) and independent of each other
(prior covariance K_big = I_d (x) K over the d n values), and one Gaussian site per case
i, exp(-1/2 g_i^T Lam_i g_i + b_i^T g_i) with Lam_i a symmetric d x d block, make the
Gaussian q(g) with

    Sigma = (K_big^-1 + Lam)^-1,   mu = Sigma b,

Lam block diagonal over the cases (the structure the optimum of the KL bound takes:
Opper and Archambeau 2009, eq. 12, with a block per case for several latent functions).

The positive semi-definite part Lam+ = R R (R_i = (Lam_i)+^1/2, symmetric) is taken in
R&W's stable form (eq. 3.26 generalised; B's eigenvalues are at least one):

    B = I + R K_big R,   L = chol(B),   Sigma+ = K_big - V^T V,   V = L^-1 R K_big.

A block may also have a small negative eigenvalue (a Monte Carlo estimate of the
curvature -2 dE/dSigma can, where the true one is nearly zero: see :mod:`.kl_softmax`);
those directions, Lam- = -W W^T (W: one column per negative eigenvalue, each non-zero at
one case), enter by Woodbury's identity,

    Sigma = Sigma+ + Y M^-1 Y^T,   Y = Sigma+ W,   M = I - W^T Sigma+ W,

q existing while M is positive definite (else the sites are refused: LinAlgError). Then
mu = Sigma b, log|K_big| - log|Sigma| = log|B| + log|M|, and K_big^-1 mu = b - Lam mu.

The mean is taken as Sigma b, not as K_big alpha with R&W's alpha = b - R B^-1 R K b:
that alpha carries rounding of relative size eps |K| |b|, which the product with K
multiplies by |K| again (at n sigma_f^2 ~ 5e4, Iris at sigma_f^2 = 466, mu came out
wrong by 1e-6 and the natural-gradient step pointed downhill).

Vectors over the d n values are held as arrays (n, d) and flattened latent-major (index
a n + i, as R&W order the classes): B[a i, b j] = delta + K_ij (R_i R_j)_ab. Costs: B in
O(d^3 n^2), its Cholesky (d n)^3 / 3, V one triangular solve with d n right-hand sides,
(d n)^3; the gradient's trace term one more.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.linalg

from ..numerics import cho_solve, cholesky

__all__ = [
    "BlockSites",
    "block_sites",
    "covariance",
    "inverse_blocks_trace",
    "predict_blocks",
    "psd_part",
]

# Eigenvalues of a site block below -this (relative to the block's largest) are negative
# directions handled by Woodbury's identity; those above, rounding, are taken as zero.
_NEGATIVE = 1e-12


class BlockSites(NamedTuple):
    """q at sites (Lam, b): its factors and moments (module note).

    Attributes
    ----------
    Lam : ndarray, shape (n, d, d)
        The sites' precision blocks, symmetric.
    b : ndarray, shape (n, d)
        Their linear coefficients.
    R : ndarray, shape (n, d, d)
        (Lam_i)+^1/2, symmetric.
    L : ndarray, shape (d n, d n)
        chol(I + R K_big R).
    V : ndarray, shape (d n, d n)
        L^-1 R K_big.
    alpha : ndarray, shape (n, d)
        K_big^-1 mu.
    mu : ndarray, shape (n, d)
        The posterior mean.
    S : ndarray, shape (n, d, d)
        The posterior covariance's d x d block at each case.
    log_det_B : float
        log|K_big| - log|Sigma|.
    negative : tuple or None
        (W, Y, chol(M)) of the negative directions (module note), or None.
    """

    Lam: np.ndarray
    b: np.ndarray
    R: np.ndarray
    L: np.ndarray
    V: np.ndarray
    alpha: np.ndarray
    mu: np.ndarray
    S: np.ndarray
    log_det_B: float
    negative: tuple[np.ndarray, np.ndarray, np.ndarray] | None


def psd_part(Lam: np.ndarray) -> np.ndarray:
    """Symmetric blocks (n, d, d) with their negative eigenvalues set to zero."""
    lam, U = np.linalg.eigh(0.5 * (Lam + np.swapaxes(Lam, 1, 2)))
    return np.einsum("nab,nb,ncb->nac", U, np.maximum(lam, 0.0), U)


def _flat(V: np.ndarray) -> np.ndarray:
    """(n, d) -> (d n,), latent-major."""
    return V.T.reshape(-1)


def _unflat(v: np.ndarray, n: int) -> np.ndarray:
    """(d n,) -> (n, d)."""
    return v.reshape(-1, n).T


def _blocks_times(A: np.ndarray, V: np.ndarray) -> np.ndarray:
    """A_i v_i case by case: (n, d, d), (n, d) -> (n, d)."""
    return np.einsum("iab,ib->ia", A, V)


def _R_cross(R: np.ndarray, Kx: np.ndarray) -> np.ndarray:
    """(R (I_d (x) Kx)) as a (d n) x (d m) matrix: [a i, b j] = R_i[a, b] Kx[i, j]."""
    n, d, _ = R.shape
    m = Kx.shape[1]
    return np.einsum("iab,ij->aibj", R, Kx).reshape(d * n, d * m)


def _big_times(K: np.ndarray, X: np.ndarray) -> np.ndarray:
    """(I_d (x) K) X for X (d n, k)."""
    n = K.shape[0]
    return np.einsum("ij,ajk->aik", K, X.reshape(-1, n, X.shape[1])).reshape(X.shape)


def _R_big_times(R: np.ndarray, X: np.ndarray) -> np.ndarray:
    """R X for X (d n, k), R block diagonal over the cases."""
    n, d, _ = R.shape
    return np.einsum("iab,bik->aik", R, X.reshape(d, n, -1)).reshape(X.shape)


def _negative_directions(lam: np.ndarray, U: np.ndarray) -> np.ndarray:
    """W (d n, r): a column sqrt(-lam) u per negative eigenvalue lam (eigenvector u) of a
    block, non-zero at that block's case."""
    n, d = lam.shape
    scale = np.maximum(np.abs(lam).max(axis=1, keepdims=True), 1e-300)
    cases, which = np.nonzero(lam < -_NEGATIVE * scale)
    W = np.zeros((d, n, cases.size))
    W[:, cases, np.arange(cases.size)] = (
        U[cases, :, which] * np.sqrt(-lam[cases, which])[:, None]
    ).T
    return W.reshape(d * n, -1)


def block_sites(K: np.ndarray, Lam: np.ndarray, b: np.ndarray) -> BlockSites:
    """q(g) ∝ N(g; 0, I_d (x) K) prod_i exp(-1/2 g_i^T Lam_i g_i + b_i^T g_i) (module note):
    one Cholesky of B, one triangular solve for V, and a Woodbury term for the negative
    directions if there are any (LinAlgError if they leave no Gaussian q)."""
    n, d = b.shape
    Lam = 0.5 * (Lam + np.swapaxes(Lam, 1, 2))
    lam, U = np.linalg.eigh(Lam)
    R = np.einsum("nab,nb,ncb->nac", U, np.sqrt(np.maximum(lam, 0.0)), U)
    # B[a i, b j] = delta + K_ij (R_i R_j)_ab: (R_i R_j)_ab from one (d n) x d product
    RR = R.transpose(1, 0, 2).reshape(d * n, d) @ R.transpose(2, 0, 1).reshape(d * n, d).T
    B = (RR.reshape(d, n, d, n) * K[None, :, None, :]).reshape(d * n, d * n)
    B[np.diag_indices_from(B)] += 1.0
    L = cholesky(B, what="I + R K R")
    log_det_B = 2.0 * float(np.log(np.diag(L)).sum())
    V = scipy.linalg.solve_triangular(L, _R_cross(R, K), lower=True, check_finite=False)
    bf = _flat(b)
    mu = _flat(K @ b) - V.T @ (V @ bf)  # Sigma+ b
    V3 = V.reshape(d * n, d, n)
    S = np.diag(K)[:, None, None] * np.eye(d) - np.einsum("kai,kbi->iab", V3, V3)
    negative = None
    W = _negative_directions(lam, U)
    if W.shape[1]:
        Y = _big_times(K, W) - V.T @ (V @ W)  # Sigma+ W
        LM = cholesky(np.eye(W.shape[1]) - W.T @ Y, what="I - W^T Sigma+ W")
        log_det_B += 2.0 * float(np.log(np.diag(LM)).sum())
        mu += Y @ cho_solve(LM, Y.T @ bf)
        T = scipy.linalg.solve_triangular(LM, Y.T, lower=True, check_finite=False)
        T3 = T.reshape(-1, d, n)
        S += np.einsum("kai,kbi->iab", T3, T3)
        negative = (W, Y, LM)
    mu = _unflat(mu, n)
    S = 0.5 * (S + np.swapaxes(S, 1, 2))
    alpha = b - _blocks_times(Lam, mu)  # K^-1 mu = Sigma^-1 mu - Lam mu
    return BlockSites(Lam, b, R, L, V, alpha, mu, S, log_det_B, negative)


def _woodbury_Z(q: BlockSites, K: np.ndarray) -> np.ndarray:
    """Z = K_big^-1 Y = W - R B^-1 R K_big W, (d n, r), scaled by chol(M)^-T: the negative
    directions' part of K^-1 - K^-1 Sigma K^-1 is -Z Z^T."""
    W, _, LM = q.negative
    Z = W - _R_big_times(q.R, cho_solve(q.L, _R_big_times(q.R, _big_times(K, W))))
    return scipy.linalg.solve_triangular(LM, Z.T, lower=True, check_finite=False).T


def inverse_blocks_trace(q: BlockSites, K: np.ndarray) -> np.ndarray:
    """T = sum_a [K_big^-1 - K_big^-1 Sigma K_big^-1]_aa (n x n), the sum of the diagonal
    blocks of R B^-1 R - Z Z^T: what the bound's gradient needs of Sigma (its trace
    against I_d (x) dK is tr(T dK))."""
    n, d, _ = q.R.shape
    X = scipy.linalg.solve_triangular(
        q.L, _R_cross(q.R, np.eye(n)), lower=True, check_finite=False
    ).reshape(d * n, d, n)
    T = np.einsum("kai,kaj->ij", X, X)
    if q.negative is not None:
        Z = _woodbury_Z(q, K).reshape(d, n, -1)
        T -= np.einsum("air,ajr->ij", Z, Z)
    return T


def predict_blocks(
    q: BlockSites, K: np.ndarray, Ks: np.ndarray, kss: np.ndarray, *, chunk: int = 512
) -> tuple[np.ndarray, np.ndarray]:
    """Mean (m, d) and d x d covariance (m, d, d) of g at new inputs: k*^T alpha and
    k** I - k*^T (K^-1 - K^-1 Sigma K^-1) k* (R&W eqs. 3.21 and 3.24 with the blocks),
    ``chunk`` inputs at a time."""
    n, d, _ = q.R.shape
    m = Ks.shape[1]
    mean = Ks.T @ q.alpha
    cov = np.empty((m, d, d))
    Z = None if q.negative is None else _woodbury_Z(q, K).reshape(d, n, -1)
    for start in range(0, m, chunk):
        j = slice(start, min(m, start + chunk))
        X = scipy.linalg.solve_triangular(
            q.L, _R_cross(q.R, Ks[:, j]), lower=True, check_finite=False
        ).reshape(d * n, d, -1)
        cov[j] = kss[j, None, None] * np.eye(d) - np.einsum("kaj,kbj->jab", X, X)
        if Z is not None:
            P = np.einsum("ij,air->jar", Ks[:, j], Z)
            cov[j] += np.einsum("jar,jbr->jab", P, P)
    return mean, 0.5 * (cov + np.swapaxes(cov, 1, 2))


def covariance(q: BlockSites, K: np.ndarray) -> np.ndarray:
    """Sigma, the full (d n) x (d n) covariance."""
    d = q.b.shape[1]
    Sigma = np.kron(np.eye(d), K) - q.V.T @ q.V
    if q.negative is not None:
        _, Y, LM = q.negative
        T = scipy.linalg.solve_triangular(LM, Y.T, lower=True, check_finite=False)
        Sigma += T.T @ T
    return Sigma
