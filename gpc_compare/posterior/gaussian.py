"""The Gaussian posterior shared by Laplace, EP, KL and VB: N(f | m + K alpha, (K^-1 + W)^-1)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from ..kernels import Kernel
from ..likelihoods import Likelihood
from ..numerics import JITTER, add_outer, cho_inverse, cholesky, solve_lower
from .base import Convergence, Posterior

if TYPE_CHECKING:
    import arviz

__all__ = ["GaussianPosterior"]


class GaussianPosterior(Posterior):
    """N(f | m + K alpha, (K^-1 + W)^-1), held as (alpha, sW, L), L = chol(I + sW K sW).

    The common form of the Laplace (W = -grad grad log p(y | f^)) and EP (W = diag(tau~))
    approximations. Prediction follows R&W Alg. 3.2 / 3.6:
    mean* = m + k*^T alpha, var* = k** - |L^-1 (sW k*)|^2.
    """

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        kernel: Kernel,
        likelihood: Likelihood,
        mean: float | None,
        *,
        K: np.ndarray,
        alpha: np.ndarray,
        sW: np.ndarray,
        L: np.ndarray,
        log_marginal_likelihood: float,
        convergence: Convergence,
    ) -> None:
        super().__init__(X, y, kernel, likelihood, mean)
        self.K = K
        self.alpha = alpha
        self.sW = sW
        self.L = L
        self._log_marginal_likelihood = float(log_marginal_likelihood)
        self.convergence = convergence

    @property
    def log_marginal_likelihood(self) -> float:
        return self._log_marginal_likelihood

    @property
    def latent_mean(self) -> np.ndarray:
        """m + K alpha (the mode f^ for Laplace, the EP posterior mean mu for EP)."""
        return self._latent_mean

    @cached_property
    def _latent_mean(self) -> np.ndarray:
        return self.prior_mean + self.K @ self.alpha

    @cached_property
    def _V(self) -> np.ndarray:
        """V = L^-1 (sW K), so that Sigma = K - V^T V (R&W Alg. 3.2 line 5)."""
        return solve_lower(self.L, self.sW[:, None] * self.K)

    @cached_property
    def latent_var(self) -> np.ndarray:
        """diag Sigma = diag K - sum_i V_i^2 (non-negative up to rounding, floored at 0)."""
        return np.maximum(np.diag(self.K) - np.einsum("ij,ij->j", self._V, self._V), 0.0)

    @cached_property
    def latent_cov(self) -> np.ndarray:
        """Sigma = (K^-1 + W)^-1 = K - K sW B^-1 sW K, shape (n, n)."""
        return self.K - self._V.T @ self._V

    def _predict_latent(self, Xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Ks = self.kernel(self.X, Xs)
        mean = self.prior_mean + Ks.T @ self.alpha  # R&W Alg. 3.2 line 4
        v = solve_lower(self.L, self.sW[:, None] * Ks)  # line 5
        var = self.kernel.diag(Xs) - np.einsum("ij,ij->j", v, v)  # line 6
        return mean, np.maximum(var, 0.0)

    @cached_property
    def _R(self) -> np.ndarray:
        """R = sW B^-1 sW = (K + W^-1)^-1 (R&W eq. 3.27 ff.), from one ``dpotri`` of L."""
        R = cho_inverse(self.L)
        R *= self.sW[:, None]  # (in place: no further n x n arrays)
        R *= self.sW[None, :]
        return R

    @cached_property
    def _diag_sigma(self) -> np.ndarray:
        """diag Sigma from R, with no n x n solve.

        sW Sigma sW = I - B^-1 (Woodbury), so W_i Sigma_ii = 1 - [B^-1]_ii = 1 - R_ii / W_i.
        Where W_i Sigma_ii < 1e-4 (weak or absent sites) that difference would cancel:
        those Sigma_ii come from Sigma = K - K R K (R&W eq. 3.27) instead, and if they are
        more than half, from V for every site.
        """
        n = self.K.shape[0]
        W = self.sW**2
        if not np.any(W):  # no site carries information: Sigma = K
            return np.diag(self.K).copy()
        R_ii = np.diag(self._R)
        with np.errstate(divide="ignore", invalid="ignore"):
            ts = np.where(W > 0, 1.0 - R_ii / W, 0.0)  # W_i Sigma_ii
        strong = (W > 0) & (ts > 1e-4)
        weak = np.flatnonzero(~strong)
        if weak.size > n // 2:
            return np.diag(self.K) - np.einsum("ij,ij->j", self._V, self._V)
        d = np.empty(n)
        d[strong] = ts[strong] / W[strong]
        if weak.size:
            Kw = self.K[:, weak]
            d[weak] = self.K[weak, weak] - np.einsum("ij,ij->j", Kw, self._R @ Kw)
        return d

    def _kernel_gradient(
        self, u: np.ndarray | None = None, v: np.ndarray | None = None
    ) -> tuple[list[float], np.ndarray | None]:
        """For each free kernel hyperparameter, the derivative at fixed alpha and W
        (R&W eq. 5.22 and 5.27), 1/2 alpha^T dK_j alpha - 1/2 tr(R dK_j), plus u^T dK_j v
        when ``u`` and ``v`` are given (Laplace's implicit term, R&W eq. 5.24).

        All of it is <M, dK_j> with M = (alpha alpha^T - R) / 2 + (u v^T + v u^T) / 2
        (dK_j and R are symmetric), which the kernel contracts without forming the
        (p, n, n) derivatives (:meth:`~gpc_compare.kernels.Kernel.gradient_terms`).
        Returns the derivatives and, when ``v`` is given, the columns dK_j v, shape (n, p)
        (else None).
        """
        alpha = self.alpha
        M = np.multiply(self._R, -0.5)
        add_outer(M, 0.5, alpha, alpha)  # (rank-one updates in place: no n x n temporaries)
        if v is not None:
            add_outer(M, 0.5, u, v)
            add_outer(M, 0.5, v, u)
        traces, products = self.kernel.gradient_terms(
            self.X, M, None if v is None else v[:, None], K=self.K
        )
        grads = [float(t) for t in traces]
        if v is None:
            return grads, None
        return grads, products[:, :, 0].T.reshape(alpha.size, traces.size)

    def _stationary_gradient(self) -> np.ndarray:
        """The evidence gradient of an approximation whose own parameters are stationary
        (private: wrong for Laplace, whose mode moves with theta; EP, KL and VB call it).

        For EP at its fixed point and for the variational bounds at their optima (KL, VB),
        the approximation's parameters contribute nothing to the total derivative, and what
        is left is the derivative of a Gaussian integral at fixed sites (R&W eq. 5.27):
        d log Z / d theta_j = 1/2 alpha^T dK_j alpha - 1/2 tr(R dK_j), R = sW B^-1 sW,
        and d log Z / d m = sum(alpha), in the order of ``hyperparameter_names``.
        """
        grads, _ = self._kernel_gradient()
        if self.mean is not None:
            grads.append(float(self.alpha.sum()))
        return np.asarray(grads, dtype=float)

    def sample_latent(self, draws: int, random_seed: int | np.random.Generator | None = None):
        """Draws of f at the training inputs from the Gaussian posterior, shape (draws, n)."""
        rng = np.random.default_rng(random_seed)
        Lc = cholesky(self.latent_cov, jitter=JITTER, what="posterior covariance")
        z = rng.standard_normal((draws, self.X.shape[0]))
        return self.latent_mean[None, :] + z @ Lc.T

    def to_inference_data(
        self, random_seed: int | np.random.Generator | None = None, *, draws: int = 1000
    ) -> arviz.InferenceData:
        """``draws`` draws from the Gaussian posterior of f (seeded by ``random_seed``) as
        an InferenceData.

        Groups: ``posterior`` (variable ``f``, one chain, dimension ``obs``),
        ``observed_data`` (``y``: in {-1, +1}, or real for the Gaussian likelihood),
        ``log_likelihood`` (``y``: log p(y_i | f_i) per draw, for ``arviz.loo``);
        ``attrs`` name the method, kernel and likelihood and give the log marginal
        likelihood.
        """
        return self._draws_inference_data(self.sample_latent(draws, random_seed))
