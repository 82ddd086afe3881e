"""The gold-standard log marginal likelihood: annealed importance sampling (AIS).

:func:`ais` estimates log p(y | X, theta) of a GP classifier at fixed hyperparameters
(Neal 2001; Kuss and Rasmussen 2005). Independent runs start from a tractable
distribution pi_0 and move through tempered targets pi_beta, beta: 0 -> 1, to the
posterior pi_1 ∝ p(f) p(y | f), one elliptical slice sampling step (Murray, Adams and
MacKay 2010; :func:`elliptical_slice`) per temperature. With the importance weights
w_r = prod_t pi_beta_t / pi_beta_(t-1) at the states visited, Z_1 / Z_0 is estimated by
mean_r w_r, unbiased in Z for any start; the estimate of log Z is
log Z_0 + log mean_r w_r with a delta-method standard error across runs. Two starts:

- the prior (``sites=None``): pi_beta(g) ∝ N(g; 0, K) p(y | m + g)^beta, Z_0 = 1, with
  beta_t = (t / T)^4 (Kuss and Rasmussen 2005);
- a Gaussian approximation given by site terms (``sites=(ttau, tnu)``, e.g. EP's):
  pi_beta(g) ∝ N(g; 0, K) t(g)^(1 - beta) p(y | m + g)^beta, with beta_t = t / T.
  Because EP is close to the posterior the path is short: a few hundred temperatures
  do better than thousands from the prior.

Everything comes in as arguments (the prior factor, the likelihood, the sites): this
module sits below the engines and imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from .likelihoods import Likelihood
from .numerics import cho_solve, chol_B

__all__ = [
    "AISResult",
    "ais",
    "ais_log_evidence",
    "ais_log_evidence_from_sites",
    "elliptical_slice",
]

#: Default schedule lengths: from the prior, and from a Gaussian approximation.
DEFAULT_TEMPERATURES = {"prior": 2000, "sites": 300}


@dataclass(frozen=True)
class AISResult:
    """An AIS estimate of the log evidence.

    Attributes
    ----------
    log_evidence : float
        log Z_0 + log mean_r w_r.
    standard_error : float
        Its delta-method standard error, sd(w) / (sqrt(R) mean(w)) computed in log space.
    temperatures : int
        The schedule length T.
    runs : int
        Independent runs R.
    start : {"prior", "sites"}
        Where the annealing started.
    """

    log_evidence: float
    standard_error: float
    temperatures: int
    runs: int
    start: str


class _PriorStart:
    """pi_0 = N(0, K) = N(0, L L^T), Z_0 = 1: the prior, sampled as L z."""

    log_z0 = 0.0

    def __init__(self, L: np.ndarray, rng: np.random.Generator) -> None:
        self.L, self.rng = L, rng

    def schedule(self, T: int) -> np.ndarray:
        return (np.arange(T + 1) / T) ** 4  # Kuss and Rasmussen (2005)

    def draw(self, runs: int) -> np.ndarray:
        return self.L @ self.rng.standard_normal((self.L.shape[0], runs))

    def log_ratio(self, g: np.ndarray, ll: np.ndarray) -> np.ndarray:
        """log of pi_1 / pi_0 up to a constant: log p(y | m + g)."""
        return ll

    def move(self, g, ll, beta, loglik):
        """One elliptical slice step invariant for N(0, K) p(y | m + g)^beta."""
        return elliptical_slice(g, ll, beta, self.draw(g.shape[1]), loglik, self.rng)


class _GaussianStart:
    """pi_0 ∝ N(g; 0, K) t(g): the approximation given by site terms.

    With t(g) = exp(-1/2 g^T Lambda g + b^T g) (Lambda = diag(ttau), b = tnu - ttau m,
    g = f - m), pi_0 has the closed-form normaliser Z_0 = |B|^(-1/2) exp(1/2 b^T Sigma b)
    (B = I + Lambda^1/2 K Lambda^1/2, Sigma = (K^-1 + Lambda)^-1, R&W eq. 3.65's terms),
    and the weights multiply pi_beta_t / pi_beta_(t-1) = [p(y | g) / t(g)]^(beta_t -
    beta_(t-1)). Each transition is an elliptical slice step for the Gaussian part
    N(mu_beta, Sigma_beta) ∝ N(0, K) t(g)^(1 - beta) (one Cholesky of B_beta per
    temperature; samples by Matheron's rule) and the likelihood p(y | m + g)^beta.
    """

    def __init__(self, K, L, m, ttau, tnu, rng: np.random.Generator) -> None:
        self.K, self.L, self.ttau, self.rng = K, L, ttau, rng
        self.b = tnu - ttau * m
        mu, self._sample0, logdet_B = self._gaussian(0.0)
        self.mu0 = mu
        self.log_z0 = -0.5 * logdet_B + 0.5 * float(self.b @ mu)  # mu = Sigma b at beta = 0

    def schedule(self, T: int) -> np.ndarray:
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

    def draw(self, runs: int) -> np.ndarray:
        return self.mu0[:, None] + self._sample0(runs)

    def log_ratio(self, g: np.ndarray, ll: np.ndarray) -> np.ndarray:
        """log of pi_1 / pi_0 up to a constant: log p(y | m + g) - log t(g)."""
        return ll - (-0.5 * np.einsum("i,ij,ij->j", self.ttau, g, g) + self.b @ g)

    def move(self, g, ll, beta, loglik):
        """One elliptical slice step about mu_beta, invariant for pi_beta."""
        mu, sample, _ = self._gaussian(beta)
        h, ll = elliptical_slice(g - mu[:, None], ll, beta, sample(g.shape[1]),
                                 lambda h, mu=mu: loglik(mu[:, None] + h), self.rng)  # fmt: skip
        return mu[:, None] + h, ll


def ais(
    L: np.ndarray,
    m: float,
    y: np.ndarray,
    likelihood: Likelihood,
    *,
    K: np.ndarray | None = None,
    sites: tuple[np.ndarray, np.ndarray] | None = None,
    temperatures: int | None = None,
    runs: int = 32,
    random_seed: int | np.random.Generator | None = None,
) -> AISResult:
    """log p(y | X, theta) of a binary GP classifier by annealed importance sampling.

    Parameters
    ----------
    L : ndarray, shape (n, n)
        Lower Cholesky factor of the prior covariance K (the prior is N(m, L L^T)).
    m : float
        Constant prior mean.
    y : ndarray, shape (n,)
        Labels in {-1, +1}.
    likelihood : Likelihood
        A binary likelihood (its ``log_prob``).
    K : ndarray, shape (n, n), optional
        The prior covariance the Gaussian start is formed with (``sites`` only); default
        ``L @ L.T``.
    sites : (ttau, tnu), optional
        None: start at the prior, beta_t = (t / T)^4. Otherwise the site precisions
        (>= 0) and natural means of a Gaussian approximation (EP's ``ttau``, ``tnu``):
        start there, beta_t = t / T.
    temperatures : int, optional
        The schedule length T; default 2000 from the prior, 300 from sites.
    runs : int
        Independent AIS runs R (vectorised).
    random_seed : int or Generator, optional

    Returns
    -------
    AISResult
    """
    rng = np.random.default_rng(random_seed)
    yy = y[:, None]

    def loglik(g: np.ndarray) -> np.ndarray:
        return likelihood.log_prob(yy, m + g).sum(axis=0)

    if sites is None:
        start, path = "prior", _PriorStart(L, rng)
    else:
        ttau, tnu = sites
        K = L @ L.T if K is None else K
        start, path = "sites", _GaussianStart(K, L, m, ttau, tnu, rng)
    T = DEFAULT_TEMPERATURES[start] if temperatures is None else int(temperatures)
    g = path.draw(runs)
    ll = loglik(g)
    log_w = np.zeros(runs)
    betas = path.schedule(T)
    for b_prev, beta in zip(betas[:-1], betas[1:], strict=True):
        log_w += (beta - b_prev) * path.log_ratio(g, ll)
        g, ll = path.move(g, ll, beta, loglik)
    log_z = path.log_z0 + logsumexp(log_w) - np.log(runs)
    w = np.exp(log_w - log_w.max())
    se = float(np.std(w, ddof=1) / (np.sqrt(runs) * np.mean(w)))
    return AISResult(float(log_z), se, T, runs, start)


def ais_log_evidence(
    L: np.ndarray,
    m: float,
    y: np.ndarray,
    likelihood: Likelihood,
    *,
    temperatures: int = 2000,
    runs: int = 32,
    random_seed: int | np.random.Generator | None = None,
) -> tuple[float, float]:
    """log p(y) by AIS from the prior: :func:`ais` with ``sites=None``, as a pair.

    Returns
    -------
    log_z, se : float
    """
    r = ais(L, m, y, likelihood, temperatures=temperatures, runs=runs, random_seed=random_seed)
    return r.log_evidence, r.standard_error


def ais_log_evidence_from_sites(
    K: np.ndarray,
    L: np.ndarray,
    m: float,
    y: np.ndarray,
    likelihood: Likelihood,
    ttau: np.ndarray,
    tnu: np.ndarray,
    *,
    temperatures: int = 300,
    runs: int = 32,
    random_seed: int | np.random.Generator | None = None,
) -> tuple[float, float]:
    """log p(y) by AIS from a Gaussian approximation (EP's sites): :func:`ais` with
    ``K=K, sites=(ttau, tnu)``, as a pair.

    Returns
    -------
    log_z, se : float
    """
    r = ais(
        L, m, y, likelihood, K=K, sites=(ttau, tnu), temperatures=temperatures, runs=runs,
        random_seed=random_seed,
    )  # fmt: skip
    return r.log_evidence, r.standard_error


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
