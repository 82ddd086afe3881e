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
from ..provenance import versions
from .evidence_config import evidence_options
from .jobs import Job
from .kernels_config import kernel_column
from .multiclass import multiclass_record
from .problem import at_point, load_dataset, make_kernel, split_indices, stable_seed

__all__ = ["run_job"]


def run_job(job: Job, shared: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run one job and return its result record (never raises for a failure of the fit).

    Parameters
    ----------
    job : Job
    shared : dict, optional
        The result record of ``job.depends_on`` (its hyperparameters are used).

    Returns
    -------
    dict
        JSON-ready: ``status`` ("ok" or "failed"), the job's identity, ``metrics``,
        ``hyperparameters`` (names and log values), ``log_evidence`` (and ``_se``),
        convergence facts, MCMC diagnostics, timings, per-case arrays for the report
        (test labels, probabilities, log predictive probabilities; latent moments at the
        training and test inputs), package versions, and for a failure ``error`` and
        ``traceback``. MCMC results carry their InferenceData as NetCDF bytes under
        ``"_idata_netcdf"`` (written next to the record, not into it).
    """
    from threadpoolctl import threadpool_limits

    record: dict[str, Any] = {
        "id": job.id,
        "study": job.study,
        "dataset": job.dataset.label,
        "split": job.split,
        "kernel": kernel_column(job.kernel_label, job.kernel),
        "engine": job.engine,
        "method": job.method,
        "likelihood": job.likelihood,
        "policy": job.policy,
        "seed": job.seed,
        "options": dict(job.options),
        "versions": versions(),
        "host": platform.node(),
        "started": time.time(),
    }
    try:
        # One BLAS thread per job: the jobs themselves run in parallel, and OpenBLAS
        # threads competing with other processes slow everything down (see conftest).
        with threadpool_limits(limits=1, user_api="blas"):
            record.update((_run if job.kind == "engine" else _run_evidence)(job, shared))
        record["status"] = "ok"
    except _Skipped as why:  # too large for the engine: said in the report, not an error
        record["status"] = "skipped"
        record["error"] = str(why)
    except Exception as exc:  # recorded, and the study goes on
        record["status"] = "failed"
        record["error"] = f"{type(exc).__name__}: {exc}"
        record["traceback"] = traceback.format_exc()
    record["finished"] = time.time()
    return record


def _problem(job: Job, shared: Mapping[str, Any] | None):
    """The job's training and test folds (standardised on the training fold), its kernel
    and prior mean (at the source's values, or the grid point's), and where they came from."""
    data = load_dataset(job.dataset, job.study_seed)
    split_seed = stable_seed("split", job.study_seed, job.dataset.label)
    train, test = split_indices(data, job.splits, job.split, split_seed)
    X_train, X_test = gc_datasets.standardize(data.X[train], data.X[test if test.size else train])
    X_test = X_test[: test.size]
    kernel = make_kernel(job.kernel, X_train.shape[1])
    mean = job.mean
    origin = "fixed"
    if shared is not None:
        theta = np.asarray(shared["hyperparameters"]["values"], dtype=float)
        p = kernel.theta.size
        kernel = kernel.with_theta(theta[:p])
        mean = None if mean is None else float(theta[p])
        origin = shared["engine"]
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


def _run(job: Job, shared: Mapping[str, Any] | None) -> dict[str, Any]:
    X_train, y_train, X_test, y_test, kernel, mean, origin = _problem(job, shared)
    if "sparse" not in capabilities(job.method):
        problem = dense_memory_problem(y_train.size)
        if problem is not None:
            raise _Skipped(f"skipped: {problem}")
    options = dict(job.options)
    objective = options.pop("objective", "evidence")
    optimize = job.optimize
    fit_kwargs: dict[str, Any] = {}
    if "random_seed" in get_engine(job.method).OPTIONS and "random_seed" not in options:
        options["random_seed"] = job.seed % (2**32)
    if optimize:
        fit_kwargs = {"n_restarts": job.n_restarts, "random_seed": job.seed, "objective": objective}
        options.pop("random_seed", None)
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
            optimize=optimize,
            **fit_kwargs,
            **options,
        )
        t1 = time.perf_counter()
        held_out = y_test.size > 0  # (none with splits kind = "none": evidence only)
        if held_out:
            p1 = post.predict_proba(X_test)
            log_p = post.log_predictive(X_test, y_test)
            mean_test, var_test = post.predict_latent(X_test)
        t2 = time.perf_counter()
    peak_mb = peak[0] if peak else None
    base_rate = float(np.mean(y_train == 1))
    fit_seconds, select_seconds = t1 - t0, 0.0
    if optimize and np.isfinite(post.optimization.fit_seconds):  # the search apart from one fit
        fit_seconds = post.optimization.fit_seconds
        select_seconds = t1 - t0 - fit_seconds
    multiclass = post.likelihood.latent_dim != 1  # C latent functions (softmax)
    if held_out and multiclass:  # scores and arrays of C classes (study.multiclass)
        scores, arrays = multiclass_record(y_train, y_test, p1, log_p, mean_test, var_test, post)
    elif held_out:
        scores = metrics.score(y_test, p1, log_p, base_rate)
    out: dict[str, Any] = {
        "n_train": int(y_train.size),
        "n_test": int(y_test.size),
        "d": int(X_train.shape[1]),
        "base_rate": base_rate,
        "metrics": scores if held_out else {},
        "hyperparameters": _hyperparameters(post, origin),
        "timings": {
            "fit_seconds": fit_seconds,  # one fit at the hyperparameters used
            "select_seconds": select_seconds,  # the hyperparameter search, when this job ran one
            "predict_seconds": t2 - t1,
            "peak_memory_mb": peak_mb,  # (None: not measured)
        },
        "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught}),
    }
    if held_out and multiclass:
        out["arrays"] = arrays
    elif held_out:  # per-case arrays for the report and the comparisons with the reference
        out["arrays"] = {
            "y_test": [int(v) for v in y_test],
            "p1_test": _floats(p1),
            "log_p_test": _floats(log_p),
            "mean_test": _floats(mean_test),
            "var_test": _floats(var_test),
            "mean_train": _floats(post.latent_mean),
            "var_train": _floats(post.latent_var),
        }
    if "sparse" in capabilities(job.method):
        out["inducing"] = {
            "M": int(post.inducing.shape[0]),
            "optimized": bool(post.optimize_inducing),
            "jitter": float(post.jitter),
            "values": [_floats(z) for z in post.inducing],
        }
    out.update(post.record())  # convergence, evidence (and its se), engine-specific facts
    if optimize:
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
        idata.to_netcdf(str(path), groups=keep)
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
