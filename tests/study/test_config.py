"""Studies built in Python (``StudyConfig.from_dict``) are validated as study files are:
the same StudyConfig from the same fields, the same refusals naming the field."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from gpc_compare.study import StudyConfig, StudyError, expand, load_study

ROOT = Path(__file__).resolve().parents[2]
FIELDS = {
    "name": "py",
    "seed": 3,
    "datasets": [{"name": "crabs", "subsample": 40}],
    "hyperparameters": {"policy": "fixed"},
    "splits": {"kind": "kfold", "n_splits": 2, "n_repeats": 1},
    "kernel": {"name": "matern52"},
    "engines": {"laplace": {}, "ep": {"schedule": "parallel"}},
}


@pytest.mark.parametrize("name", ["quick", "approximations", "kernels", "ep_loo"])
def test_a_study_file_and_its_fields_give_the_same_study(name) -> None:
    path = ROOT / "studies" / f"{name}.toml"
    from_file = load_study(path)
    from_fields = StudyConfig.from_dict(tomllib.loads(path.read_text()), path)
    assert from_fields == from_file
    assert [j.id for j in expand(from_fields)] == [j.id for j in expand(from_file)]


def test_a_study_built_in_python() -> None:
    config = StudyConfig.from_dict(FIELDS)
    assert config.name == "py" and config.path == "" and config.seed == 3
    assert config.methods == {"laplace": "laplace", "ep": "ep"}
    assert config.kernel["name"] == "matern52" and config.policy == "fixed"
    assert len(expand(config)) == 4
    # as the TOML reader gives them: tuples are lists, NumPy scalars numbers
    same = StudyConfig.from_dict({**FIELDS, "seed": np.int64(3),
                                  "datasets": ({"name": "crabs", "subsample": 40},)})  # fmt: skip
    assert same == config


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        ({"name": "../x"}, "name"),
        ({"seed": -1}, "seed"),
        ({"likelihood": "cauchy"}, "likelihood"),
        ({"mean": float("inf")}, "mean"),
        ({"datasets": []}, "datasets"),
        ({"engines": {"nope": {}}}, "engines.nope"),
        ({"splits": {"kind": "kfold", "n_splits": 1}}, "splits.n_splits"),
        ({"hyperparameters": {"policy": "guess"}}, "hyperparameters.policy"),
        ({"reference": "mcmc"}, "reference"),
        ({"colour": "red"}, "top level"),
    ],
)
def test_a_bad_field_is_refused_naming_it(edit, field) -> None:
    with pytest.raises(StudyError, match=f"^<study>: {field}"):
        StudyConfig.from_dict({**FIELDS, **edit})


def test_without_a_file_a_study_needs_a_name_and_with_one_errors_name_it(tmp_path) -> None:
    fields = {k: v for k, v in FIELDS.items() if k != "name"}
    with pytest.raises(StudyError, match="name: missing"):
        StudyConfig.from_dict(fields)
    path = tmp_path / "mine.toml"
    config = StudyConfig.from_dict(fields, path)  # the name from the file's, as load_study
    assert config.name == "mine" and config.path == str(path)
    with pytest.raises(StudyError, match=f"^{path}: seed"):
        StudyConfig.from_dict({**fields, "seed": "0"}, path)
    with pytest.raises(StudyError, match="a study is a table"):
        StudyConfig.from_dict([1, 2])


def test_a_data_file_is_found_beside_the_study_path(tmp_path) -> None:
    (tmp_path / "data").mkdir()
    rng = np.random.default_rng(0)
    rows = ["x1,x2,label"] + [f"{a:.3f},{b:.3f},{int(a > 0)}" for a, b in rng.normal(size=(30, 2))]
    (tmp_path / "data" / "d.csv").write_text("\n".join(rows) + "\n")
    fields = {**FIELDS, "datasets": [{"file": "data/d.csv", "target": "label"}]}
    config = StudyConfig.from_dict(fields, tmp_path / "s.toml")
    assert config.datasets[0].file == str(tmp_path / "data" / "d.csv")
    with pytest.raises(StudyError, match=r"datasets\[0\]"):
        StudyConfig.from_dict(fields, tmp_path / "elsewhere" / "s.toml")


def test_a_loo_objective_is_refused_at_load_where_the_likelihood_has_no_loo(tmp_path) -> None:
    """EP's leave-one-out objective is probit-only: a logistic study asking for it is refused
    when it loads, naming the engine's field."""
    path = tmp_path / "s.toml"
    path.write_text(
        'name = "s"\nlikelihood = "logistic"\ndatasets = [{name = "crabs"}]\n'
        '[engines.ep]\nobjective = "loo"\n'
    )
    with pytest.raises(StudyError, match=r"engines\.ep\.objective: 'loo' needs .*'logistic'"):
        load_study(path)


def test_relative_data_paths_count_from_the_folder_a_study_is_named_in(tmp_path) -> None:
    """A study file that is a link elsewhere: its relative paths start where it is named
    (``gpc-compare compare`` checks its study there before replacing a link at that name;
    a clone under /tmp lost a level of its data path when the link was followed)."""
    from gpc_compare.study.datafiles import data_dir

    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "elsewhere.toml").write_text("")
    (tmp_path / "a" / "b" / "study.toml").symlink_to(tmp_path / "elsewhere.toml")
    assert data_dir({}, tmp_path / "a" / "b" / "study.toml") == (tmp_path / "a" / "b").resolve()
    assert (
        data_dir({"data_dir": ".."}, tmp_path / "a" / "b" / "study.toml")
        == (tmp_path / "a").resolve()
    )
