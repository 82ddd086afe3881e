"""The gold-standard evidence's options: one record, each field declared once.

:class:`EvidenceOptions` says which estimator runs (SMC or AIS), where its path starts,
its own settings and, optionally, a :class:`Recheck` policy: when a first estimate is
made again, longer, and with what. Each field is declared once, with its default, its
check and what it means; constructing a record checks every field and raises a
ValueError (an :class:`~gpc_compare._validation.OptionError`) whose message starts with
the field's name. The estimators' own defaults are those of the functions that take
them (:func:`~gpc_compare.annealing.smc`, :func:`~gpc_compare.annealing.ais`): a field
left at None takes the chosen estimator's. ``gc.evidence.estimate``, the MCMC engine's
``evidence=`` and a study's ``[evidence.NAME]`` all build this record and hand it to
:func:`gpc_compare.annealing.estimate.estimate`.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from .._validation import (
    OptionCheck,
    OptionError,
    check_fraction,
    check_option_values,
    choice,
    count,
    option_checker,
    optional,
)
from .ais import DEFAULT_TEMPERATURES, ais
from .smc import smc

__all__ = [
    "ESTIMATORS",
    "METHODS",
    "OPTIONS",
    "OPTION_CHECKS",
    "SE_MAX",
    "STARTS",
    "EvidenceOptions",
    "Recheck",
    "check_options",
    "own_options",
]

#: The estimators: sequential Monte Carlo (the gold standard) and annealed importance sampling.
ESTIMATORS = ("smc", "ais")
#: What a caller may ask for; ``"auto"`` is SMC.
METHODS = ("auto", *ESTIMATORS)
#: Where a path may start.
STARTS = ("ep", "prior")
#: The functions that run each estimator: their signatures hold its defaults.
_RUNNERS = {"smc": smc, "ais": ais}
#: A standard error above which an estimate is unhealthy, by estimator (:attr:`Recheck.se_max`):
#: SMC's studies call a point reliable at se <= 0.1; AIS's weights are degenerate (one run
#: carries them, and the estimate is biased low) above 0.5.
SE_MAX = {"smc": 0.1, "ais": 0.5}
_SMC, _BOTH = ("smc",), ESTIMATORS


def _positive(value: Any, name: str) -> Any:
    """A finite number > 0, returned as given (an int stays an int)."""
    if not _is_number(value) or not value > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return value


def _non_negative(value: Any, name: str) -> Any:
    """A finite number >= 0, returned as given."""
    if not _is_number(value) or not value >= 0:
        raise ValueError(f"{name} must be a number >= 0, got {value!r}")
    return value


def _is_number(value: Any) -> bool:
    number = isinstance(value, int | float | np.integer | np.floating)
    return number and not isinstance(value, bool) and bool(np.isfinite(value))


def _start(value: Any, name: str) -> str:
    if not isinstance(value, str) or value not in STARTS:
        raise ValueError(f"{name} must be 'ep' or 'prior', got {value!r}")
    return value


def _option(check: OptionCheck, doc: str, default: Any = None, of: tuple = (), **more) -> Any:
    """A field: its default, its check, what it means and (``of``) the estimators whose own
    setting it is (empty: every estimator's), in its ``metadata`` with ``more``."""
    return field(default=default, metadata={"check": check, "doc": doc, "of": of, **more})


def _count(minimum: int, doc: str, default: int | None = None, of: tuple = ()) -> Any:
    """A whole-number field >= ``minimum`` (also ``metadata["minimum"]``)."""
    return _option(count(minimum), doc, default, of, minimum=minimum)


def _open_fraction(value: Any, name: str) -> float:
    return check_fraction(value, name, closed=False)


def _any(value: Any, name: str) -> Any:
    return value


def _check_fields(record: Any) -> None:
    """Check (and normalise) each field of ``record`` that is not None, naming it."""
    for f in fields(record):
        value = getattr(record, f.name)
        if value is not None:
            object.__setattr__(record, f.name, _checked(f.metadata["check"], value, f.name))


def _checked(check: OptionCheck, value: Any, name: str) -> Any:
    """``check(value, name)``, its ValueError an :class:`OptionError` naming ``name``."""
    try:
        return check(value, name)
    except ValueError as exc:
        raise OptionError(name, str(exc)) from None


@dataclass(frozen=True)
class Recheck:
    """When a first estimate is made again, longer, and with what.

    A first estimate is made again where its standard error exceeds ``se_max`` (a NaN
    standard error too), or, from EP's start and with ``z`` given, where it and EP's log
    evidence differ by more than ``z`` of its standard errors and more than ``nats``. The
    second estimate, independent of the first, is final: SMC with ``runs`` runs, AIS with
    ``temperatures`` temperatures (0: never again; ``se_max`` still says whether the
    estimate is healthy, as a study records). The defaults are a study's evidence jobs':
    ``se_max`` None (the estimator's, :data:`SE_MAX`: SMC 0.1, AIS 0.5), ``z`` 5,
    ``nats`` 0.3, ``runs`` 64, ``temperatures`` 5000.

    Parameters
    ----------
    se_max : float, optional
        The largest healthy standard error (None: the estimator's, SMC 0.1, AIS 0.5).
    z : float, optional
        Standard errors from EP's log evidence beyond which the estimate is made again (None:
        never on this count).
    nats : float
        And nats from EP's log evidence beyond which.
    runs : int
        SMC: the second estimate's runs (0: never again).
    temperatures : int
        AIS: the second estimate's temperatures (0: never again).
    """

    se_max: float | None = _option(
        optional(_positive), "largest healthy standard error (None: SMC 0.1, AIS 0.5)"
    )
    z: float | None = _option(optional(_non_negative), "se from EP beyond which (None: never)", 5.0)
    nats: float = _option(_non_negative, "and nats from EP beyond which", 0.3)
    runs: int = _count(0, "SMC: the second estimate's runs (0: never)", 64)
    temperatures: int = _count(0, "AIS: the second estimate's temperatures (0: never)", 5000)

    def __post_init__(self) -> None:
        _check_fields(self)


@dataclass(frozen=True)
class EvidenceOptions:
    """How the gold-standard evidence is estimated (see the module's docstring).

    A field left at None takes the estimator's default (that of :func:`smc` or
    :func:`ais`); an estimator's own setting given to the other is refused. Each field's
    meaning is its ``metadata["doc"]``; the defaults, once resolved:

    - ``estimator`` "smc"; ``start`` "ep"; ``runs`` 16 (SMC) or 32 (AIS);
    - SMC: ``particles`` 128, ``moves`` 2, ``sweeps`` 2, ``cess`` 0.9, ``max_steps`` 5000;
    - AIS: ``temperatures`` 300 from EP's start, 2000 from the prior;
    - ``recheck`` None: the first estimate is final.

    Parameters
    ----------
    estimator : {"smc", "ais"}
        The estimator.
    start : {"ep", "prior"}
        Where the path starts: EP's approximation or the prior.
    runs : int, optional
        Independent runs (for the standard error).
    particles : int, optional
        SMC: particles per run.
    moves : int, optional
        SMC: elliptical slice steps per temperature.
    sweeps : int, optional
        SMC: coordinate sweeps per temperature.
    cess : float, optional
        SMC: the conditional ESS kept per step, in (0, 1).
    max_steps : int, optional
        SMC: the most temperatures of the schedule.
    temperatures : int, optional
        AIS: the schedule's length.
    recheck : Recheck or mapping, optional
        When to estimate again (None: never).

    Raises
    ------
    ValueError
        An :class:`~gpc_compare._validation.OptionError` naming the bad field
        (``recheck.runs`` for a field of the recheck).
    """

    estimator: str = _option(choice(*ESTIMATORS), "'smc' or 'ais'", "smc")
    start: str = _option(_start, "where the path starts: EP's approximation or the prior", "ep")
    runs: int | None = _count(2, "independent runs (for the standard error)", of=_BOTH)
    particles: int | None = _count(2, "particles per run", of=_SMC)
    moves: int | None = _count(0, "elliptical slice steps per temperature", of=_SMC)
    sweeps: int | None = _count(0, "coordinate sweeps per temperature", of=_SMC)
    cess: float | None = _option(_open_fraction, "conditional ESS kept per step", of=_SMC)
    max_steps: int | None = _count(1, "most temperatures of the schedule", of=_SMC)
    temperatures: int | None = _count(1, "the schedule's length", of=("ais",))
    recheck: Recheck | None = _option(_any, "when to estimate again (None: never)")

    def __post_init__(self) -> None:
        _check_fields(self)
        for f in fields(self):
            of = f.metadata.get("of")
            if of and self.estimator not in of and getattr(self, f.name) is not None:
                message = f"{f.name} is an option of {of[0]!r}, not of {self.estimator!r}"
                raise OptionError(f.name, message)
        defaults = inspect.signature(_RUNNERS[self.estimator]).parameters
        for name in own_options(self.estimator):
            if getattr(self, name) is None:
                object.__setattr__(self, name, defaults[name].default)
        if self.estimator == "ais" and self.temperatures is None:
            start = "sites" if self.start == "ep" else "prior"
            object.__setattr__(self, "temperatures", DEFAULT_TEMPERATURES[start])
        object.__setattr__(self, "recheck", self._resolved_recheck())

    def _resolved_recheck(self) -> Recheck | None:
        """The recheck policy as a :class:`Recheck` (from a mapping too), its ``se_max``
        the estimator's where None, checked against the first estimate's settings."""
        recheck = self.recheck
        if isinstance(recheck, Mapping):
            unknown = sorted(set(recheck) - {f.name for f in fields(Recheck)})
            if unknown:
                raise OptionError("recheck", f"recheck: unknown field(s) {unknown}")
            try:
                recheck = Recheck(**recheck)
            except OptionError as exc:
                raise OptionError(f"recheck.{exc.option}", f"recheck.{exc}") from None
        if recheck is None:
            return None
        if not isinstance(recheck, Recheck):
            message = f"recheck must be a Recheck, a dict or None, got {recheck!r}"
            raise OptionError("recheck", message)
        if recheck.se_max is None:
            recheck = replace(recheck, se_max=SE_MAX[self.estimator])
        if self.estimator == "smc" and 0 < recheck.runs <= self.runs:
            message = f"must be 0 or exceed runs ({self.runs}), got {recheck.runs}"
            raise OptionError("recheck.runs", f"recheck.runs {message}")
        if self.estimator == "ais" and 0 < recheck.temperatures <= self.temperatures:
            message = (
                f"must exceed the first anneal's {self.temperatures} temperatures (it is the "
                f"longer anneal), got {recheck.temperatures}"
            )
            raise OptionError("recheck.temperatures", f"recheck.temperatures {message}")
        return recheck

    @classmethod
    def from_arguments(cls, method: str, start: str, options: Mapping[str, Any]) -> EvidenceOptions:
        """The record of ``gc.evidence.estimate(method=, start=, **options)`` and of the
        MCMC engine's ``evidence=``, ``evidence_start=``, ``evidence_options=``: ``method``
        is ``"auto"`` (SMC), ``"smc"`` or ``"ais"``; ``options`` are the estimator's own
        (:data:`OPTIONS`) and ``recheck``.

        Raises
        ------
        ValueError
            For an unknown method or start, or an option the estimator does not take or a
            bad value, naming it.
        """
        if not isinstance(method, str) or method not in METHODS:
            raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
        estimator = "smc" if method == "auto" else method
        checks = {**OPTION_CHECKS[estimator], "recheck": _any}
        given = check_option_values(options, checks, f"method {estimator!r}")
        return cls(estimator=estimator, start=_checked(_start, start, "start"), **given)

    def again(self) -> EvidenceOptions:
        """The second estimate's options: more runs (SMC) or temperatures (AIS), no recheck."""
        size = {"smc": "runs", "ais": "temperatures"}[self.estimator]
        return replace(self, **{size: getattr(self.recheck, size)}, recheck=None)


def own_options(estimator: str) -> tuple[str, ...]:
    """The settings that are ``estimator``'s own (``runs`` is both's)."""
    return tuple(f.name for f in fields(EvidenceOptions) if estimator in f.metadata["of"])


_FIELDS = {f.name: f for f in fields(EvidenceOptions)}
#: How each estimator's own options are checked, by estimator (the record's checks).
OPTION_CHECKS: dict[str, dict[str, OptionCheck]] = {
    est: {name: _FIELDS[name].metadata["check"] for name in own_options(est)} for est in ESTIMATORS
}
#: Their defaults: those of the functions that take them (:func:`smc`, :func:`ais`).
OPTIONS: dict[str, dict[str, Any]] = {
    est: {k: inspect.signature(_RUNNERS[est]).parameters[k].default for k in OPTION_CHECKS[est]}
    for est in ESTIMATORS
}
#: ``check_options[estimator](options)``: an estimator's own options checked, by name.
check_options = {
    est: option_checker(checks, f"method {est!r}") for est, checks in OPTION_CHECKS.items()
}
