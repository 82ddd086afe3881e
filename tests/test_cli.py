"""The ``gpc-compare`` command line, its demo, and the metrics and data set it uses."""

from __future__ import annotations

import contextlib
import io
import math
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from gpc_compare import metrics
from gpc_compare.cli import PLOT_NAME, SCORES_NAME, main
from gpc_compare.datasets import load_breast_cancer, standardize

# --------------------------------------------------------------------------- metrics
# A tiny hand-computed case: y = (1, 0, 1, 0), P(y = 1) = (0.9, 0.2, 0.4, 0.5), so the
# probabilities of the observed labels are (0.9, 0.8, 0.4, 0.5).
Y = np.array([1, 0, 1, 0])
P1 = np.array([0.9, 0.2, 0.4, 0.5])
LOG_P = np.log([0.9, 0.8, 0.4, 0.5])


@pytest.mark.parametrize("labels", [Y, 2 * Y - 1], ids=["01", "pm1"])
def test_metrics_match_hand_computed_values(labels: np.ndarray) -> None:
    mean_lp = math.log(0.9 * 0.8 * 0.4 * 0.5) / 4  # = log(0.144) / 4
    assert metrics.log_predictive(LOG_P) == pytest.approx(-0.4844855, abs=1e-7)
    assert metrics.log_predictive(LOG_P) == pytest.approx(mean_lp, rel=1e-14)
    # balanced base rate: H = 1 bit, I = 1 + log2(0.144) / 4
    assert metrics.information_bits(LOG_P, 0.5) == pytest.approx(0.3010352, abs=1e-7)
    # base rate 1/4: H = 0.25 * 2 + 0.75 * log2(4/3) = 0.8112781 bits
    assert metrics.base_rate_entropy_bits(0.25) == pytest.approx(0.8112781, abs=1e-7)
    assert metrics.information_bits(LOG_P, 0.25) == pytest.approx(
        0.8112781 + mean_lp / math.log(2), abs=1e-7
    )
    # only case 3 (y = 1, p = 0.4) is on the wrong side of 0.5; p = 0.5 predicts 0
    assert metrics.error_rate(labels, P1) == 0.25
    # (0.1^2 + 0.2^2 + 0.6^2 + 0.5^2) / 4
    assert metrics.brier(labels, P1) == pytest.approx(0.165, rel=1e-12)
    # positive/negative pairs ranked correctly: (0.9, 0.2), (0.9, 0.5), (0.4, 0.2) of 4
    assert metrics.auc(labels, P1) == 0.75
    scores = metrics.score(labels, P1, LOG_P, 0.5)
    assert list(scores) == [
        "mean_log_predictive",
        "information_bits",
        "error_rate",
        "brier",
        "auc",
        "ece",
    ]
    assert scores["mean_log_predictive"] == pytest.approx(mean_lp, rel=1e-14)
    assert scores["auc"] == 0.75


def test_base_rate_entropy_edges() -> None:
    assert metrics.base_rate_entropy_bits(0.5) == 1.0
    assert metrics.base_rate_entropy_bits(0.0) == 0.0
    assert metrics.base_rate_entropy_bits(1.0) == 0.0
    with pytest.raises(ValueError, match="base_rate"):
        metrics.base_rate_entropy_bits(1.5)


def test_confident_mistake_gives_minus_infinity_not_a_clipped_number() -> None:
    y = np.array([1, 0, 1])
    p1 = np.array([1.0, 1.0, 0.7])  # case 2 is benign but predicted malignant with p = 1
    with np.errstate(divide="ignore"):
        log_p = np.log(np.where(y == 1, p1, 1.0 - p1))  # [0, -inf, log 0.7]
    assert log_p[1] == -np.inf
    assert metrics.log_predictive(log_p) == -np.inf
    assert metrics.information_bits(log_p, 0.5) == -np.inf
    scores = metrics.score(y, p1, log_p, 2 / 3)
    assert scores["mean_log_predictive"] == -np.inf
    assert scores["error_rate"] == pytest.approx(1 / 3)
    assert scores["brier"] == pytest.approx((0 + 1 + 0.09) / 3)


def test_certain_correct_predictions_score_exactly_zero() -> None:
    y = np.array([-1, 1])
    p1 = np.array([0.0, 1.0])
    log_p = np.array([0.0, -0.0])
    assert metrics.log_predictive(log_p) == 0.0
    assert metrics.information_bits(log_p, 0.5) == 1.0
    assert metrics.error_rate(y, p1) == 0.0
    assert metrics.brier(y, p1) == 0.0
    assert metrics.auc(y, p1) == 1.0


@pytest.mark.parametrize(
    ("log_p", "match"), [([-0.1, np.nan], "NaN"), ([-0.1, 0.2], "<= 0"), ([], "non-empty")]
)
def test_log_predictive_refuses_invalid_input(log_p: list[float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        metrics.log_predictive(log_p)


def test_metrics_refuse_bad_probabilities_and_labels() -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        metrics.brier([0, 1], [0.2, 1.2])
    with pytest.raises(ValueError, match="2 labels but p1 has 3"):
        metrics.error_rate([0, 1], [0.2, 0.3, 0.4])
    with pytest.raises(ValueError, match="binary labels"):
        metrics.error_rate([0, 2], [0.2, 0.3])
    with pytest.raises(ValueError, match="both classes"):
        metrics.auc([1, 1], [0.2, 0.3])


# --------------------------------------------------------------------------- data set
def test_breast_cancer_dataset() -> None:
    data = load_breast_cancer()
    assert data.X.shape == (569, 30)
    assert len(data.feature_names) == 30
    assert set(np.unique(data.y)) == {0, 1}
    assert int(data.y.sum()) == 212  # malignant is the positive class
    assert data.positive_class == "malignant"
    assert "n=569" in data.description


def test_standardize_uses_training_statistics_only() -> None:
    rng = np.random.default_rng(0)
    X_train = rng.normal(5.0, 3.0, size=(50, 3))
    X_test = X_train[:4] + 100.0
    A, B = standardize(X_train, X_test)
    np.testing.assert_allclose(A.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(A.std(axis=0), 1.0, rtol=1e-12)
    np.testing.assert_allclose(B, A[:4] + 100.0 / X_train.std(axis=0), rtol=1e-12)
    with pytest.raises(ValueError, match="same number of columns"):
        standardize(X_train, X_test[:, :2])


# --------------------------------------------------------------------------- the CLI
@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, object]:
    """One ``gpc-compare demo`` run (no restarts, to stay fast), shared by the tests below."""
    out = tmp_path_factory.mktemp("demo")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["demo", "--output", out, "--restarts", "0"])
    return code, buffer.getvalue(), out


def test_demo_exits_zero_and_writes_plot_and_scores(demo_run) -> None:
    code, _, out = demo_run
    assert code == 0
    png = out / PLOT_NAME
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 20_000
    table = pd.read_csv(out / SCORES_NAME)
    assert list(table.columns) == ["metric", "value"]
    assert list(table["metric"]) == [
        "mean_log_predictive_nats",
        "information_bits",
        "error_rate",
        "brier",
        "auc",
        "ece",
    ]


def test_demo_scores_are_sane(demo_run) -> None:
    _, _, out = demo_run
    s = pd.read_csv(out / SCORES_NAME).set_index("metric")["value"]
    assert s["error_rate"] < 0.1
    assert -0.3 < s["mean_log_predictive_nats"] < 0.0
    # the training base rate is 159/426, so at most H(0.373) = 0.953 bits are available
    assert 0.5 < s["information_bits"] < metrics.base_rate_entropy_bits(159 / 426)
    assert s["information_bits"] == pytest.approx(
        metrics.base_rate_entropy_bits(159 / 426) + s["mean_log_predictive_nats"] / math.log(2)
    )
    assert 0.0 < s["brier"] < 0.08
    assert 0.95 < s["auc"] <= 1.0


def test_demo_prints_the_report(demo_run) -> None:
    _, text, out = demo_run
    for needle in (
        "426 cases: 159 malignant / 267 benign",
        "143 cases:  53 malignant /  90 benign",
        "lengthscale ell",
        "signal variance sigma_f^2",
        "log marginal likelihood",
        "best run converged",
        "1 (initial start + 0 random restarts)",
        "Held-out scores (143 test cases)",
        "bits",
        str(out / PLOT_NAME),
    ):
        assert needle in text, needle


def test_unknown_likelihood_exits_2_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--likelihood", "cauchit"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "cauchit" in err
    assert "probit" in err and "logistic" in err


def test_library_value_error_exits_2_with_message(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["demo", "--output", tmp_path, "--restarts", "-1"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("gpc-compare: error: ")
    assert "n_restarts must be a whole number >= 0" in err


def test_help_and_missing_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    assert "demo" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2
    assert "required" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("gpc-compare") is None, reason="console script not installed")
def test_console_script_help() -> None:
    done = subprocess.run(
        ["gpc-compare", "demo", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert "--likelihood {probit,logistic}" in done.stdout
