"""Running a study: its jobs on an executor, resuming from the records already on disk."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from .config import StudyConfig, load_study
from .datafiles import copy_study
from .executors import DaskExecutor, LocalExecutor, SerialExecutor
from .jobs import Job, expand
from .lock import output_lock
from .problem import load_dataset
from .records import (
    atomic_write,
    failed_dependency,
    failure_record,
    inside,
    read_records,
    remove_temporaries,
    save_record,
    set_aside,
)
from .schedule import CostModel, next_jobs
from .table import assemble
from .worker import run_job

__all__ = ["RunSummary", "run_study"]


class _Progress:
    """A one-line progress display: done, running, failed and the estimated time left."""

    def __init__(self, total: int, skipped: int, stream: TextIO | None) -> None:
        self.total, self.skipped, self.stream = total, skipped, stream
        self.done = self.failed = self.running = 0
        self.last: list[str] = []  # jobs finished since the last line
        self.start = time.perf_counter()
        self.tty = stream is not None and hasattr(stream, "isatty") and stream.isatty()

    def update(self, running: int, left: float | None = None) -> None:
        """Redraw (on a terminal), or print a line per finished job (in a log file), with
        ``left`` the estimated seconds to go (:class:`~.schedule.CostModel`)."""
        self.running = running
        if self.stream is None or (not self.tty and not self.last):
            return
        last = "; ".join(self.last)
        self.last = []
        finished = self.done + self.failed
        width = 24
        filled = int(width * (self.skipped + finished) / max(self.total, 1))
        bar = "#" * filled + "-" * (width - filled)
        elapsed = time.perf_counter() - self.start
        eta = "time left unknown" if left is None else f"~{_duration(left)} left"
        line = (
            f"[{bar}] {self.skipped + finished}/{self.total} jobs: {self.done} done"
            f"{f' + {self.skipped} earlier' if self.skipped else ''}, {self.running} running, "
            f"{self.failed} failed, {_duration(elapsed)} elapsed, {eta}"
        )
        if self.tty:
            print(f"\r{line}\x1b[K", end="", file=self.stream, flush=True)
        else:
            print(f"{line} ({last})", file=self.stream, flush=True)

    def close(self) -> None:
        if self.tty and self.stream is not None:
            print(file=self.stream, flush=True)


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s" if m else f"{s}s"


@dataclass
class RunSummary:
    """What :func:`run_study` did."""

    result_dir: Path
    total: int
    skipped: int
    done: int
    failed: int
    table: pd.DataFrame
    seconds: float
    failures: list[str] = field(default_factory=list)
    failed_earlier: list[str] = field(default_factory=list)
    #: Damaged records set aside (renamed ``*.damaged``) and their jobs recomputed.
    set_aside: list[str] = field(default_factory=list)


def run_study(
    study: str | os.PathLike[str] | StudyConfig,
    output: str | os.PathLike[str] = "results",
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    retry_failed: bool = True,
    progress: TextIO | None = None,
    wait: bool = False,
) -> RunSummary:
    """Run a study's jobs, resuming from any results already on disk.

    Parameters
    ----------
    study : path or StudyConfig
        The study file (see :func:`load_study`).
    output : path
        Results go to ``output/NAME/``: the study file (``study.toml``), one JSON record
        per job in ``jobs/`` (MCMC InferenceData next to it as ``.nc``), the tidy table
        ``results.csv`` and ``jobs.csv`` (one row per job: status, error, seconds).
    workers : int, optional
        Local worker processes (default: the number of CPUs); 1 runs the jobs in this
        process, one after another.
    scheduler : str, optional
        Address of a Dask distributed scheduler: the jobs run on its cluster instead.
    retry_failed : bool
        Rerun jobs whose earlier attempt failed (finished jobs are always skipped).
    progress : text stream, optional
        Where the progress line goes (none when omitted).
    wait : bool
        When another run is writing to ``output/NAME``: wait for it to finish, instead of
        raising :class:`~gpc_compare.study.lock.OutputBusy`.

    Returns
    -------
    RunSummary

    Notes
    -----
    One run at a time writes to a study's output (a lock). A record that cannot be used
    (damaged, truncated, of the wrong shape: :func:`~gpc_compare.study.records.check_record`)
    is set aside as ``ID.json.damaged`` and its job recomputed; temporaries a stopped run
    left behind are removed.
    """
    config = study if isinstance(study, StudyConfig) else load_study(study)
    result_dir = inside(output, config.name)  # (the name is checked at load; again here)
    (result_dir / "jobs").mkdir(parents=True, exist_ok=True)
    with output_lock(result_dir, wait=wait, stream=progress):
        return _run_locked(config, output, result_dir, workers, scheduler, retry_failed,
                           progress)  # fmt: skip


def _run_locked(config, output, result_dir, workers, scheduler, retry_failed, progress):
    """:func:`run_study` under the output's lock."""
    jobs = expand(config)
    jobs_dir = result_dir / "jobs"
    remove_temporaries(result_dir)
    if config.path and Path(config.path).exists():
        target = result_dir / "study.toml"
        if Path(config.path).resolve() != target.resolve():
            copy_study(config.path, target)  # (data files' relative paths kept valid)
            run_info = {
                "study_file": _relative_to_cwd(config.path),
                "output": _relative_to_cwd(str(output)),
                "scheduler": scheduler,
                "workers": workers,
            }
            atomic_write(result_dir / "run.json", json.dumps(run_info, indent=1).encode())

    records, damaged = read_records(result_dir)
    set_aside_notes = []
    for bad in damaged:
        target = set_aside(bad)
        set_aside_notes.append(f"{bad} (set aside as {target.name}; its job is recomputed)")
        if progress is not None:
            print(f"damaged record {set_aside_notes[-1]}", file=progress, flush=True)
    finished = {
        j.id
        for j in jobs
        if j.id in records and (records[j.id]["status"] in ("ok", "skipped") or not retry_failed)
    }  # (a skipped job, too large for its engine, is not retried: it would be skipped again)
    todo = [j for j in jobs if j.id not in finished]
    by_id = {j.id: j for j in jobs}
    bar = _Progress(len(jobs), len(finished), progress)
    failures: list[str] = []

    if scheduler is not None:
        executor: Any = DaskExecutor(scheduler)
    elif (workers or os.cpu_count() or 1) <= 1:
        executor = SerialExecutor()
    else:
        executor = LocalExecutor(min(workers or os.cpu_count() or 1, max(len(todo), 1)))

    start = time.perf_counter()
    pending = list(todo)  # not yet submitted, in order
    running: dict[Any, Job] = {}
    started: dict[str, float] = {}
    active = {j.id for j in pending}  # pending or running
    cost = CostModel(jobs, _sizes(jobs, config.seed))

    def ready(job: Job) -> tuple[bool, dict | None]:
        """Whether ``job`` can start, and the record of the job it depends on."""
        if job.depends_on is None:
            return True, None
        if job.depends_on in active or job.depends_on not in records:
            return False, None  # (an old failed record may be being retried right now)
        return True, records[job.depends_on]

    def finish(job: Job, record: dict[str, Any]) -> None:
        save_record(record, jobs_dir)
        records[job.id] = record
        active.discard(job.id)
        if record["status"] in ("ok", "skipped"):  # (skipped: too large for its engine)
            bar.done += 1
        else:
            bar.failed += 1
            failures.append(f"{job.describe()}: {record['error']}")

    def time_left() -> float | None:
        now = time.perf_counter()
        in_flight = [(j, now - started[j.id]) for j in running.values()]
        return cost.seconds_left(pending, in_flight, executor.capacity)

    interrupted = False
    try:
        bar.update(0)
        while pending or running:
            progressed = False
            for job in list(pending):  # a failed dependency fails its dependants at once
                is_ready, dep = ready(job)
                if is_ready and dep is not None and dep["status"] != "ok":
                    pending.remove(job)
                    finish(job, failed_dependency(job, by_id[job.depends_on], dep))
                    progressed = True
            chosen = next_jobs(pending, running.values(), executor.capacity,
                               lambda j: ready(j)[0])  # fmt: skip
            for job in chosen:
                pending.remove(job)
                running[executor.submit(run_job, job, ready(job)[1])] = job
                started[job.id] = time.perf_counter()
                progressed = True
            bar.update(len(running), time_left())
            if not running:
                if pending and progressed:
                    continue
                for job in pending:  # dependencies missing (not for a valid expansion)
                    finish(job, failed_dependency(job, by_id.get(job.depends_on)))
                pending.clear()
                break
            for future in executor.wait(list(running)):
                job = running.pop(future)
                try:
                    record = future.result()
                except Exception as exc:  # the worker itself died
                    record = failure_record(job, exc)
                if record["status"] != "skipped":  # (a skip costs nothing: no estimate)
                    cost.observe(job, time.perf_counter() - started[job.id])
                finish(job, record)
                bar.last.append(f"{job.describe()}: {record['status']}")
            if not pending:
                bar.update(len(running), time_left())  # (else once new jobs are started)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        bar.close()
        executor.close(cancel=interrupted)

    table = assemble(result_dir, config)
    return RunSummary(
        result_dir=result_dir,
        total=len(jobs),
        skipped=len(finished),
        done=bar.done,
        failed=bar.failed,
        table=table,
        seconds=time.perf_counter() - start,
        failures=failures,
        failed_earlier=[
            f"{j.describe()}: {records[j.id].get('error', '')}"
            for j in jobs
            if j.id in finished and records[j.id]["status"] == "failed"
        ],
        set_aside=set_aside_notes,
    )


def _sizes(jobs: list[Job], seed: int) -> dict[str, int]:
    """Cases per data set (for the time left before a data set's first job finishes)."""
    sizes = {}
    for spec in {j.dataset.label: j.dataset for j in jobs}.values():
        try:
            sizes[spec.label] = load_dataset(spec, seed).n_samples
        except Exception:  # noqa: BLE001 - an estimate only: the job itself reports the error
            continue
    return sizes


def _relative_to_cwd(path: str) -> str:
    """``path`` relative to the working directory when it lies below it (as one would type it)."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path
