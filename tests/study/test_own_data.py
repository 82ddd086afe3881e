"""A user's own data: file data sets in studies, ``gc.compare`` and ``gpc-compare compare``.

Small data (the committed 50-crab example), Laplace and EP at fixed hyperparameters: these
tests are about the plumbing (every route gives the same table; every malformed file is
refused with the file, column and row named), not about the engines.
"""

from __future__ import annotations

import gzip
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import gpc_compare as gc
from gpc_compare import study
from gpc_compare.cli import main
from gpc_compare.datasets.files import data_digest, file_sha256, load_table

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "crabs.csv"
FEATURES = ["FL", "RW", "CL", "CW", "BD"]

STUDY = """
name = "{name}"
seed = 0
likelihood = "probit"

[[datasets]]
file = "{file}"
target = "{target}"
{extra}

[splits]
kind = "kfold"
n_splits = {folds}
n_repeats = 1

[hyperparameters]
policy = "fixed"

[engines.laplace]
[engines.ep]
"""


def write_study(
    folder: Path,
    file: str,
    target: str = "y",
    extra: str = "",
    folds: int = 3,
    name: str = "own",
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.toml"
    text = STUDY.format(name=name, file=file, target=target, extra=extra, folds=folds)
    path.write_text(text)
    return path


def reproducible(table: pd.DataFrame) -> pd.DataFrame:
    """The table without wall-clock columns, in a canonical order."""
    t = table.drop(columns=study.TIMING_COLUMNS)
    return t.sort_values(["dataset", "split", "engine", "metric"]).reset_index(drop=True)


# --------------------------------------------------------------------------- round trip
def test_the_example_is_what_its_readme_says() -> None:
    crabs = pd.read_csv(ROOT / "gpc_compare" / "data" / "crabs.csv")
    expected = crabs.iloc[::4][[*FEATURES, "sex"]].reset_index(drop=True)
    pd.testing.assert_frame_equal(pd.read_csv(EXAMPLE), expected)
    assert file_sha256(EXAMPLE) in (ROOT / "examples" / "README.md").read_text()


def test_cli_compare_toml_study_and_gc_compare_give_the_same_table(tmp_path, capsys) -> None:
    # 1. the shell: gpc-compare compare on the committed CSV
    code = main(
        ["compare", EXAMPLE, "--target", "sex", "--engines", "laplace,ep", "--policy", "fixed",
         "--folds", "3", "--repeats", "1", "--output", tmp_path / "cli", "--workers", "1",
         "--no-report"]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    written = tmp_path / "cli" / "crabs" / "study.toml"
    # the command that reruns it writes to the same folder (run's default is results/)
    assert f"gpc-compare run {written} --output {tmp_path / 'cli'})" in capsys.readouterr().out
    from_cli = pd.read_csv(tmp_path / "cli" / "crabs" / "results.csv")

    # 2. a study file of one's own, the data beside it under a relative path
    (tmp_path / "mine" / "data").mkdir(parents=True)
    (tmp_path / "mine" / "data" / "crabs.csv").write_bytes(EXAMPLE.read_bytes())
    path = write_study(tmp_path / "mine", "data/crabs.csv", "sex", 'label = "crabs"')
    path.write_text(path.read_text().replace("seed = 0", "seed = 0\npsis = true"))  # (compare's)
    run = study.run_study(path, tmp_path / "toml", workers=1)
    assert run.failed == 0 and run.done == 6

    # 3. Python, on a DataFrame
    df = pd.read_csv(EXAMPLE)
    result = gc.compare(
        df[FEATURES], df["sex"], engines=("laplace", "ep"), policy="fixed", folds=3, n_repeats=1,
        output=tmp_path / "py", name="crabs", workers=1,
    )  # fmt: skip
    assert isinstance(result.table, pd.DataFrame)

    a, b, c = (reproducible(t) for t in (from_cli, run.table, result.table))
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(a, c)
    # 3 splits x 2 engines x (6 scores + log evidence + 6 of the Pareto-k check) + 3 x 3 for EP
    assert len(a) == 81
    assert set(a.engine) == {"laplace", "ep"} and set(a.split) == {0, 1, 2}
    # real numbers: every engine beats the base rate (log 0.5) on these crabs on average
    mlp = a[a.metric == "mean_log_predictive"].groupby("engine")["value"].mean()
    assert (mlp > math.log(0.5)).all(), mlp
    # (on average: one fold of 16-17 cases at these fixed hyperparameters errs on 9)
    assert (a[a.metric == "error_rate"].groupby("engine")["value"].mean() < 0.5).all()
    # the study the command wrote repeats the run: every job is found done
    again = study.run_study(written, tmp_path / "cli", workers=1)
    assert again.skipped == again.total == 6
    # the copy kept with the results still finds the data (its path was relative)
    copy = (tmp_path / "toml" / "own" / "study.toml").read_text()
    assert copy.startswith("# the folder of the original study file")
    pd.testing.assert_frame_equal(reproducible(study.assemble(tmp_path / "toml" / "own")), a)


def test_the_same_data_under_other_names_give_the_same_numbers(tmp_path, capsys) -> None:
    """Splits and engine seeds derive from the seed and the data's content, not from the
    label: ``gpc-compare compare mine.csv`` and ``gc.compare(df)`` (label "compare")."""
    (tmp_path / "mine.csv").write_bytes(EXAMPLE.read_bytes())
    code = main(
        ["compare", tmp_path / "mine.csv", "--target", "sex", "--engines", "laplace",
         "--policy", "fixed", "--folds", "3", "--repeats", "1", "--seed", "4", "--output",
         tmp_path / "cli", "--workers", "1", "--no-report"]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    from_cli = pd.read_csv(tmp_path / "cli" / "mine" / "results.csv")
    df = pd.read_csv(EXAMPLE)
    result = gc.compare(df[FEATURES], df["sex"], engines=("laplace",), policy="fixed",
                        folds=3, n_repeats=1, random_seed=4, output=tmp_path / "py",
                        workers=1)  # fmt: skip
    a, b = (reproducible(t).drop(columns=["dataset", "job_id"]) for t in (from_cli, result.table))
    assert set(from_cli.dataset) == {"mine"} and set(result.table.dataset) == {"compare"}
    pd.testing.assert_frame_equal(a, b)


def test_differences_are_the_corrected_t_of_the_table(tmp_path) -> None:
    """``Comparison.differences()`` (what the findings call a win) is the corrected
    resampled t-interval of the table's per-split scores, recomputed here by hand."""
    df = pd.read_csv(EXAMPLE)
    result = gc.compare(df[FEATURES], df["sex"], engines=("laplace", "ep"), policy="fixed",
                        folds=3, n_repeats=1, output=tmp_path, workers=1)  # fmt: skip
    diffs = result.differences()
    t = result.table
    for metric, sign in (("mean_log_predictive", 1), ("error_rate", -1)):
        row = diffs[(diffs.engine_a == "ep") & (diffs.engine_b == "laplace")]
        row = row[row.metric == metric].iloc[0]
        a, b = (
            t[(t.engine == e) & (t.metric == metric)].sort_values("split")
            for e in ("ep", "laplace")
        )
        d = a["value"].to_numpy() - b["value"].to_numpy()
        ratio = a["n_test"].mean() / a["n_train"].mean()
        half = stats.t.ppf(0.975, 2) * math.sqrt((1 / 3 + ratio) * np.var(d, ddof=1))
        assert row.difference == pytest.approx(d.mean(), abs=1e-12)
        assert (row.low, row.high) == pytest.approx((d.mean() - half, d.mean() + half), abs=1e-12)
        assert row.n_splits == 3
        excludes = row.low > 0 or row.high < 0
        better = "a better" if (row.low > 0) == (sign > 0) else "b better"
        assert row.verdict == (better if excludes else "no difference")
        assert math.isnan(row.reference_mcse)  # (no sampling reference among these engines)


def test_gc_compare_on_arrays_resumes_and_reports(tmp_path) -> None:
    df = pd.read_csv(EXAMPLE)
    X, y = df[FEATURES].to_numpy(), (df["sex"] == "M").to_numpy(dtype=int)
    first = gc.compare(X, y, engines=("laplace",), policy="fixed", folds=2, n_repeats=1,
                       output=tmp_path, workers=1)  # fmt: skip
    assert first.run.done == 2 and first.run.failed == 0
    data = pd.read_csv(tmp_path / "compare" / "data.csv")
    assert list(data.columns) == ["x1", "x2", "x3", "x4", "x5", "y"]
    np.testing.assert_array_equal(data[["x1", "x2", "x3", "x4", "x5"]].to_numpy(), X)
    again = gc.compare(X, y, engines=("laplace",), policy="fixed", folds=2, n_repeats=1,
                       output=tmp_path, workers=1)  # fmt: skip
    assert again.run.skipped == 2 and again.run.done == 0
    pd.testing.assert_frame_equal(first.table, again.table)
    summary = first.summary()
    row = summary[(summary.engine == "laplace") & (summary.metric == "error_rate")].iloc[0]
    assert row["n_splits"] == 2
    errors = first.table[first.table.metric == "error_rate"]["value"]
    assert row["mean"] == pytest.approx(errors.mean(), rel=1e-12)
    # the held-out scores' interval is the report's: a bootstrap over test cases
    assert row["interval"] == "bootstrap over test cases"
    assert 0.0 <= row["low"] <= row["mean"] <= row["high"] <= 1.0
    evidence = summary[summary.metric == "log_evidence"].iloc[0]
    assert evidence["interval"].startswith("t")
    path = first.report(tmp_path / "copy")
    assert path == tmp_path / "copy" / "report.md" and "Study `compare`" in path.read_text()
    # other data under the same name: new jobs, never the stale ones
    changed = gc.compare(X, 1 - y, engines=("laplace",), policy="fixed", folds=2, n_repeats=1,
                         output=tmp_path, workers=1)  # fmt: skip
    assert changed.run.done == 2
    assert set(changed.table.job_id).isdisjoint(first.table.job_id)


def test_gc_compare_in_memory_and_its_errors() -> None:
    df = pd.read_csv(EXAMPLE)
    result = gc.compare(df[FEATURES], df["sex"], engines=("laplace",), policy="fixed",
                        folds=2, n_repeats=1, workers=1)  # fmt: skip
    assert result.result_dir.is_dir() and set(result.table.dataset) == {"compare"}
    assert "Comparison('compare'" in repr(result)
    with pytest.raises(ValueError, match="has one class"):
        gc.compare(df[FEATURES], np.ones(len(df)), engines=("laplace",), workers=1)
    with pytest.raises(ValueError, match=r"non-numeric feature column\(s\) \['sp'\]"):
        gc.compare(df[FEATURES].assign(sp="B"), df["sex"], engines=("laplace",), workers=1)
    with pytest.raises(ValueError, match="one label per row"):
        gc.compare(df[FEATURES], df["sex"][:10], engines=("laplace",), workers=1)
    with pytest.raises(ValueError, match="name: must be letters"):
        gc.compare(df[FEATURES], df["sex"], name="../up", workers=1)
    with pytest.raises(TypeError, match="unexpected keyword"):
        gc.compare(df[FEATURES], df["sex"], folds_=3)


# --------------------------------------------------------------------------- refusals
def _csv(folder: Path, text: str, name: str = "d.csv") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


GOOD = """
a,b,y
1.0,2.0,p
2.0,1.5,q
3.0,0.5,p
4.0,2.5,q
5.0,1.0,p
6.0,3.0,q
"""

# (file text, study fields, target, every fragment the message must hold)
BAD = {
    "missing_file": (None, "", "y", ["nope.csv: no such file"]),
    "missing_target": (GOOD, "", "label", ["no column 'label' (the target)", "['a', 'b', 'y']"]),
    "text_feature": (
        GOOD.replace("2.0,1.5,q", "2.0,abc,q"),
        "",
        "y",
        [
            "non-numeric feature column(s) ['b']",
            "'b' row 2 (line 3): 'abc'",
            'categorical = "onehot"',
            'categorical = "drop"',
        ],
    ),  # fmt: skip
    "missing_values": (
        GOOD.replace("3.0,0.5,p", "3.0,,p").replace("5.0,1.0,p", ",,p"),
        "",
        "y",
        [
            "missing values in column(s) 'a' 1 (first at row 5 (line 6)), 'b' 2 (first at "
            "row 3 (line 4))",
            'missing = "drop"',
            "2 of 6 rows",
        ],
    ),  # fmt: skip
    "one_class": (GOOD.replace(",q", ",p"), "", "y", ["column 'y' has one class ('p' in all 6"]),
    "three_classes": (
        GOOD.replace("6.0,3.0,q", "6.0,3.0,r"),
        "",
        "y",
        [
            "has 3 classes ['p', 'q', 'r']",
            "likelihood = 'probit' is binary",
            'likelihood = "softmax"',
        ],
    ),  # fmt: skip
    "too_few_per_class": (
        GOOD,
        "",
        "y",
        ["class 'p' of column 'y' has 3 case(s), too few for 4 stratified folds", "n_splits"],
    ),
    "bad_label": (GOOD, 'label = "../up"', "y", ["label: must be letters", "'../up'"]),
    "bad_positive": (GOOD, 'positive = "yes"', "y", ["positive = 'yes' is not a label", "'p'"]),
    "unknown_field": (GOOD, 'delimiter = ";"', "y", ["unknown field(s) ['delimiter']"]),
    "infinite": (GOOD.replace("4.0,2.5", "4.0,inf"), "", "y", ["'b' holds an infinite value"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_data_is_refused_naming_file_column_row(case, tmp_path, capsys) -> None:
    text, extra, target, fragments = BAD[case]
    name = "nope.csv" if text is None else "d.csv"
    if text is not None:
        _csv(tmp_path, text)
    folds = 4 if case == "too_few_per_class" else 3
    path = write_study(tmp_path, name, target, extra, folds=folds)
    with pytest.raises(study.StudyError) as info:  # a ValueError
        study.load_study(path)
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert message.startswith(f"{path}: datasets[0]: ")
    if case not in ("bad_label", "unknown_field"):  # (those name the field, not the file)
        assert str(tmp_path / name) in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    # the command line: exit 2 with the same message
    assert main(["run", path, "--output", tmp_path / "out"]) == 2
    assert message in capsys.readouterr().err
    # and gpc-compare compare on the file: exit 2, no study left behind
    if text is not None and case in ("missing_target", "text_feature", "missing_values"):
        args = ["compare", tmp_path / name, "--target", target, "--output", tmp_path / "cmp"]
        assert main(args) == 2
        err = capsys.readouterr().err
        # it speaks flags (the flag to change), not the fields of a study never written
        flag = {"missing_target": "its columns", "text_feature": "--categorical onehot"}
        assert all(f in err for f in fragments[:1]) and flag.get(case, "--missing drop") in err
        assert "study.toml" not in err and ' = "' not in err
        assert not (tmp_path / "cmp").exists()


def test_what_the_options_fix(tmp_path) -> None:
    text = GOOD.replace("a,b,y", "a,b,c,k,y").replace(",p\n", ",red,7,p\n")
    text = text.replace(",q\n", ",blue,7,q\n").replace("3.0,0.5,", "3.0,,")
    path = _csv(tmp_path, text)
    data = load_table(path, "y", categorical="onehot", missing="drop", positive="p")
    assert data.feature_names == ["a", "b", "c=blue", "c=red"]  # (k: constant, dropped)
    assert data.n_samples == 5 and data.class_names == ("q", "p")
    np.testing.assert_array_equal(data.y, [1, 0, 0, 1, 0])
    np.testing.assert_array_equal(data.X[:, 2], [0, 1, 1, 0, 1])
    assert data.info["notes"] == [
        "1 of 6 rows dropped for missing values ('b' 1 (first at row 3 (line 4)))",
        "one-hot encoded: 'c' (2 levels)",
        "constant column(s) ['k'] dropped (one value in every row: no information)",
    ]
    dropped = load_table(path, "y", categorical="drop", missing="drop", features=["a", "c"])
    assert dropped.feature_names == ["a"] and dropped.class_names == ("p", "q")


def test_a_constant_column_is_dropped_with_a_note_in_the_report(tmp_path) -> None:
    df = pd.read_csv(EXAMPLE).assign(const=2.5)
    df.to_csv(tmp_path / "crabs.csv", index=False)
    path = write_study(tmp_path, "crabs.csv", "sex", 'label = "crabs"', folds=2)
    config = study.load_study(path)
    assert config.datasets[0].data.feature_names == FEATURES
    summary = study.run_study(config, tmp_path / "out", workers=1)
    from gpc_compare.report import write_report

    text = write_report(summary.result_dir).read_text()
    assert f"file `{tmp_path / 'crabs.csv'}` (sha256 {file_sha256(tmp_path / 'crabs.csv')})" in text
    assert "note: constant column(s) ['const'] dropped" in text


# --------------------------------------------------------------------------- formats, paths
def test_gzip_and_parquet_read_the_same_data(tmp_path) -> None:
    df = pd.read_csv(EXAMPLE)
    with gzip.open(tmp_path / "crabs.csv.gz", "wt") as fh:
        df.to_csv(fh, index=False)
    pytest.importorskip("pyarrow")
    df.to_parquet(tmp_path / "crabs.parquet")
    specs = {}
    for file in ("crabs.csv.gz", "crabs.parquet"):
        path = write_study(tmp_path / file.replace(".", "_"), f"../{file}", "sex",
                           'label = "crabs"')  # fmt: skip
        specs[file] = study.load_study(path).datasets[0]
    direct = load_table(EXAMPLE, "sex")
    for spec in specs.values():
        np.testing.assert_array_equal(spec.data.X, direct.X)
        np.testing.assert_array_equal(spec.data.y, direct.y)
        assert spec.options == {"data_sha256": data_digest(direct)}  # so the same job ids
    assert specs["crabs.parquet"].file == str(tmp_path / "crabs.parquet")


def test_parquet_without_pyarrow_names_the_extra(tmp_path, monkeypatch) -> None:
    (tmp_path / "d.parquet").write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    path = write_study(tmp_path, "d.parquet")
    with pytest.raises(study.StudyError, match=r"pip install 'gpc_compare\[parquet\]'"):
        study.load_study(path)


def test_relative_paths_start_at_the_study_file_not_the_working_directory(
    tmp_path, monkeypatch
) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "crabs.csv").write_bytes(EXAMPLE.read_bytes())
    path = write_study(tmp_path / "studies", "../data/crabs.csv", "sex", 'label = "crabs"')
    monkeypatch.chdir(tmp_path / "data")  # a working directory where the path means nothing
    config = study.load_study(path)
    assert config.datasets[0].file == str(tmp_path / "data" / "crabs.csv")
    # data_dir moves the starting point
    text = path.read_text().replace('name = "own"', 'name = "own"\ndata_dir = "../data"')
    path.write_text(text.replace("../data/crabs.csv", "crabs.csv"))
    assert study.load_study(path).datasets[0].file == str(tmp_path / "data" / "crabs.csv")


# --------------------------------------------------------------------------- workers
def test_a_script_without_a_main_guard_runs_on_two_workers(tmp_path) -> None:
    script = tmp_path / "no_guard.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            import pandas as pd
            import gpc_compare as gc

            print("script started", file=sys.stderr, flush=True)
            df = pd.read_csv({str(EXAMPLE)!r})
            result = gc.compare(
                df[{FEATURES!r}], df["sex"], engines=("laplace", "ep"), policy="fixed",
                folds=2, n_repeats=1, output={str(tmp_path / "out")!r}, workers=2,
            )
            print(result.run.done, result.run.failed, len(result.table))
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # (this checkout's package, not another)
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["4", "0", "54"]  # (30 rows + 24 of the Pareto-k check)
    assert out.stderr.count("script started") == 1  # the workers never ran the script


def test_gc_compare_on_a_dask_cluster_gives_the_same_table(tmp_path) -> None:
    distributed = pytest.importorskip("distributed")
    df = pd.read_csv(EXAMPLE)
    settings = {
        "engines": ("laplace", "ep"),
        "policy": "fixed",
        "folds": 2,
        "n_repeats": 1,
        "name": "crabs",
    }
    here = gc.compare(df[FEATURES], df["sex"], output=tmp_path / "here", workers=1, **settings)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        there = gc.compare(df[FEATURES], df["sex"], output=tmp_path / "dask",
                           scheduler=cluster.scheduler_address, **settings)  # fmt: skip
    assert there.run.done == 4 and there.run.failed == 0
    pd.testing.assert_frame_equal(reproducible(here.table), reproducible(there.table))
