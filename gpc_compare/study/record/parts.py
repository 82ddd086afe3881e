"""The parts of a job record: hyperparameters, timings, convergence, the search, evidence,
diagnostics, inducing inputs and per-case arrays (each with ``read`` and ``to_dict``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._reader import Reader, RecordError, json_part, numeric

__all__ = [
    "Arrays",
    "Convergence",
    "Diagnostics",
    "EvidenceRecord",
    "EvidenceRun",
    "Hyperparameters",
    "Inducing",
    "Optimizer",
    "ReferenceEvidence",
    "Timings",
]


@dataclass(frozen=True)
class Hyperparameters:
    """The hyperparameters a job ran at (JSON: ``{"names", "values", "from"}``).

    Attributes
    ----------
    names : tuple of str
        Kernel hyperparameter names (``log_lengthscale``, ``log_variance``, ...), then
        ``mean`` for a constant prior mean. A sparse engine's inducing inputs are in
        :class:`Inducing`, not here.
    values : tuple of float
        Their values (log scale for the kernel's), one per name.
    origin : str
        Who chose them (JSON ``from``): ``"own"`` (this job's search), ``"fixed"`` (the
        study's values), ``"grid"`` (a grid point) or the label of the source engine whose
        job selected them.
    """

    names: tuple[str, ...]
    values: tuple[float, ...]
    origin: str

    @classmethod
    def read(cls, r: Reader) -> Hyperparameters:
        names, values = r.texts("names"), r.numbers("values")
        if len(names) != len(values):
            raise RecordError(f"{r.where!r}: {len(names)} names but {len(values)} values")
        return cls(names, values, r.text("from"))

    def as_dict(self) -> dict[str, float]:
        """``{name: value}``."""
        return dict(zip(self.names, self.values, strict=True))

    def to_dict(self) -> dict[str, Any]:
        return {"names": list(self.names), "values": list(self.values), "from": self.origin}


@dataclass(frozen=True)
class Timings:
    """Wall-clock seconds of a job's parts.

    Attributes
    ----------
    fit_seconds : float
        One fit at the hyperparameters used (an evidence job: the whole estimate).
    predict_seconds : float
        The predictions at the test inputs.
    select_seconds : float or None
        The hyperparameter search, when this job ran one (0 otherwise); None in records
        written before it was timed apart from the fit (the fit's time then includes it).
    peak_memory_mb : float or None
        Peak resident memory of the fit and predictions above the worker's at the start,
        in MiB; None where it was not measured.
    """

    fit_seconds: float
    predict_seconds: float
    select_seconds: float | None = None
    peak_memory_mb: float | None = None

    @classmethod
    def read(cls, r: Reader) -> Timings:
        return cls(
            r.number("fit_seconds"),
            r.number("predict_seconds"),
            r.number("select_seconds", optional=True),
            r.number("peak_memory_mb", optional=True),
        )

    def to_dict(self) -> dict[str, Any]:
        out = {"fit_seconds": self.fit_seconds}
        if self.select_seconds is not None:
            out["select_seconds"] = self.select_seconds
        out["predict_seconds"] = self.predict_seconds
        if self.peak_memory_mb is not None:
            out["peak_memory_mb"] = self.peak_memory_mb
        return out


@dataclass(frozen=True)
class Convergence:
    """Whether the fit converged (:meth:`gpc_compare.posterior.Posterior.record`).

    Attributes
    ----------
    converged : bool
        The engine's own test (an evidence job: its standard error within ``se_max``).
    iterations : int
        The engine's iterations (an evidence job: its temperatures or SMC steps).
    factorizations : int or None
        Cholesky factorisations, where the engine counts them.
    extra : dict
        Any other facts the engine gives.
    """

    converged: bool
    iterations: int
    factorizations: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, r: Reader) -> Convergence:
        return cls(
            r.flag("converged"),
            r.integer("iterations"),
            r.integer("factorizations", optional=True),
            r.rest(),
        )

    def to_dict(self) -> dict[str, Any]:
        return json_part(self)


@dataclass(frozen=True)
class Optimizer:
    """The hyperparameter search of a job that selected its own values.

    Attributes
    ----------
    objective : str
        ``"evidence"``, ``"loo"`` or ``"loo_fixed_sites"``.
    best_value : float
        The objective at the values selected.
    converged : bool
        Whether the best run's optimiser converged.
    evaluations : int
        Objective evaluations over all runs.
    runs : int
        Runs (the first start and the restarts).
    """

    objective: str
    best_value: float
    converged: bool
    evaluations: int
    runs: int

    @classmethod
    def read(cls, r: Reader) -> Optimizer:
        return cls(
            r.text("objective"),
            r.number("best_value"),
            r.flag("converged"),
            r.integer("evaluations"),
            r.integer("runs"),
        )

    def to_dict(self) -> dict[str, Any]:
        return json_part(self)


@dataclass(frozen=True)
class EvidenceRun:
    """One estimate of a gold-standard evidence job (the first, or the one made again).

    Attributes
    ----------
    temperatures : int
        AIS's temperatures, or the length of SMC's adaptive schedule.
    log_evidence, se : float
        The estimate and its standard error across runs.
    seconds : float
        Its wall time.
    runs : int or None
        Independent runs (SMC's; AIS's records leave it out).
    extra : dict
        Any other facts the estimator gives.
    """

    temperatures: int
    log_evidence: float
    se: float
    seconds: float
    runs: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, r: Reader) -> EvidenceRun:
        return cls(
            r.integer("temperatures"),
            r.number("log_evidence"),
            r.number("se"),
            r.number("seconds"),
            r.integer("runs", optional=True),
            r.rest(),
        )

    def to_dict(self) -> dict[str, Any]:
        out = {"temperatures": self.temperatures}
        if self.runs is not None:
            out["runs"] = self.runs
        out.update(log_evidence=self.log_evidence, se=self.se, seconds=self.seconds)
        return {**out, **self.extra}


@dataclass(frozen=True)
class EvidenceRecord:
    """What a gold-standard evidence job (``[evidence.NAME]``: AIS or SMC) records.

    Attributes
    ----------
    method : str
        ``"ais"`` or ``"smc"``.
    start : str
        Where the path started: ``"ep"`` or ``"prior"``.
    start_log_evidence : float or None
        EP's evidence at these hyperparameters (None from the prior without EP).
    runs : tuple of EvidenceRun
        The first estimate, and the second where the first was rechecked (the last is the
        job's ``log_evidence``).
    recheck : str or None
        Why the estimate was made again, or None.
    health : dict or None
        The estimator's own health record (SMC: ``steps``, ``ess_min``, ``capped``, ...).
    extra : dict
        Any other facts the estimator gives.
    """

    method: str
    start: str
    start_log_evidence: float | None
    runs: tuple[EvidenceRun, ...]
    recheck: str | None = None
    health: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, r: Reader) -> EvidenceRecord:
        method, start = r.text("method"), r.text("start")
        start_log_evidence = r.number("start_log_evidence", optional=True)
        runs = tuple(
            EvidenceRun.read(Reader(run, f"{r.name('runs')}[{i}]", r.notes))
            for i, run in enumerate(r.items("runs"))
        )
        if not runs:
            raise RecordError(f"{r.name('runs')!r} is empty: an evidence job has an estimate")
        return cls(
            method,
            start,
            start_log_evidence,
            runs,
            r.text("recheck", optional=True),
            r.mapping("health", optional=True),
            r.rest(),
        )

    def to_dict(self) -> dict[str, Any]:
        out = {
            "method": self.method,
            "start": self.start,
            "start_log_evidence": self.start_log_evidence,
            "runs": [run.to_dict() for run in self.runs],
            "recheck": self.recheck,
        }
        if self.health is not None:
            out["health"] = dict(self.health)
        return {**out, **self.extra}


@dataclass(frozen=True)
class ReferenceEvidence:
    """The estimator behind a sampling engine's evidence (MCMC with ``evidence = true``:
    :meth:`gpc_compare.evidence.EvidenceEstimate.record`).

    Attributes
    ----------
    method : str
        ``"smc"`` or ``"ais"``.
    start : str
        ``"ep"`` or ``"prior"``.
    log_evidence : float
        The estimate.
    standard_error, start_log_evidence, seconds : float or None
        Its standard error, EP's evidence where it started, its wall time.
    health : dict or None
        The estimator's own health record.
    extra : dict
        Any other facts the estimator gives.
    """

    method: str
    start: str
    log_evidence: float
    standard_error: float | None = None
    start_log_evidence: float | None = None
    seconds: float | None = None
    health: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, r: Reader) -> ReferenceEvidence:
        return cls(
            r.text("method"),
            r.text("start"),
            r.number("log_evidence"),
            r.number("standard_error", optional=True),
            r.number("start_log_evidence", optional=True),
            r.number("seconds", optional=True),
            r.mapping("health", optional=True),
            r.rest(),
        )

    def to_dict(self) -> dict[str, Any]:
        out = json_part(self)
        out["start_log_evidence"] = self.start_log_evidence
        return out


@dataclass(frozen=True)
class Diagnostics:
    """An MCMC fit's convergence diagnostics (:class:`gpc_compare.diagnostics.Diagnostics`).

    Attributes
    ----------
    r_hat_max : float
        Largest rank-normalised split R-hat.
    ess_bulk_min, ess_tail_min : float
        Smallest bulk and tail effective sample sizes.
    divergences : int
        Divergent transitions after tuning.
    passed : bool
        Whether every check passed.
    message : str
        What failed, or that all passed.
    sampler, fallback, parameterization : str or None
        The NUTS implementation, why the requested one was replaced (empty: it was not),
        the coordinates sampled; None in records written before they were recorded.
    extra : dict
        Any other facts the engine gives.
    """

    r_hat_max: float
    ess_bulk_min: float
    ess_tail_min: float
    divergences: int
    passed: bool
    message: str = ""
    sampler: str | None = None
    fallback: str | None = None
    parameterization: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, r: Reader) -> Diagnostics:
        head = (
            r.number("r_hat_max"),
            r.number("ess_bulk_min"),
            r.number("ess_tail_min"),
            r.integer("divergences"),
            r.flag("passed"),
        )
        message = r.text("message", optional=True) or ""
        tail = [r.text(k, optional=True) for k in ("sampler", "fallback", "parameterization")]
        return cls(*head, message, *tail, r.rest())

    def to_dict(self) -> dict[str, Any]:
        return json_part(self)


@dataclass(frozen=True)
class Inducing:
    """A sparse engine's inducing inputs.

    Attributes
    ----------
    M : int
        How many.
    optimized : bool
        Whether they were fitted (then they are hyperparameters too).
    jitter : float
        The jitter added to K_uu.
    values : list of list of float
        The inputs, (M, d), on the standardised scale of the training fold.
    """

    M: int
    optimized: bool
    jitter: float
    values: list[list[float]]

    @classmethod
    def read(cls, r: Reader) -> Inducing:
        values = r.items("values")
        if not all(isinstance(z, list) for z in values):
            raise RecordError(f"{r.name('values')!r} is not a list of inputs")
        return cls(r.integer("M", minimum=0), r.flag("optimized"), r.number("jitter"), values)

    def to_dict(self) -> dict[str, Any]:
        return json_part(self)


#: The per-case arrays of a held-out job, JSON names.
_ARRAYS = ("y_test", "log_p_test", "mean_test", "var_test", "mean_train", "var_train")


@dataclass(frozen=True)
class Arrays:
    """A held-out job's per-case arrays (JSON lists), for the report's bootstrap and the
    comparisons with the reference.

    Attributes
    ----------
    y_test : list of int
        Test labels (class indices with C classes).
    log_p_test : list of float
        log p(y* | x*, data) of each test label.
    mean_test, var_test : list
        Latent mean and variance at the test inputs (one list of C per case with C
        classes).
    mean_train, var_train : list
        The same at the training inputs.
    p1_test : list of float or None
        P(y* = 1) (binary).
    proba_test : list of list of float or None
        Class probabilities, one list of C per case (C classes).
    """

    y_test: list[int]
    log_p_test: list[float]
    mean_test: list[Any]
    var_test: list[Any]
    mean_train: list[Any]
    var_train: list[Any]
    p1_test: list[float] | None = None
    proba_test: list[list[float]] | None = None

    @classmethod
    def read(cls, r: Reader) -> Arrays:
        got = {k: r.items(k) for k in _ARRAYS}
        got["p1_test"], got["proba_test"] = r.items("p1_test", True), r.items("proba_test", True)
        if (got["p1_test"] is None) == (got["proba_test"] is None):
            raise RecordError(f"{r.where!r} needs p1_test (two classes) or proba_test (C)")
        for key, value in got.items():
            if value is None:
                continue
            if key in ("y_test", "log_p_test", "p1_test", "proba_test") and len(value) != len(
                got["y_test"]
            ):
                raise RecordError(f"{r.name(key)!r} has not one entry per test case")
            got[key] = numeric(value, r, key)
        return cls(**got)

    def to_dict(self) -> dict[str, Any]:
        return json_part(self)

    @property
    def multiclass(self) -> bool:
        """Whether the job has C classes (class probabilities, not P(y = 1))."""
        return self.proba_test is not None
