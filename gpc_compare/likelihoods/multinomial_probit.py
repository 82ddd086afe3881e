"""The multinomial probit likelihood for C classes (Girolami and Rogers 2006; Riihimaki,
Jylanki and Vehtari 2013, JMLR 14, eq. 3).

    p(y = c | f) = int N(u | 0, 1) prod_{j != c} Phi(u + f_c - f_j) du,

the probability that c has the largest of f_j + eps_j, eps_j ~ N(0, 1) independent (u
is eps_c). It depends on f only through the C - 1 differences f_c - f_j.

One-dimensional integrals
-------------------------
Everything here reduces to I(a, b) = int N(u | 0, 1) prod_j Phi(a_j + b_j u) du, the
log-likelihood with a_j = f_c - f_j and b_j = 1. Its integrand is log-concave with
curvature at least 1 everywhere (that of N(u | 0, 1); each log Phi is concave), so
within 12 of the mode u^ (found by Newton's method safeguarded by bisection) it holds
all but e^-72 of the mass. There a trapezoid rule with step h = 0.4 / sqrt(1 + sum_j
b_j^2) (the integrand's curvature is at most 1 + sum_j b_j^2) converges geometrically
for this entire integrand; the sum is taken in log space, so log I is accurate where I is
1e-300. Measured against scipy's adaptive quadrature at 1e-14: 4e-14 relative in I
(tests/test_multinomial_probit.py).

The predictive integral
-----------------------
p(y* = c | data) = int p(y* = c | f) N(f | mu, Sigma) df = P(z > 0), with
z_j = f_c - f_j + eps_c - eps_j (j != c) Gaussian: mean mu_c - mu_j and covariance
S = B^T Sigma B + I + 1 1^T (B the C x (C - 1) matrix of columns e_c - e_j): an orthant
probability of C - 1 dimensions.

- C = 2: Phi(m / sqrt(S)), in closed form.
- C = 3 (``integration="quadrature"``, the default): every 2 x 2 covariance is
  D + v v^T with D diagonal and positive, v_j = sign_j sqrt(|rho| S_jj), so
  P(z > 0) = int N(u) prod_j Phi((m_j + v_j u) / sqrt(D_j)) du, one integral I(a, b) above:
  exact up to the rule's 1e-13.
- C >= 4 (``integration="mc"``, the default there): f ~ N(mu, Sigma) drawn ``n_samples``
  times (seeded, the same standard normal draws for every point and class) and
  p(y = c | f) by the rule above at each draw, averaged in log space; each row sums to one
  (to rounding) at every draw. The standard error of a probability is
  sd_f(p(y = c | f)) / sqrt(n_samples), at most 0.5 / sqrt(n_samples) (0.011 at 2000);
  ``return_se=True`` gives it.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from ..numerics import LOG_2PI, log_mean_exp, log_phi, log_phi_d2
from .base import Likelihood

__all__ = ["MULTINOMIAL_PROBIT_MC_SAMPLES", "MultinomialProbit", "log_gauss_probit_integral"]

#: Default Monte Carlo sample size of the predictive integral for C >= 4.
MULTINOMIAL_PROBIT_MC_SAMPLES = 2000
# The rule of log_gauss_probit_integral: nodes within _SPAN of the mode, step
# _STEP / sqrt(1 + sum b^2).
_SPAN = 9.0
_STEP = 0.5
# Newton steps for the mode (quadratic convergence from a bracket: far more than needed).
_MODE_STEPS = 60
# Elements per block of work (bounds the memory of the node arrays).
_CHUNK_ELEMENTS = 4_000_000


def _mode(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The mode of log N(u) + sum_j log Phi(a_j + b_j u) per row of a, b (N, J): the root of
    its derivative g(u) = -u + sum_j b_j r(a_j + b_j u), decreasing, by Newton's method
    safeguarded by bisection in a bracket found by doubling."""
    N = a.shape[0]

    def grad(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        _, d1, d2 = log_phi_d2(a + b * u[:, None])
        return -u + np.sum(b * d1, axis=1), -1.0 + np.sum(b * b * d2, axis=1)

    lo, hi = -np.ones(N), np.ones(N)
    for _ in range(60):  # g(lo) > 0 > g(hi): the bracket doubles until it holds the root
        g_lo, g_hi = grad(lo)[0], grad(hi)[0]
        if np.all(g_lo > 0) and np.all(g_hi < 0):
            break
        lo = np.where(g_lo > 0, lo, 2.0 * lo)
        hi = np.where(g_hi < 0, hi, 2.0 * hi)
    u = 0.5 * (lo + hi)
    for _ in range(_MODE_STEPS):
        g, h = grad(u)
        lo = np.where(g > 0, u, lo)
        hi = np.where(g > 0, hi, u)
        new = u - g / h
        # the bracket is closed: at the root a Newton step of zero stays (no bisection)
        new = np.where((new >= lo) & (new <= hi), new, 0.5 * (lo + hi))
        step = np.max(np.abs(new - u))
        u = new
        if step < 1e-12 * max(1.0, float(np.max(np.abs(u)))):
            break
    return u


def log_gauss_probit_integral(a: np.ndarray, b: np.ndarray | float = 1.0) -> np.ndarray:
    """log int N(u | 0, 1) prod_j Phi(a_j + b_j u) du for each row of ``a`` (..., J).

    ``b`` broadcasts against ``a``. The trapezoid rule of the module notes (relative error
    about 1e-13; log space throughout).
    """
    a = np.asarray(a, dtype=float)
    shape = a.shape[:-1]
    J = a.shape[-1]
    b = np.broadcast_to(np.asarray(b, dtype=float), a.shape).reshape(-1, J)
    a = a.reshape(-1, J)
    out = np.empty(a.shape[0])
    if J == 0:
        return np.zeros(shape)
    h = _STEP / np.sqrt(1.0 + np.sum(b * b, axis=1))
    half = np.ceil(_SPAN / h).astype(int)
    for K in np.unique(half):
        idx = np.flatnonzero(half == K)
        k = np.arange(-K, K + 1, dtype=float)
        chunk = max(1, _CHUNK_ELEMENTS // (k.size * J))
        for start in range(0, idx.size, chunk):
            i = idx[start : start + chunk]
            u_hat = _mode(a[i], b[i])
            u = u_hat[:, None] + h[i, None] * k[None, :]  # (N, nodes)
            lg = -0.5 * u * u - 0.5 * LOG_2PI
            lg = lg + np.sum(log_phi(a[i, None, :] + b[i, None, :] * u[:, :, None]), axis=2)
            out[i] = logsumexp(lg, axis=1) + np.log(h[i])
    return out.reshape(shape)


def differences(F: np.ndarray, c: int) -> np.ndarray:
    """f_c - f_j for j != c, shape (..., C - 1), in increasing j."""
    F = np.asarray(F, dtype=float)
    others = [j for j in range(F.shape[-1]) if j != c]
    return F[..., c : c + 1] - F[..., others]


class MultinomialProbit(Likelihood):
    """p(y = c | f) = E_u[prod_{j != c} Phi(u + f_c - f_j)], u ~ N(0, 1), with C latent values
    per input (see the module notes: the rule, its error, the predictive integral).

    A :class:`Likelihood` with ``latent_dim = C`` like :class:`Softmax`:
    ``MultinomialProbit(n_classes=C)`` fixes C, ``MultinomialProbit()`` takes it from the
    labels. Labels are class indices 0..C-1; latent values arrays (..., C). The binary
    parts of the base class do not apply: EP's tilted moments are the nested EP's
    (:mod:`gpc_compare.engines.ep_multiclass`). With two classes it is the probit
    Phi((f_1 - f_0) / sqrt(2)).

    Parameters
    ----------
    n_classes : int, optional
        The number of classes C (at least 2); None takes it from the labels.
    """

    name = "multinomial_probit"

    def __init__(self, n_classes: int | None = None) -> None:
        if n_classes is not None and (int(n_classes) != n_classes or n_classes < 2):
            raise ValueError(f"n_classes must be an integer >= 2, got {n_classes!r}")
        self.n_classes = None if n_classes is None else int(n_classes)

    @property
    def latent_dim(self) -> int | None:  # type: ignore[override]
        """The number of classes C (latent values per input), None until it is known."""
        return self.n_classes

    def check_n_classes(self, C: int) -> None:
        """Refuse labels with C classes when this likelihood was built for another number.

        Parameters
        ----------
        C : int
            The labels' number of classes.

        Raises
        ------
        ValueError
            If the likelihood was built for another number of classes.
        """
        if self.n_classes is not None and C != self.n_classes:
            raise ValueError(f"the labels have {C} classes but the likelihood is {self!r}")

    def log_prob(self, y: np.ndarray, F: np.ndarray) -> np.ndarray:
        """log p(y_i | f_i) for class indices y (n,) and F (n, C) (the 1-D rule above).

        Parameters
        ----------
        y : array_like of int, shape (n,)
            Class indices 0..C-1.
        F : array_like, shape (n, C)
            Latent values.

        Returns
        -------
        ndarray, shape (n,)
        """
        F = np.asarray(F, dtype=float)
        y = np.broadcast_to(np.asarray(y, dtype=int), F.shape[:-1])
        out = np.empty(F.shape[:-1])
        if F.shape[-1] == 2:  # Phi((f_c - f_j) / sqrt(2)) in closed form (class notes)
            d = differences(F, 1)[..., 0] / np.sqrt(2.0)
            return log_phi(np.where(y == 1, d, -d))
        for c in range(F.shape[-1]):
            sel = y == c
            if np.any(sel):
                out[sel] = log_gauss_probit_integral(differences(F[sel], c))
        return out

    def log_proba(self, F: np.ndarray) -> np.ndarray:
        """log p(y = c | f) for every class c, shape (..., C).

        Parameters
        ----------
        F : array_like, shape (..., C)
            Latent values.

        Returns
        -------
        ndarray, shape (..., C)
        """
        F = np.asarray(F, dtype=float)
        C = F.shape[-1]
        return np.stack([log_gauss_probit_integral(differences(F, c)) for c in range(C)], -1)

    def proba(self, F: np.ndarray) -> np.ndarray:
        """p(y = c | f) for every class c, shape (..., C).

        Parameters
        ----------
        F : array_like, shape (..., C)
            Latent values.

        Returns
        -------
        ndarray, shape (..., C)
        """
        return np.exp(self.log_proba(F))

    # ------------------------------------------------------- the predictive integral
    def log_predictive_all(
        self,
        mean: np.ndarray,
        cov: np.ndarray,
        *,
        integration: str | None = None,
        n_samples: int = MULTINOMIAL_PROBIT_MC_SAMPLES,
        random_seed: int | np.random.Generator | None = 0,
        return_se: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """log int p(y = c | f) N(f | mean, cov) df for every class c, shape (..., C).

        Parameters
        ----------
        mean : array_like, shape (..., C)
        cov : array_like, shape (..., C, C)
        integration : {"quadrature", "mc"}, optional
            See the module notes: quadrature (exact up to 1e-13) for C <= 3 (the
            default there), Monte Carlo over f with the 1-D rule at each draw otherwise.
        n_samples, random_seed :
            The Monte Carlo draws ("mc" only); the default seed makes it repeatable.
        return_se : bool
            Also return each probability's standard error (0 for the quadrature).

        Returns
        -------
        log_p : ndarray, shape (..., C)
            The log predictive probability of each class.
        se : ndarray, shape (..., C)
            Each probability's standard error (``return_se`` only).
        """
        mean, cov, shape = _check_moments(mean, cov)
        C = mean.shape[-1]
        if integration not in (None, "quadrature", "mc"):
            raise ValueError(f"integration must be 'quadrature' or 'mc', got {integration!r}")
        if integration == "quadrature" and C > 3:
            raise ValueError("integration='quadrature' takes C <= 3 classes; use 'mc'")
        n_samples = int(n_samples)
        if n_samples < 1:
            raise ValueError(f"n_samples must be a positive integer, got {n_samples}")
        if integration == "mc" or (integration is None and C > 3):
            out, se = _predictive_mc(self, mean, cov, n_samples, random_seed)
        else:
            out = np.stack([_predictive_quadrature(mean, cov, c) for c in range(C)], -1)
            se = np.zeros_like(out)
        out, se = out.reshape(*shape, C), se.reshape(*shape, C)
        return (out, se) if return_se else out

    def predict_proba(self, mean: np.ndarray, cov: np.ndarray, **kwargs) -> np.ndarray:
        """int p(y = c | f) N(f | mean, cov) df, shape (..., C).

        Parameters
        ----------
        mean : array_like, shape (..., C)
            The Gaussian latent's mean.
        cov : array_like, shape (..., C, C)
            Its covariance.
        **kwargs
            The integration options of :meth:`log_predictive_all`.

        Returns
        -------
        ndarray, shape (..., C)
        """
        return np.exp(self.log_predictive_all(mean, cov, **kwargs))

    def log_predictive(
        self, y: np.ndarray, mean: np.ndarray, cov: np.ndarray, **kwargs
    ) -> np.ndarray:
        """log p(y | data) for class indices ``y`` (...,), in log space.

        Parameters
        ----------
        y : array_like of int
            Class indices, broadcast against ``mean``'s leading shape.
        mean : array_like, shape (..., C)
            The Gaussian latent's mean.
        cov : array_like, shape (..., C, C)
            Its covariance.
        **kwargs
            The integration options of :meth:`log_predictive_all`.

        Returns
        -------
        ndarray, shape (...)
        """
        lp = self.log_predictive_all(mean, cov, **kwargs)
        y = np.broadcast_to(np.asarray(y, dtype=int), lp.shape[:-1])
        return np.take_along_axis(lp, y[..., None], axis=-1)[..., 0]

    # ------------------------------------------------- the binary parts do not apply
    def derivatives(self, y, f):
        raise NotImplementedError("the multinomial probit is taken by EP (nested EP) only")

    def tilted_moments(self, y, mean, var):
        raise NotImplementedError("the multinomial probit's tilted moments are the nested EP's")

    def expected_log_prob(self, y, mean, var):
        raise NotImplementedError("the expected log likelihood here is binary only")

    def quadrature(self, y, mean, var):
        raise NotImplementedError("the one-dimensional quadrature is binary only")

    def __repr__(self) -> str:
        if self.n_classes is None:
            return "MultinomialProbit()"
        return f"MultinomialProbit(n_classes={self.n_classes})"


def _check_moments(mean, cov) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """mean (N, C) and cov (N, C, C) flattened from broadcast shapes, checked finite."""
    mean = np.asarray(mean, dtype=float)
    cov = np.asarray(cov, dtype=float)
    if mean.ndim < 1 or mean.shape[-1] < 2:
        raise ValueError(f"mean must have shape (..., C) with C >= 2, got {mean.shape}")
    C = mean.shape[-1]
    if cov.shape[-2:] != (C, C):
        raise ValueError(f"cov must have shape (..., {C}, {C}), got {cov.shape}")
    shape = np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
    mean = np.broadcast_to(mean, (*shape, C)).reshape(-1, C)
    cov = np.broadcast_to(cov, (*shape, C, C)).reshape(-1, C, C)
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(cov))):
        raise ValueError("the latent mean and covariance must be finite")
    return mean, cov, shape


def _difference_moments(mean: np.ndarray, cov: np.ndarray, c: int):
    """Mean (N, C-1) and covariance (N, C-1, C-1) of z_j = f_c - f_j + eps_c - eps_j."""
    C = mean.shape[-1]
    B = np.zeros((C, C - 1))
    B[c, :] = 1.0
    B[[j for j in range(C) if j != c], np.arange(C - 1)] = -1.0
    m = mean @ B
    S = np.einsum("ja,njk,kb->nab", B, cov, B) + np.eye(C - 1) + 1.0
    return m, 0.5 * (S + np.swapaxes(S, 1, 2))


def _predictive_quadrature(mean: np.ndarray, cov: np.ndarray, c: int) -> np.ndarray:
    """log P(z > 0) for class c, C = 2 (closed form) or 3 (one 1-D integral)."""
    m, S = _difference_moments(mean, cov, c)
    if m.shape[1] == 1:
        return log_phi(m[:, 0] / np.sqrt(S[:, 0, 0]))
    # S = D + v v^T: v_j = sign_j sqrt(|rho| S_jj), D_j = (1 - |rho|) S_jj (the notes)
    s = np.sqrt(np.stack([S[:, 0, 0], S[:, 1, 1]], 1))
    rho = S[:, 0, 1] / (s[:, 0] * s[:, 1])
    sign = np.stack([np.ones_like(rho), np.where(rho < 0, -1.0, 1.0)], 1)
    v = sign * s * np.sqrt(np.abs(rho))[:, None]
    sd = s * np.sqrt(1.0 - np.abs(rho))[:, None]
    return log_gauss_probit_integral(m / sd, v / sd)


def _predictive_mc(
    lik: MultinomialProbit, mean: np.ndarray, cov: np.ndarray, n_samples: int, seed
) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo over f ~ N(mean, cov), p(y = c | f) by the 1-D rule at each draw."""
    N, C = mean.shape
    lam, U = np.linalg.eigh(0.5 * (cov + np.swapaxes(cov, 1, 2)))
    A = U * np.sqrt(np.maximum(lam, 0.0))[:, None, :]  # A A^T = cov (semi-definite is fine)
    z = np.random.default_rng(seed).standard_normal((n_samples, C))
    out, se = np.empty((N, C)), np.empty((N, C))
    chunk = max(1, _CHUNK_ELEMENTS // (200 * n_samples * C * C))
    for start in range(0, N, chunk):
        i = slice(start, min(N, start + chunk))
        lp = lik.log_proba(mean[i, None, :] + np.einsum("sk,nck->nsc", z, A[i]))
        out[i] = log_mean_exp(lp, axis=1)  # (points, C)
        sd = np.exp(lp).std(axis=1, ddof=1) if n_samples > 1 else np.inf
        se[i] = sd / np.sqrt(n_samples)
    return out, se
