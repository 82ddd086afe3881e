"""Posterior engines: one module per method, one signature.

Every engine module provides ``infer(X, y, kernel, likelihood, mean, **options)``
returning a :class:`~gpc_compare.posterior.Posterior`, and ``OPTIONS``, the options it
accepts with their defaults. :func:`get_engine` looks one up by name.
"""

from __future__ import annotations

from types import ModuleType

from . import ep, laplace, mcmc

ENGINES: dict[str, ModuleType] = {"laplace": laplace, "ep": ep, "mcmc": mcmc}


def get_engine(method: str) -> ModuleType:
    """The engine module for ``method``, or a ValueError listing those available."""
    if isinstance(method, str) and method.lower() in ENGINES:
        return ENGINES[method.lower()]
    raise ValueError(f"method must be one of {sorted(ENGINES)}, got {method!r}")
