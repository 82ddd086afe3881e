"""A study's Pareto-k check (``psis = true``): every Gaussian approximation diagnosed in
its job, the numbers in the table, the report's section and recommendation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import gpc_compare as gc
from gpc_compare import study
from gpc_compare.report import write_report
from gpc_compare.study.problem import load_dataset, split_indices, stable_seed

STUDY = """
name = "trusted"
seed = 1
likelihood = "probit"
datasets = [{{name = "crabs", subsample = 60}}]
reference = "mcmc"
{psis}

[kernel]
name = "squared_exponential"
lengthscale = 1.5
variance = 4.0

[hyperparameters]
policy = "fixed"

[splits]
kind = "kfold"
n_splits = 2
n_repeats = 1

[engines.laplace]
[engines.ep]
[engines.mcmc]
draws = 100
tune = 100
chains = 2
"""


def _run(tmp_path: Path, psis: str):
    path = tmp_path / "trusted.toml"
    path.write_text(STUDY.format(psis=psis))
    return study.run_study(path, tmp_path / "out", workers=1)


@pytest.mark.filterwarnings("ignore:MCMC diagnostics")  # (short chains: not the point)
def test_every_gaussian_approximation_is_checked_and_reported(tmp_path) -> None:
    run = _run(tmp_path, "psis = {draws = 1000}")
    t = run.table
    k = t[t.metric == "pareto_k"]
    assert set(k.engine) == {"laplace", "ep"}  # (not MCMC: its draws are the posterior)
    assert len(k) == 4 and k["value"].between(-np.inf, 5).all()
    # the job's number is gc.psis on the job's own fit, with the job's seed
    rec = json.loads(
        next((tmp_path / "out" / "trusted" / "jobs").glob("*__s0__ep__*.json")).read_text()
    )
    spec = study.load_study(tmp_path / "out" / "trusted" / "study.toml").datasets[0]
    data = load_dataset(spec, 1)
    train, test = split_indices(data, {"kind": "kfold", "n_splits": 2}, 0,
                                stable_seed("split", 1, spec.seed_key))  # fmt: skip
    X, Xs = gc.datasets.standardize(data.X[train], data.X[test])
    post = gc.fit(X, data.y[train], method="ep",
                  kernel=gc.kernels.SquaredExponential(1.5, 4.0))  # fmt: skip
    diagnosis = gc.psis(post, draws=1000, random_seed=rec["seed"] % 2**32)
    assert rec["psis"]["pareto_k"] == pytest.approx(diagnosis.pareto_k, rel=1e-9)
    assert rec["psis"]["log_evidence"] == pytest.approx(diagnosis.log_evidence, rel=1e-9)
    corrected = np.mean(diagnosis.log_predictive(Xs, data.y[test]))
    assert rec["psis"]["mean_log_predictive"] == pytest.approx(corrected, rel=1e-9)
    se = diagnosis.mean_log_predictive(Xs, data.y[test])[1]
    assert 0 < rec["psis"]["mean_log_predictive_se"] == pytest.approx(se, rel=1e-9)
    assert len(t[t.metric == "is_mean_log_predictive_se"]) == 4  # (in the table)
    # EP's q is close here (k-hat well below 0.7), and its IS evidence near its own
    ep = t[(t.engine == "ep") & (t.metric == "pareto_k")]["value"]
    assert (ep < 0.7).all()
    shift = (
        t[(t.engine == "ep") & (t.metric == "is_log_evidence")]["value"].to_numpy()
        - t[(t.engine == "ep") & (t.metric == "log_evidence")]["value"].to_numpy()
    )
    assert np.all(np.abs(shift) < 0.5)
    write_report(tmp_path / "out" / "trusted")
    text = (tmp_path / "out" / "trusted" / "report.md").read_text()
    assert "## Can this approximation be trusted here?" in text
    # the figure, inside the section (once: not again under ## Figures)
    assert (tmp_path / "out" / "trusted" / "figures" / "trust.png").stat().st_size > 0
    section = text.split("## Can this approximation be trusted here?")[1].split("\n## ")[0]
    assert "](figures/trust.png)" in section and text.count("figures/trust.png") == 1
    assert "**use Laplace: the cheapest approximation" in text or "**use EP:" in text


def test_psis_is_off_by_default_and_checked_at_load(tmp_path) -> None:
    base = STUDY.format(psis="")
    jobs = study.expand(study.StudyConfig.from_dict(_toml(base)))
    assert all(j.psis is None for j in jobs)
    on = study.expand(study.StudyConfig.from_dict(_toml(STUDY.format(psis="psis = true"))))
    assert [j.psis for j in on if j.engine != "mcmc"] == [
        {"draws": 4000, "proposal": "gaussian"}
    ] * 4
    assert {j.id for j in on} & {j.id for j in jobs} == {j.id for j in jobs if j.engine == "mcmc"}
    for bad, message in [
        ('psis = "yes"', "psis: must be true, false or a table"),
        ("psis = {draws = 10}", r"psis\.draws: must be an integer >= 100"),
        ('psis = {proposal = "cauchy"}', r"psis\.proposal: must be 'gaussian' or 'student_t'"),
        ("psis = {sweeps = 3}", r"psis: unknown field\(s\) \['sweeps'\]"),
    ]:
        with pytest.raises(study.StudyError, match=message):
            study.StudyConfig.from_dict(_toml(STUDY.format(psis=bad)))


def _toml(text: str) -> dict:
    import tomllib

    return tomllib.loads(text)
