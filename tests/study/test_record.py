"""The typed job record: its schema, the damaged records it refuses (set aside and
recomputed by the next run), infinities read as NaN, and every committed record read."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest

from gpc_compare import study
from gpc_compare.study import JobRecord, RecordError
from gpc_compare.study.record import SCHEMA_VERSION, Hyperparameters, Timings

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = sorted(ROOT.glob("results/**/jobs/*.json"))


def _ok_record() -> dict:
    """A finished job's record as the current worker writes it (two test cases)."""
    return {
        "schema": 1,
        "id": "crabs__s0__ep__0123456789",
        "study": "s",
        "dataset": "crabs",
        "split": 0,
        "kernel": "squared_exponential",
        "engine": "ep",
        "method": "ep",
        "likelihood": "probit",
        "policy": "fixed",
        "seed": 7,
        "options": {},
        "versions": {"gpc_compare": "0.1.0"},
        "host": "h",
        "started": 1.0,
        "n_train": 3,
        "n_test": 2,
        "d": 1,
        "base_rate": 0.5,
        "metrics": {"mean_log_predictive": -0.5, "error_rate": 0.0, "auc": float("nan")},
        "hyperparameters": {"names": ["log_lengthscale"], "values": [0.1], "from": "fixed"},
        "timings": {
            "fit_seconds": 0.1,
            "select_seconds": 0.0,
            "predict_seconds": 0.01,
            "peak_memory_mb": None,
        },  # fmt: skip
        "warnings": [],
        "arrays": {
            "y_test": [0, 1],
            "p1_test": [0.2, 0.9],
            "log_p_test": [-0.2, -0.1],
            "mean_test": [-1.0, 1.0],
            "var_test": [0.5, 0.5],
            "mean_train": [0.0, 1.0, -1.0],
            "var_train": [1.0, 1.0, 1.0],
        },
        "convergence": {"converged": True, "iterations": 4},
        "log_evidence": -2.0,
        "log_evidence_se": None,
        "loo_log_predictive": -2.5,
        "status": "ok",
        "finished": 2.0,
    }


def test_a_record_reads_back_what_it_writes() -> None:
    raw = _ok_record()
    rec = JobRecord.from_dict(raw)
    assert rec.ok and rec.schema == SCHEMA_VERSION and rec.notes == ()
    assert rec.hyperparameters == Hyperparameters(("log_lengthscale",), (0.1,), "fixed")
    assert rec.hyperparameters.as_dict() == {"log_lengthscale": 0.1}
    assert rec.timings == Timings(0.1, 0.01, 0.0, None)
    assert rec.arrays.p1_test == [0.2, 0.9] and not rec.arrays.multiclass
    assert rec.convergence.converged and rec.convergence.factorizations is None
    assert math.isnan(rec.metrics["auc"])  # NaN is a value (one class in the test fold)
    again = JobRecord.from_json(rec.to_json())
    assert again.to_json() == rec.to_json()  # (NaN != NaN: compared as text)
    assert json.loads(rec.to_json())["schema"] == SCHEMA_VERSION


def test_fields_the_schema_does_not_name_are_kept() -> None:
    raw = _ok_record()
    raw["engine_fact"] = {"a": 1}
    raw["convergence"]["max_change"] = 1e-9
    rec = JobRecord.from_dict(raw)
    assert rec.extra == {"engine_fact": {"a": 1}}
    assert rec.convergence.extra == {"max_change": 1e-9}
    out = rec.to_dict()
    assert out["engine_fact"] == {"a": 1} and out["convergence"]["max_change"] == 1e-9


def _drop(*keys):
    def edit(r):
        target = r
        for k in keys[:-1]:
            target = target[k]
        target.pop(keys[-1])

    return edit


def _set(value, *keys):
    def edit(r):
        target = r
        for k in keys[:-1]:
            target = target[k]
        target[keys[-1]] = value

    return edit


#: Records that pass a shallow check but do not follow the schema, and the field named.
DAMAGED = {
    "no timings": (_drop("timings"), "'timings'"),
    "no policy": (_drop("policy"), "'policy'"),
    "no versions": (_drop("versions"), "'versions'"),
    "no n_test": (_drop("n_test"), "'n_test'"),
    "no metrics": (_drop("metrics"), "'metrics'"),
    "empty metrics": (_set({}, "metrics"), "'metrics' is empty"),
    "a metric null": (_set(None, "metrics", "auc"), "'metrics.auc'"),
    "a metric [1, 2]": (_set([1, 2], "metrics", "auc"), "'metrics.auc'"),
    "a metric a string": (_set("0.5", "metrics", "auc"), "'metrics.auc'"),
    "convergence a string": (_set("x", "convergence"), "'convergence'"),
    "converged a number": (_set(1, "convergence", "converged"), "'convergence.converged'"),
    "split a float": (_set(1.0, "split"), "'split'"),
    "split negative": (_set(-1, "split"), "'split'"),
    "a hyperparameter a string": (_set([0.1, "x"], "hyperparameters", "values"), "values[1]"),
    "names and values differ": (_set(["a", "b"], "hyperparameters", "names"), "2 names"),
    "no fit_seconds": (_drop("timings", "fit_seconds"), "'timings.fit_seconds'"),
    "unknown status": (_set("done", "status"), "status 'done'"),
    "a newer schema": (_set(SCHEMA_VERSION + 1, "schema"), "newer"),
    "arrays of strings": (_set(["a", "b"], "arrays", "p1_test"), "'arrays.p1_test'"),
    "arrays too short": (_set([0.5], "arrays", "p1_test"), "one entry per test case"),
    "versions not strings": (_set({"numpy": 2}, "versions"), "'versions.numpy'"),
    "a failure without its error": (lambda r: r.update(status="failed"), "'error'"),
}


@pytest.mark.parametrize("kind", list(DAMAGED))
def test_a_record_off_the_schema_is_refused_naming_the_field(kind) -> None:
    raw = copy.deepcopy(_ok_record())
    edit, named = DAMAGED[kind]
    edit(raw)
    with pytest.raises(RecordError) as caught:
        JobRecord.from_dict(raw)
    assert named in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_an_infinity_is_read_as_nan_with_a_note() -> None:
    raw = _ok_record()
    text = json.dumps(raw).replace('"error_rate": 0.0', '"error_rate": 1e999')
    text = text.replace('"log_evidence": -2.0', '"log_evidence": -Infinity')
    rec = JobRecord.from_json(text)
    assert math.isnan(rec.metrics["error_rate"]) and math.isnan(rec.log_evidence)
    assert len(rec.notes) == 2 and "metrics.error_rate was inf" in rec.notes[0]
    assert "log_evidence was -inf" in rec.notes[1]
    assert JobRecord.from_json(rec.to_json()).notes == rec.notes  # (kept, not repeated)
    raw["arrays"]["log_p_test"] = [float("-inf"), -0.1]
    rec = JobRecord.from_dict(raw)
    assert np.isnan(rec.arrays.log_p_test[0]) and "arrays.log_p_test" in rec.notes[0]


def test_a_failed_record_needs_identity_and_error_only() -> None:
    raw = {k: _ok_record()[k] for k in ("id", "study", "dataset", "split", "engine",
                                        "likelihood", "policy", "seed", "versions")}  # fmt: skip
    rec = JobRecord.from_dict({**raw, "status": "failed", "error": "E: x", "traceback": "T"})
    assert not rec.ok and rec.metrics == {} and rec.timings is None
    assert JobRecord.from_dict(rec.to_dict()) == rec
    assert "n_test" not in rec.to_dict()


@pytest.mark.skipif(not COMMITTED, reason="no committed job records")
def test_every_committed_record_loads_and_round_trips() -> None:
    """Records written before the schema was named (no ``schema``: version 1) load, and
    write back the same JSON (plus the version)."""
    for path in COMMITTED:
        raw = json.loads(path.read_text())
        assert "schema" not in raw or raw["schema"] == 1
        rec = JobRecord.from_dict(raw)
        assert study.records.check_record(rec, path) is None, path
        back = rec.to_dict()
        assert back.pop("schema") == SCHEMA_VERSION
        raw.pop("schema", None)  # (records written since the schema was named carry it)
        assert json.dumps(back, sort_keys=True) == json.dumps(raw, sort_keys=True), path


# ------------------------------------------------------- damaged records on disk, rerun
@pytest.fixture(scope="module")
def small_study(tmp_path_factory):
    """A study of 2 Laplace jobs, built in Python, run once."""
    root = tmp_path_factory.mktemp("records")
    config = study.StudyConfig.from_dict(
        {
            "name": "small",
            "datasets": [{"name": "crabs", "subsample": 40}],
            "hyperparameters": {"policy": "fixed"},
            "splits": {"kind": "kfold", "n_splits": 2, "n_repeats": 1},
            "engines": {"laplace": {}},
        }
    )
    first = study.run_study(config, root, workers=1)
    assert first.failed == 0 and first.done == 2
    return config, root, first


@pytest.mark.parametrize(
    "kind", ["no timings", "no policy", "no versions", "no n_test", "empty metrics",
             "a metric null", "a metric [1, 2]", "convergence a string"],
)  # fmt: skip
def test_a_record_off_the_schema_is_set_aside_and_recomputed(small_study, kind) -> None:
    config, root, first = small_study
    victim = sorted((first.result_dir / "jobs").glob("*.json"))[0]
    raw = json.loads(victim.read_text())
    DAMAGED[kind][0](raw)
    victim.write_text(json.dumps(raw))
    usable, damaged = study.read_records(first.result_dir)
    assert len(usable) == 1 and [d.path for d in damaged] == [victim]
    assert DAMAGED[kind][1] in damaged[0].reason
    again = study.run_study(config, root, workers=1)
    assert again.done == 1 and again.skipped == 1 and victim.name in again.set_aside[0]
    assert victim.exists() and study.read_records(first.result_dir)[1] == []
    cols = ["job_id", "metric", "value"]
    assert again.table[cols].equals(first.table[cols])
    for path in (first.result_dir / "jobs").glob("*.damaged*"):
        path.unlink()


def test_an_infinity_in_a_record_is_nan_in_the_table_and_said(small_study, tmp_path) -> None:
    import shutil

    config, _, first = small_study
    copy_dir = tmp_path / "small"
    shutil.copytree(first.result_dir, copy_dir)
    victim = sorted((copy_dir / "jobs").glob("*.json"))[0]
    text = victim.read_text()
    raw = json.loads(text)
    raw["metrics"]["error_rate"] = 1.0
    victim.write_text(json.dumps(raw, indent=1).replace('"error_rate": 1.0', '"error_rate": 1e999'))
    table = study.assemble(copy_dir, config)
    rows = table[(table.job_id == raw["id"]) & (table.metric == "error_rate")]
    assert len(rows) == 1 and np.isnan(rows["value"].iloc[0])
    jobs = (copy_dir / "jobs.csv").read_text()
    assert "metrics.error_rate was inf in the file: read as NaN" in jobs
