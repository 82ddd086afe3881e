"""The ``gpc-compare`` command line, and the metrics and data set checks it once carried."""

from __future__ import annotations

import math
import shutil
import subprocess

import numpy as np
import pytest

from gpc_compare import metrics
from gpc_compare.cli import main
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
# (The breast-cancer ``demo`` command is gone: the README's main job, the quick study, is a
# real comparison with its report. A bad value exiting 2 with the message and no traceback
# is tested on ``run`` with malformed studies, tests/study/test_study.py.)


def test_list_engines_shows_what_each_can_do(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "engines"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for name, lik, must in (
        ("laplace", "softmax", "multiclass"),
        ("ep", "probit", "loo"),
        ("mcmc", "probit", "hyperparameter_sampling"),
    ):
        at = next(k for k, line in enumerate(lines) if line.strip().startswith(name))
        row = next(line for line in lines[at + 1 :] if line.strip().startswith(f"{lik}:"))
        assert must in row, row
    # every option with its default, from the engine's one declaration
    assert any(
        line.strip() == "options: tol=1e-10, max_iter=100, warm_start=None" for line in lines
    )


def test_help_and_missing_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "run" in out and "report" in out and "list" in out and "demo" not in out
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2
    assert "required" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("gpc-compare") is None, reason="console script not installed")
def test_console_script_help() -> None:
    done = subprocess.run(
        ["gpc-compare", "run", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert "--workers" in done.stdout and "--scheduler" in done.stdout
