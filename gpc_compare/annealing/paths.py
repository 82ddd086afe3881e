"""Paths from a tractable start to the GP posterior, and the elliptical slice move.

A path is pi_beta(g) ∝ pi_0(g) r(g)^beta, beta from 0 to 1, over g = f - m, the latent
values about the constant prior mean m; the annealed estimators (:mod:`.ais`, :mod:`.smc`)
weight by r(g)^(beta_t - beta_(t-1)) and move with MCMC steps that leave pi_beta invariant:

- :class:`PriorPath`: pi_0 = N(0, K), r(g) = p(y | m + g) (Kuss and Rasmussen 2005);
- :class:`GaussianPath`: pi_0 ∝ N(g; 0, K) t(g), a Gaussian approximation given by site
  terms t (EP's), r(g) = p(y | m + g) / t(g); its moves are elliptical slice steps about
  the tempered Gaussian, the generalised elliptical slice sampling of Nishihara, Murray
  and Adams (2014) with the tempered approximation as the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

import numpy as np
import scipy.linalg

from ..likelihoods import Likelihood
from ..numerics import cho_solve, chol_B

__all__ = ["GaussianPath", "PriorPath", "coordinate_sweep", "elliptical_slice", "make_path"]


class PriorPath:
    """pi_0 = N(0, K) = N(0, L L^T), Z_0 = 1: the prior, sampled as L z.

    Parameters
    ----------
    L : ndarray, shape (n, n)
        The lower Cholesky factor of the prior covariance K.
    rng : numpy.random.Generator
        The draws' source.
    reference : GaussianPath, optional
        Sites whose tempered Gaussian :meth:`reference_move` proposes about; None: its moves
        are :meth:`move`'s.
    """

    log_z0 = 0.0

    def __init__(
        self,
        L: np.ndarray,
        rng: np.random.Generator,
        reference: GaussianPath | None = None,
    ) -> None:
        self.L, self.rng, self.reference = L, rng, reference

    def schedule(self, T: int) -> np.ndarray:
        """The T + 1 inverse temperatures beta_t = (t / T)^4, t = 0..T."""
        return (np.arange(T + 1) / T) ** 4  # Kuss and Rasmussen (2005)

    def draw(self, runs: int) -> np.ndarray:
        """``runs`` independent draws of g from the prior N(0, K), shape (n, runs)."""
        return self.L @ self.rng.standard_normal((self.L.shape[0], runs))

    def log_ratio(self, g: np.ndarray, ll: np.ndarray) -> np.ndarray:
        """log of pi_1 / pi_0 up to a constant: log p(y | m + g) (a copy of ``ll``: SMC
        permutes both in place when it resamples)."""
        return ll.copy()

    def move(self, g, ll, beta, loglik):
        """One elliptical slice step invariant for N(0, K) p(y | m + g)^beta."""
        return elliptical_slice(g, ll, beta, self.draw(g.shape[1]), loglik, self.rng)

    def reference_move(self, g, ll, beta, loglik):
        """One elliptical slice step for pi_beta = [N(0, K) t^beta] (p / t)^beta, about
        the tempered approximation (given ``reference`` sites; else :meth:`move`)."""
        if self.reference is None:
            return self.move(g, ll, beta, loglik)
        mu, sample, _ = self.reference.tempered(1.0 - beta)  # N(0, K) t^beta
        log_t = self.reference.log_t
        return _reference_step(g, ll, beta, loglik, mu, sample, log_t, self.rng)

    @cached_property
    def K_inv(self) -> np.ndarray:
        return _precision(self.L)

    def natural(self, beta: float) -> tuple[np.ndarray, np.ndarray]:
        """The Gaussian part of pi_beta, N(0, K), as (precision, precision x mean):
        (K^-1, 0)."""
        return self.K_inv, np.zeros(self.L.shape[0])


class GaussianPath:
    """pi_0 ∝ N(g; 0, K) t(g): the approximation given by site terms.

    With t(g) = exp(-1/2 g^T Lambda g + b^T g) (Lambda = diag(ttau), b = tnu - ttau m,
    g = f - m), pi_0 has the closed-form normaliser ``Z_0 = |B|^(-1/2) exp(1/2 b^T Sigma b)``
    (B = I + Lambda^1/2 K Lambda^1/2, Sigma = (K^-1 + Lambda)^-1, R&W eq. 3.65's terms),
    and the weights multiply pi_beta_t / pi_beta_(t-1) = [p(y | g) / t(g)]^(beta_t -
    beta_(t-1)). Each transition is an elliptical slice step for the Gaussian part
    N(mu_beta, Sigma_beta) ∝ N(0, K) t(g)^(1 - beta) (one Cholesky of B_beta per
    temperature; samples by Matheron's rule) and the likelihood p(y | m + g)^beta.

    Parameters
    ----------
    K : ndarray, shape (n, n)
        The prior covariance.
    L : ndarray, shape (n, n)
        Its lower Cholesky factor.
    m : float
        The constant prior mean.
    ttau, tnu : ndarray, shape (n,)
        The site precisions (>= 0) and natural means (EP's, R&W eqs. 3.56-3.57).
    rng : numpy.random.Generator
        The draws' source.
    """

    def __init__(self, K, L, m, ttau, tnu, rng: np.random.Generator) -> None:
        self.K, self.L, self.ttau, self.rng = K, L, ttau, rng
        self.b = tnu - ttau * m
        self._at: tuple[float, tuple] | None = None  # (see tempered)
        mu, self._sample0, logdet_B = self._gaussian(0.0)
        self.mu0 = mu
        self.log_z0 = -0.5 * logdet_B + 0.5 * float(self.b @ mu)  # mu = Sigma b at beta = 0

    def schedule(self, T: int) -> np.ndarray:
        """The T + 1 inverse temperatures beta_t = t / T, t = 0..T."""
        return np.arange(T + 1) / T

    def _gaussian(self, beta: float):
        """Mean and a sampler of N(mu, Sigma) ∝ N(0, K) t(g)^(1 - beta), and log|B|."""
        K, L, rng = self.K, self.L, self.rng
        n = K.shape[0]
        s = (1.0 - beta) * self.ttau
        sW = np.sqrt(s)
        LB = chol_B(K, sW)

        def sigma_times(v):  # Sigma v = K v - K S^1/2 B^-1 S^1/2 K v
            Kv = K @ v
            return Kv - K @ (sW[:, None] * cho_solve(LB, sW[:, None] * Kv))

        mu = sigma_times(((1.0 - beta) * self.b)[:, None])[:, 0]

        def sample(k: int) -> np.ndarray:  # Matheron: f0 - K S^1/2 B^-1 (S^1/2 f0 + z)
            f0 = L @ rng.standard_normal((n, k))
            z = rng.standard_normal((n, k))
            return f0 - K @ (sW[:, None] * cho_solve(LB, sW[:, None] * f0 + z))

        return mu, sample, 2.0 * np.sum(np.log(np.diag(LB)))

    def tempered(self, beta: float):
        """:meth:`_gaussian` at ``beta``, kept for the next call (SMC moves several times at
        one temperature)."""
        if self._at is None or self._at[0] != beta:
            self._at = (beta, self._gaussian(beta))
        return self._at[1]

    def draw(self, runs: int) -> np.ndarray:
        """``runs`` independent draws of g from pi_0, shape (n, runs)."""
        return self.mu0[:, None] + self._sample0(runs)

    def log_t(self, g: np.ndarray) -> np.ndarray:
        """log t(g) = -1/2 g^T Lambda g + b^T g, per column."""
        return -0.5 * np.einsum("i,ij,ij->j", self.ttau, g, g) + self.b @ g

    def log_ratio(self, g: np.ndarray, ll: np.ndarray) -> np.ndarray:
        """log of pi_1 / pi_0 up to a constant: log p(y | m + g) - log t(g)."""
        return ll - self.log_t(g)

    def reference_move(self, g, ll, beta, loglik):
        """One elliptical slice step for pi_beta = q (p / t)^beta about EP's Gaussian q
        itself: the generalised elliptical slice sampling of Nishihara, Murray and Adams
        (2014) with q as the reference, whose proposals are close to the posterior when
        beta is (where the tempered Gaussian of :meth:`move` is the prior)."""
        q = (self.mu0, self._sample0, self.log_t)  # EP's Gaussian: its mean, draws, sites
        return _reference_step(g, ll, beta, loglik, *q, self.rng)

    @cached_property
    def K_inv(self) -> np.ndarray:
        return _precision(self.L)

    def natural(self, beta: float) -> tuple[np.ndarray, np.ndarray]:
        """The Gaussian part of pi_beta, N(0, K) t(g)^(1 - beta), in natural parameters:
        precision Q = K^-1 + (1 - beta) Lambda and Q mu_beta = (1 - beta) b (no solve)."""
        Q = self.K_inv.copy()
        Q[np.diag_indices_from(Q)] += (1.0 - beta) * self.ttau
        return Q, (1.0 - beta) * self.b

    def move(self, g, ll, beta, loglik):
        """One elliptical slice step about mu_beta, invariant for pi_beta."""
        mu, sample, _ = self.tempered(beta)

        def log_factor(h: np.ndarray) -> np.ndarray:
            return loglik(mu[:, None] + h)

        nu = sample(g.shape[1])
        h, ll = elliptical_slice(g - mu[:, None], ll, beta, nu, log_factor, self.rng)
        return mu[:, None] + h, ll


def elliptical_slice(
    g: np.ndarray,
    ll: np.ndarray,
    beta: float,
    nu: np.ndarray,
    loglik: Callable[[np.ndarray], np.ndarray],
    rng: np.random.Generator,
    max_shrinks: int = 200,
) -> tuple[np.ndarray, np.ndarray]:
    """One elliptical slice sampling step per column, invariant for N(0, C) p(y | g)^beta.

    Murray, Adams and MacKay (2010), vectorised over the columns (independent chains).

    Parameters
    ----------
    g : ndarray, shape (n, runs)
        The current states.
    ll : ndarray, shape (runs,)
        log p(y | g) at them.
    beta : float
        The likelihood's power.
    nu : ndarray, shape (n, runs)
        A draw from N(0, C) per column (the ellipse's other axis).
    loglik : callable
        Maps states (n, k) to log p(y | .) (k,).
    rng : Generator
    max_shrinks : int
        Bracket shrinkages at most; a column that never accepts keeps its state.

    Returns
    -------
    g, ll : ndarray
        The new states and their log likelihoods.
    """
    runs = g.shape[1]
    log_u = beta * ll + np.log(rng.random(runs))
    theta = rng.uniform(0.0, 2.0 * np.pi, runs)
    lo, hi = theta - 2.0 * np.pi, theta.copy()
    new_g, new_ll = g.copy(), ll.copy()
    active = np.ones(runs, dtype=bool)
    for _ in range(max_shrinks):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        c, s = np.cos(theta[idx]), np.sin(theta[idx])
        prop = g[:, idx] * c + nu[:, idx] * s
        prop_ll = loglik(prop)
        ok = beta * prop_ll > log_u[idx]
        acc = idx[ok]
        new_g[:, acc], new_ll[acc] = prop[:, ok], prop_ll[ok]
        active[acc] = False
        rej = idx[~ok]
        neg = theta[rej] < 0
        lo[rej] = np.where(neg, theta[rej], lo[rej])
        hi[rej] = np.where(neg, hi[rej], theta[rej])
        theta[rej] = rng.uniform(lo[rej], hi[rej])
    return new_g, new_ll  # a column that never accepted keeps its state (theta -> 0)


def make_path(L, m, y, likelihood, K=None, sites=None, rng=None, reference=None):
    """The path an estimator anneals along, and log p(y | m + g) per column.

    Returns ``(start, path, loglik)``: ``"prior"`` and a :class:`PriorPath` (its moves
    proposing about N(0, K) t^beta when ``reference`` sites are given) without ``sites``,
    else ``"sites"`` and a :class:`GaussianPath` from them. ``K`` defaults to L L^T.

    With a multi-class likelihood (``latent_dim != 1``: C latent GPs) ``y`` holds class
    indices (n,) and g the C n latent values class-major (index c n + i), their prior
    N(0, I_C (x) K) given by L = I_C (x) chol(K); the path starts at the prior (the
    Gaussian path's sites are diagonal, binary only).
    """
    if likelihood.latent_dim != 1:
        if sites is not None or reference is not None:
            raise ValueError("with C latent functions the path starts at the prior (no sites)")
        return "prior", PriorPath(L, rng), _multiclass_loglik(m, y, likelihood)
    yy = y[:, None]

    def loglik(g: np.ndarray) -> np.ndarray:
        return likelihood.log_prob(yy, m + g).sum(axis=0)

    K = L @ L.T if K is None else K
    if sites is None:
        ref = None if reference is None else GaussianPath(K, L, m, *reference, rng)
        return "prior", PriorPath(L, rng, ref), loglik
    return "sites", GaussianPath(K, L, m, sites[0], sites[1], rng), loglik


def _multiclass_loglik(m: float, y: np.ndarray, likelihood: Likelihood) -> Callable:
    """sum_i log p(y_i | f_i) per column of g (C n, k), class-major (see :func:`make_path`)."""
    n = y.size

    def loglik(g: np.ndarray) -> np.ndarray:
        k = g.shape[1]
        F = (m + g).reshape(-1, n, k).transpose(2, 1, 0)  # (k, n, C)
        return likelihood.log_prob(np.broadcast_to(y, (k, n)), F).sum(axis=1)

    return loglik


def _reference_step(g, ll, beta, loglik, mu, sample, log_t, rng):
    """An elliptical slice step for N(mu, S) x (p / t)^beta, S sampled by ``sample``."""

    def log_factor(h: np.ndarray) -> np.ndarray:
        x = mu[:, None] + h
        return loglik(x) - log_t(x)

    nu = sample(g.shape[1])
    h, _ = elliptical_slice(g - mu[:, None], ll - log_t(g), beta, nu, log_factor, rng)
    g = mu[:, None] + h
    return g, loglik(g)


def _precision(L: np.ndarray) -> np.ndarray:
    """K^-1 = L^-T L^-1 from the lower Cholesky factor of K."""
    L_inv = scipy.linalg.solve_triangular(L, np.eye(L.shape[0]), lower=True)
    return L_inv.T @ L_inv


def coordinate_sweep(
    g: np.ndarray,
    beta: float,
    Q: np.ndarray,
    r: np.ndarray,
    y: np.ndarray,
    m: float,
    likelihood: Likelihood,
    rng: np.random.Generator,
    max_shrinks: int = 100,
) -> np.ndarray:
    """One sweep, in random order, of univariate elliptical slice steps, invariant for
    N(g; mu, Q^-1) prod_i p(y_i | m + g_i)^beta, the Gaussian given by its precision Q and
    r = Q mu; vectorised over the columns.

    Coordinate i given the others is N(c_i, 1 / Q_ii) p(y_i | m + g_i)^beta with
    c_i = g_i - (Q g - r)_i / Q_ii (the Gaussian's conditional, from its precision):
    a one-dimensional elliptical slice step (Murray, Adams and MacKay 2010) moves it, and
    Q g - r is updated by one column of Q. Where the kernel is short-range and the
    posterior of each f_i nearly independent and one-sided (large sigma_f on nearly
    separable data), whole-vector elliptical moves must satisfy every constraint at once
    and barely move; these moves do not care how many there are.

    Returns
    -------
    ndarray
        The new states (n, k).
    """
    g = g.copy()
    Qh = Q @ g - r[:, None]
    k = g.shape[1]
    for i in rng.permutation(g.shape[0]):
        q = Q[i, i]
        x = Qh[i] / q  # the offset from the conditional mean c_i
        base = m + g[i] - x
        nu = rng.standard_normal(k) / np.sqrt(q)
        log_u = beta * likelihood.log_prob(y[i], base + x) + np.log(rng.random(k))
        theta = rng.uniform(0.0, 2.0 * np.pi, k)
        lo, hi = theta - 2.0 * np.pi, theta.copy()
        new = x.copy()
        active = np.arange(k)
        for _ in range(max_shrinks):
            prop = x[active] * np.cos(theta[active]) + nu[active] * np.sin(theta[active])
            ok = beta * likelihood.log_prob(y[i], base[active] + prop) > log_u[active]
            new[active[ok]] = prop[ok]
            rej = active[~ok]
            neg = theta[rej] < 0
            lo[rej] = np.where(neg, theta[rej], lo[rej])
            hi[rej] = np.where(neg, hi[rej], theta[rej])
            theta[rej] = rng.uniform(lo[rej], hi[rej])
            active = rej
            if active.size == 0:
                break
        d = new - x
        g[i] += d
        Qh += np.outer(Q[:, i], d)
    return g
