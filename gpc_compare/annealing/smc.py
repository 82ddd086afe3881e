"""Sequential Monte Carlo with an adaptive tempering schedule: the log evidence of a GP
classifier where a fixed AIS schedule degenerates.

The path is that of :mod:`.paths` (from EP's Gaussian approximation, or from the prior),
pi_beta(g) ∝ pi_0(g) r(g)^beta. AIS takes a fixed schedule of temperatures with one move
each, and at large signal variances with short length-scales a few runs carry all the
weight. Here (Del Moral, Doucet and Jasra 2006) a population of particles is reweighted,
resampled when its effective sample size (ESS) falls below half, and moved by several
elliptical slice steps at each temperature, and the next temperature is chosen so that the
conditional ESS of the incremental weights is ``cess`` times the particles (Zhou, Johansen
and Aston 2016, section 3.2):

    CESS(delta) = N (sum_i W_i u_i)^2 / sum_i W_i u_i^2,  u_i = r(g_i)^delta,

so the path takes small steps where the posterior changes fast and large ones elsewhere.
The schedule comes from a pilot run; the estimate from ``runs`` independent runs on that
fixed schedule, each unbiased for Z (the product over steps of sum_i W_i u_i), so that
their spread gives an honest standard error (delta method, as for AIS).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from ..likelihoods import Likelihood
from .paths import coordinate_sweep, make_path

__all__ = ["SMCResult", "smc"]


@dataclass(frozen=True)
class SMCResult:
    """An SMC estimate of the log evidence and the record of its health.

    Parameters
    ----------
    log_evidence : float
        log Z_0 + log mean_r Z_r over the independent runs.
    standard_error : float
        Its delta-method standard error across the runs.
    run_log_evidence : tuple of float
        Each run's estimate.
    runs, particles, moves, sweeps : int
        Independent runs, particles per run, whole-vector elliptical slice steps and
        coordinate sweeps per temperature.
    steps : int
        Temperatures after the start (the adaptive schedule's length).
    start : {"prior", "sites"}
        Where the path started.
    ess_min : float
        The smallest ESS, as a fraction of the particles, before any resampling (over
        every step of every run): near zero means the weights collapsed in one step.
    resampled : float
        Resampling steps per run.
    stuck : float
        The fraction of elliptical slice steps that gave up without moving (their
        bracket shrank to nothing): near zero when the moves are healthy.
    capped : bool
        The schedule reached ``max_steps`` before beta = 1: the estimate is not to be
        trusted.
    schedule : tuple of float
        The temperatures beta_0 = 0 < ... < beta_T = 1.
    """

    log_evidence: float
    standard_error: float
    run_log_evidence: tuple[float, ...]
    runs: int
    particles: int
    moves: int
    sweeps: int
    steps: int
    start: str
    ess_min: float
    resampled: float
    stuck: float
    capped: bool
    schedule: tuple[float, ...]


def smc(
    L: np.ndarray,
    m: float,
    y: np.ndarray,
    likelihood: Likelihood,
    *,
    K: np.ndarray | None = None,
    sites: tuple[np.ndarray, np.ndarray] | None = None,
    reference: tuple[np.ndarray, np.ndarray] | None = None,
    particles: int = 128,
    runs: int = 16,
    moves: int = 2,
    sweeps: int = 2,
    cess: float = 0.9,
    max_steps: int = 5000,
    random_seed: int | np.random.Generator | None = None,
) -> SMCResult:
    """log p(y | X, theta) by sequential Monte Carlo with adaptive tempering.

    Parameters
    ----------
    L, m, y, likelihood, K, sites
        As for :func:`~gpc_compare.annealing.ais`: the prior's Cholesky factor and
        constant mean, labels in {-1, +1} (or real targets with the Gaussian likelihood),
        the likelihood, and the Gaussian start (EP's ``(ttau, tnu)``; None: the prior).
    reference : (ttau, tnu), optional
        From the prior: site terms whose tempered Gaussian N(0, K) t^beta the
        whole-vector moves propose about (EP's, though the path starts at the prior);
        without, they propose from the prior. From ``sites``, the moves propose about
        that approximation.
    particles : int
        Particles per run.
    runs : int
        Independent runs on the pilot's schedule (their spread is the standard error).
    moves : int
        Elliptical slice steps of the whole vector per temperature, for
        pi_beta = R_beta (p / t)^beta about a Gaussian R_beta close to it (generalised
        elliptical slice sampling, Nishihara, Murray and Adams 2014: EP's q from
        ``sites``, N(0, K) t^beta from the prior with a ``reference``).
    sweeps : int
        Sweeps of one-coordinate elliptical slice steps per temperature
        (:func:`~gpc_compare.annealing.paths.coordinate_sweep`): what moves the particles
        where the kernel is short-range and sigma_f large. Binary only: with C latent
        functions (a multi-class ``likelihood``, ``y`` class indices, L = I_C (x) chol(K),
        :func:`~gpc_compare.annealing.paths.make_path`) none are run (``sweeps`` 0 in
        the result).
    cess : float in (0, 1)
        The conditional ESS each step keeps, as a fraction of the particles: closer to
        1, more and smaller steps.
    max_steps : int
        The pilot gives up on adapting after this many steps (and jumps to beta = 1;
        ``capped`` says so).
    random_seed : int or Generator, optional

    Returns
    -------
    SMCResult
    """
    rng = np.random.default_rng(random_seed)
    start, path, loglik = make_path(L, m, y, likelihood, K, sites, rng, reference)
    if likelihood.latent_dim != 1:
        sweeps = 0  # (the coordinate sweeps are binary: C latents move as whole vectors)
    problem = (y, m, likelihood, sweeps)
    pilot = _Population(path, loglik, 1, particles, rng, problem)
    betas, capped = [0.0], False
    while betas[-1] < 1.0:
        if len(betas) > max_steps:
            betas.append(1.0)
            capped = True
        else:
            betas.append(_next_beta(pilot.log_W[0], pilot.log_r[0], betas[-1], cess))
        pilot.step(betas[-2], betas[-1], moves)
    population = _Population(path, loglik, runs, particles, rng, problem)
    for b_prev, beta in zip(betas[:-1], betas[1:], strict=True):
        population.step(b_prev, beta, moves)
    log_z = population.log_z
    w = np.exp(log_z - log_z.max())
    se = float(np.std(w, ddof=1) / (np.sqrt(runs) * np.mean(w))) if runs > 1 else np.inf
    return SMCResult(
        log_evidence=float(path.log_z0 + logsumexp(log_z) - np.log(runs)),
        standard_error=se,
        run_log_evidence=tuple(float(path.log_z0 + v) for v in log_z),
        runs=runs,
        particles=particles,
        moves=moves,
        sweeps=sweeps,
        steps=len(betas) - 1,
        start=start,
        ess_min=float(population.ess_min),
        resampled=population.resamples / runs,
        stuck=population.stuck / max(population.moved, 1),
        capped=capped,
        schedule=tuple(betas),
    )


def _next_beta(log_W: np.ndarray, log_r: np.ndarray, beta: float, cess: float) -> float:
    """The next temperature: the largest beta' <= 1 whose incremental weights
    u = r^(beta' - beta) keep CESS = N (sum W u)^2 / sum W u^2 >= cess N (bisection)."""

    def ratio(delta: float) -> float:  # CESS / N, with the weights W normalised
        inc = delta * log_r
        return float(np.exp(2.0 * logsumexp(log_W + inc) - logsumexp(log_W + 2.0 * inc)))

    if ratio(1.0 - beta) >= cess:
        return 1.0
    lo, hi = 0.0, 1.0 - beta
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ratio(mid) >= cess else (lo, mid)
    return beta + max(lo, np.finfo(float).eps * max(beta, 1e-300))


class _Population:
    """``runs`` independent populations of ``particles`` each, stored as the columns of
    one (n, runs * particles) array so that every move is one vectorised call."""

    def __init__(self, path, loglik, runs: int, particles: int, rng, problem) -> None:
        self.path, self.loglik, self.rng = path, loglik, rng
        *self.problem, self.sweeps = problem  # (y, m, likelihood), sweeps per step
        self.runs, self.N = runs, particles
        self.g = path.draw(runs * particles)
        self.ll = loglik(self.g)
        # (a copy: _resample permutes it and ll in place)
        self.log_r = np.array(path.log_ratio(self.g, self.ll)).reshape(runs, particles)
        self.log_W = np.full((runs, particles), -np.log(particles))  # normalised weights
        self.log_z = np.zeros(runs)  # log Z_r / Z_0
        self.ess_min, self.resamples, self.stuck, self.moved = 1.0, 0, 0, 0

    def step(self, b_prev: float, beta: float, moves: int) -> None:
        """Reweight by r^(beta - b_prev), resample where the ESS is below half, move."""
        inc = (beta - b_prev) * self.log_r
        self.log_z += logsumexp(self.log_W + inc, axis=1)  # log sum_i W_i u_i
        log_W = self.log_W + inc
        self.log_W = log_W - logsumexp(log_W, axis=1, keepdims=True)
        ess = 1.0 / np.sum(np.exp(2.0 * self.log_W), axis=1) / self.N
        self.ess_min = min(self.ess_min, float(ess.min()))
        for r in np.flatnonzero(ess < 0.5):
            self._resample(r)
        for _ in range(moves):
            g, ll = self.path.reference_move(self.g, self.ll, beta, self.loglik)
            self.stuck += int(np.sum(np.all(g == self.g, axis=0)))
            self.moved += g.shape[1]
            self.g, self.ll = g, ll
        if self.sweeps:
            Q, r = self.path.natural(beta)
            for _ in range(self.sweeps):
                self.g = coordinate_sweep(self.g, beta, Q, r, *self.problem, self.rng)
            self.ll = self.loglik(self.g)
        self.log_r = np.array(self.path.log_ratio(self.g, self.ll)).reshape(self.runs, self.N)

    def _resample(self, r: int) -> None:
        """Systematic resampling of run ``r``'s particles (equal weights afterwards)."""
        W = np.exp(self.log_W[r])
        positions = (self.rng.random() + np.arange(self.N)) / self.N
        idx = np.minimum(np.searchsorted(np.cumsum(W), positions), self.N - 1)
        cols = r * self.N + np.arange(self.N)
        self.g[:, cols] = self.g[:, cols[idx]]
        self.ll[cols] = self.ll[cols[idx]]
        self.log_r[r] = self.log_r[r, idx]
        self.log_W[r] = -np.log(self.N)
        self.resamples += 1
