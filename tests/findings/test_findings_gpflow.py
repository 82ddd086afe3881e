"""results/benchmarks/svgp_multiclass.md's section "Against GPflow": rendered from the
committed svgp_multiclass_gpflow.csv (benchmarks/gpflow_section.py), and the value check's
numbers in that table within the tolerances below (the run needs GPflow's virtual
environment; this test only reads its table)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from .tables import RESULTS

sys.path.insert(0, str(RESULTS.parent / "benchmarks"))
try:
    from gpflow_section import CHECKS, HEADING, read, render
finally:
    sys.path.pop(0)

CSV = RESULTS / "benchmarks" / "svgp_multiclass_gpflow.csv"
PAGE = RESULTS / "benchmarks" / "svgp_multiclass.md"
EPSILON = 1e-3
SQUASH = 1e-6  # GPflow 2.11's RobustMax._squash: each Phi is mapped into [1e-6, 1 - 1e-6]


def _check(name: str, lik: str) -> dict[str, float]:
    p = f"check_{name}_{lik}"
    return {what: float(v) for (part, what), v in read(CSV).items() if part == p}


def test_section_is_rendered_from_the_table() -> None:
    text = PAGE.read_text()
    assert text.count(HEADING) == 1
    assert text[text.index(HEADING) :] == render(CSV)


@pytest.mark.parametrize(("name", "lik"), CHECKS)
def test_same_q_same_kl_and_marginals(name: str, lik: str) -> None:
    """The KL term (R&W eq. A.23) and the marginals of q(f_i) are the same closed forms
    from the same q, Z, kernel and jitter on both sides, in float64: they agree to
    rounding (1e-9 relative allows for K_uu's Cholesky with a condition number up to the
    jitter's 1e6). Our bound recomputed from q alone is the fit's."""
    v = _check(name, lik)
    assert abs(v["kl_diff"]) <= 1e-9 * (1 + abs(v["kl_ours"]))
    assert v["f_mean_max_abs_diff"] <= 1e-9 * (1 + np.sqrt(v["M"]))
    assert v["f_var_max_rel_diff"] <= 1e-9
    assert v["elbo_ours_recomputed"] == pytest.approx(v["elbo_ours"], rel=1e-10)
    if lik == "robustmax":  # (deterministic: the ELBO is its two terms' difference)
        assert v["elbo_diff"] == pytest.approx(v["ell_diff"] - v["kl_diff"], abs=1e-9)


@pytest.mark.parametrize("name", sorted({n for n, _ in CHECKS}))
def test_robustmax_difference_is_gpflows_squashing(name: str) -> None:
    """GPflow's robust-max expectation is reproduced by the numpy copy of its formula; the
    copy without the squashing and with 200 nodes is ours at the same marginals; the
    ELBO difference is bounded by what the squashing can move: each P_y by at most
    (C - 1) 1e-6, so each E_i by that times log((1 - eps)(C - 1) / eps), plus the
    difference between GPflow's 20 Gauss-Hermite nodes and 200."""
    v = _check(name, "robustmax")
    n, C = v["n"], v["C"]
    assert v["epsilon_gpflow"] == pytest.approx(EPSILON, rel=1e-12)
    assert v["eps_k1_gpflow"] == pytest.approx(EPSILON / (C - 1), rel=1e-12)
    assert v["ell_gpflow"] == pytest.approx(v["ell_numpy_gpflow_formula"], abs=1e-9 * n)
    assert v["ell_numpy_unclipped_gh200"] == pytest.approx(
        v["ell_ours_at_gpflow_marginals"], abs=1e-8 * n
    )
    spread = np.log((1 - EPSILON) * (C - 1) / EPSILON)
    squash = n * (C - 1) * SQUASH * spread
    nodes = abs(v["ell_numpy_unclipped_gh20"] - v["ell_numpy_unclipped_gh200"])
    assert abs(v["elbo_diff"]) <= squash + nodes + 1e-8 * n


@pytest.mark.parametrize("name", sorted({n for n, _ in CHECKS}))
def test_robustmax_predictive_difference_is_gpflows_quadrature(name: str) -> None:
    """GPflow's predict_y is the numpy copy's to rounding; its squashing moves a probability
    by at most (C - 1) 1e-6; the copy unclipped with 200 Gauss-Hermite nodes is ours to 1e-6
    (the Gauss-Hermite rule's own error: the product of Phi's is not a polynomial; ours is
    a trapezoid rule good to 1e-12); so the whole difference is bounded by the squashing
    plus 20 nodes against 200 plus that (the triangle inequality)."""
    v = _check(name, "robustmax")
    assert v["proba_copy_vs_gpflow"] <= 1e-12
    assert v["proba_copy_squash_effect"] <= (v["C"] - 1) * SQUASH
    assert v["proba_copy_gh200_vs_ours"] <= 1e-6
    parts = ("squash_effect", "gh20_vs_gh200", "gh200_vs_ours", "vs_gpflow")
    assert v["proba_max_abs_diff"] <= sum(v[f"proba_copy_{k}"] for k in parts) + 1e-15


@pytest.mark.parametrize("name", sorted({n for n, _ in CHECKS}))
def test_softmax_within_monte_carlo_error(name: str) -> None:
    """GPflow's softmax expectation (Monte Carlo, replicated) and ours (quadrature for
    C = 3, a large antithetic Monte Carlo for C = 26) within four standard errors of their
    difference (a correct pair fails this about once in 16,000), and the fit's own
    estimate too."""
    v = _check(name, "softmax")
    se = np.hypot(v["ell_gpflow_se"], v["ell_ours_large_mc_se"])
    assert abs(v["ell_gpflow"] - v["ell_ours_large_mc"]) <= 4 * se
    assert abs(v["ell_diff"]) <= 4 * np.hypot(v["ell_gpflow_se"], v["ell_ours_se"])
    assert abs(v["elbo_diff"]) <= 4 * np.hypot(v["elbo_gpflow_se"], v["ell_ours_se"])
    # the largest of m C differences of predictive probabilities, each within GPflow's
    # Monte Carlo error and ours (quadrature for C = 3; for C = 26 40,000 draws, a standard
    # error of at most 0.5 / sqrt(40,000) = 0.0025): five standard errors
    ours = 0.5 / np.sqrt(40_000) if v["C"] > 3 else 0.0
    assert v["proba_max_abs_diff"] <= 5 * np.hypot(v["proba_gpflow_se_max"], ours)
