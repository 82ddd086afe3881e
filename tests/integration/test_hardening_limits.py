"""Hardening, second round (issue 32): limits refused at load, a worker that dies, a
scheduler that goes away, numbers given as text.

- A study that cannot finish (too many jobs, grid points, restarts or repeats; MCMC draws
  beyond the memory) exits 2 at load with the estimate and the limit, before anything is
  written; ``[limits]`` or ``--no-limits`` lets it through (the load step only is run here).
- A local worker killed under one job no longer fails the job beside it: both are retried
  alone, and only the one whose worker dies again is recorded failed.
- A Dask scheduler that stops answering mid-run exits 2 with the jobs finished so far kept
  and the command that resumes.
- A number written as text is refused the same way everywhere.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import time
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpc_compare as gc
from gpc_compare import study
from gpc_compare.cli import main
from gpc_compare.study import runner
from gpc_compare.study.executors import DaskExecutor, SchedulerLost, SerialExecutor

BASE = """
name = "limits"
seed = 0
likelihood = "probit"
datasets = [{{name = "crabs", subsample = 40}}]
{body}
"""
FIXED = '[hyperparameters]\npolicy = "fixed"\n'
TWO_FOLDS = '[splits]\nkind = "kfold"\nn_splits = 2\nn_repeats = 1\n'
MANY_ENGINES = "".join(f'[engines.l{i}]\nmethod = "laplace"\n' for i in range(21))

#: (what, the study's body, words of the refusal, the [limits] table that lets it through)
CASES = {
    "repeats": (
        FIXED + '[splits]\nkind = "holdout"\nn_repeats = 100000000\n[engines.laplace]\n',
        ["splits.n_repeats", "100,000,000 repeats", "limit of 1,000", "max_repeats"],
        "[limits]\nmax_repeats = 100000000\nmax_jobs = 100000000\n",
    ),
    "restarts": (
        '[hyperparameters]\npolicy = "optimize"\nn_restarts = 1000000000\n'
        + TWO_FOLDS
        + "[engines.laplace]\n",
        ["hyperparameters.n_restarts", "1,000,000,001 optimisations", "limit of 100"],
        "[limits]\nmax_restarts = 1000000000\n",
    ),
    "grid points": (
        '[hyperparameters]\npolicy = "grid"\n[hyperparameters.grid]\n'
        "log_lengthscale = {start = 0.0, stop = 1.0, num = 20000}\n"
        + TWO_FOLDS
        + "[engines.laplace]\n",
        ["hyperparameters.grid", "20,000 grid points", "limit of 10,000", "max_grid_points"],
        "[limits]\nmax_grid_points = 20000\nmax_jobs = 40000\n",
    ),
    "jobs": (
        FIXED + '[splits]\nkind = "holdout"\nn_repeats = 1000\n' + MANY_ENGINES,
        ["21,000 jobs", "1,000 split(s) x 21 engine(s)", "limit of 20,000", "max_jobs = 21000"],
        "[limits]\nmax_jobs = 21000\n",
    ),
    "MCMC draws": (
        FIXED + TWO_FOLDS + "[engines.mcmc]\ndraws = 1000000000\n",
        ["engines.mcmc", "n = 20 training cases need about", "GiB", "draws = 1,000,000,000"],
        None,  # (no limit to raise: the memory is this machine's; --no-limits)
    ),
}


def _study(tmp_path: Path, body: str, limits: str = "") -> Path:
    path = tmp_path / "limits.toml"
    path.write_text(BASE.format(body=body) + limits)
    return path


@pytest.mark.parametrize("case", list(CASES))
def test_a_study_beyond_a_limit_exits_2_at_load_with_the_estimate(
    tmp_path: Path, capsys, case: str
) -> None:
    body, words, _ = CASES[case]
    path = _study(tmp_path, body)
    t0 = time.perf_counter()
    assert main(["run", str(path), "--output", str(tmp_path / "out")]) == 2
    seconds = time.perf_counter() - t0
    err = capsys.readouterr().err
    assert all(w in err for w in words), err
    assert str(path) in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()  # refused before anything was written or run
    assert seconds < 10  # (at once: nothing the size of the study is formed)


@pytest.mark.parametrize("case", list(CASES))
def test_the_limits_table_or_no_limits_lets_it_through(tmp_path: Path, case: str) -> None:
    """Only the load step: raised in [limits] (where there is a limit to raise), and lifted
    by ``limits=False``, what ``--no-limits`` passes."""
    body, _, raised = CASES[case]
    if raised is not None:
        config = study.load_study(_study(tmp_path, body, raised))
        assert config.engines
    config = study.load_study(_study(tmp_path, body), limits=False)
    assert config.engines


def test_no_limits_on_the_command_line_reaches_the_load(tmp_path: Path, capsys, monkeypatch):
    """``gpc-compare run --no-limits`` loads the study past its limits (the run itself is
    stopped before it starts: this checks the load step only)."""
    seen = []

    def stop(config, *args, **kwargs):
        seen.append(config)
        raise ValueError("stopped before the run")

    monkeypatch.setattr(study, "run_study", stop)
    path = _study(tmp_path, CASES["restarts"][0])
    assert main(["run", str(path), "--output", str(tmp_path / "out"), "--no-limits"]) == 2
    assert "stopped before the run" in capsys.readouterr().err
    assert seen[0].n_restarts == 1_000_000_000


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("max_jobs = 0", "limits.max_jobs: must be a whole number >= 1, got 0"),
        ("max_jobs = 1.5e4", "limits.max_jobs: must be a whole number >= 1"),
        ('max_repeats = "1000"', "limits.max_repeats: must be a whole number >= 1, got '1000'"),
        ("max_draws = 10", "limits: unknown field(s) ['max_draws']"),
    ],
)
def test_the_limits_table_is_checked(tmp_path: Path, table: str, message: str) -> None:
    path = _study(tmp_path, FIXED + TWO_FOLDS + "[engines.laplace]\n", f"[limits]\n{table}\n")
    with pytest.raises(study.StudyError, match=re.escape(message)):
        study.load_study(path)


def test_gc_fit_refuses_mcmc_draws_beyond_memory_before_sampling() -> None:
    """draws = 10**9 aborted the process ("memory allocation of 240000024000 bytes
    failed", exit 134): now a ValueError with the estimate, before the sampler starts."""
    X, y = np.random.default_rng(0).normal(size=(50, 2)), np.repeat([1, -1], 25)
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"n = 50 training cases need about [\d.]+ GiB .* MCMC"):
        gc.fit(X, y, method="mcmc", draws=10**9)
    assert time.perf_counter() - t0 < 5


def test_a_job_beyond_memory_lifted_at_load_is_skipped_where_it_runs(tmp_path: Path) -> None:
    """--no-limits moves the check to the worker: the MCMC job is skipped there (said in
    jobs.csv), and the Laplace jobs run."""
    body = FIXED + TWO_FOLDS + "[engines.laplace]\n[engines.mcmc]\ndraws = 1000000000\n"
    config = study.load_study(_study(tmp_path, body), limits=False)
    summary = study.run_study(config, tmp_path / "out", workers=1)
    jobs = pd.read_csv(summary.result_dir / "jobs.csv")
    assert sorted(jobs.status) == ["ok", "ok", "skipped", "skipped"]
    assert jobs[jobs.status == "skipped"].error.str.contains("draws = 1,000,000,000").all()


# ----------------------------------------------------------------- a worker that dies
def _dying_job(marks: str, job, shared=None):
    """A job whose split 0 kills its own worker process (as the out-of-memory killer or
    ``kill -9`` would); the other job waits until split 0 has started, so it is in flight
    when that worker dies. Each attempt leaves a file in ``marks``."""
    (Path(marks) / f"{job.split}.{uuid.uuid4().hex}").touch()
    if job.split == 0:
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGKILL)
    deadline = time.monotonic() + 60
    while not list(Path(marks).glob("0.*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)
    return study.run_job(job, shared)


def test_a_killed_worker_fails_only_its_own_job(tmp_path: Path, monkeypatch) -> None:
    """Two workers, two jobs; split 0's worker is killed. concurrent.futures fails both
    (BrokenProcessPool) without saying whose worker died: each is retried once, alone, in
    a new pool; split 0 dies again and is recorded failed, split 1 runs. (Three pools
    start one after another: about 10 s on an idle 2-core machine, most of it importing
    the package in each new worker.)"""
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setattr(runner, "run_job", functools.partial(_dying_job, str(marks)))
    path = _study(tmp_path, FIXED + TWO_FOLDS + "[engines.laplace]\n")
    summary = study.run_study(path, tmp_path / "out", workers=2)
    jobs = pd.read_csv(summary.result_dir / "jobs.csv").sort_values("split")
    assert list(jobs.status) == ["failed", "ok"]
    assert "WorkerDied" in jobs.error.iloc[0] and "retried alone" in jobs.error.iloc[0]
    attempts = sorted(p.name.split(".")[0] for p in marks.iterdir())
    # split 0 ran twice; split 1 once or twice (its first attempt may not have left the
    # broken pool's queue, which fails it all the same)
    assert attempts[:2] == ["0", "0"] and attempts[2:] in (["1"], ["1", "1"])
    assert (summary.done, summary.failed) == (1, 1)


# ----------------------------------------------------- a scheduler that goes away
class _LosingExecutor(SerialExecutor):
    """The serial executor, whose scheduler "goes away" after the first job: what the Dask
    executor raises when its futures are cancelled (see the test below it)."""

    def __init__(self) -> None:
        super().__init__()
        self.waits = 0

    def wait(self, futures):
        self.waits += 1
        if self.waits > 1:
            raise SchedulerLost("the Dask scheduler at tcp://127.0.0.1:1 stopped answering")
        return super().wait(futures)


def test_a_scheduler_lost_mid_run_exits_2_keeping_the_finished_jobs(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    path = _study(tmp_path, FIXED + TWO_FOLDS + "[engines.laplace]\n")
    monkeypatch.setattr(runner, "_executor", lambda *args: _LosingExecutor())
    out = tmp_path / "out"
    address = "tcp://127.0.0.1:1"
    code = main(["run", str(path), "--output", str(out), "--scheduler", address, "--no-report"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "stopped answering" in err and "1 of 2 jobs are finished" in err
    assert f"to resume, rerun: gpc-compare run {path} --output {out} --scheduler {address}" in err
    assert len(list((out / "limits" / "jobs").glob("*.json"))) == 1
    monkeypatch.undo()  # the scheduler is back: the rerun does the other job only
    again = study.run_study(path, out, workers=1)
    assert (again.skipped, again.done, again.failed) == (1, 1, 0)


def test_the_dask_executor_says_a_lost_scheduler_is_lost(monkeypatch) -> None:
    """distributed's own exceptions when the scheduler goes (futures cancelled for
    "scheduler-connection-lost", the connection closed) become SchedulerLost naming the
    address, from ``wait`` and from ``result``."""
    distributed = pytest.importorskip("distributed")
    from distributed.client import (
        CancelledFuturesGroup,
        FutureCancelledError,
        FuturesCancelledError,
    )
    from distributed.comm.core import CommClosedError

    lost = FutureCancelledError("job-1", "scheduler-connection-lost", "Client lost the connection")
    cancelled = FuturesCancelledError([CancelledFuturesGroup([lost], "scheduler-connection-lost")])
    executor = object.__new__(DaskExecutor)  # (no cluster: its methods only)
    executor.address = "tcp://10.0.0.1:8786"

    def wait(*args, **kwargs):
        raise cancelled

    monkeypatch.setattr(distributed, "wait", wait)
    with pytest.raises(SchedulerLost, match=r"tcp://10\.0\.0\.1:8786 stopped answering .*"
                       "scheduler-connection-lost"):  # fmt: skip
        executor.wait([])

    class Future:
        def result(self):
            raise CommClosedError("in <TCP>: Stream is closed")

    with pytest.raises(SchedulerLost, match="CommClosedError: in <TCP>: Stream is closed"):
        executor.result(Future())


# --------------------------------------------------------------- numbers as text
def test_numbers_given_as_text_are_refused_the_same_way_everywhere(tmp_path: Path) -> None:
    """tol = "1e-6" and draws = "100": refused by gc.fit and in a study file alike, in the
    same words (the option's check: a number is never converted from text)."""
    X, y = np.random.default_rng(0).normal(size=(20, 2)), np.repeat([1, -1], 10)
    cases = [
        ("laplace", "tol", "1e-6", "must be a positive number, got '1e-6'"),
        ("ep", "tol", "1e-6", "must be a positive number, got '1e-6'"),
        ("mcmc", "draws", "100", "must be a whole number >= 1, got '100'"),
        ("kl", "max_iter", "10", "must be a whole number >= 1, got '10'"),
    ]
    for method, option, text, message in cases:
        with pytest.raises(ValueError, match=f"^{option} {message}$"):
            gc.fit(X, y, method=method, **{option: text})
        path = _study(tmp_path, FIXED + TWO_FOLDS + f'[engines.{method}]\n{option} = "{text}"\n')
        with pytest.raises(study.StudyError, match=f"engines.{method}.{option}: {message}$"):
            study.load_study(path)
    for method in ("laplace", "vb"):  # a warm start of numbers written as text too
        with pytest.raises(ValueError, match="warm_start must be"):
            gc.fit(X, y, method=method, likelihood="logistic", warm_start=["0.1"] * 20)
