"""The job record: :class:`JobRecord`, read with its schema checked, written as JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ._reader import SCHEMA_VERSION, STATUSES, Reader, RecordError, show
from .parts import (
    Arrays,
    Convergence,
    Diagnostics,
    EvidenceRecord,
    Hyperparameters,
    Inducing,
    Optimizer,
    ReferenceEvidence,
    Timings,
)

__all__ = ["JobRecord"]


#: JSON fields of a record in the order they are written, by the part of the record.
_IDENTITY = (
    "id",
    "study",
    "dataset",
    "split",
    "kernel",
    "engine",
    "method",
    "likelihood",
    "policy",
    "seed",
    "options",
    "versions",
    "host",
    "started",
)
_PARTS = {
    "hyperparameters": Hyperparameters,
    "timings": Timings,
    "convergence": Convergence,
    "optimizer": Optimizer,
    "evidence": EvidenceRecord,
    "reference_evidence": ReferenceEvidence,
    "diagnostics": Diagnostics,
    "inducing": Inducing,
    "arrays": Arrays,
}
#: The parts every finished job has.
_REQUIRED_OK = ("hyperparameters", "timings", "convergence")


@dataclass(frozen=True)
class JobRecord:
    """What one job of a study leaves behind (``jobs/ID.json``), typed.

    Build one from JSON with :meth:`from_dict` / :meth:`from_json` (which check the schema:
    see the module's docstring) and write it with :meth:`to_dict` / :meth:`to_json`.

    Parameters
    ----------
    id : str
        The job's id (its file name): a hash of everything that determines its result.
    study, dataset, engine : str
        The study's name, the data set's label and the engine's label.
    split : int
        The split (cross-validation fold or holdout repeat).
    likelihood : str
        ``"probit"``, ``"logistic"`` or ``"softmax"``.
    policy : str
        The study's hyperparameter policy (``"optimize"``, ``"shared"``, ...).
    seed : int
        The job's seed (restarts, samplers).
    versions : dict
        Package versions that ran the job.
    status : str
        ``"ok"``, ``"failed"`` or ``"skipped"`` (too large for its engine).
    kernel : str or None
        The kernel's column in the table (a kernel axis' label, else the kernel's name);
        None in records written before it was recorded.
    method : str or None
        The engine behind the label (None in the record of a job that did not run).
    options : dict
        The engine's or estimator's options.
    host : str or None
        The machine that ran the job.
    started, finished : float or None
        Unix times.
    error, traceback : str or None
        A failed or skipped job's reason, and a failure's traceback.
    d, n_train, n_test : int or None
        Inputs and training and test cases (a finished job).
    base_rate : float or None
        Fraction of training cases in class 1.
    metrics : dict of str to float
        Held-out scores (:func:`gpc_compare.metrics.score`); empty without a test set.
    mcse : dict of str to float
        A sampling reference's Monte Carlo standard error of some of its scores
        (``mean_log_predictive``: :func:`gpc_compare.metrics.joint_mean_log_predictive_mcse`).
    psis : dict of str to float
        The Pareto-k check of a Gaussian approximation (:func:`gpc_compare.psis`):
        ``pareto_k``, ``khat_threshold``, ``ess``, ``draws``, ``log_evidence`` and
        ``log_evidence_se`` (importance sampling), ``mean_log_predictive`` (the
        importance-corrected held-out score) and ``seconds``; empty when not run.
    hyperparameters : Hyperparameters or None
        The values used and who selected them.
    timings : Timings or None
    convergence : Convergence or None
    log_evidence : float or None
        The engine's log evidence on the training fold (None where it gives none).
    log_evidence_se : float or None
        Its standard error (a sampling estimate's), None for a deterministic one.
    loo_log_predictive : float or None
        EP's leave-one-out predictive log likelihood of the training fold.
    optimizer : Optimizer or None
        The hyperparameter search, when the job ran one.
    evidence : EvidenceRecord or None
        A gold-standard evidence job's estimates and health.
    reference_evidence : ReferenceEvidence or None
        The estimator behind a sampling engine's evidence.
    diagnostics : Diagnostics or None
        A sampling engine's convergence diagnostics.
    inducing : Inducing or None
        A sparse engine's inducing inputs.
    arrays : Arrays or None
        Per-case arrays of a held-out job.
    warnings : tuple of str
        Warnings raised during the job.
    idata : str or None
        The file of its InferenceData beside the record (``ID.nc``), for a sampler.
    notes : tuple of str
        What a reader changed (an infinite number read as NaN): found when the file was
        read, or when the worker made the record (then written with it, as ``notes``).
    extra : dict
        Fields the schema does not name (an engine's own facts), kept as they are.
    schema : int
        The layout's version (:data:`SCHEMA_VERSION`).
    netcdf : bytes or None
        The InferenceData as NetCDF, between the worker and the file ``idata`` only: never
        in the JSON.
    """

    id: str
    study: str
    dataset: str
    split: int
    engine: str
    likelihood: str
    policy: str
    seed: int
    versions: Mapping[str, str]
    status: str
    kernel: str | None = None
    method: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    host: str | None = None
    started: float | None = None
    finished: float | None = None
    error: str | None = None
    traceback: str | None = None
    d: int | None = None
    n_train: int | None = None
    n_test: int | None = None
    base_rate: float | None = None
    metrics: Mapping[str, float] = field(default_factory=dict)
    mcse: Mapping[str, float] = field(default_factory=dict)
    psis: Mapping[str, float] = field(default_factory=dict)
    hyperparameters: Hyperparameters | None = None
    timings: Timings | None = None
    convergence: Convergence | None = None
    log_evidence: float | None = None
    log_evidence_se: float | None = None
    loo_log_predictive: float | None = None
    optimizer: Optimizer | None = None
    evidence: EvidenceRecord | None = None
    reference_evidence: ReferenceEvidence | None = None
    diagnostics: Diagnostics | None = None
    inducing: Inducing | None = None
    arrays: Arrays | None = None
    warnings: tuple[str, ...] = ()
    idata: str | None = None
    notes: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    schema: int = SCHEMA_VERSION
    netcdf: bytes | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """Whether the job finished."""
        return self.status == "ok"

    # ------------------------------------------------------------------ reading
    @classmethod
    def from_json(cls, text: str | bytes) -> JobRecord:
        """A record from its JSON text (see :meth:`from_dict`).

        Parameters
        ----------
        text : str or bytes
            The record file's content.

        Returns
        -------
        JobRecord

        Raises
        ------
        RecordError
            For text that is not JSON, or a record that does not follow the schema.
        """
        try:
            raw = json.loads(text)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RecordError(f"not valid JSON ({exc})") from None
        return cls.from_dict(raw)

    @classmethod
    def from_dict(cls, raw: Any) -> JobRecord:
        """A record from its JSON object (a dict, as :func:`json.loads` gives it).

        Parameters
        ----------
        raw : object
            The parsed JSON.

        Returns
        -------
        JobRecord

        Raises
        ------
        RecordError
            Naming the first field that does not follow the schema (the module's
            docstring); a record of a newer schema than this code reads is refused too.
        """
        notes: list[str] = []
        r = Reader(raw, "", notes)
        notes += r.texts("notes", optional=True)  # (earlier readers', e.g. the worker's)
        schema = r.integer("schema", optional=True, minimum=1) or 1
        if schema > SCHEMA_VERSION:
            raise RecordError(
                f"schema {schema} is newer than this gpc_compare's ({SCHEMA_VERSION})"
            )
        status = r.text("status")
        if status not in STATUSES:
            raise RecordError(f"status {status!r} is not 'ok', 'failed' or 'skipped'")
        ok = status == "ok"
        values: dict[str, Any] = {
            "id": r.text("id"),
            "study": r.text("study"),
            "dataset": r.text("dataset"),
            "split": r.integer("split", minimum=0),
            "engine": r.text("engine"),
            "likelihood": r.text("likelihood"),
            "policy": r.text("policy"),
            "seed": r.integer("seed"),
            "versions": _versions(r),
            "status": status,
            "kernel": r.text("kernel", True),
            "method": r.text("method", True),
            "options": r.mapping("options", True) or {},
            "host": r.text("host", True),
            "started": r.number("started", True),
            "finished": r.number("finished", True),
            "error": r.text("error", ok),
            "traceback": r.text("traceback", True),
            "d": r.integer("d", not ok, 0),
            "n_train": r.integer("n_train", not ok, 0),
            "n_test": r.integer("n_test", not ok, 0),
            "base_rate": r.number("base_rate", not ok),
            "metrics": _metrics(r, ok),
            "mcse": _numbers(r, "mcse"),
            "psis": _numbers(r, "psis"),
            "log_evidence": r.number("log_evidence", True),
            "log_evidence_se": r.number("log_evidence_se", True),
            "loo_log_predictive": r.number("loo_log_predictive", True),
            "warnings": r.texts("warnings", True),
            "idata": r.text("idata", True),
            "schema": schema,
        }
        for key, part in _PARTS.items():
            sub = r.obj(key, optional=not (ok and key in _REQUIRED_OK))
            values[key] = None if sub is None else part.read(sub)
        if ok and values["n_test"] > 0 and not values["metrics"]:
            raise RecordError(f"'metrics' is empty for a job with {values['n_test']} test cases")
        return cls(**values, extra=r.rest(), notes=tuple(notes))

    # ------------------------------------------------------------------ writing
    def to_dict(self) -> dict[str, Any]:
        """The record as a JSON-ready dict (what :meth:`from_dict` reads back).

        Returns
        -------
        dict
        """
        out: dict[str, Any] = {"schema": self.schema}
        for key in _IDENTITY:
            value = getattr(self, key)
            if value is not None:
                out[key] = dict(value) if isinstance(value, Mapping) else value
        if self.ok:
            out.update(
                n_train=self.n_train,
                n_test=self.n_test,
                d=self.d,
                base_rate=self.base_rate,
                metrics=dict(self.metrics),
            )
            for key in ("mcse", "psis"):
                if getattr(self, key):
                    out[key] = dict(getattr(self, key))
        for key in ("hyperparameters", "timings"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key).to_dict()
        if self.ok:
            out["warnings"] = list(self.warnings)
        for key in _PARTS:
            if key not in out and getattr(self, key) is not None:
                out[key] = getattr(self, key).to_dict()
        if self.ok:
            out.update(log_evidence=self.log_evidence, log_evidence_se=self.log_evidence_se)
        if self.loo_log_predictive is not None:
            out["loo_log_predictive"] = self.loo_log_predictive
        out.update(self.extra)
        if self.notes:
            out["notes"] = list(self.notes)
        for key in ("idata", "status", "error", "traceback", "finished"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out

    def to_json(self) -> str:
        """The record as JSON text (NaN written as ``NaN``, as :mod:`json` does).

        Returns
        -------
        str
        """
        return json.dumps(self.to_dict(), indent=1, allow_nan=True)

    def replace(self, **changes: Any) -> JobRecord:
        """A copy with ``changes`` (:func:`dataclasses.replace`).

        Parameters
        ----------
        **changes
            Field name -> new value.

        Returns
        -------
        JobRecord
        """
        return replace(self, **changes)


def _versions(r: Reader) -> dict[str, str]:
    versions = r.mapping("versions")
    bad = [k for k, v in versions.items() if not isinstance(v, str)]
    if bad:
        raise RecordError(f"'versions.{bad[0]}' is {show(versions[bad[0]])}, not a string")
    return versions


def _numbers(r: Reader, key: str) -> dict[str, float]:
    """An optional object of numbers (NaN allowed, infinities read as NaN)."""
    sub = r.obj(key, optional=True)
    return {} if sub is None else {name: sub.number(name) for name in sub.raw}


def _metrics(r: Reader, ok: bool) -> dict[str, float]:
    """The held-out scores: an object of numbers (NaN allowed, infinities read as NaN)."""
    metrics = r.obj("metrics", optional=not ok)
    if metrics is None:
        return {}
    return {key: metrics.number(key) for key in metrics.raw}
