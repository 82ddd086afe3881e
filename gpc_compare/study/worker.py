"""One job's work: load its problem, fit its engine, score it, and return its record.

The worker asks the posterior for the facts a study stores (:meth:`Posterior.record`) and
the engine for what it can do (:func:`gpc_compare.engines.capabilities`); it never tests
an engine's name.
"""

from __future__ import annotations

import platform
import time
import traceback
import warnings
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from .. import datasets as gc_datasets
from .. import metrics
from .._fit import fit
from .._validation import dense_memory_problem
from ..annealing.estimate import EvidenceEstimate, EvidenceOptions, estimate
from ..engines import capabilities, get_engine
from ..evidence import prepare
from ..posterior import SamplePosterior, SoftmaxSamplePosterior
from .evidence_config import evidence_options
from .jobs import Job
from .multiclass import multiclass_record
from .problem import at_point, load_dataset, make_kernel, split_indices, stable_seed
from .record import JobRecord
from .records import job_record

__all__ = ["run_job"]


def run_job(job: Job, shared: JobRecord | None = None) -> JobRecord:
    """Run one job and return its record (never raises for a failure of the fit).

    Parameters
    ----------
    job : Job
    shared : JobRecord, optional
        The record of ``job.depends_on`` (its hyperparameters are used).

    Returns
    -------
    JobRecord
        Status ``"ok"``, ``"failed"`` (with the error and its traceback) or ``"skipped"``
        (too large for its engine), the job's identity, and for a finished job its
        metrics, hyperparameters (names and log values), log evidence (and its se),
        convergence, MCMC diagnostics, timings, per-case arrays for the report (test labels,
        probabilities, log predictive probabilities; latent moments at the training and
        test inputs) and package versions. MCMC results carry their InferenceData as NetCDF
        bytes (``netcdf``: written next to the record, not into it).
    """
    from threadpoolctl import threadpool_limits

    stamps = {"host": platform.node(), "started": time.time()}
    try:
        # One BLAS thread per job: the jobs themselves run in parallel, and OpenBLAS
        # threads competing with other processes slow everything down (see conftest).
        with threadpool_limits(limits=1, user_api="blas"):
            facts = dict((_run if job.kind == "engine" else _run_evidence)(job, shared))
        netcdf = facts.pop("_idata_netcdf", None)
        return job_record(job, "ok", facts, **stamps, finished=time.time(), netcdf=netcdf)
    except _Skipped as why:  # too large for the engine: said in the report, not an error
        return job_record(job, "skipped", **stamps, finished=time.time(), error=str(why))
    except Exception as exc:  # recorded, and the study goes on
        error, trace = f"{type(exc).__name__}: {exc}", traceback.format_exc()
        return job_record(
            job, "failed", **stamps, finished=time.time(), error=error, traceback=trace
        )


def _problem(job: Job, shared: JobRecord | None):
    """The job's training and test folds (standardised on the training fold), its kernel
    and prior mean (at the source's values, or the grid point's), and where they came from."""
    data = load_dataset(job.dataset, job.study_seed)
    split_seed = stable_seed("split", job.study_seed, job.dataset.seed_key)
    train, test = split_indices(data, job.splits, job.split, split_seed)
    X_train, X_test = gc_datasets.standardize(data.X[train], data.X[test if test.size else train])
    X_test = X_test[: test.size]
    kernel = make_kernel(job.kernel, X_train.shape[1])
    mean = job.mean
    origin = "fixed"
    if shared is not None:
        theta = np.asarray(shared.hyperparameters.values, dtype=float)
        p = kernel.theta.size
        kernel = kernel.with_theta(theta[:p])
        mean = None if mean is None else float(theta[p])
        origin = shared.engine
    elif job.hyperparameters is not None:
        kernel, mean = at_point(kernel, mean, job.hyperparameters)
        origin = "grid"
    elif job.optimize:
        origin = "own"
    return X_train, data.y[train], X_test, data.y[test], kernel, mean, origin


@contextmanager
def _peak_memory():
    """The block's peak resident memory above the process's at its start, in MiB, in the
    list it yields (empty where it cannot be measured): Linux's high-water mark VmHWM,
    reset first through /proc/self/clear_refs, so nothing slows the block (allocation
    tracing doubled small fits' times)."""
    out: list[float] = []
    start = _proc_status_kib("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # reset VmHWM to the current resident size
    except OSError:
        start = None
    yield out
    peak = _proc_status_kib("VmHWM") if start is not None else None
    if peak is not None:
        out.append(max(peak - start, 0) / 1024)


def _proc_status_kib(field: str) -> int | None:
    """A ``kB`` field of /proc/self/status (Linux), or None."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


class _Skipped(Exception):
    """A job that cannot run here by design (a dense engine's n x n matrices would not fit
    in memory): its record says why, with status ``"skipped"``."""


def _run(job: Job, shared: JobRecord | None) -> dict[str, Any]:
    """An engine's job: fit on the training fold (selecting the hyperparameters where the
    job does), predict the test fold, and return the record's results in its JSON layout."""
    X_train, y_train, X_test, y_test, kernel, mean, origin = _problem(job, shared)
    engine = get_engine(job.method)
    own = {k: v for k, v in job.options.items() if k != "objective"}
    classes = int(np.unique(y_train).size) if job.likelihood == "softmax" else None
    problem = engine.memory_problem(
        y_train.size, engine.options(own), job.optimize, kernel=kernel, classes=classes
    )
    if problem is not None:
        raise _Skipped(f"skipped: {problem}")
    held_out = y_test.size > 0  # (none with splits kind = "none": evidence only)
    # peak resident memory of the fit and predictions, above the worker's at the start
    with _peak_memory() as peak, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        post = fit(
            X_train,
            y_train,
            method=job.method,
            kernel=kernel,
            likelihood=job.likelihood,
            mean=mean,
            **_fit_options(job),
        )
        t1 = time.perf_counter()
        predicted = _predict(post, X_test, y_test) if held_out else None
        t2 = time.perf_counter()
    out: dict[str, Any] = {
        "n_train": int(y_train.size),
        "n_test": int(y_test.size),
        "d": int(X_train.shape[1]),
        "base_rate": float(np.mean(y_train == 1)),
        "metrics": {},
        "hyperparameters": _hyperparameters(post, origin),
        "timings": _timings(job, post, t0, t1, t2, peak[0] if peak else None),
        "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught}),
    }
    if predicted is not None:
        out["metrics"], out["arrays"] = _scores(y_train, y_test, post, *predicted)
        if isinstance(post, SamplePosterior | SoftmaxSamplePosterior):  # the reference's MCSE
            draws = post.log_predictive_draws(X_test, y_test)
            out["mcse"] = {"mean_log_predictive": metrics.joint_mean_log_predictive_mcse(draws)}
    if job.psis is not None:
        try:
            out["psis"] = _psis(job, post, X_test, y_test, held_out)
        except (ValueError, FloatingPointError) as exc:  # (too large, or weights not finite)
            out["warnings"].append(f"psis: not run ({exc})")
    out.update(_engine_facts(job, post))
    return out


def _psis(job: Job, post, X_test, y_test, held_out: bool) -> dict[str, float]:
    """The Pareto-k check of the job's approximation (:func:`gpc_compare.psis`, seeded by
    the job), with the importance-corrected held-out mean log predictive."""
    from ..trust import psis

    diagnosis = psis(post, random_seed=job.seed % (2**32), **job.psis)
    out = {
        "pareto_k": diagnosis.pareto_k,
        "khat_threshold": diagnosis.khat_threshold,
        "ess": diagnosis.ess,
        "draws": float(diagnosis.draws),
        "log_evidence": diagnosis.log_evidence,
        "log_evidence_se": diagnosis.log_evidence_se,
        "seconds": diagnosis.seconds,
    }
    if held_out:
        score, se = diagnosis.mean_log_predictive(X_test, y_test)
        out["mean_log_predictive"], out["mean_log_predictive_se"] = score, se
    return out


def _fit_options(job: Job) -> dict[str, Any]:
    """The keyword arguments of the job's :func:`gpc_compare.fit` beyond the problem: the
    engine's options, and the search's (restarts, seed, objective) where the job selects
    its own hyperparameters (the engine's seed otherwise)."""
    options = dict(job.options)
    objective = options.pop("objective", "evidence")
    if get_engine(job.method).takes_option("cores"):
        # one chain at a time, as one BLAS thread (run_job): the workers are the parallelism,
        # and nutpie's threads competing with the other workers' jobs cost a study of
        # anes96 (3 engines, 10 splits, 2 workers) 8% of its CPU time (the draws are the same)
        options.setdefault("cores", 1)
    options = get_engine(job.method).with_seed(options, job.seed % (2**32))
    if not job.optimize:
        return {"optimize": False, **options}
    options.pop("random_seed", None)
    search = {"n_restarts": job.n_restarts, "random_seed": job.seed, "objective": objective}
    return {"optimize": True, **search, **options}


def _predict(post, X_test: np.ndarray, y_test: np.ndarray) -> tuple:
    """Predictions at the test inputs: probabilities, log p(y*), latent moments."""
    p1 = post.predict_proba(X_test)
    log_p = post.log_predictive(X_test, y_test)
    mean_test, var_test = post.predict_latent(X_test)
    return p1, log_p, mean_test, var_test


def _timings(job: Job, post, t0: float, t1: float, t2: float, peak_mb: float | None) -> dict:
    """One fit at the hyperparameters used, the search apart from it (when this job ran
    one), the predictions, and the peak memory (None: not measured)."""
    fit_seconds, select_seconds = t1 - t0, 0.0
    if job.optimize and np.isfinite(post.optimization.fit_seconds):  # the search apart
        fit_seconds = post.optimization.fit_seconds
        select_seconds = t1 - t0 - fit_seconds
    return {
        "fit_seconds": fit_seconds,
        "select_seconds": select_seconds,
        "predict_seconds": t2 - t1,
        "peak_memory_mb": peak_mb,
    }


def _scores(y_train, y_test, post, p1, log_p, mean_test, var_test) -> tuple[dict, dict]:
    """Held-out scores and the per-case arrays for the report and the comparisons with
    the reference (C classes: :func:`~gpc_compare.study.multiclass.multiclass_record`)."""
    if post.likelihood.latent_dim != 1:  # C latent functions (softmax)
        return multiclass_record(y_train, y_test, p1, log_p, mean_test, var_test, post)
    scores = metrics.score(y_test, p1, log_p, float(np.mean(y_train == 1)))
    arrays = {
        "y_test": [int(v) for v in y_test],
        "p1_test": _floats(p1),
        "log_p_test": _floats(log_p),
        "mean_test": _floats(mean_test),
        "var_test": _floats(var_test),
        "mean_train": _floats(post.latent_mean),
        "var_train": _floats(post.latent_var),
    }
    return scores, arrays


def _engine_facts(job: Job, post) -> dict[str, Any]:
    """What the engine says of its fit (:meth:`Posterior.record`: convergence, evidence
    and its se, engine-specific facts), a sparse engine's inducing inputs, the search's
    outcome, and a sampler's InferenceData (as NetCDF bytes)."""
    out: dict[str, Any] = {}
    if "sparse" in capabilities(job.method):
        out["inducing"] = {
            "M": int(post.inducing.shape[0]),
            "optimized": bool(post.optimize_inducing),
            "jitter": float(post.jitter),
            "values": [_floats(z) for z in post.inducing],
        }
    out.update(post.record())
    if job.optimize:
        opt = post.optimization
        out["optimizer"] = {
            "objective": opt.objective,
            "best_value": float(opt.best_value),
            "converged": bool(opt.converged),
            "evaluations": int(opt.n_evaluations),
            "runs": len(opt.restarts),
        }
    if "draws" in capabilities(job.method):
        out["_idata_netcdf"] = _netcdf_bytes(post.idata)
    return out


def _run_evidence(job: Job, shared: Mapping[str, Any] | None) -> dict[str, Any]:
    """A gold-standard evidence estimate by :func:`gpc_compare.annealing.estimate.estimate`,
    with the options record the job's options stand for
    (:func:`~gpc_compare.study.evidence_config.evidence_options`): SMC or AIS from EP's
    approximation or the prior, estimated again where the record's recheck policy says.

    The EP start is EP with its parallel schedule and default tolerances (deterministic,
    and the same fit as an ``[engines.ep] schedule = "parallel"`` job at these values). An
    SMC job is seeded with the job's seed, an AIS job ``[job seed, temperatures]`` (as the
    committed studies were); a recheck ``[job seed, its runs or temperatures]``.
    """
    X, y, _, _, kernel, mean, origin = _problem(job, shared)
    problem = dense_memory_problem(y.size)  # (the estimators anneal on the dense prior)
    if problem is not None:
        raise _Skipped(f"skipped: {problem}")
    options = evidence_options(job.options)
    seed = [job.seed, options.temperatures] if options.estimator == "ais" else job.seed
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        prepared = prepare(X, y, kernel=kernel, likelihood=job.likelihood, mean=mean)
        result = estimate(prepared, options, seed)
        seconds = time.perf_counter() - t0
    return {
        **_evidence_job(X, y, kernel, mean, origin, seconds, caught),
        **_evidence_record(result, options),
    }


def _evidence_record(result: EvidenceEstimate, options: EvidenceOptions) -> dict[str, Any]:
    """An estimate as an evidence job's record holds it: the final estimate, whether it is
    healthy (its se within ``se_max``, and SMC's schedule not capped), and each estimate
    made (``runs``: the schedule's length as ``temperatures``, and SMC's runs), why the
    first was made again, EP's log evidence (AIS: where the path started there) and SMC's
    health. Each estimate's ``seconds``: the first's with the set-up, a recheck's own."""
    smc = result.method == "smc"
    done = [result] if result.first is None else [result.first, result]
    runs = []
    for k, d in enumerate(done):
        run = {"temperatures": int(d.health["steps" if smc else "temperatures"])}
        if smc:
            run["runs"] = int(d.health["runs"])
        seconds = d.seconds - (done[0].seconds if k else 0.0)
        run.update(log_evidence=d.log_evidence, se=d.standard_error, seconds=seconds)
        runs.append(run)
    healthy = result.standard_error <= options.recheck.se_max
    healthy = healthy and not (smc and result.health["capped"])
    start = result.start_log_evidence if smc or result.start == "ep" else None
    evidence = {"method": result.method, "start": result.start, "start_log_evidence": start}
    evidence.update(runs=runs, recheck=result.recheck)
    if smc:
        evidence["health"] = result.health
    return {
        "convergence": {"converged": bool(healthy), "iterations": runs[-1]["temperatures"]},
        "log_evidence": result.log_evidence,
        "log_evidence_se": result.standard_error,
        "evidence": evidence,
    }


def _evidence_job(X, y, kernel, mean, origin, seconds, caught) -> dict[str, Any]:
    """What every evidence job's record holds: the problem's size, no held-out scores, the
    hyperparameters used and where they came from, the time and the warnings."""
    return {
        "n_train": int(y.size),
        "n_test": 0,
        "d": int(X.shape[1]),
        "base_rate": float(np.mean(y == 1)),
        "metrics": {},
        "hyperparameters": {
            "names": kernel.hyperparameter_names + ([] if mean is None else ["mean"]),
            "values": _floats(np.concatenate([kernel.theta, [] if mean is None else [mean]])),
            "from": origin,
        },
        "timings": {"fit_seconds": seconds, "select_seconds": 0.0, "predict_seconds": 0.0},
        "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught}),
    }


def _netcdf_bytes(idata) -> bytes:
    import tempfile

    keep = [g for g in ("posterior", "sample_stats", "observed_data") if g in idata.groups()]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "idata.nc"
        # uncompressed: ArviZ's default zlib took 0.8-1.7 s per MCMC record (4 x 1000 x 755
        # draws, anes96) to save 4% of its size (draws of f barely compress); 0.1 s without
        idata.to_netcdf(str(path), groups=keep, compress=False)
        return path.read_bytes()


def _hyperparameters(post, origin: str) -> dict[str, Any]:
    """The posterior's hyperparameters as the records hold them: the kernel's and the
    mean, comparable across engines; a sparse engine's inducing inputs (fitted ones are
    hyperparameters too, ``inducing[j,k]``) go to the record's ``inducing`` instead."""
    keep = [
        i for i, name in enumerate(post.hyperparameter_names) if not name.startswith("inducing[")
    ]
    return {
        "names": [post.hyperparameter_names[i] for i in keep],
        "values": _floats(np.asarray(post.hyperparameters)[keep]),
        "from": origin,
    }


def _floats(a: np.ndarray) -> list[float]:
    return [float(v) for v in np.asarray(a, dtype=float).ravel()]
