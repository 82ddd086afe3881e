"""The five KEEL benchmarks (gpc_compare.datasets.keel) and Breiman's twonorm and ringnorm models.

Sizes, class counts and first rows are the ones published by KEEL and the original sources
and documented in gpc_compare/data/README.md (whose checksum table tests/datasets/test_datasets.py
recomputes); twonorm's attached model is checked against its own file. KEEL's ringnorm is
damaged and not shipped: ``ringnorm`` and ``twonorm_model`` are drawn from Breiman's models,
whose posteriors are checked against scipy.stats and whose Bayes errors against a 1-D
integral.
"""

from __future__ import annotations

import time
from importlib import resources

import numpy as np
import pytest
from scipy import integrate, stats

from gpc_compare import datasets as ds
from gpc_compare.datasets import bundled

# name, n, d, cases per class in class_names order, positive class, kind
KEEL = [
    ("banana", 5300, 2, {"-1": 2924, "+1": 2376}, "+1", "synthetic"),
    ("twonorm", 7400, 20, {"class 0": 3703, "class 1": 3697}, "class 1", "synthetic"),
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


def test_duplicates_and_label_conflicts_are_the_documented_ones() -> None:
    for name, repeats, conflicts in [
        ("banana", 8, 1),
        ("twonorm", 0, 0),
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


# --------------------------------------------------------------------------- Breiman's models
BREIMAN = [("ringnorm", ds.make_ringnorm), ("twonorm_model", ds.make_twonorm)]


@pytest.mark.parametrize(("name", "make"), BREIMAN)
def test_breiman_generators_are_seeded_and_shaped(name, make) -> None:
    data = ds.load(name)  # DELVE's size by default
    assert data.name == name and data.kind == "synthetic" and data.X.shape == (7400, 20)
    assert data.feature_names == [f"I{i}" for i in range(1, 21)]
    assert data.class_names == ("class 0", "class 1") and data.positive_class == "class 1"
    assert "n=7400" in data.description and "d=20" in data.description
    assert data.info == {"a": ds.TWONORM_A, "random_seed": 0}
    a, b = make(n=300, random_seed=4), ds.load(name, n=300, random_seed=4)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    c = make(n=300, random_seed=5)
    assert not np.array_equal(a.X, c.X) and not np.array_equal(a.y, c.y)
    with pytest.raises(ValueError, match="n must be"):
        make(n=0)
    with pytest.raises(ValueError, match="20 features"):
        data.true_log_proba(np.zeros((2, 3)))


def _direct_log_proba(name: str, X: np.ndarray) -> np.ndarray:
    """log p(y = k | x) from scipy.stats' class log densities (equal priors cancel)."""
    a, one, eye = ds.TWONORM_A, np.ones(20), np.eye(20)
    if name == "ringnorm":
        classes = [(0 * one, 4 * eye), (a * one, eye)]
    else:
        classes = [(a * one, eye), (-a * one, eye)]
    lp = np.column_stack([stats.multivariate_normal(m, c).logpdf(X) for m, c in classes])
    return lp - np.logaddexp(lp[:, :1], lp[:, 1:])


@pytest.mark.parametrize(("name", "make"), BREIMAN)
def test_breiman_posteriors_match_scipy_and_stay_finite(name, make) -> None:
    data = make(n=6, random_seed=1)
    X = np.vstack([data.X, np.linspace(-3.0, 4.0, 20), np.full(20, 0.6)])
    direct = _direct_log_proba(name, X)
    np.testing.assert_allclose(data.true_log_proba(X), direct, rtol=1e-12, atol=1e-12)
    # far out: finite log probabilities whose probabilities sum to one
    far = np.vstack([1e3 * np.ones(20), -1e3 * np.ones(20), 1e3 * (-1.0) ** np.arange(20)])
    lp = data.true_log_proba(far)
    assert np.all(np.isfinite(lp)) and np.all(lp <= 0.0)
    np.testing.assert_allclose(np.exp(lp).sum(axis=1), 1.0, rtol=0, atol=1e-12)
    # (scipy's log densities are about -1e7 here, so the direct difference is good to ~1e-9)
    np.testing.assert_allclose(lp, _direct_log_proba(name, far), rtol=1e-12, atol=1e-9)
    if name == "ringnorm":  # far from the centre only the wide class 0 has any mass
        assert np.all(lp[:, 0] == 0.0) and np.all(lp[:, 1] < -3e5)
    else:  # the sign of sum(x) decides; on the alternating row sum(x) = 0
        np.testing.assert_allclose(lp[:, 0], [0.0, -2 * ds.TWONORM_A * 2e4, np.log(0.5)])


def test_breiman_samples_follow_the_models() -> None:
    a = ds.TWONORM_A
    ring = ds.make_ringnorm(n=40_000, random_seed=2)
    two = ds.make_twonorm(n=40_000, random_seed=2)
    for data, (m0, s0, m1, s1) in [(ring, (0.0, 2.0, a, 1.0)), (two, (a, 1.0, -a, 1.0))]:
        for k, mean, sd in [(0, m0, s0), (1, m1, s1)]:
            Xk = data.X[data.y == k]
            assert np.all(np.abs(Xk.mean(axis=0) - mean) < 5 * sd / np.sqrt(len(Xk)))
            np.testing.assert_allclose(Xk.std(axis=0), sd, rtol=0.04)
        assert abs(data.y.mean() - 0.5) < 5 * 0.5 / np.sqrt(data.n_samples)
    # the generator's twonorm is the file's model, with the file's coding
    file = ds.load_twonorm()
    np.testing.assert_array_equal(two.true_log_proba(two.X), file.true_log_proba(two.X))
    assert two.bayes_error == file.bayes_error == ds.TWONORM_BAYES_ERROR


def test_breiman_bayes_errors() -> None:
    assert ds.TWONORM_BAYES_ERROR == stats.norm.cdf(-2.0)
    # ringnorm: t(x) > 0 iff r^2 < c(z), z = sum(x)/sqrt(20) (N(0, 4) in class 0, N(2, 1) in
    # class 1), r^2 = |x|^2 - z^2 (4 chi^2_19 in class 0, chi^2_19 in class 1)
    c = np.polynomial.Polynomial([8 / 3 * (20 * np.log(2) - 2), 16 / 3, -1.0])
    lo, hi = np.sort(c.roots().real)
    chi = stats.chi2(19)
    kw = {"epsabs": 1e-15, "epsrel": 1e-13, "limit": 200}
    p0 = integrate.quad(lambda z: stats.norm.pdf(z, 0, 2) * chi.cdf(c(z) / 4), lo, hi, **kw)[0]
    p1 = integrate.quad(lambda z: stats.norm.pdf(z, 2, 1) * chi.sf(c(z)), lo, hi, **kw)[0]
    p1 += stats.norm.cdf(lo, 2, 1) + stats.norm.sf(hi, 2, 1)  # c(z) < 0: always class 0
    assert abs((p0 + p1) / 2 - ds.RINGNORM_BAYES_ERROR) < 1e-13
    # (the Bayes rule errs on 96 of DELVE's 7400 draws, 1.30%)
    assert ds.RINGNORM_BAYES_ERROR == pytest.approx(0.0124, abs=5e-5)


def test_keels_damaged_ringnorm_is_not_shipped() -> None:
    assert not hasattr(ds, "load_ringnorm")
    assert not resources.files("gpc_compare").joinpath("data", "ringnorm.csv").is_file()
    assert ds.DATASETS["ringnorm"] is ds.make_ringnorm and "ringnorm" in ds._GENERATORS
