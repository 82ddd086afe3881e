"""The MCMC engine's multi-class models: C latent GPs sharing the kernel, and a softmax or
multinomial probit likelihood, at fixed hyperparameters.

Coordinates (``parameterization``): "prior", F = L V, V ~ N(0, I) (n, C); or, per class,
f_c = G u_c with K ~= G G^T (:func:`._whitening.prior_factor`) and u = (u_1, ..., u_C) =
a + B z whitened by a Gaussian approximation of the posterior given as C x C site terms
per case (:func:`._whitening.block_site_whitening`): the multi-class Laplace
approximation's ("laplace", softmax; R&W section 3.5), the multi-class KL approximation's
("kl", softmax; :mod:`.kl_softmax`) or nested EP's ("ep", multinomial probit;
:mod:`.ep_multiclass`). Laplace's covariance is far too narrow at large sigma_f (R&W
section 3.4; Kuss and Rasmussen 2005), as in the binary engine, so the softmax's default is
KL's.

The multinomial probit's log p(y = c | f) = log int N(u | 0, 1) prod_{j != c}
Phi(u + f_c - f_j) du (Girolami and Rogers 2006) is a one-dimensional integral: here an
adaptive Gauss-Hermite rule (Liu and Pierce 1994) differentiable in f,

    log sum_k w_k exp(x_k^2) sqrt(2) s N(u_k | 0, 1) prod_j Phi(u_k + d_j),
    u_k = u^ + sqrt(2) s x_k,

(x_k, w_k) Hermite's nodes and weights, u^ the mode of the integrand and s = 1 / sqrt(its
curvature there), both found by Newton steps and held constant in the gradient (the rule
is exact for any centre and scale as the nodes grow: they only place the nodes). The
integrand is log-concave with curvature between 1 and 1 + (C - 1), so in these
coordinates it is close to exp(-x^2). Measured against the likelihood module's trapezoid
rule (1e-13): with :data:`GH_NODES` = 20 the largest error in log p over differences
f_c - f_j in [-30, 30] and C = 2..10 is below 3e-9 (tests/engines/test_mcmc_multiclass.py).
(PyMC and nutpie rewrite the graph before differentiating it, "canonicalize", which drops
the disconnected_grad: their gradient follows the centre and scale through the Newton
steps too, and differs from the graph's by the derivative of the rule's error, about
2e-9 of the gradient's size; the compiled density, :mod:`._compiled_multiclass`, holds
them fixed, as written. The value, all that decides NUTS's draws, is the same.)
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..likelihoods import MultinomialProbit, Softmax
from ._engine import Problem
from ._mcmc_models import unless_unavailable
from ._whitening import block_site_whitening, prior_factor, softmax_laplace_sites, turned_block
from .kl_softmax import contrasts

if TYPE_CHECKING:
    import pymc

__all__ = [
    "GH_NODES",
    "MULTICLASS_PARAMETERIZATIONS",
    "BlockWhitened",
    "block_whiten",
    "check_parameterization",
    "compiled_multiclass_model",
    "log_phi",
    "multiclass_model",
    "probit_log_lik",
]

#: Gauss-Hermite nodes of the multinomial probit's rule (see the module note).
GH_NODES = 20
#: Newton steps for the mode of the rule's integrand (from u = 0; quadratic convergence).
_NEWTON_STEPS = 6
#: The whitening each likelihood takes (its default first).
MULTICLASS_PARAMETERIZATIONS = {
    "softmax": ("kl", "laplace", "prior"),
    "multinomial_probit": ("ep", "prior"),
}


def _pymc():
    """pymc and pytensor.tensor, imported without their FutureWarnings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import pymc as pm
        import pytensor.tensor as pt
    return pm, pt


def log_phi(x):
    """log Phi(x), a pytensor expression: PyMC's ``normal_lcdf`` (log(erfcx(-x / sqrt 2) / 2)
    - x^2 / 2 below x = -1, log1p(-erfc(x / sqrt 2) / 2) above) with 1 / sqrt 2 in double
    precision. PyMC's own takes ``pt.sqrt(2.0)``, which pytensor evaluates in single
    precision (a Python float 2.0 becomes a float32 constant), 2.4e-8 from sqrt 2: its
    log Phi is off by 4e-7 relative at x = 5 (3e-9 to 8e-8 at |x| <= 2); this one is
    within 1e-13 of scipy.special.log_ndtr (tests/engines/test_mcmc_multiclass.py)."""
    _, pt = _pymc()
    half = np.float64(np.sqrt(0.5))  # (a NumPy float64 stays float64 in pytensor)
    return pt.switch(
        pt.lt(x, -1.0),
        pt.log(pt.erfcx(-x * half) / 2.0) - pt.sqr(x) / 2.0,
        pt.log1p(-pt.erfc(x * half) / 2.0),
    )


def probit_log_lik(d, nodes: int = GH_NODES):
    """log int N(u | 0, 1) prod_j Phi(u + d_j) du per row of ``d`` (N, J), a pytensor
    expression (the module note's adaptive Gauss-Hermite rule).

    Parameters
    ----------
    d : pytensor tensor, shape (N, J)
        f_c - f_j for the C - 1 classes j other than the label c.
    nodes : int
        Gauss-Hermite nodes.
    """
    _, pt = _pymc()
    from pytensor.gradient import disconnected_grad

    def mills(v):  # r(v) = phi(v) / Phi(v), stable in the tails
        return pt.exp(-0.5 * v**2 - 0.5 * np.log(2 * np.pi) - log_phi(v))

    d0 = disconnected_grad(d)
    u = pt.zeros_like(d0[:, 0])
    for _ in range(_NEWTON_STEPS):  # g(u) = -u + sum_j r(u + d_j), g' = -1 - sum_j r (v + r)
        v = u[:, None] + d0
        r = mills(v)
        u = u + (-u + r.sum(axis=1)) / (1.0 + (r * (v + r)).sum(axis=1))
    v = u[:, None] + d0
    r = mills(v)
    s = 1.0 / pt.sqrt(1.0 + (r * (v + r)).sum(axis=1))
    x, w = np.polynomial.hermite.hermgauss(nodes)
    uk = u[:, None] + np.sqrt(2.0) * s[:, None] * x[None, :]  # (N, nodes)
    terms = (np.log(w) + x**2 + 0.5 * np.log(2.0) - 0.5 * np.log(2 * np.pi))[None, :]
    terms = terms + pt.log(s)[:, None] - 0.5 * uk**2
    terms = terms + log_phi(uk[:, :, None] + d[:, None, :]).sum(axis=2)
    return pt.logsumexp(terms, axis=1)


def _differences(F, codes: np.ndarray, C: int):
    """f_{y_i} - f_j for the j != y_i in increasing order, (n, C - 1), from F (n, C)."""
    others = np.array([[j for j in range(C) if j != c] for c in codes])
    rows = np.arange(codes.size)
    return F[rows, codes][:, None] - F[rows[:, None], others]


def _sites(problem: Problem, codes: np.ndarray, C: int, parameterization: str):
    """The Gaussian approximation's C x C site terms (T (n, C, C), b (n, C)) and its fit."""
    from . import ep, kl
    from .laplace_softmax import infer_softmax

    X, kernel, lik = problem.X, problem.kernel, problem.likelihood
    if parameterization == "laplace":
        lap = infer_softmax(X, codes, kernel, lik)
        return (*softmax_laplace_sites(lap), lap)
    if parameterization == "kl":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (a KL fit short of its tolerance still whitens)
            q = kl.infer(X, codes, kernel, lik)
        Q = contrasts(C)  # g_i = Q^T f_i: the site exp(-g^T Lam g / 2 + b^T g) in f
        return np.einsum("ca,iab,db->icd", Q, q.Lam, Q), q.b @ Q.T, q
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (an EP short of its tolerance still whitens)
        post = ep.infer(X, codes, kernel, lik)
    return (*post.site_terms, post)


def check_parameterization(likelihood: Any, parameterization: str | None) -> str:
    """The multi-class coordinates (default: the likelihood's first), or a ValueError
    naming those it takes."""
    name = "softmax" if isinstance(likelihood, Softmax) else "multinomial_probit"
    allowed = MULTICLASS_PARAMETERIZATIONS[name]
    if parameterization is None:
        return allowed[0]
    if parameterization not in allowed:
        raise ValueError(
            f"parameterization={parameterization!r} is not available with the {name} "
            f"likelihood: use one of {list(allowed)} (whitening needs an approximation with "
            "the same likelihood)"
        )
    return parameterization


@dataclass(frozen=True, eq=False)
class BlockWhitened:
    """The multi-class whitened coordinates: f_c = G u_c, u = a + B z (class-major).

    Attributes
    ----------
    G : ndarray, shape (n, r)
        K ~= G G^T (:func:`._whitening.prior_factor`).
    a : ndarray, shape (C r,)
    B : ndarray, shape (C r, C r)
        Turned (:func:`._whitening.turned_block`): G_blk B is lower trapezoidal.
    H : ndarray, shape (n C, C r)
        G_blk B, rows case-major (i C + c), exactly 0 above its diagonal: what the
        compiled density multiplies.
    T : ndarray, shape (n, C, C)
    b : ndarray, shape (n, C)
        The approximation's C x C site terms that whitened.
    dropped : float
        The prior variance of the eigen-directions left out (per latent function).
    """

    G: np.ndarray
    a: np.ndarray
    B: np.ndarray
    H: np.ndarray
    T: np.ndarray
    b: np.ndarray
    dropped: float


def block_whiten(
    problem: Problem, codes: np.ndarray, C: int, K: np.ndarray, parameterization: str
) -> BlockWhitened:
    """The coordinates NUTS moves in, whitened by ``parameterization``'s approximation
    ("laplace", "kl" or "ep": the module note)."""
    G, dropped = prior_factor(K)
    T, b, _ = _sites(problem, codes, C, parameterization)
    a, B = block_site_whitening(T, b, G)
    # B turned so that the compiled density's H = G_blk B is lower trapezoidal: the same
    # whitening, its zeros skipped (:func:`._whitening.turned_block`)
    B, H = turned_block(G, B)
    return BlockWhitened(G, a, B, H, T, b, dropped)


def compiled_multiclass_model(whitened: BlockWhitened, codes: np.ndarray, likelihood: Any):
    """nutpie's model with the density compiled once (:mod:`._compiled_multiclass`), or
    None (warned) where numba cannot compile or cache it here, as for the binary model
    (:func:`._mcmc_models.compiled_model`)."""
    w = whitened

    def build():
        from . import _compiled_multiclass as compiled

        data = compiled.pack(w.G, w.a, w.H, w.T, w.b, codes, likelihood, GH_NODES, _NEWTON_STEPS)
        return compiled.whitened_model(data)

    return unless_unavailable(build)


def multiclass_model(
    problem: Problem,
    codes: np.ndarray,
    C: int,
    K: np.ndarray,
    L: np.ndarray,
    parameterization: str,
    whitened: BlockWhitened | None = None,
) -> tuple[pymc.Model, float | None]:
    """The PyMC model of the C latent GPs at fixed hyperparameters, and the prior variance
    dropped (None for "prior"); see the module note.

    In the whitened form (``whitened``, or :func:`block_whiten`'s) z is flat and the prior
    -|u|^2 / 2 is a potential: the density of z is N(a + B z; 0, I) p(y | F), the Jacobian
    |B| a constant.
    """
    pm, pt = _pymc()
    dropped = None
    with pm.Model(coords={"obs": np.arange(problem.n), "class": np.arange(C)}) as model:
        if parameterization == "prior":
            v = pm.Normal("v", 0.0, 1.0, dims=("obs", "class"))
            F = pm.Deterministic("f", pt.dot(L, v), dims=("obs", "class"))
        else:
            w = whitened or block_whiten(problem, codes, C, K, parameterization)
            G, dropped = w.G, w.dropped
            r = G.shape[1]
            model.add_coord("basis", np.arange(C * r))
            z = pm.Flat("z", dims="basis")
            u = w.a + pt.dot(w.B, z)
            pm.Potential("prior", -0.5 * pt.sum(u**2))
            F = pm.Deterministic("f", pt.dot(G, u.reshape((C, r)).T), dims=("obs", "class"))
        if isinstance(problem.likelihood, MultinomialProbit):
            pm.Potential("log_likelihood", probit_log_lik(_differences(F, codes, C)).sum())
        else:
            pm.Categorical("y", logit_p=F, observed=codes, dims="obs")
    return model, dropped
