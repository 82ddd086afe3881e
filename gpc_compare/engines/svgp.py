"""The sparse variational GP classifier (SVGP; Hensman, Matthews and Ghahramani 2015).

q(u) on M inducing values, in whitened coordinates u = L_uu v (L_uu = chol(K_uu +
snu^2 I)): q(v) = N(m_v, S). Its marginal at a training input (Titsias 2009) is
q(f_i) = N(m + a_i^T m_v, k_ii - |a_i|^2 + a_i^T S a_i), a_i = L_uu^-1 k_u(x_i) the i-th
column of V (FITC's V, :class:`~gpc_compare.posterior.FITCPrior`), and the bound is

    ELBO = sum_i E_q(f_i)[log p(y_i | f_i)] - KL(N(m_v, S) || N(0, I))  <= log p(y | X),

E_q[log p] by the KL engine's quadrature (:meth:`Likelihood.expected_log_prob`).

q is optimised as the KL engine's is (:func:`._sites.maximize_bound`): at the optimum
S^-1 = I + V diag(W) V^T with W = -2 dE/dvar, so q(v) is the prior times Gaussian
sites on h_i = a_i^T v, and natural-gradient steps on the sites (W, b) (Khan and Lin
2017; with step 1 the fixed point), with the step halved whenever the bound would drop,
converge to it. Each step is one M x M Cholesky and O(n M^2) products. The
hyperparameters and (``optimize_inducing=True``) the inducing inputs are fitted by
L-BFGS-B on the bound (``optimize=True``), q re-optimised (warm-started) at each point:
the bound is stationary in q there, so its gradient is the partial derivative at fixed
(m_v, S) (:meth:`SVGPPosterior.log_marginal_likelihood_gradient`).

With Z = X (every training input an inducing input) the bound is the KL engine's up to
the jitter.

With several classes (the softmax or the robust-max likelihood) the engine fits C latent
SVGPs sharing Z, one q(u_c) each (:mod:`gpc_compare.engines.svgp_multiclass`).
"""

from __future__ import annotations

import warnings
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg

from .._validation import any_value, check_count, check_positive, choice, count, optional
from ..likelihoods.softmax import SOFTMAX_ELBO_SAMPLES
from ..numerics import cho_solve, cholesky, solve_lower, solve_lower_transpose
from ..posterior import Convergence, FITCPrior
from ..posterior.sparse import InducingPosterior
from ._engine import Engine, Problem, engine_options, option
from ._inducing import SparseOptions, bound_gradient, choose_inducing
from ._sites import bound_message, check_site_warm_start, maximize_bound
from .svgp_multiclass import MulticlassSVGPPosterior, infer_multiclass

__all__ = ["ENGINE", "SVGPEngine", "SVGPOptions", "SVGPPosterior", "infer"]


def _check_pairs(value: object, name: str) -> int:
    """An even count >= 4 (antithetic pairs, at least two of them for a variance)."""
    value = check_count(value, name, minimum=4)
    if value % 2:
        raise ValueError(f"{name} must be even (antithetic pairs), got {value}")
    return value


@engine_options
class SVGPOptions(SparseOptions):
    """Options of the SVGP engine (``gc.fit(method="svgp", ...)``): the inducing inputs'
    (:class:`._inducing.SparseOptions`), then the KL engine's optimiser's."""

    batch_size: int | None = option(
        None,
        optional(count(1)),
        "Form K_uf for this many training inputs at a time and never keep the n x M matrix "
        "(FITCPrior): memory O(M^2 + batch_size M) beyond O(n) vectors, for n whose n x M "
        "matrices would not fit, at about twice the time (each pass recomputes the kernel). "
        "The result is the same as without: every pass is over all n cases (deterministic, "
        "not stochastic minibatches).",
    )
    tol: float = option(
        1e-10, check_positive, "Converged when an iteration raises the bound by less than tol ..."
    )
    site_tol: float = option(
        1e-6,
        check_positive,
        "... and the fixed-point update would move no site parameter by more than site_tol "
        "relative to 1 + its size.",
    )
    max_iter: int = option(
        1000,
        count(1),
        "Most iterations (each one M x M Cholesky and O(n M^2) products, more when the step "
        "is halved); not converging by then warns and is recorded.",
    )
    warm_start: Any = option(
        None,
        any_value,
        "A previous SVGP posterior, or its sites (W, b) on h = V^T v to start from "
        "(previous.warm_start; (n, C) each for C classes); used only if their bound is at "
        "least the prior's.",
    )
    integration: str | None = option(
        None,
        optional(choice("quadrature", "mc")),
        "Softmax only: how E_q[log p(y | f)] under the C independent latents is computed: "
        "'quadrature' over the C - 1 latent differences (error below 1e-12; grows as "
        "nodes^(C - 1)) or 'mc' (n_samples antithetic draws per case, fixed by random_seed; "
        "the bound's standard error is post.log_marginal_likelihood_se). None: quadrature "
        "for C <= 3, Monte Carlo beyond. (The robust-max is a one-dimensional quadrature.)",
    )
    n_samples: int = option(
        SOFTMAX_ELBO_SAMPLES,
        _check_pairs,
        "Softmax with integration='mc': Monte Carlo draws per case, an even number >= 4 "
        "(antithetic pairs).",
    )


_SPARSE_BOUND = frozenset({"evidence", "evidence_gradient", "bound", "sparse"})
_MULTICLASS = _SPARSE_BOUND | {"multiclass"}


class SVGPEngine(Engine):
    """The sparse variational GP (Hensman, Matthews and Ghahramani 2015)."""

    name = "svgp"
    label = "SVGP"
    summary = (
        "Gaussian q(u) on M inducing values maximising the ELBO (Hensman et al. 2015; "
        "C classes: one q(u_c) each)"
    )
    Options = SVGPOptions
    likelihoods = {
        "probit": _SPARSE_BOUND,
        "logistic": _SPARSE_BOUND,
        "gaussian": _SPARSE_BOUND,
        "softmax": _MULTICLASS,
        "robustmax": _MULTICLASS,
    }
    dense_matrices = None  # (no n x n matrix: O(n M) memory)
    quick_options = {"inducing": 8}

    def infer(
        self, problem: Problem, options: SVGPOptions
    ) -> SVGPPosterior | MulticlassSVGPPosterior:
        """Maximise the SVGP bound over q(v) at fixed hyperparameters and inducing inputs
        (see :class:`Engine`). With several classes (softmax, robust-max): C latent SVGPs
        sharing Z (:mod:`gpc_compare.engines.svgp_multiclass`)."""
        if problem.likelihood.latent_dim != 1:
            return infer_multiclass(problem, options)
        return _infer(problem, options)


#: The engine (registered by :mod:`gpc_compare.engines`).
ENGINE = SVGPEngine()


def infer(X, y, kernel, likelihood, mean=None, **options) -> SVGPPosterior:
    """The SVGP engine on checked arrays, options as keywords (:class:`SVGPOptions`):
    ``ENGINE.run``."""
    return ENGINE.run(X, y, kernel, likelihood, mean, **options)


class _State(NamedTuple):
    """q(v) at sites (W, b) on h = V^T v, its marginals q(f_i), E_q[log p] and the bound."""

    W: np.ndarray
    b: np.ndarray
    L_A: np.ndarray  # chol(A), A = I + V diag(W) V^T = S^-1
    m_v: np.ndarray  # E[v] = A^-1 V (b - W m)
    mu: np.ndarray  # E[f_i]
    var: np.ndarray  # Var[f_i]
    expected: tuple[np.ndarray, np.ndarray, np.ndarray]  # E_i, dE/dmu, dE/dvar
    elbo: float
    noise: float


def _state(prior: FITCPrior, y, lik, m: float, W: np.ndarray, b: np.ndarray) -> _State:
    """Two passes over V's blocks: A and V (b - W m), then the marginals of q(f_i)."""
    M = prior.Z.shape[0]
    A, c, r = np.eye(M), np.zeros(M), b - W * m
    for i, V in prior.blocks():
        Vw = V * np.sqrt(W[i])
        A += Vw @ Vw.T
        c += V @ r[i]
    L_A = cholesky(A, what="I + V W V^T")
    m_v = cho_solve(L_A, c)
    mu, var = np.empty_like(W), np.empty_like(W)
    expected = tuple(np.empty_like(W) for _ in range(3))  # E_i, dE/dmu, dE/dvar
    for i, V in prior.blocks():
        mu[i] = m + V.T @ m_v
        C = solve_lower(L_A, V)
        # Var f_i = (k_ii - |a_i|^2) + a_i^T A^-1 a_i: FITC's Lambda plus h's variance
        var[i] = prior.Lam[i] + np.einsum("ij,ij->j", C, C)
        # (by block too: the quadrature's nodes x cases arrays stay a block's size)
        for out, part in zip(expected, lik.expected_log_prob(y[i], mu[i], var[i]), strict=True):
            out[i] = part
    L_inv = scipy.linalg.lapack.dtrtri(L_A, lower=1)[0]
    tr_S = float(np.sum(L_inv**2))  # tr A^-1
    log_det_A = 2.0 * float(np.log(np.diag(L_A)).sum())
    # KL(N(m_v, S) || N(0, I)) = 1/2 (tr S + m_v^T m_v - M - log|S|), S = A^-1
    kl = 0.5 * (tr_S + float(m_v @ m_v) - M + log_det_A)
    e_sum = float(expected[0].sum())
    noise = 1e-13 * (1.0 + float(np.abs(expected[0]).sum()) + tr_S + abs(log_det_A))
    return _State(W, b, L_A, m_v, mu, var, expected, e_sum - kl, noise)


class SVGPPosterior(InducingPosterior):
    """The SVGP approximation q(f) = int p(f | u) q(u) du: the Posterior contract.

    ``log_marginal_likelihood`` is the bound at its optimum (a lower bound on the
    evidence); ``q_mean``, ``q_cov`` are E[v] and S in whitened coordinates,
    ``inducing`` holds Z. Predictions: mean* = m + k_*u L_uu^-T m_v,
    var* = k** - k_*u L_uu^-T (I - S) L_uu^-1 k_u*, O(M^2) per point.
    """

    method = "svgp"

    def __init__(
        self,
        X,
        y,
        kernel,
        likelihood,
        mean,
        *,
        prior: FITCPrior,
        state: _State,
        convergence: Convergence,
        optimize_inducing: bool,
    ) -> None:
        super().__init__(
            X, y, kernel, likelihood, mean, prior=prior, optimize_inducing=optimize_inducing
        )
        self._state = state
        self.convergence = convergence

    q_mean = property(lambda self: self._state.m_v.copy(), doc="E[v], shape (M,).")

    @property
    def q_cov(self) -> np.ndarray:
        """S = (I + V diag(W) V^T)^-1, the covariance of the whitened v, shape (M, M)."""
        return cho_solve(self._state.L_A, np.eye(self._state.m_v.size))

    @property
    def warm_start(self) -> tuple[np.ndarray, np.ndarray]:
        """The sites (W, b): pass as ``warm_start`` to start a nearby fit from here."""
        return self._state.W.copy(), self._state.b.copy()

    @property
    def log_marginal_likelihood(self) -> float:
        return self._state.elbo

    @property
    def latent_mean(self) -> np.ndarray:
        return self._state.mu.copy()

    @property
    def latent_var(self) -> np.ndarray:
        return self._state.var.copy()

    @cached_property
    def _predictive(self) -> tuple[np.ndarray, np.ndarray]:
        """beta = L^-T m_v and C = L^-T (I - S) L^-1 (the class note)."""
        L = self.prior.L_uu
        beta = solve_lower_transpose(L, self._state.m_v)  # L^-T m_v
        D = np.eye(beta.size) - self.q_cov
        C = solve_lower_transpose(L, solve_lower_transpose(L, D).T)  # L^-T (I - S) L^-1
        return beta, 0.5 * (C + C.T)

    @cached_property
    def log_marginal_likelihood_gradient(self) -> np.ndarray:
        """The bound's exact gradient: its partial derivative at fixed (m_v, S)
        (:func:`bound_gradient`, with Gamma = m_v g1^T + 2 (S - I) V diag(g2)); d/dm = sum g1.
        """
        st = self._state
        _, g1, g2 = st.expected
        S_I = self.q_cov - np.eye(st.m_v.size)

        def gamma(i: slice, V: np.ndarray) -> np.ndarray:
            return np.outer(st.m_v, g1[i]) + 2.0 * (S_I @ V) * g2[i]

        mean_gradient = None if self.mean is None else float(g1.sum())
        return bound_gradient(self, gamma, g2, mean_gradient)

    def sample_latent(self, draws: int, random_seed: int | np.random.Generator | None = None):
        """Draws of f at the training inputs, shape (draws, n): v from q(v), then each f_i
        given v with its conditional variance k_ii - |a_i|^2. The marginals are q(f_i)
        exactly; the correlations of f given u (K - Q's off-diagonal) are left out, as
        FITC's prior leaves them out, so that a draw costs O(n M) and no n x n matrix."""
        rng = np.random.default_rng(random_seed)
        st = self._state
        z = rng.standard_normal((st.m_v.size, draws))
        v = st.m_v[:, None] + solve_lower_transpose(st.L_A, z)
        f = rng.standard_normal((draws, st.mu.size)) * np.sqrt(self.prior.Lam)
        for i, V in self.prior.blocks():
            f[:, i] += (V.T @ v).T
        return self.prior_mean + f


def _infer(problem: Problem, options: SVGPOptions) -> SVGPPosterior:
    """The bound maximised over the sites (W, b) by :func:`._sites.maximize_bound`."""
    X, y, likelihood = problem.X, problem.y, problem.likelihood
    Z = choose_inducing(X, options.inducing, options.random_seed)
    prior = FITCPrior(problem.kernel, X, Z, options.jitter, batch_size=options.batch_size)
    n = problem.n
    m = 0.0 if problem.mean is None else float(problem.mean)

    def make_state(W: np.ndarray, b: np.ndarray) -> _State:
        return _state(prior, y, likelihood, m, W, b)

    state = make_state(np.zeros(n), np.zeros(n))  # q(v) = N(0, I), the prior
    if options.warm_start is not None:
        warm = make_state(*check_site_warm_start(options.warm_start, n))
        if warm.elbo >= state.elbo:
            state = warm
    tol, site_tol = options.tol, options.site_tol
    run = maximize_bound(make_state, state, tol=tol, site_tol=site_tol, max_iter=options.max_iter)
    message = bound_message(run, tol, site_tol)
    if not run.converged:
        warnings.warn(f"SVGP {message}", RuntimeWarning, stacklevel=2)
    return SVGPPosterior(
        X,
        y,
        problem.kernel,
        likelihood,
        problem.mean,
        prior=prior,
        state=run.state,
        convergence=Convergence(run.converged, run.iterations, float(run.change), message),
        optimize_inducing=options.optimize_inducing,
    )
