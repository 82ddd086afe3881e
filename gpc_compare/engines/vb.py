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

import numpy as np

from .._validation import (
    any_value,
    check_kernel_matrix,
    check_positive,
    count,
    option_checker,
)
from ..kernels import Kernel
from ..likelihoods import Likelihood, Logistic
from ..numerics import log_sigmoid
from ..posterior import Convergence
from ._sites import GaussianSites, SitePosterior, anderson, gaussian_sites, site_mean_cg

__all__ = ["VBPosterior", "check_options", "infer", "jaakkola_lambda"]

#: How this engine is named in messages.
LABEL = "VB"
#: Options ``gc.fit(method="vb", ...)`` accepts, with their defaults.
OPTIONS = {"tol": 1e-10, "xi_tol": 1e-6, "max_iter": 1000, "warm_start": None}
#: How each option is checked (:func:`check_options`).
OPTION_CHECKS = {
    "tol": check_positive,
    "xi_tol": check_positive,
    "max_iter": count(1),
    "warm_start": any_value,
}
#: What this engine can do (see :data:`gpc_compare.engines.CAPABILITY_NAMES`).
CAPABILITIES = frozenset({"evidence", "evidence_gradient", "bound"})
#: The likelihoods it takes (by name).
LIKELIHOODS = frozenset({"logistic"})

_ANDERSON_MEMORY = 5


def jaakkola_lambda(xi: np.ndarray) -> np.ndarray:
    """lambda(xi) = tanh(xi / 2) / (4 xi), even in xi, 1/8 at 0 (series below 1e-4)."""
    xi = np.abs(np.asarray(xi, dtype=float))
    small = xi < 1e-4
    out = np.tanh(0.5 * xi) / (4.0 * np.where(small, 1.0, xi))
    return np.where(small, 0.125 - np.where(small, xi, 0.0) ** 2 / 96.0, out)


def _propose(history: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The next xi: Anderson's extrapolation of the EM iterates where it is finite, else
    the last EM step."""
    if len(history) > 1:
        trial = np.abs(anderson(history))
        if np.all(np.isfinite(trial)):
            return trial
    xi, residual = history[-1]
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


#: The options checked before any fit, as ``gc.fit`` and a study's ``[engines.vb]``
#: are (``warm_start``'s shape is :func:`infer`'s: it knows n).
check_options = option_checker(OPTION_CHECKS, "method 'vb'")


def infer(
    X: np.ndarray,
    y: np.ndarray,
    kernel: Kernel,
    likelihood: Likelihood,
    mean: float | None = None,
    *,
    tol: float = OPTIONS["tol"],
    xi_tol: float = OPTIONS["xi_tol"],
    max_iter: int = OPTIONS["max_iter"],
    warm_start: np.ndarray | None = None,
) -> VBPosterior:
    """Maximise the Jaakkola-Jordan bound on the evidence over xi at fixed hyperparameters.

    Parameters
    ----------
    X, y, kernel, mean
        As for the Laplace engine (:func:`gpc_compare.engines.laplace.infer`).
    likelihood : Logistic
        The logistic likelihood only (ValueError otherwise).
    tol : float
        Converged when the bound is estimated to lie within ``tol`` of its maximum (the
        first-order gain of the next EM step, sum_i -lambda'(xi_i) (E_q[f_i^2] - xi_i^2)
        (xi_em_i - xi_i), which tracks the true distance to within a few per cent near
        the optimum) ...
    xi_tol : float
        ... and the EM update would move no xi_i by more than ``xi_tol``.
    max_iter : int
        Most iterations (each a few conjugate-gradient steps, one Cholesky and one
        triangular inverse); not converging by then warns and is recorded.
    warm_start : ndarray, shape (n,), optional
        xi to start from (e.g. ``previous.warm_start``); used if its bound is at least
        that of xi = 1.

    Returns
    -------
    VBPosterior
    """
    if not isinstance(likelihood, Logistic):
        raise ValueError(
            f"method='vb' takes the logistic likelihood only, got {likelihood.name!r}: the "
            "Jaakkola-Jordan quadratic bound exists for log sigma(z), and the probit has "
            "no such bound; use method='kl' (the Gaussian variational bound) for it"
        )
    checked = check_options({"tol": tol, "xi_tol": xi_tol, "max_iter": max_iter})
    tol, xi_tol, max_iter = checked["tol"], checked["xi_tol"], checked["max_iter"]
    n = X.shape[0]
    m = 0.0 if mean is None else float(mean)
    K = check_kernel_matrix(kernel, X)
    xi = np.ones(n)
    q, bound, noise = _bound(K, y, m, xi)
    if warm_start is not None:
        xi0 = np.abs(np.asarray(warm_start, dtype=float))
        if xi0.shape != (n,) or not np.all(np.isfinite(xi0)):
            raise ValueError(f"warm_start must be xi, a finite array of shape ({n},)")
        q0, bound0, noise0 = _bound(K, y, m, xi0)
        if bound0 >= bound:
            xi, q, bound, noise = xi0, q0, bound0, noise0
    converged, change, xi_change, gap = False, np.inf, np.inf, np.inf
    accelerated, factorisations, cg_steps = 0, 1 + (warm_start is not None), 0
    history: list[tuple[np.ndarray, np.ndarray]] = []
    # the half-steps' means well below xi_tol: where rounding forbids it, CG gives up
    # and the plain EM step is taken instead
    cg_rtol = min(1e-10, 1e-4 * xi_tol)
    iterations = 0
    for iterations in range(max_iter + 1):  # noqa: B007 (reported after the loop)
        xi_em = np.sqrt(q.mu**2 + q.v)  # EM: xi^2 = E_q[f^2] (Bishop eq. 10.163)
        xi_change = float(np.max(np.abs(xi_em - xi)))
        # the bound's distance to its maximum, estimated by what the next EM step gains to
        # first order: dF/dxi_i = lambda'(xi_i) (xi_i^2 - E_q[f_i^2]) times the step
        gap = float(np.sum(-_lambda_prime(xi) * (xi_em**2 - xi**2) * (xi_em - xi)))
        if gap < max(tol, noise) and xi_change < xi_tol:
            converged = True
            break
        if iterations == max_iter:
            break
        history = [*history[-_ANDERSON_MEMORY:], (xi, xi_em - xi)]
        # a half-step on the mean alone: q's marginal variances held (they move slowly),
        # the mean at the proposal by conjugate gradients preconditioned with q's factor
        half = _propose(history)
        mu_half = site_mean_cg(K, m, 2.0 * jaakkola_lambda(half), 0.5 * y, q.L, rtol=cg_rtol)
        new = None
        if mu_half is not None:
            cg_steps += 1
            history = [*history[-_ANDERSON_MEMORY:], (half, np.sqrt(mu_half**2 + q.v) - half)]
            trial = _propose(history)
            factorisations += 1
            q_t, bound_t, noise_t = _bound(K, y, m, trial)
            if bound_t >= bound - noise:
                new, accelerated = (trial, q_t, bound_t, noise_t), accelerated + 1
        if new is None:  # the EM step from q, which never lowers the bound
            history = []
            factorisations += 1
            new = (xi_em, *_bound(K, y, m, xi_em))
        change = new[2] - bound
        xi, q, bound, noise = new
    if converged:
        message = (
            f"converged after {iterations} iterations ({factorisations} factorisations, "
            f"{cg_steps} conjugate-gradient half-steps, {accelerated} extrapolated): "
            f"estimated distance to the maximum {gap:.2e}, xi change {xi_change:.2e}"
        )
    else:
        message = (
            f"not converged after {iterations} iterations (estimated distance to the "
            f"maximum {gap:.2e}, xi change {xi_change:.2e}; tol {tol:g}, xi_tol "
            f"{xi_tol:g}): raise max_iter"
        )
        warnings.warn(f"VB {message}", RuntimeWarning, stacklevel=2)
    return VBPosterior(
        X,
        y,
        kernel,
        likelihood,
        mean,
        K=K,
        alpha=q.alpha,
        sW=q.sW,
        L=q.L,
        log_marginal_likelihood=bound,
        convergence=Convergence(converged, iterations, float(change), message),
        xi=xi,
        v=q.v,
    )
