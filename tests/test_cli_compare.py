"""``gpc-compare compare`` for a newcomer (issue 34): every option of ``gc.compare`` a flag
with its choices and help, errors in the words of those flags, ``--sep``/``--decimal``,
an unnamed row-index column, the study's data path relative to it, convergence as data,
what the report says it did, and an honest time left."""

from __future__ import annotations

import argparse
import inspect
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import gpc_compare as gc
from gpc_compare.cli import build_parser, main
from gpc_compare.cli_compare import flag_message
from gpc_compare.datasets.files import load_table
from gpc_compare.study.config import LIKELIHOODS
from gpc_compare.study.record import Convergence, Diagnostics, Hyperparameters, JobRecord

ROOT = Path(__file__).resolve().parents[1]


def _compare_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["compare"]


def _frame(n: int = 24, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"a": rng.normal(size=n), "b": rng.normal(size=n), "y": np.tile(["p", "q"], n // 2)}
    )


def test_every_option_of_gc_compare_is_a_flag_with_help_and_choices() -> None:
    flags = {s: a for a in _compare_parser()._actions for s in a.option_strings}
    named = {"random_seed": "--seed", "engine_options": "--engine-option", "psis": "--no-psis"}
    skip = {"X", "y", "progress", "seed", "data_options"}  # (the data; a stream; old name)
    for name in inspect.signature(gc.compare).parameters:
        if name not in skip:
            assert named.get(name, "--" + name.replace("_", "-")) in flags, name
    from gpc_compare.comparison import DATA_OPTIONS

    assert all(f"--{o}" in flags for o in DATA_OPTIONS) and {"--sep", "--decimal"} <= set(flags)
    assert all(a.help for a in flags.values()), [s for s, a in flags.items() if not a.help]
    assert tuple(flags["--likelihood"].choices) == LIKELIHOODS
    assert set(flags["--policy"].choices) == {"optimize", "fixed", "shared", "full_bayes"}
    assert flags["--output"].default == "out"  # (results/ holds the committed studies)
    text = _compare_parser().format_help()
    assert "multinomial_probit" in text and "full_bayes" in text and "--missing" in text


def test_an_unknown_engine_is_refused_in_flag_words(tmp_path, capsys) -> None:
    _frame().to_csv(tmp_path / "d.csv", index=False)
    with pytest.raises(SystemExit) as info:
        main(["compare", tmp_path / "d.csv", "--target", "y", "--engines", "laplace,lapl"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "argument --engines: unknown engine(s) ['lapl']" in err
    assert "laplace, ep" in err and "method = " not in err and "study" not in err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], "set --categorical onehot (one 0/1 column per level) or --categorical drop"),
        (["--categorical", "drop", "--folds", "13"], "use fewer folds (--folds K)"),
        (["--categorical", "drop", "--engine-option", "ep.sweeps=3"], "--engine-option ep."),
        (["--categorical", "drop", "--engines", "vb"], "--engines (vb): the VB engine does"),
        (["--categorical", "drop", "--engines", "vb"], "use --engines kl"),
    ],
)
def test_refusals_speak_flags_and_name_no_study_file(args, expected, tmp_path, capsys) -> None:
    frame = _frame().assign(c=["u", "v"] * 12)
    frame.to_csv(tmp_path / "d.csv", index=False)
    out = tmp_path / "out"
    argv = ["compare", tmp_path / "d.csv", "--target", "y", "--output", out]
    assert main([*argv, "--engines", "laplace,ep", *args]) == 2
    err = capsys.readouterr().err
    assert expected in err, err
    assert "study.toml" not in err and ' = "' not in err and not out.exists()


def test_flag_message_turns_study_fields_into_flags() -> None:
    said = flag_message(
        "out/d/study.toml: datasets[0]: d.csv: no column 'y' (the target); its columns: "
        "['a;b;y'] (one column: the file looks separated by ';': set sep = \";\", and "
        'decimal = "," if its numbers have decimal commas)',
        "out/d/study.toml",
    )
    assert said.startswith("d.csv: no column 'y'") and "--sep ';'" in said
    assert "--decimal ','" in said and "sep =" not in said
    assert flag_message("x/study.toml: hyperparameters.policy: bad") == "--policy: bad"


def test_a_semicolon_decimal_comma_file_is_read_with_sep_and_decimal(tmp_path, capsys) -> None:
    frame = _frame()
    frame.to_csv(tmp_path / "d.csv", index=False, sep=";", decimal=",")
    argv = ["compare", tmp_path / "d.csv", "--target", "y", "--output", tmp_path / "out"]
    assert main(argv) == 2  # read as one column: the message says which flags to give
    err = capsys.readouterr().err
    assert "separated by ';': set --sep ';', and --decimal ','" in err
    from gpc_compare.cli_compare import prepare

    more = ["--sep", ";", "--decimal", ",", "--subsample", "20", "--kernel", "matern52", "--ard",
            "--n-restarts", "0", "--engine-option", "mcmc.draws=300", "--engine-option",
            "ep.schedule=parallel"]  # fmt: skip
    args = _compare_parser().parse_args([*map(str, argv[1:]), *more])
    prepared = prepare(args)  # checked, nothing written
    data, config = prepared.config.datasets[0].data, prepared.config
    np.testing.assert_array_equal(data.X, frame[["a", "b"]].to_numpy())
    assert 'sep = ";"' in prepared.text and 'decimal = ","' in prepared.text
    assert prepared.config.datasets[0].subsample == 20 and config.n_restarts == 0
    assert config.kernel["name"] == "matern52" and config.kernel["ard"] is True
    assert config.engines["mcmc"]["draws"] == 300
    assert config.engines["ep"]["schedule"] == "parallel"
    assert not (tmp_path / "out").exists()


def test_an_unnamed_row_index_is_not_an_input_and_is_noted(tmp_path) -> None:
    frame = _frame()
    frame.to_csv(tmp_path / "index.csv")  # pandas' index: a first column with no name
    data = load_table(tmp_path / "index.csv", "y")
    assert data.feature_names == ["a", "b"]
    np.testing.assert_array_equal(data.X, frame[["a", "b"]].to_numpy())
    assert "'Unnamed: 0'" in data.info["notes"][0] and "row index" in data.info["notes"][0]
    # listed among the features, it is used
    kept = load_table(tmp_path / "index.csv", "y", features=["Unnamed: 0", "a"])
    assert kept.feature_names == ["Unnamed: 0", "a"]
    # the report's data lines: the inputs used, the rows read and kept, and why
    from gpc_compare.study import StudyConfig
    from gpc_compare.study.datafiles import data_provenance

    frame.loc[3, "b"] = np.nan
    frame.to_csv(tmp_path / "holes.csv")
    dataset = {"file": "holes.csv", "target": "y", "missing": "drop"}
    fields = {"name": "h", "datasets": [dataset], "engines": {"laplace": {}}}
    lines = data_provenance(StudyConfig.from_dict(fields, tmp_path / "h.toml").datasets)
    assert lines[1:3] == ["  - inputs used (2): `a`, `b`", "  - rows read: 24; kept: 23"]
    assert "'Unnamed: 0'" in lines[3]
    assert "1 of 24 rows dropped for missing values ('b' 1 (first at row 4" in lines[4]
    # an unnamed column whose values repeat is no index: refused, naming it
    frame.assign(g=[0, 1] * 12).rename(columns={"g": ""}).to_csv(tmp_path / "g.csv", index=False)
    with pytest.raises(ValueError, match=r"column 'Unnamed: 3' has no name in the header"):
        load_table(tmp_path / "g.csv", "y")


def test_the_written_study_names_its_data_relative_to_itself(tmp_path, monkeypatch) -> None:
    from gpc_compare.comparison import prepare_file_study

    (tmp_path / "data").mkdir()
    _frame().to_csv(tmp_path / "data" / "d.csv", index=False)
    monkeypatch.chdir(ROOT)  # (a working directory above neither)
    prepared = prepare_file_study(tmp_path / "data" / "d.csv", "y", tmp_path / "out")
    assert 'file = "../../data/d.csv"' in prepared.text and str(tmp_path) not in prepared.text
    assert prepared.config.datasets[0].file == str(tmp_path / "data" / "d.csv")


def _record(engine: str, warnings=(), converged=True, origin="own", **extra) -> JobRecord:
    return JobRecord(
        f"d__s0__{engine}", "s", "d", 0, engine, "probit", "optimize", 0, {}, "ok",
        hyperparameters=Hyperparameters(("log_ell",), (0.1 if origin == "own" else 0.5,), origin),
        convergence=Convergence(converged, 10), warnings=tuple(warnings), **extra,
    )  # fmt: skip


def test_a_job_whose_engine_warned_is_not_converged_and_the_report_lists_it() -> None:
    from gpc_compare.report.notices import not_converged
    from gpc_compare.study.table import converged

    said = "RuntimeWarning: SVGP not converged after 1000 iterations (bound change 1e-3)"
    warned = _record("svgp", [said, said.replace("1e-3", "2e-3")])
    assert warned.convergence.converged and not converged(warned)  # the engine's last fit
    assert converged(_record("laplace", ["UserWarning: something else"]))
    lines = not_converged(SimpleNamespace(records=[warned, _record("laplace")]))
    text = "\n".join(lines)
    assert lines[0] == "## Fits that did not converge" and "1 job(s)" in text
    assert f"d split 0 SVGP: {said} (and 1 more such warning(s)" in text
    assert "--engine-option svgp.max_iter=N" in text


def test_a_comparison_table_says_which_jobs_did_not_converge(tmp_path) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=30) > 0).astype(int)
    result = gc.compare(X, y, engines=("laplace", "svgp"), policy="fixed", folds=2, n_repeats=1,
                        psis=False, workers=1, output=tmp_path,
                        engine_options={"svgp": {"max_iter": 3}})  # fmt: skip
    assert "No reference engine among the engines (mcmc)" in result.study.description
    per_job = result.table.drop_duplicates("job_id").set_index(["engine", "split"])
    assert not per_job.loc["svgp", "converged"].any() and per_job.loc["laplace", "converged"].all()
    jobs = pd.read_csv(result.result_dir / "jobs.csv")
    assert jobs[jobs.engine == "svgp"].warnings.str.contains("SVGP not converged after 3").all()


def test_the_report_says_why_an_engine_is_absent_from_against_the_reference() -> None:
    from gpc_compare.report.notices import absent_from_reference

    config = SimpleNamespace(reference="mcmc", policy="optimize")
    records = [_record("laplace"), _record("ep", origin="own"), _record("mcmc", origin="ep")]
    records[1] = _record("ep", origin="ep")  # EP's values are the reference's
    study = SimpleNamespace(config=config, engines=["laplace", "ep", "kl", "mcmc"], records=records)
    lines = absent_from_reference(study, ["ep"])
    assert len(lines) == 3 and lines[-1] == ""
    assert lines[0].startswith("- Laplace is not in this table: it ran at the values laplace")
    assert "the reference at the values ep selected (policy `optimize`)" in lines[0]
    assert "`--policy shared`" in lines[0]
    assert lines[1] == "- KL is not in this table: none of its jobs finished."


def test_failed_mcmc_diagnostics_come_with_what_to_do() -> None:
    from gpc_compare.report.notices import mcmc_advice

    def sampled(passed: bool) -> JobRecord:
        diag = Diagnostics(1.2 if not passed else 1.0, 50.0, 40.0, 0, passed)
        return _record("mcmc", diagnostics=diag, options={"draws": 500, "tune": 700})

    assert mcmc_advice(SimpleNamespace(records=[sampled(True)])) == []
    text = mcmc_advice(SimpleNamespace(records=[sampled(False), sampled(True)]))[0]
    assert text.startswith("**1 of 2 sampled fits failed their diagnostics**")
    assert "--engine-option mcmc.draws=1000 --engine-option mcmc.tune=1400" in text


def test_time_left_is_unknown_until_each_engine_finished_a_job_and_never_zero_while_running(
    tmp_path,
) -> None:
    from gpc_compare.study import StudyConfig, expand
    from gpc_compare.study.runner import _Jobs
    from gpc_compare.study.schedule import CostModel

    fields = {"name": "t", "datasets": ["crabs"], "seed": 0,
              "engines": {"laplace": {}, "mcmc": {}},
              "splits": {"kind": "kfold", "n_splits": 3, "n_repeats": 1},
              "hyperparameters": {"policy": "fixed"}}  # fmt: skip
    jobs = expand(StudyConfig.from_dict(fields, tmp_path / "t.toml"))
    laplace = [j for j in jobs if j.engine == "laplace"]
    mcmc = [j for j in jobs if j.engine == "mcmc"]
    state = _Jobs(jobs, {}, mcmc[1:], SimpleNamespace(capacity=2), None, tmp_path)
    state.cost = CostModel(jobs)
    state.cost.observe(laplace[0], 0.5)
    assert state.time_left() is None  # no MCMC job has finished: a guess, not shown
    state.cost.observe(mcmc[0], 10.0)
    assert state.time_left() == pytest.approx(10.0)  # two more, side by side on two workers
    # the last job, running 30 s where 10 were expected: not "~0s left"
    cost = state.cost
    assert cost.seconds_left([], [(mcmc[2], 30.0)], 2) == pytest.approx(30.0)
    assert cost.seconds_left([], [(mcmc[2], 4.0)], 2) == pytest.approx(6.0)


def test_docs_name_the_likelihoods_and_engines_there_are() -> None:
    from gpc_compare.engines import registered

    for doc in (gc.compare.__doc__, gc.GPClassifier.__doc__):
        listed = re.search(r"likelihood : \{(.*?)\}", doc).group(1)
        assert {s.strip().strip('"') for s in listed.split(",")} == set(LIKELIHOODS)
    page = (ROOT / "docs" / "guide" / "estimator.md").read_text()  # (the user guide's page)
    sentence = " ".join(page.split("It takes every engine")[1].split("Its parameters")[0].split())
    doc = " ".join(gc.GPClassifier.__doc__.split())
    for lik in ("softmax", "multinomial_probit", "robustmax"):
        takes = [n for n, e in registered().items() if lik in e.likelihoods]
        assert f'`"{lik}"`: {", ".join(takes)}' in sentence, (lik, takes)
        methods = re.search(rf'"{lik}"`` \((?:methods )?([^)]*)\)', doc).group(1)
        assert re.findall(r'"(\w+)"', methods) == takes, (lik, methods)
