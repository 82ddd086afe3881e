"""Study files: reading and validating them (``load_study``).

Every field is checked when the file is loaded, so a malformed study fails at once with
the file and the field named (a :class:`StudyError`, exit code 2 on the command line),
never later in every job.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import datasets as gc_datasets
from .._validation import OptionError
from ..engines import ENGINES, capabilities, engines_with, get_engine
from ..hyperparameters import N_RESTARTS
from .datafiles import FILE_HINT, data_dir, file_dataset
from .evidence_config import parse_evidence
from .fields import SPLIT_KINDS, StudyError, parse_psis, plain
from .fields import boolean as _bool
from .fields import check_keys as _check_keys
from .fields import fail as _fail
from .fields import integer as _int
from .fields import is_number as _is_number
from .fields import label as _label
from .fields import parse_grid as _parse_grid
from .fields import parse_splits as _parse_splits
from .kernels_config import parse_kernels
from .limits import Limits, check_grid, check_jobs, check_memory, check_repeats, check_restarts
from .multiclass import multiclass_problem
from .problem import DatasetSpec, load_dataset, n_splits
from .studyfile import check_depth, read_toml

__all__ = ["SPLIT_KINDS", "DatasetSpec", "StudyConfig", "StudyError", "load_study"]

POLICIES = ("fixed", "optimize", "shared", "full_bayes", "grid")
BINARY_LIKELIHOODS = ("probit", "logistic")
LIKELIHOODS = (*BINARY_LIKELIHOODS, "softmax", "multinomial_probit", "robustmax")
OBJECTIVES = ("evidence", "loo", "loo_fixed_sites")
#: The default hyperparameter source, in order of preference: EP (closest to the reference
#: in every comparison so far), else Laplace.
DEFAULT_SOURCES = ("ep", "laplace")


@dataclass(frozen=True)
class StudyConfig:
    """A parsed, validated study: from a file (:func:`load_study`) or built in Python
    (:meth:`from_dict`).

    Parameters
    ----------
    name, description, likelihood, path : str
        The study's name (its result folder's), what it is for, the likelihood, and the
        study file (empty without one).
    datasets : tuple of DatasetSpec
    engines, methods : mapping
        Engine label -> its options (``[engines.LABEL]``); and -> the engine it runs.
    kernel, kernels : mapping
        The kernel (``[kernel]``; with a kernel axis, its first kernel), and the kernel
        axis (``[kernels.LABEL]``): label -> kernel, empty with one ``[kernel]``.
    mean : float or None
        The constant prior mean (a hyperparameter); None: zero.
    policy : {"fixed", "optimize", "shared", "full_bayes", "grid"}
    source, reference : str or None
        The engine whose selected hyperparameters the others run at (where the policy
        shares them), and the engine the others are compared with.
    seed, n_restarts : int
        The seed of the splits, restarts and samplers; the optimiser's restarts.
    splits : mapping
        The splitting scheme (``[splits]``: ``kind`` and its options).
    grid : tuple of mapping
        The grid points (policy ``"grid"``): hyperparameter name -> value, one dict each.
    evidence : mapping
        Gold-standard evidence estimators (``[evidence.NAME]``): label -> options.
    psis : mapping or None
        The Pareto-k check of every Gaussian approximation (:func:`gpc_compare.psis`'s
        options: ``draws``, ``proposal``); None: off.
    evidence_profiles : bool
        The report's evidence profiles (refits; ``gc.compare``'s studies set it false).
    """

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
    grid: tuple[Mapping[str, float], ...] = ()
    evidence: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    kernels: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    psis: Mapping[str, Any] | None = None
    evidence_profiles: bool = True

    @classmethod
    def from_dict(
        cls,
        study: Mapping[str, Any],
        path: str | os.PathLike[str] | None = None,
        *,
        limits: bool = True,
    ) -> StudyConfig:
        """A study from the fields a study file holds, validated as :func:`load_study`
        validates a file (which reads the TOML and calls this).

        Parameters
        ----------
        study : mapping
            The study file's fields as the TOML reader gives them (tuples and NumPy
            scalars are taken as lists and numbers): ``datasets`` and ``engines``
            required, ``name`` too without a ``path``. See :func:`load_study`.
        path : path, optional
            The study file, written or to be written: the default ``name`` (its stem),
            the folder a data set's relative ``file`` starts from (without one, the working
            directory), and the name the errors give (without one, ``<study>``).
        limits : bool
            Refuse a study beyond its limits (``[limits]``: jobs, grid points, restarts,
            repeats; and an engine's options beyond this machine's memory), with the
            estimate and the limit: :mod:`gpc_compare.study.limits`. False lifts them all
            (``gpc-compare run --no-limits``).

        Returns
        -------
        StudyConfig
            ``path`` is ``str(path)``, or empty without one.

        Raises
        ------
        StudyError
            (a ValueError) naming the field, for anything malformed.
        """
        p = "<study>" if path is None else str(path)
        check_depth(study, p)  # (before anything walks it by recursion)
        return _validate(plain(study), p, path is not None, limits)


def load_study(path: str | os.PathLike[str], *, limits: bool = True) -> StudyConfig:
    """Read and validate a study file (:meth:`StudyConfig.from_dict` of its TOML).

    Parameters
    ----------
    path : path
        A TOML file with these fields (only ``datasets`` and ``engines`` are required)::

            name = "quick"               # default: the file name without .toml
            description = "..."
            seed = 0                     # seeds splits, restarts and samplers
            likelihood = "probit"        # or "logistic"; C classes: "softmax",
                                         # "multinomial_probit", "robustmax"
            mean = 0.0                   # constant prior mean, a hyperparameter; omit: zero
            reference = "mcmc"           # engine the others are compared with
            psis = true                  # the Pareto-k check of every Gaussian
                                         # approximation: gc.psis (or {draws = 4000,
                                         # proposal = "student_t"}); default false
            evidence_profiles = true     # the report's refits along each hyperparameter
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
            [splits]     kind = "kfold"  n_splits = 5  n_repeats = 2   # r x k splits
                         # (n_repeats default: ceil(10 / n_splits), >= 10 fold pairs), or
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
            # what the study may ask for (study.limits), refused at load with the
            # estimate: raise one deliberately, or lift all with limits=False (--no-limits)
            [limits]  max_jobs = 20000  max_grid_points = 10000  max_restarts = 100
                      max_repeats = 1000

    limits : bool
        False lifts the limits (see :meth:`StudyConfig.from_dict`).

    Returns
    -------
    StudyConfig

    Raises
    ------
    StudyError
        (a ValueError) naming the file and the field, for anything malformed: a TOML
        syntax error, an unknown field, data set, engine, option or kernel, a bad value,
        a study beyond its limits.
    """
    return StudyConfig.from_dict(read_toml(path), path, limits=limits)


#: The top-level fields of a study.
TOP_FIELDS = (
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
    "psis",
    "limits",
    "evidence_profiles",
)


def _validate(raw: dict[str, Any], p: str, named: bool, limits: bool = True) -> StudyConfig:
    """:meth:`StudyConfig.from_dict` of the plain mapping ``raw``, ``p`` naming the study
    (a file when ``named``), refused beyond its limits unless ``limits`` is False."""
    if not isinstance(raw, dict):
        raise StudyError(f"{p}: a study is a table of fields, got {type(raw).__name__}")
    _check_keys(raw, TOP_FIELDS, p, "top level")
    if "name" not in raw and not named:
        raise _fail(p, "name", "missing: a study built in Python needs a name")
    name = _label(raw.get("name", Path(p).stem), p, "name")  # (labels become file names)
    seed = _int(raw.get("seed", 0), p, "seed", 0)
    likelihood, mean = _model(raw, p)
    bounds = Limits.parse(raw.get("limits", {}), p) if limits else Limits.lifted()
    splits = _parse_splits(raw.get("splits", {}), p)
    check_repeats(splits, bounds, p)
    datasets, dims = _parse_datasets(raw.get("datasets"), splits, seed, p, likelihood, raw)
    engines, methods = _parse_engines(raw.get("engines"), p)
    _check_likelihoods(methods, likelihood, p)
    _check_objectives(engines, methods, likelihood, p)
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
    check_restarts(n_restarts, bounds, p)
    for each in kernels.values() or [kernel]:  # the grid's axes must suit every kernel
        grid = _parse_grid(
            hyperparameters, policy, each, mean, dims, p, lambda s: check_grid(s, bounds, p)
        )
    factors = {
        "data set(s)": ("datasets", len(datasets)),
        "kernel(s)": ("kernels", max(len(kernels), 1)),
        "grid point(s)": ("hyperparameters.grid", max(len(grid), 1)),
        "split(s)": ("splits", n_splits(splits)),
        "engine(s) and estimator(s)": ("engines", len(engines) + len(evidence)),
    }
    check_jobs(factors, bounds, p)
    if problem := multiclass_problem(likelihood, mean, policy, evidence, engines):
        raise _fail(p, *problem)
    _check_full_bayes(policy, engines, methods, p)
    config = StudyConfig(
        name=name,
        description=str(raw.get("description", "")),
        datasets=datasets,
        engines=engines,
        methods=methods,
        likelihood=likelihood,
        kernel=kernel,
        mean=mean,
        policy=policy,
        source=source,
        n_restarts=n_restarts,
        splits=splits,
        seed=seed,
        reference=_reference(raw, engines, methods, p),
        path=p if named else "",
        grid=grid,
        evidence=evidence,
        kernels=kernels,
        psis=parse_psis(raw.get("psis", False), p),
        evidence_profiles=_bool(raw.get("evidence_profiles", True), p, "evidence_profiles"),
    )
    check_memory(config, bounds, p)  # (an engine's options beyond this machine's memory)
    return config


def _model(raw: Mapping[str, Any], p: str) -> tuple[str, float | None]:
    """The likelihood and the constant prior mean (None: zero mean)."""
    likelihood = raw.get("likelihood", "probit")
    if likelihood not in LIKELIHOODS:
        raise _fail(p, "likelihood", f"must be one of {LIKELIHOODS}, got {likelihood!r}")
    mean = raw.get("mean")
    if mean is not None and not _is_number(mean):
        raise _fail(p, "mean", f"must be a finite number, got {mean!r}")
    return str(likelihood), None if mean is None else float(mean)


def _check_likelihoods(methods: Mapping[str, str], likelihood: str, p: str) -> None:
    """Refuse an engine that cannot take the likelihood."""
    for label, method in methods.items():
        try:
            get_engine(method).check_likelihood(likelihood)
        except ValueError as exc:
            raise _fail(p, f"engines.{label}", str(exc)) from None


def _check_objectives(engines, methods: Mapping[str, str], likelihood: str, p: str) -> None:
    """Refuse a LOO objective where the engine gives no LOO with the study's likelihood
    (EP's is probit-only): at load, not in every job."""
    for label, method in methods.items():
        objective = engines[label].get("objective", "evidence")
        if objective != "evidence" and "loo" not in capabilities(method, likelihood):
            raise _fail(
                p,
                f"engines.{label}.objective",
                f"{objective!r} needs the engine's leave-one-out predictive, which the "
                f"{method!r} engine does not give with the {likelihood!r} likelihood",
            )


def _check_full_bayes(policy: str, engines, methods: Mapping[str, str], p: str) -> None:
    """Refuse an evidence under ``full_bayes`` (it needs fixed hyperparameters)."""
    if policy != "full_bayes":
        return
    for label, method in methods.items():
        if "hyperparameter_sampling" in capabilities(method) and engines[label].get("evidence"):
            raise _fail(
                p,
                f"engines.{label}.evidence",
                "the evidence needs fixed hyperparameters, not full_bayes",
            )


def _reference(raw: Mapping[str, Any], engines, methods: Mapping[str, str], p: str) -> str | None:
    """The engine the others are compared with: ``reference``, or the first engine that
    declares the ``"reference"`` capability (None without one)."""
    gold = [label for label, m in methods.items() if "reference" in capabilities(m)]
    reference = raw.get("reference", gold[0] if gold else None)
    if reference is not None and (not isinstance(reference, str) or reference not in engines):
        raise _fail(p, "reference", f"{reference!r} is not one of the engines {list(engines)}")
    return reference


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
                p,
                where,
                f"{name!r} has {data.n_classes} classes; likelihood = "
                f'{likelihood!r} is binary: use likelihood = "softmax" (or '
                '"multinomial_probit") or a binary view',
            )
        smallest = int(np.min(np.bincount(data.y)))
        if smallest < folds:
            raise _fail(
                p,
                where,
                f"the smallest class has {smallest} cases, too few for {folds} "
                "stratified folds: use more cases or fewer splits",
            )
        specs.append(DatasetSpec(name, options, subsample))
        dims[specs[-1].label] = int(data.X.shape[1])
    labels = [s.label for s in specs]
    if len(set(labels)) != len(labels):
        twice = [s for s in specs if labels.count(s.label) > 1]
        which = ", ".join(f"{s.file or s.name} as {s.label!r}" for s in twice)
        raise _fail(
            p,
            "datasets",
            f"names repeat ({which}): their jobs and rows would mix; give repeats a "
            "distinct 'label'",
        )
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
                p,
                f"{where}.warm_start",
                "is a starting point for one fit (n values from an "
                "earlier posterior): it has no meaning across a study's folds",
            )
        if options.get("hyperparameters", "source") != "source":
            raise _fail(
                p,
                f"{where}.hyperparameters",
                "the only per-engine setting is 'source' (run at "
                "the values the source engine selects)",
            )
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
                    p,
                    f"{where}.objective",
                    "the LOO objectives need an engine with a "
                    f"leave-one-out predictive ({', '.join(engines_with('loo'))})",
                )
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
            p,
            "hyperparameters.grid",
            "policy = 'grid' and a [hyperparameters.grid] table go "
            "together: one names the values of each hyperparameter, the other uses them",
        )
    policy = value.get("policy", "optimize")
    if policy not in POLICIES:
        raise _fail(p, "hyperparameters.policy", f"must be one of {POLICIES}, got {policy!r}")
    n_restarts = _int(value.get("n_restarts", N_RESTARTS), p, "hyperparameters.n_restarts", 0)
    source = value.get("source")
    engines = list(methods)
    # engines that cannot select their own values, and gold-standard evidence estimators,
    # run at the source's
    borrowing = [e for e, m in methods.items() if runs_at_source(policy, m)] + (estimators or [])
    if policy == "grid":  # every engine at every grid point: nobody selects anything
        if source is not None or at_source:
            raise _fail(
                p,
                "hyperparameters.source" if source is not None else "engines",
                "a grid study has no source engine: every engine runs at every grid point",
            )
        return policy, None, n_restarts
    needs_source = policy == "shared" or at_source or (policy == "optimize" and bool(borrowing))
    if source is None and needs_source:
        source = next((e for e in DEFAULT_SOURCES if methods.get(e) == e), None)
        if source is None:
            with_gradient = ", ".join(engines_with("evidence_gradient"))
            raise _fail(
                p,
                "hyperparameters.source",
                f"{borrowing or engines} need an engine with an "
                f"evidence gradient ({with_gradient}) to select their values",
            )
    if source is not None:
        if source not in engines:
            raise _fail(p, "hyperparameters.source", f"{source!r} is not an engine of the study")
        if "evidence_gradient" not in capabilities(methods[source]):
            raise _fail(
                p, "hyperparameters.source", f"{source!r} gives no evidence gradient to optimise"
            )
    return policy, source if needs_source else None, n_restarts


def _parse_evidence(
    value: Any, policy: str, engine_labels: list[str], p: str
) -> dict[str, dict[str, Any]]:
    """Gold-standard evidence estimators, ``[evidence.NAME]``, checked through the options
    record each stands for (:mod:`.evidence_config`)."""
    try:
        return parse_evidence(value, policy, engine_labels)
    except ValueError as exc:
        raise StudyError(f"{p}: {exc}") from None
