"""Nested EP for C classes with the multinomial probit likelihood (Riihimaki, Jylanki and
Vehtari 2013, JMLR 14: "Nested expectation propagation for Gaussian process
classification with a multinomial probit likelihood"; the method GPstuff ships).

The C latent functions share the kernel, so the prior of the Cn latent values is
K (x) I_C (case-major: index C i + c). Each likelihood term p(y_i | f_i) is replaced by a
Gaussian site over the C values of case i,

    t~_i(f_i) = exp(-f_i^T B_i P_i B_i^T f_i / 2 + h_i^T B_i^T f_i),

B_i (C x (C - 1)) the differences e_c - e_j, c = y_i: a C x C site precision of rank
C - 1 (the likelihood is blind to a constant added to every f_c). The outer EP updates
all sites in parallel from their cavities (damped in (P, h)); each tilted distribution's
moments and normaliser come from the inner EP (:mod:`._nested_ep`), which also gives the
new site directly (the paper's section 4.2). With G = blockdiag(B_i P_i^1/2), T~ = G G^T:

- Sigma = (K^-1 + T~)^-1 = K - K G Bm^-1 G^T K, Bm = I + G^T K G (n(C - 1) square,
  L = chol(Bm)); mu = K alpha, alpha = nu~ - G Bm^-1 G^T K nu~, nu~_i = B_i h_i
  (R&W Alg. 3.5-3.6 with C x C sites).
- log Z_EP = log int N(f | 0, K) prod_i t~_i df + sum_i [log Z^_i - log int N(f_i |
  cavity_i) t~_i(f_i) df_i] = -sum log diag L + nu~^T mu / 2 + sum_i [...] (the site
  normalisers chosen so that each site times its cavity integrates to Z^_i; R&W eq. 3.65).
- d log Z_EP / d theta_j = 1/2 sum_c alpha_c^T dK alpha_c - 1/2 tr(R (dK (x) I)),
  R = G Bm^-1 G^T (R&W eq. 5.27): at the joint fixed point of the outer and inner EP the
  evidence is stationary in the sites, and the inner EP's log Z^ has the cavity
  derivatives of its Gaussian, so only the explicit dependence on K remains (checked
  against central differences in tests/engines/test_ep_multiclass.py).

Cost: each outer sweep factorises one matrix of size n(C - 1) (C = 3: 8 n^3 / 3 flops,
eight Choleskys of size n) and solves with it for the C x C marginals, n(C - 1)
right-hand sides, not nC: G^T (K (x) 1) = 0 as B_i^T 1 = 0, so only the C - 1 contrasts
orthogonal to 1 need solving (C = 3: 8 n^3 flops, the sweep's largest cost); the inner
EP is O(n C^3) a sweep. Naming as R&W: ``K``, ``alpha``, ``L``; ``P, h`` the sites in
difference coordinates; ``mu_cav, Sigma_cav`` the cavities.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg

from ..kernels import Kernel
from ..likelihoods import MultinomialProbit
from ..numerics import JITTER, cho_solve, cholesky
from ..posterior import Convergence, MulticlassPosterior
from ._engine import Problem
from ._nested_ep import difference_matrices, inner_ep, outer_site
from .laplace_softmax import check_codes

__all__ = ["MultinomialProbitEPPosterior", "infer_multiclass", "infer_multinomial_probit"]

_POTRF, _POTRI = scipy.linalg.get_lapack_funcs(("potrf", "potri"), dtype=np.float64)

#: The smallest adaptive damping (halved from 1 whenever the sites' change grows).
MIN_DAMPING = 0.05
#: The inner EP's tolerance on its sites (tight: the evidence gradient assumes its fixed
#: point) and its most sweeps.
INNER_TOL = 1e-11
INNER_MAX_ITER = 200


def _contrasts(C: int) -> np.ndarray:
    """Q (C, C - 1): orthonormal columns orthogonal to 1 (Helmert contrasts), so that
    I_C = Q Q^T + 1 1^T / C."""
    Q = np.zeros((C, C - 1))
    for k in range(1, C):
        Q[:k, k - 1] = 1.0
        Q[k, k - 1] = -float(k)
        Q[:, k - 1] /= np.sqrt(k * (k + 1.0))
    return Q


def _class_gram(W: np.ndarray) -> np.ndarray:
    """(W_i^T W_j)_ab at row (i, a), column (j, b), for W (n, C, J): one GEMM over the C
    classes, shape (nJ, nJ)."""
    n, C, J = W.shape
    Wf = np.swapaxes(W, 1, 2).reshape(n * J, C)
    return Wf @ Wf.T


def _point_covariances(Vt: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Q V_s^T V_s Q^T for every point s of V^T (m, J, k): shape (m, C, C)."""
    return Q @ (Vt @ np.swapaxes(Vt, 1, 2)) @ Q.T


def _spread(Kx: np.ndarray, J: int) -> np.ndarray:
    """Kx^T with each column repeated J times, (m, nJ): entry (s, (i, a)) is Kx_is."""
    return np.repeat(Kx.T, J, axis=1)


class _Prior(NamedTuple):
    """K and the two layouts of it every sweep uses, made once a fit: ``KJ`` = K (x) 1 1^T
    (J x J blocks, (nJ, nJ)) and ``KR`` = ``_spread(K, J)``."""

    K: np.ndarray
    KJ: np.ndarray
    KR: np.ndarray

    @classmethod
    def of(cls, K: np.ndarray, J: int) -> _Prior:
        return cls(K, np.kron(K, np.ones((J, J))), _spread(K, J))


class _State:
    """The Gaussian approximation implied by the sites (P, h): L, alpha, mu, the C x C
    marginals and the prior part of the evidence (see the module notes)."""

    def __init__(self, prior: _Prior, B: np.ndarray, P: np.ndarray, h: np.ndarray) -> None:
        n, C, J = B.shape
        K = prior.K
        self.K, self.B, self.P, self.h = K, B, P, h
        lam, U = np.linalg.eigh(P)
        # P = (A^-1 + 1 1^T)^-1 is positive semi-definite; eigh's rounding can leave a
        # zero eigenvalue at -1e-17, which the square root takes as zero
        R = (U * np.sqrt(np.maximum(lam, 0.0))[:, None, :]) @ np.swapaxes(U, 1, 2)
        self.W = B @ R  # G's blocks, (n, C, J)
        # [G^T (K (x) I) G]_(ia),(jb) = K_ij (W_i^T W_j)_ab
        Bm = _class_gram(self.W)
        Bm *= prior.KJ
        Bm[np.diag_indices(n * J)] += 1.0
        # Bm is symmetric: its transpose is the Fortran-ordered matrix LAPACK factorises
        # in place, and L comes back Fortran-ordered, as trtrs takes it
        self.L, info = _POTRF(Bm.T, lower=1, overwrite_a=1, clean=1)
        if info != 0:
            raise np.linalg.LinAlgError(
                f"I + G^T K G is not positive definite (Cholesky failed: its leading minor "
                f"of order {info})"
            )
        self.nu = (B @ h[:, :, None])[:, :, 0]  # nu~_i = B_i h_i
        t = (np.swapaxes(self.W, 1, 2) @ (K @ self.nu)[:, :, None]).ravel()
        s = cho_solve(self.L, t).reshape(n, J)
        self.alpha = self.nu - (self.W @ s[:, :, None])[:, :, 0]
        self.mu = K @ self.alpha
        self.Sigma = self._marginals(prior.KR)
        self.prior_part = -float(np.log(np.diag(self.L)).sum()) + 0.5 * float(
            np.sum(self.nu * self.mu)
        )

    def solve_cross(self, KxR: np.ndarray) -> np.ndarray:
        """V = L^-1 G^T (Kx (x) Q) for Kx = k(X, Xs) (n, m), given KxR = ``_spread(Kx,
        C - 1)``, returned transposed, V^T of shape (m, C - 1, n(C - 1)). L^-1 G^T (Kx (x)
        I) = V (I (x) Q^T), Q (C, C - 1) orthonormal and orthogonal to 1 (``_contrasts``),
        as G^T (Kx (x) 1) = 0 (B_i^T 1 = 0): C - 1 right-hand sides a point, not C."""
        n, C, J = self.W.shape
        WQ = np.swapaxes(self.W, 1, 2) @ _contrasts(C)  # (n, J, J)
        # V^T built C-ordered, so that its transpose is the Fortran-ordered right-hand
        # side LAPACK solves in place
        m = KxR.shape[0]
        GKt = np.empty((m, J, n * J))  # entry (s, b, (i, a)): Kx_is (W_i^T Q)_ab
        for b in range(J):
            np.multiply(KxR, WQ[:, :, b].reshape(-1), out=GKt[:, b, :])
        V = scipy.linalg.solve_triangular(
            self.L, GKt.reshape(m * J, n * J).T, lower=True, overwrite_b=True, check_finite=False
        )
        return V.T.reshape(m, J, n * J)

    def _marginals(self, KR: np.ndarray) -> np.ndarray:
        """Sigma_ii = K_ii I - Q V_i^T V_i Q^T, V = L^-1 G^T (K (x) Q), shape (n, C, C)."""
        C = self.W.shape[1]
        S = -_point_covariances(self.solve_cross(KR), _contrasts(C))
        S += np.diag(self.K)[:, None, None] * np.eye(C)
        return 0.5 * (S + np.swapaxes(S, 1, 2))

    def site_precision(self) -> np.ndarray:
        """T~_i = B_i P_i B_i^T, (n, C, C)."""
        return self.B @ self.P @ np.swapaxes(self.B, 1, 2)

    def cavities(self) -> tuple[np.ndarray, np.ndarray]:
        """mu_-i, Sigma_-i: precision Sigma_ii^-1 - T~_i, shift Sigma_ii^-1 mu_i - nu~_i."""
        prec = np.linalg.inv(self.Sigma)
        lam = prec - self.site_precision()
        if np.any(np.linalg.eigvalsh(0.5 * (lam + np.swapaxes(lam, 1, 2)))[:, 0] <= 0):
            raise np.linalg.LinAlgError("a cavity lost its positive definite precision")
        Sigma_cav = np.linalg.inv(lam)
        shift = np.einsum("icd,id->ic", prec, self.mu) - self.nu
        return np.einsum("icd,id->ic", Sigma_cav, shift), 0.5 * (
            Sigma_cav + np.swapaxes(Sigma_cav, 1, 2)
        )

    def log_evidence(self, mu_cav, Sigma_cav, log_zhat) -> float:
        """log Z_EP (module notes). Per case, log int N(f | mu_-, Sigma_-) t~(f) df
        = -mu_-^T T mu_- / 2 + nu^T mu_- - log|I + Sigma_- T| / 2 + r^T Sigma_ii r / 2,
        r = nu - T mu_- (Sigma_-^-1 + T = Sigma_ii^-1 by the cavity's definition)."""
        T = self.site_precision()
        Tm = np.einsum("icd,id->ic", T, mu_cav)
        r = self.nu - Tm
        _, logdet = np.linalg.slogdet(np.eye(T.shape[1]) + Sigma_cav @ T)
        site = (
            -0.5 * np.sum(mu_cav * Tm, axis=1)
            + np.sum(self.nu * mu_cav, axis=1)
            - 0.5 * logdet
            + 0.5 * np.einsum("ic,icd,id->i", r, self.Sigma, r)
        )
        return self.prior_part + float(np.sum(log_zhat - site))


#: tilted(B, mu_cav, Sigma_cav, start) -> (log Z^ (n,), P (n, J, J), h (n, J), start):
#: the tilted normalisers and the new sites; ``start`` is carried between sweeps.
Tilted = Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray, Any]]


def nested_tilted(B, mu_cav, Sigma_cav, start):
    """The inner EP (:mod:`._nested_ep`) on every case: z = B^T f + u 1, prior
    N(B^T mu_-, B^T Sigma_- B + 1 1^T); ``start`` its sites (alpha, beta) or None."""
    m = np.einsum("icj,ic->ij", B, mu_cav)
    S = np.swapaxes(B, 1, 2) @ Sigma_cav @ B + 1.0
    alpha, beta = (None, None) if start is None else start
    res = inner_ep(m, S, alpha, beta, tol=INNER_TOL, max_iter=INNER_MAX_ITER)
    P, h = outer_site(res.alpha, res.beta)
    return res.log_z, P, h, (res.alpha, res.beta)


def _run(K, B, options, tilted: Tilted, start):
    """The outer EP: parallel sweeps, adaptively damped, to the fixed point; returns the
    final state, its evidence, the tilted normalisers and start, and the Convergence."""
    n, C, J = B.shape
    P, h, inner = start if start is not None else (np.zeros((n, J, J)), np.zeros((n, J)), None)
    damping = 1.0 if options.damping is None else options.damping
    adaptive = options.damping is None
    lml_old, change_old = -np.inf, np.inf
    prior = _Prior.of(K, J)
    for sweep in range(1, options.max_iter + 1):
        state = _State(prior, B, P, h)
        mu_cav, Sigma_cav = state.cavities()
        log_zhat, P_new, h_new, inner = tilted(B, mu_cav, Sigma_cav, inner)
        lml = state.log_evidence(mu_cav, Sigma_cav, log_zhat)
        change = max(float(np.max(np.abs(P_new - P))), float(np.max(np.abs(h_new - h))))
        d_lml = abs(lml - lml_old)
        if sweep >= options.min_iter and d_lml < options.tol and change < options.site_tol:
            conv = Convergence(True, sweep, d_lml, f"converged in {sweep} sweeps", "parallel")
            return state, lml, log_zhat, (P, h, inner), conv
        if adaptive and change > change_old:
            damping = max(0.5 * damping, MIN_DAMPING)
        P = (1.0 - damping) * P + damping * P_new
        h = (1.0 - damping) * h + damping * h_new
        lml_old, change_old = lml, change
    msg = f"not converged in {options.max_iter} sweeps (site change {change:.3g})"
    warnings.warn(f"multinomial probit EP: {msg}", RuntimeWarning, stacklevel=4)
    conv = Convergence(False, options.max_iter, d_lml, msg, "parallel")
    return state, lml, log_zhat, (P, h, inner), conv


def infer_multinomial_probit(
    X: np.ndarray,
    codes: np.ndarray,
    C: int,
    kernel: Kernel,
    likelihood: MultinomialProbit,
    options: Any,
    *,
    tilted: Tilted = nested_tilted,
) -> MultinomialProbitEPPosterior:
    """Nested EP at fixed hyperparameters (see the module notes).

    Parameters
    ----------
    X : ndarray, shape (n, d)
    codes : ndarray of int, shape (n,)
        Class indices 0..C-1.
    C : int
    kernel, likelihood :
        The shared kernel and the multinomial probit.
    options : EPOptions
        ``damping`` (None: adaptive), ``tol``, ``site_tol``, ``min_iter``, ``max_iter``,
        ``warm_start`` (``previous.warm_start``).
    tilted : callable, optional
        The tilted computation (default the inner EP; tests put an exact one here).
    """
    K = kernel(X)
    if not np.all(np.isfinite(K)):
        raise ValueError("the kernel matrix contains NaN or infinity")
    B = difference_matrices(codes, C)
    start = options.warm_start
    if start is not None and (len(start) != 3 or np.shape(start[0]) != (len(codes), C - 1, C - 1)):
        raise ValueError("warm_start must be a multinomial probit EP posterior's warm_start")
    state, lml, log_zhat, sites, conv = _run(K, B, options, tilted, start)
    return MultinomialProbitEPPosterior(
        X,
        codes,
        kernel,
        likelihood,
        state=state,
        log_marginal_likelihood=lml,
        log_z=log_zhat,
        sites=sites,
        convergence=conv,
    )


def infer_multiclass(problem: Problem, options: Any) -> MultinomialProbitEPPosterior:
    """The EP engine with the multinomial probit: class indices, no prior mean (a constant
    shared by the C latent functions cancels in the likelihood), parallel sweeps only."""
    if problem.mean is not None:
        raise ValueError(
            "the multinomial probit takes no prior mean (mean=None): a constant shared by "
            "the C latent functions cancels in the likelihood"
        )
    if options.schedule == "sequential":
        raise ValueError("the multinomial probit's nested EP runs parallel sweeps only")
    codes, C = check_codes(problem.y, problem.likelihood)
    return infer_multinomial_probit(
        problem.X, codes, C, problem.kernel, problem.likelihood, options
    )


class MultinomialProbitEPPosterior(MulticlassPosterior):
    """Nested EP's Gaussian N(mu, (K^-1 + T~)^-1) over the Cn latent values.

    Extra attributes: ``sites`` (P, h and the inner sites), ``log_z`` (the tilted
    normalisers log p(y_i | cavity_i)), ``warm_start``, ``convergence``.
    """

    method = "ep"

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        kernel: Kernel,
        likelihood: MultinomialProbit,
        *,
        state: _State,
        log_marginal_likelihood: float,
        log_z: np.ndarray,
        sites: tuple,
        convergence: Convergence,
    ) -> None:
        super().__init__(X, y, kernel, likelihood, None, n_classes=state.B.shape[1])
        self._state = state
        self._lml = float(log_marginal_likelihood)
        self.log_z = log_z
        self.sites = sites
        self.convergence = convergence

    @property
    def log_marginal_likelihood(self) -> float:
        """EP's log Z (module notes)."""
        return self._lml

    @property
    def latent_mean(self) -> np.ndarray:
        """E[f_i^c], shape (n, C)."""
        return self._state.mu

    @property
    def latent_point_cov(self) -> np.ndarray:
        """The C x C covariance of f_i at each training input, (n, C, C)."""
        return self._state.Sigma

    @property
    def latent_var(self) -> np.ndarray:
        """Var[f_i^c], shape (n, C)."""
        return np.diagonal(self._state.Sigma, axis1=1, axis2=2).copy()

    @property
    def warm_start(self) -> tuple:
        """The sites (P, h, inner sites): pass as ``warm_start`` to start a nearby fit."""
        return self.sites

    @property
    def site_terms(self) -> tuple[np.ndarray, np.ndarray]:
        """The sites over each case's C values, t~_i(f_i) = exp(-f_i^T T~_i f_i / 2 +
        nu~_i^T f_i): (T~ = B_i P_i B_i^T (n, C, C), nu~ = B_i h_i (n, C))."""
        return self._state.site_precision(), self._state.nu

    def _predict_latent(self, Xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean k*^T alpha (m, C) and covariance k** I - Q V*^T V* Q^T (m, C, C), V* =
        L^-1 G^T (k(X, Xs) (x) Q) (``_State.solve_cross``)."""
        C = self.n_classes
        Q = _contrasts(C)
        means, covs = [], []
        for start in range(0, Xs.shape[0], 256):
            Z = Xs[start : start + 256]
            Ks = self.kernel(self.X, Z)
            cov = -_point_covariances(self._state.solve_cross(_spread(Ks, C - 1)), Q)
            cov += self.kernel.diag(Z)[:, None, None] * np.eye(C)
            means.append(Ks.T @ self._state.alpha)
            covs.append(0.5 * (cov + np.swapaxes(cov, 1, 2)))
        return np.concatenate(means), np.concatenate(covs)

    def _integration_moments(self, Xs, integration):
        mean, cov = self._predict_latent(Xs)
        return mean[None], cov[None]

    @cached_property
    def log_marginal_likelihood_gradient(self) -> np.ndarray:
        """d log Z_EP / d theta (module notes): <M, dK_j>, M = (alpha alpha^T - R~) / 2,
        R~_ij = sum_c [G Bm^-1 G^T]_(ic),(jc)."""
        st = self._state
        n, C, J = st.W.shape
        # R~_ij = sum_ab [Bm^-1]_(ia),(jb) (W_i^T W_j)_ab, Bm^-1 from L (LAPACK potri)
        Binv, info = _POTRI(st.L, lower=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"potri failed on I + G^T K G (info {info})")
        Binv = np.tril(Binv) + np.tril(Binv, -1).T
        R = (Binv * _class_gram(st.W)).reshape(n, J, n, J).sum(axis=(1, 3))
        M = 0.5 * (st.alpha @ st.alpha.T - R)
        traces, _ = self.kernel.gradient_terms(self.X, 0.5 * (M + M.T), K=st.K)
        return np.asarray(traces, dtype=float)

    @cached_property
    def latent_cov(self) -> np.ndarray:
        """The (Cn x Cn) posterior covariance, class-major (index c n + i)."""
        n, C = self._state.mu.shape
        # (L^-1 G^T (K (x) I))^T, rows case-major
        Vt = self._state.solve_cross(_spread(self._state.K, C - 1))
        Vt = (_contrasts(C) @ Vt).reshape(n * C, -1)
        S = np.kron(self._state.K, np.eye(C)) - Vt @ Vt.T  # case-major
        order = (np.arange(n)[None, :] * C + np.arange(C)[:, None]).ravel()
        S = S[np.ix_(order, order)]
        return 0.5 * (S + S.T)

    def sample_latent(self, draws: int, random_seed=None) -> np.ndarray:
        """Draws of f at the training inputs from the Gaussian, (draws, n, C)."""
        rng = np.random.default_rng(random_seed)
        n, C = self._state.mu.shape
        Lc = cholesky(self.latent_cov, jitter=JITTER, what="posterior covariance")
        z = rng.standard_normal((draws, C * n)) @ Lc.T
        return self.latent_mean[None] + z.reshape(draws, C, n).transpose(0, 2, 1)

    def to_inference_data(self, random_seed=None, *, draws: int = 1000):
        """``draws`` draws of f from the Gaussian (dims ``obs``, ``class``), seeded."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            import arviz as az

        f = self.sample_latent(draws, random_seed)
        return az.from_dict(
            posterior={"f": f[None]},
            observed_data={"y": self.y},
            coords={"obs": np.arange(self.X.shape[0]), "class": np.arange(self.n_classes)},
            dims={"f": ["obs", "class"], "y": ["obs"]},
            attrs={
                "method": self.method,
                "kernel": repr(self.kernel),
                "likelihood": self.likelihood.name,
                "log_marginal_likelihood": self.log_marginal_likelihood,
            },
        )
