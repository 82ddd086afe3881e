"""A study: the same problems through every engine, scored the same way.

A study is a TOML file (see ``studies/`` and :func:`load_study`) naming the data sets,
the engines with their options, the likelihood, the kernel, the hyperparameter policy,
the splits and the seed. :func:`expand` turns it into jobs, one per data set, split and
engine; :func:`run_study` runs them on local worker processes (or a Dask cluster), writes
each job's result atomically as it finishes, skips finished jobs when rerun, records a
job that raises (with its traceback) and goes on, and finally assembles one tidy table,
``results/NAME/results.csv``: one row per data set, split, engine and metric.

Hyperparameter policies (``[hyperparameters] policy``):

``"fixed"``
    Every engine at the kernel's given values.
``"optimize"``
    Laplace and EP each maximise their own evidence (type-II maximum likelihood, or EP's
    LOO objective with the engine option ``objective = "loo"``). MCMC has no evidence
    gradient, so it runs at the values the ``source`` engine (default EP) selected.
``"shared"``
    The ``source`` engine maximises its evidence; every engine then runs at those values,
    so the approximations are compared with the MCMC reference at the same
    hyperparameters.
``"full_bayes"``
    Laplace and EP as in ``"optimize"``; MCMC samples the hyperparameters too, with normal
    priors on their logs centred on the kernel's given values (sd 1).

Comparisons with the reference engine (default ``"mcmc"``): latent means and variances
at the training inputs, the mean KL divergence between the Gaussian marginals, and the
evidence gap (when the reference computed its AIS evidence), for every engine that ran
at the same hyperparameters as the reference on that split.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import platform
import shutil
import sys
import time
import tomllib
import traceback
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pandas as pd

from . import datasets as gc_datasets
from . import metrics
from .engines import ENGINES, get_engine
from .provenance import versions

__all__ = [
    "Job",
    "StudyConfig",
    "StudyError",
    "assemble",
    "expand",
    "load_study",
    "run_job",
    "run_study",
]

POLICIES = ("fixed", "optimize", "shared", "full_bayes")
BINARY_LIKELIHOODS = ("probit", "logistic")
OBJECTIVES = ("evidence", "loo", "loo_fixed_sites")
SPLIT_KINDS = ("kfold", "holdout")
KERNELS = {
    "squared_exponential": "SquaredExponential",
    "matern32": "Matern32",
    "matern52": "Matern52",
    "linear": "Linear",
}
#: Columns of the tidy table, in order (``pandas.read_csv`` reads it without help).
TABLE_COLUMNS = [
    "dataset",
    "split",
    "engine",
    "likelihood",
    "metric",
    "value",
    "policy",
    "hyperparameters",
    "hyperparameters_from",
    "converged",
    "iterations",
    "fit_seconds",
    "predict_seconds",
    "n_train",
    "n_test",
    "seed",
    "job_id",
    "versions",
]
#: Columns that hold wall-clock times: everything else is reproducible from the seeds.
TIMING_COLUMNS = ["fit_seconds", "predict_seconds"]


class StudyError(ValueError):
    """A study file that cannot be run: the message names the file and the field."""


# --------------------------------------------------------------------------- config
@dataclass(frozen=True)
class DatasetSpec:
    """A data set of a study: a loader name and its options."""

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)
    subsample: int | None = None

    @property
    def label(self) -> str:
        """The name in tables and figures (the loader name, unless options make it unique)."""
        return str(self.options.get("label", self.name))


@dataclass(frozen=True)
class StudyConfig:
    """A parsed, validated study file (see :func:`load_study`)."""

    name: str
    description: str
    datasets: tuple[DatasetSpec, ...]
    engines: Mapping[str, Mapping[str, Any]]
    methods: Mapping[str, str]
    likelihood: str
    kernel: Mapping[str, Any]
    mean: float | None
    policy: str
    source: str | None
    n_restarts: int
    splits: Mapping[str, Any]
    seed: int
    reference: str | None
    path: str = ""


def _fail(path: str, where: str, message: str) -> StudyError:
    return StudyError(f"{path}: {where}: {message}")


def _check_keys(table: Mapping[str, Any], allowed: Iterable[str], path: str, where: str) -> None:
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise _fail(path, where, f"unknown field(s) {unknown}; allowed: {sorted(allowed)}")


def _int(value: Any, path: str, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _fail(path, where, f"must be an integer >= {minimum}, got {value!r}")
    return int(value)


def load_study(path: str | os.PathLike[str]) -> StudyConfig:
    """Read and validate a study file.

    Parameters
    ----------
    path : path
        A TOML file with these fields (only ``datasets`` and ``engines`` are required)::

            name = "quick"               # default: the file name without .toml
            description = "..."
            seed = 0                     # seeds splits, restarts and samplers
            likelihood = "probit"        # or "logistic"
            mean = 0.0                   # constant prior mean, a hyperparameter; omit: zero
            reference = "mcmc"           # engine the others are compared with
            datasets = ["ionosphere", "sonar"]   # or [[datasets]] tables:
            # [[datasets]]  name = "breast_cancer"  subsample = 200  (+ loader options)
            [kernel]     name = "squared_exponential"  lengthscale = "sqrt_d"  variance = 1.0
                         ard = false  variance_bounds = [0.01, 100.0]  (or "fixed")
                         lengthscale_bounds = [0.01, 1000.0]
            [hyperparameters]  policy = "optimize"  source = "ep"  n_restarts = 2
            [splits]     kind = "kfold"  n_splits = 5      # or "holdout": test_size, n_repeats
            [engines.laplace]                         # one table per engine, its options
            [engines.ep]       schedule = "parallel"
            [engines.mcmc]     draws = 500  tune = 500  chains = 2  evidence = true

    Returns
    -------
    StudyConfig

    Raises
    ------
    StudyError
        (a ValueError) naming the file and the field, for anything malformed: a TOML
        syntax error, an unknown field, data set, engine, option or kernel, a bad value.
    """
    p = str(path)
    try:
        with open(path, "rb") as fh:
            raw = tomllib.load(fh)
    except FileNotFoundError:
        raise StudyError(f"{p}: no such study file") from None
    except tomllib.TOMLDecodeError as exc:
        raise StudyError(f"{p}: not valid TOML: {exc}") from None
    top = {
        "name",
        "description",
        "seed",
        "likelihood",
        "mean",
        "reference",
        "datasets",
        "kernel",
        "hyperparameters",
        "splits",
        "engines",
    }
    _check_keys(raw, top, p, "top level")
    name = raw.get("name", Path(p).stem)
    if not isinstance(name, str) or not name or any(c in name for c in "/\\ "):
        raise _fail(p, "name", f"must be a non-empty string without '/' or spaces, got {name!r}")
    seed = _int(raw.get("seed", 0), p, "seed", 0)
    likelihood = raw.get("likelihood", "probit")
    if likelihood not in BINARY_LIKELIHOODS:
        raise _fail(
            p, "likelihood", f"must be one of {BINARY_LIKELIHOODS} (studies are binary), got "
            f"{likelihood!r}"
        )  # fmt: skip
    mean = raw.get("mean")
    if mean is not None and (isinstance(mean, bool) or not isinstance(mean, int | float)):
        raise _fail(p, "mean", f"must be a number, got {mean!r}")

    splits = _parse_splits(raw.get("splits", {}), p)
    datasets = _parse_datasets(raw.get("datasets"), splits, seed, p)
    engines, methods = _parse_engines(raw.get("engines"), p)
    kernel = _parse_kernel(raw.get("kernel", {}), p)
    at_source = any(o.get("hyperparameters") == "source" for o in engines.values())
    policy, source, n_restarts = _parse_hyperparameters(
        raw.get("hyperparameters", {}), methods, p, at_source
    )
    if policy == "full_bayes":
        for label, method in methods.items():
            if method == "mcmc" and engines[label].get("evidence"):
                raise _fail(
                    p,
                    f"engines.{label}.evidence",
                    "AIS needs fixed hyperparameters, not full_bayes",
                )

    mcmc_labels = [label for label, m in methods.items() if m == "mcmc"]
    reference = raw.get("reference", mcmc_labels[0] if mcmc_labels else None)
    if reference is not None and (not isinstance(reference, str) or reference not in engines):
        raise _fail(p, "reference", f"{reference!r} is not one of the engines {list(engines)}")
    return StudyConfig(
        name=name,
        description=str(raw.get("description", "")),
        datasets=datasets,
        engines=engines,
        methods=methods,
        likelihood=str(likelihood),
        kernel=kernel,
        mean=None if mean is None else float(mean),
        policy=policy,
        source=source,
        n_restarts=n_restarts,
        splits=splits,
        seed=seed,
        reference=reference,
        path=p,
    )


def _parse_datasets(
    value: Any, splits: Mapping[str, Any], seed: int, p: str
) -> tuple[DatasetSpec, ...]:
    if value is None:
        raise _fail(p, "datasets", "missing: name at least one data set")
    if not isinstance(value, list) or not value:
        raise _fail(p, "datasets", "must be a non-empty list of names or [[datasets]] tables")
    known = set(gc_datasets.DATASETS)
    specs = []
    for i, item in enumerate(value):
        where = f"datasets[{i}]"
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, dict) or "name" not in item:
            raise _fail(p, where, "must be a data-set name or a table with a 'name'")
        name = item["name"]
        if not isinstance(name, str) or name not in known:
            raise _fail(p, f"{where}.name", f"unknown data set {name!r}; known: {sorted(known)}")
        options = {k: v for k, v in item.items() if k not in ("name", "subsample")}
        subsample = item.get("subsample")
        if subsample is not None:
            subsample = _int(subsample, p, f"{where}.subsample", 10)
        try:  # load once here, so a bad option is named now and not in every job
            data = _load_dataset(DatasetSpec(name, options, subsample), seed)
        except (TypeError, ValueError) as exc:
            raise _fail(p, where, f"cannot load {name!r} with {options}: {exc}") from None
        if data.n_classes != 2:
            raise _fail(p, where, f"{name!r} has {data.n_classes} classes; studies are binary")
        smallest = int(np.min(np.bincount(data.y)))
        folds = splits["n_splits"] if splits["kind"] == "kfold" else 2
        if smallest < folds:
            raise _fail(
                p, where, f"the smaller class has {smallest} cases, too few for {folds} "
                "stratified folds: use more cases or fewer splits"
            )  # fmt: skip
        specs.append(DatasetSpec(name, options, subsample))
    labels = [s.label for s in specs]
    if len(set(labels)) != len(labels):
        raise _fail(p, "datasets", f"names repeat ({labels}): give repeats a distinct 'label'")
    return tuple(specs)


def _parse_engines(value: Any, p: str) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    if value is None:
        raise _fail(p, "engines", "missing: add a table [engines.NAME] per engine")
    if not isinstance(value, dict) or not value:
        raise _fail(p, "engines", "must hold one table per engine, e.g. [engines.laplace]")
    engines, methods = {}, {}
    for label, options in value.items():
        where = f"engines.{label}"
        if not isinstance(options, dict):
            raise _fail(p, where, "must be a table of the engine's options")
        options = dict(options)
        method = options.pop("method", label)  # a label may name an engine variant
        if not isinstance(method, str) or method not in ENGINES:
            raise _fail(
                p,
                where if method == label else f"{where}.method",
                f"unknown engine {method!r}; known: {sorted(ENGINES)} (a table named "
                "otherwise needs method = ENGINE)",
            )
        defaults = get_engine(method).OPTIONS
        _check_keys(options, set(defaults) | {"objective", "hyperparameters"}, p, where)
        if options.get("hyperparameters", "source") != "source":
            raise _fail(
                p, f"{where}.hyperparameters", "the only per-engine setting is 'source' (run at "
                "the values the source engine selects)"
            )  # fmt: skip
        for key, value in options.items():
            if key != "hyperparameters":
                _check_option_type(value, defaults.get(key), p, f"{where}.{key}")
        if "objective" in options:
            if options["objective"] not in OBJECTIVES:
                raise _fail(p, f"{where}.objective", f"must be one of {OBJECTIVES}")
            if method != "ep" and options["objective"] != "evidence":
                raise _fail(p, f"{where}.objective", "the LOO objectives need method = 'ep'")
        engines[label] = options
        methods[label] = method
    return engines, methods


def _check_option_type(value: Any, default: Any, p: str, where: str) -> None:
    """An option must have its default's type (a number for a float; any for None)."""
    if default is None:
        return
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int | float):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    else:
        ok = isinstance(value, type(default))
    if not ok:
        raise _fail(p, where, f"must be like the default {default!r}, got {value!r}")


def _parse_kernel(value: Any, p: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(p, "kernel", "must be a table")
    bound_keys = ("lengthscale_bounds", "variance_bounds")
    _check_keys(value, {"name", "lengthscale", "variance", "ard", *bound_keys}, p, "kernel")
    for key in bound_keys:
        b = value.get(key)
        if b is None or b == "fixed":
            continue
        if (
            not isinstance(b, list)
            or len(b) != 2
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in b)
            or not 0 < b[0] < b[1]
        ):
            raise _fail(p, f"kernel.{key}", f"must be [low, high] with 0 < low < high, got {b!r}")
    kernel = {"name": "squared_exponential", "lengthscale": "sqrt_d", "variance": 1.0}
    kernel.update(value)
    if not isinstance(kernel.get("ard", False), bool):
        raise _fail(p, "kernel.ard", f"must be true or false, got {kernel['ard']!r}")
    kernel["ard"] = kernel.get("ard", False)
    if not isinstance(kernel["name"], str) or kernel["name"] not in KERNELS:
        raise _fail(p, "kernel.name", f"unknown kernel {kernel['name']!r}; known: {list(KERNELS)}")
    ell = kernel["lengthscale"]
    if ell != "sqrt_d" and (isinstance(ell, bool) or not isinstance(ell, int | float) or ell <= 0):
        raise _fail(p, "kernel.lengthscale", f"must be a positive number or 'sqrt_d', got {ell!r}")
    var = kernel["variance"]
    if isinstance(var, bool) or not isinstance(var, int | float) or var <= 0:
        raise _fail(p, "kernel.variance", f"must be a positive number, got {var!r}")
    return kernel


def _parse_hyperparameters(value: Any, methods: Mapping[str, str], p: str, at_source=False):
    if not isinstance(value, dict):
        raise _fail(p, "hyperparameters", "must be a table")
    _check_keys(value, {"policy", "source", "n_restarts"}, p, "hyperparameters")
    policy = value.get("policy", "optimize")
    if policy not in POLICIES:
        raise _fail(p, "hyperparameters.policy", f"must be one of {POLICIES}, got {policy!r}")
    n_restarts = _int(value.get("n_restarts", 2), p, "hyperparameters.n_restarts", 0)
    source = value.get("source")
    engines = list(methods)
    has_mcmc = "mcmc" in methods.values()
    needs_source = policy == "shared" or (policy == "optimize" and has_mcmc) or at_source
    if source is None and needs_source:
        source = next((e for e in ("ep", "laplace") if methods.get(e) == e), None)
        if source is None:
            raise _fail(
                p, "hyperparameters.source", "MCMC needs Laplace or EP to select its values"
            )
    if source is not None:
        if source not in engines:
            raise _fail(p, "hyperparameters.source", f"{source!r} is not an engine of the study")
        if methods[source] == "mcmc":
            raise _fail(p, "hyperparameters.source", "MCMC gives no evidence gradient to optimise")
    return policy, source if needs_source else None, n_restarts


def _parse_splits(value: Any, p: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(p, "splits", "must be a table")
    _check_keys(value, {"kind", "n_splits", "test_size", "n_repeats"}, p, "splits")
    kind = value.get("kind", "kfold")
    if kind not in SPLIT_KINDS:
        raise _fail(p, "splits.kind", f"must be one of {SPLIT_KINDS}, got {kind!r}")
    if kind == "kfold":
        if "test_size" in value or "n_repeats" in value:
            raise _fail(p, "splits", "test_size and n_repeats belong to kind = 'holdout'")
        return {"kind": kind, "n_splits": _int(value.get("n_splits", 5), p, "splits.n_splits", 2)}
    if "n_splits" in value:
        raise _fail(p, "splits.n_splits", "belongs to kind = 'kfold'; use n_repeats")
    test_size = value.get("test_size", 0.25)
    if isinstance(test_size, bool) or not isinstance(test_size, float) or not 0 < test_size < 1:
        raise _fail(p, "splits.test_size", f"must be a fraction in (0, 1), got {test_size!r}")
    n_repeats = _int(value.get("n_repeats", 5), p, "splits.n_repeats", 1)
    return {"kind": kind, "test_size": test_size, "n_repeats": n_repeats}


# --------------------------------------------------------------------------- jobs
@dataclass(frozen=True)
class Job:
    """One engine on one split of one data set: everything a worker needs, picklable."""

    id: str
    study: str
    dataset: DatasetSpec
    split: int
    engine: str
    method: str
    options: Mapping[str, Any]
    likelihood: str
    kernel: Mapping[str, Any]
    mean: float | None
    policy: str
    n_restarts: int
    splits: Mapping[str, Any]
    seed: int
    study_seed: int = 0
    depends_on: str | None = None

    def describe(self) -> str:
        """``dataset/split k/engine`` for messages and the progress line."""
        return f"{self.dataset.label}/split {self.split}/{self.engine}"


def _stable_seed(*parts: object) -> int:
    """A seed from the study seed and names, identical across processes and machines."""
    words = [zlib.crc32(str(part).encode()) for part in parts]
    return int(np.random.SeedSequence(words).generate_state(1)[0])


def _n_splits(splits: Mapping[str, Any]) -> int:
    return splits["n_splits"] if splits["kind"] == "kfold" else splits["n_repeats"]


def expand(config: StudyConfig) -> list[Job]:
    """The study's jobs: one per data set, split and engine, in a deterministic order.

    A job's ``id`` hashes everything that determines its result, so a changed study file
    never reuses a stale result. Jobs that run at another engine's selected
    hyperparameters (``"shared"``; MCMC under ``"optimize"``) name it in ``depends_on``.

    Parameters
    ----------
    config : StudyConfig

    Returns
    -------
    list of Job
    """
    jobs = []
    for data in config.datasets:
        for split in range(_n_splits(config.splits)):
            ids: dict[str, str] = {}
            for engine in _engine_order(config):
                options = dict(config.engines[engine])
                method = config.methods[engine]
                if config.policy == "full_bayes" and method == "mcmc":
                    options["full_bayes"] = True
                depends = None
                at_source = options.pop("hyperparameters", None) == "source"
                if config.source is not None and engine != config.source:
                    if config.policy == "shared" or method == "mcmc" or at_source:
                        depends = ids[config.source]
                seed = _stable_seed(config.seed, data.label, split, engine)
                spec = {
                    "dataset": [data.name, dict(data.options), data.subsample],
                    "split": split,
                    "engine": engine,
                    "method": method,
                    "options": options,
                    "likelihood": config.likelihood,
                    "kernel": dict(config.kernel),
                    "mean": config.mean,
                    "policy": config.policy,
                    "n_restarts": config.n_restarts,
                    "splits": dict(config.splits),
                    "seed": [config.seed, seed],
                    "depends": depends,
                    "version": _package_version(),
                }
                digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()
                job_id = f"{data.label}__s{split}__{engine}__{digest[:10]}"
                ids[engine] = job_id
                jobs.append(
                    Job(
                        id=job_id,
                        study=config.name,
                        dataset=data,
                        split=split,
                        engine=engine,
                        method=method,
                        options=options,
                        likelihood=config.likelihood,
                        kernel=config.kernel,
                        mean=config.mean,
                        policy=config.policy,
                        n_restarts=config.n_restarts,
                        splits=config.splits,
                        seed=seed,
                        study_seed=config.seed,
                        depends_on=depends,
                    )
                )
    return jobs


def _engine_order(config: StudyConfig) -> list[str]:
    """The study's engines with the hyperparameter source first (others depend on it)."""
    names = list(config.engines)
    if config.source is not None:
        names.remove(config.source)
        names.insert(0, config.source)
    return names


def _package_version() -> str:
    from . import __version__

    return __version__


def _load_dataset(spec: DatasetSpec, seed: int = 0) -> gc_datasets.Dataset:
    """The data set of ``spec``; a stratified subsample drawn with the study ``seed``."""
    options = {k: v for k, v in spec.options.items() if k != "label"}
    data = gc_datasets.load(spec.name, **options)
    if spec.subsample is not None and spec.subsample < data.n_samples:
        from sklearn.model_selection import train_test_split

        keep, _ = train_test_split(
            np.arange(data.n_samples),
            train_size=spec.subsample,
            stratify=data.y,
            random_state=_stable_seed("subsample", seed, spec.label),
        )
        keep = np.sort(keep)
        data = dataclasses.replace(data, X=data.X[keep], y=data.y[keep])
    return data


def _split(data: gc_datasets.Dataset, splits: Mapping[str, Any], index: int, seed: int):
    """Train and test indices of split ``index`` (stratified; same for every engine)."""
    from sklearn.model_selection import StratifiedKFold, StratifiedShuffleSplit

    if splits["kind"] == "kfold":
        splitter = StratifiedKFold(splits["n_splits"], shuffle=True, random_state=seed)
    else:
        splitter = StratifiedShuffleSplit(
            splits["n_repeats"], test_size=splits["test_size"], random_state=seed
        )
    for i, (train, test) in enumerate(splitter.split(data.X, data.y)):
        if i == index:
            return train, test
    raise IndexError(f"split {index} out of range")  # pragma: no cover


def _make_kernel(spec: Mapping[str, Any], d: int):
    from . import kernels

    cls = getattr(kernels, KERNELS[spec["name"]])
    bounds = {
        key: (b if b == "fixed" else tuple(float(v) for v in b))
        for key in ("lengthscale_bounds", "variance_bounds")
        if (b := spec.get(key)) is not None
    }
    if spec["name"] == "linear":
        bounds.pop("lengthscale_bounds", None)
        return cls(variance=float(spec["variance"]), **bounds)
    ell = math.sqrt(d) if spec["lengthscale"] == "sqrt_d" else float(spec["lengthscale"])
    ell = np.full(d, ell) if spec.get("ard") else ell
    return cls(lengthscale=ell, variance=float(spec["variance"]), **bounds)


def _floats(a: np.ndarray) -> list[float]:
    return [float(v) for v in np.asarray(a, dtype=float).ravel()]


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
            record.update(_run(job, shared))
        record["status"] = "ok"
    except Exception as exc:  # recorded, and the study goes on
        record["status"] = "failed"
        record["error"] = f"{type(exc).__name__}: {exc}"
        record["traceback"] = traceback.format_exc()
    record["finished"] = time.time()
    return record


def _run(job: Job, shared: Mapping[str, Any] | None) -> dict[str, Any]:
    import warnings

    import gpc_compare as gc

    data = _load_dataset(job.dataset, job.study_seed)
    split_seed = _stable_seed("split", job.study_seed, job.dataset.label)
    train, test = _split(data, job.splits, job.split, split_seed)
    X_train, X_test = gc_datasets.standardize(data.X[train], data.X[test])
    y_train, y_test = data.y[train], data.y[test]
    kernel = _make_kernel(job.kernel, X_train.shape[1])
    mean = job.mean
    options = dict(job.options)
    objective = options.pop("objective", "evidence")
    source = None
    if shared is not None:
        theta = np.asarray(shared["hyperparameters"]["values"], dtype=float)
        p = kernel.theta.size
        kernel = kernel.with_theta(theta[:p])
        mean = None if mean is None else float(theta[p])
        source = shared["engine"]
    optimize = shared is None and job.policy != "fixed" and job.method != "mcmc"
    fit_kwargs: dict[str, Any] = {}
    if "random_seed" in get_engine(job.method).OPTIONS and "random_seed" not in options:
        options["random_seed"] = job.seed % (2**32)
    if optimize:
        fit_kwargs = {"n_restarts": job.n_restarts, "random_seed": job.seed, "objective": objective}
        options.pop("random_seed", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        post = gc.fit(
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
        p1 = post.predict_proba(X_test)
        log_p = post.log_predictive(X_test, y_test)
        mean_test, var_test = post.predict_latent(X_test)
        t2 = time.perf_counter()
    base_rate = float(np.mean(y_train == 1))
    scores = metrics.score(y_test, p1, log_p, base_rate)
    out: dict[str, Any] = {
        "n_train": int(train.size),
        "n_test": int(test.size),
        "d": int(X_train.shape[1]),
        "base_rate": base_rate,
        "metrics": scores,
        "hyperparameters": {
            "names": list(post.hyperparameter_names),
            "values": _floats(post.hyperparameters),
            "from": source if source is not None else ("own" if optimize else "fixed"),
        },
        "timings": {"fit_seconds": t1 - t0, "predict_seconds": t2 - t1},
        "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught}),
        "arrays": {
            "y_test": [int(v) for v in y_test],
            "p1_test": _floats(p1),
            "log_p_test": _floats(log_p),
            "mean_test": _floats(mean_test),
            "var_test": _floats(var_test),
            "mean_train": _floats(post.latent_mean),
            "var_train": _floats(post.latent_var),
        },
    }
    conv = post.convergence
    out["convergence"] = {"converged": bool(conv.converged), "iterations": int(conv.iterations)}
    if optimize:
        opt = post.optimization
        out["optimizer"] = {
            "objective": opt.objective,
            "best_value": float(opt.best_value),
            "converged": bool(opt.converged),
            "evaluations": int(opt.n_evaluations),
            "runs": len(opt.restarts),
        }
    if hasattr(post, "loo_log_predictive"):  # EP: sum_i log p(y_i | X, y_-i), seed 004
        out["loo_log_predictive"] = float(post.loo_log_predictive)
    try:
        out["log_evidence"] = float(post.log_marginal_likelihood)
    except ValueError:  # MCMC without evidence=True
        out["log_evidence"] = None
    out["log_evidence_se"] = (
        float(post.log_marginal_likelihood_se)
        if job.method == "mcmc" and out["log_evidence"] is not None
        else None
    )
    if job.method == "mcmc":
        out["diagnostics"] = dataclasses.asdict(post.diagnostics)
        out["_idata_netcdf"] = _netcdf_bytes(post.idata)
    return out


def _netcdf_bytes(idata) -> bytes:
    import tempfile

    keep = [g for g in ("posterior", "sample_stats", "observed_data") if g in idata.groups()]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "idata.nc"
        idata.to_netcdf(str(path), groups=keep)
        return path.read_bytes()


# --------------------------------------------------------------------------- storage
def _atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader sees the old file or the new, never half."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _save(record: dict[str, Any], jobs_dir: Path) -> None:
    idata = record.pop("_idata_netcdf", None)
    if idata is not None:  # before the record: a record on disk means the job is complete
        _atomic_write(jobs_dir / f"{record['id']}.nc", idata)
        record["idata"] = f"{record['id']}.nc"
    text = json.dumps(record, indent=1, allow_nan=True)
    _atomic_write(jobs_dir / f"{record['id']}.json", text.encode())


def load_records(result_dir: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The job records under ``result_dir/jobs``, by job id (unreadable files skipped)."""
    records = {}
    for path in sorted(Path(result_dir, "jobs").glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        records[record["id"]] = record
    return records


# --------------------------------------------------------------------------- execution
class _Progress:
    """A one-line progress display: done, running, failed and the estimated time left."""

    def __init__(self, total: int, skipped: int, stream: TextIO | None) -> None:
        self.total, self.skipped, self.stream = total, skipped, stream
        self.done = self.failed = self.running = 0
        self.last: list[str] = []  # jobs finished since the last line
        self.start = time.perf_counter()
        self.tty = stream is not None and hasattr(stream, "isatty") and stream.isatty()

    def update(self, running: int) -> None:
        """Redraw (on a terminal), or print a line per finished job (in a log file)."""
        self.running = running
        if self.stream is None or (not self.tty and not self.last):
            return
        last = "; ".join(self.last)
        self.last = []
        finished = self.done + self.failed
        todo = self.total - self.skipped
        width = 24
        filled = int(width * (self.skipped + finished) / max(self.total, 1))
        bar = "#" * filled + "-" * (width - filled)
        elapsed = time.perf_counter() - self.start
        if finished:
            left = elapsed / finished * (todo - finished)
            eta = f"~{_duration(left)} left"
        else:
            eta = "time left unknown"
        line = (
            f"[{bar}] {self.skipped + finished}/{self.total} jobs: {self.done} done"
            f"{f' + {self.skipped} earlier' if self.skipped else ''}, {self.running} running, "
            f"{self.failed} failed, {_duration(elapsed)} elapsed, {eta}"
        )
        if self.tty:
            print(f"\r{line}\x1b[K", end="", file=self.stream, flush=True)
        else:
            print(f"{line} ({last})", file=self.stream, flush=True)

    def close(self) -> None:
        if self.tty and self.stream is not None:
            print(file=self.stream, flush=True)


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s" if m else f"{s}s"


class _Deferred:
    """A job of the serial executor: run when waited for, so each result is saved at once."""

    def __init__(self, fn: Callable, args: tuple, executor: _SerialExecutor) -> None:
        self.fn, self.args, self.executor = fn, args, executor

    def result(self):
        out = self.fn(*self.args)
        if self.executor.interrupted:  # a sampler caught the Ctrl-C and returned early
            raise KeyboardInterrupt
        return out


class _SerialExecutor:
    """Runs the jobs one at a time in this process (``workers=1``).

    PyMC and nutpie catch ``KeyboardInterrupt`` and return the draws so far, so a Ctrl-C
    during sampling would end that job early and start the next: a SIGINT handler
    records it, and the job's result is discarded in favour of stopping.
    """

    capacity = 1

    def __init__(self) -> None:
        import signal
        import threading

        self.interrupted = False
        self._previous = None
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)

    def _on_sigint(self, signum, frame) -> None:
        self.interrupted = True
        raise KeyboardInterrupt

    def submit(self, fn: Callable, *args) -> _Deferred:
        return _Deferred(fn, args, self)

    @staticmethod
    def wait(futures):
        return {futures[0]}  # the caller's result() runs it

    def close(self, cancel: bool = False) -> None:
        import signal

        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None


class _LocalExecutor:
    """Local worker processes (``concurrent.futures``, forkserver start method)."""

    def __init__(self, workers: int) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self._make = lambda: ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("forkserver"),
            initializer=_ignore_sigint,  # Ctrl-C is the parent's to handle
        )
        self.capacity = workers
        self.pool = self._make()

    def submit(self, fn: Callable, *args):
        from concurrent.futures.process import BrokenProcessPool

        try:
            return self.pool.submit(fn, *args)
        except BrokenProcessPool:  # a worker died (killed, out of memory): start afresh
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = self._make()
            return self.pool.submit(fn, *args)

    @staticmethod
    def wait(futures):
        from concurrent.futures import FIRST_COMPLETED, wait

        return wait(futures, return_when=FIRST_COMPLETED).done

    def close(self, cancel: bool = False) -> None:
        processes = list((getattr(self.pool, "_processes", None) or {}).values())
        self.pool.shutdown(wait=not cancel, cancel_futures=cancel)
        if cancel:  # an interrupted run: stop the jobs in flight too (their results are lost)
            for process in processes:
                process.terminate()


def _ignore_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


class _DaskExecutor:
    """A Dask distributed cluster at ``address`` (``tcp://host:port``)."""

    def __init__(self, address: str) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise ValueError(
                "--scheduler needs Dask distributed: pip install 'gpc_compare[dask]'"
            ) from None
        try:
            self.client = Client(address, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise ValueError(f"cannot connect to the Dask scheduler at {address}: {exc}") from None
        # as many jobs in flight as the cluster has threads, so "running" means running
        self.capacity = max(1, sum(self.client.nthreads().values()))

    def submit(self, fn: Callable, *args):
        return self.client.submit(fn, *args, pure=False)

    @staticmethod
    def wait(futures):
        from distributed import wait

        return wait(list(futures), return_when="FIRST_COMPLETED").done

    def close(self, cancel: bool = False) -> None:
        self.client.close()


@dataclass
class RunSummary:
    """What :func:`run_study` did."""

    result_dir: Path
    total: int
    skipped: int
    done: int
    failed: int
    table: pd.DataFrame
    seconds: float
    failures: list[str] = field(default_factory=list)
    failed_earlier: list[str] = field(default_factory=list)


def run_study(
    study: str | os.PathLike[str] | StudyConfig,
    output: str | os.PathLike[str] = "results",
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    retry_failed: bool = True,
    progress: TextIO | None = None,
) -> RunSummary:
    """Run a study's jobs, resuming from any results already on disk.

    Parameters
    ----------
    study : path or StudyConfig
        The study file (see :func:`load_study`).
    output : path
        Results go to ``output/NAME/``: the study file (``study.toml``), one JSON record
        per job in ``jobs/`` (MCMC InferenceData next to it as ``.nc``), the tidy table
        ``results.csv`` and ``jobs.csv`` (one row per job: status, error, seconds).
    workers : int, optional
        Local worker processes (default: the number of CPUs); 1 runs the jobs in this
        process, one after another.
    scheduler : str, optional
        Address of a Dask distributed scheduler: the jobs run on its cluster instead.
    retry_failed : bool
        Rerun jobs whose earlier attempt failed (finished jobs are always skipped).
    progress : text stream, optional
        Where the progress line goes (none when omitted).

    Returns
    -------
    RunSummary
    """
    config = study if isinstance(study, StudyConfig) else load_study(study)
    jobs = expand(config)
    result_dir = Path(output) / config.name
    jobs_dir = result_dir / "jobs"
    jobs_dir.mkdir(parents=True, exist_ok=True)
    if config.path and Path(config.path).exists():
        target = result_dir / "study.toml"
        if Path(config.path).resolve() != target.resolve():
            shutil.copyfile(config.path, target)
            run_info = {"study_file": config.path, "scheduler": scheduler, "workers": workers}
            _atomic_write(result_dir / "run.json", json.dumps(run_info, indent=1).encode())

    records = load_records(result_dir)
    finished = {
        j.id
        for j in jobs
        if j.id in records and (records[j.id]["status"] == "ok" or not retry_failed)
    }
    todo = [j for j in jobs if j.id not in finished]
    by_id = {j.id: j for j in jobs}
    bar = _Progress(len(jobs), len(finished), progress)
    failures: list[str] = []

    if scheduler is not None:
        executor: Any = _DaskExecutor(scheduler)
    elif (workers or os.cpu_count() or 1) <= 1:
        executor = _SerialExecutor()
    else:
        executor = _LocalExecutor(min(workers or os.cpu_count() or 1, max(len(todo), 1)))

    start = time.perf_counter()
    pending = list(todo)  # not yet submitted, in order
    running: dict[Any, Job] = {}

    def ready(job: Job) -> tuple[bool, dict | None]:
        """Whether ``job`` can start, and the record of the job it depends on."""
        if job.depends_on is None:
            return True, None
        active = {j.id for j in pending} | {j.id for j in running.values()}
        if job.depends_on in active or job.depends_on not in records:
            return False, None  # (an old failed record may be being retried right now)
        return True, records[job.depends_on]

    def finish(job: Job, record: dict[str, Any]) -> None:
        _save(record, jobs_dir)
        records[job.id] = record
        if record["status"] == "ok":
            bar.done += 1
        else:
            bar.failed += 1
            failures.append(f"{job.describe()}: {record['error']}")

    interrupted = False
    try:
        bar.update(0)
        while pending or running:
            progressed = False
            for job in list(pending):
                if len(running) >= executor.capacity:
                    break
                is_ready, dep = ready(job)
                if not is_ready:
                    continue
                pending.remove(job)
                progressed = True
                if job.depends_on is not None and dep is not None and dep["status"] != "ok":
                    finish(job, _failed_dependency(job, by_id[job.depends_on]))
                    continue
                running[executor.submit(run_job, job, dep)] = job
            bar.update(len(running))
            if not running:
                if pending and progressed:
                    continue
                for job in pending:  # dependencies missing (not for a valid expansion)
                    finish(job, _failed_dependency(job, by_id.get(job.depends_on)))
                pending.clear()
                break
            for future in executor.wait(list(running)):
                job = running.pop(future)
                try:
                    record = future.result()
                except Exception as exc:  # the worker itself died
                    record = _failure_record(job, exc)
                finish(job, record)
                bar.last.append(f"{job.describe()}: {record['status']}")
            if not pending:
                bar.update(len(running))  # (otherwise once the free workers have new jobs)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        bar.close()
        executor.close(cancel=interrupted)

    table = assemble(result_dir, config)
    return RunSummary(
        result_dir=result_dir,
        total=len(jobs),
        skipped=len(finished),
        done=bar.done,
        failed=bar.failed,
        table=table,
        seconds=time.perf_counter() - start,
        failures=failures,
        failed_earlier=[
            f"{j.describe()}: {records[j.id].get('error', '')}"
            for j in jobs
            if j.id in finished and records[j.id]["status"] != "ok"
        ],
    )


def _failure_record(job: Job, exc: BaseException) -> dict[str, Any]:
    return {
        "id": job.id,
        "study": job.study,
        "dataset": job.dataset.label,
        "split": job.split,
        "engine": job.engine,
        "likelihood": job.likelihood,
        "policy": job.policy,
        "seed": job.seed,
        "status": "failed",
        "error": f"{type(exc).__name__}: {exc}",
        "traceback": "".join(traceback.format_exception(exc)),
        "versions": versions(),
    }


def _failed_dependency(job: Job, source: Job | None) -> dict[str, Any]:
    what = source.describe() if source is not None else job.depends_on
    exc = RuntimeError(f"not run: it needs the hyperparameters of {what}, which failed")
    return _failure_record(job, exc)


# --------------------------------------------------------------------------- the table
def assemble(result_dir: str | os.PathLike[str], config: StudyConfig | None = None) -> pd.DataFrame:
    """Build (and write) the tidy table ``results.csv`` and ``jobs.csv`` from the job records.

    Parameters
    ----------
    result_dir : path
        ``results/NAME``.
    config : StudyConfig, optional
        The study; read from ``result_dir/study.toml`` when omitted. Only the records of
        its current jobs are used.

    Returns
    -------
    pandas.DataFrame
        One row per data set, split, engine and metric, columns :data:`TABLE_COLUMNS`.
        Metrics: the held-out scores of :func:`gpc_compare.metrics.score`,
        ``log_evidence`` (the engine's, on the training fold), and, against the
        reference engine at the same hyperparameters, the latent errors,
        ``marginal_kl_mean`` and ``evidence_gap`` (with ``evidence_gap_z``).
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
        status = "not run" if rec is None else rec["status"]
        job_rows.append(
            {
                "job_id": job.id,
                "dataset": job.dataset.label,
                "split": job.split,
                "engine": job.engine,
                "status": status,
                "error": "" if rec is None else rec.get("error", ""),
                "seconds": np.nan
                if rec is None or "finished" not in rec or "started" not in rec
                else rec["finished"] - rec["started"],
                "warnings": "" if rec is None else "; ".join(rec.get("warnings", [])),
            }
        )
        if rec is None or status != "ok":
            continue
        values = dict(rec["metrics"])
        if rec.get("log_evidence") is not None:
            values["log_evidence"] = rec["log_evidence"]
        if rec.get("loo_log_predictive") is not None:
            values["loo_log_predictive"] = rec["loo_log_predictive"]
        if rec.get("optimizer"):
            values["optimizer_converged"] = float(rec["optimizer"]["converged"])
            values["optimizer_evaluations"] = rec["optimizer"]["evaluations"]
        if rec.get("diagnostics"):
            diag = rec["diagnostics"]
            values["r_hat_max"] = diag["r_hat_max"]
            values["ess_bulk_min"] = diag["ess_bulk_min"]
            values["divergences"] = diag["divergences"]
        try:
            values.update(_against_reference(job, rec, jobs, current, config))
        except ValueError as exc:  # e.g. a non-finite evidence: no comparison, and say so
            job_rows[-1]["warnings"] += f"; comparison with the reference skipped: {exc}"
        for metric, value in values.items():
            rows.append(_row(rec, metric, value))
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    _atomic_write(result_dir / "results.csv", table.to_csv(index=False).encode())
    _atomic_write(result_dir / "jobs.csv", pd.DataFrame(job_rows).to_csv(index=False).encode())
    return table


def _row(rec: Mapping[str, Any], metric: str, value: float | None) -> dict[str, Any]:
    hp = rec["hyperparameters"]
    conv = rec.get("convergence", {})
    return {
        "dataset": rec["dataset"],
        "split": rec["split"],
        "engine": rec["engine"],
        "likelihood": rec["likelihood"],
        "metric": metric,
        "value": np.nan if value is None else float(value),
        "policy": rec["policy"],
        "hyperparameters": json.dumps(dict(zip(hp["names"], hp["values"], strict=True))),
        "hyperparameters_from": hp["from"],
        "converged": conv.get("converged"),
        "iterations": conv.get("iterations"),
        "fit_seconds": rec["timings"]["fit_seconds"],
        "predict_seconds": rec["timings"]["predict_seconds"],
        "n_train": rec["n_train"],
        "n_test": rec["n_test"],
        "seed": rec["seed"],
        "job_id": rec["id"],
        "versions": json.dumps(rec["versions"], sort_keys=True),
    }


def _against_reference(job, rec, jobs, current, config) -> dict[str, float]:
    """Latent errors, marginal KL and evidence gap against the reference on this split."""
    if config.reference is None or job.engine == config.reference:
        return {}
    ref_job = next(
        (
            j
            for j in jobs
            if j.engine == config.reference
            and j.dataset.label == job.dataset.label
            and j.split == job.split
        ),
        None,
    )
    ref = None if ref_job is None else current.get(ref_job.id)
    if ref is None or ref["status"] != "ok":
        return {}
    same = rec["hyperparameters"]["names"] == ref["hyperparameters"]["names"] and np.allclose(
        rec["hyperparameters"]["values"], ref["hyperparameters"]["values"], rtol=0, atol=1e-10
    )
    if not same:  # comparisons only make sense at the same hyperparameters
        return {}
    a, r = rec["arrays"], ref["arrays"]
    out = metrics.latent_errors(
        a["mean_train"], a["var_train"], ref_mean=r["mean_train"], ref_var=r["var_train"]
    )
    if rec.get("log_evidence") is not None and ref.get("log_evidence") is not None:
        out.update(
            metrics.evidence_gap(
                rec["log_evidence"],
                ref_log_evidence=ref["log_evidence"],
                ref_se=ref.get("log_evidence_se"),
            )
        )
    return out


def load_study_script(path: str | os.PathLike[str]):
    """Import a figure study script ``studies/NAME.py`` and check it has ``run(output)``.

    Parameters
    ----------
    path : path
        A Python file defining ``run(output: pathlib.Path) -> None``, which writes its
        tables, figures and ``README.md`` into ``output`` (``results/NAME``).

    Returns
    -------
    module
        The imported module.

    Raises
    ------
    StudyError
        When the file is missing or has no callable ``run``.
    """
    import importlib.util

    p = Path(path)
    if not p.is_file():
        raise StudyError(f"{p}: no such study script")
    spec = importlib.util.spec_from_file_location(f"gpc_compare_study_{p.stem}", p)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses and pickling look the module up there)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "run", None)):
        raise StudyError(f"{p}: a study script must define run(output), which writes results")
    return module


def _docstring_line(path: Path) -> str:
    import ast

    try:
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    except (OSError, SyntaxError, ValueError):
        return "(unreadable)"
    return f"(script) {doc.strip().splitlines()[0] if doc.strip() else ''}"


def list_studies(directory: str | os.PathLike[str] = "studies") -> list[dict[str, Any]]:
    """The study files in ``directory``: name, path, description, or the error if malformed."""
    out = []
    for path in sorted(Path(directory).glob("*.py")):
        doc = _docstring_line(path)
        out.append({"name": path.stem, "path": str(path), "jobs": 1, "description": doc})
    for path in sorted(Path(directory).glob("*.toml")):
        try:
            cfg = load_study(path)
            out.append(
                {
                    "name": cfg.name,
                    "path": str(path),
                    "jobs": len(expand(cfg)),
                    "description": cfg.description,
                }
            )
        except StudyError as exc:
            out.append({"name": path.stem, "path": str(path), "jobs": 0, "description": str(exc)})
    return out
