"""The bundled data sets and the synthetic generators (gpc_compare.datasets).

Counts and first rows are the published ones (UCI, R MASS, scikit-learn); the mixtures'
Bayes posteriors are checked against scipy.stats, their Bayes errors against grid
quadrature and Monte Carlo, and the generators against the models they sample.
"""

from __future__ import annotations

import hashlib
import re
import time
from importlib import resources

import numpy as np
import pytest
from scipy import special, stats
from sklearn.linear_model import LogisticRegression

from gpc_compare import datasets as ds

DATA = resources.files("gpc_compare").joinpath("data")


# --------------------------------------------------------------------------- files
def _readme_checksums() -> dict[str, str]:
    text = DATA.joinpath("README.md").read_text(encoding="utf-8")
    return dict(re.findall(r"^\| `([\w.]+\.csv)` \|.*\| `([0-9a-f]{64})` \|$", text, re.M))


def test_every_csv_matches_its_readme_checksum() -> None:
    listed = _readme_checksums()
    shipped = sorted(p.name for p in DATA.iterdir() if p.name.endswith(".csv"))
    assert (
        sorted(listed)
        == shipped
        == [
            "banana.csv",
            "crabs.csv",
            "ionosphere.csv",
            "letter.csv",
            "magic.csv",
            "optdigits.csv",
            "penbased.csv",
            "phoneme.csv",
            "pima.csv",
            "satimage.csv",
            "segment.csv",
            "sonar.csv",
            "spambase.csv",
            "synth.csv",
            "twonorm.csv",
            "vehicle.csv",
            "vowel.csv",
            "wine.csv",
        ]
    )
    total = 0
    for name, digest in listed.items():
        data = DATA.joinpath(name).read_bytes()
        total += len(data)
        assert hashlib.sha256(data).hexdigest() == digest, name
    # 233 KB of small sets, 4.0 MB of the five binary KEEL sets and 5.6 MB of the eight
    # multi-class ones (letter, optdigits and satimage 1.2-1.5 MB each): 9.8 MB
    assert total < 10_000_000


# --------------------------------------------------------------------------- sizes
# name, loader options, n, d, cases per class in class_names order (documented numbers)
SIZES = [
    ("breast_cancer", {}, 569, 30, {"benign": 357, "malignant": 212}),
    ("ionosphere", {}, 351, 34, {"bad": 126, "good": 225}),
    ("ionosphere", {"drop_constant": True}, 351, 33, {"bad": 126, "good": 225}),
    ("sonar", {}, 208, 60, {"rock": 97, "mine": 111}),
    ("pima", {}, 532, 7, {"not diabetic": 355, "diabetic": 177}),
    ("pima", {"subset": "train"}, 200, 7, {"not diabetic": 132, "diabetic": 68}),
    ("pima", {"subset": "test"}, 332, 7, {"not diabetic": 223, "diabetic": 109}),
    ("crabs", {}, 200, 5, {"female": 100, "male": 100}),
    ("crabs", {"target": "species"}, 200, 5, {"blue": 100, "orange": 100}),
    ("digits_3v5", {}, 365, 64, {"5": 182, "3": 183}),
    ("digits_3v5", {"drop_constant": True}, 365, 54, {"5": 182, "3": 183}),
    ("iris", {}, 150, 4, {"setosa": 50, "versicolor": 50, "virginica": 50}),
    ("ripley_synth", {}, 1250, 2, {"class 0": 625, "class 1": 625}),
    ("ripley_synth", {"subset": "train"}, 250, 2, {"class 0": 125, "class 1": 125}),
    ("ripley_synth", {"subset": "test"}, 1000, 2, {"class 0": 500, "class 1": 500}),
]


@pytest.mark.parametrize(("name", "options", "n", "d", "counts"), SIZES)
def test_sizes_and_class_counts(name, options, n, d, counts) -> None:
    data = ds.load(name, **options)
    assert data.X.shape == (n, d) and data.y.shape == (n,)
    assert data.X.dtype == float and np.issubdtype(data.y.dtype, np.integer)
    assert data.class_counts == counts
    assert data.n_classes == len(counts) and len(data.feature_names) == d
    assert np.all(np.isfinite(data.X))
    assert f"n={n}" in data.description and f"d={d}" in data.description
    if data.n_classes == 2:
        assert set(np.unique(data.y)) == {0, 1}
        assert data.class_names == (data.negative_class, data.positive_class)


def test_every_registered_set_is_finite_and_listed() -> None:
    rows = ds.list_datasets()
    assert [r["name"] for r in rows] == list(ds.DATASETS)
    for row in rows:
        data = ds.load(row["name"])
        assert np.all(np.isfinite(data.X)), row["name"]
        assert (row["n"], row["d"], row["classes"]) == (
            data.n_samples,
            data.n_features,
            data.n_classes,
        )
        assert row["kind"] == data.kind
        assert row["generator"] == (row["name"] in ds._GENERATORS)
    sonar = next(r for r in rows if r["name"] == "sonar")
    assert sonar["balance"] == "111 mine / 97 rock"  # positive class first


# --------------------------------------------------------------------------- first rows
def test_first_rows_are_the_published_ones() -> None:
    sonar = ds.load_sonar()  # UCI sonar.all-data, line 1
    np.testing.assert_array_equal(sonar.X[0, :5], [0.0200, 0.0371, 0.0428, 0.0207, 0.0954])
    assert sonar.X[0, -1] == 0.0032 and sonar.y[0] == 0  # ... 0.0032, R
    ion = ds.load_ionosphere()  # UCI ionosphere.data, line 1
    np.testing.assert_array_equal(ion.X[0, :5], [1, 0, 0.99539, -0.05889, 0.85243])
    assert ion.X[0, -1] == -0.45300 and ion.y[0] == 1  # ... -0.45300, g
    np.testing.assert_array_equal(ion.X[:, 1], 0.0)  # the constant column V2
    pima = ds.load_pima()  # MASS Pima.tr row 1, then Pima.te row 1
    np.testing.assert_array_equal(pima.X[0], [5, 86, 68, 28, 30.2, 0.364, 24])
    np.testing.assert_array_equal(pima.X[200], [6, 148, 72, 35, 33.6, 0.627, 50])
    assert (pima.y[0], pima.y[200]) == (0, 1)
    crabs = ds.load_crabs()  # MASS crabs row 1: B M 1 8.1 6.7 16.1 19.0 7.0
    np.testing.assert_array_equal(crabs.X[0], [8.1, 6.7, 16.1, 19.0, 7.0])
    assert crabs.y[0] == 1
    synth = ds.load_ripley_synth()  # MASS synth.tr row 1, synth.te row 1
    np.testing.assert_array_equal(synth.X[0], [0.05100797, 0.16086164])
    np.testing.assert_array_equal(synth.X[250], [-0.970990139, 0.42942495])
    digits = ds.load_digits_3v5()
    assert digits.X.min() == 0 and digits.X.max() == 16
    assert np.ptp(digits.X, axis=0).tolist().count(0.0) == 10


# --------------------------------------------------------------------------- options
def test_iris_feature_selection_and_binary_views() -> None:
    full = ds.load_iris()
    petals = ds.load_iris(features=("Petal.Length", "Petal.Width"))  # the Iris lecture demo
    assert petals.feature_names == ["petal length (cm)", "petal width (cm)"]
    np.testing.assert_array_equal(petals.X, full.X[:, 2:])
    same = ds.load_iris(features=["petal_length", "petal width (cm)"])
    np.testing.assert_array_equal(same.X, petals.X)
    assert full.positive_class is None and full.negative_class is None
    pair = ds.load_iris(classes=("versicolor", "virginica"))
    assert pair.class_counts == {"versicolor": 50, "virginica": 50}
    assert pair.positive_class == "virginica"
    np.testing.assert_array_equal(pair.X, full.X[50:])
    ovr = ds.load_iris(positive="setosa")
    assert ovr.class_counts == {"not setosa": 100, "setosa": 50}
    np.testing.assert_array_equal(ovr.y, (full.y == 0).astype(int))
    for bad, match in [
        ({"features": ["petal area"]}, "unknown feature"),
        ({"features": [2, 2]}, "distinct"),
        ({"classes": ["setosa"]}, "two or three"),
        ({"classes": ["setosa", "rose"]}, "two or three"),
        ({"positive": "rose"}, "positive must be"),
        ({"classes": ["setosa", "virginica"], "positive": "setosa"}, "not both"),
    ]:
        with pytest.raises(ValueError, match=match):
            ds.load_iris(**bad)


def test_drop_constant_removes_exactly_the_constant_columns() -> None:
    ion = ds.load_ionosphere(drop_constant=True)
    assert "V2" not in ion.feature_names
    np.testing.assert_array_equal(ion.X, np.delete(ds.load_ionosphere().X, 1, axis=1))
    digits = ds.load_digits_3v5(drop_constant=True)
    assert np.all(np.ptp(digits.X, axis=0) > 0)
    assert "pixel_0_0" not in digits.feature_names and "pixel_2_7" not in digits.feature_names


def test_load_refuses_unknown_names_and_options() -> None:
    with pytest.raises(ValueError, match="unknown data set 'usps'.*sonar.*near_separable"):
        ds.load("usps")
    with pytest.raises(ValueError, match=r"does not take the option\(s\) \['n'\]"):
        ds.load("sonar", n=10)
    with pytest.raises(ValueError, match="subset must be"):
        ds.load("pima", subset="validation")
    with pytest.raises(ValueError, match="target must be"):
        ds.load("crabs", target="colour")
    assert ds.load("Digits-3v5").name == "digits_3v5"
    assert ds.load("ripley_mixture", n=17, random_seed=3).n_samples == 17


def test_dataset_checks_its_fields() -> None:
    X = np.zeros((3, 2))
    with pytest.raises(ValueError, match="one label per row"):
        ds.Dataset("t", X, np.array([0, 1]), ["a", "b"], "")
    with pytest.raises(ValueError, match="labels must lie in 0..1"):
        ds.Dataset("t", X, np.array([0, 1, 2]), ["a", "b"], "")
    with pytest.raises(ValueError, match="feature names"):
        ds.Dataset("t", X, np.array([0, 1, 1]), ["a"], "")
    with pytest.raises(ValueError, match="only apply to a binary"):
        ds.Dataset("t", X, np.array([0, 1, 2]), ["a", "b"], "", "p", class_names=("u", "v", "w"))
    plain = ds.Dataset("t", X, np.array([0, 1, 1]), ["a", "b"], "")
    assert plain.class_names == ("negative", "positive") and plain.positive_class == "positive"
    with pytest.raises(ValueError, match="no known true class probabilities"):
        plain.true_proba(X)


# --------------------------------------------------------------------------- mixtures
def _direct_posterior(problem: ds.GaussianMixtureProblem, X: np.ndarray) -> np.ndarray:
    """p(y=1|x) by Bayes' rule on densities from scipy.stats, outside log space."""
    dens = [
        sum(c.weight * stats.multivariate_normal(c.mean, c.cov).pdf(X) for c in comps)
        for comps in problem.components
    ]
    a0, a1 = (1 - problem.prior) * dens[0], problem.prior * dens[1]
    return a1 / (a0 + a1)


@pytest.mark.parametrize(
    "problem", [ds.RIPLEY_MIXTURE, ds.BISHOP_MIXTURE], ids=["ripley", "bishop"]
)
def test_bayes_posterior_matches_scipy_and_stays_finite(problem) -> None:
    lo, hi = (-1.5, 1.5) if problem is ds.RIPLEY_MIXTURE else (-3.0, 3.0)
    g = np.linspace(lo, hi, 41)
    X = np.column_stack([np.repeat(g, g.size), np.tile(g, g.size)])
    np.testing.assert_allclose(problem.proba(X), _direct_posterior(problem, X), rtol=1e-12)
    lp = problem.log_proba(X)
    np.testing.assert_allclose(np.logaddexp(lp[:, 0], lp[:, 1]), 0.0, atol=1e-14)
    # far out both densities underflow (scipy gives 0/0); the log-space posterior does not
    far = np.array([[40.0, -40.0], [-60.0, 5.0]])
    with np.errstate(invalid="ignore"):
        assert np.all(np.isnan(_direct_posterior(problem, far)))
    lp_far = problem.log_proba(far)
    assert np.all(np.isfinite(lp_far)) and np.all(lp_far <= 0.0)
    with pytest.raises(ValueError, match="features"):
        problem.proba(np.zeros((2, 3)))


def _bayes_error_on_grid(problem: ds.GaussianMixtureProblem, half: float, h: float) -> float:
    g = np.arange(-half, half + h / 2, h)
    X = np.column_stack([np.repeat(g, g.size), np.tile(g, g.size)])
    a = problem.class_log_density(X) + np.log([1 - problem.prior, problem.prior])
    return float(np.exp(a.min(axis=1)).sum() * h * h)


@pytest.mark.parametrize(
    ("problem", "half"),
    [(ds.RIPLEY_MIXTURE, 2.5), (ds.BISHOP_MIXTURE, 6.0)],
    ids=["ripley", "bishop"],
)
def test_bayes_error_constant_by_quadrature_and_monte_carlo(problem, half) -> None:
    # Grid quadrature of min(pi0 p0, pi1 p1) converges as step^2 (the kink of min along the
    # boundary); Richardson extrapolation of steps 0.02 and 0.01 removes that term.
    coarse, fine = (_bayes_error_on_grid(problem, half, h) for h in (0.02, 0.01))
    assert abs((4 * fine - coarse) / 3 - problem.bayes_error) < 2e-6
    estimate, se = problem.bayes_error_monte_carlo(n=50_000, random_seed=1)
    assert abs(estimate - problem.bayes_error) < 4 * se
    # and by counting the Bayes rule's mistakes on labelled draws (binomial error)
    data = ds.load(problem.name, n=50_000, random_seed=2)
    wrong = np.mean((data.true_proba(data.X) > 0.5) != (data.y == 1))
    assert abs(wrong - problem.bayes_error) < 4 * np.sqrt(problem.bayes_error / 50_000)


def test_ripley_synth_is_ripleys_model() -> None:
    test = ds.load_ripley_synth(subset="test")
    errors = np.sum((test.true_proba(test.X) > 0.5) != (test.y == 1))
    assert errors == 80  # the Bayes rule's 8.0% on synth.te (about 8%, Tipping 2001)
    train = ds.load_ripley_synth(subset="train")
    assert np.sum((train.true_proba(train.X) > 0.5) != (train.y == 1)) == 33
    assert test.bayes_error == ds.RIPLEY_MIXTURE.bayes_error
    # the 625 points of each class have the model's class mean to within 4 standard
    # errors: centres (-0.7, 0.3), (0.3, 0.3) for class 0 and (-0.3, 0.7), (0.4, 0.7) for
    # class 1, so per coordinate var = 0.03 + (half the centres' distance)^2
    data = ds.load_ripley_synth()
    for k, mean, half_gap in [(0, (-0.2, 0.3), (0.5, 0.0)), (1, (0.05, 0.7), (0.35, 0.0))]:
        Xk = data.X[data.y == k]
        se = np.sqrt(0.03 + np.square(half_gap)) / np.sqrt(len(Xk))
        assert np.all(np.abs(Xk.mean(axis=0) - mean) < 4 * se)


def test_mixture_samples_follow_the_model() -> None:
    a = ds.make_ripley_mixture(n=40_000, random_seed=5)
    assert a.kind == "synthetic" and a.bayes_error == ds.RIPLEY_MIXTURE.bayes_error
    np.testing.assert_array_equal(a.X, ds.make_ripley_mixture(n=40_000, random_seed=5).X)
    assert not np.array_equal(a.X[:10], ds.make_ripley_mixture(n=10, random_seed=6).X)
    # class 1 is Bernoulli(1/2); within class 0 the two centres are equally likely
    assert abs(a.y.mean() - 0.5) < 4 * 0.5 / np.sqrt(a.n_samples)
    X0 = a.X[a.y == 0]
    left = np.mean(X0[:, 0] < -0.2)  # the midpoint of the centres -0.7 and 0.3
    assert abs(left - 0.5) < 4 * 0.5 / np.sqrt(len(X0))
    np.testing.assert_allclose(np.cov(X0[X0[:, 0] < -0.2].T), 0.03 * np.eye(2), atol=3e-3)
    b = ds.make_bishop_mixture(n=40_000, random_seed=5)
    X0 = b.X[b.y == 0]  # a single Gaussian N((0, -0.5), diag(1, 0.3))
    assert np.all(
        np.abs(X0.mean(axis=0) - [0.0, -0.5]) < 4 * np.sqrt(np.array([1.0, 0.3]) / len(X0))
    )
    np.testing.assert_allclose(np.var(X0, axis=0), [1.0, 0.3], rtol=0.05)


def test_make_mixture_is_what_the_named_generators_draw() -> None:
    for problem, named in ((ds.RIPLEY_MIXTURE, ds.make_ripley_mixture),
                           (ds.BISHOP_MIXTURE, ds.make_bishop_mixture)):  # fmt: skip
        a, b = ds.make_mixture(problem, 60, random_seed=3), named(n=60, random_seed=3)
        np.testing.assert_array_equal(a.X, b.X)
        np.testing.assert_array_equal(a.y, b.y)
        assert a.name == b.name == problem.name and a.description == b.description
        assert a.info == {"problem": problem, "random_seed": 3}
    with pytest.raises(ValueError, match="n"):
        ds.make_mixture(ds.RIPLEY_MIXTURE, 0)


@pytest.mark.parametrize("name", ["ripley_mixture", "ringnorm"])
def test_a_million_draws_are_fast_balanced_and_bayes_consistent(name) -> None:
    n = 10**6
    start = time.perf_counter()
    data = ds.load(name, n=n, random_seed=0)
    lp = data.true_log_proba(data.X)
    # about 0.2 s (mixture) and 0.5 s (ringnorm): vectorised; a loop over rows takes far longer
    assert time.perf_counter() - start < 5.0
    assert data.X.shape == (n, 20 if name == "ringnorm" else 2) and lp.shape == (n, 2)
    assert np.all(np.isfinite(lp))
    assert abs(data.y.mean() - 0.5) < 5 * 0.5 / np.sqrt(n)  # a fair coin
    e = data.bayes_error
    wrong = np.mean((lp[:, 1] > lp[:, 0]) != (data.y == 1))  # the Bayes rule's mistakes
    assert abs(wrong - e) < 5 * np.sqrt(e * (1 - e) / n)


# --------------------------------------------------------------------------- logistic 1-D
def test_logistic_1d_is_bishops_bayesian_logistic_example() -> None:
    data = ds.make_logistic_1d()
    assert data.X.shape == (500, 1) and data.info == {"w": 1.0, "x_scale": 10.0, "random_seed": 0}
    np.testing.assert_array_equal(data.y, ds.make_logistic_1d().y)
    lp = data.true_log_proba(np.array([[-800.0], [0.0], [3.0]]))
    np.testing.assert_allclose(lp[:, 1], [-800.0, np.log(0.5), -np.log1p(np.exp(-3.0))])
    np.testing.assert_allclose(np.exp(lp).sum(axis=1), 1.0)
    # label frequencies against sigma(w x) in bins of x (many draws, w = 0.7)
    big = ds.make_logistic_1d(n=200_000, w=0.7, random_seed=1)
    x, y = big.X[:, 0], big.y
    assert abs(x.std() - 10.0) < 0.1
    edges = np.array([-8.0, -4.0, -2.0, -1.0, 0.0, 1.0, 2.0, 4.0, 8.0])
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        inside = (x >= lo) & (x < hi)
        p = special.expit(0.7 * x[inside])
        se = np.sqrt(np.sum(p * (1 - p))) / inside.sum()
        assert abs(y[inside].mean() - p.mean()) < 4 * se, (lo, hi)
    with pytest.raises(ValueError, match="x_scale"):
        ds.make_logistic_1d(x_scale=0.0)


# --------------------------------------------------------------------------- near-separable
def test_near_separable_has_its_margin_and_flips() -> None:
    data = ds.make_near_separable(n=101, d=3, margin=0.4, flip=0, random_seed=2)
    w = data.info["w"]
    assert abs(np.linalg.norm(w) - 1.0) < 1e-12 and data.class_counts == {
        "negative": 50,
        "positive": 51,
    }
    signed = (2 * data.y - 1) * (data.X @ w)
    assert signed.min() >= 0.2 - 1e-12  # every point margin / 2 from the hyperplane
    flipped = ds.make_near_separable(n=101, d=3, margin=0.4, flip=4, random_seed=2)
    np.testing.assert_array_equal(flipped.X, data.X)
    wrong = np.flatnonzero(flipped.y != data.y)
    np.testing.assert_array_equal(wrong, flipped.info["flipped"])
    assert wrong.size == 4
    for bad, match in [
        ({"flip": 200}, "at most"),
        ({"margin": -1.0}, "margin"),
        ({"n": 1}, "n must be"),
    ]:
        with pytest.raises(ValueError, match=match):
            ds.make_near_separable(**bad)


def test_near_separable_makes_the_logistic_mle_diverge() -> None:
    def weight_norm(data, C):
        fit = LogisticRegression(C=C, tol=1e-10, max_iter=100_000).fit(data.X, data.y)
        return float(np.linalg.norm(fit.coef_))

    sep = ds.make_near_separable(flip=0)
    # separable: weakening the penalty 100-fold keeps growing |w| (no finite MLE)
    assert weight_norm(sep, 1e5) > 1.5 * weight_norm(sep, 1e3)
    noisy = ds.make_near_separable(flip=3)
    # three flipped labels: the MLE exists and the penalty hardly matters any more
    assert weight_norm(noisy, 1e5) == pytest.approx(weight_norm(noisy, 1e3), rel=0.01)


# --------------------------------------------------------------------------- standardize
def test_standardize_uses_only_training_statistics_and_keeps_constant_columns() -> None:
    rng = np.random.default_rng(3)
    X_train = np.column_stack([rng.normal(5.0, 3.0, 40), np.full(40, 2.0)])
    X_test = rng.normal(0.0, 50.0, size=(7, 2))
    A, B = ds.standardize(X_train, X_test)
    A2, _ = ds.standardize(X_train, X_test * 1e3)  # the test fold cannot move the scaling
    np.testing.assert_array_equal(A, A2)
    mu, sd = X_train[:, 0].mean(), X_train[:, 0].std()
    np.testing.assert_allclose(B[:, 0], (X_test[:, 0] - mu) / sd, rtol=1e-12)
    np.testing.assert_array_equal(A[:, 1], 0.0)  # constant column: centred, not scaled
    np.testing.assert_allclose(B[:, 1], X_test[:, 1] - 2.0, rtol=1e-12)
    with pytest.raises(ValueError, match="X_test contains NaN"):
        ds.standardize(X_train, np.full((2, 2), np.nan))
