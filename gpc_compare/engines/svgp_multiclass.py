"""The multi-class SVGP: C latent SVGPs sharing the inducing inputs (Hensman, Matthews and
Ghahramani 2015; GPflow's ``SVGP`` with ``num_latent_gps = C``).

The model has C latent functions f_c ~ GP(0, k), independent and sharing the kernel
(Williams and Barber 1998; R&W section 3.5), and the softmax or the robust-max likelihood.
q(u_c) on the M shared inducing inputs Z is Gaussian and independent across the classes, in
whitened coordinates as the binary engine's (:mod:`.svgp`): u_c = L_uu v_c, q(v_c) =
N(m_c, S_c) (GPflow's ``q_mu`` (M, C) and ``q_sqrt`` (C, M, M) with ``whiten=True``). So
q(f_i) = N(mu_i, diag(var_i)) with mu_ic = a_i^T m_c and
var_ic = k_ii - |a_i|^2 + a_i^T S_c a_i (a_i the i-th column of V = L_uu^-1 K_uf), and

    ELBO = sum_i E_q(f_i)[log p(y_i | f_i)] - sum_c KL(N(m_c, S_c) || N(0, I)),

a lower bound on log p(y | X). E_q[log p] comes from the likelihood
(``expected_log_prob_diag``): for the softmax a quadrature over the C - 1 latent
differences for C <= 3 (error below 1e-12), else an antithetic Monte Carlo estimate with
``n_samples`` draws per input, fixed by ``random_seed``, whose standard error is
``post.log_marginal_likelihood_se`` (a quadrature in C - 1 dimensions grows as
nodes^(C - 1); the Monte Carlo error does not grow with C); for the robust-max a
one-dimensional quadrature whatever C.

At the optimum S_c^-1 = I + V diag(W_c) V^T with W_ic = -2 dE_i / d var_ic, so q(v_c) is
the prior times Gaussian sites (W_ic, b_ic) on h_ic = a_i^T v_c, and the binary engine's
natural-gradient site iteration (:func:`._sites.maximize_bound`) runs on the Cn sites at
once. Each step is C Choleskys of M x M matrices and O(C n M^2) products; with
``batch_size`` K_uf is formed a block at a time as for the binary engine. The robust-max's
E is not concave in the latent means (nor is a Monte Carlo estimate exactly), so its W
may be negative: a step whose S_c is not positive definite is refused and halved.
The hyperparameter gradient is the binary engine's (:func:`._inducing.bound_gradient`)
with Gamma summed over the classes: the bound is stationary in q at its optimum.

The common mode. Both likelihoods see f_i only up to a constant t added to all C latents
(softmax_y(f + t 1) = softmax_y(f), R&W eq. 3.34's numerator and denominator both gaining
e^t; the robust-max through the argmax), and under q(f_i) = N(mu_i, diag(var_i)) the vector
f_i + t 1 is Gaussian with mean mu_i + t 1 and the same variances; so E_q[log p(y_i | f_i)]
and its derivatives in mu_i and var_i are the same at mu_i + t 1 as at mu_i. Moving every
m_c by the same s moves every mu_ic by a_i^T s, the same for all c, and keeps S_c; in the
KL (R&W eq. A.23, between N(m_c, S_c) and N(0, I)) only sum_c |m_c + s|^2 / 2 changes,
which is least at s = -mean_c m_c, where it is lower by C |s|^2 / 2 (the cross term
s^T sum_c m_c = -C |s|^2). That move therefore raises the bound by exactly C |s|^2 / 2
with no new evaluation of E, and the bound's optimum has sum_c m_c = 0 (stationarity in
s). :func:`._sites.maximize_bound` makes the move after every accepted step
(:func:`_common_mode_step`): the diagonal sites give the direction 1 their curvature W_ic
(E[p_c (1 - p_c)] for the softmax) where E_q has none (its Hessian in mu_i vanishes along
1) and only the prior's, of order 1 / sigma_f^2, pins the latents, so without the move the
fixed point creeps along that direction by a factor near one an iteration under a large
signal variance (hundreds of iterations at sigma_f^2 ~ 300) and, for the robust-max (whose
bound does not change when f is scaled: the argmax does not), at any sigma_f.
"""

from __future__ import annotations

import warnings
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg
from scipy.linalg import blas

from ..numerics import cho_solve, cholesky, solve_lower, solve_lower_transpose
from ..posterior import Convergence, FITCPrior, MulticlassPosterior
from ..posterior.sparse import InducingPosterior
from ._engine import Problem
from ._inducing import SparseOptions, bound_gradient, choose_inducing
from ._sites import bound_message, maximize_bound
from .laplace_softmax import check_codes

__all__ = ["MulticlassSVGPPosterior", "infer_multiclass"]


class _State(NamedTuple):
    """q(v_c) at sites (W, b) (n, C) on h_ic = a_i^T v_c: its factors, the marginals, E_q
    and the bound. ``W``, ``b``, ``mu`` and the derivatives are flat (n C,), row-major, as
    :func:`maximize_bound` takes them."""

    W: np.ndarray
    b: np.ndarray
    L_A: np.ndarray | None  # (C, M, M): chol(A_c), A_c = I + V diag(W_c) V^T = S_c^-1
    m_v: np.ndarray | None  # (M, C): E[v_c]
    mu: np.ndarray | None
    var: np.ndarray | None  # (n, C)
    expected: tuple | None  # E_i (n,), dE/dmu, dE/dvar (flat)
    elbo: float
    noise: float
    se: float | None  # the Monte Carlo standard error of the bound (None: quadrature)


def _refused(W: np.ndarray, b: np.ndarray) -> _State:
    """Sites whose S_c is not positive definite: no q, a bound of -inf."""
    return _State(W.ravel(), b.ravel(), None, None, None, None, None, -np.inf, 0.0, None)


def _state(prior: FITCPrior, expect, W: np.ndarray, b: np.ndarray) -> _State:
    """Two passes over V's blocks: A_c and V b_c, then the marginals of q(f_i) and E_q."""
    n, C = W.shape
    M = prior.Z.shape[0]
    A = np.repeat(np.eye(M)[None], C, axis=0)  # (lower triangles: all Cholesky reads)
    Vb = np.zeros((M, C))
    for i, V in prior.blocks():
        for c in range(C):
            w = W[i, c]
            # V diag(w) V^T as rank-k updates (BLAS dsyrk, half a product's work), the
            # negative sites' apart (robust-max, Monte Carlo)
            A[c] += blas.dsyrk(1.0, (V * np.sqrt(np.maximum(w, 0.0))).T, trans=1, lower=1)
            if np.any(w < 0.0):
                A[c] -= blas.dsyrk(1.0, (V * np.sqrt(np.maximum(-w, 0.0))).T, trans=1, lower=1)
        Vb += V @ b[i]
    try:
        L_A = np.stack([cholesky(A[c], what="I + V W_c V^T") for c in range(C)])
    except np.linalg.LinAlgError:
        return _refused(W, b)
    m_v = np.column_stack([cho_solve(L_A[c], Vb[:, c]) for c in range(C)])
    mu, var = np.empty((n, C)), np.empty((n, C))
    for i, V in prior.blocks():
        mu[i] = V.T @ m_v
        for c in range(C):
            Cc = solve_lower(L_A[c], V)
            # Var f_ic = (k_ii - |a_i|^2) + a_i^T A_c^-1 a_i
            var[i, c] = prior.Lam[i] + np.einsum("ij,ij->j", Cc, Cc)
    ex = expect(mu, var)
    tr_S = log_det_A = 0.0
    for c in range(C):
        L_inv = scipy.linalg.lapack.dtrtri(L_A[c], lower=1)[0]
        tr_S += float(np.sum(L_inv**2))
        log_det_A += 2.0 * float(np.log(np.diag(L_A[c])).sum())
    # sum_c KL(N(m_c, S_c) || N(0, I)) = 1/2 sum_c (tr S_c + |m_c|^2 - M + log|A_c|)
    kl = 0.5 * (tr_S + float(np.sum(m_v**2)) - C * M + log_det_A)
    e_sum = float(ex.value.sum())
    noise = 1e-13 * (1.0 + float(np.abs(ex.value).sum()) + tr_S + abs(log_det_A))
    se = None if ex.variance is None else float(np.sqrt(ex.variance.sum()))
    expected = (ex.value, ex.d_mean.ravel(), ex.d_var.ravel())
    return _State(W.ravel(), b.ravel(), L_A, m_v, mu.ravel(), var, expected, e_sum - kl, noise, se)


def _common_mode_step(prior: FITCPrior, state: _State) -> _State:
    """The bound's maximum along the common mode (module note): every m_c moved by the
    same s = -mean_c m_c, the bound raised by C |s|^2 / 2, E_q and its derivatives kept.

    The sites giving the move, without a solve: A_c m_c = V b_c with
    A_c = I + V diag(W_c) V^T gives m_c = V r_c, r_c = b_c - W_c mu_c, so r_c - r_bar
    (r_bar = mean_c r_c, V r_bar = -s) gives m_c + s, and b_c' = r_c - r_bar + W_c mu_c'
    = b_c + W_c (V^T s) - r_bar with mu_c' = mu_c + V^T s.
    """
    if state.m_v is None:
        return state
    n, C = state.var.shape
    s = -state.m_v.mean(axis=1)
    W, b = state.W.reshape(n, C), state.b.reshape(n, C)
    mu = state.mu.reshape(n, C)
    r_bar = (b - W * mu).mean(axis=1)  # m_c = V (b_c - W_c mu_c): mean_c m_c = V r_bar
    shift = np.empty(n)
    for i, V in prior.blocks():
        shift[i] = V.T @ s
    m_v = state.m_v + s[:, None]
    # sum_c |m_c + s|^2 = sum_c |m_c|^2 - C |s|^2: the KL drops by C |s|^2 / 2
    elbo = state.elbo + 0.5 * C * float(s @ s)
    return state._replace(
        b=(b + W * shift[:, None] - r_bar[:, None]).ravel(),
        m_v=m_v,
        mu=(mu + shift[:, None]).ravel(),
        elbo=elbo,
    )


class MulticlassSVGPPosterior(InducingPosterior, MulticlassPosterior):
    """The multi-class SVGP approximation: the multi-class Posterior contract.

    ``log_marginal_likelihood`` is the bound at its optimum (for the softmax with Monte
    Carlo, its estimate, with ``log_marginal_likelihood_se``); ``q_mean`` (M, C) and
    ``q_cov`` (C, M, M) are E[v_c] and S_c in whitened coordinates, ``inducing`` holds Z.
    Predictions: mean*_c = k_*u L_uu^-T m_c, var*_c = k** - k_*u L_uu^-T (I - S_c)
    L_uu^-1 k_u*, the classes independent (a diagonal C x C covariance), O(C M^2) per point.
    """

    method = "svgp"

    def __init__(
        self,
        X,
        y,
        kernel,
        likelihood,
        *,
        prior: FITCPrior,
        state: _State,
        convergence: Convergence,
        optimize_inducing: bool,
    ) -> None:
        C = state.var.shape[1]
        super().__init__(
            X,
            y,
            kernel,
            likelihood,
            None,
            prior=prior,
            optimize_inducing=optimize_inducing,
            n_classes=C,
        )
        self._state = state
        self.convergence = convergence

    @property
    def log_marginal_likelihood(self) -> float:
        return self._state.elbo

    @property
    def log_marginal_likelihood_se(self) -> float | None:
        """The standard error of the bound's Monte Carlo estimate (softmax, C >= 4 by
        default), or None where E_q[log p] is a quadrature."""
        return self._state.se

    def record(self) -> dict[str, Any]:
        out = super().record()
        out["log_evidence_se"] = self._state.se
        return out

    q_mean = property(lambda self: self._state.m_v.copy(), doc="E[v_c], shape (M, C).")

    @property
    def q_cov(self) -> np.ndarray:
        """S_c = (I + V diag(W_c) V^T)^-1, shape (C, M, M)."""
        M = self._state.m_v.shape[0]
        return np.stack([cho_solve(L, np.eye(M)) for L in self._state.L_A])

    @property
    def warm_start(self) -> tuple[np.ndarray, np.ndarray]:
        """The sites (W, b), each (n, C): pass as ``warm_start`` to start a nearby fit."""
        shape = self._state.var.shape
        return self._state.W.reshape(shape).copy(), self._state.b.reshape(shape).copy()

    @property
    def latent_mean(self) -> np.ndarray:
        return self._state.mu.reshape(self._state.var.shape).copy()

    @property
    def latent_var(self) -> np.ndarray:
        return self._state.var.copy()

    @cached_property
    def _predictive(self) -> tuple[np.ndarray, np.ndarray]:
        """beta = L^-T m_v (M, C) and C_c = L^-T (I - S_c) L^-1 (C, M, M)."""
        L = self.prior.L_uu
        beta = solve_lower_transpose(L, self._state.m_v)
        D = np.eye(L.shape[0]) - self.q_cov
        Cs = np.stack([solve_lower_transpose(L, solve_lower_transpose(L, Dc).T) for Dc in D])
        return beta, 0.5 * (Cs + np.swapaxes(Cs, 1, 2))

    def _predict_latent(self, Xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean (m, C) and covariance (m, C, C), diagonal: the classes are independent."""
        beta, Cs = self._predictive
        Ksu = self.kernel(Xs, self.inducing)
        quad = [np.einsum("mj,mj->m", Ksu @ Cc, Ksu) for Cc in Cs]  # k_*u C_c k_u*
        var = self.kernel.diag(Xs)[:, None] - np.column_stack(quad)
        cov = np.zeros((Xs.shape[0], self.n_classes, self.n_classes))
        idx = np.arange(self.n_classes)
        cov[:, idx, idx] = np.maximum(var, 0.0)
        return Ksu @ beta, cov

    def _integration_moments(
        self, Xs: np.ndarray, integration: str | None
    ) -> tuple[np.ndarray, np.ndarray]:
        mean, cov = self._predict_latent(Xs)
        return mean[None], cov[None]

    @cached_property
    def log_marginal_likelihood_gradient(self) -> np.ndarray:
        """The bound's exact gradient: its partial derivative at fixed q
        (:func:`._inducing.bound_gradient`), Gamma = sum_c [m_c g1_c^T
        + 2 (S_c - I) V diag(g2_c)] = m_v g1^T + 2 sum_c (S_c - I) V diag(g2_c)."""
        st = self._state
        shape = st.var.shape
        g1, g2 = st.expected[1].reshape(shape), st.expected[2].reshape(shape)
        S_I = self.q_cov - np.eye(st.m_v.shape[0])

        def gamma(i: slice, V: np.ndarray) -> np.ndarray:
            out = st.m_v @ g1[i].T
            for c in range(shape[1]):
                out += 2.0 * (S_I[c] @ V) * g2[i, c]
            return out

        return bound_gradient(self, gamma, g2.sum(axis=1), None)

    def sample_latent(self, draws: int, random_seed: int | np.random.Generator | None = None):
        """Draws of f at the training inputs, shape (draws, n, C): each v_c from q(v_c), then
        f_ic given v_c with its conditional variance k_ii - |a_i|^2 (the binary engine's
        draws, class by class: the marginals are q(f_i) exactly)."""
        rng = np.random.default_rng(random_seed)
        st = self._state
        n, C = st.var.shape
        M = st.m_v.shape[0]
        z = rng.standard_normal((C, M, draws))
        v = np.stack(
            [st.m_v[:, c, None] + solve_lower_transpose(st.L_A[c], z[c]) for c in range(C)]
        )
        f = rng.standard_normal((draws, n, C)) * np.sqrt(self.prior.Lam)[None, :, None]
        for i, V in self.prior.blocks():
            f[:, i, :] += np.einsum("mi,cmd->dic", V, v)
        return f

    to_inference_data = MulticlassPosterior.to_inference_data


def _check_warm_start(warm_start: Any, n: int, C: int) -> tuple[np.ndarray, np.ndarray]:
    """Sites (W, b) of shape (n, C), finite, as ``posterior.warm_start`` gives (copies)."""
    try:
        W, b = (np.array(v, dtype=float) for v in warm_start)
    except (TypeError, ValueError):
        W = b = np.zeros(0)
    if W.shape != (n, C) or b.shape != (n, C) or not np.all(np.isfinite(W) & np.isfinite(b)):
        raise ValueError(
            f"warm_start must be a pair (W, b) of finite arrays of shape ({n}, {C}), as the "
            "multi-class posterior.warm_start gives"
        )
    return W, b


def _mc_seed(random_seed: Any) -> int:
    """The integer that fixes the Monte Carlo draws of E_q[log p] (None: 0)."""
    return int(np.random.default_rng(0 if random_seed is None else random_seed).integers(2**32))


def infer_multiclass(problem: Problem, options: SparseOptions) -> MulticlassSVGPPosterior:
    """The multi-class bound maximised over the Cn sites by :func:`._sites.maximize_bound`
    (``options``: the SVGP engine's, :class:`~gpc_compare.engines.svgp.SVGPOptions`)."""
    if problem.mean is not None:
        raise ValueError(
            f"the {problem.likelihood.name} likelihood takes no prior mean (mean=None): a "
            "constant shared by the C latent functions cancels in it"
        )
    X, lik = problem.X, problem.likelihood
    y, C = check_codes(problem.y, lik)
    Z = choose_inducing(X, options.inducing, options.random_seed)
    prior = FITCPrior(problem.kernel, X, Z, options.jitter, batch_size=options.batch_size)
    n = problem.n
    how = {"integration": options.integration, "n_samples": options.n_samples}
    how["random_seed"] = _mc_seed(options.random_seed)

    def expect(mu: np.ndarray, var: np.ndarray):
        return lik.expected_log_prob_diag(y, mu, var, **how)

    def make_state(W: np.ndarray, b: np.ndarray) -> _State:
        return _state(prior, expect, W.reshape(n, C), b.reshape(n, C))

    state = make_state(np.zeros((n, C)), np.zeros((n, C)))  # q(v_c) = N(0, I), the prior
    if options.warm_start is not None:
        warm = make_state(*_check_warm_start(options.warm_start, n, C))
        if warm.elbo >= state.elbo:
            state = warm
    tol, site_tol = options.tol, options.site_tol
    nonnegative = lik.log_concave and state.se is None  # (quadrature of a concave log p)
    run = maximize_bound(
        make_state,
        state,
        tol=tol,
        site_tol=site_tol,
        max_iter=options.max_iter,
        nonnegative=nonnegative,
        polish=lambda st: _common_mode_step(prior, st),
    )
    message = bound_message(run, tol, site_tol)
    if not run.converged:
        warnings.warn(f"SVGP {message}", RuntimeWarning, stacklevel=3)
    return MulticlassSVGPPosterior(
        X,
        y,
        problem.kernel,
        lik,
        prior=prior,
        state=run.state,
        convergence=Convergence(run.converged, run.iterations, float(run.change), message),
        optimize_inducing=options.optimize_inducing,
    )
