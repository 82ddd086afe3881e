"""The evidence-grid study on a cheap configuration: one data set, n = 30, a 2 x 2 grid.

The grid runs through the study runner (``policy = "grid"``, ``splits.kind = "none"``, an
``[evidence.ais]`` estimator that anneals again where it is unhealthy);
studies/approximations_grid.py draws and writes what is specific to it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpc_compare as gc
from gpc_compare.study import expand, load_records, load_study, load_study_script, run_study
from gpc_compare.study.worker import _problem

SCRIPT = Path(__file__).resolve().parents[2] / "studies" / "approximations_grid.py"

SMALL = """
name = "grid_small"
seed = 0
likelihood = "probit"
datasets = [{name = "crabs", subsample = 30}]

[kernel]
name = "squared_exponential"

[hyperparameters]
policy = "grid"

[hyperparameters.grid]
log_lengthscale = [0.0, 5.0]
log_variance = {start = 0.0, stop = 10.0, num = 2}

[splits]
kind = "none"

[engines.laplace]

[engines.ep]
schedule = "parallel"

[evidence.ais]
temperatures = 100
runs = 8
se_max = 0.5

[evidence.ais.recheck]
temperatures = 1000
"""
#: The same with SMC, the gold standard, beside AIS (small: 4 runs of 32 particles)
SMALL_SMC = SMALL.replace(
    "[evidence.ais]\n", "[evidence.smc]\nparticles = 32\nruns = 4\nse_max = 0.5\n\n[evidence.ais]\n"
)


@pytest.fixture(scope="module")
def script():
    return load_study_script(SCRIPT)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory):
    """The small grid run once through the script (serial), shared by the tests below."""
    root = tmp_path_factory.mktemp("grid")
    path = root / "small.toml"
    path.write_text(SMALL_SMC)
    module = load_study_script(SCRIPT)
    out = root / "out" / "grid_small"
    module.run(out, study=path, workers=1)
    return path, out


def test_the_committed_study_is_the_classic_grid() -> None:
    config = load_study(SCRIPT.with_suffix(".toml"))
    assert config.policy == "grid" and config.splits == {"kind": "none"}
    assert len(config.grid) == 49 and len(expand(config)) == 6 * 49 * 5  # laplace, ep, kl, smc, ais
    assert config.evidence["smc"]["se_max"] == 0.1  # the reliable points: se <= 0.1
    assert sorted({p["log_lengthscale"] for p in config.grid}) == pytest.approx(
        np.linspace(0, 5, 7)
    )
    assert sorted({p["log_variance"] / 2 for p in config.grid}) == pytest.approx(
        np.linspace(0, 5, 7)
    )


def test_each_job_works_on_a_stratified_standardised_subsample(small) -> None:
    path, _ = small
    job = expand(load_study(path))[0]
    X, y, X_test, y_test, kernel, mean, origin = _problem(job, None)
    full = gc.datasets.load("crabs")
    assert X.shape == (30, full.X.shape[1]) and X_test.shape == (0, full.X.shape[1])
    assert y_test.size == 0 and mean is None and origin == "grid"
    assert abs(y.sum() - 30 * full.y.mean()) <= 1  # stratified
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(X.std(axis=0), 1.0, atol=1e-12)
    np.testing.assert_allclose(kernel.theta, [0.0, 0.0])  # the first grid point


def test_grid_rows_match_gc_fit_and_ais_agrees_with_ep(small) -> None:
    path, out = small
    grid = pd.read_csv(out / "grid.csv")
    assert len(grid) == 16 and set(grid.method) == {"laplace", "ep", "ais", "smc"}
    job = expand(load_study(path))[0]
    X, y, *_ = _problem(job, None)
    for (le, ls), rows in grid.groupby(["log_lengthscale", "log_sf"]):
        rows = rows.set_index("method")
        kernel = gc.kernels.SquaredExponential(lengthscale=np.exp(le), variance=np.exp(2 * ls))
        laplace = gc.fit(X, y, method="laplace", kernel=kernel)
        ep = gc.fit(X, y, method="ep", kernel=kernel, schedule="parallel")
        assert rows.log_evidence["laplace"] == pytest.approx(
            laplace.log_marginal_likelihood, abs=1e-10
        )
        assert rows.log_evidence["ep"] == pytest.approx(ep.log_marginal_likelihood, abs=1e-10)
        # AIS is an independent (sampling) estimate of log p(y), and EP is accurate here
        # (its bias, ~0.02 nats at (5, 5), is of the order of AIS's se): 5 se is a test
        # that fails if either is off by more than sampling noise. At (log ell, log sf) =
        # (0, 5) the first anneal is degenerate (se > 0.5) and is annealed again.
        ais_se = rows.se["ais"]
        assert 0 < ais_se <= 0.5
        assert abs(rows.log_evidence["ais"] - rows.log_evidence["ep"]) < 5 * ais_se
        # Laplace's evidence is a lower approximation here (K&R 2005): never above AIS's
        assert rows.log_evidence["laplace"] < rows.log_evidence["ais"] + 5 * ais_se
        # the two estimators (independent runs, different algorithms) agree
        z = (rows.log_evidence["smc"] - rows.log_evidence["ais"]) / np.hypot(ais_se, rows.se["smc"])
        assert abs(z) < 3 and 0 < rows.se["smc"] <= 0.5


def test_only_the_degenerate_point_is_annealed_again(small) -> None:
    _, out = small
    check = pd.read_csv(out / "ais_check.csv")
    assert list(zip(check.log_lengthscale, check.log_sf, strict=True)) == [(0.0, 5.0)]
    row = check.iloc[0]
    assert row.ais_se > 0.5 >= row.ais_long_se and row.reason.startswith("degenerate")
    assert (row.temperatures, row.temperatures_long) == (100, 1000)
    assert abs(row.ais_long - row.ep) < 5 * row.ais_long_se
    grid = pd.read_csv(out / "grid.csv")
    checked = grid[grid.checked]
    assert len(checked) == 1 and checked.method.iloc[0] == "ais"
    assert checked.log_evidence.iloc[0] == row.ais_long  # the gold standard is the long one


def test_the_script_writes_its_figures_and_readme(small) -> None:
    _, out = small
    for name in ("evidence_contours.png", "evidence_gaps.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (out / name).stat().st_size > 20_000
    summary = pd.read_csv(out / "summary.csv")
    assert summary.dataset.tolist() == ["crabs"] and summary.gold_reliable.iloc[0] == 4
    # AIS is healthy (se <= 0.1) at the three points it did not need to anneal again, and
    # agrees with SMC there
    assert summary.ais_healthy.iloc[0] == summary.ais_agree.iloc[0] >= 2
    text = (out / "README.md").read_text()
    assert "2 x 2 grid" in text and "T = 1000" in text and "seed 00" not in text.lower()
    assert "**The gold standard: SMC**" in text and "AIS against SMC" in text


def test_a_rerun_resumes_and_workers_give_the_serial_results(small, tmp_path) -> None:
    path, out = small
    config = load_study(path)
    again = run_study(config, out.parent, workers=1)
    assert (again.skipped, again.done) == (again.total, 0)  # nothing recomputed
    pooled = run_study(config, tmp_path, workers=2)
    assert pooled.done == pooled.total == 16
    a = pd.read_csv(out / "results.csv").drop(columns=["fit_seconds", "predict_seconds"])
    b = pooled.table.drop(columns=["fit_seconds", "predict_seconds"])
    pd.testing.assert_frame_equal(a, b, check_dtype=False)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (('policy = "grid"', 'policy = "fixed"'), r"hyperparameters\.grid: policy = 'grid' and"),
        (("[hyperparameters.grid]\n", "[hyperparameters.nogrid]\n"), r"hyperparameters: unknown"),
        (("log_lengthscale = [0.0, 5.0]", "log_ell = [0.0]"), r"grid \(for 'crabs', d = 5\)"),
        (("log_lengthscale = [0.0, 5.0]", "log_lengthscale = []"), r"grid\.log_lengthscale"),
        (("log_lengthscale = [0.0, 5.0]", 'log_lengthscale = ["a"]'), r"grid\.log_lengthscale"),
        (("num = 2}", "num = 0}"), r"grid\.log_variance\.num: must be an integer >= 1"),
        (("num = 2}", "num = 2, step = 1}"), r"grid\.log_variance: unknown field"),
        (('kind = "none"', 'kind = "none"\nn_splits = 2'), r"splits: kind = 'none'"),
        (("[evidence.ais]\n", "[evidence.nested]\n"), r"evidence\.nested: unknown evidence"),
        (
            ("[evidence.ais]\n", "[evidence.smc]\nruns = 1\n[evidence.ais]\n"),
            r"evidence\.smc\.runs: must be a whole number >= 2",
        ),
        (
            ("[evidence.ais]\n", "[evidence.smc]\ncess = 1.5\n[evidence.ais]\n"),
            r"evidence\.smc\.cess: must be in \(0, 1\)",
        ),
        (
            ("[evidence.ais]\n", "[evidence.smc]\ntemperatures = 9\n[evidence.ais]\n"),
            r"evidence\.smc: unknown field",
        ),
        (("runs = 8", "runs = 8\ndraws = 3"), r"evidence\.ais: unknown field"),
        (("runs = 8", "runs = 1"), r"evidence\.ais\.runs: must be an integer >= 2"),
        (("se_max = 0.5", 'se_max = 0.5\nstart = "laplace"'), r"evidence\.ais\.start"),
        (("temperatures = 1000", "temperatures = 1000\nz = -1"), r"recheck\.z: must be"),
        (('policy = "grid"', 'policy = "grid"\nsource = "ep"'), r"a grid study has no source"),
    ],
)
def test_grid_and_evidence_fields_are_checked_at_load(tmp_path: Path, edit, message) -> None:
    path = tmp_path / "small.toml"
    assert edit[0] in SMALL
    path.write_text(SMALL.replace(*edit))
    with pytest.raises(ValueError, match=message):
        load_study(path)


def test_an_evidence_estimator_runs_at_the_source_engines_values(tmp_path: Path) -> None:
    """Outside a grid, a gold-standard estimator takes the values its study's source
    selected (as an engine without an evidence gradient does)."""
    text = (
        SMALL.replace('policy = "grid"', 'policy = "optimize"\nn_restarts = 0')
        .replace("[hyperparameters.grid]\n", "")
        .replace("log_lengthscale = [0.0, 5.0]\n", "")
        .replace("log_variance = {start = 0.0, stop = 10.0, num = 2}\n", "")
        .replace('kind = "none"', 'kind = "kfold"\nn_splits = 2\nn_repeats = 1')
    )
    path = tmp_path / "opt.toml"
    path.write_text(text)
    config = load_study(path)
    assert config.source == "ep"
    summary = run_study(config, tmp_path, workers=1)
    assert summary.failed == 0
    table = summary.table
    hp = table[table.metric == "log_evidence"].set_index(["split", "engine"]).hyperparameters
    for split in (0, 1):
        assert hp[(split, "ais")] == hp[(split, "ep")] != hp[(split, "laplace")]
    ais = table[(table.engine == "ais") & (table.metric == "log_evidence")]
    assert (ais.hyperparameters_from == "ep").all()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("[evidence.ais]\n", '[evidence.ep]\nmethod = "ais"\n'), r"evidence\.ep: 'ep' already"),
        (("temperatures = 1000", "temperatures = 100"), r"recheck\.temperatures: must exceed"),
        (("log_variance = {", "mean = [0.0, 1.0]\nlog_variance = {"), r"grid\.mean: a grid over"),
        (
            ("[engines.laplace]\n", "[engines.laplace]\n\n[engines.vb]\n"),
            r"engines\.vb: the VB engine \(method='vb'\) does not take",
        ),
    ],
)
def test_evidence_labels_rechecks_and_mean_axes_are_checked(tmp_path: Path, edit, message):
    path = tmp_path / "small.toml"
    assert edit[0] in SMALL
    path.write_text(SMALL.replace(*edit))
    with pytest.raises(ValueError, match=message):
        load_study(path)


def test_the_smc_jobs_record_their_health(small) -> None:
    """``[evidence.smc]`` runs gc.evidence.estimate as a job of its own: its schedule's
    length and health are in the table beside AIS's, its options in its records."""
    _, out = small
    t = pd.read_csv(out / "results.csv")
    steps = t[(t.engine == "smc") & (t.metric == "evidence_temperatures")].value
    assert len(steps) == 4 and (steps >= 1).all()
    assert (t[(t.engine == "smc") & (t.metric == "evidence_healthy")].value == 1).all()
    records = [r for r in load_records(out).values() if r.engine == "smc"]
    assert {r.evidence.health["particles"] for r in records} == {32}
    assert {r.evidence.method for r in records} == {"smc"}


def test_evidence_beside_an_mcmc_reference_and_from_the_prior(tmp_path: Path) -> None:
    """A fixed-hyperparameter study with held-out splits, an MCMC reference and an AIS job
    started from the prior: the table compares the engines with the reference (latent
    moments, evidence gap) and lists the estimator's health; the report is written."""
    from gpc_compare.report import write_report

    text = (
        SMALL.replace('policy = "grid"', 'policy = "fixed"')
        .replace("[hyperparameters.grid]\n", "")
        .replace("log_lengthscale = [0.0, 5.0]\n", "")
        .replace("log_variance = {start = 0.0, stop = 10.0, num = 2}\n", "")
        .replace('kind = "none"', 'kind = "kfold"\nn_splits = 2\nn_repeats = 1')
        .replace(
            "[evidence.ais]\n",
            "[engines.mcmc]\ndraws = 200\ntune = 200\nchains = 2\n"
            'evidence = "ais"\nevidence_options = {runs = 4, temperatures = 50}\n\n[evidence.ais]\n'
            'start = "prior"\n',
        )  # fmt: skip
        .replace("temperatures = 100\n", "temperatures = 200\n")
    )
    path = tmp_path / "ref.toml"
    path.write_text(text)
    config = load_study(path)
    assert config.reference == "mcmc" and config.evidence["ais"]["start"] == "prior"
    summary = run_study(config, tmp_path, workers=1)
    assert summary.failed == 0
    t = summary.table
    laplace = t[t.engine == "laplace"]
    assert {"marginal_kl_mean", "evidence_gap"} <= set(laplace.metric)
    records = {(r.engine, r.split): r for r in load_records(tmp_path / "grid_small").values()}
    for split in (0, 1):
        # two independent AIS estimates of one evidence: from the prior (this job, 200
        # temperatures, annealed again with 1000 if unhealthy) and from EP (MCMC's)
        a, b = records[("ais", split)], records[("mcmc", split)]
        se = np.hypot(a.log_evidence_se, b.log_evidence_se)
        assert 0 < se < 0.5
        assert abs(a.log_evidence - b.log_evidence) < 5 * se
        assert a.evidence.start == "prior" and a.evidence.start_log_evidence is None
        assert a.hyperparameters.values == b.hyperparameters.values
    assert not set(t[t.engine == "ais"].metric) & {"marginal_kl_mean", "evidence_gap"}
    report = write_report(tmp_path / "grid_small")
    text = report.read_text()
    assert "## Gold-standard evidence" in text and "| crabs | ais | 2 |" in text
    assert "## Held-out scores" in text and "## Against the reference (mcmc)" in text


def test_the_report_of_a_grid_study(small) -> None:
    from gpc_compare.report import write_report

    _, out = small
    text = write_report(out).read_text()
    assert "policy `grid` (4 grid points)" in text and "none is held out" in text
    assert "largest log evidence over the grid" in text and "## Held-out scores" not in text
    assert "| crabs | ais | 4 | 4 | 1 |" in text  # 4 jobs, all healthy, one annealed again
    assert (out / "figures" / "evidence.png").exists()
    assert not (out / "figures" / "metrics.png").exists()


def test_an_smc_estimate_above_se_max_is_made_again_with_more_runs(tmp_path: Path) -> None:
    """Where SMC's standard error exceeds ``se_max``, the job estimates again with
    ``recheck_runs`` runs (the final estimate, its se smaller); both are recorded."""
    text = (
        SMALL.replace("log_lengthscale = [0.0, 5.0]", "log_lengthscale = [0.0]")
        .replace("num = 2}", "num = 1}")
        .replace('[engines.ep]\nschedule = "parallel"\n', "")
        .replace(
            "[evidence.ais]\n",
            "[evidence.smc]\nparticles = 16\nruns = 2\n"
            "se_max = 1e-9\nrecheck_runs = 8\n\n[evidence.ais]\n",
        )  # fmt: skip
    )
    path = tmp_path / "recheck.toml"
    path.write_text(text)
    config = load_study(path)
    assert config.evidence["smc"]["recheck_runs"] == 8
    assert run_study(config, tmp_path, workers=1).failed == 0
    (rec,) = [r for r in load_records(tmp_path / "grid_small").values() if r.engine == "smc"]
    first, again = rec.evidence.runs
    assert (first.runs, again.runs) == (2, 8) and rec.evidence.health["runs"] == 8
    assert rec.evidence.recheck.startswith("se ") and rec.log_evidence == again.log_evidence
    assert not rec.convergence.converged  # (se_max = 1e-9 is out of reach)
    for bad in ("-1", "2", "1.5"):  # (2 runs are not more than the first's 2)
        path.write_text(text.replace("recheck_runs = 8", f"recheck_runs = {bad}"))
        with pytest.raises(ValueError, match=r"evidence\.smc\.recheck_runs: must be"):
            load_study(path)
