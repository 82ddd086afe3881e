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
from .problem import n_splits, stable_seed

__all__ = ["Job", "engine_order", "expand", "package_version"]


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
    optimize: bool = False

    def describe(self) -> str:
        """``dataset/split k/engine`` for messages and the progress line."""
        return f"{self.dataset.label}/split {self.split}/{self.engine}"


def expand(config: StudyConfig) -> list[Job]:
    """The study's jobs: one per data set, split and engine, in a deterministic order.

    A job's ``id`` hashes everything that determines its result, so a changed study file
    never reuses a stale result. Jobs that run at another engine's selected
    hyperparameters (:func:`~gpc_compare.study.config.runs_at_source`) name it in
    ``depends_on``; ``optimize`` says whether the job selects its own.

    Parameters
    ----------
    config : StudyConfig

    Returns
    -------
    list of Job
    """
    jobs = []
    for data in config.datasets:
        for split in range(n_splits(config.splits)):
            ids: dict[str, str] = {}
            for engine in engine_order(config):
                options = dict(config.engines[engine])
                method = config.methods[engine]
                samples_theta = "hyperparameter_sampling" in capabilities(method)
                if config.policy == "full_bayes" and samples_theta:
                    options["full_bayes"] = True
                depends = None
                at_source = options.pop("hyperparameters", None) == "source"
                if config.source is not None and engine != config.source:
                    if runs_at_source(config.policy, method, at_source):
                        depends = ids[config.source]
                seed = stable_seed(config.seed, data.label, split, engine)
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
                    "version": package_version(),
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
                        optimize=depends is None
                        and config.policy != "fixed"
                        and "evidence_gradient" in capabilities(method),
                    )
                )
    return jobs


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
