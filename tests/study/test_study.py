"""The study runner: study files, jobs, execution (serial, processes, Dask), resuming,
the tidy table, the report and the command line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpc_compare as gc
from gpc_compare import datasets, study
from gpc_compare.cli import main
from gpc_compare.study import executors, problem, worker

# A small, fast study: 2 folds of 80 breast-cancer cases, Laplace and EP with their
# own hyperparameters. Every job takes well under a second.
FAST = """
name = "{name}"
description = "test study"
seed = 3
likelihood = "probit"
datasets = [{{name = "breast_cancer", subsample = 80}}]

[kernel]
name = "squared_exponential"
lengthscale = "sqrt_d"

[hyperparameters]
policy = "optimize"
n_restarts = 0

[splits]
kind = "kfold"
n_splits = {n_splits}
n_repeats = 1

[engines.laplace]
[engines.ep]
"""


def write_study(tmp_path: Path, name: str = "fast", n_splits: int = 2, text: str = FAST) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text.format(name=name, n_splits=n_splits))
    return path


def reproducible(table: pd.DataFrame) -> pd.DataFrame:
    """The table without wall-clock columns, in a canonical order."""
    t = table.drop(columns=study.TIMING_COLUMNS)
    return t.sort_values(["dataset", "split", "engine", "metric"]).reset_index(drop=True)


# --------------------------------------------------------------------------- study files
@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("[splits]", "[splits]\nbogus = 1"), r"splits: unknown field\(s\) \['bogus'\]"),
        (('name = "breast_cancer"', 'name = "nope"'), r"datasets\[0\]\.name: unknown data set"),
        (("[engines.ep]", "[engines.vi]"), r"engines\.vi: unknown engine 'vi'"),
        (
            ("[engines.ep]", "[engines.ep]\nsweeps = 3"),
            r"engines\.ep: unknown option\(s\) \['sweeps'\]",
        ),
        (("n_splits = 2", "n_splits = 1"), r"splits\.n_splits: must be an integer >= 2"),
        (('likelihood = "probit"', 'likelihood = "cauchit"'), r"likelihood:"),
        (('policy = "optimize"', 'policy = "guess"'), r"hyperparameters\.policy"),
        (('lengthscale = "sqrt_d"', "lengthscale = -1"), r"kernel\.lengthscale"),
        (('kind = "kfold"', 'kind = "kfold"\ntest_size = 0.2'), r"splits: test_size"),
        (("seed = 3", "seed = [3"), r"not valid TOML"),
        (('lengthscale = "sqrt_d"', 'lengthscale = "sqrt_d"\nard = "false"'), r"kernel\.ard"),
        (('name = "breast_cancer"', 'name = ["breast_cancer"]'), r"datasets\[0\]\.name"),
        (("[engines.ep]", '[engines.ep]\nmax_iter = "x"'), r"engines\.ep\.max_iter: must be"),
        (
            ('likelihood = "probit"', 'likelihood = "softmax"'),
            r"engines\.ep: the EP engine \(method='ep'\) does not take the 'softmax'",
        ),
        (("subsample = 80", "subsample = 80, label = 'bc'"), None),
        (("n_splits = 2", "n_splits = 40"), r"too few for 40 stratified folds"),
        (("[engines.laplace]", "[engines.laplace]\n[engines.mcmc]"), None),  # valid
    ],
)
def test_malformed_study_names_the_field(tmp_path: Path, edit, message, capsys) -> None:
    path = write_study(tmp_path)
    path.write_text(path.read_text().replace(*edit))
    if message is None:
        config = study.load_study(path)
        assert config.source in ("ep", None)  # MCMC takes EP's values under "optimize"
        return
    with pytest.raises(study.StudyError, match=message):
        study.load_study(path)
    # the command line: exit code 2 and the same message, no traceback
    assert main(["run", str(path), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpc-compare: error: ") and str(path) in err
    assert "Traceback" not in err


def test_missing_study_file_and_results(tmp_path: Path, capsys) -> None:
    assert main(["run", str(tmp_path / "absent.toml")]) == 2
    assert "no such study file" in capsys.readouterr().err
    assert main(["report", str(tmp_path)]) == 2
    assert "no study results" in capsys.readouterr().err


def test_expand_jobs_ids_and_dependencies(tmp_path: Path) -> None:
    path = write_study(tmp_path, n_splits=3)
    text = path.read_text().replace('policy = "optimize"', 'policy = "shared"\nsource = "ep"')
    path.write_text(text + "[engines.mcmc]\ndraws = 50\n")
    config = study.load_study(path)
    jobs = study.expand(config)
    assert len(jobs) == 1 * 3 * 3
    assert [j.engine for j in jobs[:3]] == ["ep", "laplace", "mcmc"]  # the source first
    by_id = {j.id: j for j in jobs}
    for job in jobs:
        if job.engine == "ep":
            assert job.depends_on is None
        else:
            dep = by_id[job.depends_on]
            assert (dep.engine, dep.split) == ("ep", job.split)
    # ids are stable across expansions and change with anything that changes a result
    assert [j.id for j in study.expand(study.load_study(path))] == [j.id for j in jobs]
    path.write_text(text.replace("seed = 3", "seed = 4") + "[engines.mcmc]\ndraws = 50\n")
    assert not set(j.id for j in study.expand(study.load_study(path))) & set(by_id)
    assert len({j.seed for j in jobs}) == len(jobs)  # every job its own seed


def test_a_job_samples_one_chain_at_a_time_unless_the_study_says(tmp_path: Path) -> None:
    """The workers are a study's parallelism: an MCMC job's chains run one at a time
    (``cores = 1``, as its BLAS runs one thread) unless the study sets ``cores``; engines
    without the option are not given it."""
    path = write_study(tmp_path, n_splits=2)
    text = path.read_text() + "[engines.mcmc]\ndraws = 50\n"
    path.write_text(text)
    options = {j.engine: worker._fit_options(j) for j in study.expand(study.load_study(path))}
    assert options["mcmc"]["cores"] == 1
    assert "cores" not in options["laplace"] and "cores" not in options["ep"]
    path.write_text(text + "cores = 2\n")
    jobs = study.expand(study.load_study(path))
    assert [worker._fit_options(j)["cores"] for j in jobs if j.engine == "mcmc"] == [2, 2]


# --------------------------------------------------------------------------- running
def test_run_scores_match_a_direct_fit(tmp_path: Path) -> None:
    """The table's numbers are those of gc.fit on the same standardised fold."""
    path = write_study(tmp_path)
    summary = study.run_study(path, tmp_path / "out", workers=1)
    assert (summary.total, summary.done, summary.failed) == (4, 4, 0)
    table = pd.read_csv(tmp_path / "out" / "fast" / "results.csv")
    assert list(table.columns) == study.TABLE_COLUMNS
    assert set(table.metric) >= {
        "mean_log_predictive",
        "information_bits",
        "error_rate",
        "brier",
        "ece",
        "auc",
        "log_evidence",
    }
    assert table.groupby(["dataset", "split", "engine", "metric"]).size().max() == 1

    # redo split 1 of EP by hand, with the same seeds the runner derives
    job = next(j for j in study.expand(study.load_study(path)) if (j.split, j.engine) == (1, "ep"))
    data = problem.load_dataset(job.dataset, job.study_seed)
    assert data.n_samples == 80 and data.y.sum() == round(80 * 212 / 569)
    train, test = problem.split_indices(
        data, job.splits, 1, problem.stable_seed("split", 3, "breast_cancer")
    )
    assert train.size + test.size == 80 and not set(train) & set(test)
    Xtr, Xte = datasets.standardize(data.X[train], data.X[test])
    kernel = gc.kernels.SquaredExponential(lengthscale=np.sqrt(30.0))
    post = gc.fit(
        Xtr,
        data.y[train],
        method="ep",
        kernel=kernel,
        optimize=True,
        n_restarts=0,
        random_seed=job.seed,
    )
    lp = post.log_predictive(Xte, data.y[test])
    rows = table[(table.split == 1) & (table.engine == "ep")].set_index("metric")["value"]
    assert rows["mean_log_predictive"] == pytest.approx(np.mean(lp), abs=1e-9)
    assert rows["log_evidence"] == pytest.approx(post.log_marginal_likelihood, abs=1e-9)
    p1 = post.predict_proba(Xte)
    assert rows["error_rate"] == pytest.approx(np.mean((p1 > 0.5) != (data.y[test] == 1)))
    hp = json.loads(table[(table.split == 1) & (table.engine == "ep")]["hyperparameters"].iloc[0])
    assert list(hp.values()) == pytest.approx(list(post.hyperparameters), abs=1e-9)


def test_processes_and_serial_give_the_same_table(tmp_path: Path) -> None:
    path = write_study(tmp_path)
    serial = study.run_study(path, tmp_path / "serial", workers=1).table
    parallel = study.run_study(path, tmp_path / "parallel", workers=2).table
    pd.testing.assert_frame_equal(reproducible(serial), reproducible(parallel))


def test_dask_local_cluster_gives_the_same_table(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    path = write_study(tmp_path)
    local = study.run_study(path, tmp_path / "local", workers=1).table
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        code = main(
            [
                "run",
                str(path),
                "--output",
                str(tmp_path / "dask"),
                "--scheduler",
                cluster.scheduler_address,
                "--no-report",
            ]
        )
    assert code == 0
    on_dask = pd.read_csv(tmp_path / "dask" / "fast" / "results.csv")
    pd.testing.assert_frame_equal(reproducible(local), reproducible(on_dask), check_dtype=False)


def test_failed_job_is_recorded_and_the_study_goes_on(tmp_path: Path, monkeypatch, capsys):
    path = write_study(tmp_path)
    real = gc.fit

    calls = []

    def flaky(X, y, method="laplace", **kw):
        calls.append(method)
        if method == "laplace" and calls.count("laplace") == 1:  # the first Laplace job fails
            raise np.linalg.LinAlgError("injected failure")
        return real(X, y, method=method, **kw)

    monkeypatch.setattr(worker, "fit", flaky)
    out = tmp_path / "out"
    code = main(["run", str(path), "--output", str(out), "--workers", "1", "--no-report"])
    assert code == 1
    captured = capsys.readouterr()
    assert "FAILED breast_cancer/split" in captured.out and "injected failure" in captured.out
    jobs = pd.read_csv(out / "fast" / "jobs.csv")
    assert sorted(jobs.status) == ["failed", "ok", "ok", "ok"]
    failed = jobs[jobs.status == "failed"].iloc[0]
    record = json.loads((out / "fast" / "jobs" / f"{failed.job_id}.json").read_text())
    assert "LinAlgError: injected failure" in record["error"]
    assert "Traceback" in record["traceback"] and "flaky" in record["traceback"]
    # without retrying, the earlier failure is listed and the exit code says so
    assert main(["run", str(path), "--output", str(out), "--no-retry-failed", "--no-report"]) == 1
    assert "FAILED (earlier run, not retried) breast_cancer/split" in capsys.readouterr().out
    # the rerun retries only the failed job, and now it succeeds
    monkeypatch.setattr(worker, "fit", real)
    summary = study.run_study(path, out, workers=1)
    assert (summary.skipped, summary.done, summary.failed) == (3, 1, 0)
    assert (pd.read_csv(out / "fast" / "jobs.csv").status == "ok").all()


def test_killed_run_resumes_to_the_uninterrupted_table(tmp_path: Path) -> None:
    """SIGKILL part-way, rerun: the same table as one run, no job lost or duplicated."""
    # larger folds and a restart, so that a job takes long enough (~0.3 s) to be caught
    slower = FAST.replace("subsample = 80", "subsample = 160").replace(
        "n_restarts = 0", "n_restarts = 1"
    )
    path = write_study(tmp_path, n_splits=4, text=slower)
    out = tmp_path / "killed"
    jobs_dir = out / "fast" / "jobs"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "gpc_compare", "run", str(path), "--output", str(out)]
    proc = subprocess.Popen(
        [*cmd, "--workers", "1", "--no-report"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if len(list(jobs_dir.glob("*.json"))) >= 2:
            break
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    n_before = len(list(jobs_dir.glob("*.json")))
    assert 2 <= n_before < 8, "the run should have been killed part-way"

    resumed = subprocess.run([*cmd, "--workers", "2"], env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{n_before} done earlier, {8 - n_before} run now, 0 failed" in resumed.stdout
    records = [json.loads(p.read_text()) for p in jobs_dir.glob("*.json")]
    assert len(records) == 8 and len({r["id"] for r in records}) == 8

    whole = study.run_study(path, tmp_path / "whole", workers=2).table
    table = pd.read_csv(out / "fast" / "results.csv")
    pd.testing.assert_frame_equal(reproducible(whole), reproducible(table), check_dtype=False)
    report = (out / "fast" / "report.md").read_text()
    # Laplace and EP each selected their own values: the report compares the selections
    assert "## Hyperparameter selections compared" in report
    assert "| breast_cancer | Laplace vs EP |" in report


def test_list_command(tmp_path: Path, capsys) -> None:
    write_study(tmp_path)
    (tmp_path / "broken.toml").write_text("datasets = 3\n")
    assert main(["list", "studies", "--studies-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "fast" in out and "4 jobs" in out
    assert "broken" in out and "datasets: must be a non-empty list" in out
    assert main(["list", "engines"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in ("laplace", "ep", "mcmc"))


def test_engine_variants_by_label(tmp_path: Path) -> None:
    text = FAST.replace(
        "[engines.ep]",
        '[engines.ep]\n[engines.ep_loo]\nmethod = "ep"\nobjective = "loo_fixed_sites"',
    )
    path = write_study(tmp_path, text=text)
    config = study.load_study(path)
    assert config.methods == {"laplace": "laplace", "ep": "ep", "ep_loo": "ep"}
    jobs = [j for j in study.expand(config) if j.engine == "ep_loo"]
    assert [j.method for j in jobs] == ["ep", "ep"]
    assert jobs[0].options == {"objective": "loo_fixed_sites"}
    good = path.read_text()
    path.write_text(good.replace('method = "ep"', 'method = "nope"'))
    with pytest.raises(study.StudyError, match=r"engines\.ep_loo\.method: unknown engine 'nope'"):
        study.load_study(path)
    path.write_text(good.replace("[engines.laplace]", '[engines.laplace]\nobjective = "loo"'))
    with pytest.raises(study.StudyError, match=r"engines\.laplace\.objective: the LOO"):
        study.load_study(path)


def test_study_scripts_run_through_the_command_line(tmp_path: Path, capsys) -> None:
    script = tmp_path / "tiny.py"
    script.write_text(
        '"""A tiny figure study."""\n'
        "def run(output):\n"
        "    output.mkdir(parents=True, exist_ok=True)\n"
        "    (output / 'README.md').write_text('found 42')\n"
    )
    out = tmp_path / "results"
    assert main(["run", str(script), "--output", str(out)]) == 0
    assert (out / "tiny" / "README.md").read_text() == "found 42"
    assert main(["list", "studies", "--studies-dir", str(tmp_path)]) == 0
    assert "script  A tiny figure study." in capsys.readouterr().out
    (tmp_path / "norun.py").write_text("x = 1\n")
    assert main(["run", str(tmp_path / "norun.py")]) == 2
    assert "must define run(output)" in capsys.readouterr().err


def test_study_seed_changes_the_splits(tmp_path: Path) -> None:
    tests = []
    for seed in (3, 4):
        path = write_study(tmp_path, name=f"s{seed}")
        path.write_text(path.read_text().replace("seed = 3", f"seed = {seed}"))
        job = study.expand(study.load_study(path))[0]
        data = problem.load_dataset(job.dataset, job.study_seed)
        seed_split = problem.stable_seed("split", job.study_seed, job.dataset.label)
        tests.append(data.X[problem.split_indices(data, job.splits, 0, seed_split)[1]])
    assert tests[0].shape == tests[1].shape and not np.array_equal(tests[0], tests[1])


@pytest.mark.parametrize(
    ("signum", "raised"),
    [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, executors.Terminated)],
)
def test_serial_interrupt_discards_the_job_caught_by_a_sampler(signum, raised) -> None:
    def sampler_that_catches_the_interrupt() -> dict:
        try:  # as PyMC and nutpie do: catch it and return the draws so far
            os.kill(os.getpid(), signum)
            time.sleep(5)
        except KeyboardInterrupt:
            return {"status": "ok"}
        return {"status": "not interrupted"}

    executor = executors.SerialExecutor()
    try:
        job = executor.submit(lambda: {"status": "ok"})
        assert executor.wait([job]) == {job} and job.result() == {"status": "ok"}
        with pytest.raises(raised) as caught:
            executor.submit(sampler_that_catches_the_interrupt).result()
        assert caught.type is raised  # (Terminated is a KeyboardInterrupt: not the other way)
    finally:
        executor.close()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers restored


def test_an_engine_can_run_at_the_source_engines_values(tmp_path: Path) -> None:
    text = FAST.replace(
        "[engines.ep]",
        '[engines.ep]\n[engines.laplace_at_ep]\nmethod = "laplace"\nhyperparameters = "source"',
    )
    path = write_study(tmp_path, text=text)
    config = study.load_study(path)
    assert config.source == "ep"
    jobs = study.expand(config)
    by_id = {j.id: j for j in jobs}
    for job in jobs:
        if job.engine == "laplace_at_ep":
            assert by_id[job.depends_on].engine == "ep" and "hyperparameters" not in job.options
        else:
            assert job.depends_on is None  # "optimize": Laplace and EP select their own
    table = study.run_study(config, tmp_path / "out", workers=1).table
    hp = table.drop_duplicates("job_id").set_index(["split", "engine"])
    for split in (0, 1):
        assert hp.loc[(split, "laplace_at_ep"), "hyperparameters_from"] == "ep"
        assert (
            hp.loc[(split, "laplace_at_ep"), "hyperparameters"]
            == hp.loc[(split, "ep"), "hyperparameters"]
        )
    path.write_text(
        path.read_text().replace('hyperparameters = "source"', 'hyperparameters = "own"')
    )
    with pytest.raises(study.StudyError, match=r"engines\.laplace_at_ep\.hyperparameters"):
        study.load_study(path)
