"""Calibration, and errors against a reference posterior (gpc_compare.metrics).

The log score, information, error rate, Brier score and AUC are checked by hand in
tests/test_cli.py; this file covers what was added since: the expected calibration error,
the reliability curve with its Jeffreys intervals, the latent-marginal errors, the
Gaussian KL divergence and the evidence gap; the scores against a known truth (the Bayes
rule), the summaries across splits and the Monte Carlo standard errors of MCMC draws.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats
from scipy.special import log_expit
from sklearn.calibration import calibration_curve

import gpc_compare.datasets as ds
from gpc_compare import metrics

# The tiny case of tests/test_cli.py: y = (1, 0, 1, 0), P(y = 1) = (0.9, 0.2, 0.4, 0.5).
Y = np.array([1, 0, 1, 0])
P1 = np.array([0.9, 0.2, 0.4, 0.5])


# ------------------------------------------------------------------ calibration error
@pytest.mark.parametrize("labels", [Y, 2 * Y - 1, Y.astype(bool)], ids=["01", "pm1", "bool"])
def test_ece_by_hand_with_equal_width_bins(labels: np.ndarray) -> None:
    # 10 bins: 0.9 in (0.8, 0.9], 0.2 in (0.1, 0.2], 0.4 in (0.3, 0.4], 0.5 in (0.4, 0.5]
    # (each p sits on its bin's right edge, which is closed), one case per bin:
    # ECE = (|1 - 0.9| + |0 - 0.2| + |1 - 0.4| + |0 - 0.5|) / 4 = 1.4 / 4
    assert metrics.expected_calibration_error(labels, P1) == pytest.approx(0.35, rel=1e-14)
    # 2 bins: [0, 0.5] holds p = 0.2, 0.4, 0.5 (0.5 on the edge goes below) with y = 0, 1, 0:
    # observed 1/3, mean p 1.1/3, weight 3/4; (0.5, 1] holds p = 0.9, y = 1, weight 1/4:
    # ECE = 3/4 * 0.1/3 + 1/4 * 0.1 = 0.025 + 0.025
    assert metrics.expected_calibration_error(labels, P1, n_bins=2) == pytest.approx(0.05)
    # one bin: |mean y - mean p| = |0.5 - 0.5| = 0
    assert metrics.expected_calibration_error(labels, P1, n_bins=1) == pytest.approx(0, abs=1e-15)


def test_ece_by_hand_with_quantile_bins() -> None:
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.6, 0.8])
    y = np.array([0, 0, 1, 1, 0, 1])
    # 2 quantile bins: edges = percentiles 0, 50, 100 of p = (0.1, 0.35, 0.8);
    # [0.1, 0.35] holds 0.1, 0.2, 0.3 (1 positive), (0.35, 0.8] holds 0.4, 0.6, 0.8 (2):
    # ECE = (|1 - 0.6| + |2 - 1.8|) / 6 = 0.1
    ece = metrics.expected_calibration_error(y, p, n_bins=2, strategy="quantile")
    assert ece == pytest.approx(0.1, rel=1e-13)
    curve = metrics.reliability_curve(y, p, n_bins=2, strategy="quantile")
    np.testing.assert_allclose(curve["bin_lower"], [0.1, 0.35], rtol=1e-15)
    np.testing.assert_allclose(curve["bin_upper"], [0.35, 0.8], rtol=1e-15)
    assert curve["count"].tolist() == [3, 3]
    assert curve["positives"].tolist() == [1, 2]


def test_ece_with_probabilities_exactly_zero_and_one() -> None:
    # certain and right: p = 0 sits in the first bin, p = 1 in the last; both calibrated
    assert metrics.expected_calibration_error([0, 1, 1, 0], [0.0, 1.0, 1.0, 0.0]) == 0.0
    # certain and wrong everywhere: bin [0, 0.1] has k = 1, sum p = 0; bin (0.9, 1] has
    # k = 0, sum p = 1: ECE = (1 + 1) / 2
    assert metrics.expected_calibration_error([1, 0], [0.0, 1.0]) == 1.0
    curve = metrics.reliability_curve([1, 0], [0.0, 1.0])
    assert curve["bin_lower"].tolist() == [0.0, 0.9]
    assert curve["bin_upper"].tolist() == [0.1, 1.0]
    assert curve["observed_frequency"].tolist() == [1.0, 0.0]


def test_confident_mistakes_everywhere_score_worst_possible_without_clipping() -> None:
    y = np.array([1, 0])
    p1 = np.array([0.0, 1.0])
    with np.errstate(divide="ignore"):
        log_p = np.log(np.where(y == 1, p1, 1.0 - p1))  # both -inf: not clipped to log(eps)
    s = metrics.score(y, p1, log_p, base_rate=0.5)
    assert s["mean_log_predictive"] == -np.inf
    assert s["information_bits"] == -np.inf
    assert s["error_rate"] == 1.0
    assert s["brier"] == 1.0  # (1^2 + 1^2) / 2
    assert s["auc"] == 0.0
    assert s["ece"] == 1.0


def test_score_appends_ece_after_the_existing_keys() -> None:
    log_p = np.log([0.9, 0.8, 0.4, 0.5])
    s = metrics.score(Y, P1, log_p, 0.5)
    assert list(s) == [
        "mean_log_predictive",
        "information_bits",
        "error_rate",
        "brier",
        "auc",
        "ece",
    ]
    assert s["ece"] == pytest.approx(0.35, rel=1e-14)  # 10 equal-width bins, as by hand above


def _ece_brute_force(y: np.ndarray, p: np.ndarray, edges: np.ndarray) -> float:
    """The definition, bin by bin with explicit membership tests (no searchsorted)."""
    total = 0.0
    for b in range(len(edges) - 1):
        lo, hi = edges[b], edges[b + 1]
        inside = (p > lo) & (p <= hi)
        if b == 0:
            inside |= p == lo
        if inside.any():
            total += inside.sum() / len(p) * abs(y[inside].mean() - p[inside].mean())
    return total


def _awkward_probabilities(rng: np.random.Generator, n: int) -> np.ndarray:
    """Uniform draws mixed with values on the bin edges, ties, and exact 0 and 1."""
    p = rng.uniform(size=n)
    p[: n // 3] = np.round(p[: n // 3], 1)  # on the edges of 10 and 5 equal-width bins
    p[:4] = [0.0, 1.0, 0.5, 0.5]
    return p


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("n_bins", [1, 5, 10])
def test_binning_matches_sklearn_calibration_curve_and_the_definition(
    strategy: str, n_bins: int
) -> None:
    rng = np.random.default_rng(n_bins)
    p = _awkward_probabilities(rng, 200)
    y = (rng.uniform(size=200) < p).astype(int)
    curve = metrics.reliability_curve(y, p, n_bins=n_bins, strategy=strategy)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=n_bins, strategy=strategy)
    # the same bins, the same empty bins dropped, the same numbers to the last bit
    np.testing.assert_allclose(curve["observed_frequency"], prob_true, rtol=1e-15, atol=0)
    np.testing.assert_allclose(curve["mean_predicted"], prob_pred, rtol=1e-15, atol=0)
    assert curve["count"].sum() == 200
    if strategy == "uniform":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
    else:
        edges = np.percentile(p, np.linspace(0.0, 1.0, n_bins + 1) * 100)
    ece = metrics.expected_calibration_error(y, p, n_bins=n_bins, strategy=strategy)
    assert ece == pytest.approx(_ece_brute_force(y, p, edges), rel=1e-12, abs=1e-15)
    # ECE is the count-weighted mean gap of the reliability curve
    weighted = np.sum(curve["count"] * np.abs(curve["observed_frequency"] - prob_pred)) / 200
    assert ece == pytest.approx(weighted, rel=1e-12)


# ------------------------------------------------------------------ reliability curve
def test_reliability_curve_by_hand() -> None:
    curve = metrics.reliability_curve(Y, P1, n_bins=2)
    assert list(curve.columns) == [
        "bin_lower",
        "bin_upper",
        "count",
        "positives",
        "mean_predicted",
        "observed_frequency",
        "observed_lower",
        "observed_upper",
    ]
    assert curve["bin_lower"].tolist() == [0.0, 0.5]
    assert curve["bin_upper"].tolist() == [0.5, 1.0]
    assert curve["count"].tolist() == [3, 1]
    assert curve["positives"].tolist() == [1, 1]
    np.testing.assert_allclose(curve["mean_predicted"], [(0.2 + 0.4 + 0.5) / 3, 0.9], rtol=1e-15)
    np.testing.assert_allclose(curve["observed_frequency"], [1 / 3, 1.0], rtol=1e-15)
    # 10 bins: only the four occupied bins are returned
    assert metrics.reliability_curve(Y, P1)["bin_upper"].tolist() == pytest.approx(
        [0.2, 0.4, 0.5, 0.9]
    )


def test_jeffreys_interval_against_scipy_beta_and_quadrature() -> None:
    # bins with (n, k) = (3, 1) and (1, 1), as in the 2-bin hand case above
    curve = metrics.reliability_curve(Y, P1, n_bins=2, confidence=0.9)
    for (n, k), lo, hi in zip(
        [(3, 1), (1, 1)], curve["observed_lower"], curve["observed_upper"], strict=True
    ):
        a, b = k + 0.5, n - k + 0.5
        assert lo == pytest.approx(stats.beta.ppf(0.05, a, b), rel=1e-10)
        # k = n: the upper end is 1 by the Jeffreys convention (Brown et al. 2001)
        assert hi == (1.0 if k == n else pytest.approx(stats.beta.ppf(0.95, a, b), rel=1e-10))
        # independently of scipy's inverse: the Beta(a, b) mass below lo is 0.05
        mass, _ = integrate.quad(lambda x, a=a, b=b: x ** (a - 1) * (1 - x) ** (b - 1), 0, lo)
        assert mass / math.exp(math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)) == (
            pytest.approx(0.05, abs=1e-9)
        )


def test_jeffreys_interval_of_one_negative_case_in_closed_form() -> None:
    # n = 1, k = 0: lower end 0 by convention; the upper end is the 0.975 quantile of
    # Beta(1/2, 3/2), whose CDF is F(x) = (2/pi) (asin(sqrt x) + sqrt(x (1 - x)))
    # (substitute x = sin^2 t in the integral of x^-1/2 (1 - x)^1/2 / B(1/2, 3/2), B = pi/2)
    row = metrics.reliability_curve([0], [0.3]).iloc[0]
    assert row["observed_lower"] == 0.0
    x = row["observed_upper"]
    assert 2 / math.pi * (math.asin(math.sqrt(x)) + math.sqrt(x * (1 - x))) == pytest.approx(
        0.975, abs=1e-12
    )
    assert row["observed_frequency"] == 0.0 and row["mean_predicted"] == 0.3


def test_calibration_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="strategy"):
        metrics.expected_calibration_error(Y, P1, strategy="equal")
    with pytest.raises(ValueError, match="n_bins"):
        metrics.expected_calibration_error(Y, P1, n_bins=0)
    with pytest.raises(ValueError, match="n_bins"):
        metrics.reliability_curve(Y, P1, n_bins=2.5)
    with pytest.raises(ValueError, match="confidence"):
        metrics.reliability_curve(Y, P1, confidence=1.0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        metrics.expected_calibration_error(Y, [0.1, 0.2, np.nan, 0.4])
    with pytest.raises(ValueError, match="4 labels but p1 has 3"):
        metrics.reliability_curve(Y, P1[:3])


# ------------------------------------------------------------------ KL divergence
def _kl_by_quadrature(mp: float, vp: float, mq: float, vq: float) -> float:
    """The integral of p log(p / q) over mp +- 40 sd of p."""
    sp = math.sqrt(vp)

    def integrand(x: float) -> float:
        lp = stats.norm.logpdf(x, mp, sp)
        return math.exp(lp) * (lp - stats.norm.logpdf(x, mq, math.sqrt(vq)))

    value, _ = integrate.quad(integrand, mp - 40 * sp, mp + 40 * sp, points=[mp], limit=200)
    return value


def test_kl_gaussian_closed_form_and_quadrature() -> None:
    # equal Gaussians: exactly 0
    np.testing.assert_array_equal(
        metrics.kl_gaussian([0.3, -2.0], [0.5, 4.0], [0.3, -2.0], [0.5, 4.0]), 0.0
    )
    # KL(N(0, 1) || N(1, 2)) = 1/2 (log 2 + (1 + 1) / 2 - 1) = log(2) / 2
    assert metrics.kl_gaussian(0.0, 1.0, 1.0, 2.0) == pytest.approx(math.log(2) / 2, rel=1e-15)
    pairs = [(0.0, 1.0, 1.0, 2.0), (1.5, 0.2, -0.5, 3.0), (-2.0, 5.0, -1.0, 0.5)]
    kl = metrics.kl_gaussian(*(np.array(c) for c in zip(*pairs, strict=True)))
    for value, pair in zip(kl, pairs, strict=True):
        assert value == pytest.approx(_kl_by_quadrature(*pair), rel=1e-9)
    # KL is not symmetric: the last pair both ways differ
    assert metrics.kl_gaussian(-1.0, 0.5, -2.0, 5.0) != pytest.approx(kl[2], rel=0.1)


@pytest.mark.parametrize("ratio", [1 + 1e-9, 1 - 3e-7, 1.09, 1.11, 0.905, 0.5, 40.0])
def test_kl_gaussian_accurate_when_variances_nearly_agree(ratio: float) -> None:
    # against 50-digit arithmetic on the same doubles; the plain formula
    # log(vq/vp) + vp/vq - 1 loses every digit at ratio 1 + 1e-9 (the answer is ~2.5e-19)
    vp, vq, dm = 0.7 * ratio, 0.7, 0.0
    with mpmath.workdps(50):
        r = mpmath.mpf(vp) / mpmath.mpf(vq)
        exact = float((r - 1 - mpmath.log(r)) / 2 + mpmath.mpf(dm) ** 2 / (2 * mpmath.mpf(vq)))
    assert metrics.kl_gaussian(0.0, vp, dm, vq) == pytest.approx(exact, rel=1e-13)


def test_kl_gaussian_overflowing_ratio_is_infinite_not_nan() -> None:
    assert metrics.kl_gaussian(0.0, 1e300, 0.0, 1e-300) == np.inf


def test_mean_marginal_kl_is_from_reference_to_approximation() -> None:
    ref_mean, ref_var = np.array([0.0, 1.5]), np.array([1.0, 0.2])
    mean, var = np.array([1.0, -0.5]), np.array([2.0, 3.0])
    value = metrics.mean_marginal_kl(mean, var, ref_mean=ref_mean, ref_var=ref_var)
    expected = np.mean(
        [_kl_by_quadrature(0.0, 1.0, 1.0, 2.0), _kl_by_quadrature(1.5, 0.2, -0.5, 3.0)]
    )
    assert value == pytest.approx(expected, rel=1e-9)
    reverse = np.mean(metrics.kl_gaussian(mean, var, ref_mean, ref_var))
    assert value != pytest.approx(reverse, rel=0.1)
    with pytest.raises(TypeError):  # the reference cannot be passed by position
        metrics.mean_marginal_kl(ref_mean, ref_var, mean, var)


# ------------------------------------------------------------------ latent errors
def test_latent_errors_by_hand() -> None:
    mean, ref_mean = np.array([0.0, 1.0, 2.0]), np.zeros(3)
    var, ref_var = np.array([1.0, 4.0, 9.0]), np.ones(3)
    e = metrics.latent_errors(mean, var, ref_mean=ref_mean, ref_var=ref_var)
    assert list(e) == [
        "latent_mean_rmse",
        "latent_mean_max_abs",
        "latent_var_rmse",
        "latent_var_max_abs",
        "latent_sd_ratio_mean",
        "marginal_kl_mean",
    ]
    assert e["latent_mean_rmse"] == pytest.approx(math.sqrt((0 + 1 + 4) / 3), rel=1e-15)
    assert e["latent_mean_max_abs"] == 2.0
    assert e["latent_var_rmse"] == pytest.approx(math.sqrt((0 + 9 + 64) / 3), rel=1e-15)
    assert e["latent_var_max_abs"] == 8.0
    assert e["latent_sd_ratio_mean"] == pytest.approx((1 + 2 + 3) / 3, rel=1e-15)
    # KL(N(0, 1) || N(m, v)) = 1/2 (log v + (1 + m^2) / v - 1) for (m, v) = (0, 1), (1, 4), (2, 9)
    kl = [0.5 * (math.log(v) + (1 + m**2) / v - 1) for m, v in [(0, 1), (1, 4), (2, 9)]]
    assert e["marginal_kl_mean"] == pytest.approx(sum(kl) / 3, rel=1e-14)
    same = metrics.latent_errors(mean, var, ref_mean=mean, ref_var=var)
    assert same == {k: (1.0 if k == "latent_sd_ratio_mean" else 0.0) for k in e}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"var": [1.0, 0.0]}, "var must hold variances > 0"),
        ({"ref_var": [1.0, -1.0]}, "ref_var must hold variances > 0"),
        ({"mean": [0.0, np.nan]}, "mean contains NaN"),
        ({"ref_mean": [0.0, np.inf]}, "ref_mean contains NaN or infinity"),
        ({"ref_var": [1.0, 1.0, 1.0]}, r"ref_var has shape \(3,\) but mean has shape \(2,\)"),
        ({"mean": []}, "mean is empty"),
        ({"var": ["a", "b"]}, "var must be a numeric array"),
    ],
)
def test_latent_errors_and_kl_refuse_bad_input(kwargs: dict, match: str) -> None:
    args = {"mean": [0.0, 1.0], "var": [1.0, 2.0], "ref_mean": [0.0, 0.5], "ref_var": [1.0, 1.0]}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        metrics.latent_errors(args.pop("mean"), args.pop("var"), **args)


def test_kl_gaussian_names_the_bad_argument() -> None:
    with pytest.raises(ValueError, match="var_q must hold variances > 0"):
        metrics.kl_gaussian(0.0, 1.0, 0.0, 0.0)
    with pytest.raises(ValueError, match=r"mean_q has shape \(2,\) but mean_p has shape \(\)"):
        metrics.kl_gaussian(0.0, 1.0, [0.0, 1.0], 1.0)


# ------------------------------------------------------------------ evidence gap
def test_evidence_gap_by_hand() -> None:
    assert metrics.evidence_gap(-10.5, ref_log_evidence=-10.0, ref_se=0.25) == {
        "evidence_gap": -0.5,
        "evidence_gap_z": -2.0,
    }
    g = metrics.evidence_gap(-9.0, ref_log_evidence=-10.0)
    assert g["evidence_gap"] == 1.0
    assert math.isnan(g["evidence_gap_z"])  # no standard error given: not available


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((np.nan, -1.0, None), "log_evidence must be a finite number"),
        ((-1.0, -np.inf, None), "ref_log_evidence must be a finite number"),
        ((-1.0, -1.0, 0.0), "ref_se must be a standard error > 0"),
        ((-1.0, -1.0, -0.1), "ref_se must be a standard error > 0"),
        ((-1.0, -1.0, "x"), "ref_se must be a finite number"),
    ],
)
def test_evidence_gap_refuses_bad_input(args: tuple, match: str) -> None:
    approx, ref, se = args
    with pytest.raises(ValueError, match=match):
        metrics.evidence_gap(approx, ref_log_evidence=ref, ref_se=se)


# ------------------------------------------------------------------ against the Bayes rule
def _rule(f: np.ndarray) -> np.ndarray:
    """(m, 2) log class probabilities of a logistic model with log-odds f."""
    return np.column_stack([log_expit(-f), log_expit(f)])


def _cell_centres(box: tuple[float, float, float, float], size: int) -> np.ndarray:
    """The size x size cell centres of a box, (size**2, 2): every point the same area."""
    x0, x1, y0, y1 = box
    gx = np.linspace(x0, x1, 2 * size + 1)[1::2]
    gy = np.linspace(y0, y1, 2 * size + 1)[1::2]
    return np.array([(a, b) for b in gy for a in gx])


def test_disagreement_area_of_two_half_planes() -> None:
    # x1 > 0 against x2 > 0 on [-1, 1]^2: they disagree on two of the four quadrants
    pts = _cell_centres((-1.0, 1.0, -1.0, 1.0), size=100)
    a, b = _rule(5.0 * pts[:, 0]), _rule(5.0 * pts[:, 1])
    assert metrics.disagreement_fraction(a, b) == pytest.approx(0.5, abs=1e-12)
    # x1 > 0 against x1 > 0.5: the strip 0 < x1 < 0.5 is a quarter of the box (its edges
    # fall on cell edges, so the midpoint rule is exact)
    c = _rule(5.0 * (pts[:, 0] - 0.5))
    assert metrics.disagreement_fraction(a, c) == pytest.approx(0.25, abs=1e-12)
    assert metrics.disagreement_fraction(a, a) == 0.0
    with pytest.raises(ValueError, match="cover 10000 and 3 points"):
        metrics.disagreement_fraction(a, a[:3])


def test_disagreement_area_of_a_disc() -> None:
    # inside the disc of radius 0.5 against nowhere: pi 0.25 / 4 of [-1, 1]^2, to the
    # midpoint rule's accuracy on a 400 x 400 grid (boundary cells: about 1e-3)
    pts = _cell_centres((-1.0, 1.0, -1.0, 1.0), size=400)
    inside = _rule(50.0 * (0.25 - np.sum(pts**2, axis=1)))
    nowhere = _rule(-np.ones(pts.shape[0]))
    assert metrics.disagreement_fraction(inside, nowhere) == pytest.approx(np.pi / 16, abs=1e-3)


def test_decide_tie_and_shape() -> None:
    assert metrics.decide(np.log([[0.5, 0.5], [0.4, 0.6], [0.6, 0.4]])).tolist() == [0, 1, 0]
    with pytest.raises(ValueError, match="shape"):
        metrics.decide(np.zeros(3))


def test_expected_error_rate_by_hand() -> None:
    # p(y = 1 | x) = 0.8, 0.4, 0.5; deciding 1, 1, 0 is wrong with probability 0.2, 0.6, 0.5
    lt = np.log([[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]])
    assert metrics.expected_error_rate(lt, [1, 1, 0]) == pytest.approx(1.3 / 3, rel=1e-14)
    # the Bayes decision (1, 0, 0 with the tie to class 0) errs with min_k p: 0.2, 0.4, 0.5
    assert metrics.expected_error_rate(lt, metrics.decide(lt)) == pytest.approx(1.1 / 3)
    with pytest.raises(ValueError, match="3 decisions in"):
        metrics.expected_error_rate(lt, [1, 0])
    with pytest.raises(ValueError, match="3 decisions in"):
        metrics.expected_error_rate(lt, [1, 2, 0])


def test_expected_error_is_the_documented_bayes_error() -> None:
    # the Bayes rule's mean conditional error over 200,000 draws from each model, against
    # the Bayes errors documented in gc.datasets (grid quadrature); 4 standard errors
    for name, documented in (("bishop_mixture", 0.0992874), ("ripley_mixture", 0.0893265)):
        data = ds.load(name, n=200_000, random_seed=7)
        assert data.bayes_error == documented
        lp = data.true_log_proba(data.X)
        est = metrics.expected_error_rate(lp, metrics.decide(lp))
        e = np.exp(np.min(lp, axis=1))
        se = e.std(ddof=1) / np.sqrt(e.size)
        assert abs(est - documented) < 4 * se, (name, est, documented, se)
        # the excess error of any other rule is positive: here always deciding class 1
        assert metrics.expected_error_rate(lp, np.ones(e.size, dtype=int)) > est + 0.1


def test_bayes_rule_makes_80_errors_on_synth_te() -> None:
    # documented in load_ripley_synth: the Bayes rule errs on 80 of synth.te's 1000 cases
    te = ds.load("ripley_synth", subset="test")
    wrong = metrics.decide(te.true_log_proba(te.X)) != te.y
    assert int(wrong.sum()) == 80


def test_mean_class_kl_by_hand_and_against_scipy() -> None:
    lt = np.log([[0.3, 0.7], [0.5, 0.5]])
    le = np.log([[0.5, 0.5], [0.5, 0.5]])
    by_hand = (0.3 * np.log(0.6) + 0.7 * np.log(1.4)) / 2
    assert metrics.mean_class_kl(lt, le) == pytest.approx(by_hand, rel=1e-12)
    assert metrics.mean_class_kl(lt, lt) == 0.0
    # random class probabilities: scipy.stats.entropy(p, q) is KL(p || q)
    rng = np.random.default_rng(3)
    p, q = rng.uniform(0.01, 0.99, 50), rng.uniform(0.01, 0.99, 50)
    P, Q = np.column_stack([1 - p, p]), np.column_stack([1 - q, q])
    expected = np.mean([stats.entropy(a, b) for a, b in zip(P, Q, strict=True)])
    assert metrics.mean_class_kl(np.log(P), np.log(Q)) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="shape"):
        metrics.mean_class_kl(np.log(P), np.log(Q[:3]))


# ------------------------------------------------------------------ across repetitions
def test_summarize_interval() -> None:
    table = pd.DataFrame(
        {"dataset": "d", "engine": "e", "metric": "m", "value": [1.0, 2.0, 3.0, 4.0]}
    )
    row = metrics.summarize(table).iloc[0]
    # mean 2.5, sd sqrt(5/3), t_{0.975,3} = 3.182446305
    half = 3.182446305284263 * np.sqrt(5 / 3) / 2
    assert (row["mean"], row["n_splits"]) == (2.5, 4)
    assert row["low"] == pytest.approx(2.5 - half, rel=1e-9)
    assert row["high"] == pytest.approx(2.5 + half, rel=1e-9)


def test_summarize_one_split_nan_and_infinite_values() -> None:
    table = pd.DataFrame(
        {
            "dataset": "d",
            "engine": ["a", "b", "b", "c", "c"],
            "metric": "m",
            "value": [0.5, np.nan, 3.0, -np.inf, 1.0],
        }
    )
    s = metrics.summarize(table).set_index("engine")
    # one split, or one left after dropping NaN: no interval
    assert s.loc["a", ["n_splits", "mean", "sd", "low", "high"]].tolist() == [1, 0.5, 0, 0.5, 0.5]
    assert s.loc["b", ["n_splits", "mean", "low", "high"]].tolist() == [1, 3.0, 3.0, 3.0]
    # a confident mistake: the mean is -inf and no sd is computed
    assert s.loc["c", "mean"] == -np.inf and s.loc["c", "sd"] == 0.0


def _ar1(rho: float, chains: int, n: int, seed: int) -> np.ndarray:
    """Stationary Gaussian AR(1) chains z_t = rho z_{t-1} + e_t, Var(e) = 1 - rho^2."""
    rng = np.random.default_rng(seed)
    z = np.empty((chains, n))
    z[:, 0] = rng.standard_normal(chains)
    e = np.sqrt(1 - rho**2) * rng.standard_normal((chains, n))
    for t in range(1, n):
        z[:, t] = rho * z[:, t - 1] + e[:, t]
    return z


def test_mc_standard_errors_of_independent_and_ar1_draws() -> None:
    n = 4 * 50_000
    # independent N(0, 1) draws: se(mean) = 1 / sqrt(n), se(var) = sqrt(2 / n)
    iid = np.random.default_rng(0).standard_normal((4, 50_000))
    se_m, se_v = metrics.mc_standard_errors(iid)
    assert se_m == pytest.approx(1 / np.sqrt(n), rel=0.05)
    assert se_v == pytest.approx(np.sqrt(2 / n), rel=0.05)
    # unit-variance AR(1), rho = 0.5: the asymptotic variance of the mean is
    # (1 + rho) / (1 - rho) / n, of the sample variance 2 (1 + rho^2) / (1 - rho^2) / n
    rho = 0.5
    se_m, se_v = metrics.mc_standard_errors(_ar1(rho, 4, 50_000, seed=1))
    assert se_m == pytest.approx(np.sqrt((1 + rho) / (1 - rho) / n), rel=0.05)
    assert se_v == pytest.approx(np.sqrt(2 * (1 + rho**2) / (1 - rho**2) / n), rel=0.08)
    # constant draws have no Monte Carlo error
    assert metrics.mc_standard_errors(np.full((2, 10), 3.0)) == (0.0, 0.0)
    with pytest.raises(ValueError, match="chains, draws"):
        metrics.mc_standard_errors(np.zeros(10))


def test_the_bias_corrected_interval_always_contains_its_estimate() -> None:
    """Efron's correction with replicates mostly on one side of the estimate (the ECE of
    few cases: resampled ECEs are larger) moved the interval past it, e.g.
    0.097 [0.085, 0.093]; where |z0| > z it is widened to the estimate."""
    rng = np.random.default_rng(0)
    replicates = 0.12 + 0.01 * rng.standard_normal(2000)  # 0.4% below 0.097
    low, high = metrics.percentile_interval(replicates, 0.097)
    assert low <= 0.097 <= high
    below = np.mean(replicates < 0.097)
    z0 = stats.norm.ppf(below)
    assert z0 < -1.96  # (the case: without the widening the upper end was below 0.097)
    assert high == 0.097  # (the widened end)
    assert low == np.quantile(replicates, stats.norm.cdf(2 * z0 - 1.96), method="lower")
    # an ordinary case is Efron's interval, untouched
    replicates = 0.5 + 0.05 * rng.standard_normal(2000)
    low, high = metrics.percentile_interval(replicates, 0.51)
    z0 = stats.norm.ppf(np.mean(replicates < 0.51))
    assert low == np.quantile(replicates, stats.norm.cdf(2 * z0 - 1.96), method="lower")
    assert high == np.quantile(replicates, stats.norm.cdf(2 * z0 + 1.96), method="higher")
