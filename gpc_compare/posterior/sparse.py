"""The FITC prior and the Gaussian posterior on it (shared by FITC-Laplace and FITC-EP).

FITC (Snelson and Ghahramani 2006; for classification Naish-Guzman and Holden 2008)
replaces the prior covariance K by

    K~ = Q + Lambda,   Q = K_fu (K_uu + snu^2 I)^-1 K_uf = V^T V,   Lambda = diag(K - Q),

with M inducing inputs Z, V = L_uu^-1 K_uf (M x n), L_uu = chol(K_uu + snu^2 I) and
snu^2 = jitter * mean(diag K_uu) (GPML's ``apxSparse`` convention, held fixed when
differentiating). Nothing here forms an n x n matrix: every operation is O(n M^2) time
and O(n M) memory.

Gaussian sites exp(-W_i g_i^2 / 2 + p_i g_i) on g = f - m (Laplace's W at the mode, EP's
tau~) give Sigma = (K~^-1 + W)^-1. Write g = V^T u + e with u ~ N(0, I) (M values) and
e ~ N(0, Lambda) independent: integrating e out, site i acts on h_i = (V^T u)_i with
precision w_i = W_i / d_i, d_i = 1 + Lambda_i W_i, and linear coefficient p_i / d_i, so

    q(u) = N(A^-1 V (p / d), A^-1),   A = I_M + V diag(w) V^T,
    E[g_i] = (V^T E[u])_i / d_i + Lambda_i p_i / d_i,
    Var[g_i] = v_i^T A^-1 v_i / d_i^2 + Lambda_i / d_i      (v_i the i-th column of V),

and log|I + K~ W| = sum_i log d_i + log|A| (the determinant lemma). The matrix R of
R&W eq. 3.27, (K~ + W^-1)^-1 = sW B^-1 sW, is diag(w) - diag(w) V^T A^-1 V diag(w) by
Woodbury, with no W^-1 (sites with W_i = 0 are fine). Every formula needs W >= 0.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
from scipy.linalg import blas

from ..kernels import Kernel
from ..likelihoods import Likelihood
from ..numerics import cho_solve, cholesky, solve_lower, solve_lower_transpose
from .base import Convergence, Posterior

if TYPE_CHECKING:
    import arviz

__all__ = ["FITCPrior", "FITCSites", "InducingPosterior", "SparsePosterior", "inducing_names"]

#: The gradient's n x M products are formed in blocks of rows of about this many entries.
CHUNK_ELEMENTS = 2**18


def inducing_names(M: int, d: int) -> list[str]:
    """Hyperparameter names of the inducing inputs' coordinates: ``inducing[j,k]``."""
    return [f"inducing[{j},{k}]" for j in range(M) for k in range(d)]


class FITCPrior:
    """K~ = V^T V + diag(Lambda) from the inducing inputs ``Z`` (module note).

    Supports ``K~ @ x`` and ``diagonal()``, the parts of an n x n matrix that Newton's
    iteration uses, and :meth:`blocks`, V in blocks of columns. With ``batch_size`` V is
    never stored (``V`` is None): each pass over :meth:`blocks` forms K_uf for
    ``batch_size`` training inputs at a time, O(M^2 + batch_size M) memory beyond O(n)
    vectors, for n whose n x M matrices would not fit (SVGP only: FITC's sites need V).

    Parameters
    ----------
    kernel : Kernel
    X : ndarray, shape (n, d)
        The training inputs.
    Z : ndarray, shape (M, d)
        The inducing inputs.
    jitter : float
        Added to K_uu's diagonal, relative to its mean diagonal (snu^2).
    batch_size : int, optional
        Form K_uf for this many training inputs at a time instead of storing V.
    """

    def __init__(
        self,
        kernel: Kernel,
        X: np.ndarray,
        Z: np.ndarray,
        jitter: float,
        batch_size: int | None = None,
    ) -> None:
        self.kernel, self.X, self.Z, self.jitter = kernel, X, Z, float(jitter)
        self.batch_size = batch_size
        Kuu = kernel(Z)
        self.snu2 = self.jitter * float(np.mean(np.diag(Kuu)))
        Kuu[np.diag_indices_from(Kuu)] += self.snu2
        self.L_uu = cholesky(Kuu, what="K_uu + snu^2 I (the inducing inputs' covariance)")
        self.k_diag = kernel.diag(X)
        self.V = None if batch_size else solve_lower(self.L_uu, kernel(Z, X))  # (M, n)
        # Lambda = diag(K - Q) >= snu^2-sized in exact arithmetic; below zero only by
        # rounding (an inducing input on a training input), where it is 0
        q_diag = np.empty_like(self.k_diag)
        for i, V in self.blocks():
            q_diag[i] = np.einsum("ij,ij->j", V, V)
        self.Lam = np.maximum(self.k_diag - q_diag, 0.0)

    def blocks(self):
        """(rows, V[:, rows]) for consecutive blocks of training inputs: views of the stored
        V (about ``CHUNK_ELEMENTS`` entries each), or formed ``batch_size`` at a time."""
        n, M = self.X.shape[0], self.Z.shape[0]
        rows = self.batch_size or max(1, CHUNK_ELEMENTS // M)
        for start in range(0, n, rows):
            i = slice(start, min(start + rows, n))
            if self.V is not None:
                yield i, self.V[:, i]
            else:
                yield i, solve_lower(self.L_uu, self.kernel(self.Z, self.X[i]))

    @cached_property
    def scratch(self) -> np.ndarray:
        """An (M, n) work buffer (C order, so that its transpose is the Fortran array BLAS
        solves in place) the sites reuse for their n x M temporaries: a fresh one at each of
        a fit's factorisations costs page faults. The engines drop it when a fit ends
        (:meth:`drop_scratch`), so a posterior does not keep it."""
        return np.empty(self.V.shape)

    def drop_scratch(self) -> None:
        """Release :attr:`scratch` (rebuilt if asked for again)."""
        self.__dict__.pop("scratch", None)

    @property
    def shape(self) -> tuple[int, int]:
        """(n, n): the shape of the n x n FITC prior covariance this operator stands for."""
        n = self.X.shape[0]
        return (n, n)

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        """K~ x for x of shape (n,) or (n, k)."""
        lam = self.Lam if x.ndim == 1 else self.Lam[:, None]
        return lam * x + self.V.T @ (self.V @ x)

    def diagonal(self) -> np.ndarray:
        """diag K~ = diag K (FITC keeps the prior variances exact)."""
        return self.k_diag

    @cached_property
    def P(self) -> np.ndarray:
        """P = (K_uu + snu^2 I)^-1 K_uf = L_uu^-T V, shape (M, n): Q = K_fu P."""
        return solve_lower_transpose(self.L_uu, self.V)

    def gradient(
        self, G_lowrank: list[tuple[np.ndarray, np.ndarray]], sites: FITCSites, r_coef: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """<G, dK~/d theta_j> for every free kernel hyperparameter, and d<G, K~>/d Z, for
        G = sum_k (a_k b_k^T + b_k a_k^T) / 2 + r_coef R (``sites``' R), never formed.

        dK~ = dQ + diag(dK - dQ) with dQ = dK_fu P + P^T dK_uf - P^T dK_uu P (snu^2 fixed),
        so with H = G - diag(G), <G, dK~> = <diag G, diag dK> + <2 H P^T, dK_fu>
        - <P H P^T, dK_uu>; the kernel contracts each (:meth:`Kernel.cross_gradient_terms`).

        Returns
        -------
        theta : ndarray, shape (p,)
        inducing : ndarray, shape (M, d)
        """
        P, V, w = self.P, self.V, sites.w
        Pw = V * w  # V diag(w): R = diag(w) - Pw^T A^-1 Pw
        APw_PT = cho_solve(sites.L_A, Pw @ P.T)  # A^-1 Pw P^T, (M, M)
        g_diag = r_coef * (w - w * w * sites.h_var)  # diag R = w - w^2 diag(V^T A^-1 V)
        for a, b in G_lowrank:
            g_diag += a * b
        lowrank = [(a, b, P @ a, P @ b) for a, b in G_lowrank]
        M = P.shape[0]
        theta = self.kernel.diag_gradient(self.X) @ g_diag
        PHPT = np.zeros((M, M))
        dZ = np.zeros_like(self.Z, dtype=float)
        rows = max(1, CHUNK_ELEMENTS // M)  # n x M work in blocks of rows: O(M) memory a row
        for start in range(0, P.shape[1], rows):
            i = slice(start, start + rows)
            GPT = r_coef * (w[i, None] * P[:, i].T - Pw[:, i].T @ APw_PT)  # (R P^T)_i
            for a, b, Pa, Pb in lowrank:
                GPT += 0.5 * (np.outer(a[i], Pb) + np.outer(b[i], Pa))
            HPT = GPT - g_diag[i, None] * P[:, i].T  # ((G - diag G) P^T)_i
            PHPT += P[:, i] @ HPT
            t_fu, z_fu = self.kernel.cross_gradient_terms(self.X[i], self.Z, 2.0 * HPT)
            theta += t_fu
            dZ += z_fu
        t_uu, z_uu = self.kernel.cross_gradient_terms(self.Z, self.Z, -0.5 * (PHPT + PHPT.T))
        theta += t_uu
        return theta, dZ + 2.0 * z_uu  # (K_uu has Z in both arguments)


class FITCSites:
    """Sigma = (K~^-1 + W)^-1 for site precisions ``W`` >= 0 on a FITC prior, factorised
    once: one M x M Cholesky of A = I + V diag(w) V^T (module note).

    Parameters
    ----------
    prior : FITCPrior
        The prior, with V stored (no ``batch_size``).
    W : ndarray, shape (n,)
        The site precisions, >= 0.

    Raises
    ------
    ValueError
        If ``prior`` does not store V.
    """

    def __init__(self, prior: FITCPrior, W: np.ndarray) -> None:
        if prior.V is None:
            raise ValueError("FITC's sites need V: a FITCPrior without batch_size")
        self.prior, self.W, self.Lam = prior, W, prior.Lam
        self.d = 1.0 + self.Lam * W
        self.w = W / self.d
        Vw = np.multiply(prior.V, np.sqrt(self.w), out=prior.scratch)
        A = Vw @ Vw.T
        A[np.diag_indices_from(A)] += 1.0
        self.L_A = cholesky(A, what="I + V W~ V^T")
        # log|B| = log|I + K~ W| = sum log d + log|A| (the matrix determinant lemma)
        self.log_det_B = float(np.log(self.d).sum() + 2.0 * np.log(np.diag(self.L_A)).sum())

    def R(self, x: np.ndarray) -> np.ndarray:
        """(K~ + W^-1)^-1 x = w x - w V^T A^-1 V (w x) (Woodbury)."""
        V, w = self.prior.V, self.w
        return w * x - w * (V.T @ cho_solve(self.L_A, V @ (w * x)))

    def mean(self, p: np.ndarray) -> np.ndarray:
        """Sigma p: the mean of g = f - m under sites with linear coefficients ``p``."""
        V, Lam, d = self.prior.V, self.Lam, self.d
        u = cho_solve(self.L_A, V @ (p / d))
        return (V.T @ u + Lam * p) / d

    @cached_property
    def h_var(self) -> np.ndarray:
        """``diag(V^T A^-1 V) = |L_A^-1 v_i|^2`` (the diagonal Sigma and the gradient's
        diag R are made of), computed once."""
        np.copyto(self.prior.scratch, self.prior.V)
        # C^T = V^T L_A^-T, in place on the C-order buffer's Fortran view (BLAS dtrsm)
        Ct = blas.dtrsm(
            1.0, self.L_A, self.prior.scratch.T, side=1, lower=1, trans_a=1, overwrite_b=1
        )
        return np.einsum("ij,ij->i", Ct, Ct)

    def diag_sigma(self) -> np.ndarray:
        """``diag Sigma = |L_A^-1 v_i|^2 / d_i^2 + Lambda_i / d_i``."""
        return self.h_var / self.d**2 + self.Lam / self.d


class InducingPosterior(Posterior):
    """What every sparse posterior shares: the inducing inputs ``Z`` (``inducing``, on
    ``prior``, a :class:`FITCPrior`), whose coordinates are hyperparameters with
    ``optimize_inducing`` (``inducing[j,k]``, after the kernel's and the mean), and the
    export of joint draws (``sample_latent``) to InferenceData."""

    def __init__(
        self,
        X,
        y,
        kernel,
        likelihood,
        mean,
        *,
        prior: FITCPrior,
        optimize_inducing: bool,
        **kwargs,
    ) -> None:
        super().__init__(X, y, kernel, likelihood, mean, **kwargs)  # (n_classes=: C classes)
        self.prior = prior
        self.optimize_inducing = bool(optimize_inducing)

    @property
    def inducing(self) -> np.ndarray:
        """The inducing inputs Z, shape (M, d)."""
        return self.prior.Z

    @property
    def jitter(self) -> float:
        """snu^2 / mean(diag K_uu), as given."""
        return self.prior.jitter

    @property
    def hyperparameter_names(self) -> list[str]:
        extra = inducing_names(*self.inducing.shape) if self.optimize_inducing else []
        return super().hyperparameter_names + extra

    @property
    def hyperparameters(self) -> np.ndarray:
        extra = self.inducing.ravel() if self.optimize_inducing else np.zeros(0)
        return np.concatenate([super().hyperparameters, extra])

    @property
    def _predictive(self) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
        """(beta, C) with mean* = m + K_*u beta and var* = k** - K_*u C K_u*."""
        raise NotImplementedError

    def _predict_latent(self, Xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        beta, C = self._predictive
        Ksu = self.kernel(Xs, self.inducing)
        var = self.kernel.diag(Xs) - np.einsum("ij,ij->i", Ksu @ C, Ksu)
        return self.prior_mean + Ksu @ beta, np.maximum(var, 0.0)

    def sample_latent(self, draws: int, random_seed=None) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def to_inference_data(
        self, random_seed: int | np.random.Generator | None = None, *, draws: int = 1000
    ) -> arviz.InferenceData:
        """Draws of f at the training inputs (:meth:`sample_latent`) as an InferenceData,
        as :meth:`GaussianPosterior.to_inference_data`; ``attrs`` add M and the jitter."""
        f = self.sample_latent(draws, random_seed)
        return self._draws_inference_data(
            f, inducing_points=int(self.inducing.shape[0]), jitter=self.jitter
        )


class SparsePosterior(InducingPosterior):
    """A Gaussian posterior on the FITC prior: N(f | m + K~ alpha, (K~^-1 + W)^-1).

    Predictions use FITC's predictive prior (GPML's ``apxSparse``): k* = Q_*f, the exact
    k(x*, x*), so mean* = m + K_*u beta and var* = k** - K_*u S K_u*, with beta = P alpha
    and S = P R P^T (M and M x M: O(M^2) per test point).

    Parameters
    ----------
    X : ndarray, shape (n, d)
        The training inputs.
    y : ndarray, shape (n,)
        The training targets, checked: binary labels as {-1, +1}, class indices 0..C-1, or
        real values with the Gaussian likelihood.
    kernel : Kernel
        The covariance function, at the hyperparameters of the fit.
    likelihood : Likelihood
    mean : float or None
        The constant prior mean m; None for a zero mean that is not a hyperparameter.
    prior : FITCPrior
        The FITC prior K~ from the inducing inputs.
    sites : FITCSites
        The site precisions W on that prior, factorised.
    alpha : ndarray, shape (n,)
        alpha, with posterior mean m + K~ alpha.
    log_marginal_likelihood : float
        The engine's log evidence on the FITC prior (FITC-Laplace, FITC-EP).
    convergence : Convergence
        How the engine's iteration ended.
    optimize_inducing : bool
        Whether the inducing inputs are hyperparameters (fitted with the kernel's).
    """

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        kernel: Kernel,
        likelihood: Likelihood,
        mean: float | None,
        *,
        prior: FITCPrior,
        sites: FITCSites,
        alpha: np.ndarray,
        log_marginal_likelihood: float,
        convergence: Convergence,
        optimize_inducing: bool,
    ) -> None:
        super().__init__(
            X, y, kernel, likelihood, mean, prior=prior, optimize_inducing=optimize_inducing
        )
        self.sites, self.alpha = sites, alpha
        self._log_marginal_likelihood = float(log_marginal_likelihood)
        self.convergence = convergence

    @property
    def log_marginal_likelihood(self) -> float:
        return self._log_marginal_likelihood

    @cached_property
    def latent_mean(self) -> np.ndarray:
        return self.prior_mean + self.prior @ self.alpha

    @cached_property
    def latent_var(self) -> np.ndarray:
        return self.sites.diag_sigma()

    @cached_property
    def _predictive(self) -> tuple[np.ndarray, np.ndarray]:
        """beta = P alpha and C = P R P^T (FITC's predictive prior k* = Q_*f)."""
        P, sites = self.prior.P, self.sites
        Pw = self.prior.V * sites.w
        Pw_PT = Pw @ P.T  # V diag(w) P^T, (M, M)
        C = (P * sites.w) @ P.T - Pw_PT.T @ cho_solve(sites.L_A, Pw_PT)  # P R P^T
        return P @ self.alpha, 0.5 * (C + C.T)

    def _gradient(self, lowrank: list, extra_mean: float = 0.0) -> np.ndarray:
        """The gradient of the evidence <G, dK~> with G = sum sym(a b^T) - R / 2 (the
        engine gives its low-rank terms), then d/dm and the inducing inputs' part."""
        theta, dZ = self.prior.gradient(lowrank, self.sites, -0.5)
        grads = [theta]
        if self.mean is not None:
            grads.append([float(self.alpha.sum()) + extra_mean])
        if self.optimize_inducing:
            grads.append(dZ.ravel())
        return np.concatenate(grads).astype(float)

    def sample_latent(self, draws: int, random_seed: int | np.random.Generator | None = None):
        """Joint draws of f at the training inputs, shape (draws, n), in O(n M) each:
        u from q(u), then each f_i given u independently (module note).

        Parameters
        ----------
        draws : int
            The number of draws.
        random_seed : int or Generator, optional

        Returns
        -------
        ndarray, shape (draws, n)
        """
        rng = np.random.default_rng(random_seed)
        V, Lam, d, sites = self.prior.V, self.prior.Lam, self.sites.d, self.sites
        g = self.latent_mean - self.prior_mean
        # u - E[u] = L_A^-T z has covariance A^-1; g_i - E[g_i] = v_i^T (u - E u) / d_i + e_i
        z = rng.standard_normal((self.inducing.shape[0], draws))
        du = solve_lower_transpose(sites.L_A, z)
        e = rng.standard_normal((draws, g.size)) * np.sqrt(Lam / d)
        return self.prior_mean + g + (V.T @ du).T / d + e
