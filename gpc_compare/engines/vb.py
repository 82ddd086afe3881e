"""The VB approximation: the Jaakkola-Jordan local variational bound, logistic likelihood.

Each log sigma(z_i), z_i = y_i f_i, is bounded below by a quadratic in f_i (Jaakkola and
Jordan 2000; Gibbs and MacKay 2000; Bishop 2006 eq. 10.144):

    log sigma(z) >= log sigma(xi) + (z - xi) / 2 - lambda(xi) (z^2 - xi^2),
    lambda(xi) = tanh(xi / 2) / (4 xi)  (1/8 at xi = 0),

tight at z = +-xi. With it the likelihood is a Gaussian site exp(-1/2 W_i f_i^2 + b_i f_i),
W_i = 2 lambda(xi_i), b_i = y_i / 2, times exp(c_i), c_i = log sigma(xi_i) - xi_i / 2 +
lambda(xi_i) xi_i^2, and the evidence has the lower bound

    log Z_VB = sum_i c_i + log int N(f; m, K) exp(-1/2 f^T W f + b^T f) df
             = sum_i c_i + m sum(b) - m^2 sum(W) / 2 + r^T (mu - m) / 2 - log|B| / 2,

r = b - W m (Nickisch and Rasmussen 2008, section 4.5; the GPML toolbox's ``infVB``).
The variational parameters are optimised by EM, xi_i^2 = E_q[f_i^2] = mu_i^2 + v_i
(Bishop eq. 10.163), which never lowers the bound, extrapolated by Anderson's method
where that raises the bound further. The marginal variances v cost a triangular inverse,
as much as the Cholesky, and move slowly: each iteration first takes a half-step on the
mean alone (v held, the mean at the proposed xi by conjugate gradients preconditioned
with the current factor, a few products with K), extrapolates again, and only then
factorises, checks the bound and recomputes v; where that would lower the bound, the
plain EM step is taken instead. The iteration stops when the bound is estimated to lie
within ``tol`` of its maximum (from dF/dxi_i = lambda'(xi_i) (xi_i^2 - E_q[f_i^2]) and
the next EM step). The bound is stationary in xi at its optimum, so its gradient in the
hyperparameters is that of the Gaussian integral at fixed sites
(:meth:`GaussianPosterior._stationary_gradient`); the posterior is the shared Gaussian
form.

The probit likelihood has no such quadratic bound: ``method="kl"`` is the variational
method for it.
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numpy as np

from .._validation import any_value, check_kernel_matrix, check_positive, count, real_array
from ..likelihoods import Likelihood
from ..numerics import log_sigmoid
from ..posterior import Convergence
from ._engine import Engine, EngineOptions, Problem, engine_options, option
from ._sites import Anderson, GaussianSites, SitePosterior, gaussian_sites, site_mean_cg

__all__ = ["ENGINE", "VBEngine", "VBOptions", "VBPosterior", "infer", "jaakkola_lambda"]


@engine_options
class VBOptions(EngineOptions):
    """Options of the VB engine (``gc.fit(method="vb", ...)``)."""

    tol: float = option(
        1e-10,
        check_positive,
        "Converged when the bound is estimated to lie within tol of its maximum (the "
        "first-order gain of the next EM step, sum_i -lambda'(xi_i) (E_q[f_i^2] - xi_i^2) "
        "(xi_em_i - xi_i), which tracks the true distance to within a few per cent near the "
        "optimum) ...",
    )
    xi_tol: float = option(
        1e-6, check_positive, "... and the EM update would move no xi_i by more than xi_tol."
    )
    max_iter: int = option(
        1000,
        count(1),
        "Most iterations (each a few conjugate-gradient steps, one Cholesky and one "
        "triangular inverse); not converging by then warns and is recorded.",
    )
    warm_start: Any = option(
        None,
        any_value,
        "A previous VB posterior, or xi to start from (shape (n,); e.g. previous.warm_start); "
        "used if its bound is at least that of xi = 1.",
    )


class VBEngine(Engine):
    """The Jaakkola-Jordan variational bound (Jaakkola and Jordan 2000; Nickisch and
    Rasmussen 2008, section 4.5), the logistic likelihood only."""

    name = "vb"
    label = "VB"
    summary = "Jaakkola-Jordan local variational bound, logistic only (Jaakkola and Jordan 2000)"
    #: measured peaks (tests/engines/test_memory.py; n = 200 to 600): a fit 5.1-5.2, an
    #: optimisation 8.1-8.4
    dense_matrices = (5.5, 9.0)
    Options = VBOptions
    likelihoods = {"logistic": frozenset({"evidence", "evidence_gradient", "bound"})}

    def check_likelihood(self, likelihood: str | Likelihood) -> None:
        """:meth:`Engine.check_likelihood`, saying why and what to use instead."""
        try:
            super().check_likelihood(likelihood)
        except ValueError as exc:
            raise ValueError(
                f"{exc} (the logistic likelihood only: the Jaakkola-Jordan quadratic bound "
                "exists for log sigma(z), and the probit has no such bound); use "
                "method='kl' (the Gaussian variational bound) for the others"
            ) from None

    def infer(self, problem: Problem, options: VBOptions) -> VBPosterior:
        """Maximise the Jaakkola-Jordan bound on the evidence over xi at fixed
        hyperparameters (see :class:`Engine`)."""
        return _infer(problem, options)


#: The engine (registered by :mod:`gpc_compare.engines`).
ENGINE = VBEngine()


def infer(X, y, kernel, likelihood, mean=None, **options) -> VBPosterior:
    """The VB engine on checked arrays, options as keywords (:class:`VBOptions`):
    ``ENGINE.run``."""
    return ENGINE.run(X, y, kernel, likelihood, mean, **options)


#: The EM iteration's Anderson memory (:class:`._sites.Anderson`).
_ANDERSON_MEMORY = 5


def jaakkola_lambda(xi: np.ndarray) -> np.ndarray:
    """lambda(xi) = tanh(xi / 2) / (4 xi), even in xi, 1/8 at 0 (series below 1e-4)."""
    xi = np.abs(np.asarray(xi, dtype=float))
    small = xi < 1e-4
    out = np.tanh(0.5 * xi) / (4.0 * np.where(small, 1.0, xi))
    return np.where(small, 0.125 - np.where(small, xi, 0.0) ** 2 / 96.0, out)


def _propose(acceleration: Anderson) -> np.ndarray:
    """The next xi: Anderson's extrapolation of the EM iterates where it is finite, else
    the last EM step."""
    trial = acceleration.extrapolate()
    if trial is not None:
        trial = np.abs(trial)
        if np.all(np.isfinite(trial)):
            return trial
    xi, residual = acceleration.history[-1]
    return xi + residual


def _lambda_prime(xi: np.ndarray) -> np.ndarray:
    """d lambda / d xi = (xi sech^2(xi / 2) / 2 - tanh(xi / 2)) / (4 xi^2) at |xi|, < 0
    (series -xi / 48 below 1e-3)."""
    xi = np.abs(xi)
    small = xi < 1e-3
    s = np.where(small, 1.0, xi)
    out = (0.5 * s / np.cosh(np.minimum(0.5 * s, 350.0)) ** 2 - np.tanh(0.5 * s)) / (4.0 * s**2)
    return np.where(small, -xi / 48.0, out)


def _bound(
    K: np.ndarray, y: np.ndarray, m: float, xi: np.ndarray, variances: bool = True
) -> tuple[GaussianSites, float, float]:
    """The sites of the bound at ``xi``, q, log Z_VB (module note) and its rounding; q's
    marginal variances only if ``variances`` (a triangular inverse, as dear as the
    Cholesky)."""
    lam = jaakkola_lambda(xi)
    W, b = 2.0 * lam, 0.5 * y
    q = gaussian_sites(K, m, W, b, variances=variances)
    # lambda xi^2 = xi tanh(xi / 2) / 4: no overflow for huge xi
    c = log_sigmoid(xi) - 0.5 * xi + 0.25 * np.abs(xi) * np.tanh(0.5 * np.abs(xi))
    r = b - W * m
    terms = (
        float(c.sum()),
        m * float(b.sum()),
        -0.5 * m**2 * float(W.sum()),
        0.5 * float(r @ (q.mu - m)),
        -0.5 * q.log_det_B,
    )
    # the bound's rounding: a few ulps of the terms it sums (they cancel at a large mean)
    noise = 1e-13 * (1.0 + float(np.abs(c).sum()) + sum(abs(t) for t in terms[1:]))
    return q, sum(terms), noise


class VBPosterior(SitePosterior):
    """The VB approximation N(f | mu, (K^-1 + W)^-1), W = 2 lambda(xi): the Posterior
    contract.

    ``log_marginal_likelihood`` is the Jaakkola-Jordan lower bound on log p(y | X, theta)
    at its optimal ``xi`` (a bound, not an estimate; never above the KL engine's); its
    gradient is exact. Extra attributes: ``xi``, ``warm_start``.
    """

    method = "vb"

    def __init__(self, *args, xi: np.ndarray, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.xi = xi

    @property
    def warm_start(self) -> np.ndarray:
        """xi: pass as ``warm_start`` to start a nearby fit from here."""
        return self.xi.copy()


def _infer(problem: Problem, options: VBOptions) -> VBPosterior:
    """EM on xi from the start (:func:`_start`), extrapolated (:class:`_EM`), then the
    posterior at the last xi."""
    X, y, mean = problem.X, problem.y, problem.mean
    m = 0.0 if mean is None else float(mean)
    K = check_kernel_matrix(problem.kernel, X)
    em = _EM(K, y, m, options.xi_tol)
    run = em.maximize(_start(em, problem.n, options.warm_start), options)
    message = _message(run, options)
    if not run.converged:
        warnings.warn(f"VB {message}", RuntimeWarning, stacklevel=2)
    return VBPosterior(
        X,
        y,
        problem.kernel,
        problem.likelihood,
        mean,
        K=K,
        alpha=run.q.alpha,
        sW=run.q.sW,
        L=run.q.L,
        log_marginal_likelihood=run.bound,
        convergence=Convergence(run.converged, run.iterations, float(run.change), message),
        xi=run.xi,
        v=run.q.v,
    )


#: xi, q, the bound at xi and its rounding (:func:`_bound`).
_Point = tuple[np.ndarray, GaussianSites, float, float]


def _start(em: _EM, n: int, warm_start: Any) -> _Point:
    """xi = 1, or the warm start's xi where its bound is at least that."""
    xi = np.ones(n)
    start = (xi, *em.bound(xi))
    if warm_start is None:
        return start
    try:
        xi0 = np.abs(real_array(warm_start, "warm_start"))
    except ValueError:
        xi0 = np.zeros(0)
    if xi0.shape != (n,) or not np.all(np.isfinite(xi0)):
        raise ValueError(f"warm_start must be xi, a finite array of shape ({n},)")
    warm = (xi0, *em.bound(xi0))
    return warm if warm[2] >= start[2] else start


class _Run(NamedTuple):
    """Where :meth:`_EM.maximize` ended, and what it took."""

    xi: np.ndarray
    q: GaussianSites
    bound: float
    converged: bool
    iterations: int
    change: float  # of the bound in the last iteration
    xi_change: float  # of the EM update from the last xi
    gap: float  # the bound's estimated distance to its maximum
    factorisations: int
    cg_steps: int
    accelerated: int


class _EM:
    """The EM iteration on xi, extrapolated by Anderson's method with a half-step on the
    mean alone (module note), counting what it computes."""

    def __init__(self, K: np.ndarray, y: np.ndarray, m: float, xi_tol: float) -> None:
        self.K, self.y, self.m = K, y, m
        # the half-steps' means well below xi_tol: where rounding forbids it, CG gives up
        # and the plain EM step is taken instead
        self.cg_rtol = min(1e-10, 1e-4 * xi_tol)
        self.acceleration = Anderson(_ANDERSON_MEMORY)
        self.factorisations = self.cg_steps = self.accelerated = 0

    def bound(self, xi: np.ndarray) -> tuple[GaussianSites, float, float]:
        """:func:`_bound` at ``xi`` (one factorisation)."""
        self.factorisations += 1
        return _bound(self.K, self.y, self.m, xi)

    def maximize(self, start: _Point, options: VBOptions) -> _Run:
        """Iterate from ``start`` until the bound is within ``tol`` of its maximum and xi
        within ``xi_tol`` of the EM update, or ``max_iter`` iterations."""
        xi, q, bound, noise = start
        converged, change, xi_change, gap = False, np.inf, np.inf, np.inf
        iterations = 0
        for iterations in range(options.max_iter + 1):  # noqa: B007 (reported after the loop)
            xi_em = np.sqrt(q.mu**2 + q.v)  # EM: xi^2 = E_q[f^2] (Bishop eq. 10.163)
            xi_change = float(np.max(np.abs(xi_em - xi)))
            # the bound's distance to its maximum, estimated by what the next EM step gains
            # to first order: dF/dxi_i = lambda'(xi_i) (xi_i^2 - E_q[f_i^2]) times the step
            gap = float(np.sum(-_lambda_prime(xi) * (xi_em**2 - xi**2) * (xi_em - xi)))
            if gap < max(options.tol, noise) and xi_change < options.xi_tol:
                converged = True
                break
            if iterations == options.max_iter:
                break
            new = self.step((xi, q, bound, noise), xi_em)
            change = new[2] - bound
            xi, q, bound, noise = new
        counts = (self.factorisations, self.cg_steps, self.accelerated)
        return _Run(xi, q, bound, converged, iterations, change, xi_change, gap, *counts)

    def step(self, at: _Point, xi_em: np.ndarray) -> _Point:
        """The next point from ``at``, whose EM update is ``xi_em``: the extrapolation
        after a half-step on the mean where it does not lower the bound, else the EM step."""
        xi, q, bound, noise = at
        self.acceleration.push(xi, xi_em - xi)
        # a half-step on the mean alone: q's marginal variances held (they move slowly),
        # the mean at the proposal by conjugate gradients preconditioned with q's factor
        half = _propose(self.acceleration)
        W_half = 2.0 * jaakkola_lambda(half)
        mu_half = site_mean_cg(self.K, self.m, W_half, 0.5 * self.y, q.L, rtol=self.cg_rtol)
        if mu_half is not None:
            self.cg_steps += 1
            self.acceleration.push(half, np.sqrt(mu_half**2 + q.v) - half)
            trial = _propose(self.acceleration)
            new = (trial, *self.bound(trial))
            if new[2] >= bound - noise:
                self.accelerated += 1
                return new
        self.acceleration.clear()  # the EM step from q, which never lowers the bound
        return (xi_em, *self.bound(xi_em))


def _message(run: _Run, options: VBOptions) -> str:
    """How the iteration ended, for ``Convergence.message`` and the warning."""
    if run.converged:
        return (
            f"converged after {run.iterations} iterations ({run.factorisations} "
            f"factorisations, {run.cg_steps} conjugate-gradient half-steps, {run.accelerated} "
            f"extrapolated): estimated distance to the maximum {run.gap:.2e}, xi change "
            f"{run.xi_change:.2e}"
        )
    return (
        f"not converged after {run.iterations} iterations (estimated distance to the "
        f"maximum {run.gap:.2e}, xi change {run.xi_change:.2e}; tol {options.tol:g}, xi_tol "
        f"{options.xi_tol:g}): raise max_iter"
    )
