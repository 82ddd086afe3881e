"""Figures and a written summary of a study's results (``gpc-compare report results/NAME``).

:func:`write_report` reads the job records and the tidy table under ``results/NAME`` and
writes ``report.md`` (:mod:`.markdown`) and ``figures/*.png`` (:mod:`.figures`: held-out
metrics, reliability diagrams, latent moments against the reference engine, the Pareto-k
check, evidence, timings, MCMC rank plots). :func:`summarize` (the intervals across
splits) lives in :mod:`gpc_compare.metrics` and is re-exported here.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import pandas as pd

from ..metrics import against_reference, summarize
from ..study import JobRecord, StudyConfig, assemble, load_study, read_records
from ..study.output import atomic_write, output_folder
from .cases import case_intervals
from .figures import (
    plot_evidence,
    plot_latent,
    plot_metrics,
    plot_reliability,
    plot_timings,
    rank_plots,
)
from .findings import reference_mcse
from .kernels import by_kernel, kernel_section
from .markdown import report_markdown
from .profiles import evidence_profiles
from .styles import ENGINE_STYLE, METRICS, REFERENCE_METRICS, set_styles
from .trust import TRUST_CAPTION
from .trust_figure import plot_trust

__all__ = [
    "ENGINE_STYLE",
    "METRICS",
    "REFERENCE_METRICS",
    "rewrite_report_text",
    "run_command",
    "study_differences",
    "study_summary",
    "summarize",
    "write_report",
]


@dataclass
class _Loaded:
    """A study's results as the report reads them (with a kernel axis, each data set
    label is ``"DATASET / KERNEL"`` in ``table``, ``records`` and ``datasets``)."""

    table: pd.DataFrame
    jobs: pd.DataFrame
    records: list[JobRecord]
    datasets: list[str]
    plain_table: pd.DataFrame  # before the kernel axis split the data sets
    plain_datasets: list[str]
    summary: pd.DataFrame
    paired: dict
    unreadable: list[str]  # damaged job records, by file name and reason


def _load(result_dir: Path, config: StudyConfig) -> _Loaded:
    """The table, current finished records and the summary with its intervals."""
    table = assemble(result_dir, config, write_empty=False)  # (never replaced by no rows)
    if table.empty:
        raise ValueError(
            f"{result_dir}: no job of its study.toml has finished; nothing to report (and "
            "results.csv is left as it was)"
        )
    jobs = pd.read_csv(result_dir / "jobs.csv")
    current = set(jobs["job_id"])
    usable, damaged = read_records(result_dir)
    records = [r for r in usable.values() if r.id in current and r.ok]
    plain = [d.label for d in config.datasets]
    plain_table, datasets = table, plain
    if config.kernels:  # a kernel axis: every section and figure per data set and kernel
        table, records, datasets = by_kernel(table, records, plain, list(config.kernels))
    summary = summarize(table)  # t-intervals across splits, clipped to each metric's range
    paired: dict = {}
    if config.splits["kind"] != "none":  # held-out scores: a bootstrap over test cases
        cases, paired = case_intervals(records, datasets, list(config.engines))
        if not cases.empty:
            key = ["dataset", "engine", "metric"]
            keep = summary.set_index(key).index.difference(cases.set_index(key).index)
            summary = pd.concat([summary.set_index(key).loc[keep].reset_index(), cases])
            summary = summary.reset_index(drop=True)
    if config.kernels:  # (the bootstrap's rows have the kernel in the data set label only)
        summary["kernel"] = summary["dataset"].str.rsplit(" / ", n=1).str[1]
    unreadable = [str(d) for d in damaged]
    return _Loaded(table, jobs, records, datasets, plain_table, plain, summary, paired, unreadable)


def study_summary(result_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """Each metric's mean over splits and its 95% interval, as the report gives them.

    The held-out scores get a bias-corrected percentile bootstrap over the test cases
    (``interval`` = ``"bootstrap over test cases"``: :mod:`.cases`); the other metrics a
    t-interval across splits clipped to the metric's range
    (:func:`gpc_compare.metrics.summarize`). With a kernel axis the data set is
    ``"DATASET / KERNEL"``.

    Parameters
    ----------
    result_dir : path
        ``OUTPUT/NAME`` as written by :func:`gpc_compare.study.run_study`.

    Returns
    -------
    DataFrame
        Columns ``dataset, engine, metric, n_splits, mean, sd, low, high, interval``.
    """
    result_dir = Path(result_dir)
    return _load(result_dir, load_study(result_dir / "study.toml")).summary


def study_differences(result_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """Every pair of engines compared on every held-out score, as the report's findings
    compare them: the corrected resampled t-interval over the splits both finished
    (:func:`gpc_compare.metrics.paired_difference`; Nadeau and Bengio 2003).

    Parameters
    ----------
    result_dir : path
        ``OUTPUT/NAME`` as written by :func:`gpc_compare.study.run_study`.

    Returns
    -------
    DataFrame
        Columns ``dataset, engine_a, engine_b, metric, difference`` (the mean of a - b over
        the splits), ``low, high`` (its 95% interval), ``n_splits``, ``verdict`` (``"a
        better"``, ``"b better"`` where the interval excludes zero, else ``"no
        difference"``), ``reference_mcse`` and ``note``. Each pair appears in both orders.
        Where one of the pair is the study's sampling reference and its records carry the
        Monte Carlo standard error of the mean log predictive, ``reference_mcse`` is that
        error for the mean over the splits (else NaN) and the verdict is
        :func:`gpc_compare.metrics.against_reference`'s: ``"indistinguishable"`` or
        ``"the reference cannot decide"`` within twice it, as the findings say.
    """
    result_dir = Path(result_dir)
    config = load_study(result_dir / "study.toml")
    loaded = _load(result_dir, config)
    ref = config.reference
    mcse = reference_mcse(loaded.records, ref)
    rows = []
    for (dataset, a, b, metric), p in loaded.paired.items():
        against = ref in (a, b) and a != b and metric == "mean_log_predictive"
        error = mcse.get(dataset, float("nan")) if against else float("nan")
        verdict = against_reference(p, error)
        rows.append([dataset, a, b, metric, p.mean, p.lower, p.upper, p.n_pairs, verdict])
        rows[-1] += [error, p.note]
    columns = ["dataset", "engine_a", "engine_b", "metric", "difference", "low", "high"]
    return pd.DataFrame(rows, columns=[*columns, "n_splits", "verdict", "reference_mcse", "note"])


def write_report(
    result_dir: str | os.PathLike[str],
    *,
    profiles: bool | None = None,
    progress: TextIO | None = None,
) -> Path:
    """Write ``report.md`` and ``figures/*.png`` for the study results in ``result_dir``.

    Parameters
    ----------
    result_dir : path
        ``results/NAME`` as written by :func:`gpc_compare.study.run_study` (with its
        ``study.toml`` and ``jobs/``).
    profiles : bool, optional
        Draw the evidence profiles (refits along each hyperparameter, kept in
        ``profiles.json`` so that a rerun refits nothing: :mod:`.profiles`); default:
        the study's ``evidence_profiles`` (true, except for ``gc.compare``'s studies).
    progress : text stream, optional
        Where a line per step goes (e.g. ``sys.stderr``, as the command line does).

    Returns
    -------
    Path
        The path of ``report.md``. Job records that cannot be read (damaged) are listed
        at its end, and the rest are reported.

    Raises
    ------
    ValueError
        When ``result_dir`` holds no study results (nothing is written then: a
        ``results.csv`` with rows is never replaced by an empty one), or ``figures/`` is a
        symbolic link. Files are written by replacing their names, never through a link
        (:mod:`gpc_compare.study.output`).
    """
    result_dir = Path(result_dir)
    if not (result_dir / "study.toml").exists():
        raise ValueError(
            f"{result_dir} holds no study results (no study.toml): "
            "run `gpc-compare run studies/NAME.toml` first"
        )
    say = _say(progress, result_dir.name)
    config = load_study(result_dir / "study.toml")
    study = _load(result_dir, config)
    table, records, datasets = study.table, study.records, study.datasets
    say(f"{len(records)} finished job(s) read")
    engines = list(config.engines)
    estimators = list(config.evidence)  # gold-standard evidence jobs, shown beside the engines
    set_styles(engines + estimators)
    held_out = config.splits["kind"] != "none"  # (kind "none": evidence only, no test set)
    summary = study.summary
    figures = output_folder(result_dir / "figures")  # (refused if a link)
    made: list[tuple[str, str]] = []

    if held_out:
        plot_metrics(summary, datasets, engines, figures / "metrics.png")
        made.append(("metrics.png", "Held-out scores per engine and data set"))
        plot_reliability(records, datasets, engines, figures / "reliability.png")
        made.append(("reliability.png", "Reliability diagrams"))
    if config.reference is not None and held_out:
        name = f"latent_vs_{config.reference}.png"
        if plot_latent(records, datasets, engines, config.reference, figures / name):
            made.append((name, f"Latent moments against {config.reference}"))
    if plot_trust(records, table, datasets, engines, config.reference, figures / "trust.png"):
        made.append(("trust.png", TRUST_CAPTION))
    say("figures: held-out scores, reliability, latent moments and trust drawn")
    drawn = []
    if config.evidence_profiles if profiles is None else profiles:
        cache = result_dir / "profiles.json"
        drawn = evidence_profiles(
            config, records, datasets, engines, cache=cache, progress=progress
        )
    if plot_evidence(
        records, drawn, datasets, engines + estimators, config.methods, figures / "evidence.png"
    ):
        made.append(("evidence.png", "Log evidence along each hyperparameter"))
    plot_timings(table, datasets, engines + estimators, figures / "timings.png")
    made.append(("timings.png", "Fitting time"))
    caption = rank_plots(result_dir, records, datasets)
    if caption is not None:
        made.append(("mcmc_diagnostics.png", caption))

    say("figures: evidence, timings and MCMC diagnostics drawn; writing report.md")
    text = _report_text(result_dir, config, study, made)
    path = result_dir / "report.md"
    atomic_write(path, text.encode())  # (a link there is replaced, not followed)
    return path


def _say(stream: TextIO | None, name: str):
    """A function printing one progress line of the report of ``name`` to ``stream``."""

    def say(line: str) -> None:
        if stream is not None:
            print(f"report {name}: {line}", file=stream, flush=True)

    return say


def _report_text(
    result_dir: Path, config: StudyConfig, study: _Loaded, made: list[tuple[str, str]]
) -> str:
    """report.md's text for the loaded study, listing the figures ``made``."""
    engines = list(config.engines)
    command = run_command(result_dir, config.name)
    text = report_markdown(
        config,
        study.table,
        study.jobs,
        study.summary,
        study.records,
        study.datasets,
        engines,
        made,
        command,
        result_dir,
        study.paired,
    )
    if config.kernels:  # the kernels compared, after the findings
        section = "\n".join(
            kernel_section(study.plain_table, study.plain_datasets, list(config.kernels), engines)
        )
        at = text.find("\n## ", text.find("## Findings") + 1)
        text = text + "\n" + section if at < 0 else text[: at + 1] + section + text[at:]
    if study.unreadable:  # said, not hidden: their jobs show as "not run" in the table
        text += (
            "\n## Records that could not be read\n\n"
            + "".join(f"- `{line}`\n" for line in study.unreadable)
            + f"\nRerun `{command}` to recompute their jobs.\n"
        )
    return text


def rewrite_report_text(result_dir: str | os.PathLike[str]) -> Path:
    """Rewrite ``results.csv`` and ``report.md`` from the job records, listing the figures
    the present report lists without redrawing them (for a change to the table's columns
    or the report's words; :func:`write_report` draws the figures too).

    Parameters
    ----------
    result_dir : path
        ``OUTPUT/NAME`` with a ``report.md``.

    Returns
    -------
    Path
        The path of ``report.md``.
    """
    result_dir = Path(result_dir)
    config = load_study(result_dir / "study.toml")
    old = (result_dir / "report.md").read_text()
    made = [(f, c) for c, f in re.findall(r"!\[(.*?)\]\(figures/(.*?)\)", old)]
    text = _report_text(result_dir, config, _load(result_dir, config), made)
    path = result_dir / "report.md"
    atomic_write(path, text.encode())  # (a link there is replaced, not followed)
    return path


def run_command(result_dir: Path, name: str) -> str:
    """The command that ran the study in ``result_dir``, as run (``run.json``): the study
    file, ``--output`` and any ``--workers`` or ``--scheduler``, quoted for a shell.

    Parameters
    ----------
    result_dir : Path
        ``OUTPUT/NAME``.
    name : str
        The study's name (for a study file that ``run.json`` does not record).

    Returns
    -------
    str
        ``gpc-compare run STUDY --output OUTPUT [...]``.
    """
    try:
        info = json.loads((result_dir / "run.json").read_text())
    except (OSError, ValueError, RecursionError):
        info = {}
    info = info if isinstance(info, dict) else {}
    study_file = info.get("study_file") or str(result_dir / "study.toml")
    output = info.get("output") or str(result_dir.parent)
    words = ["gpc-compare", "run", study_file, "--output", output]
    if info.get("workers"):
        words += ["--workers", str(info["workers"])]
    if info.get("scheduler"):
        words += ["--scheduler", str(info["scheduler"])]
    return shlex.join(words)
