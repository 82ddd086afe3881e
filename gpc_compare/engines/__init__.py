"""Posterior engines: one module per method, one signature, a declared capability set.

Every engine is an :class:`Engine` (see :mod:`gpc_compare.engines._engine` for the
contract): a name, one frozen options dataclass whose fields carry each option's default,
check and doc, the likelihoods it takes with what it can do with each, and
``infer(problem, options) -> Posterior``. Callers ask :func:`capabilities`
(``"evidence_gradient" in capabilities("ep", "probit")``), never the engine's name.
:func:`get_engine` looks one up by name; :func:`register` adds one (a new engine is one
module that subclasses :class:`Engine`, and one call). Installed packages can also
provide engines through the ``gpc_compare.engines`` entry-point group (each entry point
names an :class:`Engine` subclass or instance), loaded the first time the registry is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import entry_points

from ._engine import CAPABILITY_NAMES, Engine, EngineOptions, Problem, engine_options, option
from .ep import ENGINE as _EP
from .fitc_ep import ENGINE as _FITC_EP
from .fitc_laplace import ENGINE as _FITC_LAPLACE
from .kl import ENGINE as _KL
from .laplace import ENGINE as _LAPLACE
from .mcmc import ENGINE as _MCMC
from .svgp import ENGINE as _SVGP
from .vb import ENGINE as _VB

__all__ = [
    "CAPABILITY_NAMES",
    "ENGINES",
    "Engine",
    "EngineOptions",
    "Problem",
    "capabilities",
    "engine_options",
    "engines_with",
    "get_engine",
    "option",
    "register",
    "registered",
    "unregister",
]

#: The registered engines by name, in registration order (read it, change it through
#: :func:`register` and :func:`unregister`).
ENGINES: dict[str, Engine] = {
    e.name: e for e in (_LAPLACE, _EP, _KL, _VB, _MCMC, _FITC_LAPLACE, _FITC_EP, _SVGP)
}
_BUILT_IN = frozenset(ENGINES)
_entry_points_loaded = False


def register(engine: Engine | type[Engine], *, replace: bool = False) -> Engine:
    """Add an engine to the registry, after which ``gc.fit(method=engine.name)``, studies,
    the estimator and ``gpc-compare list engines`` take it.

    Parameters
    ----------
    engine : Engine or Engine subclass
        An instance, or a subclass taking no arguments.
    replace : bool
        Replace a registered engine of the same name (never a built-in one).

    Returns
    -------
    Engine
        The registered instance.
    """
    if isinstance(engine, type) and issubclass(engine, Engine):
        engine = engine()
    if not isinstance(engine, Engine):
        raise ValueError(f"register takes an Engine (subclass or instance), got {engine!r}")
    name = getattr(engine, "name", None)
    if not isinstance(name, str) or not name.isidentifier() or name != name.lower():
        raise ValueError(
            f"an engine's name must be a lower-case identifier (it names files), got {name!r}"
        )
    if name in ENGINES and (name in _BUILT_IN or not replace):
        raise ValueError(f"an engine named {name!r} is registered already")
    if not isinstance(getattr(engine, "likelihoods", None), Mapping) or not engine.likelihoods:
        raise ValueError(f"engine {name!r} must declare the likelihoods it takes")
    ENGINES[name] = engine
    return engine


def unregister(name: str) -> None:
    """Remove a registered engine (not a built-in one).

    Parameters
    ----------
    name : str
        The engine's registry name; an unknown name is ignored.

    Raises
    ------
    ValueError
        If ``name`` is a built-in engine.
    """
    if name in _BUILT_IN:
        raise ValueError(f"{name!r} is a built-in engine")
    ENGINES.pop(name, None)


def _load_entry_points() -> None:
    """Register the engines installed packages provide (once)."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for point in entry_points(group="gpc_compare.engines"):
        if point.name not in ENGINES:
            register(point.load())


def registered() -> dict[str, Engine]:
    """The registered engines by name (the built-in ones, those :func:`register` added and
    those installed packages provide), in registration order.

    Returns
    -------
    dict of str to Engine
        A copy of the registry: changing it changes nothing registered.
    """
    _load_entry_points()
    return dict(ENGINES)


def get_engine(method: str | Engine) -> Engine:
    """The engine called ``method`` (or ``method`` itself, an Engine), or a ValueError
    listing those available.

    Parameters
    ----------
    method : str or Engine
        An engine name (case-insensitive), or an engine, returned as it is.

    Returns
    -------
    Engine
        The registered engine.

    Raises
    ------
    ValueError
        For an unknown name, listing the registered ones.
    """
    if isinstance(method, Engine):
        return method
    _load_entry_points()
    if isinstance(method, str) and method.lower() in ENGINES:
        return ENGINES[method.lower()]
    raise ValueError(f"method must be one of {sorted(ENGINES)}, got {method!r}")


def capabilities(method: str, likelihood: str | None = None) -> frozenset[str]:
    """What an engine can do.

    Parameters
    ----------
    method : str
        An engine name (a key of :data:`ENGINES`).
    likelihood : str, optional
        With this likelihood (a ValueError if the engine does not take it); by default
        with any it takes.

    Returns
    -------
    frozenset of str
        A subset of :data:`CAPABILITY_NAMES`.

    Raises
    ------
    ValueError
        For an unknown engine, listing those available.
    """
    return get_engine(method).capabilities(likelihood)


def engines_with(capability: str, likelihood: str | None = None) -> list[str]:
    """The names of the engines that declare ``capability`` (with ``likelihood``, if
    given), in registry order.

    Parameters
    ----------
    capability : str
        One of :data:`CAPABILITY_NAMES`.
    likelihood : str, optional
        Only engines taking this likelihood, with the capability for it; by default any
        engine declaring the capability for some likelihood.

    Returns
    -------
    list of str
        Engine names.
    """
    _load_entry_points()
    return [
        name
        for name, e in ENGINES.items()
        if (likelihood is None or e.takes(likelihood)) and capability in e.capabilities(likelihood)
    ]
