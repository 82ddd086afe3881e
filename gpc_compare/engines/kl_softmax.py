"""The KL (variational Gaussian) approximation for C classes with the softmax likelihood.

The model is R&W's (section 3.5; Williams and Barber 1998): C latent GPs sharing the
kernel K, f_i = (f_i^1..f_i^C), p(y_i | f_i) = softmax_{y_i}(f_i). The Gaussian q(f) over
the C n latent values maximises

    ELBO(q) = sum_i E_q[log softmax_{y_i}(f_i)] - KL(q || N(0, I_C (x) K)) <= log p(y | X)

(Opper and Archambeau 2009; Challis and Barber 2013), and at its optimum the precision is
the prior's plus one C x C block per case, Lam_i = -2 dE_i / dSigma_i (Opper and
Archambeau 2009, eq. 12, the binary diagonal W made a block).

Two facts shape the engine:

- The softmax does not change when the same number is added to every f_i^c, so it sees
  f only through g_i = Q^T f_i, Q (C x (C - 1)) an orthonormal basis of the contrasts
  (Helmert's, orthogonal to (1..1)). Because the C latent GPs share K, the rotated prior
  is again I (x) K: the d = C - 1 values g and the mean h_i = (1..1) f_i / sqrt(C) are
  independent a priori, and the likelihood does not touch h. KL(q(g, h) || p(g) p(h)) >=
  KL(q(g) || p(g)) with equality iff q(h | g) = p(h), so at the optimum h keeps its prior
  and the problem is d latent GPs with a d x d site block per case: one Cholesky of size
  (C - 1) n, not C n, per iteration (for three classes 8/27 of the work). Over f,
  the posterior is Cov(f_i, f_j) = Q Sigma_ij Q^T + K_ij (1 1^T) / C, the mean Q mu_i.
- The bound is stationary in q at its optimum, so its gradient in the hyperparameters is
  the partial derivative at fixed q: 1/2 sum_a alpha_a^T dK alpha_a - 1/2 tr(T dK), with
  T the sum of the diagonal blocks of R B^-1 R (:mod:`._block_sites`) (R&W eq. 5.9's
  form; the Laplace approximation's implicit term does not arise).

The optimiser is the binary engine's (:func:`._sites.maximize_bound`): natural-gradient
steps on the sites, Lam <- (1 - rho) Lam + rho Lam_fix, b <- (1 - rho) b + rho b_fix,
Lam_fix = -2 dE/dSigma, b_fix = dE/dmu + Lam_fix mu (Khan and Lin 2017; the fixed point
is Opper and Archambeau's optimum), extrapolated by Anderson's method, the step halved
whenever the bound would drop. Chosen over a direct optimisation of (mu, the blocks)
because the sites are the optimum's own parameters: (C - 1)^2 n numbers rather than the
(C - 1) n ((C - 1) n + 1) / 2 of a free covariance, each step is the exact natural
gradient of the bound (it never needs the Hessian of the bound in the sites), and the
binary engine's safeguards (monotone bound, rounding-limited convergence) carry over.

E_q[log softmax] has no closed form (:mod:`gpc_compare.likelihoods._softmax_expectation`):
``integration="quadrature"``, a trapezoid rule in the C - 1 whitened coordinates (error
about 1e-10; its cost grows as the posterior's spread to the power C - 1, so it is the
default for two classes only), or ``"mc"`` (the default for three classes and more):
Titsias' (2016) one-vs-each bound sum_{c != y} log sigma(f_y - f_c), whose expectation
is C - 1 one-dimensional quadratures, plus the Monte Carlo average of the gap between it
and log softmax on ``n_samples`` antithetic draws per case fixed by ``mc_seed`` (a
control variate: the gap vanishes where one class competes with y, so the standard
error falls about twenty-fold on Iris). The bound is then the estimate's, one smooth
function of q and of the hyperparameters, maximised and differentiated exactly (the
gap's dE/dSigma is the estimate's own derivative through the square root of Sigma);
``log_marginal_likelihood_se`` is its standard error. An optimum found on fixed draws is
optimistic (a sample average approximation's: Mak, Morton and Wood 1999): q adapts to the
draws, most where the prior hardly constrains it (large sigma_f), so the engine
re-estimates the bound at its q on independent draws (``held_out_bound``, an unbiased
estimate of that q's bound, itself below the evidence) and warns where the first exceeds
the second by more than three combined standard errors (each is an estimate with its own
spread; where q has adapted to its draws its own standard error grows too, so the check
is conservative there); where q has fitted its draws so far that the estimated expected
log likelihood is positive (which no likelihood allows: it is the sum of expectations of
log probabilities), the engine says the estimate has broken down, whatever the standard
errors. The first check sets ``bound_optimistic`` (a hyperparameter search ranks the fit by
its re-estimate), the second ``bound_unreliable`` (the search ranks it below every other).

Where a case's true curvature is nearly zero in one direction (a class far from the label
and from the competitor), the estimated -2 dE/dSigma can have a small negative eigenvalue;
the site keeps it (Woodbury's identity in :mod:`._block_sites`), so the fixed point stays
the estimated bound's exact optimum and the gradient exact (projecting it away made the
natural-gradient step point downhill and the iteration stall).

Naming: ``K`` the n x n kernel matrix; ``Q`` the contrasts; arrays over the cases and the
d = C - 1 latent values (n, d): ``mu``, ``alpha`` (K alpha = mu), ``b``; blocks (n, d, d):
``Lam`` (site precisions), ``S`` (Sigma's blocks at the cases).
"""

from __future__ import annotations

import warnings
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from .._validation import available_memory, check_kernel_matrix
from ..likelihoods import Softmax
from ..likelihoods._softmax_expectation import (
    antithetic_normal,
    expected_log_softmax_mc,
    expected_log_softmax_quadrature,
)
from ..numerics import JITTER, cholesky
from ..posterior import Convergence, MulticlassPosterior
from ._block_sites import (
    BlockSites,
    block_sites,
    covariance,
    inverse_blocks_trace,
    predict_blocks,
)
from ._engine import Problem
from ._sites import bound_message, maximize_bound
from .laplace_softmax import check_codes

__all__ = ["SoftmaxKLPosterior", "contrasts", "infer_softmax"]


def contrasts(C: int) -> np.ndarray:
    """Helmert's orthonormal contrasts: Q (C, C - 1), Q^T Q = I, Q^T (1..1) = 0; column k
    is (1, .., 1, -k, 0, ..) / sqrt(k (k + 1)) with k ones."""
    Q = np.zeros((C, C - 1))
    for k in range(1, C):
        Q[:k, k - 1] = 1.0
        Q[k, k - 1] = -k
        Q[:, k - 1] /= np.sqrt(k * (k + 1.0))
    return Q


class _Expectation:
    """sum_i E_q[log softmax_{y_i}(Q g_i)] under q(g_i) = N(mu_i, S_i), with dE/dmu and
    dE/dS, by the rule chosen (module note)."""

    def __init__(self, y: np.ndarray, Q: np.ndarray, rule: str, z: np.ndarray | None):
        self.y, self.Q, self.rule, self.z = y, Q, rule, z

    def __call__(self, mu: np.ndarray, S: np.ndarray):
        """(E (n,), dE/dmu (n, d), dE/dS (n, d, d) symmetric, standard errors (n,))."""
        Q = self.Q
        lam, U = np.linalg.eigh(S)
        s = np.sqrt(np.maximum(lam, 0.0))
        if self.rule == "quadrature":  # axes along Sigma_i's eigenvectors (Price's theorem)
            F = np.einsum("ca,nab,nb->ncb", Q, U, s)
            res = expected_log_softmax_quadrature(self.y, mu @ Q.T, F)
            G = 0.5 * np.einsum("ca,ncd,db->nab", Q, res.hess, Q)
        else:  # g = mu + S^1/2 z: the estimate's own derivative in S (module note)
            A = np.einsum("nab,nb,ncb->nac", U, s, U)
            res = expected_log_softmax_mc(self.y, mu @ Q.T, np.einsum("ca,nab->ncb", Q, A), self.z)
            A_bar = np.einsum("ca,nck->nak", Q, res.grad_z)
            # dA A + A dA = dS: in S's eigenbasis dA'_ij = dS'_ij / (s_i + s_j)
            A_bar = np.einsum("nai,nab,nbj->nij", U, A_bar, U)
            Gp = 0.5 * (A_bar + np.swapaxes(A_bar, 1, 2)) / (s[:, :, None] + s[:, None, :])
            G = np.einsum("nai,nij,nbj->nab", U, Gp, U)
            G += 0.5 * np.einsum("ca,ncd,db->nab", Q, res.hess, Q)  # the one-vs-each part
        return res.value, res.grad @ Q, G, res.se


class _State(NamedTuple):
    """q at sites (Lam, b), E_q[log p(y_i | f_i)] with its derivatives, the bound and the
    standard error of its Monte Carlo estimate (0 for the quadrature)."""

    q: BlockSites | None  # None: sites that leave no Gaussian q
    expected: tuple[np.ndarray, np.ndarray, np.ndarray] | None  # E_i, dE/dmu, dE/dS
    elbo: float
    noise: float
    se: float
    W: np.ndarray  # the sites (Lam, b)
    b: np.ndarray

    mu = property(lambda self: self.q.mu)


def _state(K: np.ndarray, expectation: _Expectation, Lam: np.ndarray, b: np.ndarray):
    """q(g) ∝ N(g; 0, I (x) K) prod_i exp(-1/2 g_i^T Lam_i g_i + b_i^T g_i) and its bound:
    ELBO = sum_i E_i - 1/2 (log|B| + mu^T K^-1 mu - sum_i tr(Lam_i S_i)), the KL term in
    the site form (tr(K^-1 Sigma) = d n - tr(Lam Sigma), as in the binary engine). Sites
    that leave no Gaussian q (:func:`._block_sites.block_sites`) have the bound -inf, so
    the iteration never accepts them."""
    try:
        q = block_sites(K, Lam, b)
    except np.linalg.LinAlgError:
        return _State(None, None, -np.inf, 0.0, np.inf, Lam, b)
    E, dE_dmu, dE_dS, se = expectation(q.mu, q.S)
    quad = float(np.sum(q.alpha * q.mu))
    trace = float(np.einsum("nab,nba->", q.Lam, q.S))
    kl = 0.5 * (q.log_det_B + quad - trace)
    elbo = float(E.sum()) - kl
    noise = 1e-13 * (1.0 + float(np.abs(E).sum()) + abs(q.log_det_B) + abs(quad) + abs(trace))
    if not np.isfinite(elbo) or elbo > noise:  # no bound (log p(y) <= 0 for labels)
        elbo = -np.inf
    return _State(q, (E, dE_dmu, dE_dS), elbo, noise, float(np.sqrt(np.sum(se**2))), Lam, b)


def _fixed_point(state: _State) -> tuple[np.ndarray, np.ndarray]:
    """Lam_fix = -2 dE/dS, b_fix = dE/dmu + Lam_fix mu (Opper and Archambeau 2009, eqs.
    11-12, with blocks). A Monte Carlo estimate of dE/dS may have a small positive
    eigenvalue where the true curvature is nearly zero; Lam_fix keeps it (a negative
    direction of the site, :mod:`._block_sites`), so that the fixed point is the exact
    optimum of the estimated bound."""
    _, dE_dmu, dE_dS = state.expected
    Lam = -(dE_dS + np.swapaxes(dE_dS, 1, 2))
    return Lam, dE_dmu + np.einsum("nab,nb->na", Lam, state.mu)


def _symmetric(Lam: np.ndarray) -> np.ndarray:
    return 0.5 * (Lam + np.swapaxes(Lam, 1, 2))


def _check_warm_start(warm_start: Any, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """(Lam, b) of shapes (n, d, d) and (n, d), finite, Lam's blocks symmetric (to
    rounding), or a ValueError saying so. (Sites that leave no Gaussian q have the bound
    -inf and are not used.)"""
    try:
        Lam, b = (np.array(v, dtype=float) for v in warm_start)
    except (TypeError, ValueError):
        Lam = b = np.zeros(0)
    ok = Lam.shape == (n, d, d) and b.shape == (n, d)
    ok = ok and bool(np.all(np.isfinite(Lam)) and np.all(np.isfinite(b)))
    if ok:
        ok = np.allclose(Lam, np.swapaxes(Lam, 1, 2), atol=1e-10 * (1.0 + np.abs(Lam).max()))
    if not ok:
        raise ValueError(
            f"warm_start must be a pair (Lam, b) of finite arrays of shapes ({n}, {d}, {d}) and "
            f"({n}, {d}), Lam's blocks symmetric, as posterior.warm_start gives (the softmax "
            "KL engine's sites)"
        )
    return Lam, b


def _held_out(
    state: _State, expectation: _Expectation, options: Any
) -> tuple[float | None, float | None]:
    """The bound at q re-estimated on independent draws (as many as ``expectation`` has,
    from a stream spawned of ``mc_seed``), with its standard error: (None, None) where q
    has no bound. Unbiased for the bound of this q, where the bound the iteration maximised
    on its own draws is not (module note)."""
    if state.q is None or not np.isfinite(state.elbo):
        return None, None
    n, d = state.b.shape
    stream = np.random.default_rng(np.random.SeedSequence(options.mc_seed).spawn(1)[0])
    z = antithetic_normal(n, options.n_samples, d, stream)
    E, *_, se = _Expectation(expectation.y, expectation.Q, "mc", z)(state.q.mu, state.q.S)
    value = state.elbo - float(state.expected[0].sum()) + float(E.sum())
    return value, float(np.sqrt(np.sum(se**2)))


#: Differences between the bound on its own draws and on independent ones beyond this many
#: combined standard errors are warned of (module note).
OPTIMISM_SE = 3.0
#: How the warning of an estimate that has broken down begins (the report counts them).
BROKEN_DOWN = "KL (softmax): the Monte Carlo estimate has broken down"


def _check_optimism(
    state: _State, held_out: float, held_out_se: float, n_samples: int
) -> str | None:
    """Warn where the bound on the iteration's draws exceeds its re-estimate on independent
    draws by more than ``OPTIMISM_SE`` combined standard errors: q has adapted to its
    draws, and the bound's stated error does not cover the difference. Where q has fitted
    its draws so far that the estimated expected log likelihood is positive (impossible),
    both standard errors are so large that the difference may look small in them: that
    is said on its own, whatever the difference. Returns what was said: "broken down" (the
    bound means nothing: a hyperparameter search returns such a fit only if every fit was
    one), "optimistic" (a search ranks the fit by its re-estimate) or None."""
    expected = float(state.expected[0].sum())
    if expected > 0.0:  # (each E_q[log p(y_i | f_i)] <= 0: no likelihood gives more)
        warnings.warn(
            f"{BROKEN_DOWN}: its expected log likelihood on its own draws is "
            f"{expected:+.4g}, above zero, which no likelihood allows (q has fitted its "
            "draws, which happens where the prior hardly constrains it: large sigma_f), and "
            f"its bound {state.elbo:.4g} means nothing ({held_out:.4g} +- {held_out_se:.2g} "
            f"on independent draws); raise n_samples (now {n_samples})",
            RuntimeWarning,
            stacklevel=4,
        )
        return "broken down"
    excess = state.elbo - held_out
    if excess > OPTIMISM_SE * float(np.hypot(state.se, held_out_se)):
        warnings.warn(
            f"KL (softmax): the Monte Carlo bound is optimistic: {state.elbo:.4g} +- "
            f"{state.se:.2g} on its own draws, {held_out:.4g} +- {held_out_se:.2g} on "
            "independent ones (q has adapted to its draws, most where the prior hardly "
            f"constrains it: large sigma_f); raise n_samples (now {n_samples})",
            RuntimeWarning,
            stacklevel=4,
        )
        return "optimistic"
    return None


#: (C - 1) n x (C - 1) n matrices held at once (B, its factor, V and a product of V's).
_BIG_MATRICES = 4


def _check_memory(n: int, C: int) -> None:
    """Refuse, before allocating, a problem whose (C - 1) n x (C - 1) n matrices would not
    fit in the memory available (the engine's n x n estimate does not know C)."""
    need = _BIG_MATRICES * 8 * ((C - 1) * n) ** 2
    available = available_memory()
    if available is not None and need > available:
        raise ValueError(
            f"n = {n:,} training cases of {C} classes need about {need / 2**30:.1f} GiB for the "
            f"softmax KL engine's ({C - 1} n)^2 matrices, but {available / 2**30:.1f} GiB are "
            "available: use fewer cases (or a sparse engine)"
        )


def infer_softmax(problem: Problem, options: Any) -> SoftmaxKLPosterior:
    """The multi-class KL fit at fixed hyperparameters (module note); ``problem`` and
    ``options`` as :meth:`gpc_compare.engines.kl.KLEngine.infer` takes them."""
    X, lik = problem.X, problem.likelihood
    if problem.mean is not None:
        raise ValueError(
            "the softmax likelihood takes no prior mean (mean=None): a constant shared by "
            "the C latent functions cancels in the softmax"
        )
    y, C = check_codes(problem.y, lik)
    n, d = X.shape[0], C - 1
    _check_memory(n, C)
    K = check_kernel_matrix(problem.kernel, X)
    rule = options.integration or ("quadrature" if C == 2 else "mc")
    z = antithetic_normal(n, options.n_samples, d, options.mc_seed) if rule == "mc" else None
    expectation = _Expectation(y, contrasts(C), rule, z)
    state = _state(K, expectation, np.zeros((n, d, d)), np.zeros((n, d)))  # q = the prior
    if options.warm_start is not None:
        warm = _state(K, expectation, *_check_warm_start(options.warm_start, n, d))
        if warm.elbo >= state.elbo:
            state = warm
    run = maximize_bound(
        lambda Lam, b: _state(K, expectation, Lam, b),
        state,
        tol=options.tol,
        site_tol=options.site_tol,
        max_iter=options.max_iter,
        fixed_point=_fixed_point,
        project=_symmetric,
    )
    message = bound_message(run, options.tol, options.site_tol)
    if not run.converged and rule == "mc":
        # where the prior hardly constrains q (large sigma_f, a class far from the label)
        # the iteration keeps raising the estimate by fitting q to its draws, and crawls
        message += (
            f"; or raise n_samples (now {options.n_samples}): at large sigma_f the fit can "
            "adapt to the Monte Carlo estimate's draws"
        )
    if not run.converged:
        warnings.warn(f"KL (softmax) {message}", RuntimeWarning, stacklevel=3)
    state = run.state
    held_out = _held_out(state, expectation, options) if rule == "mc" else (None, None)
    said = None if held_out[0] is None else _check_optimism(state, *held_out, options.n_samples)
    post = SoftmaxKLPosterior(
        X,
        y,
        problem.kernel,
        lik,
        K=K,
        q=state.q,
        n_classes=C,
        log_marginal_likelihood=state.elbo,
        log_marginal_likelihood_se=state.se if rule == "mc" else 0.0,
        held_out=held_out,
        integration=rule,
        convergence=Convergence(run.converged, run.iterations, float(run.change), message),
    )
    post.bound_unreliable = said == "broken down"
    post.bound_optimistic = said == "optimistic"
    return post


class SoftmaxKLPosterior(MulticlassPosterior):
    """The multi-class KL approximation (module note): the Posterior contract for C classes.

    ``log_marginal_likelihood`` is the evidence lower bound at its optimum (with Monte Carlo
    integration, its estimate on fixed draws, whose standard error is
    ``log_marginal_likelihood_se``); its gradient is exact. Extra attributes: ``Lam`` and
    ``b`` (the sites over the C - 1 contrasts ``Q``), ``integration`` (the rule used),
    ``held_out_bound`` and ``held_out_bound_se`` (with Monte Carlo integration, the bound
    at this q re-estimated on independent draws: unbiased, where the estimate the fit
    maximised on its own draws is optimistic; None for the quadrature),
    ``bound_optimistic`` (the engine warned that the bound exceeds its re-estimate: its
    re-estimate is the one to go by), ``bound_unreliable`` (the engine warned that the
    Monte Carlo estimate broke down: the bound means nothing), ``warm_start``,
    ``convergence``.
    """

    method = "kl"

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        kernel,
        likelihood: Softmax,
        *,
        K: np.ndarray,
        q: BlockSites,
        n_classes: int,
        log_marginal_likelihood: float,
        log_marginal_likelihood_se: float,
        held_out: tuple[float | None, float | None],
        integration: str,
        convergence: Convergence,
    ) -> None:
        super().__init__(X, y, kernel, likelihood, None, n_classes=n_classes)
        self.K, self._q = K, q
        self.Q = contrasts(n_classes)
        self.Lam, self.b = q.Lam, q.b
        self._log_marginal_likelihood = float(log_marginal_likelihood)
        #: Standard error of the Monte Carlo estimate of the bound (0 for the quadrature)
        self.log_marginal_likelihood_se = float(log_marginal_likelihood_se)
        #: The bound at this q on independent draws, and its standard error (class note)
        self.held_out_bound, self.held_out_bound_se = held_out
        self.integration = integration
        #: Site directions with a negative precision (Monte Carlo curvature; module note)
        self.negative_directions = 0 if q.negative is None else int(q.negative[0].shape[1])
        self.convergence = convergence
        #: Whether the engine warned that the bound is optimistic (class note)
        self.bound_optimistic = False
        #: Whether the engine warned that the estimate broke down (class note)
        self.bound_unreliable = False

    @property
    def log_marginal_likelihood(self) -> float:
        """The evidence lower bound at its optimum (module note)."""
        if not np.isfinite(self._log_marginal_likelihood):
            raise ValueError(
                "the bound is refused: no q the iteration reached had a bound that can be one "
                "(finite and <= 0): bound the signal variance lower"
            )
        return self._log_marginal_likelihood

    @cached_property
    def log_marginal_likelihood_gradient(self) -> np.ndarray:
        """Exact gradient of the bound (module note), in the order of
        ``hyperparameter_names``."""
        _ = self.log_marginal_likelihood  # (refused bounds have no gradient either)
        alpha = self._q.alpha
        M = 0.5 * (alpha @ alpha.T - inverse_blocks_trace(self._q, self.K))
        traces, _ = self.kernel.gradient_terms(self.X, M, K=self.K)
        return np.asarray(traces, dtype=float)

    @property
    def warm_start(self) -> tuple[np.ndarray, np.ndarray]:
        """(Lam, b): pass as ``warm_start`` to start a nearby fit from these sites."""
        return self.Lam.copy(), self.b.copy()

    @cached_property
    def latent_mean(self) -> np.ndarray:
        """E_q[f] at the training inputs, (n, C): Q mu_i (summing to zero over the classes)."""
        return self._q.mu @ self.Q.T

    @cached_property
    def latent_point_cov(self) -> np.ndarray:
        """The C x C covariance of f_i under q at each training input, (n, C, C)."""
        S = np.einsum("ca,nab,db->ncd", self.Q, self._q.S, self.Q)
        return S + np.diag(self.K)[:, None, None] / self.n_classes

    @property
    def latent_var(self) -> np.ndarray:
        """Variance of each f_i^c under q, (n, C)."""
        return np.diagonal(self.latent_point_cov, axis1=1, axis2=2).copy()

    @cached_property
    def latent_cov(self) -> np.ndarray:
        """The full (C n x C n) covariance of f under q, class-major (index c n + i)."""
        q, K, Q, C = self._q, self.K, self.Q, self.n_classes
        n, d = q.b.shape
        Sigma = covariance(q, K).reshape(d, n, d, n)
        S = np.einsum("ca,aibj,db->cidj", Q, Sigma, Q).reshape(C * n, C * n)
        S += np.kron(np.ones((C, C)), K) / C  # the prior along (1..1)
        return 0.5 * (S + S.T)

    def _predict_latent(self, Xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean (m, C) and covariance (m, C, C) of f* (:func:`._block_sites.predict_blocks`
        over the contrasts, and the prior along (1..1))."""
        kss = self.kernel.diag(Xs)
        mean, cov = predict_blocks(self._q, self.K, self.kernel(self.X, Xs), kss)
        cov = np.einsum("ca,mab,db->mcd", self.Q, cov, self.Q)
        return mean @ self.Q.T, cov + kss[:, None, None] / self.n_classes

    def _integration_moments(
        self, Xs: np.ndarray, integration: str | None
    ) -> tuple[np.ndarray, np.ndarray]:
        mean, cov = self._predict_latent(Xs)
        return mean[None], cov[None]

    def record(self) -> dict[str, Any]:
        """:meth:`Posterior.record`, with the Monte Carlo bound's standard error (None for
        the quadrature, as for a deterministic approximation) and its re-estimate on
        independent draws, ``log_evidence_held_out`` with its ``log_evidence_held_out_se``
        (class note)."""
        out = super().record()
        if self.integration == "mc" and out["log_evidence"] is not None:
            out["log_evidence_se"] = self.log_marginal_likelihood_se
            out["log_evidence_held_out"] = self.held_out_bound
            out["log_evidence_held_out_se"] = self.held_out_bound_se
        return out

    def sample_latent(self, draws: int, random_seed: int | np.random.Generator | None = None):
        """Draws of f at the training inputs from q, (draws, n, C)."""
        rng = np.random.default_rng(random_seed)
        n, C = self.latent_mean.shape
        Lc = cholesky(self.latent_cov, jitter=JITTER, what="posterior covariance")
        z = rng.standard_normal((draws, C * n)) @ Lc.T
        return self.latent_mean[None] + z.reshape(draws, C, n).transpose(0, 2, 1)

    def to_inference_data(
        self, random_seed: int | np.random.Generator | None = None, *, draws: int = 1000
    ):
        """``draws`` draws from q of f (dims ``obs``, ``class``), seeded by
        ``random_seed``, as InferenceData."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            import arviz as az

        f = self.sample_latent(draws, random_seed)
        return az.from_dict(
            posterior={"f": f[None]},
            observed_data={"y": self.y},
            coords={"obs": np.arange(self.X.shape[0]), "class": np.arange(self.n_classes)},
            dims={"f": ["obs", "class"], "y": ["obs"]},
            attrs={
                "method": self.method,
                "kernel": repr(self.kernel),
                "likelihood": self.likelihood.name,
                "log_marginal_likelihood": self._log_marginal_likelihood,
                "integration": self.integration,
            },
        )
