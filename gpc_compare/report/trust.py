"""The report's ``## Can this approximation be trusted here?``: the Pareto-k check of
every Gaussian approximation (a study's ``psis = true``; :func:`gpc_compare.psis`).

Draws from the approximation q, weighted by p(y | f) p(f) / q(f): the Pareto shape k-hat
of the weights' upper tail (Vehtari, Simpson, Gelman, Yao and Gabry 2024, JMLR 25(72))
says whether q is close enough for the weighted estimates to be reliable (k-hat below
min(1 - 1 / log10 S, 0.7) for S draws; Yao, Vehtari, Simpson and Gelman 2018). Beside it,
where the study has a reference, the marginal KL from the reference measured on the same
splits, so a reader sees the cheap check next to what it predicts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..study import JobRecord
from .formatting import fmt, markdown_table
from .styles import style

__all__ = ["TRUST_CAPTION", "recommendation", "trust_rows", "trust_section"]

#: The caption of ``figures/trust.png`` (:func:`gpc_compare.report.trust_figure.plot_trust`).
TRUST_CAPTION = "Pareto k-hat per engine and data set, beside the distance to the reference"


def trust_rows(records: Sequence[JobRecord], dataset: str, engine: str) -> dict | None:
    """One engine's Pareto-k checks on one data set, over its splits: the median and
    largest k-hat, on how many splits it was below the threshold, the importance-sampled
    evidence minus the engine's own, the corrected held-out score minus the plain one,
    and the seconds per check; None where the engine was not checked."""
    recs = [r for r in records if r.dataset == dataset and r.engine == engine and r.psis]
    if not recs:
        return None
    k = np.array([r.psis["pareto_k"] for r in recs])
    below = sum(r.psis["pareto_k"] < r.psis["khat_threshold"] for r in recs)
    ev = [r.psis["log_evidence"] - r.log_evidence for r in recs if r.log_evidence is not None]
    mlp = [
        r.psis["mean_log_predictive"] - r.metrics["mean_log_predictive"]
        for r in recs
        if "mean_log_predictive" in r.psis and "mean_log_predictive" in r.metrics
    ]
    return {
        "median_k": float(np.median(k)),
        "max_k": float(np.max(k)),
        "reliable": below,
        "splits": len(recs),
        "evidence_shift": float(np.mean(ev)) if ev else None,
        "score_shift": float(np.mean(mlp)) if mlp else None,
        "seconds": float(np.mean([r.psis["seconds"] for r in recs])),
    }


def trust_section(
    records: Sequence[JobRecord],
    summary,
    datasets: Sequence[str],
    engines: Sequence[str],
    reference: str | None,
    figure: str | None = None,
) -> list[str]:
    """The section's lines (none when no engine was checked), with ``figures/FIGURE``
    (:data:`TRUST_CAPTION`) under the table where it was drawn."""
    rows = []
    for dataset in datasets:
        for engine in engines:
            t = trust_rows(records, dataset, engine)
            if t is None:
                continue
            kl = summary[
                (summary.dataset == dataset)
                & (summary.engine == engine)
                & (summary.metric == "marginal_kl_mean")
            ]
            rows.append(
                [
                    dataset,
                    style(engine)[2],
                    f"{fmt(t['median_k'], 2)} ({fmt(t['max_k'], 2)})",
                    f"{t['reliable']} of {t['splits']}",
                    fmt(t["evidence_shift"], 2),
                    fmt(t["score_shift"], 4),
                    fmt(t["seconds"], 2),
                    fmt(float(kl["mean"].iloc[0]), 4) if len(kl) else "n/a",
                ]
            )
    if not rows:
        return []
    ref = style(reference)[2] if reference else "the reference"
    header = [
        "data set",
        "engine",
        "k-hat median (max)",
        "splits below threshold",
        "IS evidence - evidence",
        "IS score - score",
        "seconds",
        f"marginal KL from {ref}",
    ]
    return [
        "## Can this approximation be trusted here?",
        "",
        "Pareto-smoothed importance sampling from each Gaussian approximation q (Vehtari et "
        "al. 2024): k-hat of the weights p(y | f) p(f) / q(f). Below the threshold "
        "(min(1 - 1/log10 S, 0.7) for S draws) q is close to the posterior and the "
        "importance-weighted estimates are reliable; above it, not. The importance-sampled "
        "(IS) evidence and held-out mean log predictive are shown as shifts from the "
        "engine's own; the marginal KL is measured against the reference where it ran.",
        "",
        *markdown_table(header, rows),
        "",
        *([f"![{TRUST_CAPTION}](figures/{figure})", ""] if figure else []),
    ]


def recommendation(
    records: Sequence[JobRecord], table, dataset: str, engines: Sequence[str]
) -> str | None:
    """The cheapest engine (by mean fitting time) whose k-hat was below the threshold on
    every split, with the evidence for it; None when no engine was checked."""
    checked = {e: trust_rows(records, dataset, e) for e in engines}
    checked = {e: t for e, t in checked.items() if t is not None}
    if not checked:
        return None
    seconds = table[table.dataset == dataset].groupby("engine")["fit_seconds"].mean()
    trusted = [e for e, t in checked.items() if t["reliable"] == t["splits"]]
    if not trusted:
        worst = ", ".join(f"{style(e)[2]} {fmt(t['max_k'], 2)}" for e, t in checked.items())
        return (
            f"no approximation passed the Pareto-k check on every split (largest k-hat: "
            f"{worst}): trust none of them here without the MCMC reference"
        )
    best = min(trusted, key=lambda e: float(seconds.get(e, np.inf)))
    t = checked[best]
    fit = float(seconds.get(best))
    fit_text = f"{fit:.2g}" if fit < 10 else f"{fit:.0f}"  # (two figures: 0.0043, not 0.00)
    return (
        f"use {style(best)[2]}: the cheapest approximation ({fit_text} s "
        f"a fit) whose k-hat was below the threshold on all {t['splits']} splits "
        f"(median {fmt(t['median_k'], 2)}, largest {fmt(t['max_k'], 2)})"
    )
