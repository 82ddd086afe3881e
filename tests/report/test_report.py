"""The report cannot mislead: intervals inside each metric's range, no "-0.000", a
hyperparameter at its bound flagged, selection timed apart from one fit, the command
that reproduces the run, and a win only when it is larger than its interval."""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import gpc_compare as gc
from gpc_compare import metrics, study
from gpc_compare.cli import build_parser, main
from gpc_compare.hyperparameters import at_bounds
from gpc_compare.report import run_command
from gpc_compare.report.findings import findings
from gpc_compare.report.formatting import fmt
from gpc_compare.report.styles import set_styles

# Laplace and EP select their own hyperparameters under a signal-variance bound of 1
# (ln 1 = 0) that breast cancer's evidence presses against.
BOUNDED = """
name = "bounded"
description = "test study"
seed = 3
likelihood = "probit"
datasets = [{name = "breast_cancer", subsample = 80}]

[kernel]
name = "squared_exponential"
lengthscale = "sqrt_d"
variance_bounds = [0.1, 1.0]

[hyperparameters]
policy = "optimize"
n_restarts = 0

[splits]
kind = "kfold"
n_splits = 3
n_repeats = 1

[engines.laplace]
[engines.ep]
"""


def _t_interval(v: list[float]) -> tuple[float, float]:
    v = np.asarray(v, dtype=float)
    half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return v.mean() - half, v.mean() + half


# --------------------------------------------------------------------------- intervals
def test_clipped_t_interval_stays_in_the_range() -> None:
    # error rates 0, 0, 0.1 over three splits: the t-interval starts at -0.110
    lo, _ = _t_interval([0.0, 0.0, 0.1])
    assert lo == pytest.approx(-0.1101, abs=1e-4)
    mean, low, high, clipped = metrics.clipped_t_interval([0.0, 0.0, 0.1], "error_rate")
    assert (mean, low, clipped) == (pytest.approx(1 / 30), 0.0, True)
    assert high == pytest.approx(1 / 30 + (1 / 30 - lo))
    # an AUC of 1, 0.99, 1: the t-interval ends at 1.011, the clipped one at 1
    assert _t_interval([1.0, 0.99, 1.0])[1] == pytest.approx(1.0110, abs=1e-4)
    assert metrics.clipped_t_interval([1.0, 0.99, 1.0], "auc")[2] == 1.0
    table = pd.DataFrame(
        {"dataset": "d", "engine": "e", "metric": "auc", "split": [0, 1, 2],
         "value": [1.0, 0.99, 1.0]}
    )  # fmt: skip
    row = metrics.summarize(table).iloc[0]
    assert (row["high"], row["interval"]) == (1.0, "t, clipped")
    # an unbounded metric is not clipped
    assert metrics.clipped_t_interval([-1.0, 0.0, 1.0], "evidence_gap")[3] is False


def _splits(rng: np.random.Generator) -> dict[int, dict]:
    """Three splits of 30 test cases, confident and nearly always right (one error)."""
    out = {}
    for s in range(3):
        y = np.repeat([0, 1], 15)
        p1 = np.where(y == 1, rng.uniform(0.8, 1.0, 30), rng.uniform(0.0, 0.2, 30))
        if s == 2:
            p1[0] = 0.9  # a negative case predicted positive, above some positives
        log_p = np.log(np.where(y == 1, p1, 1.0 - p1))
        out[s] = {"y": y, "p1": p1, "log_p": log_p, "base_rate": 0.5}
    return out


def test_bootstrap_over_cases_rescoring_and_range() -> None:
    splits = _splits(np.random.default_rng(0))
    # the identity resample gives exactly score()'s values
    identity = {s: np.arange(30)[None, :] for s in splits}
    reps = metrics.bootstrap_scores(splits, identity)
    scores = [metrics.score(c["y"], c["p1"], c["log_p"], 0.5) for c in splits.values()]
    for m in metrics.BOOTSTRAP_METRICS:
        assert reps[m][0] == pytest.approx(np.mean([s[m] for s in scores]), rel=1e-12)
    errors = [s["error_rate"] for s in scores]
    assert errors == pytest.approx([0.0, 0.0, 1 / 30])
    assert _t_interval(errors)[0] < 0.0  # the t-interval leaves [0, 1] here
    assert _t_interval([s["auc"] for s in scores])[1] > 1.0
    indices = metrics.bootstrap_indices({s: c["y"] for s, c in splits.items()}, n_boot=500)
    assert indices[0].shape == (500, 30)
    assert all((np.asarray(splits[s]["y"])[i].sum(axis=1) == 15).all() for s, i in indices.items())
    reps = metrics.bootstrap_scores(splits, indices)
    for m in ("error_rate", "auc", "brier", "ece"):
        low, high = metrics.percentile_interval(reps[m], float(np.mean([s[m] for s in scores])))
        assert 0.0 <= low <= high <= 1.0, m
    low, high = metrics.percentile_interval(reps["error_rate"])
    # the one wrong case drawn k ~ Binomial(15, 1/15) times among split 2's negatives, the
    # mean error rate k / 90: its 97.5% quantile is k = 3
    assert (low, high) == (0.0, pytest.approx(stats.binom.ppf(0.975, 15, 1 / 15) / 90))
    assert high == pytest.approx(3 / 90)
    # the same seed and labels give the same cases, whichever engine they score
    again = metrics.bootstrap_indices({s: c["y"] for s, c in splits.items()}, n_boot=500)
    assert all(np.array_equal(indices[s], again[s]) for s in indices)


# --------------------------------------------------------------------------- formatting
@pytest.mark.parametrize(
    ("x", "digits", "text"),
    [(-0.0004, 3, "0.000"), (-0.0, 3, "0.000"), (-0.0006, 3, "-0.001"), (0.00049, 2, "0.00"),
     (-1e-9, 4, "0.0000"), (float("-inf"), 3, "-inf"), (float("nan"), 3, "n/a"), (2.5, 1, "2.5")],
)  # fmt: skip
def test_a_zero_is_a_zero(x: float, digits: int, text: str) -> None:
    assert fmt(x, digits) == text


# --------------------------------------------------------------------------- bounds
def test_at_bounds() -> None:
    bounds = [[-4.6, 6.9], [math.log(0.01), math.log(100.0)]]
    names = ["log_lengthscale", "log_variance"]
    assert at_bounds(names, [1.07, math.log(100.0)], bounds) == [
        ("log_variance", "upper", pytest.approx(math.log(100.0)))
    ]
    assert at_bounds(names, [-4.595, 0.0], bounds) == [("log_lengthscale", "lower", -4.6)]
    assert at_bounds(names, [1.0, 4.59], bounds) == []  # 0.015 inside: not at it
    with pytest.raises(ValueError, match="do not match"):
        at_bounds(names, [1.0], bounds)


# --------------------------------------------------------------------------- findings
def test_a_win_only_when_larger_than_its_interval() -> None:
    set_styles(["laplace", "ep"])
    summary = pd.DataFrame(
        [{"dataset": d, "engine": e, "metric": "mean_log_predictive", "n_splits": 3,
          "mean": m, "low": m - 0.05, "high": m + 0.05}
         for d, e, m in [("pima", "laplace", -0.4700), ("pima", "ep", -0.4710),
                         ("sonar", "laplace", -0.46), ("sonar", "ep", -0.33)]]
    )  # fmt: skip
    table = pd.DataFrame(columns=["dataset", "engine", "metric", "split", "value", "job_id"])

    def diff(mean, low, high):  # (the corrected t-interval's fields that findings read)
        verdict = "a better" if low > 0 else "b better" if high < 0 else "no difference"
        return metrics.PairedDifference(mean, low, high, 3, 2, verdict, 0.0, 0.0, 0.95)

    paired = {
        ("pima", "laplace", "ep", "mean_log_predictive"): diff(0.001, -0.004, 0.006),
        ("pima", "ep", "laplace", "mean_log_predictive"): diff(-0.001, -0.006, 0.004),
        ("sonar", "ep", "laplace", "mean_log_predictive"): diff(0.13, 0.10, 0.16),
        ("sonar", "laplace", "ep", "mean_log_predictive"): diff(-0.13, -0.16, -0.10),
    }
    lines = findings(summary, table, [], ["pima", "sonar"], ["laplace", "ep"], None, paired)
    pima = next(line for line in lines if "**pima**" in line)
    sonar = next(line for line in lines if "**sonar**" in line)
    assert "best" not in pima
    assert "no win on mean log predictive: Laplace's -0.470 nats" in pima
    assert "EP's (difference 0.0010 [-0.0040, 0.0060])" in pima
    assert "best mean log predictive: EP (-0.330 nats over 3 splits; ahead of Laplace by "
    assert "0.1300 [0.1000, 0.1600]" in sonar and "best mean log predictive: EP" in sonar
    assert sum("called a win only" in line for line in lines) == 1  # the caveat, once


def test_one_split_gives_no_interval_and_no_win() -> None:
    """A study of one holdout split: the corrected t-interval needs two splits (NaN bounds),
    so the finding says the lead and that it is no win, never "within the interval"."""
    set_styles(["svgp_128", "svgp_64"])
    summary = pd.DataFrame(
        [{"dataset": "letter", "engine": e, "metric": "mean_log_predictive", "n_splits": 1,
          "mean": m, "low": m - 0.01, "high": m + 0.01}
         for e, m in [("svgp_128", -0.2511), ("svgp_64", -0.3885)]]
    )  # fmt: skip
    table = pd.DataFrame(columns=["dataset", "engine", "metric", "split", "value", "job_id"])
    nan = float("nan")
    paired = {
        ("letter", a, b, "mean_log_predictive"): metrics.PairedDifference(
            sign * 0.1374, nan, nan, 1, 0, "no difference", 0.0, 0.0, 0.95
        )
        for a, b, sign in [("svgp_128", "svgp_64", 1.0), ("svgp_64", "svgp_128", -1.0)]
    }
    lines = findings(summary, table, [], ["letter"], ["svgp_128", "svgp_64"], None, paired)
    (letter,) = [line for line in lines if "**letter**" in line]
    assert "no win on mean log predictive from one split" in letter
    assert "-0.251 nats is ahead of" in letter and "by 0.1374 (no interval)" in letter
    assert "an interval needs two splits or more" in letter
    assert "within the interval" not in letter and "n/a" not in letter


def test_a_difference_within_the_references_monte_carlo_error_is_not_decided() -> None:
    """Issue 29: EP - MCMC within twice MCMC's Monte Carlo error (from the records' mcse,
    combined over the splits) is "indistinguishable" where its interval includes zero and
    "the reference cannot decide" where it excludes zero; beyond the error, the t verdict."""
    set_styles(["ep", "mcmc"])
    summary = pd.DataFrame(
        [{"dataset": d, "engine": e, "metric": "mean_log_predictive", "n_splits": 4,
          "mean": -0.3, "low": -0.35, "high": -0.25}
         for d in ("tie", "undecided", "decided") for e in ("ep", "mcmc")]
    )  # fmt: skip
    table = pd.DataFrame(columns=["dataset", "engine", "metric", "split", "value", "job_id"])

    def diff(mean, low, high):
        verdict = "a better" if low > 0 else "b better" if high < 0 else "no difference"
        return metrics.PairedDifference(mean, low, high, 4, 3, verdict, 0.0, 0.0, 0.95)

    paired = {}
    for d, p in [("tie", diff(0.002, -0.001, 0.005)), ("undecided", diff(0.010, 0.006, 0.014)),
                 ("decided", diff(0.010, 0.006, 0.014))]:  # fmt: skip
        paired[(d, "ep", "mcmc", "mean_log_predictive")] = p
        paired[(d, "mcmc", "ep", "mean_log_predictive")] = diff(-p.mean, -p.upper, -p.lower)
    # per split mcse 0.012 over 4 splits: 0.006 for the mean, twice it 0.012 >= 0.010;
    # 0.008 per split: 0.004, twice it 0.008 < 0.010
    per_split = {"tie": 0.012, "undecided": 0.012, "decided": 0.008}
    records = [
        study.JobRecord(id=f"{d}__s{s}__mcmc", study="x", dataset=d, split=s, engine="mcmc",
                        likelihood="probit", policy="optimize", seed=0, versions={},
                        status="ok", metrics={"mean_log_predictive": -0.3},
                        mcse={"mean_log_predictive": m})
        for d, m in per_split.items() for s in range(4)
    ]  # fmt: skip
    datasets = list(per_split)
    lines = findings(summary, table, records, datasets, ["ep", "mcmc"], "mcmc", paired)
    said = {d: next(line for line in lines if f"**{d}**" in line) for d in datasets}
    assert (
        "EP - MCMC = 0.0020 [-0.0010, 0.0050] nats (within MCMC's Monte Carlo error "
        in (said["tie"])
    )
    assert "0.0120: indistinguishable)" in said["tie"]
    assert (
        "EP - MCMC = 0.0100 [0.0060, 0.0140] nats (its interval excludes zero, but within "
        "MCMC's Monte Carlo error 0.0120: the reference cannot decide)" in said["undecided"]
    )
    assert (
        "EP - MCMC = 0.0100 [0.0060, 0.0140] nats (MCMC's Monte Carlo error 0.0080)"
        in (said["decided"])
    )
    assert "cannot decide" not in said["decided"] and "indistinguishable" not in said["decided"]
    assert sum("rerun it with more draws" in line for line in lines) == 1  # the note, once


# --------------------------------------------------------------------------- a study
@pytest.fixture(scope="module")
def bounded(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("bounded")
    path = tmp / "bounded.toml"
    path.write_text(BOUNDED)
    assert main(["run", str(path), "--output", str(tmp / "out"), "--workers", "1"]) == 0
    return path, tmp / "out" / "bounded"


def test_a_hyperparameter_at_its_bound_is_flagged(bounded) -> None:
    _, result = bounded
    table = pd.read_csv(result / "results.csv", keep_default_na=False)
    per_job = table.drop_duplicates("job_id")
    hp = per_job["hyperparameters"].map(json.loads)
    at_upper = hp.map(lambda h: h["log_variance"] >= -0.01)
    assert at_upper.sum() >= 3  # the evidence presses against sigma_f^2 = 1
    assert (per_job.loc[at_upper, "at_bound"] == "log_variance upper").all()
    assert (per_job.loc[~at_upper, "at_bound"] == "").all()
    report = (result / "report.md").read_text()
    assert "| at a bound |" in report
    assert "**log_variance upper**" in report
    assert "at its upper bound on" in report  # in the findings
    assert report.count("stopped by the bound") == 1


def test_selection_is_timed_apart_from_one_fit(bounded) -> None:
    _, result = bounded
    table = pd.read_csv(result / "results.csv")
    per_job = table.drop_duplicates("job_id")
    assert {"fit_seconds", "select_seconds"} <= set(table.columns)
    assert (per_job["hyperparameters_from"] == "own").all()
    # a search of many fits takes longer than the one fit at the values it chose (summed
    # over jobs: one job's times can be disturbed by other processes)
    assert (per_job["select_seconds"] > 0).all() and (per_job["fit_seconds"] > 0).all()
    assert per_job["select_seconds"].sum() > per_job["fit_seconds"].sum()
    evaluations = table[table.metric == "optimizer_evaluations"]["value"]
    assert (evaluations > 1).all()
    report = (result / "report.md").read_text()
    assert "| data set | Laplace: one fit | Laplace: selection | EP: one fit |" in report


def test_report_numbers_and_command(bounded) -> None:
    path, result = bounded
    report = (result / "report.md").read_text()
    assert "-0.000" not in report
    assert "bootstrap interval over the test cases" in report
    line = next(s for s in report.splitlines() if s.startswith("- Command:"))
    command = line.split("`")[1]
    assert command == run_command(result, "bounded")
    words = shlex.split(command)
    assert words[:2] == ["gpc-compare", "run"]
    args = build_parser().parse_args(words[1:])
    assert [Path(s).resolve() for s in args.studies] == [path.resolve()]
    assert Path(args.output).resolve() == result.parent.resolve()
    assert args.workers == 1
    # every held-out interval of a rate or AUC lies in [0, 1]
    for row in report.splitlines():
        if row.startswith("| Laplace |") or row.startswith("| EP |"):
            for cell in row.split("|")[4:8]:  # error rate, Brier, ECE, AUC
                mean, low, high = (float(x) for x in cell.replace("[", "").replace("]", "")
                                   .replace(",", "").split())  # fmt: skip
                assert 0.0 <= low <= high <= 1.0 and 0.0 <= mean <= 1.0


def test_evidence_profiles_equal_cold_fits(tmp_path) -> None:
    """The profiles' fits, warm-started from their neighbours along the grid, give each
    point's evidence as a cold fit does."""
    from gpc_compare.report.profiles import evidence_profiles

    text = """
name = "prof"
[[datasets]]
name = "crabs"
subsample = 80
[splits]
n_splits = 2
n_repeats = 1
[hyperparameters]
n_restarts = 0
[engines.laplace]
[engines.ep]
"""
    path = tmp_path / "prof.toml"
    path.write_text(text)
    study.run_study(path, tmp_path / "out", workers=1)
    config = study.load_study(tmp_path / "out" / "prof" / "study.toml")
    records = list(study.load_records(tmp_path / "out" / "prof").values())
    profiles = evidence_profiles(config, records, ["crabs"], ["laplace", "ep"], n_points=5)
    assert len(profiles) == 4
    from gpc_compare.study.problem import load_dataset, split_indices, stable_seed

    data = load_dataset(config.datasets[0], config.seed)
    for prof in profiles:
        rec = next(r for r in records if r.engine == prof.engine and r.split == prof.split)
        train, test = split_indices(data, config.splits, prof.split,
                                    stable_seed("split", config.seed, "crabs"))  # fmt: skip
        X = gc.datasets.standardize(data.X[train], data.X[test])[0]
        theta0 = np.asarray(rec.hyperparameters.values)
        i = rec.hyperparameters.names.index(prof.name)
        for j in (0, prof.grid.size - 1):  # the ends: the longest chains of warm starts
            theta = theta0.copy()
            theta[i] = prof.grid[j]
            cold = gc.fit(X, data.y[train], method=prof.engine, likelihood="probit",
                          kernel=gc.kernels.SquaredExponential().with_theta(theta))  # fmt: skip
            assert prof.log_evidence[j] == pytest.approx(cold.log_marginal_likelihood, abs=1e-7)
