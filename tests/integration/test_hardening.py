"""Hardening: names that become paths, values refused at load, damaged records, processes.

Each test reproduces one route an adversarial user took (a study file's name or label
escaping the output directory, an out-of-range option failing every job at run time, a
damaged job record crashing ``run`` and ``report``, workers outliving a killed run, two
runs writing to one directory, nutpie failing to start) and checks what happens now.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpc_compare as gc
from gpc_compare import study
from gpc_compare.cli import main
from gpc_compare.study.lock import output_lock

STUDY = """
name = "{name}"
seed = 0
likelihood = "probit"
datasets = [{{name = "crabs", subsample = 40{label}}}]

[hyperparameters]
policy = "fixed"

[splits]
kind = "kfold"
n_splits = 2
n_repeats = 1

{engines}
"""
ENGINES = "[engines.laplace]\n[engines.ep]"


def write(
    tmp_path: Path, name: str = "hard", label: str = "", extra: str = "", engines: str = ENGINES
) -> Path:
    """A small study (40 crabs, 2 folds, fixed hyperparameters): ``extra`` after the
    engines, or ``engines`` in place of Laplace and EP."""
    path = tmp_path / "studies" / f"{name.replace('/', '_').replace('.', '_')}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(STUDY.format(name=name, label=label, engines=f"{engines}\n{extra}"))
    return path


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def reproducible(table: pd.DataFrame) -> pd.DataFrame:
    t = table.drop(columns=study.TIMING_COLUMNS)
    return t.sort_values(["dataset", "split", "engine", "metric"]).reset_index(drop=True)


# ---------------------------------------------------------------- names that become paths
@pytest.mark.parametrize(
    ("name", "label", "extra", "field"),
    [
        ("..", "", "", "name"),
        ("hard", ', label = "../../../../elsewhere/pwned"', "", r"datasets\[0\]\.label"),
        ("hard", ', label = "/tmp/pwned"', "", r"datasets\[0\]\.label"),
        ("hard", "", '[engines."a/b"]\nmethod = "laplace"', r"engines\.a/b"),
        ("hard", "", '[engines."..".x]', r"engines\.\.\."),
    ],
)
def test_a_name_that_would_escape_the_output_is_refused_at_load(
    tmp_path: Path, capsys, name, label, extra, field
) -> None:
    path = write(tmp_path / "w", name, label, extra)
    before = files_under(tmp_path)
    code = main(["run", str(path), "--output", str(tmp_path / "w" / "out"), "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert path.name in err and "Traceback" not in err
    import re

    assert re.search(field, err), err
    assert files_under(tmp_path) == before  # nothing written anywhere
    assert not (tmp_path / "w" / "out").exists()


def test_every_write_is_checked_to_stay_inside_its_directory(tmp_path: Path) -> None:
    from gpc_compare.study.records import inside, save_record

    assert inside(tmp_path, "a", "b.json") == tmp_path / "a" / "b.json"
    for bad in ("..", "../x.json", "/etc/x.json", "a/../../x.json", "."):
        with pytest.raises(ValueError, match="not inside"):
            inside(tmp_path / "jobs", bad)
    with pytest.raises(ValueError, match="not inside"):
        escaped = study.JobRecord("../../escaped", "s", "d", 0, "ep", "probit", "fixed", 0, {},
                                  "failed", error="E")  # fmt: skip
        save_record(escaped, tmp_path / "jobs")
    assert not (tmp_path / "escaped.json").exists()


# ------------------------------------------------------------- values refused at load time
BAD_OPTIONS = [
    ("ep", 'schedule = "bogus"', r"engines\.ep\.schedule: must be one of"),
    ("ep", "damping = 5.0", r"engines\.ep\.damping: must be in \(0, 1\]"),
    ("ep", "tol = -1.0", r"engines\.ep\.tol: must be a positive number"),
    ("ep", "max_iter = 0", r"engines\.ep\.max_iter: must be a whole number >= 1"),
    ("ep", "max_iter = 1.5", r"engines\.ep\.max_iter: must be a whole number >= 1"),
    ("ep", "min_iter = 9\nmax_iter = 3", r"engines\.ep: min_iter \(9\) exceeds"),
    # the old names (a DeprecationWarning for one release), checked under the new ones
    pytest.param(
        "ep",
        "max_sweeps = 0",
        r"engines\.ep\.max_iter: must be a whole number >= 1",
        marks=pytest.mark.filterwarnings("ignore:.*'max_sweeps' is now:DeprecationWarning"),
    ),
    pytest.param(
        "fitc_ep",
        "min_sweeps = 9\nmax_sweeps = 3",
        r"engines\.fitc_ep: min_iter \(9\) exceeds",
        marks=pytest.mark.filterwarnings("ignore:.*_sweeps' is now:DeprecationWarning"),
    ),
    ("laplace", "max_iter = 0", r"engines\.laplace\.max_iter: must be a whole number >= 1"),
    ("laplace", "max_iter = 1.5", r"engines\.laplace\.max_iter: must be a whole number"),
    ("laplace", "warm_start = [1, 2]", r"engines\.laplace\.warm_start: is a starting point"),
    ("mcmc", "draws = 0", r"engines\.mcmc\.draws: must be a whole number >= 1"),
    ("mcmc", "chains = -1", r"engines\.mcmc\.chains: must be a whole number >= 1"),
    ("mcmc", 'nuts_sampler = "stan"', r"engines\.mcmc\.nuts_sampler: must be one of"),
    ("mcmc", "target_accept = 1.0", r"engines\.mcmc\.target_accept: must be in \(0, 1\)"),
    ("mcmc", "progressbar = 1", r"engines\.mcmc\.progressbar: must be True or False"),
    ("mcmc", 'random_seed = "x"', r"engines\.mcmc\.random_seed: must be None, an integer"),
    (
        "mcmc",
        "priors = {log_variance = [0.0, -1.0]}",
        r"engines\.mcmc\.priors: must give a finite mu",
    ),
    ("mcmc", "evidence = true\nfull_bayes = true", r"engines\.mcmc: evidence=True estimates"),
    ("kl", "site_tol = 0.0", r"engines\.kl\.site_tol: must be a positive number"),
    ("vb", "xi_tol = nan", r"engines\.vb\.xi_tol: must be a positive number"),
]


@pytest.mark.parametrize(("engine", "option", "message"), BAD_OPTIONS)
def test_a_bad_engine_option_fails_at_load_naming_file_engine_and_option(
    tmp_path: Path, capsys, engine, option, message
) -> None:
    path = write(tmp_path, engines=f"[engines.{engine}]\n{option}")
    if engine == "vb":  # (the logistic likelihood only)
        path.write_text(path.read_text().replace('"probit"', '"logistic"'))
    with pytest.raises(study.StudyError, match=message):
        study.load_study(path)
    assert main(["run", str(path), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()  # refused before any job ran


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("[hyperparameters]", "[kernel]\nvariance = inf\n[hyperparameters]"), "kernel.variance"),
        (("[hyperparameters]", "[kernel]\nlengthscale = nan\n[hyperparameters]"), "lengthscale"),
        (("seed = 0", "seed = 0\nmean = nan"), "mean: must be a finite number"),
        (
            ("[hyperparameters]", "[kernel]\nvariance_bounds = [0.01, inf]\n[hyperparameters]"),
            "kernel.variance_bounds",
        ),
    ],
)
def test_a_non_finite_value_fails_at_load(tmp_path: Path, capsys, edit, message) -> None:
    path = write(tmp_path)
    path.write_text(path.read_text().replace(*edit, 1))
    assert main(["run", str(path), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and str(path) in err


def test_the_same_check_serves_gc_fit(data) -> None:
    X, y = data
    for method, option, message in [
        ("ep", {"schedule": "bogus"}, "schedule must be one of"),
        ("ep", {"damping": 5.0}, r"damping must be in \(0, 1\]"),
        ("laplace", {"max_iter": 1.5}, "max_iter must be a whole number"),
        ("mcmc", {"draws": 0}, "draws must be a whole number >= 1"),
    ]:
        with pytest.raises(ValueError, match=message):
            gc.fit(X, y, method=method, **option)
        with pytest.raises(ValueError, match=message):  # before the optimiser runs
            gc.fit(X, y, method=method, optimize=method != "mcmc", **option)


@pytest.mark.parametrize("seed", ["x", -1, 1.5, [1, "a"]])
def test_a_bad_random_seed_is_a_value_error_naming_it(data, seed) -> None:
    X, y = data
    with pytest.raises(ValueError, match="random_seed must be None, an integer"):
        gc.fit(X, y, random_seed=seed)
    with pytest.raises(ValueError, match="random_seed must be None, an integer"):
        gc.fit(X, y, method="ep", optimize=True, random_seed=seed)
    with pytest.raises(ValueError, match="random_state must be None, an integer"):
        gc.GPClassifier(random_state=seed).fit(X, y)


def test_complex_inputs_are_refused_not_cast(data) -> None:
    X, y = data
    with pytest.raises(ValueError, match="X must be real: it has complex values"):
        gc.fit(X + 1j, y)
    with pytest.raises(ValueError, match="y must hold real numbers"):
        gc.fit(X, y + 0j, likelihood=gc.likelihoods.Gaussian(1.0))
    post = gc.fit(X, y)
    with pytest.raises(ValueError, match="Xs must be real"):  # (R&W's name for test inputs)
        post.predict_proba(X + 1j)


@pytest.mark.parametrize("content", [None, b"\x00\x01\x02 binary"])
def test_run_on_a_directory_or_a_binary_file_exits_2_naming_it(
    tmp_path: Path, capsys, content
) -> None:
    target = tmp_path / "thing.toml"
    if content is None:
        target.mkdir()
        what = "is a directory"
    else:
        target.write_bytes(content + b"\xff\xfe")
        what = "not a text file"
    assert main(["run", str(target)]) == 2
    err = capsys.readouterr().err
    assert str(target) in err and what in err and "a study file is a TOML text file" in err


def test_toml_files_are_checked_before_any_script_runs(tmp_path: Path, capsys) -> None:
    marker = tmp_path / "script_ran"
    script = tmp_path / "figure.py"
    script.write_text(f"open({str(marker)!r}, 'w').close()\n\ndef run(output):\n    pass\n")
    bad = write(tmp_path, engines="[engines.laplace]\nmax_iter = 0")
    assert main(["run", str(script), str(bad), "--output", str(tmp_path / "out")]) == 2
    assert "max_iter" in capsys.readouterr().err
    assert not marker.exists()  # the script's top-level code never ran
    no_run = tmp_path / "no_run.py"
    no_run.write_text(f"open({str(marker)!r}, 'w').close()\n")
    assert main(["run", str(no_run)]) == 2
    assert "must define run(output)" in capsys.readouterr().err and not marker.exists()
    help_text = subprocess.run(
        [sys.executable, "-m", "gpc_compare", "run", "--help"], capture_output=True, text=True
    ).stdout
    assert "runs with your permissions" in " ".join(help_text.split())


# ---------------------------------------------------------------------- damaged records
@pytest.fixture(scope="module")
def clean_run(tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    root = tmp_path_factory.mktemp("clean")
    path = write(root)
    summary = study.run_study(path, root / "out", workers=1)
    assert summary.failed == 0
    return path, reproducible(summary.table)


DAMAGE = {
    "list": b"[]",
    "null": b"null",
    "empty object": b"{}",
    "no metrics": None,  # (edits of the real record)
    "no status": None,
    "no id": None,
    "wrong hyperparameters": None,
    "not UTF-8": b'{"id": "\xff\xfe"}',
    "truncated JSON": b'{"id": "x", "sta',
}


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_a_damaged_record_is_set_aside_and_its_job_recomputed(
    tmp_path: Path, clean_run, kind, capsys
) -> None:
    path, clean_table = clean_run
    out = tmp_path / "out"
    first = study.run_study(path, out, workers=1)
    jobs_dir = first.result_dir / "jobs"
    victim = sorted(jobs_dir.glob("*__ep__*.json"))[0]
    record = json.loads(victim.read_text())
    edits = {
        "no metrics": lambda r: r.pop("metrics"),
        "no status": lambda r: r.pop("status"),
        "no id": lambda r: r.pop("id"),
        "wrong hyperparameters": lambda r: r["hyperparameters"]["values"].append("x"),
    }
    if DAMAGE[kind] is None:
        edits[kind](record)
        victim.write_text(json.dumps(record))
    else:
        victim.write_bytes(DAMAGE[kind])
    # the report says what it could not read and writes the rest
    assert main(["report", str(first.result_dir)]) == 0
    err = capsys.readouterr().err
    assert victim.name in err and "left out of the report" in err
    assert victim.name in (first.result_dir / "report.md").read_text()
    # the rerun sets it aside (renamed, not deleted), recomputes it, and the table is whole
    again = study.run_study(path, out, workers=1)
    assert again.done == 1 and again.skipped == len(study.expand(study.load_study(path))) - 1
    assert len(again.set_aside) == 1 and victim.name in again.set_aside[0]
    assert (jobs_dir / f"{victim.name}.damaged").exists() and victim.exists()
    pd.testing.assert_frame_equal(reproducible(again.table), clean_table)


def test_stray_temporaries_are_removed_by_the_next_run(tmp_path: Path, clean_run) -> None:
    path, clean_table = clean_run
    first = study.run_study(path, tmp_path, workers=1)
    strays = [first.result_dir / "jobs" / ".x.json.12345.tmp", first.result_dir / ".r.csv.9.tmp"]
    for stray in strays:
        stray.write_bytes(b"half")
    again = study.run_study(path, tmp_path, workers=1)
    assert again.done == 0 and not any(s.exists() for s in strays)
    pd.testing.assert_frame_equal(reproducible(again.table), clean_table)


def test_a_truncated_inference_data_file_is_recomputed(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, engines="[engines.mcmc]\ndraws = 100\ntune = 100\nchains = 2")
    first = study.run_study(path, tmp_path / "out", workers=1)
    assert first.failed == 0 and first.done == 2
    nc = sorted((first.result_dir / "jobs").glob("*.nc"))[0]
    nc.write_bytes(nc.read_bytes()[: nc.stat().st_size // 2])
    assert main(["report", str(first.result_dir)]) == 0  # no "cannot write the output"
    assert "cannot be read" in capsys.readouterr().err
    again = study.run_study(path, tmp_path / "out", workers=1)
    assert again.done == 1 and again.failed == 0
    assert nc.exists() and (nc.parent / f"{nc.name}.damaged").exists()
    import arviz as az

    assert az.from_netcdf(str(nc)).posterior["f"].shape[:2] == (2, 100)


# --------------------------------------------------------------------------- one run only
def test_a_second_run_into_the_same_output_exits_2(tmp_path: Path, capsys) -> None:
    path = write(tmp_path)
    result_dir = tmp_path / "out" / "hard"
    result_dir.mkdir(parents=True)
    with output_lock(result_dir):  # a run holds the output
        assert main(["run", str(path), "--output", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert f"another run (pid {os.getpid()}) is writing to" in err and "--wait" in err
        assert not (result_dir / "jobs").exists() or not any((result_dir / "jobs").iterdir())
    # --wait: waits for the holder, then runs
    release = threading.Event()

    def hold() -> None:
        with output_lock(result_dir):
            held.set()
            release.wait(10)

    held = threading.Event()
    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    threading.Timer(1.0, release.set).start()
    t0 = time.perf_counter()
    assert main(["run", str(path), "--output", str(tmp_path / "out"), "--workers", "1",
                 "--wait", "--no-report"]) == 0  # fmt: skip
    assert time.perf_counter() - t0 > 0.9 and "waiting for the run" in capsys.readouterr().err
    holder.join()


def test_a_stale_lock_from_a_dead_run_is_taken_over(tmp_path: Path) -> None:
    path = write(tmp_path)
    result_dir = tmp_path / "out" / "hard"
    result_dir.mkdir(parents=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    (result_dir / ".lock").write_text(f"{dead}\n")  # written by a run killed with -9
    summary = study.run_study(path, tmp_path / "out", workers=1)
    assert summary.failed == 0 and summary.done == 4


# ------------------------------------------------------------------------------ processes
SLOW = """
name = "slow"
datasets = ["sonar"]
[hyperparameters]
policy = "fixed"
[splits]
kind = "kfold"
n_splits = 4
n_repeats = 1
[engines.mcmc]
draws = 100000
tune = 500
chains = 1
"""


def _session(sid: int) -> list[int]:
    """Live (not zombie) processes of session ``sid``: the run and everything it started."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(entry))
    return pids


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_no_worker_outlives_a_terminated_or_killed_run(tmp_path: Path, signum) -> None:
    (tmp_path / "slow.toml").write_text(SLOW)
    with open(tmp_path / "err.txt", "w") as err:
        run = subprocess.Popen(
            [sys.executable, "-m", "gpc_compare", "run", "slow.toml", "--output", "out",
             "--workers", "2", "--no-report"],
            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while len(_session(run.pid)) < 4 and time.monotonic() < deadline:  # run, server, 2 jobs
            time.sleep(0.5)
        time.sleep(3)
        assert len(_session(run.pid)) >= 4, "the workers never started"
        os.kill(run.pid, signum)
        code = run.wait(timeout=30)
        # the forkserver, its workers and the resource tracker exit within a second or two
        # (their watchdogs poll every second): polled against a deadline, not a fixed sleep
        deadline = time.monotonic() + 60
        while _session(run.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _session(run.pid) == []
        if signum == signal.SIGTERM:
            text = (tmp_path / "err.txt").read_text()
            assert code == 143 and "rerun the same command to resume" in text, text
    finally:
        for pid in _session(run.pid):
            os.kill(pid, signal.SIGKILL)


# ------------------------------------------------------------------------ nutpie failures
def _crabs() -> tuple[np.ndarray, np.ndarray]:
    data = gc.datasets.load("crabs")
    return gc.datasets.standardize(data.X, data.X)[0], data.y


def test_logistic_mcmc_at_a_huge_signal_variance_starts(recwarn) -> None:
    """nutpie failed at initialisation here ("All initialization points failed"): PyMC's
    Bernoulli(logit_p) has a NaN gradient at |f| ~ 1e4; the likelihood is now
    -softplus(-y f), whose gradient is finite everywhere."""
    X, y = _crabs()
    X, y = X[::4], y[::4]  # (50 cases: |f| still reaches ~1e4)
    kernel = gc.kernels.SquaredExponential(2.0, 1e8)
    post = gc.fit(X, y, method="mcmc", kernel=kernel, likelihood="logistic",
                  draws=100, tune=100, chains=2, random_seed=0)  # fmt: skip
    assert post.diagnostics.sampler == "nutpie" and post.diagnostics.fallback == ""
    assert np.all(np.isfinite(post.latent_mean)) and np.all(post.latent_var > 0)
    assert np.max(np.abs(post.latent_mean)) > 1e3


@pytest.mark.filterwarnings("ignore:MCMC diagnostics")  # (short chains: the route is tested)
@pytest.mark.parametrize("parameterization", ["ep", "prior"])
def test_when_nutpie_cannot_start_pymc_samples_and_the_diagnostics_say_so(
    monkeypatch, data, parameterization
) -> None:
    """Both routes to nutpie: the compiled density ("ep", the default) and nutpie compiling
    the PyMC model ("prior")."""
    import pymc as pm

    from gpc_compare.engines import _sampling

    error = RuntimeError(
        "All initialization points failed\n\nCaused by:\n    Logp function returned "
        "error: ErrorCode(3)\n\nStack backtrace:\n   0: <unknown>"
    )
    real = pm.sample

    def failing_nutpie(*args, **kwargs):
        if kwargs.get("nuts_sampler") == "nutpie":
            raise error
        return real(*args, **kwargs)

    def failing_compiled(*args, **kwargs):
        raise error

    monkeypatch.setattr(pm, "sample", failing_nutpie)
    monkeypatch.setattr(_sampling, "sample_nutpie", failing_compiled)
    X, y = data
    with pytest.warns(RuntimeWarning, match="nutpie failed"):
        post = gc.fit(X, y, method="mcmc", draws=100, tune=100, chains=2, random_seed=1,
                      nuts_sampler="nutpie", parameterization=parameterization)  # fmt: skip
    diag = post.diagnostics
    assert diag.sampler == "pymc" and "All initialization points failed" in diag.fallback
    assert "Stack backtrace" not in diag.fallback and "<unknown>" not in diag.fallback
    assert post.record()["diagnostics"]["fallback"] == diag.fallback
    assert post.idata.posterior["f"].shape[:2] == (2, 100)


def test_every_engine_checks_every_option_it_declares() -> None:
    """Every option is declared once, with a check and a doc (its Options dataclass), and
    every default passes its own check."""
    import dataclasses

    from gpc_compare.engines import ENGINES

    for name, engine in ENGINES.items():
        for field in dataclasses.fields(engine.Options):
            assert callable(field.metadata["check"]) and field.metadata["doc"], (name, field.name)
        defaults = engine.Options.defaults()
        assert engine.check_options(defaults) == defaults, name
        assert engine.Options().to_dict() == defaults, name


def test_an_address_that_is_not_a_dask_scheduler_is_a_clear_error(tmp_path: Path, capsys) -> None:
    """A TCP server that answers, but not as a Dask scheduler: exit 2 naming the address
    (distributed itself failed with "Unable to allocate 3.07 EiB")."""
    import socket
    import threading

    pytest.importorskip("distributed")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]

    def answer() -> None:  # an HTTP-ish reply to whatever is sent, a few times
        for _ in range(4):
            try:
                conn, _ = server.accept()
                conn.recv(100)
                conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi" * 50)
                conn.close()
            except OSError:
                return

    threading.Thread(target=answer, daemon=True).start()
    path = write(tmp_path)
    try:
        address = f"tcp://127.0.0.1:{port}"
        code = main(["run", str(path), "--output", str(tmp_path / "out"), "--scheduler", address])
    finally:
        server.close()
    assert code == 2
    err = capsys.readouterr().err
    assert f"tcp://127.0.0.1:{port} answers, but not as a Dask scheduler" in err, err
