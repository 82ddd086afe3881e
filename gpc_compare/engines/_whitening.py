"""The MCMC engine's reparameterisations: a low-rank prior factor, whitened by a Gaussian.

At fixed hyperparameters the MCMC engine samples, by default, z in f = m + G (a + B z):
G (n, r) with K ~= G G^T spans the eigenvectors of K above RANK_TOL times the mean prior
variance (:func:`prior_factor`), and a, B whiten u = a + B z by a Gaussian approximation of the
posterior given as site terms t(g) = exp(-1/2 g^T T g + b^T g), g = f - m: EP's own sites
or Laplace's (:func:`laplace_sites`), so that z is close to N(0, I) a posteriori
(:func:`site_whitening`; :func:`block_site_whitening` for the C latent functions of the
multi-class models, whose sites are C x C blocks per case: Laplace's, nested EP's or
KL's). A linear change of variables with a constant Jacobian: the posterior sampled is the
same; NUTS's trajectories are shorter.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from ..numerics import cholesky

__all__ = [
    "RANK_TOL",
    "block_site_whitening",
    "case_major",
    "laplace_sites",
    "lower_trapezoidal",
    "prior_factor",
    "site_whitening",
    "softmax_laplace_sites",
    "softmax_laplace_whitening",
    "turned_block",
]

#: Eigen-directions of K with prior variance below this fraction of the mean prior variance
#: are left out of the sampled coordinates. Each carries a prior standard deviation under
#: 1e-4 of the mean prior sd of f (their total is recorded as the dropped prior variance:
#: 5.4e-8 in bench_mcmc's n = 300 problem, whose total prior variance is 300), far below
#: what an MCMC run resolves (its Monte Carlo error of a posterior mean is ~1/20 of a
#: posterior sd at the bulk ESS of 400 the diagnostics ask for); a jitter of 1e-8 times
#: the signal variance would blur the same directions. Every direction kept costs a
#: column in each gradient's n x r products and lengthens NUTS's trajectories (the step
#: size falls as r^-1/4): measured at n = 300, 1e-10 (the Cholesky jitter elsewhere) kept
#: r = 189 directions, 1e-8 keeps 165, and the sampling takes 17% less time.
RANK_TOL = 1e-8


def prior_factor(K: np.ndarray) -> tuple[np.ndarray, float]:
    """G with K ~= G G^T from the eigenvectors of K whose eigenvalues exceed RANK_TOL
    times the mean prior variance (see :data:`RANK_TOL`): K - G G^T is positive
    semi-definite, its largest eigenvalue below that level and its trace the ``dropped``
    prior variance.

    Returns
    -------
    G : ndarray, shape (n, r)
    dropped : float
        The prior variance dropped (the sum of the discarded eigenvalues).
    """
    w, U = np.linalg.eigh(K)
    keep = w > RANK_TOL * float(np.mean(np.diag(K)))  # (relative at any signal variance)
    return U[:, keep] * np.sqrt(w[keep]), float(np.clip(w[~keep], 0.0, None).sum())


def laplace_sites(lap) -> tuple[np.ndarray, np.ndarray]:
    """Laplace's approximation as site terms: (T, b) = (W, W g^ + alpha).

    N(f^, (K^-1 + W)^-1) = N(0, K) exp(-1/2 g^T W g + b^T g) / Z in g = f - m needs
    (K^-1 + W) g^ = b, and K^-1 g^ = alpha = grad log p(y | f^) at the mode (R&W eq. 3.17).

    Parameters
    ----------
    lap : LaplacePosterior
        The binary Laplace approximation (``W``, ``f_hat``, ``alpha``, ``prior_mean``).
    """
    g_hat = lap.f_hat - lap.prior_mean
    return lap.W, lap.W * g_hat + lap.alpha


def site_whitening(ttau: np.ndarray, b: np.ndarray, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a and B such that f = m + G (a + B z) has, for z ~ N(0, I), the Gaussian
    approximation N(0, G G^T) exp(-1/2 g^T diag(ttau) g + b^T g) of g = f - m (EP's, R&W
    eqs. 3.53-3.58, with b = tnu - ttau m; or Laplace's, :func:`laplace_sites`).

    In f = m + G u, u ~ N(0, I), that approximation has precision P = I + G^T T G
    (T = diag(ttau)) and mean P^-1 G^T b; B = chol(P)^-T.
    """
    r = G.shape[1]
    LP = cholesky(np.eye(r) + G.T @ (ttau[:, None] * G), what="matrix I + G^T T G")
    B = scipy.linalg.solve_triangular(LP.T, np.eye(r), lower=False, check_finite=False)
    a = scipy.linalg.cho_solve((LP, True), G.T @ b, check_finite=False)
    return a, B


def lower_trapezoidal(H: np.ndarray) -> np.ndarray:
    """H Q, with Q orthogonal such that H Q is lower trapezoidal (zero above its diagonal).

    From the QR decomposition H^T = Q R: H Q = R^T. The whitened coordinates turn with it:
    g0 + H z = g0 + (H Q)(Q^T z), and Q^T z is N(0, I) when z is, so H Q whitens exactly
    as H does (the same Gaussian, the same posterior, NUTS's coordinates rotated). Its
    zeros are what the compiled density skips: at r ~ n, half of each gradient's products.

    Parameters
    ----------
    H : ndarray, shape (n, r)

    Returns
    -------
    ndarray, shape (n, r)
        R^T: entry (i, j) is exactly 0 for j > i, and R^T R = H^T H.
    """
    (R,) = scipy.linalg.qr(H.T, mode="r", check_finite=False)  # (r, n): H^T = Q R
    return np.ascontiguousarray(R.T)


def softmax_laplace_sites(lap) -> tuple[np.ndarray, np.ndarray]:
    """The multi-class Laplace approximation as C x C site terms per case:
    T_i = W_i = diag(pi_i) - pi_i pi_i^T (R&W eq. 3.38) and b_i = W_i f^_i + a_i, since
    (K^-1 + W) f^ = W f^ + a at the mode (K^-1 f^ = a = y - pi, R&W eq. 3.39).

    Parameters
    ----------
    lap : SoftmaxLaplacePosterior
        ``pi`` and ``a``, (n, C), and ``f_hat``.
    """
    pi = lap.pi
    T = np.einsum("ic,cd->icd", pi, np.eye(pi.shape[1])) - pi[:, :, None] * pi[:, None, :]
    return T, np.einsum("icd,id->ic", T, lap.f_hat) + lap.a


def block_site_whitening(
    T: np.ndarray, b: np.ndarray, G: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """a and B for the C latent functions, f_c = G u_c, u = (u_1, ..., u_C) = a + B z
    (class-major), such that for z ~ N(0, I) u has the Gaussian approximation
    N(u; 0, I) prod_i exp(-1/2 f_i^T T_i f_i + b_i^T f_i) of C x C site terms per case.

    Its precision is P = I + G_blk^T T G_blk, whose (c, c') block is G^T diag(T_i[c, c']) G,
    and its mean P^-1 G_blk^T b (the binary :func:`site_whitening` with blocks);
    B = chol(P)^-T. The sites are Laplace's (:func:`softmax_laplace_sites`), nested EP's
    (B_i P_i B_i^T, B_i h_i) or KL's (Q Lam_i Q^T, Q b_i).

    Parameters
    ----------
    T : ndarray, shape (n, C, C)
        The site precisions (symmetric; their sum with the prior must be positive
        definite in the kept directions).
    b : ndarray, shape (n, C)
    G : ndarray, shape (n, r)
        From :func:`prior_factor`.
    """
    n, C, _ = T.shape
    r = G.shape[1]
    P = np.eye(C * r)
    for c in range(C):
        for d in range(C):
            P[c * r : (c + 1) * r, d * r : (d + 1) * r] += (G.T * T[:, c, d]) @ G
    LP = cholesky(0.5 * (P + P.T), what="matrix I + G^T T G")
    B = scipy.linalg.solve_triangular(LP.T, np.eye(C * r), lower=False, check_finite=False)
    a = scipy.linalg.cho_solve((LP, True), (G.T @ b).T.ravel(), check_finite=False)
    return a, B


def case_major(G: np.ndarray, B: np.ndarray) -> np.ndarray:
    """H with F = F0 + H z for the C latent functions f_c = G u_c, u = a + B z
    (class-major): row i C + c is G_i B_c, B_c the rows of class c.

    Parameters
    ----------
    G : ndarray, shape (n, r)
    B : ndarray, shape (C r, C r)

    Returns
    -------
    ndarray, shape (n C, C r)
    """
    n, r = G.shape
    C = B.shape[0] // r
    H = np.empty((n, C, B.shape[1]))
    for c in range(C):
        H[:, c, :] = G @ B[c * r : (c + 1) * r]
    return H.reshape(n * C, B.shape[1])


def turned_block(G: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """B Q and H Q, with Q orthogonal such that H Q, H :func:`case_major`'s, is lower
    trapezoidal: the multi-class form of :func:`lower_trapezoidal`.

    From the QR decomposition H^T = Q R: H Q = R^T. u = a + (B Q)(Q^T z), and Q^T z is
    N(0, I) when z is: the same whitening, NUTS's coordinates rotated; the compiled
    density multiplies R^T's kept entries (:mod:`._compiled_multiclass`), the PyMC model
    uses B Q (the two agree to rounding).

    Parameters
    ----------
    G : ndarray, shape (n, r)
    B : ndarray, shape (C r, C r)

    Returns
    -------
    BQ : ndarray, shape (C r, C r)
    H : ndarray, shape (n C, C r)
        R^T = case_major(G, B Q) up to rounding, exactly 0 above its diagonal.
    """
    Q, R = scipy.linalg.qr(case_major(G, B).T, mode="economic", check_finite=False)
    return B @ Q, np.ascontiguousarray(R.T)


def softmax_laplace_whitening(lap, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`block_site_whitening` by the multi-class Laplace approximation's sites
    (:func:`softmax_laplace_sites`): B B^T = (I + G_blk^T W G_blk)^-1, whose (c, c') block
    is G^T (delta_cc' D_c - D_c D_c') G since W = D - Pi Pi^T (R&W eq. 3.38).

    Parameters
    ----------
    lap : SoftmaxLaplacePosterior
        The multi-class Laplace approximation (``pi``, ``a``, ``f_hat``).
    G : ndarray, shape (n, r)
        From :func:`prior_factor`.
    """
    return block_site_whitening(*softmax_laplace_sites(lap), G)
