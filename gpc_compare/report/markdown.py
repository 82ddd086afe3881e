"""The report's text: ``report.md`` with its findings and tables, from the study's records."""

from __future__ import annotations

import json
import os
import platform
import shlex
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..study import StudyConfig
from ..study.datafiles import data_provenance
from .findings import bound_counts, findings, grid_findings, selection_comparison
from .formatting import fmt, interval_text, markdown_table, reference_estimator
from .styles import METRICS, REFERENCE_METRICS, style

__all__ = ["report_markdown"]

#: Job records as :func:`gpc_compare.study.load_records` returns them (one dict per job).
Records = list[dict[str, Any]]


def report_markdown(
    config: StudyConfig,
    table: pd.DataFrame,
    jobs: pd.DataFrame,
    summary: pd.DataFrame,
    records: Records,
    datasets: Sequence[str],
    engines: Sequence[str],
    made: Sequence[tuple[str, str]],
    command: str,
    result_dir: Path,
    paired: dict[tuple[str, str, str, str], tuple[float, float, float, int]] | None = None,
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
    command : str
        The command that ran the study (``gpc-compare run STUDY --output DIR ...``).
    result_dir : Path
        Where its results are (for the header).
    paired : dict, optional
        Paired differences between engines with their intervals
        (:func:`~gpc_compare.report.cases.case_intervals`); without them no difference
        is called a win.

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
    skipped = jobs[jobs.status == "skipped"]  # a dense engine beyond the memory available
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
    paired = paired or {}
    lines = [
        f"# Study `{config.name}`",
        "",
        config.description.strip(),
        "",
        f"- Command: `{command}` (it writes this report too; "
        f"`gpc-compare report {shlex.quote(str(result_dir))}` rewrites it)",
        f"- Report written {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} on "
        f"{platform.node() or 'this machine'} ({os.cpu_count()} CPUs)",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
        f"- Data: {', '.join(datasets)}; inputs standardised on each training fold; {split_text}",
        *data_provenance(config.datasets),  # data sets read from files, and what was dropped
        "- Model: "
        + (
            ", ".join(f"{k} ({v['name']})" for k, v in config.kernels.items()) + " kernels"
            if config.kernels  # a kernel axis
            else f"{kernel['name']} kernel{' (ARD)' if kernel.get('ard') else ''}"
        )
        + f", {config.likelihood} likelihood, "
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
        f"- Jobs: {len(jobs)} ({n_ok} finished, {len(failed)} failed, {len(not_run)} not run"
        + (f", {len(skipped)} skipped as too large for their engine" if len(skipped) else "")
        + "); "
        f"the table is `results.csv` ({len(table)} rows), per-job status in `jobs.csv`",
        *(f"- Gold-standard evidence: {e} {dict(o)}" for e, o in config.evidence.items()),
        "",
        "## Findings",
        "",
        *(
            grid_findings(table, datasets, engines + estimators)
            if config.grid
            else findings(summary, table, records, datasets, engines, config.reference, paired)
        ),
        "",
    ]
    present = [m for m in METRICS if m in set(summary.metric)]
    if present:
        lines += [
            "## Held-out scores",
            "",
            _interval_note(summary, present),
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
                cells.append("n/a" if s.empty else interval_text(s.iloc[0]))
            rows.append(cells)
        lines += markdown_table(["engine", *[METRICS[m][0] for m in present]], rows) + [""]

    ref_present = [m for m in REFERENCE_METRICS if m in set(summary.metric)]
    if ref_present:
        lines += [
            f"## Against the reference ({config.reference}) at the same hyperparameters",
            "",
            "Latent moments at the training inputs (every class's, with C classes); "
            "KL(reference ‖ approximation) between the Gaussian marginals, averaged over cases; "
            "evidence gap = the engine's log evidence minus the reference's estimate ("
            + _reference_evidence(records, config.reference)
            + "); with C classes, the class probabilities at the test inputs.",
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
                    cells.append("n/a" if s.empty else interval_text(s.iloc[0]))
                if have:
                    rows.append(cells)
        lines += markdown_table(
            ["data set", "engine", *[REFERENCE_METRICS[m] for m in ref_present]], rows
        ) + [""]

    if estimators:
        lines += _evidence_health(records, datasets, estimators)
    if not config.grid:
        lines += [
            "## Hyperparameters used",
            "",
            "Mean over splits of the log values; *at a bound*: selected at (within 0.01 of) "
            "one of the optimiser's bounds, on how many splits.",
            "",
        ]
    rows = []
    per_job = table.drop_duplicates("job_id")
    for dataset in datasets if not config.grid else []:
        for engine in engines:
            recs = [r for r in records if r["dataset"] == dataset and r["engine"] == engine]
            if not recs:
                continue
            names = recs[0]["hyperparameters"]["names"]
            vals = np.mean([r["hyperparameters"]["values"] for r in recs], axis=0)
            src = recs[0]["hyperparameters"]["from"]
            hp = ", ".join(f"{n} {fmt(float(v))}" for n, v in zip(names, vals, strict=True))
            ev = [r["log_evidence"] for r in recs if r.get("log_evidence") is not None]
            jobs_here = per_job[(per_job.dataset == dataset) & (per_job.engine == engine)]
            hits = bound_counts(jobs_here) if "at_bound" in jobs_here else {}
            flag = ", ".join(
                f"**{n} {side}** ({k} of {len(jobs_here)})" for (n, side), k in hits.items()
            )
            rows.append(
                [dataset, style(engine)[2], src, hp, flag or "no",
                 fmt(np.mean(ev), 2) if ev else "n/a"]
            )  # fmt: skip
    if rows:
        lines += markdown_table(
            ["data set", "engine", "selected by", "hyperparameters", "at a bound",
             "log evidence (mean)"],
            rows,
        ) + [""]  # fmt: skip
        lines += selection_comparison(table, records, datasets, engines)

    diag = [r for r in records if r.get("diagnostics")]
    if diag:
        lines += ["## MCMC diagnostics", ""]
        rows = [
            [
                r["dataset"],
                r["split"],
                fmt(r["diagnostics"]["r_hat_max"], 3),
                fmt(r["diagnostics"]["ess_bulk_min"], 0),
                fmt(r["diagnostics"]["ess_tail_min"], 0),
                r["diagnostics"]["divergences"],
                "yes" if r["diagnostics"]["passed"] else "**no**",
            ]
            for r in sorted(diag, key=lambda r: (datasets.index(r["dataset"]), r["split"]))
        ]
        lines += markdown_table(
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
        for r in diag:  # where nutpie could not start and PyMC's sampler ran instead
            if r["diagnostics"].get("fallback"):
                lines.append(f"- {r['dataset']} split {r['split']}: {r['diagnostics']['fallback']}")
        lines += [""] if lines[-1] != "" else []

    lines += _timings(table, datasets, engines + estimators)

    if len(skipped):
        lines += ["## Jobs skipped", "",
                  "A dense engine needs its n x n matrices in memory; where they would not fit "
                  "the job was skipped (a sparse engine takes that n):", ""]  # fmt: skip
        for _, row in skipped.iterrows():
            lines.append(f"- {row['dataset']} split {row['split']} {row['engine']}: "
                         f"{str(row['error']).removeprefix('skipped: ')}")  # fmt: skip
        lines += [""]
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


def _reference_evidence(records: Records, reference: str | None) -> str:
    """Which estimator gave the reference's evidence, and how often: "SMC from EP in 10
    jobs (se median 0.04)"."""
    counts: dict[str, list[float]] = {}
    for r in records:
        if r["engine"] != reference or r.get("log_evidence") is None:
            continue
        ev = reference_estimator(r)
        name = f"{ev['method'].upper()} from {'EP' if ev['start'] == 'ep' else ev['start']}"
        counts.setdefault(name, []).append(r.get("log_evidence_se") or 0.0)
    if not counts:
        return "none computed"
    return "; ".join(
        f"{name} in {len(se)} job{'s' * (len(se) != 1)} (se median {np.median(se):.3f})"
        for name, se in counts.items()
    )


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
                 fmt(float(np.median(se)), 3), fmt(float(se.max()), 3)]
            )  # fmt: skip
    header = ["data set", "estimator", "jobs", "healthy", "made again", "median se", "max se"]
    return [
        "## Gold-standard evidence",
        "",
        "Healthy: standard error at most the estimator's `se_max` after any second estimate "
        "(AIS: a longer anneal; SMC: more runs) where the first was above it (an unhealthy "
        "estimate is degenerate: one run carries the weight, and the estimate is biased low).",
        "",
        *markdown_table(header, rows),
        "",
    ]


def _interval_note(summary: pd.DataFrame, present: Sequence[str]) -> str:
    """What the brackets of the held-out tables are."""
    kinds = set(summary[summary.metric.isin(present)]["interval"])
    if kinds <= {"bootstrap over test cases"}:
        return (
            "Mean over splits; in brackets a 95% bias-corrected percentile bootstrap interval "
            "over the test "
            "cases (each split's test cases resampled within each class, 2000 times, and "
            "rescored; the training folds held fixed, so it shows the variability due to the "
            "test cases). It never leaves the metric's range."
        )
    return (
        "Mean over splits; in brackets a 95% t-interval across splits, clipped to the "
        "metric's range where it left it (an error rate or AUC stays in [0, 1])."
    )


def _timings(table: pd.DataFrame, datasets: Sequence[str], labels: Sequence[str]) -> list[str]:
    """Median time per split of one fit and, apart, of the hyperparameter search."""
    per_job = table.drop_duplicates("job_id")
    rows = []
    for dataset in datasets:
        cells = [dataset]
        for label in labels:
            jobs = per_job[(per_job.dataset == dataset) & (per_job.engine == label)]
            if jobs.empty:
                cells += ["n/a", "n/a"]
                continue
            fit_s = float(np.median(jobs["fit_seconds"]))
            own = (jobs["hyperparameters_from"] == "own").any()
            select = jobs["select_seconds"] if "select_seconds" in jobs else pd.Series([np.nan])
            if not own:
                src = str(jobs["hyperparameters_from"].iloc[0])
                cells += [f"{fit_s:.3g}", f"none ({style(src)[2] if src in labels else src}'s)"]
            elif select.isna().all():  # (records written before the two were separated)
                cells += [f"{fit_s:.3g} (search included)", "in the fit"]
            else:
                cells += [f"{fit_s:.3g}", f"{float(np.median(select)):.3g}"]
        rows.append(cells)
    header = ["data set"]
    for label in labels:
        header += [f"{style(label)[2]}: one fit", f"{style(label)[2]}: selection"]
    return [
        "## Timings",
        "",
        "Median seconds per split (prediction apart): *one fit* at the hyperparameters used, "
        "and *selection*, the hyperparameter search that chose them (only in the jobs that "
        "searched; an engine at another's values did none of its own).",
        "",
        *markdown_table(header, rows),
        "",
    ]
