"""Running a study: its jobs on an executor, resuming from the records already on disk."""

from __future__ import annotations

import json
import os
import time
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from .config import StudyConfig, load_study
from .datafiles import copy_study
from .executors import (
    DaskExecutor,
    LocalExecutor,
    SchedulerLost,
    SerialExecutor,
    WorkerDied,
)
from .jobs import Job, expand
from .lock import Held, output_lock
from .output import atomic_write, output_folder
from .problem import load_dataset
from .record import JobRecord
from .records import (
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
        eta = (
            "time left unknown until a job of each engine has finished"
            if left is None
            else f"~{_duration(left)} left"
        )
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
    """What :func:`run_study` did.

    Parameters
    ----------
    result_dir : Path
        The study's result directory.
    total : int
        The study's jobs.
    skipped : int
        Jobs not run: finished by an earlier run.
    done : int
        Jobs run now that succeeded.
    failed : int
        Jobs run now that failed.
    table : pandas.DataFrame
        The tidy table assembled from every record (``results.csv``).
    seconds : float
        The run's wall time.
    failures : list of str
        Each job failed now and its error.
    failed_earlier : list of str
        Each job that failed in an earlier run and was not rerun, and its error.
    set_aside : list of str
        Damaged records set aside (renamed ``*.damaged``) and their jobs recomputed.
    """

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
    lock: Held | None = None,
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
    lock : Held, optional
        The lock of ``output/NAME``, already held by the caller's
        :func:`~gpc_compare.study.lock.output_lock` block (a caller that writes there
        before the run, as ``gc.compare`` its data and study file, takes the lock first);
        without it the run takes the lock itself.

    Returns
    -------
    RunSummary

    Notes
    -----
    One run at a time writes to a study's output (a lock, taken before anything is
    written there). Nothing is written through a symbolic link: files replace a link at
    their name, and a ``.lock`` or ``jobs/`` that is a link is refused (:mod:`.output`).
    A record that cannot be used (damaged, truncated, of the wrong shape:
    :func:`~gpc_compare.study.records.check_record`) is set aside as ``ID.json.damaged``
    and its job recomputed; temporaries a stopped run left behind are removed.
    """
    config = study if isinstance(study, StudyConfig) else load_study(study)
    result_dir = inside(output, config.name)  # (the name is checked at load; again here)
    if lock is not None and lock.covers(result_dir):
        return _run_locked(config, output, result_dir, workers, scheduler, retry_failed, progress)
    result_dir.mkdir(parents=True, exist_ok=True)  # (for its lock: nothing is written yet)
    with output_lock(result_dir, wait=wait, stream=progress):
        return _run_locked(config, output, result_dir, workers, scheduler, retry_failed, progress)


def _run_locked(config, output, result_dir, workers, scheduler, retry_failed, progress):
    """:func:`run_study` under the output's lock."""
    jobs = expand(config)
    output_folder(result_dir / "jobs")  # (refused if a link: before anything is written)
    remove_temporaries(result_dir)
    _keep_study(config, output, result_dir, workers, scheduler)
    records, set_aside_notes = _usable_records(result_dir, progress)
    finished = {
        j.id
        for j in jobs
        if j.id in records and (records[j.id].status in ("ok", "skipped") or not retry_failed)
    }  # (a skipped job, too large for its engine, is not retried: it would be skipped again)
    todo = [j for j in jobs if j.id not in finished]
    executor = _executor(scheduler, workers, len(todo))
    bar = _Progress(len(jobs), len(finished), progress)
    run = _Jobs(jobs, records, todo, executor, bar, result_dir / "jobs")
    start = time.perf_counter()
    run.cost = CostModel(jobs, _sizes(jobs, config.seed))
    interrupted = False
    try:
        run.until_done()
    except KeyboardInterrupt:
        interrupted = True
        raise
    except SchedulerLost as exc:
        saved = len(finished) + bar.done + bar.failed
        raise SchedulerLost(
            f"{exc}: {saved} of {len(jobs)} jobs are finished, their records saved in "
            f"{result_dir / 'jobs'}"
        ) from None
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
        failures=run.failures,
        failed_earlier=[
            f"{j.describe()}: {records[j.id].error or ''}"
            for j in jobs
            if j.id in finished and records[j.id].status == "failed"
        ],
        set_aside=set_aside_notes,
    )


def _keep_study(config: StudyConfig, output, result_dir: Path, workers, scheduler) -> None:
    """Copy the study file into its results (``study.toml``) with how it was run
    (``run.json``), unless it is that copy."""
    if not config.path or not Path(config.path).exists():
        return
    target = result_dir / "study.toml"
    if Path(config.path).resolve() == target.resolve():
        return
    copy_study(config.path, target)  # (data files' relative paths kept valid)
    run_info = {
        "study_file": _relative_to_cwd(config.path),
        "output": _relative_to_cwd(str(output)),
        "scheduler": scheduler,
        "workers": workers,
    }
    atomic_write(result_dir / "run.json", json.dumps(run_info, indent=1).encode())


def _usable_records(result_dir: Path, progress: TextIO | None) -> tuple[dict, list[str]]:
    """The usable records by job id, with the damaged ones set aside (renamed, their jobs
    to be recomputed) and said."""
    records, damaged = read_records(result_dir)
    notes = []
    for bad in damaged:
        target = set_aside(bad)
        notes.append(f"{bad} (set aside as {target.name}; its job is recomputed)")
        if progress is not None:
            print(f"damaged record {notes[-1]}", file=progress, flush=True)
    return records, notes


def _executor(scheduler: str | None, workers: int | None, n_todo: int) -> Any:
    """A Dask cluster's, one process's (one worker), or local worker processes."""
    if scheduler is not None:
        return DaskExecutor(scheduler)
    if (workers or os.cpu_count() or 1) <= 1:
        return SerialExecutor()
    return LocalExecutor(min(workers or os.cpu_count() or 1, max(n_todo, 1)))


class _Jobs:
    """The jobs of one run in flight: which wait, which run, and their records as they
    come in (each saved at once).

    When a local worker process dies (killed, or by the out-of-memory killer), every job
    in flight in its pool fails with it (``concurrent.futures``' BrokenProcessPool), and
    nothing says whose worker it was. Each of them is retried once, alone (no other job
    running), in a new pool: a job whose worker dies again while it runs alone is recorded
    failed, and the others run as if nothing had happened. (A job killed for memory
    another job held gets its second chance alone too.)
    """

    def __init__(self, jobs, records, todo, executor, bar: _Progress, jobs_dir: Path) -> None:
        self.records: dict[str, JobRecord] = records
        self.by_id = {j.id: j for j in jobs}
        self.pending = list(todo)  # not yet submitted, in order
        self.running: dict[Any, Job] = {}
        self.started: dict[str, float] = {}
        self.active = {j.id for j in self.pending}  # pending or running
        self.executor, self.bar, self.jobs_dir = executor, bar, jobs_dir
        self.failures: list[str] = []
        self.cost: CostModel | None = None
        #: jobs in flight when a worker died: each retried once, alone
        self.suspects: set[str] = set()

    def ready(self, job: Job) -> tuple[bool, JobRecord | None]:
        """Whether ``job`` can start, and the record of the job it depends on."""
        if job.depends_on is None:
            return True, None
        if job.depends_on in self.active or job.depends_on not in self.records:
            return False, None  # (an old failed record may be being retried right now)
        return True, self.records[job.depends_on]

    def finish(self, job: Job, record: JobRecord) -> None:
        self.records[job.id] = record = save_record(record, self.jobs_dir)
        self.active.discard(job.id)
        if record.status in ("ok", "skipped"):  # (skipped: too large for its engine)
            self.bar.done += 1
        else:
            self.bar.failed += 1
            self.failures.append(f"{job.describe()}: {record.error}")

    def time_left(self) -> float | None:
        """The estimated seconds to go; None (shown as unknown) while an engine with jobs
        to run has not finished one: a prior guess of its cost was off by 7x (issue 34:
        "~1h40m left" at 1 of 15 jobs of a 14-minute run)."""
        now = time.perf_counter()
        in_flight = [(j, now - self.started[j.id]) for j in self.running.values()]
        if not all(self.cost.seen(j) for j in [*self.pending, *(j for j, _ in in_flight)]):
            return None
        return self.cost.seconds_left(self.pending, in_flight, self.executor.capacity)

    def start_ready(self) -> bool:
        """Fail the jobs whose dependency failed, submit those that can start; whether any
        job moved."""
        progressed = False
        for job in list(self.pending):  # a failed dependency fails its dependants at once
            is_ready, dep = self.ready(job)
            if is_ready and dep is not None and dep.status != "ok":
                self.pending.remove(job)
                self.finish(job, failed_dependency(job, self.by_id[job.depends_on], dep))
                progressed = True
        for job in self._next():
            self.pending.remove(job)
            self.running[self.executor.submit(run_job, job, self.ready(job)[1])] = job
            self.started[job.id] = time.perf_counter()
            progressed = True
        return progressed

    def _next(self) -> list[Job]:
        """The jobs to start now (:func:`~.schedule.next_jobs`); after a worker died, its
        jobs one at a time with nothing else running."""
        if self.suspects:
            if self.running:
                return []
            suspect = next((j for j in self.pending if j.id in self.suspects), None)
            if suspect is not None:
                return [suspect]
            self.suspects.clear()  # (none left to retry)
        capacity = self.executor.capacity
        return next_jobs(self.pending, self.running.values(), capacity, lambda j: self.ready(j)[0])

    def worker_died(self, job: Job, exc: BaseException) -> JobRecord | None:
        """A job whose worker process died: back in the queue, to be retried alone; or,
        if it was running alone already, its failure record."""
        if job.id not in self.suspects:
            self.suspects.add(job.id)
            self.pending.insert(0, job)
            self.bar.last.append(f"{job.describe()}: its worker died; retried alone")
            return None
        self.suspects.discard(job.id)
        died = WorkerDied(
            "the worker process running this job died (killed by a signal, or out of "
            f"memory: {exc}), and again when it was retried alone"
        )
        return failure_record(job, died)

    def collect(self) -> None:
        """Wait for jobs to finish, and record them."""
        for future in self.executor.wait(list(self.running)):
            job = self.running.pop(future)
            try:
                record = self.executor.result(future)
            except BrokenProcessPool as exc:  # a worker died: whose, nothing says
                record = self.worker_died(job, exc)
                if record is None:
                    continue
            except Exception as exc:  # the job could not be sent or its result read back
                record = failure_record(job, exc)
            self.suspects.discard(job.id)
            if record.status != "skipped":  # (a skip costs nothing: no estimate)
                self.cost.observe(job, time.perf_counter() - self.started[job.id])
            self.finish(job, record)
            self.bar.last.append(f"{job.describe()}: {record.status}")

    def until_done(self) -> None:
        """Run every pending job (in dependency order), saving each record as it comes."""
        self.bar.update(0)
        while self.pending or self.running:
            progressed = self.start_ready()
            self.bar.update(len(self.running), self.time_left())
            if not self.running:
                if self.pending and progressed:
                    continue
                for job in self.pending:  # dependencies missing (not for a valid expansion)
                    self.finish(job, failed_dependency(job, self.by_id.get(job.depends_on)))
                self.pending.clear()
                break
            self.collect()
            if not self.pending:  # (else once new jobs are started)
                self.bar.update(len(self.running), self.time_left())


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
