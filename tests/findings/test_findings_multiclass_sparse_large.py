"""results/multiclass_sparse_large/README.md: every number recomputed from the committed
table and job records of the multi-class SVGP on penbased and letter in full."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from .tables import RESULTS, assert_on_page, table

STUDY = "multiclass_sparse_large"
PAGE = f"{STUDY}/README.md"
BIG, SMALL = "svgp_128", "svgp_64_at_128"
SETS = ("penbased", "letter")


def _scores(s: pd.DataFrame, dataset: str, engine: str) -> tuple[str, str, str]:
    """Mean log predictive, error rate (%) and top-label ECE as the page writes them."""
    row = s[(s.dataset == dataset) & (s.engine == engine)].set_index("metric").value
    return (
        f"{row.mean_log_predictive:.3f}",
        f"{100 * row.error_rate:.2f}%",
        f"{row.ece_top_label:.3f}",
    )


def test_multiclass_sparse_large_findings() -> None:
    s = table(STUDY)
    jobs = pd.read_csv(RESULTS / STUDY / "jobs.csv")
    assert len(jobs) == 4 and (jobs.status == "ok").all() and jobs.warnings.isna().all()
    assert s.converged.all() and (s.split == 0).all()
    records = {
        (r["dataset"], r["engine"]): r
        for r in (json.loads(p.read_text()) for p in (RESULTS / STUDY / "jobs").glob("*.json"))
    }
    lp = s[s.metric == "mean_log_predictive"].set_index(["dataset", "engine"]).value
    size = s.drop_duplicates("dataset").set_index("dataset")
    expected = []
    for d in SETS:
        big, small = records[(d, BIG)], records[(d, SMALL)]
        assert big["hyperparameters"]["values"] == small["hyperparameters"]["values"]
        theta = np.round(big["hyperparameters"]["values"], 2)
        expected += [
            f"{d} ({size.n_train[d]:,} training, {size.n_test[d]:,} test cases)",
            f"{theta[0]:.2f} and {theta[1]:.2f}"
            if d == "letter"
            else f"log lengthscale {theta[0]:.2f} and log sigma_f^2 {theta[1]:.2f} on {d}",
            f"{lp[d, BIG] - lp[d, SMALL]:+.4f} on {d}",
        ]
    pen, let = (records[(d, BIG)] for d in SETS)
    small_pen, small_let = (records[(d, SMALL)] for d in SETS)
    lp_p, err_p, ece_p = _scores(s, "penbased", BIG)
    lp_q, err_q, ece_q = _scores(s, "penbased", SMALL)
    lp_l, err_l, ece_l = _scores(s, "letter", BIG)
    lp_m, err_m, ece_m = _scores(s, "letter", SMALL)
    assert_on_page(
        PAGE,
        *expected,
        f"M = 128 mean log predictive {lp_p} nats per case, error rate {err_p}, top-label ECE"
        f" {ece_p}; M = 64 at the same hyperparameters {lp_q}, {err_q}, {ece_q}",
        f"M = 128 {lp_l}, {err_l}, {ece_l}; M = 64 {lp_m}, {err_m}, {ece_m}",
        f"took {pen['optimizer']['evaluations']} evaluations and"
        f" {pen['timings']['select_seconds']:.0f} s on penbased, "
        f"{let['optimizer']['evaluations']} evaluations and {let['timings']['select_seconds']:.0f}"
        f" s on letter; the final fit at the selected values {pen['timings']['fit_seconds']:.1f}"
        f" s and {let['timings']['fit_seconds']:.1f} s",
        f"M = 64 at those values {small_pen['timings']['fit_seconds']:.0f} s"
        f" ({small_pen['convergence']['iterations']} iterations) and"
        f" {small_let['timings']['fit_seconds']:.0f} s"
        f" ({small_let['convergence']['iterations']} iterations)",
    )
