"""The KL (variational Gaussian) approximation for GP classification (several classes:
:mod:`.kl_softmax`).

The Gaussian q(f) = N(mu, V) that maximises the evidence lower bound

    ELBO(q) = sum_i E_q[log p(y_i | f_i)] - KL(q || N(m, K)) <= log p(y | X, theta)

(Opper and Archambeau 2009; Nickisch and Rasmussen 2008, section 4.4; Challis and Barber
2013; the GPML toolbox's ``infKL``). At the optimum V = (K^-1 + W)^-1 with W diagonal
(W_i = -2 dE_i/dv_i), so q is the product of the prior and Gaussian sites
exp(-1/2 W_i f_i^2 + b_i f_i), and the posterior is the shared Gaussian form
(alpha, sW, L) of Laplace and EP: prediction, sampling and export are theirs.

The optimiser: natural-gradient steps on the sites (Khan and Lin 2017's
conjugate-computation form of the Opper-Archambeau fixed point),

    W <- (1 - rho) W + rho (-2 dE/dv),   b <- (1 - rho) b + rho (dE/dmu - 2 dE/dv mu),

with the step rho adapted: a step that would lower the ELBO is halved until it does not
(so the bound never decreases beyond rounding), and after an accepted step rho grows
back towards 1 (where the update is the fixed point itself). GPML's fixed step
oscillates forever on nearly separable data at large signal variance; this one cannot.

The bound, in the site form (R&W notation, B = I + sW K sW, L = chol(B), f = m + K alpha,
v_i = [(K^-1 + W)^-1]_ii; tr(K^-1 V) = n - W.v and log|K| - log|V| = log|B|):

    ELBO = sum_i E_i(mu_i, v_i) - 1/2 (log|B| + alpha^T (mu - m) - W.v).

It is stationary in q at its optimum, so its gradient in the hyperparameters is the
partial derivative at fixed q (:meth:`GaussianPosterior._stationary_gradient`).

Naming (R&W): ``K`` prior covariance, ``m`` constant prior mean, ``W``, ``b`` the sites'
precisions and linear coefficients, ``sW = W^1/2``, ``alpha = K^-1 (mu - m)``.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from .._validation import (
    any_value,
    check_kernel_matrix,
    check_positive,
    choice,
    count,
    optional,
)
from ..likelihoods import Likelihood, Softmax
from ..posterior import Convergence, Posterior
from ._engine import Engine, EngineOptions, Problem, engine_options, option
from ._sites import (
    GaussianSites,
    SitePosterior,
    bound_message,
    check_site_warm_start,
    gaussian_sites,
    maximize_bound,
)
from .kl_softmax import infer_softmax

__all__ = ["ENGINE", "KLEngine", "KLOptions", "KLPosterior", "infer"]


#: Monte Carlo draws per case for the softmax's E_q[log softmax] (integration "mc").
_N_SAMPLES = 1000


@engine_options
class KLOptions(EngineOptions):
    """Options of the KL engine (``gc.fit(method="kl", ...)``)."""

    tol: float = option(
        1e-10, check_positive, "Converged when an iteration raises the bound by less than tol ..."
    )
    site_tol: float = option(
        1e-6,
        check_positive,
        "... and the fixed-point update would move no site parameter by more than site_tol "
        "relative to 1 + its size (the bound is stationary in the sites, so it is then "
        "accurate far below tol).",
    )
    max_iter: int = option(
        1000,
        count(1),
        "Most iterations (each one Cholesky and one triangular solve, more when the step is "
        "halved); not converging by then warns and is recorded.",
    )
    warm_start: Any = option(
        None,
        any_value,
        "A previous KL posterior, or its sites (W, b) to start from (previous.warm_start; "
        "softmax: (Lam, b), a (C - 1) x (C - 1) block per case); used only if their bound is "
        "at least the prior's.",
    )
    integration: str | None = option(
        None,
        optional(choice("quadrature", "mc")),
        "Softmax only: how E_q[log softmax] is integrated. 'quadrature', a trapezoid rule over "
        "the C - 1 contrasts (error about 1e-10; its cost grows as the posterior's spread to "
        "the power C - 1), or 'mc', Monte Carlo on n_samples antithetic draws per case fixed "
        "by mc_seed (the bound and its exact gradient are then those of the estimate, "
        "with a standard error); None: quadrature for two classes, mc for more.",
    )
    n_samples: int = option(
        _N_SAMPLES,
        count(2),
        "Softmax with integration 'mc': draws per case (rounded up to an even number: "
        "antithetic pairs). At large sigma_f the fit can adapt q to its draws: its bound is "
        "then optimistic against the same q's on independent draws (held_out_bound), and "
        "the iteration slow; a warning says so, and more draws shrink both.",
    )
    mc_seed: int = option(
        0,
        count(0),
        "Softmax with integration 'mc': seeds the draws, which are part of the rule (like a "
        "quadrature's nodes: the bound is one function of the hyperparameters whatever "
        "gc.fit's random_seed); another seed gives another estimate of the same bound.",
    )


_BOUND = frozenset({"evidence", "evidence_gradient", "bound"})


class KLEngine(Engine):
    """The KL (variational Gaussian) approximation: the Gaussian q maximising the evidence
    lower bound (Opper and Archambeau 2009; Nickisch and Rasmussen 2008, section 4.4)."""

    name = "kl"
    label = "KL"
    summary = "Gaussian q maximising the evidence lower bound (Opper and Archambeau 2009)"
    #: measured peaks (tests/engines/test_memory.py; n = 200 to 600): a fit 5.1-5.8 (5.9
    #: with an ARD kernel in 8 dimensions), an optimisation 8.1-9.0
    dense_matrices = (6.5, 9.5)
    Options = KLOptions
    # any likelihood with expected_log_prob, and the softmax (kl_softmax.py)
    likelihoods = {
        "probit": _BOUND,
        "logistic": _BOUND,
        "gaussian": _BOUND,
        "softmax": _BOUND | {"multiclass"},
    }

    def infer(self, problem: Problem, options: KLOptions) -> Posterior:
        """Maximise the evidence lower bound over Gaussian q at fixed hyperparameters (see
        :class:`Engine`).

        With the softmax likelihood this is the multi-class bound
        (:mod:`gpc_compare.engines.kl_softmax`): ``y`` holds class indices 0..C-1 and
        ``mean`` must be None.
        """
        if isinstance(problem.likelihood, Softmax):
            return infer_softmax(problem, options)
        if (options.integration, options.n_samples, options.mc_seed) != (None, _N_SAMPLES, 0):
            raise ValueError(
                "the KL engine's integration, n_samples and mc_seed options are the softmax's: "
                "with "
                f"the {problem.likelihood.name!r} likelihood E_q[log p] is a one-dimensional "
                "quadrature accurate to about 1e-13"
            )
        return _infer(problem, options)


#: The engine (registered by :mod:`gpc_compare.engines`).
ENGINE = KLEngine()


def infer(X, y, kernel, likelihood, mean=None, **options) -> KLPosterior:
    """The KL engine on checked arrays, options as keywords (:class:`KLOptions`):
    ``ENGINE.run``."""
    return ENGINE.run(X, y, kernel, likelihood, mean, **options)


class _State(NamedTuple):
    """q at sites (W, b), E_q[log p(y_i | f_i)] with its derivatives, and the bound."""

    q: GaussianSites
    expected: tuple[np.ndarray, np.ndarray, np.ndarray]  # E_i, dE/dmu, dE/dv
    elbo: float
    noise: float  # the bound's rounding: a few ulps of the terms it sums

    W = property(lambda self: self.q.W)
    b = property(lambda self: self.q.b)
    mu = property(lambda self: self.q.mu)


def _state(K, y, lik, m, W, b) -> _State:
    """q(f) ∝ N(f; m, K) prod_i exp(-1/2 W_i f_i^2 + b_i f_i) and its ELBO (module note)."""
    q = gaussian_sites(K, m, W, b)
    expected = lik.expected_log_prob(y, q.mu, q.v)
    quad, wv = float(q.alpha @ (q.mu - m)), float(W @ q.v)
    kl = 0.5 * (q.log_det_B + quad - wv)
    scale = float(np.abs(expected[0]).sum()) + abs(q.log_det_B) + abs(quad) + abs(wv)
    elbo, noise = float(expected[0].sum()) - kl, 1e-13 * (1.0 + scale)
    if _impossible(elbo, noise, lik):
        elbo = -np.inf  # never accepted by the iteration (see _impossible)
    return _State(q, expected, elbo, noise)


def _impossible(elbo: float, noise: float, lik: Likelihood) -> bool:
    """Whether a bound cannot be one: not finite, or, for labels (a discrete y, so
    log p(y) <= 0), above 0 beyond its rounding. Each E_q[log p(y_i | f_i)] is then <= 0
    and the KL term >= 0, so only a numerical failure gives one (seen: +6.7e54 at
    sigma_f^2 = 1e30, from a quadrature that lost the bend of log Phi and means rounded
    to multiples of 6e28)."""
    return not np.isfinite(elbo) or (not lik.regression and elbo > noise)


class KLPosterior(SitePosterior):
    """The KL approximation N(f | mu, (K^-1 + W)^-1): the Posterior contract.

    ``log_marginal_likelihood`` is the evidence lower bound at its optimum, a lower
    bound on log p(y | X, theta) (not an estimate of it); its gradient is exact.
    Extra attributes: ``W`` and ``b`` (the sites), ``warm_start``, ``rounding_limited``,
    ``refused`` (why there is no bound to report, when there is none).
    """

    method = "kl"

    def __init__(
        self,
        *args,
        W: np.ndarray,
        b: np.ndarray,
        rounding_limited: bool = False,
        refused: str | None = None,
        **kwargs,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.W, self.b = W, b
        #: True where the iteration stopped because no step could raise the bound above its
        #: rounding, with the sites within ten times ``site_tol`` of the fixed point
        self.rounding_limited = rounding_limited
        #: Why the bound is refused (not finite, or above 0 for labels: no bound at all), or
        #: None. A refused bound is no evidence: ``log_marginal_likelihood`` and its
        #: gradient raise ValueError saying this, and a study records no evidence
        self.refused = refused

    @property
    def log_marginal_likelihood(self) -> float:
        if self.refused is not None:
            raise ValueError(self.refused)
        return super().log_marginal_likelihood

    @property
    def log_marginal_likelihood_gradient(self) -> np.ndarray:
        if self.refused is not None:
            raise ValueError(self.refused)
        return super().log_marginal_likelihood_gradient

    def __repr__(self) -> str:
        if self.refused is None:
            return super().__repr__()
        return (
            f"<{type(self).__name__} method={self.method!r} n={self.X.shape[0]} "
            f"kernel={self.kernel!r} likelihood={self.likelihood.name!r} "
            "log_marginal_likelihood=refused>"
        )

    @property
    def warm_start(self) -> tuple[np.ndarray, np.ndarray]:
        """(W, b): pass as ``warm_start`` to start a nearby fit from these sites."""
        return self.W.copy(), self.b.copy()


def _infer(problem: Problem, options: KLOptions) -> KLPosterior:
    """The bound maximised over the sites (W, b) by :func:`._sites.maximize_bound`."""
    X, y, likelihood, mean = problem.X, problem.y, problem.likelihood, problem.mean
    tol, site_tol = options.tol, options.site_tol
    n = problem.n
    m = 0.0 if mean is None else float(mean)
    K = check_kernel_matrix(problem.kernel, X)
    state = _state(K, y, likelihood, m, np.zeros(n), np.zeros(n))  # q = the prior
    if options.warm_start is not None:
        warm = _state(K, y, likelihood, m, *check_site_warm_start(options.warm_start, n))
        if warm.elbo >= state.elbo:
            state = warm
    make_state = partial(_state, K, y, likelihood, m)
    run = maximize_bound(make_state, state, tol=tol, site_tol=site_tol, max_iter=options.max_iter)
    state, converged = run.state, run.converged
    message = bound_message(run, tol, site_tol)
    refused = None
    if _impossible(state.elbo, state.noise, likelihood):
        converged = False
        refused = (
            "the bound is refused: no q the iteration reached had a bound that can be one "
            "(finite and, for labels, <= 0, as log p(y) is): the kernel's scale is beyond "
            "what double precision resolves; bound the signal variance lower"
        )
        message = f"{refused} ({message})"
    if not converged:
        warnings.warn(f"KL {message}", RuntimeWarning, stacklevel=2)
    return KLPosterior(
        X,
        y,
        problem.kernel,
        likelihood,
        mean,
        K=K,
        alpha=state.q.alpha,
        sW=state.q.sW,
        L=state.q.L,
        log_marginal_likelihood=state.elbo,
        convergence=Convergence(converged, run.iterations, float(run.change), message),
        W=state.q.W,
        b=state.q.b,
        v=state.q.v,
        rounding_limited=run.rounding_limited,
        refused=refused,
    )
