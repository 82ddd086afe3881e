"""Repeated k-fold splits (``[splits] kind = "kfold"``, ``n_repeats``): r x k folds, each
repeat a partition of the cases, and without repeats exactly the splits and job ids of
before."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import StratifiedKFold

from gpc_compare import study
from gpc_compare.study import problem

ROOT = Path(__file__).resolve().parents[2]

STUDY = """
name = "repeated"
seed = 3
datasets = [{{name = "breast_cancer", subsample = 60}}]

[kernel]
name = "squared_exponential"
lengthscale = "sqrt_d"

[splits]
kind = "kfold"
n_splits = 5
{repeats}

[engines.laplace]
[engines.ep]
"""


def _load(tmp_path: Path, repeats: str) -> study.StudyConfig:
    path = tmp_path / f"repeated{len(list(tmp_path.iterdir()))}.toml"
    path.write_text(STUDY.format(repeats=repeats))
    return study.load_study(path)


def _data(n: int = 53, seed: int = 0) -> SimpleNamespace:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    return SimpleNamespace(X=rng.standard_normal((n, 3)), y=y, n_samples=n)


def test_without_repeats_the_splits_are_exactly_those_of_before() -> None:
    data = _data()
    before = list(StratifiedKFold(5, shuffle=True, random_state=1234).split(data.X, data.y))
    for splits in (
        {"kind": "kfold", "n_splits": 5},
        {"kind": "kfold", "n_splits": 5, "n_repeats": 1},
    ):
        assert problem.n_splits(splits) == 5
        for i, (train, test) in enumerate(before):
            got = problem.split_indices(data, splits, i, 1234)
            assert np.array_equal(got[0], train) and np.array_equal(got[1], test)
        with pytest.raises(IndexError, match="split 5 out of range"):
            problem.split_indices(data, splits, 5, 1234)


def test_repeated_kfold_partitions_the_cases_once_per_repeat() -> None:
    data = _data()
    splits = {"kind": "kfold", "n_splits": 5, "n_repeats": 3}
    assert problem.n_splits(splits) == 15
    folds = [problem.split_indices(data, splits, i, 1234) for i in range(15)]
    for repeat in range(3):
        tests = [test for _, test in folds[5 * repeat : 5 * repeat + 5]]
        # disjoint test folds covering every case once, each trained on all the others
        assert np.array_equal(np.sort(np.concatenate(tests)), np.arange(data.n_samples))
        for train, test in folds[5 * repeat : 5 * repeat + 5]:
            assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(data.n_samples))
            assert test.size in (10, 11)  # 53 cases in 5 folds
            # stratified: each fold's positives within one of the share
            assert abs(data.y[test].sum() - data.y.sum() * test.size / data.n_samples) < 1
    # repeat 0 is the unrepeated split; each other repeat is a different shuffle
    for i in range(5):
        once = problem.split_indices(data, {"kind": "kfold", "n_splits": 5}, i, 1234)
        assert np.array_equal(folds[i][1], once[1])
    assignment = np.empty((3, data.n_samples), dtype=int)
    for i, (_, test) in enumerate(folds):
        assignment[i // 5, test] = i % 5
    assert not np.array_equal(assignment[0], assignment[1])
    assert not np.array_equal(assignment[1], assignment[2])
    # a shuffle derived from the seed: the same seed the same splits, another seed others
    again = problem.split_indices(data, splits, 7, 1234)
    assert np.array_equal(again[1], folds[7][1])
    assert not np.array_equal(problem.split_indices(data, splits, 7, 4321)[1], folds[7][1])
    with pytest.raises(IndexError, match="split 15 out of range"):
        problem.split_indices(data, splits, 15, 1234)


def test_a_study_with_n_repeats_expands_to_r_times_k_splits(tmp_path: Path) -> None:
    config = _load(tmp_path, "n_repeats = 2")
    assert config.splits == {"kind": "kfold", "n_splits": 5, "n_repeats": 2}
    jobs = study.expand(config)
    assert len(jobs) == 2 * 10 and len({j.id for j in jobs}) == 20
    assert sorted({j.split for j in jobs}) == list(range(10))
    assert {j.id.split("__")[1] for j in jobs} == {f"s{i}" for i in range(10)}
    # 5-fold x 2 repeats: 10 paired folds for every pair of engines (issue 29 asks >= 10)
    assert sum(j.engine == "ep" for j in jobs) == 10


def test_the_default_makes_at_least_ten_fold_pairs(tmp_path: Path) -> None:
    """Without ``n_repeats``, ceil(10 / k) repeats (issue 29: >= 10 fold pairs for the
    corrected resampled t); ``n_repeats = 1`` still gives one repeat."""
    default = _load(tmp_path, "")
    assert default.splits == {"kind": "kfold", "n_splits": 5, "n_repeats": 2}
    assert problem.n_splits(default.splits) == 10
    for k, r in ((2, 5), (3, 4), (4, 3), (6, 2), (9, 2), (10, 1), (20, 1)):
        text = STUDY.format(repeats="").replace("n_splits = 5", f"n_splits = {k}")
        path = tmp_path / f"k{k}.toml"
        path.write_text(text)
        splits = study.load_study(path).splits
        assert splits.get("n_repeats", 1) == r and problem.n_splits(splits) >= 10
    assert _load(tmp_path, "n_repeats = 1").splits == {"kind": "kfold", "n_splits": 5}


def test_repeats_keep_the_job_ids_of_repeat_0(tmp_path: Path) -> None:
    """The ids hash the splits without ``n_repeats`` (split i is the same fold whatever the
    number of repeats): adding repeats reuses every record of repeat 0."""
    one = study.expand(_load(tmp_path, "n_repeats = 1"))
    assert len(one) == 10
    for r in (2, 3):
        more = study.expand(_load(tmp_path, f"n_repeats = {r}"))
        assert len(more) == 10 * r
        assert [j.id for j in more if j.split < 5] == [j.id for j in one]
        assert len({j.id for j in more}) == 10 * r
    # another number of folds is another split of the same index: a new id
    other = STUDY.format(repeats="n_repeats = 1").replace("n_splits = 5", "n_splits = 4")
    (tmp_path / "k4.toml").write_text(other)
    four = study.expand(study.load_study(tmp_path / "k4.toml"))
    assert not {j.id for j in four} & {j.id for j in one}


@pytest.mark.parametrize(
    ("repeats", "match"),
    [
        ("n_repeats = 0", "n_repeats: must be an integer >= 1"),
        ("n_repeats = 1.5", "n_repeats: must be an integer >= 1"),
        ("test_size = 0.2", "splits: test_size belongs to kind = 'holdout'"),
    ],
)
def test_bad_kfold_repeats_are_refused(tmp_path: Path, repeats: str, match: str) -> None:
    with pytest.raises(study.StudyError, match=match):
        _load(tmp_path, repeats)


@pytest.mark.parametrize(
    "name", ["quick", "approximations", "approximations_logistic", "kernels", "ep_loo", "iris"]
)
def test_committed_kfold_studies_keep_their_job_ids(name: str) -> None:
    """The committed studies expand to the job ids of their committed results (their
    ``n_repeats`` stated: 2 for approximations, whose repeat 0 kept its ids, 1 for the
    others, which keep their 5 (quick: 3) fold pairs)."""
    jobs = study.expand(study.load_study(ROOT / "studies" / f"{name}.toml"))
    committed = pd.read_csv(ROOT / "results" / name / "jobs.csv")
    assert sorted(j.id for j in jobs) == sorted(committed.job_id)
