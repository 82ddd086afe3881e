"""The tidy table: one row per data set, kernel, split, engine and metric, from the job records."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import metrics
from ..hyperparameters import MEAN_BOUNDS, at_bounds
from .config import StudyConfig, load_study
from .jobs import Job, expand
from .kernels_config import kernel_column
from .multiclass import probability_comparison
from .output import atomic_write
from .problem import make_kernel
from .record import JobRecord
from .records import load_records

__all__ = [
    "TABLE_COLUMNS",
    "TIMING_COLUMNS",
    "assemble",
    "converged",
    "convergence_warnings",
    "same_hyperparameters",
]

#: Columns of the tidy table, in order (``pandas.read_csv`` reads it without help).
TABLE_COLUMNS = [
    "dataset",
    "kernel",
    "split",
    "engine",
    "likelihood",
    "metric",
    "value",
    "mcse",
    "policy",
    "hyperparameters",
    "hyperparameters_from",
    "at_bound",
    "converged",
    "iterations",
    "fit_seconds",
    "select_seconds",
    "predict_seconds",
    "n_train",
    "n_test",
    "seed",
    "job_id",
    "versions",
]
#: Columns that hold wall-clock times: everything else is reproducible from the seeds.
TIMING_COLUMNS = ["fit_seconds", "select_seconds", "predict_seconds"]


def assemble(
    result_dir: str | os.PathLike[str],
    config: StudyConfig | None = None,
    *,
    write_empty: bool = True,
) -> pd.DataFrame:
    """Build (and write) the tidy table ``results.csv`` and ``jobs.csv`` from the job records.

    Parameters
    ----------
    result_dir : path
        ``results/NAME``.
    config : StudyConfig, optional
        The study; read from ``result_dir/study.toml`` when omitted. Only the records of
        its current jobs are used.
    write_empty : bool
        False: a table without rows is returned, not written (``results.csv`` and
        ``jobs.csv`` are left as they are; the report asks so, and never replaces a
        table by an empty one).

    Returns
    -------
    pandas.DataFrame
        One row per data set, kernel, split, engine and metric, columns
        :data:`TABLE_COLUMNS` (``kernel``: the label of a ``[kernels.LABEL]`` axis, else
        the kernel's name).
        Metrics: the held-out scores of :func:`gpc_compare.metrics.score`,
        ``log_evidence`` (the engine's, on the training fold), and, against the
        reference engine at the same hyperparameters, the latent errors,
        ``marginal_kl_mean`` and ``evidence_gap`` (with ``evidence_gap_z``); with C
        classes (softmax) the scores of :func:`gpc_compare.metrics.score_multiclass` and
        the class-probability differences (``proba_diff_max``, ...); with ``psis = true``
        the Pareto-k check of each Gaussian approximation (``pareto_k``,
        ``is_log_evidence``, ``is_log_evidence_se``, ``is_mean_log_predictive``,
        ``is_mean_log_predictive_se``, ``psis_ess``). ``mcse``: a sampling reference's Monte
        Carlo standard error of the row's value where it has one (``mean_log_predictive``),
        else empty.
    """
    result_dir = Path(result_dir)
    if config is None:
        config = load_study(result_dir / "study.toml")
    jobs = expand(config)
    records = load_records(result_dir)
    rows: list[dict[str, Any]] = []
    job_rows = []
    current = {j.id: records.get(j.id) for j in jobs}
    for job in jobs:
        rec = current[job.id]
        job_rows.append(_job_row(job, rec))
        if rec is None or not rec.ok:
            continue
        values = _values(rec)
        try:
            values.update(_against_reference(job, rec, jobs, current, config))
        except ValueError as exc:  # e.g. a non-finite evidence: no comparison, and say so
            job_rows[-1]["warnings"] += f"; comparison with the reference skipped: {exc}"
        bound = _at_bound(job, rec)
        for metric, value in values.items():
            kernel = kernel_column(job.kernel_label, job.kernel)
            rows.append(_row(rec, metric, value, kernel, bound))
    data = pd.DataFrame(rows, columns=TABLE_COLUMNS).to_csv(index=False).encode()
    if rows or write_empty:
        atomic_write(result_dir / "results.csv", data)
        atomic_write(result_dir / "jobs.csv", pd.DataFrame(job_rows).to_csv(index=False).encode())
    # the table as results.csv reads back (empty cells NaN), whichever route asks for it
    return pd.read_csv(io.BytesIO(data))


def _job_row(job: Job, rec: JobRecord | None) -> dict[str, Any]:
    """A job's row of ``jobs.csv``: its status, error, seconds and warnings (with what the
    reader changed in its record)."""
    return {
        "job_id": job.id,
        "dataset": job.dataset.label,
        "kernel": kernel_column(job.kernel_label, job.kernel),
        "split": job.split,
        "engine": job.engine,
        "status": "not run" if rec is None else rec.status,
        "error": "" if rec is None else rec.error or "",
        "seconds": np.nan
        if rec is None or rec.finished is None or rec.started is None
        else rec.finished - rec.started,
        "warnings": "" if rec is None else "; ".join([*rec.warnings, *rec.notes]),
    }


#: The Pareto-k check's record fields and their metric names in the table.
_PSIS_METRICS = {
    "pareto_k": "pareto_k",
    "log_evidence": "is_log_evidence",
    "log_evidence_se": "is_log_evidence_se",
    "mean_log_predictive": "is_mean_log_predictive",
    "mean_log_predictive_se": "is_mean_log_predictive_se",
    "ess": "psis_ess",
}  # (its seconds stay in the record, as wall-clock times are not metrics)


def _values(rec: JobRecord) -> dict[str, float | None]:
    """A finished job's metrics as the table names them: its held-out scores, evidence,
    LOO predictive, the search's outcome, an estimator's health, MCMC's diagnostics."""
    values: dict[str, float | None] = dict(rec.metrics)
    if rec.log_evidence is not None:
        values["log_evidence"] = rec.log_evidence
    if rec.loo_log_predictive is not None:
        values["loo_log_predictive"] = rec.loo_log_predictive
    if rec.optimizer is not None:
        values["optimizer_converged"] = float(rec.optimizer.converged)
        values["optimizer_evaluations"] = rec.optimizer.evaluations
    if rec.evidence is not None:  # a gold-standard evidence estimator and its health
        values.update(_evidence_values(rec))
    for key, name in _PSIS_METRICS.items():  # the Pareto-k check of an approximation
        if key in rec.psis:
            values[name] = rec.psis[key]
    if rec.diagnostics is not None:
        values["r_hat_max"] = rec.diagnostics.r_hat_max
        values["ess_bulk_min"] = rec.diagnostics.ess_bulk_min
        values["divergences"] = rec.diagnostics.divergences
    return values


def _at_bound(job: Job, rec: JobRecord) -> str:
    """The selected hyperparameters at one of the optimiser's bounds, as ``"NAME upper"``
    joined by "; " (empty for fixed or grid values, or when none is at a bound)."""
    hp = rec.hyperparameters
    if hp.origin in ("fixed", "grid") or not hp.names:
        return ""
    # (a sparse engine's fitted inducing inputs, ``inducing[j,k]``, last, have no bounds)
    bounded = [i for i, name in enumerate(hp.names) if not name.startswith("inducing[")]
    names = [hp.names[i] for i in bounded]
    values = [hp.values[i] for i in bounded]
    bounds = make_kernel(job.kernel, rec.d).bounds
    if len(names) > bounds.shape[0]:  # the constant prior mean
        bounds = np.vstack([bounds, [MEAN_BOUNDS]])
    hits = at_bounds(names, values, bounds[: len(names)])
    return "; ".join(f"{name} {side}" for name, side, _ in hits)


def _row(
    rec: JobRecord, metric: str, value: float | None, kernel: str, at_bound: str = ""
) -> dict[str, Any]:
    hp, conv, timings = rec.hyperparameters, rec.convergence, rec.timings
    return {
        "dataset": rec.dataset,
        "kernel": kernel,  # (from the job: records written before the column lack it)
        "split": rec.split,
        "engine": rec.engine,
        "likelihood": rec.likelihood,
        "metric": metric,
        "value": np.nan if value is None else float(value),
        "mcse": rec.mcse.get(metric, np.nan),
        "policy": rec.policy,
        "hyperparameters": json.dumps(hp.as_dict()),
        "hyperparameters_from": hp.origin,
        "at_bound": at_bound,
        "converged": converged(rec),
        "iterations": conv.iterations,
        "fit_seconds": timings.fit_seconds,
        "select_seconds": np.nan if timings.select_seconds is None else timings.select_seconds,
        "predict_seconds": timings.predict_seconds,
        "n_train": rec.n_train,
        "n_test": rec.n_test,
        "seed": rec.seed,
        "job_id": rec.id,
        "versions": json.dumps(dict(rec.versions), sort_keys=True),
    }


#: What an engine's warning says when a fit stopped short of its tolerance: "not
#: converged after 1000 iterations" (SVGP, VB, KL, EP and FITC-EP, Laplace's Newton
#: iteration), "stalled at iteration ..." (Newton), or a sampler's failed diagnostics.
_NOT_CONVERGED = re.compile(r"\bnot converged\b|\bstalled\b|MCMC diagnostics")


def convergence_warnings(rec: JobRecord) -> list[str]:
    """The warnings of a job that say a fit did not converge (any fit the job made: the
    last one or one during the hyperparameter search), as recorded."""
    return [w for w in rec.warnings if _NOT_CONVERGED.search(w)]


def converged(rec: JobRecord) -> bool:
    """The table's ``converged``: the engine's own test of its last fit passed, and no fit
    of the job warned that it stopped short (:func:`convergence_warnings`). A job whose
    engine warned is not converged, whatever its last fit says. A gold-standard evidence
    job's is its health alone (an EP start that stopped short is only its proposal)."""
    if rec.evidence is not None:
        return bool(rec.convergence.converged)
    return bool(rec.convergence.converged) and not convergence_warnings(rec)


def _against_reference(job, rec, jobs, current, config) -> dict[str, float]:
    """Latent errors, marginal KL and evidence gap against the reference on this split (and
    grid point), for an engine that ran at the reference's hyperparameters. Latent moments
    are compared where both records hold them (none without a test set), evidences where
    both have one; gold-standard evidence jobs are not compared."""
    if config.reference is None or job.engine == config.reference or job.kind != "engine":
        return {}
    ref_job = next(
        (
            j
            for j in jobs
            if j.engine == config.reference
            and j.dataset.label == job.dataset.label
            and j.kernel_label == job.kernel_label
            and j.split == job.split
            and j.point == job.point
        ),
        None,
    )
    ref = None if ref_job is None else current.get(ref_job.id)
    if ref is None or not ref.ok:
        return {}
    if not same_hyperparameters(rec, ref, rtol=0.0, atol=1e-10):  # comparisons need the same values
        return {}
    out: dict[str, float] = {}
    if rec.arrays is not None and ref.arrays is not None:
        a, r = rec.arrays, ref.arrays
        out.update(
            metrics.latent_errors(
                a.mean_train, a.var_train, ref_mean=r.mean_train, ref_var=r.var_train
            )
        )
        out.update(probability_comparison(a, r))  # C classes: class probabilities too
    if rec.log_evidence is not None and ref.log_evidence is not None:
        out.update(
            metrics.evidence_gap(
                rec.log_evidence, ref_log_evidence=ref.log_evidence, ref_se=ref.log_evidence_se
            )
        )
    return out


def _evidence_values(rec: JobRecord) -> dict[str, float | None]:
    """An evidence estimator's rows: its estimate, standard error and health."""
    ev = rec.evidence
    out: dict[str, float | None] = {
        "log_evidence_se": rec.log_evidence_se,
        "evidence_temperatures": ev.runs[-1].temperatures,
        "evidence_rechecked": float(ev.recheck is not None),
        "evidence_healthy": float(rec.convergence.converged),
    }
    if ev.recheck is not None:
        out["log_evidence_first"] = ev.runs[0].log_evidence
        out["log_evidence_first_se"] = ev.runs[0].se
    if ev.start_log_evidence is not None:
        out["start_log_evidence"] = ev.start_log_evidence
    return out


def same_hyperparameters(
    a: JobRecord, b: JobRecord, *, rtol: float = 1e-5, atol: float = 1e-8
) -> bool:
    """Whether two finished jobs ran at the same hyperparameters: the same names, and
    values equal within :func:`numpy.allclose`'s ``rtol`` and ``atol``."""
    ha, hb = a.hyperparameters, b.hyperparameters
    if ha is None or hb is None or ha.names != hb.names:
        return False
    return bool(np.allclose(ha.values, hb.values, rtol=rtol, atol=atol))
