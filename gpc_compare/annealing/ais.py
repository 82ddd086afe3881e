"""Annealed importance sampling (AIS) of the log evidence of a GP classifier.

:func:`ais` estimates log p(y | X, theta) at fixed hyperparameters (Neal 2001; Kuss and
Rasmussen 2005). Independent runs start from a tractable distribution pi_0 and move
through tempered targets pi_beta, beta: 0 -> 1 on a fixed schedule, to the posterior,
one elliptical slice sampling step (Murray, Adams and MacKay 2010) per temperature. With
the importance weights w_r = prod_t pi_beta_t / pi_beta_(t-1) at the states visited,
Z_1 / Z_0 is estimated by mean_r w_r, unbiased in Z for any start; the estimate of log Z
is log Z_0 + log mean_r w_r with a delta-method standard error across runs. Two starts
(:mod:`.paths`):

- the prior (``sites=None``), with beta_t = (t / T)^4 (Kuss and Rasmussen 2005);
- a Gaussian approximation given by site terms (``sites=(ttau, tnu)``, e.g. EP's), with
  beta_t = t / T. Because EP is close to the posterior the path is short: a few hundred
  temperatures do better than thousands from the prior.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from ..likelihoods import Likelihood
from .paths import make_path

__all__ = ["AISResult", "ais", "ais_log_evidence", "ais_log_evidence_from_sites"]

#: Default schedule lengths: from the prior, and from a Gaussian approximation.
DEFAULT_TEMPERATURES = {"prior": 2000, "sites": 300}


@dataclass(frozen=True)
class AISResult:
    """An AIS estimate of the log evidence.

    Parameters
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
    start, path, loglik = make_path(L, m, y, likelihood, K, sites, rng)
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
    temperatures : int
        The schedule length T.
    runs : int
        Independent AIS runs R (vectorised).
    random_seed : int or Generator, optional

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

    Parameters
    ----------
    K : ndarray, shape (n, n)
        The prior covariance the Gaussian start is formed with.
    L : ndarray, shape (n, n)
        Lower Cholesky factor of the prior covariance K (the prior is N(m, L L^T)).
    m : float
        Constant prior mean.
    y : ndarray, shape (n,)
        Labels in {-1, +1}.
    likelihood : Likelihood
        A binary likelihood (its ``log_prob``).
    ttau, tnu : ndarray, shape (n,)
        The site precisions (>= 0) and natural means of the Gaussian approximation (EP's
        ``ttau``, ``tnu``, R&W eqs. 3.56-3.57): the path starts there.
    temperatures : int
        The schedule length T.
    runs : int
        Independent AIS runs R (vectorised).
    random_seed : int or Generator, optional

    Returns
    -------
    log_z, se : float
    """
    sites = (ttau, tnu)
    run = {"temperatures": temperatures, "runs": runs, "random_seed": random_seed}
    r = ais(L, m, y, likelihood, K=K, sites=sites, **run)
    return r.log_evidence, r.standard_error
