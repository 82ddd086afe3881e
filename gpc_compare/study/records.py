"""Job records on disk: written atomically as each job finishes, read back by id and checked
against the schema (:class:`~gpc_compare.study.record.JobRecord`)."""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..provenance import versions
from .jobs import Job
from .kernels_config import kernel_column
from .output import atomic_write, output_folder
from .record import JobRecord, RecordError

__all__ = [
    "Damaged",
    "atomic_write",
    "check_record",
    "failed_dependency",
    "failure_record",
    "inside",
    "job_record",
    "load_records",
    "read_record",
    "read_records",
    "remove_temporaries",
    "save_record",
    "set_aside",
]


def save_record(record: JobRecord, jobs_dir: Path) -> JobRecord:
    """Write a job's record as ``jobs_dir/ID.json`` (its InferenceData, if any, first as
    ``ID.nc``: a record on disk means the job is complete); the record as written (naming
    its ``idata`` file, without the NetCDF bytes). Both replace whatever their names were
    (:func:`~.output.atomic_write`); a ``jobs_dir`` that is a symbolic link is refused."""
    output_folder(jobs_dir)
    if record.netcdf is not None:  # before the record: a record on disk means it is complete
        atomic_write(inside(jobs_dir, f"{record.id}.nc"), record.netcdf)
        record = record.replace(idata=f"{record.id}.nc", netcdf=None)
    atomic_write(inside(jobs_dir, f"{record.id}.json"), record.to_json().encode())
    return record


@dataclass(frozen=True)
class Damaged:
    """A job record that cannot be used: its file and why."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path.parent.name}/{self.path.name}: {self.reason}"


def read_record(path: Path) -> JobRecord:
    """The record in ``path`` (``jobs/ID.json``), checked: the schema
    (:meth:`JobRecord.from_dict`), then :func:`check_record`.

    Raises
    ------
    RecordError
        Saying why the record cannot be used (not UTF-8, not JSON, unreadable, a field
        that does not follow the schema, ...).
    """
    if not path.is_file():  # (a FIFO would block the read; a folder has no record)
        raise RecordError("not a regular file")
    try:
        raw = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise RecordError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise RecordError(f"not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except OSError as exc:
        raise RecordError(f"cannot be read ({exc.strerror or exc})") from None
    except RecursionError:
        raise RecordError("nested too deep to read") from None
    if not isinstance(raw, dict):
        raise RecordError(f"not a JSON object but {type(raw).__name__}")
    record = JobRecord.from_dict(raw)
    reason = check_record(record, path)
    if reason is not None:
        raise RecordError(reason)
    return record


def check_record(record: JobRecord, path: Path) -> str | None:
    """Why ``record``, read from ``path`` (``jobs/ID.json``), cannot be used, or None: the
    checks beyond the schema's (its id is its file name's; a sampler's InferenceData file
    ``ID.nc``, when present, opens)."""
    if record.id != path.stem:
        return f"its id {record.id!r} is not its file name's"
    if record.ok and record.idata is not None:
        if record.idata != f"{record.id}.nc":  # (never a path read from a file)
            return f"its InferenceData is named {record.idata!r}, not {record.id}.nc"
        return _check_netcdf(path.with_name(record.idata))
    return None


def _check_netcdf(path: Path) -> str | None:
    """Why the NetCDF (HDF5) file at ``path`` cannot be read, or None: damaged (truncated:
    HDF5 records the file's length in its superblock). A missing file is no damage: the
    results shipped in the repository leave the draws out (their records hold what the
    table needs), and the report then skips the rank plots."""
    if not path.exists():
        return None
    try:
        import h5py  # (ArviZ's NetCDF backend, h5netcdf, is built on it)

        with h5py.File(path, "r") as fh:
            groups = set(fh)
    except ImportError:  # pragma: no cover - h5netcdf brings h5py
        return None
    except (OSError, ValueError) as exc:
        return f"its InferenceData {path.name} cannot be read ({exc})"
    if "posterior" not in groups:
        return f"its InferenceData {path.name} has no posterior group"
    return None


def read_records(
    result_dir: str | os.PathLike[str],
) -> tuple[dict[str, JobRecord], list[Damaged]]:
    """The job records under ``result_dir/jobs`` by id, and those that cannot be used.

    A record that does not parse (not JSON, not UTF-8, unreadable) or does not follow the
    schema (:func:`read_record`) is listed as :class:`Damaged`, not returned.

    Parameters
    ----------
    result_dir : path
        A study's result directory.

    Returns
    -------
    records : dict of str to JobRecord
        The usable records, by job id.
    damaged : list of Damaged
        The record files that cannot be used, each with the reason.
    """
    records, damaged = {}, []
    for path in sorted(Path(result_dir, "jobs").glob("*.json")):
        try:
            record = read_record(path)
        except RecordError as exc:
            damaged.append(Damaged(path, str(exc)))
            continue
        records[record.id] = record
    return records, damaged


def load_records(result_dir: str | os.PathLike[str]) -> dict[str, JobRecord]:
    """The usable job records under ``result_dir/jobs``, by job id (see :func:`read_records`
    for those that are not).

    Parameters
    ----------
    result_dir : path
        A study's result directory.

    Returns
    -------
    dict of str to JobRecord
        The usable records, by job id.
    """
    return read_records(result_dir)[0]


def set_aside(damaged: Damaged) -> Path:
    """Rename a damaged record (and its InferenceData) to ``NAME.damaged`` (``.damaged2``,
    ... if taken), so that its job is recomputed and nothing is deleted; the new path."""
    targets = []
    for path in (damaged.path, damaged.path.with_suffix(".nc")):
        if not path.exists():
            continue
        k, target = 1, path.with_name(path.name + ".damaged")
        while target.exists():
            k += 1
            target = path.with_name(f"{path.name}.damaged{k}")
        os.replace(path, target)
        targets.append(target)
    return targets[0] if targets else damaged.path


def remove_temporaries(result_dir: str | os.PathLike[str]) -> list[Path]:
    """Delete the temporaries (``.NAME.PID.tmp``) a run stopped mid-write left behind (a
    full disk, a kill): only under a run's lock, when no other run is writing."""
    removed = []
    root = Path(result_dir)
    jobs = [] if (root / "jobs").is_symlink() else root.glob("jobs/.*.tmp")  # (not outside)
    for path in [*root.glob(".*.tmp"), *jobs]:
        path.unlink(missing_ok=True)
        removed.append(path)
    return removed


def inside(root: str | os.PathLike[str], *parts: str) -> Path:
    """``root / parts...``, checked to lie inside ``root`` before anything is written there
    (a ValueError otherwise: names in a study become paths). The check is on the names
    (``..``, absolute paths), so a folder the user made a symbolic link still works."""
    base = os.path.normpath(os.path.abspath(root))
    path = os.path.normpath(os.path.join(base, *parts))
    if path == base or not path.startswith(base.rstrip(os.sep) + os.sep):
        raise ValueError(f"refusing to write {path}: it is not inside {root}")
    return Path(root, *parts)


def job_record(
    job: Job, status: str, facts: Mapping[str, Any] | None = None, **fields: Any
) -> JobRecord:
    """The record of ``job``, the one place a record is made: its identity, ``status``
    (``"ok"``, ``"failed"``, ``"skipped"``), the results ``facts`` in the JSON layout
    (:meth:`JobRecord.from_dict`'s, as the worker measures them) and any other ``fields``
    (``error``, ``traceback``, ``started``, ``finished``, ``host``, ``netcdf``).

    Raises
    ------
    RecordError
        Where the facts do not follow the schema.
    """
    identity = {
        "id": job.id,
        "study": job.study,
        "dataset": job.dataset.label,
        "split": job.split,
        "kernel": kernel_column(job.kernel_label, job.kernel),
        "engine": job.engine,
        "method": job.method,
        "likelihood": job.likelihood,
        "policy": job.policy,
        "seed": job.seed,
        "options": dict(job.options),
        "versions": versions(),
    }
    netcdf = fields.pop("netcdf", None)
    raw = {**identity, **{k: v for k, v in fields.items() if v is not None}, **(facts or {})}
    return JobRecord.from_dict({**raw, "status": status}).replace(netcdf=netcdf)


def failure_record(job: Job, exc: BaseException) -> JobRecord:
    """The record of a job whose worker died or that could not run: status ``"failed"``,
    the error and its traceback."""
    return job_record(
        job,
        "failed",
        error=f"{type(exc).__name__}: {exc}",
        traceback="".join(traceback.format_exception(exc)),
    )


def failed_dependency(
    job: Job, source: Job | None, source_record: JobRecord | None = None
) -> JobRecord:
    """The record of a job not run because the job whose hyperparameters it needs failed
    (status "failed"), or was skipped as too large for its engine (status "skipped", the
    same reason)."""
    what = source.describe() if source is not None else job.depends_on
    if source_record is not None and source_record.status == "skipped":
        reason = (source_record.error or "").removeprefix("skipped: ")
        error = f"skipped: it needs the hyperparameters of {what}, which was skipped ({reason})"
        return job_record(job, "skipped", error=error)
    exc = RuntimeError(f"not run: it needs the hyperparameters of {what}, which failed")
    return failure_record(job, exc)
