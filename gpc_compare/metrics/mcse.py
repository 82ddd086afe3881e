"""The Monte Carlo error of a reference's held-out score: per case, and of the mean.

An MCMC reference predicts p(y* | x*, D) as the mean over its S draws of
p_s = p(y* | x*, f_s) (the link integrated against f* | f_s), and scores
log p(y* | x*, D) = log (1/S) sum_s p_s. That mean has a Monte Carlo standard error
sd(p_s) / sqrt(ESS), the ESS being that of the per-draw quantity p_s itself over the
chains (ArviZ's ``az.mcse(..., method="mean")``: Vehtari, Gelman, Simpson, Carpenter and
Buerkner 2021, Bayesian Analysis 16(2)); by the delta method (d log p / d p = 1 / p) the
log predictive's is sd(p_s / p) / sqrt(ESS), computed here from the ratios p_s / p in log
space, so a rare-event estimate (a case whose p is carried by a few draws) keeps its
error rather than underflowing. The ESS is computed for all cases at once
(:func:`gpc_compare._convergence.ess_mean`, equal to ArviZ's to 1e-10, which loops over
the cases in Python). The MCSE of a mean
log predictive over m cases is then :func:`mean_log_predictive_mcse`,
sqrt(sum_j mcse_j^2) / m, which takes the cases' errors as independent; they are not
quite (every case's p_s comes from the same draws of f, so the errors of nearby cases
move together), and :func:`joint_mean_log_predictive_mcse` keeps that correlation: the
same delta method applied to the mean itself, whose per-draw linearisation is z_s =
(1/m) sum_j p_js / p_j.
On the test problem (tests/metrics/test_mcse.py) the first is 0.90 of the spread of 20
independent runs' scores and the second 1.10.

The delta method is a first-order statement: where the draws' p_s are heavy-tailed (the
rare events above), the sd and ESS estimated from the same draws are themselves noisy
and the MCSE can understate the error; comparing independent runs is the check
(tests/metrics/test_mcse.py does it on a small problem).
"""

from __future__ import annotations

import numpy as np

from .._convergence import ess_mean
from ..numerics import log_mean_exp

__all__ = ["joint_mean_log_predictive_mcse", "log_predictive_mcse", "mean_log_predictive_mcse"]


def log_predictive_mcse(log_p: object) -> tuple[np.ndarray, np.ndarray]:
    """The MCMC estimate of log p(y* | x*, D) per case, and its Monte Carlo standard error.

    Parameters
    ----------
    log_p : array_like, shape (chains, draws, m)
        log p(y*_j | x*_j, f_s) for each chain, draw s and test case j (at least 4 draws
        per chain, as ArviZ's ESS needs).

    Returns
    -------
    log_mean : ndarray, shape (m,)
        log of the mean over all draws of p(y*_j | x*_j, f_s): the reference's
        log predictive.
    mcse : ndarray, shape (m,)
        Its Monte Carlo standard error by the delta method: sd_s(p_s / p) / sqrt(ESS_j),
        with ESS_j ArviZ's ``az.ess(..., method="mean")`` of p_s over the chains and the
        sd with ``ddof=1`` (so that mcse * p is ``az.mcse(p_s, method="mean")``). A case
        whose p_s is the same in every draw has MCSE 0.
    """
    lp, log_mean = _log_mean(log_p)
    ratio = np.exp(lp - log_mean)  # p_s / p: mean 1, no underflow of a small p
    sd = ratio.reshape(-1, ratio.shape[2]).std(axis=0, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mcse = np.where(sd > 0, sd / np.sqrt(ess_mean(ratio)), 0.0)
    return log_mean, mcse


def _log_mean(log_p: object) -> tuple[np.ndarray, np.ndarray]:
    """log_p as a float array of shape (chains, draws, cases) with at least 4 draws a
    chain (or a ValueError), and the log of its mean over the draws per case."""
    lp = np.asarray(log_p, dtype=float)
    if lp.ndim != 3:
        raise ValueError(f"log_p must have shape (chains, draws, cases), got {lp.shape}")
    if lp.shape[1] < 4:
        raise ValueError(f"log_p needs at least 4 draws per chain, got {lp.shape[1]}")
    return lp, log_mean_exp(lp, axis=(0, 1))


def mean_log_predictive_mcse(case_mcse: object) -> float:
    """The Monte Carlo standard error of a mean log predictive over m held-out cases.

    sqrt(sum_j mcse_j^2) / m: the per-case errors (:func:`log_predictive_mcse`, or
    ``SamplePosterior.log_predictive_mcse``) combined as independent.

    Parameters
    ----------
    case_mcse : array_like, shape (m,)
        The Monte Carlo standard error of each case's log predictive.

    Returns
    -------
    float
    """
    se = np.asarray(case_mcse, dtype=float).ravel()
    if se.size == 0:
        raise ValueError("case_mcse is empty")
    return float(np.sqrt(np.sum(se**2)) / se.size)


def joint_mean_log_predictive_mcse(log_p: object) -> float:
    """The Monte Carlo standard error of a mean log predictive, the cases' correlation kept.

    The mean score (1/m) sum_j log p_j, p_j the mean over the draws of p_js, moves to
    first order by (1/m) sum_j (p^_j - p_j) / p_j: the mean over the draws of
    z_s = (1/m) sum_j p_js / p_j (minus 1). Its MCSE is sd(z_s) / sqrt(ESS(z_s)), ArviZ's
    ``az.mcse(z, method="mean")``: every case's error from the same draws, so their
    covariance is in it (:func:`mean_log_predictive_mcse` takes them as independent).

    Parameters
    ----------
    log_p : array_like, shape (chains, draws, m)
        As for :func:`log_predictive_mcse` (``SamplePosterior.log_predictive_draws``).

    Returns
    -------
    float
    """
    lp, log_mean = _log_mean(log_p)
    z = np.exp(lp - log_mean).mean(axis=2)
    if not np.ptp(z) > 0:
        return 0.0
    return float(np.std(z, ddof=1) / np.sqrt(ess_mean(z[:, :, None])[0]))
