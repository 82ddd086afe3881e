"""results/multiclass_sparse/README.md: every number recomputed from the committed table and
job records of the multi-class SVGP on satimage in full."""

from __future__ import annotations

import json
import re

import pandas as pd

from .tables import RESULTS, assert_on_page, ci, diff, table

STUDY = "multiclass_sparse"
PAGE = f"{STUDY}/README.md"
BIG, SMALL = "svgp_128", "svgp_64_at_128"


def test_multiclass_sparse_findings() -> None:
    s = table(STUDY)
    jobs = pd.read_csv(RESULTS / STUDY / "jobs.csv")
    assert len(jobs) == 20 and (jobs.status == "ok").all()
    mean = {
        m: s[s.metric == m].groupby("engine").value.mean()
        for m in ("mean_log_predictive", "error_rate", "ece_top_label")
    }
    lp, err = (diff(STUDY, "satimage", BIG, SMALL, metric=m) for m in mean if m != "ece_top_label")
    assert lp.verdict == err.verdict == "a better"
    own = s[(s.metric == "mean_log_predictive") & (s.engine == BIG)]
    hp = pd.DataFrame(list(own.hyperparameters.map(json.loads)))
    searches = [json.loads(p.read_text()) for p in (RESULTS / STUDY / "jobs").glob(f"*__{BIG}__*")]
    evaluations = [r["optimizer"]["evaluations"] for r in searches]
    t = jobs.set_index(["engine", "split"]).seconds
    slow = t[BIG].idxmax()
    rest = t[BIG].drop(slow)
    stalled = own[own.split == slow]
    (final,) = [r["convergence"] for r in searches if r["split"] == slow]
    assert final["converged"]
    assert not stalled.converged.iloc[0] and own.converged.sum() == 9
    second = own[own.split >= 5]  # (the second repeat: after the site iteration's change)
    assert second.converged.all() and not jobs[jobs.split >= 5].warnings.fillna("").any()
    warned = re.findall(
        r"not converged after 1000 iterations \(bound change (\S+), site change (\S+);"
        r" .*?last step (\S+)\)",
        jobs.set_index("job_id").warnings[stalled.job_id.iloc[0]],
    )
    cycled = [w for w in warned if float(w[1]) < 1e-4]  # (the bound flat, the sites not)
    (extreme,) = [w for w in warned if float(w[1]) >= 1e-4]
    assert len(cycled) == 2
    assert_on_page(
        PAGE,
        f"M = 128: mean log predictive {mean['mean_log_predictive'][BIG]:.3f} nats per case,"
        f" error rate {100 * mean['error_rate'][BIG]:.1f}%, top-label ECE"
        f" {mean['ece_top_label'][BIG]:.3f}",
        f"M = 64 at the same hyperparameters: {mean['mean_log_predictive'][SMALL]:.3f},"
        f" {100 * mean['error_rate'][SMALL]:.1f}%, {mean['ece_top_label'][SMALL]:.3f}",
        f"M = 128 - M = 64: mean log predictive {ci(lp)}, error rate {ci(err)}",
        f"log lengthscale {hp.log_lengthscale.min():.2f}-{hp.log_lengthscale.max():.2f}, log"
        f" sigma_f^2 {hp.log_variance.min():.2f}-{hp.log_variance.max():.2f}",
        f"(3 runs, {min(evaluations)}-{max(evaluations)} evaluations) took"
        f" {rest.min():.0f}-{rest.max():.0f} s on nine splits and {t[BIG][slow]:.0f} s on one"
        f" (split {slow}): three of its evaluations stopped",
        f"(bound change {cycled[0][0]} and {float(cycled[1][0]):.2e}, site change"
        f" {cycled[0][1]} and {cycled[1][1]}, last step {float(cycled[0][2]):.2f} and"
        f" {float(cycled[1][2]):.2f})",
        f"The third (bound change {extreme[0]}, site change {extreme[1]})",
        f"(M = 64) took {t[SMALL].min():.0f}-{t[SMALL].max():.0f} s",
        f"converged in {final['iterations']} iterations)",
    )
    longest = t[BIG][t[BIG].index >= 5].idxmax()
    (longest_search,) = [r for r in searches if r["split"] == longest]
    assert_on_page(
        PAGE,
        f"(the longest, split {longest}: {t[BIG][longest]:.0f} s,"
        f" {longest_search['optimizer']['evaluations']} evaluations)",
    )
