"""The report's findings: plain statements with numbers, generated from the summaries.

A difference is called a win only when its interval excludes zero; caveats that would
repeat for every data set are said once, after the list.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .formatting import fmt, markdown_table, reference_estimator
from .styles import style

__all__ = ["bound_counts", "findings", "grid_findings", "selection_comparison"]

#: Job records as :func:`gpc_compare.study.load_records` returns them (one dict per job).
Records = list[dict[str, Any]]
#: Paired differences: ``(dataset, a, b, metric) -> (mean a - b, low, high, splits)``.
Paired = dict[tuple[str, str, str, str], tuple[float, float, float, int]]


def findings(
    summary: pd.DataFrame,
    table: pd.DataFrame,
    records: Records,
    datasets: Sequence[str],
    engines: Sequence[str],
    reference: str | None,
    paired: Paired,
) -> list[str]:
    """Plain statements with numbers, and the caveats they need said once at the end.

    A difference between engines is called a win only when its 95% interval (the paired
    bootstrap over test cases, ``paired``) excludes zero; otherwise the engines are said
    to be indistinguishable, with the difference and its interval.
    """
    lines = []
    notes: dict[str, str] = {}

    def get(dataset, engine, metric):
        s = summary[
            (summary.dataset == dataset) & (summary.engine == engine) & (summary.metric == metric)
        ]
        return None if s.empty else s.iloc[0]

    def diff(dataset, a, b, metric, digits=4) -> str:
        if (dataset, a, b, metric) not in paired:
            return "n/a"
        d, lo, hi, _ = paired[(dataset, a, b, metric)]
        return f"{fmt(d, digits)} [{fmt(lo, digits)}, {fmt(hi, digits)}]"

    for dataset in datasets:
        parts = []
        lp = {e: get(dataset, e, "mean_log_predictive") for e in engines}
        lp = {e: r for e, r in lp.items() if r is not None}
        n_max = max((int(r["n_splits"]) for r in lp.values()), default=0)
        complete = {e: r for e, r in lp.items() if int(r["n_splits"]) == n_max}
        if len(complete) >= 2:
            best = max(complete, key=lambda e: complete[e]["mean"])
            ties = [
                e
                for e in complete
                if e != best
                and not paired.get((dataset, best, e, "mean_log_predictive"), (0, 0, 0, 0))[1] > 0
            ]
            name = style(best)[2]
            if not ties:
                parts.append(
                    f"best mean log predictive: {name} ({fmt(lp[best]['mean'])} nats over "
                    f"{n_max} split{'s' if n_max > 1 else ''}; ahead of "
                    + ", ".join(
                        f"{style(e)[2]} by {diff(dataset, best, e, 'mean_log_predictive')}"
                        for e in complete
                        if e != best
                    )
                    + ")"
                )
            else:
                parts.append(
                    f"no win on mean log predictive: {name}'s {fmt(lp[best]['mean'])} nats is "
                    "within the interval of "
                    + ", ".join(
                        f"{style(e)[2]}'s (difference "
                        f"{diff(dataset, best, e, 'mean_log_predictive')})"
                        for e in ties
                    )
                )
                notes["tie"] = (
                    "A difference is called a win only when its 95% interval (a paired "
                    "bootstrap over the test cases, in brackets) excludes zero."
                )
        if reference in lp:
            for e in lp:
                if e == reference:
                    continue
                parts.append(
                    f"{style(e)[2]} - {style(reference)[2]} = "
                    f"{diff(dataset, e, reference, 'mean_log_predictive')} nats"
                )
        missing = [e for e in engines if e not in lp]
        if missing:
            parts.append("no results from " + ", ".join(style(e)[2] for e in missing))
        err = {e: get(dataset, e, "error_rate") for e in engines}
        err = {e: r for e, r in err.items() if r is not None}
        if err:
            parts.append(
                "error rates "
                + ", ".join(f"{style(e)[2]} {fmt(r['mean'])}" for e, r in err.items())
            )
        est = _estimator(records, dataset, reference)
        for e in engines:
            kl = get(dataset, e, "marginal_kl_mean")
            gap = get(dataset, e, "evidence_gap")
            if kl is not None:
                parts.append(f"{style(e)[2]} mean marginal KL from {reference} {fmt(kl['mean'])}")
            if gap is not None:
                parts.append(f"{style(e)[2]} evidence - {est} {fmt(gap['mean'], 2)}")
        diag = [
            r["diagnostics"] for r in records if r["dataset"] == dataset and r.get("diagnostics")
        ]
        if diag:
            n_pass = sum(d["passed"] for d in diag)
            parts.append(
                f"MCMC diagnostics passed on {n_pass} of {len(diag)} fits"
                + ("" if n_pass == len(diag) else " (see the diagnostics table)")
            )
        for e in engines:
            z = get(dataset, e, "evidence_gap_z")
            if z is None or not np.isfinite(z["mean"]) or abs(z["mean"]) <= 3:
                continue
            side = "below" if z["mean"] < 0 else "above"
            parts.append(
                f"{style(e)[2]}'s evidence is {side} the {est} estimate by "
                f"{fmt(abs(z['mean']), 1)} standard errors on average"
            )
            notes[f"ais_{side}"] = (
                "SMC's and AIS's estimates of log Z are biased low if anything (unbiased in Z), "
                "so an evidence below the reference's estimate is the approximation's deficit"
                if side == "below"
                else "SMC's and AIS's estimates of log Z are biased low when the path is too "
                "short, so part of an evidence above the reference's estimate may be the "
                "reference's"
            ) + "."
        for text in _bound_findings(table, dataset, engines):
            parts.append(text)
            notes["bound"] = (
                "A hyperparameter at its bound was stopped by the bound, not by the objective "
                "(which was still rising there): widen the bound in the study's `[kernel]` "
                "to see where it would go, or read the results as conditional on the bound."
            )
        if parts:
            lines.append(f"- **{dataset}**: " + "; ".join(parts) + ".")
    if notes:
        lines += ["", *(f"Note: {text}" for text in notes.values())]
    return lines


def _bound_findings(table: pd.DataFrame, dataset: str, engines: Sequence[str]) -> list[str]:
    """For each engine that selected its own hyperparameters, those at a bound and on how
    many splits (from the table's ``at_bound`` column)."""
    if "at_bound" not in table:
        return []
    per_job = table[(table.dataset == dataset)].drop_duplicates("job_id")
    out = []
    for engine in engines:
        jobs = per_job[(per_job.engine == engine) & (per_job.hyperparameters_from == "own")]
        hits = bound_counts(jobs)
        if hits:
            out.append(
                f"{style(engine)[2]}'s "
                + ", ".join(f"{name} at its {side} bound on {k} of {len(jobs)} splits"
                            for (name, side), k in hits.items())
            )  # fmt: skip
    return out


def bound_counts(jobs: pd.DataFrame) -> dict[tuple[str, str], int]:
    """``(name, side) -> number of jobs`` with that hyperparameter at that bound."""
    counts: dict[tuple[str, str], int] = {}
    for cell in jobs["at_bound"]:  # NaN (read back from an empty column): none at a bound
        for item in str(cell).split("; ") if isinstance(cell, str) else ():
            if item:
                name, _, side = item.rpartition(" ")
                counts[(name, side)] = counts.get((name, side), 0) + 1
    return counts


def selection_comparison(
    table: pd.DataFrame, records: Records, datasets: Sequence[str], engines: Sequence[str]
) -> list[str]:
    """Where engines that select their own hyperparameters disagree, and what it changes."""
    own = [e for e in engines if any(
        r["engine"] == e and r["hyperparameters"]["from"] == "own" for r in records
    )]  # fmt: skip
    if len(own) < 2:
        return []
    rows = []
    for dataset in datasets:
        theta = {}
        for r in records:
            if r["dataset"] == dataset and r["engine"] in own:
                theta[(r["engine"], r["split"])] = np.asarray(r["hyperparameters"]["values"])
        for i, e1 in enumerate(own):
            for e2 in own[i + 1 :]:
                splits = sorted(s for (e, s) in theta if e == e1 and (e2, s) in theta)
                if not splits:
                    continue
                gaps = [float(np.max(np.abs(theta[(e1, s)] - theta[(e2, s)]))) for s in splits]
                diffs = []
                for metric in ("mean_log_predictive", "loo_log_predictive"):
                    t = table[(table.dataset == dataset) & (table.metric == metric)]
                    a = t[t.engine == e1].set_index("split")["value"].reindex(splits)
                    b = t[t.engine == e2].set_index("split")["value"].reindex(splits)
                    d = (a - b).to_numpy(dtype=float)
                    diffs.append(fmt(float(np.mean(d)), 4) if np.isfinite(d).any() else "n/a")
                rows.append(
                    [
                        dataset,
                        f"{style(e1)[2]} vs {style(e2)[2]}",
                        f"{sum(g > 0.1 for g in gaps)} of {len(gaps)}",
                        fmt(float(np.median(gaps)), 2),
                        fmt(float(np.max(gaps)), 2),
                        *diffs,
                    ]
                )
    if not rows:
        return []
    return [
        "## Hyperparameter selections compared",
        "",
        "Engines that select their own hyperparameters, compared split by split: how often "
        "their selections differ by more than 0.1 in some log hyperparameter, the median and "
        "largest such difference, and the mean paired difference (first minus second) of the "
        "held-out mean log predictive and of the training-set LOO log predictive (EP).",
        "",
        *markdown_table(
            [
                "data set",
                "engines",
                "splits differing > 0.1",
                "median of max abs d log theta",
                "largest",
                "d held-out log pred.",
                "d LOO log pred. (train)",
            ],
            rows,
        ),
        "",
    ]


def grid_findings(table: pd.DataFrame, datasets: Sequence[str], methods: Sequence[str]):
    """For a grid study: where each method's log evidence peaks, per data set."""
    ev = table[table.metric == "log_evidence"]
    lines = []
    for dataset in datasets:
        parts = []
        for method in methods:
            t = ev[(ev.dataset == dataset) & (ev.engine == method)]
            if t.empty:
                continue
            best = t.loc[t.value.idxmax()]
            point = ", ".join(f"{k} {v:.2f}" for k, v in json.loads(best.hyperparameters).items())
            parts.append(f"{style(method)[2]} {best.value:.2f} at ({point})")
        if parts:
            lines.append(
                f"- **{dataset}**: largest log evidence over the grid: " + "; ".join(parts)
            )
    return lines or ["- No grid point has finished yet."]


def _estimator(records, dataset: str, reference: str | None) -> str:
    """The name of the estimator that gave the reference's evidence on ``dataset`` ("SMC",
    "AIS"; records written before the estimator was recorded came from AIS)."""
    names = {
        reference_estimator(r)["method"].upper()
        for r in records
        if r["dataset"] == dataset and r["engine"] == reference and r.get("log_evidence")
    }
    return "/".join(sorted(names)) or "the reference"
