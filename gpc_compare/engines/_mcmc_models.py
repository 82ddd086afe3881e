"""The MCMC engine's models: the coordinates NUTS moves in, and the PyMC model of each case.

- :func:`whiten`: f = m + g0 + H z at fixed hyperparameters, from the prior's low-rank
  factor whitened by EP's approximation or Laplace's (:mod:`._whitening`);
  :func:`compiled_model` gives nutpie that density compiled once (:mod:`._compiled`).
- :func:`fixed_model`: the binary model at fixed hyperparameters, whitened or non-centred
  (f = m + L v, v ~ N(0, I), L = chol(K)).
- :func:`full_bayes_model`: f = m + chol(K(theta)) v with a normal prior on the log
  hyperparameters (:func:`prior_moments`), sampled jointly.

The multi-class models (C latent GPs) are :mod:`._mcmc_multiclass`'s (compiled:
:mod:`._compiled_multiclass`).

The likelihood is log Phi(y f) through PyMC's stable log normal CDF (probit),
-softplus(-y f) (logistic), or a Normal with mean f and the noise variance (Gaussian).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..likelihoods import Gaussian, Likelihood, Logistic, Probit
from ..numerics import JITTER
from . import ep, laplace
from ._engine import Problem
from ._whitening import laplace_sites, lower_trapezoidal, prior_factor, site_whitening

if TYPE_CHECKING:
    import pymc

__all__ = [
    "DEFAULT_PRIOR_SD",
    "Whitened",
    "compiled_model",
    "fixed_model",
    "full_bayes_model",
    "prior_moments",
    "unless_unavailable",
    "whiten",
]

#: Prior standard deviation of each log hyperparameter (and the mean) in full Bayes.
DEFAULT_PRIOR_SD = 1.0


def _pymc():
    """pymc and pytensor.tensor, imported without their FutureWarnings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import pymc as pm
        import pytensor.tensor as pt
    return pm, pt


def _prior_mean(problem: Problem) -> float:
    return 0.0 if problem.mean is None else float(problem.mean)


def _names(problem: Problem) -> list[str]:
    """The hyperparameters' names: the kernel's, then "mean" where it is one."""
    return problem.kernel.hyperparameter_names + ([] if problem.mean is None else ["mean"])


# ----------------------------------------------------------------- whitened coordinates
@dataclass(frozen=True, eq=False)
class Whitened:
    """The whitened coordinates at fixed hyperparameters: f = m + g0 + H z.

    Attributes
    ----------
    g0 : ndarray, shape (n,)
        G a: the Gaussian approximation's mean of g = f - m.
    H : ndarray, shape (n, r)
        G B Q, lower trapezoidal, with K ~= G G^T (r eigen-directions of K) and Q
        orthogonal (:func:`._whitening.lower_trapezoidal`).
    T, b : ndarray, shape (n,)
        The approximation's site terms t(g) = exp(-1/2 g^T diag(T) g + b^T g).
    dropped : float
        The prior variance of the eigen-directions left out.
    parameterization : {"ep", "laplace"}
        The approximation that whitened (Laplace's where EP failed).
    approx : EPPosterior or None
        EP's fit, where it whitened.
    """

    g0: np.ndarray
    H: np.ndarray
    T: np.ndarray
    b: np.ndarray
    dropped: float
    parameterization: str
    approx: Any = None


def whiten(problem: Problem, K: np.ndarray, parameterization: str) -> Whitened:
    """The coordinates NUTS moves in, whitened by EP's approximation ("ep"; Laplace's where
    EP fails, a RuntimeWarning saying why) or Laplace's ("laplace"): :mod:`._whitening`."""
    X, y, kernel, lik, mean = problem.X, problem.y, problem.kernel, problem.likelihood, problem.mean
    G, dropped = prior_factor(K)
    approx = None
    if parameterization == "ep":
        approx = _ep_for_whitening(problem)
        parameterization = "ep" if approx is not None else "laplace"
    if parameterization == "laplace":
        T, b = laplace_sites(laplace.infer(X, y, kernel, lik, mean))
    else:
        T, b = approx.ttau, approx.tnu - approx.ttau * _prior_mean(problem)
    a, B = site_whitening(T, b, G)
    # G B turned to lower trapezoidal form: the same whitening, its zeros skipped by the
    # compiled density (:func:`._whitening.lower_trapezoidal`)
    H = lower_trapezoidal(G @ B)
    return Whitened(G @ a, H, T, b, dropped, parameterization, approx)


def _ep_for_whitening(problem: Problem):
    """EP's approximation to whiten NUTS's coordinates (EP's default options, as
    :func:`gpc_compare.evidence.estimate` fits it), or None where EP fails (any Gaussian
    whitens: Laplace's is used instead, and a RuntimeWarning says why). An EP that stopped
    short of its tolerance still whitens: its warning is not the sampler's."""
    X, y, kernel, lik, mean = problem.X, problem.y, problem.kernel, problem.likelihood, problem.mean
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ep.infer(X, y, kernel, lik, mean)
    except (FloatingPointError, ValueError, np.linalg.LinAlgError) as exc:
        warnings.warn(
            f"EP failed ({exc}); NUTS's coordinates are whitened by the Laplace "
            "approximation instead",
            RuntimeWarning,
            stacklevel=6,
        )
        return None


def compiled_model(whitened: Whitened, m: float, y: np.ndarray, likelihood: Likelihood):
    """nutpie's model with the compiled density, or None (warned) where numba cannot
    compile or cache it here: nutpie then compiles the PyMC model, as for other models."""
    w = whitened

    def build():
        from . import _compiled

        return _compiled.whitened_model(_compiled.pack(w.H, w.g0, m, y, w.T, w.b, likelihood))

    return unless_unavailable(build)


def unless_unavailable(build: Callable[[], Any]) -> Any:
    """``build()``, a nutpie model with a compiled density, or None where it fails (e.g.
    numba's "cannot cache function"), with a RuntimeWarning saying so (at the engine's
    caller)."""
    try:
        return build()
    except Exception as exc:  # noqa: BLE001 - e.g. numba's "cannot cache function": say so
        warnings.warn(
            f"the compiled density is unavailable ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:200]}); nutpie compiles the PyMC model instead",
            RuntimeWarning,
            stacklevel=6,
        )
        return None


# -------------------------------------------------------------------- binary models
def _observe(f, problem: Problem) -> None:
    """The likelihood of the binary (or Gaussian) labels given f, in the current model."""
    pm, pt = _pymc()
    from pymc.distributions.dist_math import normal_lcdf

    lik, y = problem.likelihood, problem.y
    if isinstance(lik, Probit):
        # log Phi(y f) through PyMC's stable log normal CDF (exact in the tails)
        pm.Potential("log_likelihood", normal_lcdf(0.0, 1.0, y * f).sum())
    elif isinstance(lik, Gaussian):
        pm.Normal("y", mu=f, sigma=np.sqrt(lik.variance), observed=y, dims="obs")
    elif isinstance(lik, Logistic):
        # log sigma(y f) = -log(1 + exp(-y f)) (R&W eq. 3.4): softplus's gradient is
        # finite for any f, where PyMC's Bernoulli(logit_p)'s is NaN at |f| ~ 1e4
        pm.Potential("log_likelihood", -pt.softplus(-y * f).sum())
    else:
        raise ValueError(f"the MCMC engine has no model for the {lik.name!r} likelihood")


def _binary_coords(problem: Problem) -> dict[str, Any]:
    return {"obs": np.arange(problem.n), "hyperparameter": _names(problem)}


def fixed_model(problem: Problem, L: np.ndarray, whitened: Whitened | None) -> pymc.Model:
    """The binary model at fixed hyperparameters: whitened, f = m + g0 + H z, or
    non-centred, f = m + L v (``whitened`` None).

    In the whitened form N(u; 0, I) t(G u) is N(z; 0, I) up to a constant, u = a + B z: the
    prior is that Gaussian over the sites t(g) = exp(-1/2 g^T T g + b^T g), so the density
    of z is N(z; 0, I) p(y | f) / t(g), one n x r product per gradient (H = G B) where
    -|u|^2 / 2 would add an r x r one.
    """
    pm, pt = _pymc()
    m = _prior_mean(problem)
    with pm.Model(coords=_binary_coords(problem)) as model:
        if whitened is not None:
            model.add_coord("basis", np.arange(whitened.H.shape[1]))
            z = pm.Normal("z", 0.0, 1.0, dims="basis")
            g = pt.as_tensor(whitened.g0) + pt.dot(whitened.H, z)
            T, b = whitened.T, whitened.b
            pm.Potential("sites", 0.5 * pt.sum(T * g**2) - pt.dot(b, g))  # -log t(g)
            f = pm.Deterministic("f", m + g, dims="obs")
        else:  # non-centred, L fixed
            v = pm.Normal("v", 0.0, 1.0, dims="obs")
            f = pm.Deterministic("f", m + pt.dot(L, v), dims="obs")
        _observe(f, problem)
    return model


def prior_moments(
    problem: Problem, priors: Mapping[str, tuple[float, float]] | None
) -> tuple[np.ndarray, np.ndarray]:
    """Normal prior means and sds of the log hyperparameters (and the mean), in the order
    of their names: centred on the problem's values with sd :data:`DEFAULT_PRIOR_SD`,
    except those ``priors`` (checked pairs (mu, sigma)) give; a ValueError names one the
    problem does not have."""
    names = _names(problem)
    mean = problem.mean
    centre = np.append(problem.kernel.theta, [] if mean is None else [float(mean)])
    mu, sd = centre.copy(), np.full(centre.size, DEFAULT_PRIOR_SD)
    for name, (mu_i, sd_i) in (priors or {}).items():
        if name not in names:
            raise ValueError(f"priors names unknown hyperparameter {name!r}; expected {names}")
        mu[names.index(name)], sd[names.index(name)] = mu_i, sd_i
    return mu, sd


def full_bayes_model(
    problem: Problem, K: np.ndarray, prior: tuple[np.ndarray, np.ndarray]
) -> pymc.Model:
    """f = m + chol(K(theta)) v inside the graph, theta ~ N(mu, sd) on the log scale
    (``prior``: :func:`prior_moments`), the prior mean among them where it is one."""
    pm, pt = _pymc()
    X, kernel, mean, n = problem.X, problem.kernel, problem.mean, problem.n
    with pm.Model(coords=_binary_coords(problem)) as model:
        v = pm.Normal("v", 0.0, 1.0, dims="obs")
        mu, sd = prior
        theta = pm.Normal("theta", mu, sd, dims="hyperparameter")
        p = kernel.n_hyperparameters
        Kt = kernel.symbolic(X, theta[:p])
        Kt = Kt + JITTER * max(float(np.mean(np.diag(K))), 1.0) * np.eye(n)
        m_t = theta[p] if mean is not None else _prior_mean(problem)
        # (K(theta) is finite by construction: no finiteness scan in every gradient)
        L_t = pt.linalg.cholesky(Kt, check_finite=False)
        f = pm.Deterministic("f", m_t + pt.dot(L_t, v), dims="obs")
        _observe(f, problem)
    return model
