"""The Gaussian posterior the dense engines share (Laplace, EP, KL, VB):
N(f | m + K alpha, (K^-1 + W)^-1), and its marginal variances (:func:`marginal_variances`,
the one routine every one of them uses)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
from scipy.linalg import lapack

from ..kernels import Kernel
from ..likelihoods import Likelihood
from ..numerics import (
    JITTER,
    add_outer,
    cho_inverse,
    cholesky,
    inverse_from_triangular_inverse,
    solve_lower,
)
from .base import Convergence, Posterior

if TYPE_CHECKING:
    import arviz

__all__ = ["GaussianPosterior", "marginal_variances"]

#: Sites with W_i Sigma_ii below this are "weak": 1 - [B^-1]_ii would cancel.
_WEAK = 1e-4


def marginal_variances(
    K: np.ndarray,
    W: np.ndarray,
    sW: np.ndarray,
    L: np.ndarray,
    V: Callable[[], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """diag(Sigma), Sigma = (K^-1 + W)^-1, at the cost of a triangular inverse rather than
    V = L^-1 sW K (R&W Alg. 3.2 line 5), and that inverse L^-1 (None where no site carries
    information): B^-1 = L^-T L^-1 then costs one ``dlauum``.

    Sigma = W^-1/2 (I - B^-1) W^-1/2, so W_i Sigma_ii = 1 - [B^-1]_ii, with diag(B^-1) the
    column sums of (L^-1)^2. Where W_i Sigma_ii < 1e-4 (weak or absent sites) that
    difference would cancel, so those Sigma_ii come from K_ii - |L^-1 sW K e_i|^2 instead;
    if more than half the sites are weak, from V for every site (``V()`` when the caller
    keeps it).

    Why half: the weak columns cost a product of L^-1 with an n x w block, 2 n^2 w flops,
    and V a triangular solve with n right-hand sides, n^3 flops, so they break even at
    w = n / 2 by flop count. Measured at n = 2000 with w = n / 4 the two routes take about
    the same time (0.22 s and 0.23 s, ``benchmarks/quoted_times.py``, idle): there the
    choice saves the n x n V's memory more than time. EP once fell back to V at w > n / 8,
    when its sequential sweeps (then its default schedule) built V every sweep anyway; its
    default now sweeps in parallel, and KL and VB never build V.
    """
    n = K.shape[0]
    if not np.any(W):  # no site carries information yet: Sigma = K
        return np.diag(K).copy(), None
    Linv = lapack.dtrtri(L, lower=1)[0]
    ts = 1.0 - np.einsum("ij,ij->j", Linv, Linv)  # W_i Sigma_ii
    strong = (W > 0) & (ts > _WEAK)
    weak = np.flatnonzero(~strong)
    if weak.size > n // 2:
        full = solve_lower(L, sW[:, None] * K) if V is None else V()
        return np.diag(K) - np.einsum("ij,ij->j", full, full), Linv
    d = np.empty(n)
    d[strong] = ts[strong] / W[strong]
    if weak.size:
        Vw = Linv @ (sW[:, None] * K[:, weak])
        d[weak] = K[weak, weak] - np.einsum("ij,ij->j", Vw, Vw)
    return d, Linv


class GaussianPosterior(Posterior):
    """N(f | m + K alpha, (K^-1 + W)^-1), held as (alpha, sW, L), L = chol(I + sW K sW).

    The common form of the Laplace (W = -grad grad log p(y | f^)) and EP (W = diag(tau~))
    approximations. Prediction follows R&W Alg. 3.2 / 3.6:
    ``mean* = m + k*^T alpha``, ``var* = k** - |L^-1 (sW k*)|^2``.

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
    K : ndarray, shape (n, n)
        The prior covariance at the training inputs.
    alpha : ndarray, shape (n,)
        alpha, with posterior mean m + K alpha (R&W eq. 3.21 at the mode for Laplace).
    sW : ndarray, shape (n,)
        W^1/2, the square roots of W's diagonal.
    L : ndarray, shape (n, n)
        The lower Cholesky factor of B = I + sW K sW (R&W eq. 3.26).
    log_marginal_likelihood : float
        The engine's log p(y | X, theta) (Laplace: R&W eq. 3.32; EP: eq. 3.65).
    convergence : Convergence
        How the engine's iteration ended.
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
        return self._scaled_by_sW(R)

    def _scaled_by_sW(self, Binv: np.ndarray) -> np.ndarray:
        """sW B^-1 sW, in place (no further n x n arrays)."""
        Binv *= self.sW[:, None]
        Binv *= self.sW[None, :]
        return Binv

    def _R_from_triangular_inverse(self, Linv: np.ndarray) -> np.ndarray:
        """R from L^-1 (one ``dlauum``: the second half of ``dpotri``'s work)."""
        return self._scaled_by_sW(inverse_from_triangular_inverse(Linv))

    @cached_property
    def _diag_sigma(self) -> np.ndarray:
        """diag Sigma (:func:`marginal_variances`); the triangular inverse it computes also
        gives R, if not yet computed, by one ``dlauum`` (the pair costing what R alone
        does)."""
        d, Linv = marginal_variances(self.K, self.sW**2, self.sW, self.L, lambda: self._V)
        if Linv is not None and "_R" not in self.__dict__:
            self._R = self._R_from_triangular_inverse(Linv)
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
        """Draws of f at the training inputs from the Gaussian posterior, shape (draws, n).

        Parameters
        ----------
        draws : int
            The number of draws.
        random_seed : int or Generator, optional

        Returns
        -------
        ndarray, shape (draws, n)
            mean + L_c z, L_c the Cholesky factor of the posterior covariance (with jitter).
        """
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

        Parameters
        ----------
        random_seed : int or Generator, optional
            Seeds the draws.
        draws : int
            The number of draws.

        Returns
        -------
        arviz.InferenceData
        """
        return self._draws_inference_data(self.sample_latent(draws, random_seed))
