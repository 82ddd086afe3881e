"""A study's gold-standard evidence estimators: ``[evidence.NAME]`` tables.

Each table is checked by building the :class:`~gpc_compare.annealing.options.EvidenceOptions`
record it stands for (whose defaults and checks it takes), and becomes a job's options:
a dict of the table's fields with the record's values filled in, laid out as it always
was (so the jobs' ids, which hash it, stay as they were). :func:`evidence_options` turns
a job's options back into the record, for the worker.

- ``[evidence.ais]``: ``start``, ``temperatures``, ``runs``, ``se_max`` and an optional
  ``[evidence.ais.recheck]`` table (``temperatures``, ``z``, ``nats``): without one, the
  first anneal is final. Its counts are TOML integers.
- ``[evidence.smc]``: ``start``, ``particles``, ``runs``, ``moves``, ``sweeps``, ``cess``,
  ``se_max`` and ``recheck_runs`` (the runs of a second estimate where the first's
  standard error exceeds ``se_max``; 0: never). SMC's recheck does not compare with EP.

A table named otherwise says ``method = "ais"`` or ``"smc"``. Errors are ValueErrors whose
message starts with the field (``evidence.ais.runs: ...``);
:func:`gpc_compare.study.load_study` prefixes the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from .._validation import OptionError
from ..annealing.options import EvidenceOptions, Recheck

__all__ = ["EVIDENCE_METHODS", "evidence_options", "parse_evidence"]

#: Gold-standard evidence estimators a study may run beside its engines (``[evidence.NAME]``).
EVIDENCE_METHODS = ("ais", "smc")
#: Each table's fields, in the order a job's options hold them (``method`` follows).
TABLE_FIELDS = {
    "ais": ("start", "temperatures", "runs", "se_max", "recheck"),
    "smc": ("start", "particles", "runs", "moves", "sweeps", "cess", "se_max", "recheck_runs"),
}
#: The fields of ``[evidence.NAME.recheck]`` (AIS).
RECHECK_FIELDS = ("temperatures", "z", "nats")
#: A record's field as a table names it, where the names differ.
_TABLE_NAMES = {"recheck.se_max": "se_max", "recheck.runs": "recheck_runs"}


def parse_evidence(
    value: Any, policy: str | None, engine_labels: list[str]
) -> dict[str, dict[str, Any]]:
    """The ``[evidence.NAME]`` tables, checked, as each estimator's job options."""
    if not isinstance(value, dict):
        raise ValueError("evidence: must hold one table per estimator, e.g. [evidence.ais]")
    if value and policy == "full_bayes":
        raise ValueError("evidence: a gold-standard evidence needs fixed hyperparameters")
    out = {}
    for label, table in value.items():
        where = f"evidence.{label}"
        if not isinstance(table, dict):
            raise ValueError(f"{where}: must be a table of the estimator's options")
        if label in engine_labels:
            raise ValueError(
                f"{where}: {label!r} already names an engine: give the estimator another "
                "name (and method = 'ais')"
            )
        table = dict(table)
        method = table.pop("method", label)
        if method not in EVIDENCE_METHODS:
            raise ValueError(
                f"{where}: unknown evidence estimator {method!r}; known: {EVIDENCE_METHODS} "
                "(a table named otherwise needs method = ESTIMATOR)"
            )
        out[label] = _job_options(method, table, where)
    return out


def evidence_options(options: Mapping[str, Any]) -> EvidenceOptions:
    """The options record a job's options (or a table with its ``method``) stand for.

    Raises
    ------
    OptionError
        Naming the record's field (``recheck.runs`` for the table's ``recheck_runs``).
    """
    o = dict(options)
    method, table = o.pop("method"), o.pop("recheck", None)
    recheck = {"se_max": o.pop("se_max", None)}
    if method == "smc":  # (its recheck: more runs where the se exceeds se_max, nothing else)
        recheck.update(z=None, **({"runs": o.pop("recheck_runs")} if "recheck_runs" in o else {}))
    else:  # (a second anneal only with a [recheck] table)
        recheck.update(table if table is not None else {"temperatures": 0})
    return EvidenceOptions(estimator=method, recheck=recheck, **o)


def _job_options(method: str, table: dict[str, Any], where: str) -> dict[str, Any]:
    """One table checked (through its record) and filled in with the record's values."""
    _check_keys(table, TABLE_FIELDS[method], where)
    recheck = table.get("recheck")
    if recheck is not None:
        if not isinstance(recheck, dict):
            raise ValueError(f"{where}.recheck: must be a table (temperatures, z, nats)")
        _check_keys(recheck, RECHECK_FIELDS, f"{where}.recheck")
        _integers(recheck, ("temperatures",), Recheck, f"{where}.recheck")
    if method == "ais":
        _integers(table, ("temperatures", "runs"), EvidenceOptions, where)
    try:
        record = evidence_options({**table, "method": method})
    except OptionError as exc:
        name = _TABLE_NAMES.get(exc.option, exc.option)
        raise ValueError(f"{where}.{name}: {str(exc).removeprefix(exc.option + ' ')}") from None
    r = record.recheck
    again = None if recheck is None else {k: getattr(r, k) for k in RECHECK_FIELDS}
    own = {"se_max": r.se_max, "recheck_runs": r.runs, "recheck": again}
    out = {k: own[k] if k in own else getattr(record, k) for k in TABLE_FIELDS[method]}
    out["method"] = method
    if method == "smc":
        out["recheck"] = None  # (as its jobs' options always held it: no AIS-style table)
    return out


def _integers(table: Mapping[str, Any], keys: tuple[str, ...], record: type, where: str) -> None:
    """An AIS table's counts are TOML integers (not 16.0), at least the record's minimum."""
    minimum = {f.name: f.metadata.get("minimum") for f in fields(record)}
    for key in keys:
        value = table.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum[key]:
            raise ValueError(f"{where}.{key}: must be an integer >= {minimum[key]}, got {value!r}")


def _check_keys(table: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {unknown}; allowed: {sorted(allowed)}")
