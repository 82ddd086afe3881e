"""``gc.compare``'s study: built in Python (no TOML read back), kept as ``study.toml``
beside the results, and the same study as that file."""

from __future__ import annotations

import tomllib

import numpy as np
import pytest

import gpc_compare as gc
from gpc_compare import comparison, study
from gpc_compare.study.fields import parse_splits


def test_study_fields_and_text_agree() -> None:
    settings = dict(name="mine", label="mine", engines=("laplace", "ep"), folds=3,
                    policy="fixed", seed=np.int64(4), kernel={"name": "matern52", "ard": True},
                    engine_options={"ep": {"schedule": "parallel"}}, n_restarts=1,
                    positive="M", features=("a", "b"), subsample=None)  # fmt: skip
    fields = comparison.study_fields("d.csv", "sex", **settings)
    text = comparison.study_text("d.csv", "sex", **settings)
    assert tomllib.loads(text) == fields
    assert fields["seed"] == 4 and type(fields["seed"]) is int
    assert fields["datasets"] == [{"file": "d.csv", "target": "sex", "label": "mine",
                                   "positive": "M", "features": ["a", "b"]}]  # fmt: skip
    assert text.startswith("# Written by gpc_compare")
    with pytest.raises(ValueError, match="engine_options"):
        comparison.study_fields("d.csv", "y", name="x", engines=("ep",), engine_options={"vb": {}})
    with pytest.raises(ValueError, match="engines: give a sequence"):
        comparison.study_fields("d.csv", "y", name="x", engines="ep")


def test_compare_repeats_its_folds_to_ten_splits_by_default() -> None:
    """Issue 29: ``gc.compare`` (and ``gpc-compare compare``) leave ``n_repeats`` to the
    study's default, ceil(10 / folds), so every comparison has >= 10 paired splits;
    ``n_repeats`` states it."""
    for folds, repeats in ((5, 2), (3, 4), (10, 1)):
        fields = comparison.study_fields("d.csv", "y", name="x", folds=folds)
        assert fields["splits"] == {"kind": "kfold", "n_splits": folds}
        splits = parse_splits(fields["splits"], "x")
        assert splits.get("n_repeats", 1) == repeats
    one = comparison.study_fields("d.csv", "y", name="x", n_repeats=1)["splits"]
    assert parse_splits(one, "x") == {"kind": "kfold", "n_splits": 5}
    three = comparison.study_fields("d.csv", "y", name="x", n_repeats=3)["splits"]
    assert parse_splits(three, "x") == {"kind": "kfold", "n_splits": 5, "n_repeats": 3}


def test_compare_builds_its_study_without_reading_a_file(tmp_path, monkeypatch) -> None:
    def refuse(path):
        raise AssertionError(f"gc.compare read {path} back")

    monkeypatch.setattr(study, "load_study", refuse)
    monkeypatch.setattr(study.config, "load_study", refuse)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=40) > 0).astype(int)
    result = gc.compare(X, y, engines=("laplace",), policy="fixed", folds=2, n_repeats=1,
                        output=tmp_path, workers=1)  # fmt: skip
    assert result.run.done == 2 and result.run.failed == 0
    kept = tmp_path / "compare" / "study.toml"
    assert result.study.path == str(kept)
    monkeypatch.undo()
    assert study.load_study(kept) == result.study  # the file kept is the study that ran


def test_the_seed_is_random_seed_and_the_old_name_warns(tmp_path) -> None:
    """One vocabulary: ``random_seed`` (as ``gc.fit``'s); ``seed=`` still works, warning."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 2))
    y = (X[:, 0] > 0).astype(int)
    common = dict(engines=("laplace",), policy="fixed", folds=2, n_repeats=1, workers=1)
    new = gc.compare(X, y, random_seed=7, output=tmp_path / "new", **common)
    with pytest.warns(DeprecationWarning, match="random_seed"):
        old = gc.compare(X, y, seed=7, output=tmp_path / "old", **common)
    assert new.study.seed == old.study.seed == 7
    cols = ["dataset", "split", "engine", "metric", "value"]
    assert new.table[cols].equals(old.table[cols])
