"""Softmax studies: the multi-class scores against scikit-learn and direct computations, a
three-class study end to end (jobs, table, report), its comparison with a reference engine,
and what a softmax study file may not ask."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sklearn.metrics

import gpc_compare as gc
from gpc_compare import metrics, study
from gpc_compare.report import study_summary, write_report
from gpc_compare.study.problem import load_dataset, split_indices, stable_seed


def _predictions(n: int = 300, C: int = 4, seed: int = 0):
    """Labels and class probabilities that are informative but imperfect."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, n)
    logits = rng.normal(size=(n, C)) + 1.5 * np.eye(C)[y]
    P = np.exp(logits - logits.max(axis=1, keepdims=True))
    return y, P / P.sum(axis=1, keepdims=True)


def _top_label_ece_direct(y: np.ndarray, P: np.ndarray, n_bins: int = 10) -> float:
    """Guo et al. (2017): sum over right-closed equal-width bins of |accuracy - confidence|
    weighted by the bin's share of the cases; the first bin is closed on both sides."""
    conf = P.max(axis=1)
    right = (P.argmax(axis=1) == y).astype(float)
    total = 0.0
    for b in range(n_bins):
        lo, hi = b / n_bins, (b + 1) / n_bins
        inside = (conf > lo) & (conf <= hi) if b else (conf >= lo) & (conf <= hi)
        if inside.any():
            total += inside.mean() * abs(right[inside].mean() - conf[inside].mean())
    return total


# --------------------------------------------------------------------------- the scores
def test_multiclass_scores_equal_sklearn_and_direct_computations() -> None:
    y, P = _predictions()
    log_p = np.log(P[np.arange(y.size), y])
    rates = np.bincount(y, minlength=4) / y.size
    s = metrics.score_multiclass(y, P, log_p, rates)
    assert list(s) == [
        "mean_log_predictive",
        "information_bits",
        "error_rate",
        "brier_multiclass",
        "auc_ovr_macro",
        "ece_top_label",
    ]
    labels = np.arange(4)
    assert s["mean_log_predictive"] == pytest.approx(
        -sklearn.metrics.log_loss(y, P, labels=labels), rel=1e-12
    )
    assert s["error_rate"] == pytest.approx(
        1.0 - sklearn.metrics.accuracy_score(y, P.argmax(axis=1)), abs=1e-15
    )
    brier = np.mean([sum((P[i, c] - (y[i] == c)) ** 2 for c in range(4)) for i in range(y.size)])
    assert s["brier_multiclass"] == pytest.approx(brier, rel=1e-12)
    assert s["brier_multiclass"] == pytest.approx(
        sklearn.metrics.brier_score_loss(y, P, labels=labels), rel=1e-12
    )
    assert s["auc_ovr_macro"] == pytest.approx(
        sklearn.metrics.roc_auc_score(y, P, multi_class="ovr", average="macro"), rel=1e-12
    )
    entropy = -np.sum(rates * np.log2(rates))
    assert s["information_bits"] == pytest.approx(entropy + np.mean(np.log2(P[np.arange(300), y])))
    assert s["ece_top_label"] == pytest.approx(_top_label_ece_direct(y, P), rel=1e-12)
    # these predictions are informative, not perfect (the checks above are not vacuous)
    assert 0.2 < s["error_rate"] < 0.6 and 0.6 < s["auc_ovr_macro"] < 0.95


def test_top_label_ece_and_reliability_by_hand() -> None:
    # top labels: confidences 0.9, 0.9 (one right), 0.6, 0.6 (both right)
    P = np.array([[0.9, 0.05, 0.05], [0.9, 0.05, 0.05], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]])
    y = np.array([0, 1, 1, 2])
    # bin (0.8, 0.9]: |0.5 - 0.9| * 2/4 = 0.2; bin (0.5, 0.6]: |1 - 0.6| * 2/4 = 0.2
    assert metrics.top_label_ece(y, P) == pytest.approx(0.4, abs=1e-12)
    curve = metrics.top_label_reliability_curve(y, P)
    np.testing.assert_allclose(curve["mean_predicted"], [0.6, 0.9])
    np.testing.assert_allclose(curve["observed_frequency"], [1.0, 0.5])
    assert list(curve["count"]) == [2, 2]
    assert metrics.multiclass_error_rate(y, P) == 0.25
    assert metrics.multiclass_brier(y, P) == pytest.approx(
        (0.01 + 2 * 0.0025 + 0.81 + 0.95**2 + 0.0025 + 2 * (0.04 + 0.16 + 0.04)) / 4
    )


def test_auc_is_nan_without_every_class_and_inputs_are_checked() -> None:
    y, P = _predictions(n=40, C=3)
    assert np.isnan(metrics.multiclass_auc(np.where(y == 2, 0, y), P))
    with pytest.raises(ValueError, match="sum to one"):
        metrics.multiclass_brier(y, P * 0.9)
    with pytest.raises(ValueError, match="class indices"):
        metrics.multiclass_brier(y + 1, P)
    d = metrics.probability_differences(P, ref_proba=P[:, [1, 0, 2]])
    assert d["proba_diff_max"] == pytest.approx(np.abs(P[:, 0] - P[:, 1]).max())
    assert d["proba_diff_mean"] == pytest.approx(2 * np.abs(P[:, 0] - P[:, 1]).mean() / 3)
    swapped = np.mean(P.argmax(1) != P[:, [1, 0, 2]].argmax(1))
    assert d["top_label_disagreement"] == pytest.approx(swapped) and swapped > 0.3


def test_multiclass_bootstrap_rescores_like_score_multiclass() -> None:
    """The identity resample gives score_multiclass's values; resampling keeps each class's
    count; the intervals stay in each score's range."""
    splits = {}
    for split in range(3):
        y, P = _predictions(n=90, C=3, seed=split)
        rates = np.array([0.2, 0.3, 0.5])
        splits[split] = {"y": y, "proba": P, "log_p": np.log(P[np.arange(y.size), y]),
                         "entropy_bits": metrics.class_entropy_bits(rates)}  # fmt: skip
    scores = [
        metrics.score_multiclass(c["y"], c["proba"], c["log_p"], [0.2, 0.3, 0.5])
        for c in splits.values()
    ]
    identity = {s: np.arange(90)[None, :] for s in splits}
    reps = metrics.bootstrap_scores(splits, identity)
    assert set(reps) == set(metrics.BOOTSTRAP_METRICS_MULTICLASS)
    for m in metrics.BOOTSTRAP_METRICS_MULTICLASS:
        assert reps[m][0] == pytest.approx(np.mean([s[m] for s in scores]), rel=1e-12), m
    indices = metrics.bootstrap_indices({s: c["y"] for s, c in splits.items()}, n_boot=400)
    for s, idx in indices.items():
        counts = np.bincount(splits[s]["y"], minlength=3)
        assert all((np.bincount(row, minlength=3) == counts).all()
                   for row in splits[s]["y"][idx])  # fmt: skip
    reps = metrics.bootstrap_scores(splits, indices)
    for m in ("error_rate", "brier_multiclass", "ece_top_label", "auc_ovr_macro"):
        est = float(np.mean([s[m] for s in scores]))
        low, high = metrics.percentile_interval(reps[m], est)
        lo_range, hi_range = metrics.METRIC_RANGES[m]
        assert lo_range <= low < est < high <= hi_range, m
    # a replicate's AUC is sklearn's on the resampled cases
    y, P = splits[0]["y"][indices[0][7]], splits[0]["proba"][indices[0][7]]
    one = metrics.bootstrap_scores({0: splits[0]}, {0: indices[0][7:8]})
    assert one["auc_ovr_macro"][0] == pytest.approx(
        sklearn.metrics.roc_auc_score(y, P, multi_class="ovr", average="macro"), rel=1e-12
    )


# --------------------------------------------------------------------------- a study
SOFTMAX_STUDY = """
name = "petals"
seed = 1
likelihood = "softmax"
reference = "laplace"
[[datasets]]
name = "iris"
features = ["Petal.Length", "Petal.Width"]
subsample = 60
[kernel]
lengthscale = 1.0
variance_bounds = "fixed"
[hyperparameters]
n_restarts = 0
[splits]
n_splits = 3
n_repeats = 1
[engines.laplace]
[engines.rough]        # the same engine stopped after two Newton steps, at Laplace's values
method = "laplace"
max_iter = 2
hyperparameters = "source"
"""


@pytest.fixture(scope="module")
def softmax_study(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("softmax")
    path = tmp / "petals.toml"
    path.write_text(SOFTMAX_STUDY)
    summary = study.run_study(path, tmp / "out", workers=1)
    assert summary.failed == 0 and summary.done == 6
    return tmp / "out" / "petals"


def test_softmax_study_scores_are_sklearns_on_its_predictions(softmax_study: Path) -> None:
    config = study.load_study(softmax_study / "study.toml")
    table = pd.read_csv(softmax_study / "results.csv")
    records = study.load_records(softmax_study)
    assert set(table.likelihood) == {"softmax"}
    data = load_dataset(config.datasets[0], config.seed)
    assert data.n_classes == 3 and data.n_samples == 60
    for rec in (r for r in records.values() if r.engine == "laplace"):
        a = rec.arrays
        y, P = np.array(a.y_test), np.array(a.proba_test)
        assert P.shape == (y.size, 3) and y.size == 20
        # the predictions are those of the softmax Laplace fit on this training fold
        train, test = split_indices(
            data, config.splits, rec.split, stable_seed("split", config.seed, "iris")
        )
        Xtr, Xte = gc.datasets.standardize(data.X[train], data.X[test])
        ell = np.exp(rec.hyperparameters.values[0])
        kernel = gc.kernels.SquaredExponential(ell, 1.0, variance_bounds="fixed")
        post = gc.fit(Xtr, data.y[train], method="laplace", likelihood="softmax", kernel=kernel)
        np.testing.assert_array_equal(y, data.y[test])
        np.testing.assert_allclose(P, post.predict_proba(Xte), rtol=1e-8, atol=1e-12)
        # ... and its table rows are scikit-learn's scores of them
        row = table[(table.engine == "laplace") & (table.split == rec.split)]
        value = row.set_index("metric")["value"]
        assert value["mean_log_predictive"] == pytest.approx(
            -sklearn.metrics.log_loss(y, P, labels=[0, 1, 2]), rel=1e-9
        )
        assert value["error_rate"] == pytest.approx(
            1 - sklearn.metrics.accuracy_score(y, P.argmax(1)), abs=1e-12
        )
        assert value["brier_multiclass"] == pytest.approx(
            np.mean(np.sum((P - np.eye(3)[y]) ** 2, axis=1)), rel=1e-9
        )
        assert value["auc_ovr_macro"] == pytest.approx(
            sklearn.metrics.roc_auc_score(y, P, multi_class="ovr", average="macro"), rel=1e-9
        )
        assert value["ece_top_label"] == pytest.approx(_top_label_ece_direct(y, P), rel=1e-9)
        assert value["log_evidence"] == pytest.approx(post.log_marginal_likelihood, rel=1e-9)
        # real predictions: petals separate the species well
        assert value["error_rate"] <= 0.15 and value["auc_ovr_macro"] > 0.95


def test_softmax_study_compares_with_the_reference(softmax_study: Path) -> None:
    table = pd.read_csv(softmax_study / "results.csv")
    records = study.load_records(softmax_study)
    rows = table[table.engine == "rough"].set_index(["split", "metric"])["value"]
    for split in range(3):
        rough = next(r for r in records.values() if (r.engine, r.split) == ("rough", split))
        ref = next(r for r in records.values() if (r.engine, r.split) == ("laplace", split))
        assert rough.hyperparameters.values == ref.hyperparameters.values
        P, R = np.array(rough.arrays.proba_test), np.array(ref.arrays.proba_test)
        m, mr = np.array(rough.arrays.mean_train), np.array(ref.arrays.mean_train)
        assert m.shape == (40, 3)  # every class's latent values at the training inputs
        assert rows[(split, "proba_diff_max")] == pytest.approx(np.abs(P - R).max(), rel=1e-12)
        assert rows[(split, "proba_diff_mean")] == pytest.approx(np.abs(P - R).mean(), rel=1e-12)
        rmse = np.sqrt(np.mean((m - mr) ** 2))
        assert rows[(split, "latent_mean_rmse")] == pytest.approx(rmse, rel=1e-12)
        assert rows[(split, "proba_diff_max")] > 1e-3  # two Newton steps are not the mode
    assert "proba_diff_max" not in set(table[table.engine == "laplace"].metric)


def test_softmax_study_report(softmax_study: Path) -> None:
    report = write_report(softmax_study).read_text()
    assert "softmax likelihood" in report
    for label in ("multi-class Brier score", "top-label calibration error", "one-vs-rest AUC"):
        assert label in report
    assert "class probability, max abs diff" in report
    assert (softmax_study / "figures" / "reliability.png").stat().st_size > 10_000
    # held-out scores: the bootstrap over test cases, paired between engines, as for two
    # classes; the brackets never leave a score's range
    assert "bootstrap interval over the test cases" in report
    summary = study_summary(softmax_study)
    scores = summary[summary.metric.isin(metrics.BOOTSTRAP_METRICS_MULTICLASS)]
    assert set(scores.interval) == {"bootstrap over test cases"} and len(scores) == 12
    for metric in ("error_rate", "brier_multiclass", "ece_top_label", "auc_ovr_macro"):
        low, high = metrics.METRIC_RANGES[metric]
        rows = scores[scores.metric == metric]
        assert ((low <= rows["low"]) & (rows["low"] <= rows["mean"])).all(), metric
        assert ((rows["mean"] <= rows["high"]) & (rows["high"] <= high)).all(), metric
    # Laplace (converged) beats two Newton steps beyond its interval: called a win
    assert "best mean log predictive: laplace" in report.lower()
    rec = next(iter(study.load_records(softmax_study).values()))
    assert study.JobRecord.from_json(rec.to_json()) == rec  # records stay JSON


KL_STUDY = """
name = "petals_kl"
seed = 2
likelihood = "softmax"
reference = "laplace"
[[datasets]]
name = "iris"
features = ["Petal.Length", "Petal.Width"]
subsample = 45
[kernel]
lengthscale = 1.0
variance_bounds = "fixed"
[hyperparameters]
policy = "shared"
source = "laplace"
n_restarts = 0
[splits]
n_splits = 3
n_repeats = 1
[engines.laplace]
[engines.kl]
"""


def test_softmax_study_runs_the_kl_engine(tmp_path: Path) -> None:
    """The multi-class KL engine in a softmax study at Laplace's hyperparameters: its
    bound (with the Monte Carlo standard error) in the table, its predictions those of
    gc.fit (the draws fixed by mc_seed, whatever the job's seed), compared with the
    reference's."""
    path = tmp_path / "kl.toml"
    path.write_text(KL_STUDY)
    summary = study.run_study(path, tmp_path / "out", workers=1)
    assert summary.failed == 0 and summary.done == 6
    out = tmp_path / "out" / "petals_kl"
    table = pd.read_csv(out / "results.csv")
    config = study.load_study(out / "study.toml")
    data = load_dataset(config.datasets[0], config.seed)
    for rec in (r for r in study.load_records(out).values() if r.engine == "kl"):
        ref = next(r for r in study.load_records(out).values()
                   if (r.engine, r.split) == ("laplace", rec.split))  # fmt: skip
        assert rec.hyperparameters.values == ref.hyperparameters.values
        assert 0 < rec.log_evidence_se < 0.05 and rec.log_evidence < 0
        train, test = split_indices(
            data, config.splits, rec.split, stable_seed("split", config.seed, "iris")
        )
        Xtr, Xte = gc.datasets.standardize(data.X[train], data.X[test])
        kernel = gc.kernels.SquaredExponential(np.exp(rec.hyperparameters.values[0]), 1.0)
        post = gc.fit(Xtr, data.y[train], "kl", kernel, "softmax")
        assert rec.log_evidence == pytest.approx(post.log_marginal_likelihood, rel=1e-9)
        np.testing.assert_allclose(rec.arrays.proba_test, post.predict_proba(Xte), rtol=1e-8)
        rows = table[(table.engine == "kl") & (table.split == rec.split)]
        value = rows.set_index("metric")["value"]
        P, R = np.array(rec.arrays.proba_test), np.array(ref.arrays.proba_test)
        assert value["proba_diff_max"] == pytest.approx(np.abs(P - R).max(), rel=1e-12)
        assert value["error_rate"] <= 0.2


# --------------------------------------------------------------------------- study files
@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("seed = 1", "seed = 1\nmean = 0.0"), r"mean: the softmax likelihood takes no prior mean"),
        (("n_restarts = 0", 'n_restarts = 0\npolicy = "full_bayes"'), r"policy: 'full_bayes'"),
        (("[engines.laplace]", "[evidence.ais]\n[engines.laplace]"), r"evidence: the gold"),
        (
            ("[engines.laplace]", "[engines.laplace]\n[engines.ep]"),
            r"engines\.ep: the EP engine \(method='ep'\) does not take",
        ),
        (('likelihood = "softmax"', 'likelihood = "probit"'), r"3 classes; likelihood = 'probit'"),
    ],
)
def test_softmax_study_files_refuse_what_cannot_run(tmp_path: Path, edit, message) -> None:
    text = SOFTMAX_STUDY.replace('reference = "laplace"', "")
    path = tmp_path / "s.toml"
    path.write_text(text.replace(*edit))
    with pytest.raises(study.StudyError, match=message):
        study.load_study(path)


SPARSE_STUDY = """
name = "sparse"
seed = 1
likelihood = "softmax"
reference = "laplace"
[[datasets]]
name = "iris"
features = ["Petal.Length", "Petal.Width"]
subsample = 60
[kernel]
lengthscale = 1.0
variance_bounds = "fixed"
[hyperparameters]
n_restarts = 0
[splits]
n_splits = 2
n_repeats = 1
[engines.laplace]
[engines.svgp]
inducing = 10
hyperparameters = "source"
"""


def test_sparse_engine_in_a_softmax_and_a_robust_max_study(tmp_path: Path) -> None:
    """The multi-class SVGP runs in softmax studies beside Laplace (at Laplace's values,
    compared with it) and in robust-max studies (the engine that takes that likelihood),
    its rows scored like any multi-class engine's."""
    path = tmp_path / "sparse.toml"
    path.write_text(SPARSE_STUDY)
    assert study.run_study(path, tmp_path / "out", workers=1).failed == 0
    table = pd.read_csv(tmp_path / "out" / "sparse" / "results.csv")
    rows = table[table.engine == "svgp"].set_index(["split", "metric"])["value"]
    for split in range(2):
        assert rows[(split, "error_rate")] <= 0.2 and rows[(split, "proba_diff_max")] < 0.5
    robust = SPARSE_STUDY.replace('"softmax"', '"robustmax"').replace('"sparse"', '"robust"')
    robust = robust.replace('reference = "laplace"\n', "").replace("[engines.laplace]\n", "")
    robust = robust.replace('hyperparameters = "source"\n', "")
    path.write_text(robust.replace("n_restarts = 0", 'policy = "fixed"'))  # (the kernel's)
    assert study.run_study(path, tmp_path / "out", workers=1).failed == 0
    table = pd.read_csv(tmp_path / "out" / "robust" / "results.csv")
    assert set(table.likelihood) == {"robustmax"} and set(table.engine) == {"svgp"}
    assert (table[table.metric == "error_rate"].value <= 0.2).all()
