"""One gold-standard evidence path: the options record (EvidenceOptions, Recheck), the one
``estimate(problem, options)``, and its three callers (gc.evidence.estimate, the MCMC
engine's ``evidence=``, a study's evidence jobs) giving the same estimate."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

import gpc_compare as gc
from gpc_compare._validation import OptionError
from gpc_compare.annealing.estimate import estimate, recheck_reason
from gpc_compare.evidence import EvidenceOptions, Recheck, prepare
from gpc_compare.study import expand, load_study
from gpc_compare.study.evidence_config import evidence_options
from gpc_compare.study.worker import _problem, run_job

from .helpers import toy_data


@pytest.mark.parametrize(
    ("fields", "name", "message"),
    [
        ({"estimator": "nested"}, "estimator", r"estimator must be one of \['smc', 'ais'\]"),
        ({"start": "laplace"}, "start", "start must be 'ep' or 'prior'"),
        ({"runs": 1}, "runs", "runs must be a whole number >= 2"),
        ({"particles": 1}, "particles", "particles must be a whole number >= 2"),
        ({"moves": -1}, "moves", "moves must be a whole number >= 0"),
        ({"sweeps": 1.5}, "sweeps", "sweeps must be a whole number >= 0"),
        ({"cess": 1.0}, "cess", r"cess must be in \(0, 1\)"),
        ({"max_steps": 0}, "max_steps", "max_steps must be a whole number >= 1"),
        ({"estimator": "ais", "temperatures": 0}, "temperatures", "temperatures must be a"),
        ({"estimator": "ais", "particles": 64}, "particles", "particles is an option of 'smc'"),
        ({"temperatures": 100}, "temperatures", "temperatures is an option of 'ais'"),
        ({"recheck": 3}, "recheck", "recheck must be a Recheck, a dict or None"),
        ({"recheck": {"zz": 1}}, "recheck", r"recheck: unknown field\(s\) \['zz'\]"),
        ({"recheck": {"se_max": 0}}, "recheck.se_max", "recheck.se_max must be a positive"),
        ({"recheck": {"z": -1.0}}, "recheck.z", "recheck.z must be a number >= 0"),
        ({"recheck": {"nats": math.nan}}, "recheck.nats", "recheck.nats must be a number >= 0"),
        ({"recheck": {"runs": -1}}, "recheck.runs", "recheck.runs must be a whole number"),
        ({"recheck": {"runs": 16}}, "recheck.runs", r"must be 0 or exceed runs \(16\)"),
        (
            {"estimator": "ais", "recheck": {"temperatures": 300}},
            "recheck.temperatures",
            "recheck.temperatures must exceed the first anneal's 300 temperatures",
        ),
    ],
)
def test_the_options_record_refuses_each_bad_field_by_name(fields, name, message) -> None:
    with pytest.raises(OptionError, match=message) as caught:
        EvidenceOptions(**fields)
    assert caught.value.option == name and str(caught.value).startswith(name)


@pytest.mark.parametrize(
    ("fields", "name"),
    [({"se_max": -1.0}, "se_max"), ({"z": "5"}, "z"), ({"temperatures": True}, "temperatures")],
)
def test_the_recheck_policy_refuses_each_bad_field_by_name(fields, name) -> None:
    with pytest.raises(ValueError, match=f"^{name} must be") as caught:
        Recheck(**fields)
    assert caught.value.option == name


def test_the_defaults_are_the_estimators_and_the_studies() -> None:
    """A field left at None takes the estimator's default (smc()'s, ais()'s); a recheck's
    se_max the estimator's (SMC 0.1, AIS 0.5); a study's tables take theirs from the
    record, so its committed jobs' options are as they were."""
    smc = EvidenceOptions()
    own = {"runs": 16, "particles": 128, "moves": 2, "sweeps": 2, "cess": 0.9, "max_steps": 5000}
    assert {k: getattr(smc, k) for k in own} == own and (smc.estimator, smc.start) == ("smc", "ep")
    assert smc.temperatures is None and smc.recheck is None
    ais = EvidenceOptions(estimator="ais")
    assert (ais.runs, ais.temperatures, ais.particles, ais.cess) == (32, 300, None, None)
    assert EvidenceOptions(estimator="ais", start="prior").temperatures == 2000
    assert EvidenceOptions(recheck=Recheck()).recheck == Recheck(0.1, 5.0, 0.3, 64, 5000)
    assert EvidenceOptions(estimator="ais", recheck={}).recheck.se_max == 0.5
    assert gc.evidence.OPTIONS == {"smc": own, "ais": {"runs": 32, "temperatures": None}}
    study = Path(__file__).resolve().parents[1] / "studies" / "approximations_grid.toml"
    committed = {**own, "start": "ep", "se_max": 0.1, "recheck_runs": 64, "method": "smc"}
    del committed["max_steps"]  # (not a study field)
    assert load_study(study).evidence["smc"] == {**committed, "recheck": None}
    record = evidence_options(load_study(study).evidence["ais"])
    assert record == EvidenceOptions(
        "ais",
        "ep",
        runs=16,
        temperatures=500,
        recheck=Recheck(se_max=0.5, z=5.0, nats=0.3, temperatures=5000),
    )


@pytest.fixture(scope="module")
def problem():
    X, y = toy_data(n=20, d=2, seed=4)
    kernel = gc.kernels.SquaredExponential(1.0, 4.0)
    return X, y, kernel, prepare(X, y, kernel=kernel)


def test_a_recheck_happens_where_the_policy_says_and_is_recorded(problem) -> None:
    X, y, kernel, prepared = problem
    small = {"particles": 16, "runs": 2}
    first = estimate(prepared, EvidenceOptions(**small), 5)
    assert first.recheck is None and first.first is None
    fields = {f.name for f in dataclasses.fields(first)}
    assert set(first.record()) == fields - {"recheck", "first"}  # (an MCMC record's, as it was)
    # se above a tiny se_max: estimated again with the recheck's runs, seeded [seed, runs]
    forced = EvidenceOptions(**small, recheck=Recheck(se_max=1e-12, z=None, runs=5))
    again = estimate(prepared, forced, 5)
    assert again.first == dataclasses.replace(first, seconds=again.first.seconds)
    assert again.recheck == f"se {first.standard_error:.3g} > se_max 1e-12"
    assert (again.first.health["runs"], again.health["runs"]) == (2, 5)
    alone = estimate(prepared, EvidenceOptions(particles=16, runs=5), [5, 5])
    assert (again.log_evidence, again.standard_error) == (alone.log_evidence, alone.standard_error)
    assert again.seconds >= again.first.seconds
    assert again.record()["recheck"] == again.recheck and "first" in again.record()
    # healthy, or never again: the first estimate is final
    for policy in (Recheck(se_max=1e9, z=None, runs=5), Recheck(se_max=1e-12, runs=0)):
        done = estimate(prepared, EvidenceOptions(**small, recheck=policy), 5)
        assert done.recheck is None and done.log_evidence == first.log_evidence
    # AIS: where it and EP differ by more than z se and nats (from EP's start only)
    gap = {"se_max": 1e9, "z": 0.0, "nats": 0.0, "temperatures": 20}
    ais = EvidenceOptions("ais", runs=4, temperatures=10, recheck=gap)
    done = estimate(prepared, ais, 1)
    assert done.recheck.startswith("|start - estimate| = ") and done.health["temperatures"] == 20
    prior = estimate(prepared, dataclasses.replace(ais, start="prior"), 1)
    assert prior.recheck is None and prior.health["temperatures"] == 10
    nan = dataclasses.replace(first, standard_error=math.nan)
    assert recheck_reason(nan, forced).startswith("se nan")


SMC_STUDY = """
name = "routes"
seed = 0
datasets = [{name = "crabs", subsample = 24}]
[kernel]
name = "squared_exponential"
[hyperparameters]
policy = "grid"
[hyperparameters.grid]
log_lengthscale = [0.5]
log_variance = [2.0]
[splits]
kind = "none"
[engines.laplace]
[evidence.smc]
particles = 16
runs = 2
se_max = 1e-9
recheck_runs = 4
[evidence.ais]
temperatures = 30
runs = 4
se_max = 1e-9
[evidence.ais.recheck]
temperatures = 60
"""


@pytest.fixture(scope="module")
def study_jobs(tmp_path_factory):
    path = tmp_path_factory.mktemp("routes") / "routes.toml"
    path.write_text(SMC_STUDY)
    jobs = {job.engine: job for job in expand(load_study(path)) if job.kind == "evidence"}
    X, y, _, _, kernel, mean, _ = _problem(jobs["smc"], None)
    return jobs, X, y, kernel, mean


@pytest.mark.filterwarnings("ignore:MCMC diagnostics not passed")
def test_the_three_routes_give_the_same_smc_estimate(study_jobs) -> None:
    """The same problem, options and seed: gc.evidence.estimate, an MCMC fit with
    ``evidence=`` and a study's evidence job give the same estimate, recheck included."""
    jobs, X, y, kernel, mean = study_jobs
    job = jobs["smc"]
    options = {"particles": 16, "runs": 2, "recheck": {"se_max": 1e-9, "z": None, "runs": 4}}
    direct = gc.evidence.estimate(X, y, kernel=kernel, mean=mean, random_seed=job.seed, **options)
    assert direct.recheck is not None and direct.first is not None
    sampler = {"draws": 20, "tune": 20, "chains": 1, "random_seed": job.seed}
    fit = {"method": "mcmc", "kernel": kernel, "mean": mean, "evidence": True}
    post = gc.fit(X, y, **fit, evidence_options=options, **sampler)
    rec = run_job(job)
    assert rec.status == "ok", rec.error
    for est in (direct, post.evidence_estimate):
        assert est.log_evidence == rec.log_evidence
        assert est.standard_error == rec.log_evidence_se
        assert est.health == rec.evidence.health and est.recheck == rec.evidence.recheck
        first = rec.evidence.runs[0]
        assert (est.first.log_evidence, est.first.standard_error) == (first.log_evidence, first.se)
    assert post.evidence_estimate.record()["first"]["health"] == direct.first.health


def test_a_study_ais_job_is_gc_evidence_estimates_with_its_seed(study_jobs) -> None:
    """A study's AIS job seeds its first anneal ``[job seed, temperatures]`` (as the
    committed studies were) and its recheck ``[job seed, recheck temperatures]``: given that
    seed, gc.evidence.estimate gives the same estimates."""
    jobs, X, y, kernel, mean = study_jobs
    job = jobs["ais"]
    ais = {"method": "ais", "temperatures": 30, "runs": 4}
    recheck = {"se_max": 1e-9, "temperatures": 60}
    seed = [job.seed, 30]
    direct = gc.evidence.estimate(
        X, y, kernel=kernel, mean=mean, **ais, recheck=recheck, random_seed=seed
    )
    rec = run_job(job)
    assert rec.status == "ok", rec.error
    estimates = [r.log_evidence for r in rec.evidence.runs]
    assert estimates == [direct.first.log_evidence, direct.log_evidence]
    assert rec.evidence.recheck == direct.recheck and direct.recheck.startswith("degenerate")
    assert (rec.convergence.converged, rec.convergence.iterations) == (False, 60)
