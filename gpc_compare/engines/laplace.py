"""The Laplace approximation for binary GP classification.

Mode finding by Newton's method in the numerically stable form of R&W Alg. 3.1
(Bishop 6.83: f_new = C_N (I + W C_N)^-1 (t - sigma + W f)), with a step-halving
safeguard so the objective never gets worse (:mod:`._newton`, shared with the softmax
form); the approximate log marginal likelihood
(R&W eq. 3.32, Bishop 6.90) and its exact gradient including the implicit dependence of
the mode on the hyperparameters (R&W Alg. 5.1, Bishop 6.91-6.94).

Naming (R&W): ``K`` prior covariance, ``m`` constant prior mean, ``f`` latent values,
``alpha`` with f = m + K alpha, ``W = -grad grad log p(y | f)``, ``sW = W^1/2``,
``L = chol(B)``, ``B = I + sW K sW``, ``d1, d2, d3`` derivatives of log p(y | f).

The sign of the third-derivative term
-------------------------------------
At the mode, d log q / d f^_i = -1/2 d log|B| / d f^_i = +1/2 [(K^-1 + W)^-1]_ii d3_i,
because dW_ii / df_i = -d3_i. R&W print eq. 5.23 and Alg. 5.1 line 7 with a minus sign
there; the GPML toolbox's ``infLaplace`` and the finite-difference tests here agree on
the plus sign used below.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from .._validation import any_value, check_kernel_matrix, check_positive, count
from ..likelihoods import Softmax
from ..numerics import chol_B, solve_I_plus_WK
from ..posterior import GaussianPosterior
from . import _newton
from ._engine import Engine, EngineOptions, Problem, engine_options, option
from .laplace_softmax import infer_softmax

__all__ = ["ENGINE", "LaplaceEngine", "LaplaceOptions", "LaplacePosterior", "infer"]


@engine_options
class LaplaceOptions(EngineOptions):
    """Options of the Laplace engine (``gc.fit(method="laplace", ...)``)."""

    tol: float = option(
        1e-10,
        check_positive,
        "Newton stops when a step lowers Psi = -log p(y|f) - log p(f) by less than this and "
        "the Newton step moves f by less than sqrt(tol); Newton's quadratic convergence then "
        "leaves the evidence accurate to about tol.",
    )
    max_iter: int = option(
        100, count(1), "Most Newton iterations; not converging by then warns and is recorded."
    )
    warm_start: Any = option(
        None,
        any_value,
        "A previous Laplace posterior, or alpha to start from (shape (n,); softmax: (n, C)), "
        "or k candidates (k, n) (e.g. previous.warm_start_at(theta)): the one with the lowest "
        "Psi is used if it is no worse than alpha = 0.",
    )


_BINARY = frozenset({"evidence", "evidence_gradient"})


class LaplaceEngine(Engine):
    """The Laplace approximation: Newton's mode and the Gaussian at it (R&W section 3.4,
    Alg. 3.1 and 5.1; section 3.5, Alg. 3.3 for the softmax)."""

    name = "laplace"
    label = "Laplace"
    summary = "Gaussian at the posterior mode (R&W 3.4; softmax: 3.5)"
    #: measured peaks (tests/engines/test_memory.py; n = 200 to 600, the smaller n higher by
    #: their O(n) terms): a fit 3.1-3.5 (K's evaluation; the Newton loop's K, L and B^-1
    #: products after it), an optimisation 9.1-9.5; the softmax 5.4 + 1.0 C and
    #: 7.3 + 7.5 C (C = 2, 3, 5)
    dense_matrices = (4.0, 10.0)
    dense_matrices_softmax = ((5.5, 1.1), (8.0, 8.0))
    Options = LaplaceOptions
    likelihoods = {
        "probit": _BINARY,
        "logistic": _BINARY,
        "gaussian": _BINARY,
        "softmax": _BINARY | {"multiclass"},
    }

    def infer(self, problem: Problem, options: LaplaceOptions) -> GaussianPosterior:
        """The Laplace approximation at fixed hyperparameters (see :class:`Engine`).

        With the softmax likelihood this is the multi-class approximation of R&W Alg. 3.3
        (:mod:`gpc_compare.engines.laplace_softmax`): ``y`` holds class indices 0..C-1 and
        ``mean`` must be None.
        """
        X, y, kernel, lik, mean = (
            problem.X,
            problem.y,
            problem.kernel,
            problem.likelihood,
            problem.mean,
        )
        if isinstance(lik, Softmax):
            return infer_softmax(
                X,
                y,
                kernel,
                lik,
                mean,
                tol=options.tol,
                max_iter=options.max_iter,
                warm_start=options.warm_start,
            )
        return _infer_binary(problem, options)


#: The engine (registered by :mod:`gpc_compare.engines`).
ENGINE = LaplaceEngine()


def infer(X, y, kernel, likelihood, mean=None, **options) -> GaussianPosterior:
    """The Laplace engine on checked arrays, options as keywords (:class:`LaplaceOptions`):
    ``ENGINE.run``."""
    return ENGINE.run(X, y, kernel, likelihood, mean, **options)


class LaplacePosterior(GaussianPosterior):
    """The Laplace approximation N(f | f^, (K^-1 + W)^-1): the Posterior contract.

    Extra attributes: ``f_hat`` (the mode), ``W`` (the negative Hessian of log p(y | f)
    at the mode), ``warm_start`` (alpha, to start another fit from), ``convergence``.
    """

    method = "laplace"

    def __init__(self, *args, W: np.ndarray, derivatives: tuple, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.W = W
        self._derivatives = derivatives

    @property
    def f_hat(self) -> np.ndarray:
        """The posterior mode (Bishop's a_N^*)."""
        return self.latent_mean

    @property
    def warm_start(self) -> np.ndarray:
        """alpha at the mode: pass as ``warm_start`` to start a nearby fit from here."""
        return self.alpha.copy()

    @cached_property
    def log_marginal_likelihood_gradient(self) -> np.ndarray:
        """Exact gradient of the Laplace evidence (R&W Alg. 5.1, Bishop 6.91-6.94)."""
        _, d1, _, d3 = self._derivatives
        # dlog q / d f^ = 1/2 diag((K^-1 + W)^-1) d3 (see the module note on its sign)
        s2 = 0.5 * self._diag_sigma * d3  # (first: its triangular inverse also gives R)
        K, R, alpha = self.K, self._R, self.alpha
        # the implicit term s2^T d f^ with d f^ = (I + K W)^-1 b = b - K R b (R&W Alg. 5.1
        # line 12), b = dK grad log p (eq. 5.24): z^T b with z = s2 - R K s2 (K, R symmetric)
        z = s2 - R @ (K @ s2)
        grads, b = self._kernel_gradient(z, d1)  # explicit (eq. 5.22) plus implicit
        if self.mean is not None:
            # explicit: d/dm of -1/2 (f^ - m)^T K^-1 (f^ - m) = 1^T alpha; implicit, b = 1
            grads.append(float(alpha.sum()) + float(z.sum()))
            b = np.column_stack([b, np.ones(K.shape[0])])
        self._b = b  # the b_j of eq. 5.24, for warm_start_at
        return np.asarray(grads, dtype=float)

    def warm_start_at(self, theta: np.ndarray) -> np.ndarray:
        """Starting points for a fit at nearby hyperparameters ``theta`` (in the order of
        ``hyperparameter_names``), shape (2, n): alpha here, and alpha moved to first order.

        At the mode alpha = grad log p(y | f^) (R&W eq. 3.17), so d alpha = -W d f^, with
        d f^ / d theta_j = (I + K W)^-1 b_j = b_j - K R b_j (R&W eq. 5.24, Alg. 5.1 line 12),
        whose b_j the gradient has computed (before it is, only alpha here is given).
        """
        if "log_marginal_likelihood_gradient" not in self.__dict__:
            return self.alpha[None, :].copy()
        step = np.asarray(theta, dtype=float) - self.hyperparameters
        df = self._b @ step
        df -= self.K @ (self._R @ df)
        return np.stack([self.alpha, self.alpha - self.W * df])


def _objective(alpha: np.ndarray, f: np.ndarray, m: float, lp: np.ndarray) -> float:
    """Psi to minimise: 1/2 alpha^T (f - m) - sum log p(y | f) (R&W eq. 3.12, negated)."""
    return 0.5 * float(alpha @ (f - m)) - float(lp.sum())


def _infer_binary(problem: Problem, options: LaplaceOptions) -> LaplacePosterior:
    """Binary (and Gaussian) Laplace: R&W Alg. 3.1, with chord steps (:mod:`._newton`)."""
    X, y, lik, mean = problem.X, problem.y, problem.likelihood, problem.mean
    tol, max_iter, warm_start = options.tol, options.max_iter, options.warm_start
    n = X.shape[0]
    m = 0.0 if mean is None else float(mean)
    K = check_kernel_matrix(problem.kernel, X)

    def state(alpha: np.ndarray):
        f = K @ alpha + m
        derivs = lik.derivatives(y, f)
        return _objective(alpha, f, m, derivs[0]), (f, derivs)

    factor: list[np.ndarray] = []  # (W, sW, L) of the last factorisation, for chord steps

    def direction(alpha: np.ndarray, at: tuple) -> np.ndarray:
        W = -at[1][2]
        sW = np.sqrt(W)
        factor[:] = W, sW, chol_B(K, sW)
        return chord(alpha, at)

    def chord(alpha: np.ndarray, at: tuple) -> np.ndarray:
        # R&W Alg. 3.1 lines 6-8 with the last factorised W (the Newton step when W is the
        # current one): alpha_new = (I + W K)^-1 b, b = W (f - m) + grad log p(y | f)
        f, (_, d1, _, _) = at
        W, sW, L = factor
        return solve_I_plus_WK(K, sW, L, W * (f - m) + d1)

    alpha, psi, at = _newton.start(state, (n,), warm_start, "alpha", candidates=True)
    res = _newton.newton(
        state,
        direction,
        alpha,
        psi,
        at,
        K,
        tol=tol,
        max_iter=max_iter,
        stacklevel=2,
        chord=chord,
        likelihood_gradient=lambda _, at: at[1][1],  # alpha = grad log p at the mode (eq. 3.17)
    )
    alpha, psi, (_, derivs) = res.x, res.psi, res.extra

    # factorise once more at the final mode: the evidence needs B at f^ exactly
    lp, d1, d2, d3 = derivs
    W = -d2
    sW = np.sqrt(W)
    L = chol_B(K, sW)
    # R&W Alg. 3.1 line 10 / eq. 3.32 / Bishop 6.90:
    # log q(y|X) = -1/2 alpha^T (f^ - m) + sum log p(y|f^) - sum log diag L
    lml = -psi - float(np.log(np.diag(L)).sum())
    return LaplacePosterior(
        X,
        y,
        problem.kernel,
        lik,
        mean,
        K=K,
        alpha=alpha,
        sW=sW,
        L=L,
        log_marginal_likelihood=lml,
        convergence=res.convergence(),
        W=W,
        derivatives=derivs,
    )
