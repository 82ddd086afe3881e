"""Job records on disk: written atomically as each job finishes, read back by id."""

from __future__ import annotations

import json
import os
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..provenance import versions
from .jobs import Job
from .kernels_config import kernel_column

__all__ = [
    "Damaged",
    "atomic_write",
    "check_record",
    "failed_dependency",
    "failure_record",
    "inside",
    "load_records",
    "read_records",
    "remove_temporaries",
    "save_record",
    "set_aside",
]


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader sees the old file or the new, never half."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def save_record(record: dict[str, Any], jobs_dir: Path) -> None:
    """Write a job's record as ``jobs_dir/ID.json`` (its InferenceData, if any, first as
    ``ID.nc``: a record on disk means the job is complete)."""
    idata = record.pop("_idata_netcdf", None)
    if idata is not None:  # before the record: a record on disk means the job is complete
        atomic_write(inside(jobs_dir, f"{record['id']}.nc"), idata)
        record["idata"] = f"{record['id']}.nc"
    text = json.dumps(record, indent=1, allow_nan=True)
    atomic_write(inside(jobs_dir, f"{record['id']}.json"), text.encode())


#: What every record holds (a failed job's too), with the types JSON gives them.
_FIELDS: dict[str, type] = {
    "id": str,
    "status": str,
    "study": str,
    "dataset": str,
    "split": int,
    "engine": str,
    "likelihood": str,
}
#: ... and what a finished job's record holds besides.
_OK_FIELDS: dict[str, type] = {
    "metrics": dict,
    "hyperparameters": dict,
    "timings": dict,
    "d": int,
    "n_train": int,
}


@dataclass(frozen=True)
class Damaged:
    """A job record that cannot be used: its file and why."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path.parent.name}/{self.path.name}: {self.reason}"


def check_record(record: Any, path: Path) -> str | None:
    """Why the record read from ``path`` (``jobs/ID.json``) cannot be used, or None.

    Checks the shape the table and the report rely on (the fields every record has, those
    of a finished job, the hyperparameters' names and values) and, for a sampler's
    record, that its InferenceData file ``ID.nc``, when present, opens.
    """
    if not isinstance(record, dict):
        return f"not a JSON object but {type(record).__name__}"
    for fields in (_FIELDS, _OK_FIELDS if record.get("status") == "ok" else {}):
        for key, kind in fields.items():
            if key not in record:
                return f"no {key!r} field"
            if not isinstance(record[key], kind) or isinstance(record[key], bool):
                return f"{key!r} is {record[key]!r}, not a {kind.__name__}"
    if record["id"] != path.stem:
        return f"its id {record['id']!r} is not its file name's"
    if record["status"] not in ("ok", "failed", "skipped"):
        return f"status {record['status']!r} is not 'ok', 'failed' or 'skipped'"
    if record["status"] in ("failed", "skipped"):
        return None
    hp = record["hyperparameters"]
    names, values = hp.get("names"), hp.get("values")
    if not (isinstance(names, list) and isinstance(values, list) and len(names) == len(values)):
        return "its hyperparameters' names and values do not match"
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return "a hyperparameter value is not a number"
    if "idata" in record:
        if record["idata"] != f"{record['id']}.nc":  # (never a path read from a file)
            return f"its InferenceData is named {record['idata']!r}, not {record['id']}.nc"
        return _check_netcdf(path.with_name(record["idata"]))
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
) -> tuple[dict[str, dict[str, Any]], list[Damaged]]:
    """The job records under ``result_dir/jobs`` by id, and those that cannot be used.

    A record that does not parse (not JSON, not UTF-8, unreadable) or has the wrong shape
    (:func:`check_record`) is listed as :class:`Damaged`, not returned.
    """
    records, damaged = {}, []
    for path in sorted(Path(result_dir, "jobs").glob("*.json")):
        try:
            record = json.loads(path.read_bytes().decode("utf-8"))
        except UnicodeDecodeError as exc:
            damaged.append(Damaged(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})"))
            continue
        except json.JSONDecodeError as exc:
            damaged.append(Damaged(path, f"not valid JSON ({exc.msg}, line {exc.lineno})"))
            continue
        except OSError as exc:
            damaged.append(Damaged(path, f"cannot be read ({exc.strerror or exc})"))
            continue
        reason = check_record(record, path)
        if reason is None:
            records[record["id"]] = record
        else:
            damaged.append(Damaged(path, reason))
    return records, damaged


def load_records(result_dir: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The usable job records under ``result_dir/jobs``, by job id (see :func:`read_records`
    for those that are not)."""
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
    for path in [*root.glob(".*.tmp"), *root.glob("jobs/.*.tmp")]:
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


def failure_record(job: Job, exc: BaseException) -> dict[str, Any]:
    """The record of a job whose worker died or that could not run: status ``"failed"``,
    the error and its traceback."""
    return {
        "id": job.id,
        "study": job.study,
        "dataset": job.dataset.label,
        "split": job.split,
        "kernel": kernel_column(job.kernel_label, job.kernel),
        "engine": job.engine,
        "likelihood": job.likelihood,
        "policy": job.policy,
        "seed": job.seed,
        "status": "failed",
        "error": f"{type(exc).__name__}: {exc}",
        "traceback": "".join(traceback.format_exception(exc)),
        "versions": versions(),
    }


def failed_dependency(
    job: Job, source: Job | None, source_record: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The record of a job not run because the job whose hyperparameters it needs failed
    (status "failed"), or was skipped as too large for its engine (status "skipped", the
    same reason)."""
    what = source.describe() if source is not None else job.depends_on
    if source_record is not None and source_record.get("status") == "skipped":
        record = failure_record(job, RuntimeError(""))
        record.pop("traceback")
        record["status"] = "skipped"
        reason = str(source_record.get("error", "")).removeprefix("skipped: ")
        record["error"] = (
            f"skipped: it needs the hyperparameters of {what}, which was skipped ({reason})"
        )
        return record
    exc = RuntimeError(f"not run: it needs the hyperparameters of {what}, which failed")
    return failure_record(job, exc)
