"""A study's jobs: one per data set, split and engine (``expand``).

Which engines run at another engine's hyperparameters is decided here, once
(:func:`runs_at_source`), and recorded on each :class:`Job`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..engines import capabilities
from ..provenance import __version__
from .config import DatasetSpec, StudyConfig, runs_at_source
from .kernels_config import kernel_axis
from .problem import n_splits, stable_seed

__all__ = ["Job", "engine_order", "expand", "package_version"]


@dataclass(frozen=True)
class Job:
    """One engine on one split of one data set: everything a worker needs, picklable.

    Parameters
    ----------
    id : str
        The job's id: the data set's label, split (grid point, kernel label), engine and a
        hash of everything that determines the result.
    study : str
        The study's name.
    dataset : DatasetSpec
    split : int
        The split's index.
    engine : str
        The engine's label in the study (an evidence estimator's, for kind ``"evidence"``).
    method : str
        The engine (or estimator) it runs.
    options : mapping
        The engine's options.
    likelihood : str
    kernel : mapping
        The kernel's specification.
    mean : float or None
        The constant prior mean (a hyperparameter); None: zero.
    policy : str
        The study's hyperparameter policy.
    n_restarts : int
        Restarts of the hyperparameter optimisation.
    splits : mapping
        The study's splitting scheme.
    seed : int
        The job's own seed (from the study's seed, the data set, the split and the engine).
    study_seed : int
        The study's seed.
    depends_on : str, optional
        The id of the job whose selected hyperparameters this one runs at.
    optimize : bool
        Whether the job selects its own hyperparameters.
    kind : {"engine", "evidence"}
        ``"evidence"`` for a gold-standard evidence estimator.
    point : int, optional
        Grid studies: the grid point's index.
    hyperparameters : mapping, optional
        Grid studies: the grid point's hyperparameter values.
    kernel_label : str, optional
        The kernel's label in a study with a kernel axis (``[kernels.LABEL]``).
    psis : mapping, optional
        The Pareto-k check of the engine's Gaussian approximation (:func:`gpc_compare.psis`
        options), or None.
    """

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
    optimize: bool = False
    #: ``"engine"``, or ``"evidence"`` for a gold-standard evidence estimator
    kind: str = "engine"
    #: grid studies: the grid point's index and its hyperparameter values
    point: int | None = None
    hyperparameters: Mapping[str, float] | None = None
    #: the kernel's label in a study with a kernel axis (``[kernels.LABEL]``), else None
    kernel_label: str | None = None
    #: the Pareto-k check of the engine's Gaussian approximation (:func:`gpc_compare.psis`
    #: options), or None
    psis: Mapping[str, Any] | None = None

    def describe(self) -> str:
        """``dataset/split k/engine`` (or ``dataset/point k/engine``; ``dataset/kernel/...``
        with a kernel axis) for messages.

        Returns
        -------
        str
        """
        where = f"split {self.split}" if self.point is None else f"point {self.point}"
        if self.point is not None and self.split:
            where += f"/split {self.split}"
        data = self.dataset.label + ("" if self.kernel_label is None else f"/{self.kernel_label}")
        return f"{data}/{where}/{self.engine}"


def expand(config: StudyConfig) -> list[Job]:
    """The study's jobs: one per data set, (kernel,) (grid point,) split and engine, in a
    fixed order.

    A job's ``id`` hashes everything that determines its result, so a changed study file
    never reuses a stale result. Jobs that run at another engine's selected
    hyperparameters (:func:`~gpc_compare.study.config.runs_at_source`) name it in
    ``depends_on``; ``optimize`` says whether the job selects its own. Gold-standard
    evidence estimators (``[evidence.NAME]``) follow the engines, at the hyperparameters
    an engine without an evidence gradient would use.

    Parameters
    ----------
    config : StudyConfig

    Returns
    -------
    list of Job
    """
    jobs = []
    points: list[tuple[int | None, Mapping[str, float] | None]] = (
        list(enumerate(config.grid)) if config.grid else [(None, None)]
    )
    for data, kernel in (
        (d, k) for d in config.datasets for k in kernel_axis(config.kernel, config.kernels)
    ):
        for point, values in points:
            for split in range(n_splits(config.splits)):
                ids: dict[str, str] = {}
                for engine in engine_order(config):
                    jobs.append(
                        _engine_job(config, data, point, values, split, engine, ids, kernel)
                    )
                for label, options in config.evidence.items():
                    depends = ids[config.source] if config.source is not None else None
                    jobs.append(
                        _job(
                            config,
                            data,
                            point,
                            values,
                            split,
                            label,
                            options["method"],
                            options,
                            depends,
                            kind="evidence",
                            kernel=kernel,
                        )
                    )
    return jobs


def _engine_job(config, data, point, values, split, engine, ids, kernel) -> Job:
    options = dict(config.engines[engine])
    method = config.methods[engine]
    if config.policy == "full_bayes" and "hyperparameter_sampling" in capabilities(method):
        options["full_bayes"] = True
    depends = None
    at_source = options.pop("hyperparameters", None) == "source"
    if config.source is not None and engine != config.source:
        if runs_at_source(config.policy, method, at_source):
            depends = ids[config.source]
    job = _job(config, data, point, values, split, engine, method, options, depends, kernel=kernel)
    ids[engine] = job.id
    return job


def _job(
    config: StudyConfig,
    data: DatasetSpec,
    point: int | None,
    values: Mapping[str, float] | None,
    split: int,
    engine: str,
    method: str,
    options: Mapping[str, Any],
    depends: str | None,
    kind: str = "engine",
    kernel: tuple[str | None, Mapping[str, Any]] | None = None,
) -> Job:
    label, kernel_spec = (None, config.kernel) if kernel is None else kernel
    where = [split] if point is None else [point, split]
    seed = stable_seed(config.seed, data.seed_key, *where, engine)
    spec = {
        "dataset": [data.name, dict(data.options), data.subsample],
        "split": split,
        "engine": engine,
        "method": method,
        "options": options,
        "likelihood": config.likelihood,
        "kernel": dict(kernel_spec),
        "mean": config.mean,
        "policy": config.policy,
        "n_restarts": config.n_restarts,
        "splits": _split_key(config.splits),
        "seed": [config.seed, seed],
        "depends": depends,
        "version": package_version(),
    }
    if point is not None:  # (only new keys: the ids of studies without a grid stay as they were)
        spec["point"] = dict(values)
    if kind != "engine":
        spec["kind"] = kind
    if label is not None:  # a kernel axis (the ids of single-kernel studies stay as they were)
        spec["kernel_label"] = label
    psis = _psis(config, method, kind)
    if psis is not None:  # (so are the ids of studies without the check)
        spec["psis"] = psis
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()
    at = f"s{split}" if point is None else f"p{point}__s{split}"
    if label is not None:
        at = f"{label}__{at}"
    return Job(
        id=f"{data.label}__{at}__{engine}__{digest[:10]}",
        study=config.name,
        dataset=data,
        split=split,
        engine=engine,
        method=method,
        options=options,
        likelihood=config.likelihood,
        kernel=kernel_spec,
        mean=config.mean,
        policy=config.policy,
        n_restarts=config.n_restarts,
        splits=config.splits,
        seed=seed,
        study_seed=config.seed,
        depends_on=depends,
        optimize=kind == "engine"
        and depends is None
        and config.policy not in ("fixed", "grid")
        and "evidence_gradient" in capabilities(method),
        kind=kind,
        point=point,
        hyperparameters=None if values is None else dict(values),
        kernel_label=label,
        psis=psis,
    )


def _split_key(splits: Mapping[str, Any]) -> dict[str, Any]:
    """What of ``[splits]`` a job's id hashes. A k-fold split ``i`` (fold ``i % k`` of repeat
    ``i // k``, :func:`~gpc_compare.study.problem.split_indices`) does not depend on how many
    repeats the study makes, so ``n_repeats`` is left out: the jobs of repeat 0 keep their ids
    (and their records) when repeats are added."""
    if splits["kind"] == "kfold":
        return {k: v for k, v in splits.items() if k != "n_repeats"}
    return dict(splits)


def _psis(config: StudyConfig, method: str, kind: str) -> dict[str, Any] | None:
    """The study's Pareto-k check for an engine whose posterior is a Gaussian
    approximation (every engine without draws of its own), else None."""
    if config.psis is None or kind != "engine" or "draws" in capabilities(method):
        return None
    return dict(config.psis)


def engine_order(config: StudyConfig) -> list[str]:
    """The study's engines with the hyperparameter source first (others depend on it)."""
    names = list(config.engines)
    if config.source is not None:
        names.remove(config.source)
        names.insert(0, config.source)
    return names


def package_version() -> str:
    """The package version, part of every job id (a new version recomputes every job)."""
    return __version__
