"""The Laplace approximation on the sparse FITC prior (Snelson and Ghahramani 2006).

R&W Alg. 3.1 (Newton's method for the mode) and Alg. 5.1 (the evidence and its exact
gradient, including the mode's implicit dependence on the hyperparameters) with the
prior covariance K replaced by FITC's K~ = Q + diag(K - Q), Q = K_fu K_uu^-1 K_uf on M
inducing inputs: every product with K~, every solve with B = I + sW K~ sW and log|B| in
O(n M^2) time and O(n M) memory (:mod:`gpc_compare.posterior.sparse`), as GPML's
``infLaplace`` with ``apxSparse``. The gradient covers the kernel's hyperparameters, the
prior mean and (``optimize_inducing=True``) the inducing inputs.

Naming as in :mod:`.laplace` (R&W): ``alpha`` with f = m + K~ alpha, ``W`` the negative
Hessian of log p(y | f) at the mode, ``d1, d2, d3`` the derivatives of log p(y | f).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from .._validation import any_value, check_positive, count
from ..numerics import cho_solve
from ..posterior import FITCPrior, FITCSites, SparsePosterior
from . import _newton
from ._engine import Engine, Problem, engine_options, option
from ._inducing import SparseOptions, choose_inducing

__all__ = [
    "ENGINE",
    "FITCLaplaceEngine",
    "FITCLaplaceOptions",
    "FITCLaplacePosterior",
    "infer",
]


@engine_options
class FITCLaplaceOptions(SparseOptions):
    """Options of the FITC-Laplace engine (``gc.fit(method="fitc_laplace", ...)``): the
    inducing inputs' (:class:`._inducing.SparseOptions`), then Laplace's."""

    tol: float = option(
        1e-10,
        check_positive,
        "Newton stops when a step lowers Psi by less than this and moves f by less than "
        "sqrt(tol), as the Laplace engine's.",
    )
    max_iter: int = option(
        100, count(1), "Most Newton iterations; not converging by then warns and is recorded."
    )
    warm_start: Any = option(
        None,
        any_value,
        "A previous FITC-Laplace posterior, or alpha to start from (shape (n,)), or k "
        "candidates (k, n): the one with the lowest Psi is used if it is no worse than "
        "alpha = 0.",
    )


_SPARSE = frozenset({"evidence", "evidence_gradient", "sparse"})


class FITCLaplaceEngine(Engine):
    """The Laplace approximation on the FITC prior (Snelson and Ghahramani 2006; GPML's
    ``infLaplace`` with ``apxSparse``)."""

    name = "fitc_laplace"
    label = "FITC-Laplace"
    summary = "Laplace on the sparse FITC prior, M inducing inputs (Snelson and Ghahramani 2006)"
    Options = FITCLaplaceOptions
    likelihoods = {"probit": _SPARSE, "logistic": _SPARSE, "gaussian": _SPARSE}
    dense_matrices = None  # (no n x n matrix: O(n M) memory)
    quick_options = {"inducing": 8}

    def infer(self, problem: Problem, options: FITCLaplaceOptions) -> FITCLaplacePosterior:
        """FITC-Laplace at fixed hyperparameters and inducing inputs (see :class:`Engine`)."""
        return _infer(problem, options)


#: The engine (registered by :mod:`gpc_compare.engines`).
ENGINE = FITCLaplaceEngine()


def infer(X, y, kernel, likelihood, mean=None, **options) -> FITCLaplacePosterior:
    """The FITC-Laplace engine on checked arrays, options as keywords
    (:class:`FITCLaplaceOptions`): ``ENGINE.run``."""
    return ENGINE.run(X, y, kernel, likelihood, mean, **options)


class FITCLaplacePosterior(SparsePosterior):
    """FITC-Laplace: N(f | f^, (K~^-1 + W)^-1) on the FITC prior (the Posterior contract).

    Extra attributes: ``f_hat`` (the mode), ``W``, ``inducing``, ``warm_start``.
    """

    method = "fitc_laplace"

    def __init__(self, *args, derivatives: tuple, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._derivatives = derivatives

    @property
    def W(self) -> np.ndarray:
        return self.sites.W

    @property
    def f_hat(self) -> np.ndarray:
        return self.latent_mean

    @property
    def warm_start(self) -> np.ndarray:
        """alpha at the mode: pass as ``warm_start`` to start a nearby fit from here."""
        return self.alpha.copy()

    @cached_property
    def log_marginal_likelihood_gradient(self) -> np.ndarray:
        """Exact gradient of the FITC-Laplace evidence (R&W Alg. 5.1 with K~).

        Explicit part 1/2 alpha^T dK~ alpha - 1/2 tr(R dK~) (R&W eq. 5.22) and implicit
        part s2^T (I + K~ W)^-1 dK~ d1 with s2 = 1/2 diag(Sigma) d3 (eqs. 5.23-5.24, the
        sign as in :mod:`.laplace`), i.e. z^T dK~ d1 with z = s2 - R K~ s2: together
        <G, dK~> with G = 1/2 alpha alpha^T + sym(z d1^T) - R / 2.
        """
        _, d1, _, d3 = self._derivatives
        s2 = 0.5 * self.latent_var * d3
        z = s2 - self.sites.R(self.prior @ s2)
        alpha = self.alpha
        return self._gradient([(alpha, 0.5 * alpha), (z, d1)], extra_mean=float(z.sum()))


def _objective(alpha: np.ndarray, g: np.ndarray, lp: np.ndarray) -> float:
    """Psi = 1/2 alpha^T (f - m) - sum log p(y | f) (R&W eq. 3.12, negated)."""
    return 0.5 * float(alpha @ g) - float(lp.sum())


def _solve_I_plus_WK(sites: FITCSites, b: np.ndarray) -> np.ndarray:
    """(I + W K~)^-1 b = (I + w Q)^-1 (b / d) = c - w V^T A^-1 V c with c = b / d.

    With K~ = Q + Lambda, I + W K~ = D (I + w Q), D = diag(d) = I + Lambda W, w = W / d;
    Woodbury on Q = V^T V then gives the form above (A = I + V w V^T, factorised). R&W's
    b - sW B^-1 sW K~ b (as b - R K~ b) subtracts terms of size Lambda_i W_i and Q_ii W_i
    times the result's; this form only w_i Q_ii times, which Lambda's jitter bounds where
    the inducing inputs are the training inputs (at K = v I, v = 1e10, the old form lost
    all but a bit of alpha and stalled).
    """
    V, w = sites.prior.V, sites.w
    c = b / sites.d
    return c - w * (V.T @ cho_solve(sites.L_A, V @ c))


def _infer(problem: Problem, options: FITCLaplaceOptions) -> FITCLaplacePosterior:
    """R&W Alg. 3.1 on the FITC prior, with chord steps (:mod:`._newton`)."""
    X, y, likelihood = problem.X, problem.y, problem.likelihood
    Z = choose_inducing(X, options.inducing, options.random_seed)
    prior = FITCPrior(problem.kernel, X, Z, options.jitter)
    m = 0.0 if problem.mean is None else float(problem.mean)

    def state(alpha: np.ndarray):
        g = prior @ alpha
        derivs = likelihood.derivatives(y, g + m)
        return _objective(alpha, g, derivs[0]), (g, derivs)

    factor: list[FITCSites] = []  # the last factorisation, for chord steps

    def direction(alpha: np.ndarray, at: tuple) -> np.ndarray:
        factor[:] = [FITCSites(prior, -at[1][2])]
        return chord(alpha, at)

    def chord(alpha: np.ndarray, at: tuple) -> np.ndarray:
        # R&W Alg. 3.1 lines 6-8 with the last factorised W: (I + W K~)^-1 b
        g, (_, d1, _, _) = at
        sites = factor[0]
        return _solve_I_plus_WK(sites, sites.W * g + d1)

    start = _newton.start(state, (problem.n,), options.warm_start, "alpha", candidates=True)
    res = _newton.newton(
        state,
        direction,
        *start,
        prior,
        tol=options.tol,
        max_iter=options.max_iter,
        stacklevel=2,
        chord=chord,
        likelihood_gradient=lambda _, at: at[1][1],  # alpha = grad log p at the mode (eq. 3.17)
    )
    derivs = res.extra[1]
    sites = FITCSites(prior, -derivs[2])  # factorised at the final mode
    prior.drop_scratch()  # (the posterior keeps V and Z, not the work buffer)
    # R&W eq. 3.32: log q(y | X) = -Psi - 1/2 log|B|
    lml = -res.psi - 0.5 * sites.log_det_B
    return FITCLaplacePosterior(
        X,
        y,
        problem.kernel,
        likelihood,
        problem.mean,
        prior=prior,
        sites=sites,
        alpha=res.x,
        log_marginal_likelihood=lml,
        convergence=res.convergence(),
        optimize_inducing=options.optimize_inducing,
        derivatives=derivs,
    )
