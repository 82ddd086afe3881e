"""A job's record as a typed object: :class:`JobRecord`, its parts, and its JSON schema.

A record is what one job leaves behind (``jobs/ID.json``): who ran (identity, versions,
policy), what came out (hyperparameters, convergence, evidence, metrics, per-case arrays)
and how long it took. :meth:`JobRecord.from_dict` is the one reader, for the worker's own
results and for the files on disk alike: it checks every field it reads and raises a
:class:`RecordError` naming the first that does not follow the schema, so a damaged
record is set aside (:func:`gpc_compare.study.records.read_records`) instead of failing
every later run with a KeyError.

The schema (version :data:`SCHEMA_VERSION`, written as ``"schema"``; a record without it
is version 1, the layout every earlier release wrote):

- every record: ``id``, ``study``, ``dataset``, ``engine``, ``likelihood``, ``policy``
  (strings), ``split``, ``seed`` (integers), ``versions`` (an object of strings) and
  ``status`` (``"ok"``, ``"failed"`` or ``"skipped"``); a failed or skipped job also an
  ``error`` (a string);
- a finished (``"ok"``) job also ``d``, ``n_train``, ``n_test`` (integers >= 0),
  ``base_rate``, ``metrics`` (an object of numbers, not empty when ``n_test`` > 0; a
  sampling reference's ``mcse``, an object of numbers: the Monte Carlo standard error of
  some of them),
  ``hyperparameters`` (``names`` and ``values`` of one length, ``from``), ``timings``
  (``fit_seconds`` and ``predict_seconds`` at least) and ``convergence`` (``converged``, a
  boolean, and ``iterations``, an integer);
- the optional parts, when present, follow their own classes' fields;
- a number may be NaN; an infinite one (``1e999``, ``Infinity``) is read as NaN and said
  in :attr:`JobRecord.notes`;
- fields the schema does not name (an engine's own facts) are kept as they are
  (:attr:`JobRecord.extra`, and each part's ``extra``), so a newer engine's record still
  loads;
- a record of a newer schema than this code reads is refused (set aside, and its job
  recomputed here).
"""

from ._reader import SCHEMA_VERSION, STATUSES, RecordError
from .job import JobRecord
from .parts import (
    Arrays,
    Convergence,
    Diagnostics,
    EvidenceRecord,
    EvidenceRun,
    Hyperparameters,
    Inducing,
    Optimizer,
    ReferenceEvidence,
    Timings,
)

__all__ = [
    "SCHEMA_VERSION",
    "STATUSES",
    "Arrays",
    "Convergence",
    "Diagnostics",
    "EvidenceRecord",
    "EvidenceRun",
    "Hyperparameters",
    "Inducing",
    "JobRecord",
    "Optimizer",
    "RecordError",
    "ReferenceEvidence",
    "Timings",
]
