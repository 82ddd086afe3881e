"""Studies with the MCMC reference: its comparisons, the report's figures and rank
plots, against one small study run once for the module (MCMC_STUDY)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpc_compare import study
from gpc_compare.cli import main

from .test_study import write_study

MCMC_STUDY = """
name = "{name}"
description = "Laplace and EP against MCMC at EP's hyperparameters."
seed = 1
datasets = [{{name = "breast_cancer", subsample = 60}}]

[kernel]
lengthscale = 3.0
variance = 4.0
variance_bounds = [0.1, 10.0]

[hyperparameters]
policy = "shared"
source = "ep"
n_restarts = 0

[splits]
kind = "holdout"
test_size = 0.25
n_repeats = {n_splits}

[engines.laplace]
[engines.ep]
[engines.mcmc]
draws = 300
tune = 300
chains = 2
evidence = true
evidence_options = {{particles = 32, runs = 4}}
"""


@pytest.fixture(scope="module")
def mcmc_study(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("mcmc")
    path = write_study(tmp, name="vs_mcmc", n_splits=2, text=MCMC_STUDY)
    assert main(["run", str(path), "--output", str(tmp / "out"), "--workers", "2"]) == 0
    return tmp / "out" / "vs_mcmc"


def test_the_rank_plots_show_the_largest_r_hats_as_arviz_computes_them(mcmc_study, monkeypatch):
    """mcmc_diagnostics.png's panels are the latent values with the largest R-hat, titled
    with az.rhat's and az.ess's values (computed by the vectorised equal)."""
    import arviz as az

    from gpc_compare.report import figures
    from gpc_compare.study import read_records

    drawn = []
    monkeypatch.setattr(figures, "save_figure", lambda fig, path, dpi: drawn.append(fig))
    records = [r for r in read_records(mcmc_study)[0].values() if r.ok]
    assert figures.plot_mcmc(mcmc_study, records, ["breast_cancer"], mcmc_study / "x.png")
    first = min((r for r in records if r.idata), key=lambda r: r.split)
    idata = az.from_netcdf(str(mcmc_study / "jobs" / first.idata))
    assert not idata.posterior["f"].encoding.get("zlib")  # (uncompressed: the worker's note)
    rhat = az.rhat(idata, var_names=["f"])["f"].to_numpy()
    ess = az.ess(idata, var_names=["f"])["f"].to_numpy()
    worst = np.argsort(-rhat)[:3]
    titles = [ax.get_title() for ax in drawn[0].axes]
    assert titles == [
        f"breast_cancer split {first.split}: f[{k}], R-hat {rhat[k]:.3f}, ESS {ess[k]:.0f}"
        for k in worst
    ]


def test_the_rank_plots_without_the_samples_at_hand(mcmc_study, tmp_path, monkeypatch):
    """A data set's first split whose InferenceData is at hand is drawn, and the jobs shown
    listed beside the figure; with none at hand (a clone: results/*/jobs/*.nc are not
    committed) the figure drawn when the study ran is kept, captioned so, while every job
    it shows is still the study's (or it lists none: drawn before the list), else dropped."""
    import shutil

    from gpc_compare.report import figures
    from gpc_compare.study import read_records

    copy = tmp_path / mcmc_study.name
    shutil.copytree(mcmc_study, copy)
    png = copy / "figures" / "mcmc_diagnostics.png"
    side = png.with_suffix(".json")
    records = [r for r in read_records(copy)[0].values() if r.ok]
    sampled = sorted((r for r in records if r.idata), key=lambda r: r.split)
    assert len(sampled) == 2
    first, second = sampled
    assert json.loads(side.read_text()) == {"jobs": [first.id]}  # (as the study ran)
    (copy / "jobs" / first.idata).unlink()
    drawn = []
    with monkeypatch.context() as m:
        m.setattr(figures, "save_figure", lambda fig, path, dpi: drawn.append(fig))
        caption = figures.rank_plots(copy, records, ["breast_cancer"])
    assert caption == figures.MCMC_CAPTION
    titles = [ax.get_title() for ax in drawn[0].axes]
    assert all(t.startswith(f"breast_cancer split {second.split}:") for t in titles)
    assert json.loads(side.read_text()) == {"jobs": [second.id]}
    (copy / "jobs" / second.idata).unlink()
    kept = png.read_bytes()
    assert main(["report", str(copy)]) == 0
    text = (copy / "report.md").read_text()
    assert f"![{figures.KEPT_MCMC_CAPTION}](figures/mcmc_diagnostics.png)" in text
    assert png.read_bytes() == kept
    side.unlink()  # (a figure drawn before the list: kept)
    assert figures.rank_plots(copy, records, ["breast_cancer"]) == figures.KEPT_MCMC_CAPTION
    side.write_text(json.dumps({"jobs": ["breast_cancer__s0__mcmc__0000000000"]}))
    assert figures.rank_plots(copy, records, ["breast_cancer"]) is None  # (not this study's)
    assert main(["report", str(copy)]) == 0
    assert "mcmc_diagnostics.png" not in (copy / "report.md").read_text()


def test_comparisons_with_the_reference(mcmc_study: Path) -> None:
    table = pd.read_csv(mcmc_study / "results.csv")
    records = study.load_records(mcmc_study)
    for engine in ("laplace", "ep"):
        for split in (0, 1):
            rec = next(r for r in records.values() if (r.engine, r.split) == (engine, split))
            ref = next(r for r in records.values() if (r.engine, r.split) == ("mcmc", split))
            rows = table[(table.engine == engine) & (table.split == split)]
            value = rows.set_index("metric")["value"]
            m, v = np.array(rec.arrays.mean_train), np.array(rec.arrays.var_train)
            rm, rv = np.array(ref.arrays.mean_train), np.array(ref.arrays.var_train)
            assert value["latent_mean_rmse"] == pytest.approx(np.sqrt(np.mean((m - rm) ** 2)))
            kl = 0.5 * (np.log(v / rv) + (rv + (rm - m) ** 2) / v - 1)
            assert value["marginal_kl_mean"] == pytest.approx(np.mean(kl), rel=1e-9)
            gap = rec.log_evidence - ref.log_evidence
            assert value["evidence_gap"] == pytest.approx(gap)
    # policy "shared": EP selected the values on each fold, every engine ran at them
    per_job = table.drop_duplicates("job_id").set_index(["split", "engine"])
    for split in (0, 1):
        assert per_job.loc[(split, "ep"), "hyperparameters_from"] == "own"
        for engine in ("laplace", "mcmc"):
            assert per_job.loc[(split, engine), "hyperparameters_from"] == "ep"
            assert json.loads(per_job.loc[(split, engine), "hyperparameters"]) == json.loads(
                per_job.loc[(split, "ep"), "hyperparameters"]
            )
    # at moderate hyperparameters EP is the closer approximation (Kuss & Rasmussen 2005)
    mean_kl = table[table.metric == "marginal_kl_mean"].groupby("engine")["value"].mean()
    assert mean_kl["ep"] < mean_kl["laplace"]
    mcmc_rows = table[table.engine == "mcmc"].set_index(["split", "metric"])["value"]
    assert {"r_hat_max", "ess_bulk_min", "divergences"} <= set(mcmc_rows.index.get_level_values(1))
    assert (mcmc_study / "jobs").glob("*.nc")


def test_report_writes_figures_and_summary(mcmc_study: Path) -> None:
    from matplotlib.image import imread

    report = (mcmc_study / "report.md").read_text()
    for heading in (
        "## Findings",
        "## Held-out scores",
        "## Against the reference (mcmc)",
        "## MCMC diagnostics",
        "## Timings",
        "## Figures",
    ):
        assert heading in report
    # which estimator gave the reference's evidence, in the table's note and the findings
    assert "the reference's estimate (SMC from EP in 2 jobs" in report
    assert "EP evidence - SMC" in report and "evidence - AIS" not in report
    figures = sorted(p.name for p in (mcmc_study / "figures").glob("*.png"))
    assert figures == [
        "evidence.png",
        "latent_vs_mcmc.png",
        "mcmc_diagnostics.png",
        "metrics.png",
        "reliability.png",
        "timings.png",
    ]
    for name in figures:
        assert f"figures/{name}" in report
        image = imread(mcmc_study / "figures" / name)
        assert min(image.shape[:2]) > 300
        assert image[..., :3].std() > 0.05  # not blank
    # the summary's numbers are the table's: EP's mean log predictive over the two splits
    table = pd.read_csv(mcmc_study / "results.csv")
    ep = table[(table.engine == "ep") & (table.metric == "mean_log_predictive")]["value"]
    assert f"{ep.mean():.3f}" in report
    # `report` rewrites it from the records alone
    (mcmc_study / "report.md").unlink()
    assert main(["report", str(mcmc_study)]) == 0
    assert (mcmc_study / "report.md").read_text().count("## ") == report.count("## ")


def test_a_comparison_that_cannot_be_made_does_not_stop_the_table(mcmc_study, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(mcmc_study, copy, ignore=shutil.ignore_patterns("*.nc"))
    rec_path = next((copy / "jobs").glob("*__laplace__*.json"))
    record = json.loads(rec_path.read_text())
    record["log_evidence"] = float("-inf")  # not finite: no evidence gap can be formed
    rec_path.write_text(json.dumps(record))
    table = study.assemble(copy)
    rows = table[table.job_id == record["id"]]
    assert "evidence_gap" not in set(rows.metric) and "mean_log_predictive" in set(rows.metric)
    jobs = pd.read_csv(copy / "jobs.csv").set_index("job_id")
    assert "comparison with the reference skipped" in jobs.loc[record["id"], "warnings"]
