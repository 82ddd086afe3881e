"""Job records on disk: written atomically as each job finishes, read back by id."""

from __future__ import annotations

import json
import os
import traceback
from pathlib import Path
from typing import Any

from ..provenance import versions
from .jobs import Job
from .kernels_config import kernel_column

__all__ = ["atomic_write", "failed_dependency", "failure_record", "load_records", "save_record"]


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
        atomic_write(jobs_dir / f"{record['id']}.nc", idata)
        record["idata"] = f"{record['id']}.nc"
    text = json.dumps(record, indent=1, allow_nan=True)
    atomic_write(jobs_dir / f"{record['id']}.json", text.encode())


def load_records(result_dir: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The job records under ``result_dir/jobs``, by job id (unreadable files skipped)."""
    records = {}
    for path in sorted(Path(result_dir, "jobs").glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        records[record["id"]] = record
    return records


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


def failed_dependency(job: Job, source: Job | None) -> dict[str, Any]:
    """The record of a job not run because the job whose hyperparameters it needs failed."""
    what = source.describe() if source is not None else job.depends_on
    exc = RuntimeError(f"not run: it needs the hyperparameters of {what}, which failed")
    return failure_record(job, exc)
