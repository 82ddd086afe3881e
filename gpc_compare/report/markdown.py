"""The report's text: ``report.md`` with its findings and tables, from the study's records."""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..study import StudyConfig
from ..study.datafiles import data_provenance
from .styles import METRICS, REFERENCE_METRICS, style

__all__ = ["report_markdown"]

#: Job records as :func:`gpc_compare.study.load_records` returns them (one dict per job).
Records = list[dict[str, Any]]


def _fmt(x: float | None, digits: int = 3) -> str:
    """A number to ``digits`` decimals; "n/a" for None or NaN, "inf"/"-inf" spelled out."""
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "n/a"
    if np.isinf(x):
        return "-inf" if x < 0 else "inf"
    return f"{x:.{digits}f}"


def _interval(row: pd.Series) -> str:
    """A summary row as "mean [low, high]" (just the mean for one split or an infinite one)."""
    if row["n_splits"] > 1 and np.isfinite(row["mean"]):
        return f"{_fmt(row['mean'])} [{_fmt(row['low'])}, {_fmt(row['high'])}]"
    return _fmt(row["mean"])


def _markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The lines of a pipe table."""
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def _findings(
    summary: pd.DataFrame,
    table: pd.DataFrame,
    records: Records,
    datasets: Sequence[str],
    engines: Sequence[str],
    reference: str | None,
) -> list[str]:
    """Plain statements with numbers, generated from the summary table."""
    lines = []

    def get(dataset, engine, metric):
        s = summary[
            (summary.dataset == dataset) & (summary.engine == engine) & (summary.metric == metric)
        ]
        return None if s.empty else s.iloc[0]

    def paired(dataset, engine, other, metric) -> tuple[float, int]:
        """Mean difference engine - other over the splits where both have a value."""
        t = table[(table.dataset == dataset) & (table.metric == metric)]
        a = t[t.engine == engine].set_index("split")["value"]
        b = t[t.engine == other].set_index("split")["value"]
        common = a.index.intersection(b.index)
        return float(np.mean(a[common] - b[common])) if len(common) else np.nan, len(common)

    for dataset in datasets:
        parts = []
        lp = {e: get(dataset, e, "mean_log_predictive") for e in engines}
        lp = {e: r for e, r in lp.items() if r is not None}
        n_max = max((int(r["n_splits"]) for r in lp.values()), default=0)
        complete = {e: r for e, r in lp.items() if int(r["n_splits"]) == n_max}
        if len(complete) >= 2:
            best = max(complete, key=lambda e: complete[e]["mean"])
            parts.append(
                f"best mean log predictive: {style(best)[2]} ({_fmt(lp[best]['mean'])} nats"
                f" over {n_max} split{'s' if n_max > 1 else ''})"
            )
        if reference in lp:
            for e in lp:
                if e != reference:
                    d, k = paired(dataset, e, reference, "mean_log_predictive")
                    parts.append(
                        f"{style(e)[2]} - {style(reference)[2]} = {_fmt(d)} nats"
                        + ("" if k == n_max else f" (on the {k} splits both finished)")
                    )
        missing = [e for e in engines if e not in lp]
        if missing:
            parts.append("no results from " + ", ".join(style(e)[2] for e in missing))
        err = {e: get(dataset, e, "error_rate") for e in engines}
        err = {e: r for e, r in err.items() if r is not None}
        if err:
            parts.append(
                "error rates "
                + ", ".join(f"{style(e)[2]} {_fmt(r['mean'])}" for e, r in err.items())
            )
        for e in engines:
            kl = get(dataset, e, "marginal_kl_mean")
            gap = get(dataset, e, "evidence_gap")
            if kl is not None:
                parts.append(f"{style(e)[2]} mean marginal KL from {reference} {_fmt(kl['mean'])}")
            if gap is not None:
                parts.append(f"{style(e)[2]} evidence - AIS {_fmt(gap['mean'], 2)}")
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
            if z["mean"] < 0:
                parts.append(
                    f"{style(e)[2]}'s evidence is below the AIS estimate by {_fmt(-z['mean'], 1)}"
                    " standard errors on average (AIS is biased low if anything, so the deficit "
                    "is the approximation's)"
                )
            else:
                parts.append(
                    f"{style(e)[2]}'s evidence is above the AIS estimate by {_fmt(z['mean'], 1)}"
                    " standard errors on average: AIS estimates of log Z are biased low when the "
                    "annealing is too short, so part of that gap may be the reference's"
                )
        if parts:
            lines.append(f"- **{dataset}**: " + "; ".join(parts) + ".")
    return lines


def _selection_comparison(
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
                    diffs.append(_fmt(float(np.mean(d)), 4) if np.isfinite(d).any() else "n/a")
                rows.append(
                    [
                        dataset,
                        f"{style(e1)[2]} vs {style(e2)[2]}",
                        f"{sum(g > 0.1 for g in gaps)} of {len(gaps)}",
                        _fmt(float(np.median(gaps)), 2),
                        _fmt(float(np.max(gaps)), 2),
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
        *_markdown_table(
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


def report_markdown(
    config: StudyConfig,
    table: pd.DataFrame,
    jobs: pd.DataFrame,
    summary: pd.DataFrame,
    records: Records,
    datasets: Sequence[str],
    engines: Sequence[str],
    made: Sequence[tuple[str, str]],
    study_file: str,
    result_dir: Path,
) -> str:
    """The text of ``report.md``.

    Parameters
    ----------
    config : StudyConfig
        The study as run (``study.toml``).
    table, jobs : DataFrame
        The tidy results table and the per-job status table (``jobs.csv``).
    summary : DataFrame
        :func:`gpc_compare.metrics.summarize` of ``table``.
    records : list of dict
        The finished jobs' records.
    datasets, engines : sequence of str
        Data set labels and engine labels, in the order shown.
    made : sequence of (str, str)
        The figures written: file name and caption.
    study_file, result_dir
        The command that ran the study and where its results are (for the header).

    Returns
    -------
    str
        Markdown: header, findings, held-out scores, the comparison with the reference,
        hyperparameters, MCMC diagnostics, timings, unfinished jobs and the figures.
    """
    versions = json.loads(table["versions"].iloc[0])
    n_ok = int((jobs.status == "ok").sum())
    failed = jobs[jobs.status == "failed"]
    not_run = jobs[jobs.status == "not run"]
    kernel = dict(config.kernel)
    splits = config.splits
    split_text = {
        "kfold": lambda: f"{splits['n_splits']}-fold stratified cross-validation",
        "holdout": lambda: (
            f"{splits['n_repeats']} stratified train/test splits, test size {splits['test_size']}"
        ),
        "none": lambda: "every case trains, none is held out (evidence only)",
    }[splits["kind"]]()
    estimators = list(config.evidence)
    lines = [
        f"# Study `{config.name}`",
        "",
        config.description.strip(),
        "",
        f"- Command: `gpc-compare run {study_file}` (it writes this report too; "
        f"`gpc-compare report {result_dir}` rewrites it)",
        f"- Report written {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} on "
        f"{platform.node() or 'this machine'} ({os.cpu_count()} CPUs)",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
        f"- Data: {', '.join(datasets)}; inputs standardised on each training fold; {split_text}",
        *data_provenance(config.datasets),  # data sets read from files, and what was dropped
        f"- Model: {kernel['name']} kernel"
        f"{' (ARD)' if kernel.get('ard') else ''}, {config.likelihood} likelihood, "
        f"{'constant prior mean (a hyperparameter)' if config.mean is not None else 'zero mean'}",
        f"- Hyperparameters: policy `{config.policy}`"
        + (f", source `{config.source}`" if config.source else "")
        + (
            f" ({len(config.grid)} grid points)"
            if config.grid
            else f", {config.n_restarts} optimiser restarts"
        )
        + f"; study seed {config.seed}",
        "- Engines and options: "
        + "; ".join(
            f"{e}{'' if config.methods[e] == e else f' (method {config.methods[e]})'} "
            f"{dict(o) or '(defaults)'}"
            for e, o in config.engines.items()
        ),
        f"- Jobs: {len(jobs)} ({n_ok} finished, {len(failed)} failed, {len(not_run)} not run); "
        f"the table is `results.csv` ({len(table)} rows), per-job status in `jobs.csv`",
        *(f"- Gold-standard evidence: {e} {dict(o)}" for e, o in config.evidence.items()),
        "",
        "## Findings",
        "",
        *(
            _grid_findings(table, datasets, engines + estimators)
            if config.grid
            else _findings(summary, table, records, datasets, engines, config.reference)
        ),
        "",
    ]
    present = [m for m in METRICS if m in set(summary.metric)]
    if present:
        lines += [
            "## Held-out scores",
            "",
            "Mean over splits with a 95% t-interval across splits in brackets.",
            "",
        ]
    for dataset in datasets if present else []:
        lines += [f"### {dataset}", ""]
        rows = []
        for engine in engines:
            cells = [style(engine)[2]]
            for m in present:
                s = summary[
                    (summary.dataset == dataset)
                    & (summary.engine == engine)
                    & (summary.metric == m)
                ]
                cells.append("n/a" if s.empty else _interval(s.iloc[0]))
            rows.append(cells)
        lines += _markdown_table(["engine", *[METRICS[m][0] for m in present]], rows) + [""]

    ref_present = [m for m in REFERENCE_METRICS if m in set(summary.metric)]
    if ref_present:
        lines += [
            f"## Against the reference ({config.reference}) at the same hyperparameters",
            "",
            "Latent moments at the training inputs (every class's, with C classes); "
            "KL(reference ‖ approximation) between the Gaussian marginals, averaged over cases; "
            "evidence gap = the engine's log evidence minus the reference's AIS estimate; "
            "with C classes, the class probabilities at the test inputs.",
            "",
        ]
        rows = []
        for dataset in datasets:
            for engine in engines:
                cells = [dataset, style(engine)[2]]
                have = False
                for m in ref_present:
                    s = summary[
                        (summary.dataset == dataset)
                        & (summary.engine == engine)
                        & (summary.metric == m)
                    ]
                    have |= not s.empty
                    cells.append("n/a" if s.empty else _interval(s.iloc[0]))
                if have:
                    rows.append(cells)
        lines += _markdown_table(
            ["data set", "engine", *[REFERENCE_METRICS[m] for m in ref_present]], rows
        ) + [""]

    if estimators:
        lines += _evidence_health(records, datasets, estimators)
    if not config.grid:
        lines += ["## Hyperparameters used", "", "Mean over splits of the log values.", ""]
    rows = []
    for dataset in datasets if not config.grid else []:
        for engine in engines:
            recs = [r for r in records if r["dataset"] == dataset and r["engine"] == engine]
            if not recs:
                continue
            names = recs[0]["hyperparameters"]["names"]
            vals = np.mean([r["hyperparameters"]["values"] for r in recs], axis=0)
            src = recs[0]["hyperparameters"]["from"]
            hp = ", ".join(f"{n} {v:.3f}" for n, v in zip(names, vals, strict=True))
            ev = [r["log_evidence"] for r in recs if r.get("log_evidence") is not None]
            rows.append([dataset, style(engine)[2], src, hp, _fmt(np.mean(ev), 2) if ev else "n/a"])
    if rows:
        lines += _markdown_table(
            ["data set", "engine", "selected by", "hyperparameters", "log evidence (mean)"], rows
        ) + [""]
        lines += _selection_comparison(table, records, datasets, engines)

    diag = [r for r in records if r.get("diagnostics")]
    if diag:
        lines += ["## MCMC diagnostics", ""]
        rows = [
            [
                r["dataset"],
                r["split"],
                _fmt(r["diagnostics"]["r_hat_max"], 3),
                _fmt(r["diagnostics"]["ess_bulk_min"], 0),
                _fmt(r["diagnostics"]["ess_tail_min"], 0),
                r["diagnostics"]["divergences"],
                "yes" if r["diagnostics"]["passed"] else "**no**",
            ]
            for r in sorted(diag, key=lambda r: (datasets.index(r["dataset"]), r["split"]))
        ]
        lines += _markdown_table(
            [
                "data set",
                "split",
                "max R-hat",
                "min bulk ESS",
                "min tail ESS",
                "divergences",
                "passed",
            ],
            rows,
        ) + [""]

    lines += ["## Timings", "", "Median fitting time per split in seconds (prediction apart).", ""]
    per_job = table.drop_duplicates("job_id")
    rows = []
    for dataset in datasets:
        cells = [dataset]
        for engine in engines + estimators:
            v = per_job[(per_job.dataset == dataset) & (per_job.engine == engine)]["fit_seconds"]
            cells.append(f"{float(np.median(v)):.3g}" if len(v) else "n/a")
        rows.append(cells)
    header = ["data set", *[style(e)[2] for e in engines + estimators]]
    lines += _markdown_table(header, rows) + [""]

    if len(failed) or len(not_run):
        lines += ["## Jobs that did not finish", ""]
        for _, row in pd.concat([failed, not_run]).iterrows():
            err = row["error"] if isinstance(row["error"], str) and row["error"] else row["status"]
            lines.append(
                f"- {row['dataset']} split {row['split']} {row['engine']} "
                f"(`{row['job_id']}`): {err}"
            )
        lines += ["", "Tracebacks are in `jobs/<job_id>.json`; rerun the study to retry.", ""]

    lines += ["## Figures", ""]
    for name, caption in made:
        lines += [f"### {caption}", "", f"![{caption}](figures/{name})", ""]
    return "\n".join(lines).rstrip() + "\n"


def _grid_findings(table: pd.DataFrame, datasets: Sequence[str], methods: Sequence[str]):
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


def _evidence_health(records: Records, datasets: Sequence[str], estimators: Sequence[str]):
    """A table of each gold-standard evidence estimator's health, per data set."""
    rows = []
    for dataset in datasets:
        for label in estimators:
            recs = [r for r in records if r["dataset"] == dataset and r["engine"] == label]
            if not recs:
                continue
            se = np.array([r["log_evidence_se"] for r in recs], dtype=float)
            healthy = sum(bool(r["convergence"]["converged"]) for r in recs)
            rechecked = sum(r["evidence"]["recheck"] is not None for r in recs)
            rows.append(
                [dataset, label, len(recs), healthy, rechecked,
                 _fmt(float(np.median(se)), 3), _fmt(float(se.max()), 3)]
            )  # fmt: skip
    header = ["data set", "estimator", "jobs", "healthy", "annealed again", "median se", "max se"]
    return [
        "## Gold-standard evidence",
        "",
        "Healthy: standard error at most the estimator's `se_max` after any second, longer "
        "anneal (an unhealthy estimate is degenerate: one run carries the weight, and the "
        "estimate is biased low).",
        "",
        *_markdown_table(header, rows),
        "",
    ]
