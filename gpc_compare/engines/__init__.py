"""Posterior engines: one module per method, one signature, a declared capability set.

Every engine module provides ``infer(X, y, kernel, likelihood, mean, **options)``
returning a :class:`~gpc_compare.posterior.Posterior`, ``OPTIONS``, the options it
accepts with their defaults, ``OPTION_CHECKS`` and ``check_options(options)``, which
checks their values before any fit (``gc.fit`` and the study loader both call it),
``CAPABILITIES``, what it can do (names in :data:`CAPABILITY_NAMES`), ``LIKELIHOODS``,
the likelihoods it takes, and ``LABEL``, its name in messages. Callers ask
:func:`capabilities` (``"evidence_gradient" in capabilities("ep")``), never the engine's
name. :func:`get_engine` looks one up by name.
"""

from __future__ import annotations

from types import ModuleType

from . import ep, fitc_ep, fitc_laplace, kl, laplace, mcmc, svgp, vb

__all__ = ["CAPABILITY_NAMES", "ENGINES", "capabilities", "engines_with", "get_engine"]

ENGINES: dict[str, ModuleType] = {
    "laplace": laplace,
    "ep": ep,
    "kl": kl,
    "vb": vb,
    "mcmc": mcmc,
    "fitc_laplace": fitc_laplace,
    "fitc_ep": fitc_ep,
    "svgp": svgp,
}

#: What an engine may declare, and what each promise means.
CAPABILITY_NAMES: dict[str, str] = {
    "evidence": "always gives log_marginal_likelihood (an estimate of log p(y | X, theta))",
    "evidence_gradient": (
        "gives the exact gradient of its evidence, so it can select its own hyperparameters "
        "(optimize=True); an engine without it runs at another engine's values"
    ),
    "bound": "its evidence is a lower bound on log p(y | X, theta) (variational methods)",
    "loo": "gives the cavity leave-one-out predictive log-likelihood and its gradients",
    "multiclass": "takes likelihood='softmax' (C >= 2 classes)",
    "draws": "holds posterior draws: convergence diagnostics and the sampler's InferenceData",
    "hyperparameter_sampling": "can sample the hyperparameters too (full_bayes=True)",
    "reference": "a gold standard the approximations are measured against",
    "sparse": (
        "approximates the prior by M inducing inputs (inducing=M or an (M, d) array): "
        "O(n M^2) time and O(n M) memory, for n beyond the dense engines' reach"
    ),
}


def get_engine(method: str) -> ModuleType:
    """The engine module for ``method``, or a ValueError listing those available."""
    if isinstance(method, str) and method.lower() in ENGINES:
        return ENGINES[method.lower()]
    raise ValueError(f"method must be one of {sorted(ENGINES)}, got {method!r}")


def capabilities(method: str) -> frozenset[str]:
    """What an engine can do.

    Parameters
    ----------
    method : str
        An engine name (a key of :data:`ENGINES`).

    Returns
    -------
    frozenset of str
        A subset of :data:`CAPABILITY_NAMES`.

    Raises
    ------
    ValueError
        For an unknown engine, listing those available.
    """
    return get_engine(method).CAPABILITIES


def engines_with(capability: str) -> list[str]:
    """The names of the engines that declare ``capability``, in registry order."""
    return [name for name in ENGINES if capability in capabilities(name)]
