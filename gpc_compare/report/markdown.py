"""The report's text: ``report.md`` with its findings and tables, from the study's records."""

from __future__ import annotations

import json
import os
import platform
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from ..study import JobRecord, StudyConfig
from ..study.datafiles import data_provenance
from .cases import Paired
from .findings import bound_counts, findings, grid_findings, selection_comparison
from .formatting import fmt, interval_text, markdown_table, reference_estimator
from .notices import absent_from_reference, mcmc_advice, monte_carlo_bounds, not_converged
from .styles import METRICS, REFERENCE_METRICS, style
from .trust import trust_section

#: Figures drawn inside their section, not again under ``## Figures``.
INLINE_FIGURES = frozenset({"trust.png"})

__all__ = ["SECTIONS", "Study", "report_markdown"]

#: Job records as :func:`gpc_compare.study.load_records` returns them.
Records = list[JobRecord]


@dataclass(frozen=True)
class Study:
    """What the report's sections read: the study, its tables and records.

    Attributes
    ----------
    config : StudyConfig
        The study as run (``study.toml``).
    table, jobs : DataFrame
        The tidy results table and the per-job status table (``jobs.csv``).
    summary : DataFrame
        :func:`gpc_compare.metrics.summarize` of ``table``.
    records : list of JobRecord
        The finished jobs' records.
    datasets, engines : sequence of str
        Data set labels and engine labels, in the order shown.
    made : sequence of (str, str)
        The figures written: file name and caption.
    command : str
        The command that ran the study (``gpc-compare run STUDY --output DIR ...``).
    result_dir : Path
        Where its results are (for the header).
    paired : dict
        Paired differences between engines with their intervals
        (:func:`~gpc_compare.report.cases.case_intervals`); without them no difference
        is called a win.
    """

    config: StudyConfig
    table: pd.DataFrame
    jobs: pd.DataFrame
    summary: pd.DataFrame
    records: Records
    datasets: Sequence[str]
    engines: Sequence[str]
    made: Sequence[tuple[str, str]]
    command: str
    result_dir: Path
    paired: Paired

    @property
    def estimators(self) -> list[str]:
        """The gold-standard evidence estimators' labels."""
        return list(self.config.evidence)

    def status(self, status: str) -> pd.DataFrame:
        """The rows of ``jobs`` with this status."""
        return self.jobs[self.jobs.status == status]


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
    paired: Paired | None = None,
) -> str:
    """The text of ``report.md``: the sections of :data:`SECTIONS` in order.

    Parameters
    ----------
    config, table, jobs, summary, records, datasets, engines, made, command, result_dir
        As the attributes of :class:`Study`.
    paired : dict, optional
        As :attr:`Study.paired` (none: no difference is called a win).

    Returns
    -------
    str
        Markdown: header, findings, held-out scores, the comparison with the reference,
        hyperparameters, MCMC diagnostics, timings, unfinished jobs and the figures.
    """
    study = Study(
        config,
        table,
        jobs,
        summary,
        records,
        datasets,
        engines,
        made,
        command,
        Path(result_dir),
        paired or {},
    )
    lines = [line for section in SECTIONS for line in section(study)]
    return "\n".join(lines).rstrip() + "\n"


def _header(study: Study) -> list[str]:
    """The title, the description, and how the study was run: command, versions, data,
    model, hyperparameters, engines, jobs."""
    config, table, jobs = study.config, study.table, study.jobs
    versions = json.loads(table["versions"].iloc[0])
    n_ok = int((jobs.status == "ok").sum())
    skipped = study.status("skipped")  # a dense engine beyond the memory available
    return [
        f"# Study `{config.name}`",
        "",
        config.description.strip(),
        "",
        f"- Command: `{study.command}` (it writes this report too; "
        f"`gpc-compare report {shlex.quote(str(study.result_dir))}` rewrites it)",
        f"- Report written {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} on "
        f"{platform.node() or 'this machine'} ({os.cpu_count()} CPUs)",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
        f"- Data: {', '.join(study.datasets)}; inputs standardised on each training fold; "
        f"{_split_text(config.splits)}",
        *data_provenance(config.datasets),  # data sets read from files, and what was dropped
        _model_text(config),
        _hyperparameter_text(config),
        "- Engines and options: "
        + "; ".join(
            f"{e}{'' if config.methods[e] == e else f' (method {config.methods[e]})'} "
            f"{dict(o) or '(defaults)'}"
            for e, o in config.engines.items()
        ),
        f"- Jobs: {len(jobs)} ({n_ok} finished, {len(study.status('failed'))} failed, "
        f"{len(study.status('not run'))} not run"
        + (f", {len(skipped)} skipped as too large for their engine" if len(skipped) else "")
        + "); "
        f"the table is `results.csv` ({len(table)} rows), per-job status in `jobs.csv`",
        *(f"- Gold-standard evidence: {e} {dict(o)}" for e, o in config.evidence.items()),
        "",
    ]


def _split_text(splits) -> str:
    """How the data were split, in words."""
    if splits["kind"] == "kfold":
        folds = f"{splits['n_splits']}-fold stratified cross-validation"
        repeats = splits.get("n_repeats", 1)
        return folds if repeats == 1 else f"{folds}, {repeats} repeats (each a new shuffle)"
    if splits["kind"] == "holdout":
        r = splits["n_repeats"]
        return (
            f"{r} stratified train/test split{'s' if r != 1 else ''}, test size "
            f"{splits['test_size']}"
        )
    return "every case trains, none is held out (evidence only)"


def _model_text(config: StudyConfig) -> str:
    """The header's model line: kernel(s), likelihood, prior mean."""
    kernel = dict(config.kernel)
    kernels = (
        ", ".join(f"{k} ({v['name']})" for k, v in config.kernels.items()) + " kernels"
        if config.kernels  # a kernel axis
        else f"{kernel['name']} kernel{' (ARD)' if kernel.get('ard') else ''}"
    )
    mean = "constant prior mean (a hyperparameter)" if config.mean is not None else "zero mean"
    return f"- Model: {kernels}, {config.likelihood} likelihood, {mean}"


def _hyperparameter_text(config: StudyConfig) -> str:
    """The header's hyperparameter line: policy, source, grid or restarts, seed."""
    return (
        f"- Hyperparameters: policy `{config.policy}`"
        + (f", source `{config.source}`" if config.source else "")
        + (
            f" ({len(config.grid)} grid points)"
            if config.grid
            else f", {config.n_restarts} optimiser restarts"
        )
        + f"; study seed {config.seed}"
    )


def _findings(study: Study) -> list[str]:
    """``## Findings``: the grid's maxima, or the plain statements of :func:`findings`."""
    found = (
        grid_findings(study.table, study.datasets, [*study.engines, *study.estimators])
        if study.config.grid
        else findings(
            study.summary,
            study.table,
            study.records,
            study.datasets,
            study.engines,
            study.config.reference,
            study.paired,
        )
    )
    return ["## Findings", "", *found, ""]


def _cell(summary: pd.DataFrame, dataset: str, engine: str, metric: str) -> str | None:
    """A summary row as the tables show it ("mean [low, high]"), or None."""
    s = summary[
        (summary.dataset == dataset) & (summary.engine == engine) & (summary.metric == metric)
    ]
    return None if s.empty else interval_text(s.iloc[0])


def _held_out(study: Study) -> list[str]:
    """``## Held-out scores``: a table per data set, engines by metrics."""
    summary = study.summary
    present = [m for m in METRICS if m in set(summary.metric)]
    if not present:
        return []
    lines = ["## Held-out scores", "", _interval_note(summary, present), ""]
    for dataset in study.datasets:
        lines += [f"### {dataset}", ""]
        rows = [
            [style(engine)[2]] + [_cell(summary, dataset, engine, m) or "n/a" for m in present]
            for engine in study.engines
        ]
        lines += markdown_table(["engine", *[METRICS[m][0] for m in present]], rows) + [""]
    return lines


def _against_reference(study: Study) -> list[str]:
    """``## Against the reference``: latent moments, marginal KL, evidence gap and class
    probabilities of each engine against the reference at the same hyperparameters."""
    summary, reference = study.summary, study.config.reference
    ref_present = [m for m in REFERENCE_METRICS if m in set(summary.metric)]
    if reference not in study.engines or not (ref_present or len(study.engines) > 1):
        return []
    rows, shown = [], set()
    for dataset in study.datasets:
        for engine in study.engines:
            cells = [_cell(summary, dataset, engine, m) for m in ref_present]
            if any(c is not None for c in cells):
                rows.append([dataset, style(engine)[2], *(c or "n/a" for c in cells)])
                shown.add(engine)
    header = ["data set", "engine", *[REFERENCE_METRICS[m] for m in ref_present]]
    table = markdown_table(header, rows) + [""] if rows else []
    return [
        f"## Against the reference ({reference}) at the same hyperparameters",
        "",
        "Latent moments at the training inputs (every class's, with C classes); "
        "KL(reference ‖ approximation) between the Gaussian marginals, averaged over cases; "
        "evidence gap = the engine's log evidence minus the reference's estimate ("
        + _reference_evidence(study.records, reference)
        + "); with C classes, the class probabilities at the test inputs.",
        "",
        *table,
        *([] if study.config.grid else absent_from_reference(study, sorted(shown))),
    ]


def _trust(study: Study) -> list[str]:
    """``## Can this approximation be trusted here?`` (:mod:`.trust`), when the study ran
    the Pareto-k check (``psis = true``)."""
    figure = next((name for name, _ in study.made if name == "trust.png"), None)
    return trust_section(
        study.records,
        study.summary,
        study.datasets,
        study.engines,
        study.config.reference,
        figure=figure,
    )


def _evidence_section(study: Study) -> list[str]:
    """``## Gold-standard evidence``, when the study runs estimators."""
    if not study.estimators:
        return []
    return _evidence_health(study.records, study.datasets, study.estimators)


def _hyperparameters(study: Study) -> list[str]:
    """``## Hyperparameters used`` (not for a grid study): per data set and engine the mean
    log values, who selected them, bounds hit, mean evidence; then the selections
    compared."""
    if study.config.grid:
        return []
    lines = [
        "## Hyperparameters used",
        "",
        "Mean over splits of the log values; *at a bound*: selected at (within 0.01 of) "
        "one of the optimiser's bounds, on how many splits.",
        "",
    ]
    rows = []
    per_job = study.table.drop_duplicates("job_id")
    for dataset in study.datasets:
        for engine in study.engines:
            recs = [r for r in study.records if r.dataset == dataset and r.engine == engine]
            if recs:
                jobs_here = per_job[(per_job.dataset == dataset) & (per_job.engine == engine)]
                rows.append(_hyperparameter_row(dataset, engine, recs, jobs_here))
    if rows:
        header = [
            "data set",
            "engine",
            "selected by",
            "hyperparameters",
            "at a bound",
            "log evidence (mean)",
        ]
        lines += markdown_table(header, rows) + [""]
        lines += selection_comparison(study.table, study.records, study.datasets, study.engines)
    return lines


def _hyperparameter_row(dataset: str, engine: str, recs: Records, jobs_here) -> list[str]:
    """One engine's row of the hyperparameters table on one data set."""
    names = recs[0].hyperparameters.names
    vals = np.mean([r.hyperparameters.values for r in recs], axis=0)
    src = recs[0].hyperparameters.origin
    hp = ", ".join(f"{n} {fmt(float(v))}" for n, v in zip(names, vals, strict=True))
    ev = [r.log_evidence for r in recs if r.log_evidence is not None]
    hits = bound_counts(jobs_here) if "at_bound" in jobs_here else {}
    flag = ", ".join(f"**{n} {side}** ({k} of {len(jobs_here)})" for (n, side), k in hits.items())
    return [dataset, style(engine)[2], src, hp, flag or "no", fmt(np.mean(ev), 2) if ev else "n/a"]


def _mcmc_diagnostics(study: Study) -> list[str]:
    """``## MCMC diagnostics``: R-hat, ESS and divergences of each sampled fit, and where
    PyMC's sampler stood in for nutpie."""
    diag = [r for r in study.records if r.diagnostics is not None]
    if not diag:
        return []
    order = sorted(diag, key=lambda r: (study.datasets.index(r.dataset), r.split))
    rows = [
        [
            r.dataset,
            r.split,
            fmt(r.diagnostics.r_hat_max, 3),
            fmt(r.diagnostics.ess_bulk_min, 0),
            fmt(r.diagnostics.ess_tail_min, 0),
            r.diagnostics.divergences,
            "yes" if r.diagnostics.passed else "**no**",
        ]
        for r in order
    ]
    header = [
        "data set",
        "split",
        "max R-hat",
        "min bulk ESS",
        "min tail ESS",
        "divergences",
        "passed",
    ]
    lines = ["## MCMC diagnostics", "", *markdown_table(header, rows), "", *mcmc_advice(study)]
    for r in diag:  # where nutpie could not start and PyMC's sampler ran instead
        if r.diagnostics.fallback:
            lines.append(f"- {r.dataset} split {r.split}: {r.diagnostics.fallback}")
    return lines + ([""] if lines[-1] != "" else [])


def _timings_section(study: Study) -> list[str]:
    """``## Timings``."""
    return _timings(study.table, study.datasets, [*study.engines, *study.estimators])


def _skipped(study: Study) -> list[str]:
    """``## Jobs skipped``: too large for a dense engine."""
    skipped = study.status("skipped")
    if not len(skipped):
        return []
    lines = [
        "## Jobs skipped",
        "",
        "A dense engine needs its n x n matrices in memory; where they would not fit "
        "the job was skipped (a sparse engine takes that n):",
        "",
    ]
    for _, row in skipped.iterrows():
        lines.append(
            f"- {row['dataset']} split {row['split']} {row['engine']}: "
            f"{str(row['error']).removeprefix('skipped: ')}"
        )
    return lines + [""]


def _unfinished(study: Study) -> list[str]:
    """``## Jobs that did not finish``: failed or not run, with their errors."""
    failed, not_run = study.status("failed"), study.status("not run")
    if not len(failed) and not len(not_run):
        return []
    lines = ["## Jobs that did not finish", ""]
    for _, row in pd.concat([failed, not_run]).iterrows():
        err = row["error"] if isinstance(row["error"], str) and row["error"] else row["status"]
        lines.append(
            f"- {row['dataset']} split {row['split']} {row['engine']} (`{row['job_id']}`): {err}"
        )
    return lines + ["", "Tracebacks are in `jobs/<job_id>.json`; rerun the study to retry.", ""]


def _figures(study: Study) -> list[str]:
    """``## Figures``: each figure written, under its caption."""
    lines = ["## Figures", ""]
    for name, caption in study.made:
        if name in INLINE_FIGURES:  # (drawn in its own section)
            continue
        lines += [f"### {caption}", "", f"![{caption}](figures/{name})", ""]
    return lines


#: The report's sections in order: each takes the :class:`Study` and returns its lines.
SECTIONS = (
    _header,
    _findings,
    _held_out,
    _against_reference,
    _trust,
    _evidence_section,
    monte_carlo_bounds,
    _hyperparameters,
    _mcmc_diagnostics,
    not_converged,
    _timings_section,
    _skipped,
    _unfinished,
    _figures,
)


def _reference_evidence(records: Records, reference: str | None) -> str:
    """Which estimator gave the reference's evidence, and how often: "SMC from EP in 10
    jobs (se median 0.04)"."""
    counts: dict[str, list[float]] = {}
    for r in records:
        if r.engine != reference or r.log_evidence is None:
            continue
        method, start = reference_estimator(r)
        name = f"{method.upper()} from {'EP' if start == 'ep' else start}"
        counts.setdefault(name, []).append(r.log_evidence_se or 0.0)
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
            recs = [r for r in records if r.dataset == dataset and r.engine == label]
            if not recs:
                continue
            se = np.array([r.log_evidence_se for r in recs], dtype=float)
            healthy = sum(bool(r.convergence.converged) for r in recs)
            rechecked = sum(r.evidence.recheck is not None for r in recs)
            rows.append(
                [
                    dataset,
                    label,
                    len(recs),
                    healthy,
                    rechecked,
                    fmt(float(np.median(se)), 3),
                    fmt(float(se.max()), 3),
                ]
            )
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
