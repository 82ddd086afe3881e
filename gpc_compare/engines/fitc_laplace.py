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

import numpy as np

from .._validation import any_value, check_positive, count, option_checker
from ..kernels import Kernel
from ..likelihoods import Likelihood
from ..numerics import cho_solve
from ..posterior import FITCPrior, FITCSites, SparsePosterior
from . import _newton
from ._inducing import SPARSE_OPTION_CHECKS, SPARSE_OPTIONS, choose_inducing

__all__ = ["FITCLaplacePosterior", "check_options", "infer"]

#: How this engine is named in messages.
LABEL = "FITC-Laplace"
#: Options ``gc.fit(method="fitc_laplace", ...)`` accepts, with their defaults.
OPTIONS = {**SPARSE_OPTIONS, "tol": 1e-10, "max_iter": 100, "warm_start": None}
#: How each option is checked (:func:`check_options`).
OPTION_CHECKS = {
    **SPARSE_OPTION_CHECKS,
    "tol": check_positive,
    "max_iter": count(1),
    "warm_start": any_value,
}
#: What this engine can do (see :data:`gpc_compare.engines.CAPABILITY_NAMES`).
CAPABILITIES = frozenset({"evidence", "evidence_gradient", "sparse"})
#: The likelihoods it takes (by name).
LIKELIHOODS = frozenset({"probit", "logistic", "gaussian"})

#: The options checked before any fit (``warm_start``'s shape is :func:`infer`'s).
check_options = option_checker(OPTION_CHECKS, "method 'fitc_laplace'")


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


def infer(
    X: np.ndarray,
    y: np.ndarray,
    kernel: Kernel,
    likelihood: Likelihood,
    mean: float | None = None,
    *,
    inducing: int | np.ndarray | None = OPTIONS["inducing"],
    optimize_inducing: bool = OPTIONS["optimize_inducing"],
    jitter: float = OPTIONS["jitter"],
    random_seed: int | np.random.Generator | None = OPTIONS["random_seed"],
    tol: float = OPTIONS["tol"],
    max_iter: int = OPTIONS["max_iter"],
    warm_start: np.ndarray | None = None,
) -> FITCLaplacePosterior:
    """Fit the FITC-Laplace approximation at fixed hyperparameters and inducing inputs.

    Parameters
    ----------
    X, y, kernel, likelihood, mean
        As for :func:`gpc_compare.engines.laplace.infer` (binary or Gaussian).
    inducing : int, ndarray of shape (M, d), or None
        The inducing inputs, or how many to choose (k-means++, :mod:`._inducing`).
    optimize_inducing : bool
        Whether their coordinates are hyperparameters (named and differentiated).
    jitter : float
        snu^2 / mean(diag K_uu), held fixed when differentiating (GPML's 1e-6).
    random_seed : int or Generator, optional
        Seeds the choice of inducing inputs.
    tol, max_iter, warm_start
        As for the Laplace engine.
    """
    checked = check_options({"inducing": inducing, "optimize_inducing": optimize_inducing,
                             "jitter": jitter, "tol": tol, "max_iter": max_iter})  # fmt: skip
    Z = choose_inducing(X, checked["inducing"], random_seed)
    prior = FITCPrior(kernel, X, Z, checked["jitter"])
    m = 0.0 if mean is None else float(mean)

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

    alpha, psi, at = _newton.start(state, (X.shape[0],), warm_start, "alpha", candidates=True)
    res = _newton.newton(state, direction, alpha, psi, at, prior, tol=checked["tol"],
                         max_iter=checked["max_iter"], stacklevel=2, chord=chord,
                         likelihood_gradient=lambda _, at: at[1][1])  # fmt: skip
    derivs = res.extra[1]
    sites = FITCSites(prior, -derivs[2])  # factorised at the final mode
    prior.drop_scratch()  # (the posterior keeps V and Z, not the work buffer)
    # R&W eq. 3.32: log q(y | X) = -Psi - 1/2 log|B|
    lml = -res.psi - 0.5 * sites.log_det_B
    return FITCLaplacePosterior(
        X,
        y,
        kernel,
        likelihood,
        mean,
        prior=prior,
        sites=sites,
        alpha=res.x,
        log_marginal_likelihood=lml,
        convergence=res.convergence(),
        optimize_inducing=checked["optimize_inducing"],
        derivatives=derivs,
    )
