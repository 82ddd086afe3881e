"""The Laplace approximation for C classes with the softmax likelihood (R&W section 3.5).

Williams and Barber (1998): one latent GP per class, all with the same kernel, so the prior
covariance of the Cn latent values is block diagonal with C copies of K. Mode finding is
Newton's method in the form of R&W Alg. 3.3, which exploits that structure: each
iteration factorises C matrices of size n and one more, O(C n^3) rather than
O((Cn)^3); prediction follows Alg. 3.4, and the evidence gradient R&W section 5.5.1
(the analogue of Alg. 5.2), derived afresh below because the printed multi-class
algorithms carry known errata (both corrected here, and checked against dense
(Cn x Cn) linear algebra and finite differences in tests/engines/test_softmax.py):

- the log determinant: Alg. 3.3 line 14 gives log q = ... - sum_c z_c with
  z_c = sum log diag L_c, which omits the log|sum_c E_c| term. With W = D - Pi Pi^T,
  |I + K W| = |I + K D| |I - Pi^T (I + K D)^-1 K Pi|, and since
  D_c (I + K D_c)^-1 K D_c = D_c - E_c and sum_c D_c = I, the second factor is
  |sum_c E_c| = |M|^2. So 1/2 log|B| = sum_c z_c + sum log diag M.
- the predictive covariance (Alg. 3.4): cov(f*_c, f*_c') =
  delta_cc' (k** - k*^T E_c k*) + k*^T E_c (sum E)^-1 E_c' k*, symmetric in c, c'.

Naming (R&W): ``K`` the n x n kernel matrix shared by the classes; latent values are held
as arrays (n, C), column c for class c: ``f`` (the mode f^), ``a`` with f = K a (at the
mode a = y - pi), ``Y`` one-hot labels, ``pi`` = softmax(f) per row; ``D_c`` = diag(pi_c),
``W = D - Pi Pi^T`` (Cn x Cn, never formed), ``L_c = chol(I + D_c^1/2 K D_c^1/2)``,
``E_c = D_c^1/2 L_c^-T L_c^-1 D_c^1/2 = (K + D_c^-1)^-1``, ``M = chol(sum_c E_c)``.

Cost of one Newton iteration: C Cholesky factorisations of the n x n B_c, C inverses
from those factors (LAPACK potri, 2 n^3 / 3 flops each against a Cholesky's n^3 / 3) and
one Cholesky of sum_c E_c: (3 C + 1) n^3 / 3 flops, the work of 3 C + 1 Choleskys of
size n (10 for three classes), plus O(C n^2) products; a dense Newton step on the Cn
latent values would cost C^3 Choleskys (27 for three classes).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.linalg
from scipy.special import logsumexp, softmax

from .._validation import check_count, check_kernel_matrix, check_positive
from ..kernels import Kernel
from ..likelihoods import Softmax
from ..numerics import CANCELLATION, JITTER, cho_solve, chol_B, cholesky, solve_lower
from ..posterior import Convergence, MulticlassPosterior
from . import _newton

__all__ = ["SoftmaxLaplacePosterior", "check_codes", "infer_softmax"]


class _Factors:
    """E_c (C, n, n), M = chol(sum_c E_c) and 1/2 log|B| at one value of pi (n, C)."""

    def __init__(self, K: np.ndarray, pi: np.ndarray) -> None:
        n, C = pi.shape
        self.E = np.empty((C, n, n))
        half_logdet = 0.0
        for c in range(C):
            sD = np.sqrt(pi[:, c])
            L = chol_B(K, sD)  # R&W Alg. 3.3 line 6: L = chol(I + D_c^1/2 K D_c^1/2)
            half_logdet += float(np.log(np.diag(L)).sum())  # line 9: z_c
            # line 7: E_c = D_c^1/2 (L L^T)^-1 D_c^1/2, the inverse from the factor
            inv, info = scipy.linalg.lapack.dpotri(L, lower=1)
            if info:
                raise np.linalg.LinAlgError(f"inverting I + D^1/2 K D^1/2 failed (info {info})")
            inv = np.tril(inv) + np.tril(inv, -1).T
            self.E[c] = sD[:, None] * inv * sD[None, :]
        # line 11: M = chol(sum_c E_c) (positive definite: each E_c = (K + D_c^-1)^-1 is)
        self.M = cholesky(self.E.sum(axis=0), what="sum of E_c")
        # the log|sum_c E_c| term that R&W's line 14 omits (see the module notes)
        self.half_logdet_B = half_logdet + float(np.log(np.diag(self.M)).sum())

    def E_times(self, V: np.ndarray) -> np.ndarray:
        """(E_c v_c)_c for V (n, C), column by column."""
        return np.column_stack([Ec @ V[:, c] for c, Ec in enumerate(self.E)])

    def E_times_shared(self, v: np.ndarray) -> np.ndarray:
        """(E_c v)_c for one vector v (n,), shape (n, C)."""
        return np.column_stack([Ec @ v for Ec in self.E])

    def R_times(self, V: np.ndarray) -> np.ndarray:
        """(K + W^-1)^-1 v = E v - E R (sum_c E_c)^-1 R^T E v for V (n, C) (R&W eq. 3.41)."""
        U = self.E_times(V)
        t = cho_solve(self.M, U.sum(axis=1))
        return U - self.E_times_shared(t)


def _y_minus_pi(Y: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """y - pi (the gradient of log p(y | f)), with 1 - pi_y as the sum of the other pi_c:
    where pi_y is near one, 1 - pi_y keeps only eps / (1 - pi_y) of its precision."""
    rest = np.where(Y > 0, 0.0, pi)
    return np.where(Y > 0, rest.sum(axis=1, keepdims=True), -pi)


def _b_minus_c(fac: _Factors, K: np.ndarray, pi: np.ndarray, b: np.ndarray) -> np.ndarray:
    """b - c = b - E K b, column by column, = (I + D_c K)^-1 b_c, without cancellation.

    As R&W write it, b_c - E_c K b_c subtracts two terms of b's size whose difference, where
    pi_ic K_ii >> 1, is about b_ic / (1 + pi_ic K_ii): at a large signal variance only a few
    bits of it are left (as in the binary form, :func:`~gpc_compare.numerics.solve_I_plus_WK`).
    Since (I + D_c K)^-1 = E_c D_c^-1, that part of b_c (pi_ic K_ii above
    :data:`~gpc_compare.numerics.CANCELLATION`) is taken as E_c (b_c / pi_c).
    """
    big = pi * np.diag(K)[:, None] > CANCELLATION
    b_big = np.where(big, b, 0.0)
    b_rest = b - b_big
    scaled = np.divide(b_big, pi, out=np.zeros_like(b), where=big)
    return fac.E_times(scaled) + b_rest - fac.E_times(K @ b_rest)


def _psi(a: np.ndarray, f: np.ndarray, Y: np.ndarray) -> float:
    """Psi = 1/2 a^T f - y^T f + sum_i log sum_c exp f_i^c, to minimise (R&W eq. 3.39).

    Each point's -log pi_y = log(1 + sum_{c != y} exp(f_c - f_y)) is summed as log1p: as
    log sum exp f - f_y it is a difference of numbers of f's size, whose rounding (~1e-13
    at f ~ 30) hid every decrease in Psi once the other classes' pi fell below it.
    """
    f_y = np.sum(Y * f, axis=1, keepdims=True)
    rest = np.where(Y > 0, 0.0, np.exp(np.minimum(f - f_y, 0.0)))
    top = np.max(f - f_y, axis=1)  # where a class other than y leads, log sum exp directly
    nll = np.where(top > 0, logsumexp(f - f_y, axis=1), np.log1p(rest.sum(axis=1)))
    return 0.5 * float(np.sum(a * f)) + float(nll.sum())


class SoftmaxLaplacePosterior(MulticlassPosterior):
    """The multi-class Laplace approximation N(f^, (K^-1 + W)^-1) over the Cn latent values.

    Extra attributes: ``f_hat`` (the mode, (n, C)), ``pi`` (softmax of the mode),
    ``warm_start`` (a, to start another fit from), ``convergence``.
    """

    method = "laplace"

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        kernel: Kernel,
        likelihood: Softmax,
        *,
        K: np.ndarray,
        a: np.ndarray,
        pi: np.ndarray,
        factors: _Factors,
        log_marginal_likelihood: float,
        convergence: Convergence,
    ) -> None:
        super().__init__(X, y, kernel, likelihood, None, n_classes=pi.shape[1])
        self.K = K
        self.a = a
        self.pi = pi
        self._factors = factors
        self._log_marginal_likelihood = float(log_marginal_likelihood)
        self.convergence = convergence

    # ------------------------------------------------------------------ the contract
    @property
    def log_marginal_likelihood(self) -> float:
        """log q(y | X, theta), R&W eq. 3.44 with the corrected log determinant."""
        return self._log_marginal_likelihood

    @cached_property
    def latent_mean(self) -> np.ndarray:
        """The mode f^ = K a, shape (n, C)."""
        return self.K @ self.a

    @property
    def f_hat(self) -> np.ndarray:
        return self.latent_mean

    @property
    def warm_start(self) -> np.ndarray:
        """a at the mode: pass as ``warm_start`` to start a nearby fit from here."""
        return self.a.copy()

    @cached_property
    def _ME_K(self) -> tuple[np.ndarray, np.ndarray]:
        """V_c = M^-1 E_c K and E_c K, each (C, n, n): the parts of Sigma."""
        EK = self._factors.E @ self.K
        return np.stack([solve_lower(self._factors.M, EK_c) for EK_c in EK]), EK

    @cached_property
    def latent_point_cov(self) -> np.ndarray:
        """The C x C posterior covariance of f_i at each training input, shape (n, C, C).

        Sigma = (K^-1 + W)^-1 = K - K (K + W^-1)^-1 K, block (c, c'):
        delta_cc' (K - K E_c K) + (M^-1 E_c K)^T (M^-1 E_c' K).
        """
        V, EK = self._ME_K
        out = np.einsum("cji,dji->icd", V, V)
        diag = np.diag(self.K)[:, None] - np.einsum("ij,cji->ic", self.K, EK)
        idx = np.arange(self.n_classes)
        out[:, idx, idx] += diag
        return out

    @property
    def latent_var(self) -> np.ndarray:
        """Posterior variance of each f_i^c, shape (n, C)."""
        return np.maximum(np.diagonal(self.latent_point_cov, axis1=1, axis2=2), 0.0)

    @cached_property
    def latent_cov(self) -> np.ndarray:
        """The full (Cn x Cn) posterior covariance, class-major (index c n + i)."""
        V, EK = self._ME_K
        n, C = self.a.shape
        S = np.einsum("cki,dkj->cidj", V, V).reshape(C * n, C * n)
        for c in range(C):
            S[c * n : (c + 1) * n, c * n : (c + 1) * n] += self.K - self.K @ EK[c]
        return 0.5 * (S + S.T)

    def _predict_latent(self, Xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean (m, C) and covariance (m, C, C) of f* (R&W Alg. 3.4, corrected)."""
        Ks = self.kernel(self.X, Xs)
        mean = Ks.T @ self.a  # line 5: mu*_c = k*^T (y_c - pi_c) (= k*^T a_c at the mode)
        E, M = self._factors.E, self._factors.M
        EKs = E @ Ks  # (C, n, m): b = E_c k*
        Q = np.stack([solve_lower(M, b) for b in EKs])  # M^-1 E_c k*
        cov = np.einsum("cjm,djm->mcd", Q, Q)
        idx = np.arange(self.n_classes)
        cov[:, idx, idx] += self.kernel.diag(Xs)[:, None] - np.einsum("jm,cjm->mc", Ks, EKs)
        return mean, cov

    def _integration_moments(
        self, Xs: np.ndarray, integration: str | None
    ) -> tuple[np.ndarray, np.ndarray]:
        mean, cov = self._predict_latent(Xs)
        return mean[None], cov[None]

    @cached_property
    def log_marginal_likelihood_gradient(self) -> np.ndarray:
        """Exact gradient of the Laplace evidence (R&W section 5.5.1), in the order of
        ``hyperparameter_names``; the kernel is shared, so dK is the same for every class.

        explicit: 1/2 sum_c a_c^T dK a_c - 1/2 tr((K + W^-1)^-1 blockdiag(dK)), where the
        trace is sum_c tr((E_c - E_c (sum E)^-1 E_c) dK);
        implicit: (d log q / d f^)^T d f^, with d f^ = (I + K W)^-1 dK (y - pi) and
        d log q / d f_i^k = -1/2 tr(Sigma_i dW_i / d f_i^k)
        = -1/2 pi_k (S_kk - diag(S)^T pi - 2 (S pi)_k + 2 pi^T S pi), S = Sigma_i
        (the C x C block of W_i = diag(pi_i) - pi_i pi_i^T differentiated through
        d pi_c / d f_k = pi_c (delta_ck - pi_k)).
        """
        K, a, pi, fac = self.K, self.a, self.pi, self._factors
        Yd = np.zeros_like(pi)
        Yd[np.arange(pi.shape[0]), self.y] = 1.0
        r = Yd - pi  # grad log p(y | f^)
        # sum_c (E_c - (M^-1 E_c)^T (M^-1 E_c)) = (K + W^-1)^-1 blocks' traces against dK
        ME = np.stack([solve_lower(fac.M, Ec) for Ec in fac.E])
        T = fac.E.sum(axis=0) - np.einsum("cki,ckj->ij", ME, ME)
        S = self.latent_point_cov
        Sp = np.einsum("icd,id->ic", S, pi)
        s = (
            -0.5
            * pi
            * (
                np.diagonal(S, axis1=1, axis2=2)
                - np.einsum("icc,ic->i", S, pi)[:, None]
                - 2.0 * Sp
                + 2.0 * np.einsum("ic,ic->i", pi, Sp)[:, None]
            )
        )
        # explicit = <M, dK_j>, M = (sum_c a_c a_c^T - T) / 2; and the products dK_j r
        traces, products = self.kernel.gradient_terms(self.X, 0.5 * (a @ a.T - T), r, K=K)
        grads = []
        for explicit, b in zip(traces, products, strict=True):
            df = b - K @ fac.R_times(b)  # (I + K W)^-1 b = b - K (K + W^-1)^-1 b
            grads.append(explicit + float(np.sum(s * df)))
        return np.asarray(grads, dtype=float)

    # ----------------------------------------------------------------------- export
    def sample_latent(self, draws: int, random_seed: int | np.random.Generator | None = None):
        """Draws of f at the training inputs from the Gaussian posterior, (draws, n, C)."""
        rng = np.random.default_rng(random_seed)
        n, C = self.a.shape
        Lc = cholesky(self.latent_cov, jitter=JITTER, what="posterior covariance")
        z = rng.standard_normal((draws, C * n)) @ Lc.T
        return self.latent_mean[None] + z.reshape(draws, C, n).transpose(0, 2, 1)


def check_codes(y: np.ndarray, likelihood: Softmax | None = None) -> tuple[np.ndarray, int]:
    """Class indices 0..C-1 (every class present), as given to the engines by ``gc.fit``,
    and C (which must be ``likelihood.n_classes`` when that is set)."""
    y = np.asarray(y)
    if y.ndim != 1 or y.size == 0 or not np.issubdtype(y.dtype, np.number):
        raise ValueError("the softmax engines take y as class indices 0..C-1 (1-D)")
    codes = y.astype(int)
    if not np.array_equal(codes, y) or codes.min() < 0:
        raise ValueError("the softmax engines take y as class indices 0..C-1 (1-D)")
    C = int(codes.max()) + 1
    if C < 2 or np.unique(codes).size != C:
        raise ValueError(
            f"y must hold every class index 0..{C - 1} (at least two classes); "
            "gc.fit maps any labels to these"
        )
    if likelihood is not None:
        likelihood.check_n_classes(C)
    return codes, C


def infer_softmax(
    X: np.ndarray,
    y: np.ndarray,
    kernel: Kernel,
    likelihood: Softmax,
    mean: float | None = None,
    *,
    tol: float = 1e-10,
    max_iter: int = 100,
    warm_start: np.ndarray | None = None,
) -> SoftmaxLaplacePosterior:
    """Fit the multi-class Laplace approximation at fixed hyperparameters (R&W Alg. 3.3).

    Parameters are those of :func:`gpc_compare.engines.laplace.infer`, except: ``y``
    holds class indices 0..C-1; ``mean`` must be None (a constant prior mean shared by
    the classes cancels in the softmax, so it is not a hyperparameter); ``warm_start``
    is a, shape (n, C).
    """
    if mean is not None:
        raise ValueError(
            "the softmax likelihood takes no prior mean (mean=None): a constant shared by "
            "the C latent functions cancels in the softmax"
        )
    codes, C = check_codes(y, likelihood)
    n = X.shape[0]
    tol, max_iter = check_positive(tol, "tol"), check_count(max_iter, "max_iter")
    K = check_kernel_matrix(kernel, X)
    Y = np.zeros((n, C))
    Y[np.arange(n), codes] = 1.0

    def state(a: np.ndarray):
        f = K @ a
        return _psi(a, f, Y), f

    def direction(a: np.ndarray, f: np.ndarray) -> np.ndarray:
        pi = np.exp(f - logsumexp(f, axis=1, keepdims=True))  # line 4: pi, Pi from f
        fac = _Factors(K, pi)  # lines 5-11
        # line 12: b = (D - Pi Pi^T) f + y - pi, row by row: pi f - pi (pi . f) + y - pi
        b = pi * f - pi * np.sum(pi * f, axis=1, keepdims=True) + _y_minus_pi(Y, pi)
        # line 13: c = E K b. R&W's b - c and R^T c = sum_c c_c both cancel where the
        # signal variance is large (see _b_minus_c); here b - c comes without cancellation
        # and R^T c = sum_c b_c - sum_c (b - c)_c = -sum_c (b - c)_c, as b sums to zero over
        # the classes (1^T (D - Pi Pi^T) = 0 and y, pi each sum to one)
        u = _b_minus_c(fac, K, pi, b)
        t = cho_solve(fac.M, -u.sum(axis=1))  # R^T c, then M^T \ (M \ .)
        return u + fac.E_times_shared(t)  # line 14: a = b - c + E R M^T \ (M \ R^T c)

    a, psi, f = _newton.start(state, (n, C), warm_start, "a")
    res = _newton.newton(
        state,
        direction,
        a,
        psi,
        f,
        K,
        tol=tol,
        max_iter=max_iter,
        stacklevel=3,
        likelihood_gradient=lambda _, f: _y_minus_pi(Y, softmax(f, axis=1)),
    )
    a, psi, f = res.x, res.psi, res.extra

    # factorise once more at the final mode: the evidence needs B there exactly
    pi = np.exp(f - logsumexp(f, axis=1, keepdims=True))
    fac = _Factors(K, pi)
    # R&W eq. 3.44: log q = -1/2 a^T f + y^T f - sum_i log sum_c exp f_i^c - 1/2 log|B|
    lml = -psi - fac.half_logdet_B
    return SoftmaxLaplacePosterior(
        X,
        codes,
        kernel,
        likelihood,
        K=K,
        a=a,
        pi=pi,
        factors=fac,
        log_marginal_likelihood=lml,
        convergence=Convergence(res.converged, res.iterations, res.change, res.message),
    )
