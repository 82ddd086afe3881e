"""The six KEEL benchmarks (gpc_compare.datasets.keel).

Sizes, class counts and first rows are the ones published by KEEL and the original sources
and documented in gpc_compare/data/README.md (whose checksum table tests/test_datasets.py
recomputes); twonorm's attached model is checked against its own file; ringnorm's documented
damage is pinned to the values README.md quotes.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from scipy import stats

from gpc_compare import datasets as ds
from gpc_compare.datasets import bundled

# name, n, d, cases per class in class_names order, positive class, kind
KEEL = [
    ("banana", 5300, 2, {"-1": 2924, "+1": 2376}, "+1", "synthetic"),
    ("twonorm", 7400, 20, {"class 0": 3703, "class 1": 3697}, "class 1", "synthetic"),
    ("ringnorm", 7400, 20, {"class 0": 3664, "class 1": 3736}, "class 1", "synthetic"),
    ("magic", 19020, 10, {"hadron": 6688, "gamma": 12332}, "gamma", "real"),
    ("spambase", 4597, 57, {"non-spam": 2785, "spam": 1812}, "spam", "real"),
    ("phoneme", 5404, 5, {"nasal": 3818, "oral": 1586}, "oral", "real"),
]


@pytest.mark.parametrize(("name", "n", "d", "counts", "positive", "kind"), KEEL)
def test_sizes_class_counts_and_coding(name, n, d, counts, positive, kind) -> None:
    data = ds.load(name)
    assert data.name == name and data.kind == kind
    assert data.X.shape == (n, d) and data.y.shape == (n,) and data.X.dtype == float
    assert np.issubdtype(data.y.dtype, np.integer) and set(np.unique(data.y)) == {0, 1}
    assert data.class_counts == counts and data.positive_class == positive
    assert len(data.feature_names) == d and np.all(np.isfinite(data.X))
    assert f"n={n}" in data.description and f"d={d}" in data.description
    assert getattr(ds, f"load_{name}")().X.shape == (n, d)


def test_first_rows_are_keels() -> None:
    banana = ds.load_banana()
    np.testing.assert_array_equal(banana.X[0], [1.14, -0.114])
    assert banana.y[0] == 0 and banana.feature_names == ["V1", "V2"]
    twonorm = ds.load_twonorm()
    assert twonorm.feature_names == [f"I{i}" for i in range(1, 21)]
    np.testing.assert_array_equal(twonorm.X[0, :3], [-1.2036, -2.6240, 0.5963])
    assert twonorm.X[0, -1] == -0.8541 and twonorm.y[0] == 1
    magic = ds.load_magic()  # UCI magic04.data, line 1
    assert magic.feature_names[:2] == ["fLength", "fWidth"] and magic.feature_names[-1] == "fDist"
    np.testing.assert_array_equal(
        magic.X[0],
        [28.7967, 16.0021, 2.6449, 0.3918, 0.1982, 27.7004, 22.011, -8.2027, 40.092, 81.8828],
    )
    assert magic.y[0] == 1
    spam = ds.load_spambase()  # UCI spambase.data, line 1
    assert spam.feature_names[0] == "word_freq_make" and spam.feature_names[48] == "char_freq_;"
    assert spam.feature_names[-1] == "capital_run_length_total"
    np.testing.assert_array_equal(spam.X[0, :5], [0, 0.64, 0.64, 0, 0.32])
    np.testing.assert_array_equal(spam.X[0, -4:], [0.0, 3.756, 61, 278])
    assert spam.y[0] == 1
    assert spam.X[:, -1].max() == 15841 and spam.X[:, -2].max() == 9989
    phoneme = ds.load_phoneme()
    np.testing.assert_array_equal(phoneme.X[0], [1.24, 0.875, -0.205, -0.078, 0.067])
    assert phoneme.y[0] == 0


def test_ringnorm_is_keels_damaged_copy() -> None:
    ring = ds.load_ringnorm()
    # DELVE's first row 0.8494, 2.1770, 0.5982, ..., -1.6605, 0.5775, 1.6638, 3.0895, -3.0276
    np.testing.assert_array_equal(ring.X[0, :3], [849, 2177, 598])
    np.testing.assert_array_equal(ring.X[0, 15:], [-166, 578, 1664, 309, -3028])
    assert np.all(ring.X == np.round(ring.X)) and ring.X.min() == -8778 and ring.X.max() == 7627
    assert ring.true_log_proba is None and "damaged" in ring.description
    assert ring.y[0] == 0


def test_duplicates_and_label_conflicts_are_the_documented_ones() -> None:
    for name, repeats, conflicts in [
        ("banana", 8, 1),
        ("twonorm", 0, 0),
        ("ringnorm", 0, 0),
        ("magic", 115, 0),
        ("spambase", 391, 3),
        ("phoneme", 55, 0),
    ]:
        data = ds.load(name)
        rows = np.column_stack([data.X, data.y])
        assert len(rows) - len(np.unique(rows, axis=0)) == repeats, name
        inputs = len(np.unique(data.X, axis=0))
        assert len(np.unique(rows, axis=0)) - inputs == conflicts, name


def test_twonorm_carries_breimans_model() -> None:
    data = ds.load_twonorm()
    a = ds.TWONORM_A
    assert a == pytest.approx(2 / np.sqrt(20))
    for k, sign in ((0, 1.0), (1, -1.0)):  # class 0 has mean +a, class 1 mean -a
        Xk = data.X[data.y == k]
        assert np.all(np.abs(Xk.mean(axis=0) - sign * a) < 4 / np.sqrt(len(Xk)))
    assert data.bayes_error == pytest.approx(stats.norm.cdf(-2.0), rel=1e-12)
    lp = data.true_log_proba(data.X)
    np.testing.assert_allclose(np.logaddexp(lp[:, 0], lp[:, 1]), 0.0, atol=1e-12)
    wrong = (data.true_proba(data.X) > 0.5) != (data.y == 1)
    assert wrong.sum() == 165  # 2.23%, against the model's 2.28%
    far = data.true_log_proba(np.full((1, 20), 50.0))
    assert np.all(np.isfinite(far)) and far[0, 0] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="20 features"):
        data.true_log_proba(np.zeros((2, 3)))


def test_the_largest_file_loads_fast() -> None:
    bundled._read_text.cache_clear()  # time the first read, the file's text included
    start = time.perf_counter()
    magic = ds.load("magic")
    assert time.perf_counter() - start < 0.5
    assert magic.n_samples == 19020
    # each call returns fresh arrays: a caller's changes do not reach the next load
    magic.X[0, 0] = -1.0
    assert ds.load_magic().X[0, 0] == 28.7967
