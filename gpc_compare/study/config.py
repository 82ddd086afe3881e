"""Study files: reading and validating them (``load_study``).

Every field is checked when the file is loaded, so a malformed study fails at once with
the file and the field named (a :class:`StudyError`, exit code 2 on the command line),
never later in every job.
"""

from __future__ import annotations

import itertools
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import datasets as gc_datasets
from .. import evidence
from .._validation import OptionError
from ..engines import ENGINES, capabilities, engines_with, get_engine
from .datafiles import FILE_HINT, check_label, data_dir, file_dataset
from .kernels_config import parse_kernels
from .multiclass import multiclass_problem
from .problem import DatasetSpec, load_dataset, make_kernel

__all__ = ["DatasetSpec", "StudyConfig", "StudyError", "load_study"]

POLICIES = ("fixed", "optimize", "shared", "full_bayes", "grid")
BINARY_LIKELIHOODS = ("probit", "logistic")
LIKELIHOODS = (*BINARY_LIKELIHOODS, "softmax")
OBJECTIVES = ("evidence", "loo", "loo_fixed_sites")
SPLIT_KINDS = ("kfold", "holdout", "none")
#: Gold-standard evidence estimators a study may run beside its engines (``[evidence.NAME]``).
EVIDENCE_METHODS = ("ais", "smc")
#: Their options and defaults: AIS from EP's approximation or the prior (R&W-style probit or
#: logistic likelihood), and a longer anneal where the first is unhealthy (``recheck``).
EVIDENCE_OPTIONS: dict[str, Any] = {
    "start": "ep",
    "temperatures": None,  # 1000 from EP's approximation, 2000 from the prior (as the MCMC engine)
    "runs": 16,
    "se_max": 0.5,
    "recheck": None,
}
RECHECK_OPTIONS: dict[str, Any] = {"temperatures": 5000, "z": 5.0, "nats": 0.3}
#: SMC with an adaptive schedule (``gc.evidence.estimate``): its options and defaults.
SMC_OPTIONS: dict[str, Any] = {
    "start": "ep",
    **{k: v for k, v in evidence.OPTIONS["smc"].items() if k != "max_steps"},
    "se_max": 0.1,
    "recheck_runs": 64,  # where se > se_max, estimated again with this many runs (0: never)
}
#: The default hyperparameter source, in order of preference: EP (closest to the reference
#: in every comparison so far), else Laplace.
DEFAULT_SOURCES = ("ep", "laplace")


class StudyError(ValueError):
    """A study file that cannot be run: the message names the file and the field."""


@dataclass(frozen=True)
class StudyConfig:
    """A parsed, validated study file (see :func:`load_study`)."""

    name: str
    description: str
    datasets: tuple[DatasetSpec, ...]
    engines: Mapping[str, Mapping[str, Any]]
    methods: Mapping[str, str]
    likelihood: str
    kernel: Mapping[str, Any]  # (with a kernel axis, its first kernel)
    mean: float | None
    policy: str
    source: str | None
    n_restarts: int
    splits: Mapping[str, Any]
    seed: int
    reference: str | None
    path: str = ""
    #: The grid points (policy ``"grid"``): hyperparameter name -> value, one dict each.
    grid: tuple[Mapping[str, float], ...] = ()
    #: Gold-standard evidence estimators (``[evidence.NAME]``): label -> options.
    evidence: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: A kernel axis (``[kernels.LABEL]``): label -> kernel; empty with one ``[kernel]``.
    kernels: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def _fail(path: str, where: str, message: str) -> StudyError:
    return StudyError(f"{path}: {where}: {message}")


def _check_keys(table: Mapping[str, Any], allowed: Iterable[str], path: str, where: str) -> None:
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise _fail(path, where, f"unknown field(s) {unknown}; allowed: {sorted(allowed)}")


def _label(value: Any, p: str, where: str) -> str:
    try:
        return check_label(value)
    except ValueError as exc:
        raise _fail(p, where, str(exc)) from None


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
            likelihood = "probit"        # or "logistic", or "softmax" (C classes)
            mean = 0.0                   # constant prior mean, a hyperparameter; omit: zero
            reference = "mcmc"           # engine the others are compared with
            datasets = ["ionosphere", "sonar"]   # or [[datasets]] tables:
            # [[datasets]]  name = "breast_cancer"  subsample = 200  (+ loader options)
            # [[datasets]]  file = "data/mine.csv"  target = "label"  (your own CSV, .csv.gz
            #   or Parquet, relative to this file; options: study.datafiles.file_dataset)
            [kernel]     name = "squared_exponential"  lengthscale = "sqrt_d"  variance = 1.0
                         ard = false  variance_bounds = [0.01, 100.0]  (or "fixed")
                         lengthscale_bounds = [0.01, 1000.0]
            # or several kernels as an axis (data set x kernel x split x engine), each
            # table as [kernel], LABEL in file names: study.kernels_config.parse_kernels
            [kernels.se]  name = "squared_exponential"
            [kernels.matern52]                    # name defaults to a kernel-name label
            [hyperparameters]  policy = "optimize"  source = "ep"  n_restarts = 2
            [splits]     kind = "kfold"  n_splits = 5  n_repeats = 1   # r x k splits, or
                         # "holdout": test_size, n_repeats; or "none": all train (evidence)
            [engines.laplace]                         # one table per engine, its options
            [engines.ep]       schedule = "parallel"
            [engines.mcmc]     draws = 500  tune = 500  chains = 2  evidence = true
                               # evidence = "ais", evidence_options = {temperatures = 2000}
            # policy = "grid": every engine at every grid point, one axis per hyperparameter
            [hyperparameters.grid]  log_lengthscale = {start = 0.0, stop = 5.0, num = 7}
                                    log_variance = [0.0, 2.0, 4.0]
            # a gold-standard evidence job beside the engines (AIS; see studies/
            # approximations_grid.toml): start = "ep" | "prior", temperatures, runs, se_max
            [evidence.ais]          temperatures = 500  runs = 16
            [evidence.ais.recheck]  temperatures = 5000  z = 5.0  nats = 0.3
            # or SMC with an adaptive schedule (gc.evidence.estimate): start, particles,
            # runs, moves, sweeps, cess, se_max, recheck_runs (where se > se_max)
            [evidence.smc]          particles = 128  runs = 16

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
    what = "a study file is a TOML text file (e.g. studies/quick.toml) or a .py study script"
    if Path(path).is_dir():
        raise StudyError(f"{p}: is a directory, not a study file: {what}")
    try:
        with open(path, "rb") as fh:
            raw = tomllib.loads(fh.read().decode("utf-8"))
    except FileNotFoundError:
        raise StudyError(f"{p}: no such study file") from None
    except UnicodeDecodeError:
        raise StudyError(f"{p}: not a text file (not UTF-8): {what}") from None
    except OSError as exc:
        raise StudyError(f"{p}: cannot be read ({exc.strerror or exc}): {what}") from None
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
        "kernels",
        "hyperparameters",
        "splits",
        "engines",
        "evidence",
        "data_dir",
    }
    _check_keys(raw, top, p, "top level")
    name = _label(raw.get("name", Path(p).stem), p, "name")  # (labels become file names)
    seed = _int(raw.get("seed", 0), p, "seed", 0)
    likelihood = raw.get("likelihood", "probit")
    if likelihood not in LIKELIHOODS:
        raise _fail(p, "likelihood", f"must be one of {LIKELIHOODS}, got {likelihood!r}")
    mean = raw.get("mean")
    if mean is not None and not _is_number(mean):
        raise _fail(p, "mean", f"must be a finite number, got {mean!r}")

    splits = _parse_splits(raw.get("splits", {}), p)
    datasets, dims = _parse_datasets(raw.get("datasets"), splits, seed, p, likelihood, raw)
    engines, methods = _parse_engines(raw.get("engines"), p)
    for label, method in methods.items():  # an engine that cannot take the likelihood
        try:
            get_engine(method).check_likelihood(likelihood)
        except ValueError as exc:
            raise _fail(p, f"engines.{label}", str(exc)) from None
    try:  # one [kernel], or several [kernels.LABEL] as an axis (study.kernels_config)
        kernel, kernels = parse_kernels(raw)
    except ValueError as exc:
        raise StudyError(f"{p}: {exc}") from None
    at_source = any(o.get("hyperparameters") == "source" for o in engines.values())
    hyperparameters = raw.get("hyperparameters", {})
    policy = hyperparameters.get("policy") if isinstance(hyperparameters, dict) else None
    evidence = _parse_evidence(raw.get("evidence", {}), policy, list(engines), p)
    policy, source, n_restarts = _parse_hyperparameters(
        hyperparameters, methods, p, at_source, list(evidence)
    )
    for each in kernels.values() or [kernel]:  # the grid's axes must suit every kernel
        grid = _parse_grid(hyperparameters, policy, each, mean, dims, p)
    if problem := multiclass_problem(likelihood, mean, policy, evidence, engines):
        raise _fail(p, *problem)
    if policy == "full_bayes":
        for label, method in methods.items():
            if "hyperparameter_sampling" in capabilities(method) and engines[label].get("evidence"):
                raise _fail(
                    p,
                    f"engines.{label}.evidence",
                    "the evidence needs fixed hyperparameters, not full_bayes",
                )

    gold = [label for label, m in methods.items() if "reference" in capabilities(m)]
    reference = raw.get("reference", gold[0] if gold else None)
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
        grid=grid,
        evidence=evidence,
        kernels=kernels,
    )


def _parse_datasets(
    value: Any,
    splits: Mapping[str, Any],
    seed: int,
    p: str,
    likelihood: str = "probit",
    raw: Mapping[str, Any] | None = None,
) -> tuple[tuple[DatasetSpec, ...], dict[str, int]]:
    """The data sets, each loaded once here (so a bad option is named now, not in every
    job), and their input dimensions by label; a table with a ``file`` is a user's own."""
    if value is None:
        raise _fail(p, "datasets", "missing: name at least one data set")
    if not isinstance(value, list) or not value:
        raise _fail(p, "datasets", "must be a non-empty list of names or [[datasets]] tables")
    known = set(gc_datasets.DATASETS)
    specs, dims = [], {}
    folds = {"kfold": splits.get("n_splits"), "holdout": 2, "none": 1}[splits["kind"]]
    for i, item in enumerate(value):
        where = f"datasets[{i}]"
        if isinstance(item, dict) and "file" in item:  # a user's own table
            try:
                binary = likelihood in BINARY_LIKELIHOODS
                spec = file_dataset(item, data_dir(raw or {}, p), likelihood, binary, folds)
                data = load_dataset(spec, seed)
            except ValueError as exc:
                raise _fail(p, where, str(exc)) from None
            specs.append(spec)
            dims[spec.label] = int(data.X.shape[1])
            continue
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, dict) or "name" not in item:
            raise _fail(p, where, f"must be a data-set name or a table with a 'name' ({FILE_HINT})")
        name = item["name"]
        if not isinstance(name, str) or name not in known:
            known_text = f"unknown data set {name!r}; known: {sorted(known)} ({FILE_HINT})"
            raise _fail(p, f"{where}.name", known_text)
        options = {k: v for k, v in item.items() if k not in ("name", "subsample")}
        if "label" in options:
            _label(options["label"], p, f"{where}.label")
        subsample = item.get("subsample")
        if subsample is not None:
            subsample = _int(subsample, p, f"{where}.subsample", 10)
        try:  # load once here, so a bad option is named now and not in every job
            data = load_dataset(DatasetSpec(name, options, subsample), seed)
        except (TypeError, ValueError) as exc:
            raise _fail(p, where, f"cannot load {name!r} with {options}: {exc}") from None
        if data.n_classes != 2 and likelihood in BINARY_LIKELIHOODS:
            raise _fail(
                p, where, f"{name!r} has {data.n_classes} classes; likelihood = "
                f"{likelihood!r} is binary: use likelihood = \"softmax\" or a binary view"
            )  # fmt: skip
        smallest = int(np.min(np.bincount(data.y)))
        if smallest < folds:
            raise _fail(
                p, where, f"the smallest class has {smallest} cases, too few for {folds} "
                "stratified folds: use more cases or fewer splits"
            )  # fmt: skip
        specs.append(DatasetSpec(name, options, subsample))
        dims[specs[-1].label] = int(data.X.shape[1])
    labels = [s.label for s in specs]
    if len(set(labels)) != len(labels):
        raise _fail(p, "datasets", f"names repeat ({labels}): give repeats a distinct 'label'")
    return tuple(specs), dims


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
        _label(label, p, where)
        options = dict(options)
        method = options.pop("method", label)  # a label may name an engine variant
        if not isinstance(method, str) or method not in ENGINES:
            raise _fail(
                p,
                where if method == label else f"{where}.method",
                f"unknown engine {method!r}; known: {sorted(ENGINES)} (a table named "
                "otherwise needs method = ENGINE)",
            )
        if "warm_start" in options:
            raise _fail(
                p, f"{where}.warm_start", "is a starting point for one fit (n values from an "
                "earlier posterior): it has no meaning across a study's folds"
            )  # fmt: skip
        if options.get("hyperparameters", "source") != "source":
            raise _fail(
                p, f"{where}.hyperparameters", "the only per-engine setting is 'source' (run at "
                "the values the source engine selects)"
            )  # fmt: skip
        own = {k: v for k, v in options.items() if k not in ("objective", "hyperparameters")}
        try:  # the engine's own check, as gc.fit's: refused here, not in every job
            get_engine(method).check_options(own)
        except OptionError as exc:  # (its message starts with the option's name)
            message = str(exc).removeprefix(f"{exc.option} ")
            raise _fail(p, f"{where}.{exc.option}", message) from None
        except ValueError as exc:
            raise _fail(p, where, str(exc)) from None
        if "objective" in options:
            if options["objective"] not in OBJECTIVES:
                raise _fail(p, f"{where}.objective", f"must be one of {OBJECTIVES}")
            if "loo" not in capabilities(method) and options["objective"] != "evidence":
                raise _fail(
                    p, f"{where}.objective", "the LOO objectives need an engine with a "
                    f"leave-one-out predictive ({', '.join(engines_with('loo'))})"
                )  # fmt: skip
        engines[label] = options
        methods[label] = method
    return engines, methods


def runs_at_source(policy: str, method: str, at_source: bool = False) -> bool:
    """Whether an engine runs at the values the study's ``source`` engine selects.

    The one rule, for a study that has a source: under ``"shared"`` every engine does; an
    engine asked to (``hyperparameters = "source"``) does; and an engine without an
    evidence gradient cannot select its own values, so it always does. A study has a
    source when its policy is ``"shared"``, when it is ``"optimize"`` and some engine
    cannot select its own values, or when an engine asks for one.
    """
    return policy == "shared" or at_source or "evidence_gradient" not in capabilities(method)


def _parse_hyperparameters(
    value: Any,
    methods: Mapping[str, str],
    p: str,
    at_source: bool = False,
    estimators: list[str] | None = None,
):
    if not isinstance(value, dict):
        raise _fail(p, "hyperparameters", "must be a table")
    _check_keys(value, {"policy", "source", "n_restarts", "grid"}, p, "hyperparameters")
    if ("grid" in value) != (value.get("policy") == "grid"):
        raise _fail(
            p, "hyperparameters.grid", "policy = 'grid' and a [hyperparameters.grid] table go "
            "together: one names the values of each hyperparameter, the other uses them"
        )  # fmt: skip
    policy = value.get("policy", "optimize")
    if policy not in POLICIES:
        raise _fail(p, "hyperparameters.policy", f"must be one of {POLICIES}, got {policy!r}")
    n_restarts = _int(value.get("n_restarts", 2), p, "hyperparameters.n_restarts", 0)
    source = value.get("source")
    engines = list(methods)
    # engines that cannot select their own values, and gold-standard evidence estimators,
    # run at the source's
    borrowing = [e for e, m in methods.items() if runs_at_source(policy, m)] + (estimators or [])
    if policy == "grid":  # every engine at every grid point: nobody selects anything
        if source is not None or at_source:
            raise _fail(
                p, "hyperparameters.source" if source is not None else "engines",
                "a grid study has no source engine: every engine runs at every grid point",
            )  # fmt: skip
        return policy, None, n_restarts
    needs_source = policy == "shared" or at_source or (policy == "optimize" and bool(borrowing))
    if source is None and needs_source:
        source = next((e for e in DEFAULT_SOURCES if methods.get(e) == e), None)
        if source is None:
            with_gradient = ", ".join(engines_with("evidence_gradient"))
            raise _fail(
                p, "hyperparameters.source", f"{borrowing or engines} need an engine with an "
                f"evidence gradient ({with_gradient}) to select their values"
            )  # fmt: skip
    if source is not None:
        if source not in engines:
            raise _fail(p, "hyperparameters.source", f"{source!r} is not an engine of the study")
        if "evidence_gradient" not in capabilities(methods[source]):
            raise _fail(
                p, "hyperparameters.source", f"{source!r} gives no evidence gradient to optimise"
            )
    return policy, source if needs_source else None, n_restarts


def _parse_grid(
    value: Any,
    policy: str,
    kernel: Mapping[str, Any],
    mean: Any,
    dims: Mapping[str, int],
    p: str,
) -> tuple[dict[str, float], ...]:
    """The grid points of ``[hyperparameters.grid]``: the product of its axes, in order.

    Each axis is named by a hyperparameter (``log_lengthscale``, ``log_variance``, ...,
    ``mean``) and holds a list of values or ``{start, stop, num}`` (``numpy.linspace``);
    hyperparameters without an axis keep the kernel's (or the mean's) given value.
    """
    if policy != "grid":
        return ()
    axes = value["grid"]
    if not isinstance(axes, dict) or not axes:
        raise _fail(p, "hyperparameters.grid", "must be a table of axes, e.g. log_lengthscale")
    if "mean" in axes and mean is None:
        raise _fail(
            p, "hyperparameters.grid.mean", "a grid over the prior mean needs a constant mean: "
            "set mean = 0.0 at the top level (the value of points without a mean axis)"
        )  # fmt: skip
    for label, d in dims.items():  # every data set's kernel must have these hyperparameters
        names = make_kernel(kernel, d).hyperparameter_names + ([] if mean is None else ["mean"])
        _check_keys(axes, names, p, f"hyperparameters.grid (for {label!r}, d = {d})")
    values = []
    for name, axis in axes.items():
        where = f"hyperparameters.grid.{name}"
        if isinstance(axis, dict):
            _check_keys(axis, {"start", "stop", "num"}, p, where)
            if set(axis) != {"start", "stop", "num"} or not all(
                _is_number(axis[k]) for k in ("start", "stop")
            ):
                raise _fail(p, where, "needs start, stop (numbers) and num (points)")
            num = _int(axis["num"], p, f"{where}.num", 1)
            points = np.linspace(float(axis["start"]), float(axis["stop"]), num)
        elif isinstance(axis, list) and axis and all(_is_number(v) for v in axis):
            points = np.asarray(axis, dtype=float)
        else:
            raise _fail(p, where, f"must be numbers or {{start, stop, num}}, got {axis!r}")
        if not np.all(np.isfinite(points)):
            raise _fail(p, where, "values must be finite")
        values.append([float(v) for v in points])
    names = list(axes)
    return tuple(dict(zip(names, combo, strict=True)) for combo in itertools.product(*values))


def _is_number(value: Any) -> bool:
    """A finite number (TOML has inf and nan)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and np.isfinite(value)


def _parse_evidence(
    value: Any, policy: str, engine_labels: list[str], p: str
) -> dict[str, dict[str, Any]]:
    """Gold-standard evidence estimators, ``[evidence.NAME]``, with their options checked."""
    if not isinstance(value, dict):
        raise _fail(p, "evidence", "must hold one table per estimator, e.g. [evidence.ais]")
    if value and policy == "full_bayes":
        raise _fail(p, "evidence", "a gold-standard evidence needs fixed hyperparameters")
    out = {}
    for label, options in value.items():
        where = f"evidence.{label}"
        if not isinstance(options, dict):
            raise _fail(p, where, "must be a table of the estimator's options")
        if label in engine_labels:
            raise _fail(p, where, f"{label!r} already names an engine: give the estimator "
                        "another name (and method = 'ais')")  # fmt: skip
        options = dict(options)
        method = options.pop("method", label)
        if method not in EVIDENCE_METHODS:
            raise _fail(
                p, where, f"unknown evidence estimator {method!r}; known: {EVIDENCE_METHODS} "
                "(a table named otherwise needs method = ESTIMATOR)"
            )  # fmt: skip
        if method == "smc":
            out[label] = _parse_smc(options, p, where)
            continue
        _check_keys(options, EVIDENCE_OPTIONS, p, where)
        merged = {**EVIDENCE_OPTIONS, **options, "method": method}
        if merged["start"] not in ("ep", "prior"):
            raise _fail(p, f"{where}.start", f"must be 'ep' or 'prior', got {merged['start']!r}")
        if merged["temperatures"] is None:
            merged["temperatures"] = 1000 if merged["start"] == "ep" else 2000
        merged["temperatures"] = _int(merged["temperatures"], p, f"{where}.temperatures", 1)
        merged["runs"] = _int(merged["runs"], p, f"{where}.runs", 2)
        if not _is_number(merged["se_max"]) or not merged["se_max"] > 0:
            raise _fail(p, f"{where}.se_max", f"must be a positive number, got {merged['se_max']}")
        recheck = merged["recheck"]
        if recheck is not None:
            if not isinstance(recheck, dict):
                raise _fail(p, f"{where}.recheck", "must be a table (temperatures, z, nats)")
            _check_keys(recheck, RECHECK_OPTIONS, p, f"{where}.recheck")
            recheck = {**RECHECK_OPTIONS, **recheck}
            recheck["temperatures"] = _int(
                recheck["temperatures"], p, f"{where}.recheck.temperatures", 1
            )
            if recheck["temperatures"] <= merged["temperatures"]:
                raise _fail(
                    p, f"{where}.recheck.temperatures", "must exceed the first anneal's "
                    f"{merged['temperatures']} temperatures (it is the longer anneal)"
                )  # fmt: skip
            for key in ("z", "nats"):
                if not _is_number(recheck[key]) or recheck[key] < 0:
                    raise _fail(p, f"{where}.recheck.{key}", "must be a number >= 0")
            merged["recheck"] = recheck
        out[label] = merged
    return out


def _parse_smc(options: dict[str, Any], p: str, where: str) -> dict[str, Any]:
    """``[evidence.NAME] method = "smc"``: :data:`SMC_OPTIONS`, checked."""
    _check_keys(options, SMC_OPTIONS, p, where)
    merged = {**SMC_OPTIONS, **options, "method": "smc", "recheck": None}
    if merged["start"] not in ("ep", "prior"):
        raise _fail(p, f"{where}.start", f"must be 'ep' or 'prior', got {merged['start']!r}")
    if not _is_number(merged["se_max"]) or not merged["se_max"] > 0:
        raise _fail(p, f"{where}.se_max", f"must be a positive number, got {merged['se_max']}")
    merged["recheck_runs"] = _int(merged["recheck_runs"], p, f"{where}.recheck_runs", 0)
    if 0 < merged["recheck_runs"] <= merged["runs"]:
        raise _fail(p, f"{where}.recheck_runs", f"must be 0 or exceed runs ({merged['runs']})")
    own = {k: v for k, v in options.items() if k in evidence.OPTIONS["smc"]}
    try:  # the estimator's own check, as gc.evidence.estimate's
        evidence.check_options["smc"](own)
    except OptionError as exc:
        raise _fail(p, f"{where}.{exc.option}", str(exc).removeprefix(f"{exc.option} ")) from None
    return merged


def _parse_splits(value: Any, p: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(p, "splits", "must be a table")
    _check_keys(value, {"kind", "n_splits", "test_size", "n_repeats"}, p, "splits")
    kind = value.get("kind", "kfold")
    if kind not in SPLIT_KINDS:
        raise _fail(p, "splits.kind", f"must be one of {SPLIT_KINDS}, got {kind!r}")
    if kind == "none":
        if len(value) > 1:
            raise _fail(p, "splits", "kind = 'none' (every case trains, none is held out) has no "
                        "other fields")  # fmt: skip
        return {"kind": kind}
    if kind == "kfold":  # n_repeats kept only above 1: the job ids of one repeat stay the same
        if "test_size" in value:
            raise _fail(p, "splits", "test_size belongs to kind = 'holdout'")
        folds = {"kind": kind, "n_splits": _int(value.get("n_splits", 5), p, "splits.n_splits", 2)}
        repeats = _int(value.get("n_repeats", 1), p, "splits.n_repeats", 1)
        return folds if repeats == 1 else {**folds, "n_repeats": repeats}
    if "n_splits" in value:
        raise _fail(p, "splits.n_splits", "belongs to kind = 'kfold'; use n_repeats")
    test_size = value.get("test_size", 0.25)
    if isinstance(test_size, bool) or not isinstance(test_size, float) or not 0 < test_size < 1:
        raise _fail(p, "splits.test_size", f"must be a fraction in (0, 1), got {test_size!r}")
    n_repeats = _int(value.get("n_repeats", 5), p, "splits.n_repeats", 1)
    return {"kind": kind, "test_size": test_size, "n_repeats": n_repeats}
