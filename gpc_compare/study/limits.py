"""What a study may ask for: a study that cannot finish is refused when it loads.

A study's size is its product of data sets, kernels, grid points, splits and engines; a
typo in one factor (``n_repeats = 100000000``) makes a study that would spend its first
minutes expanding jobs and never end, or a grid whose points alone exhaust the memory.
Each is refused at load (a :class:`~.fields.StudyError`, exit code 2 on the command line)
with the estimate and the limit, before anything is written or run:

``max_jobs`` (default 20,000)
    Jobs: data sets x kernels x grid points x splits x (engines + evidence estimators).
    The committed studies have at most 1,764; 100,000 jobs took 30 s before the first
    started.
``max_grid_points`` (default 10,000)
    Points of ``[hyperparameters.grid]`` (the product of its axes), counted before any is
    formed.
``max_restarts`` (default 100)
    ``[hyperparameters] n_restarts``: each restart is a whole optimisation in every job
    that selects its hyperparameters.
``max_repeats`` (default 1,000)
    ``[splits] n_repeats``: each repeat refits every engine on every data set.

A study raises a limit deliberately in its ``[limits]`` table (``max_jobs = 50000``);
``gpc-compare run --no-limits`` (``load_study(path, limits=False)``) lifts them all, and
the memory estimate below.

Memory, at load: an engine whose options ask it to store more than this machine's memory
holds (MCMC's ``draws`` x ``chains`` x n values, :meth:`Engine.memory_bytes`) is refused
naming the engine's option, where its n x n matrices alone would fit (a job too large for
a dense engine's n x n matrices is a design choice, not a typo: its job is skipped, and
said, as before). The worker checks again on the machine that runs the job.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._validation import available_memory
from ..engines import Engine, get_engine
from .fields import check_keys, fail
from .problem import load_dataset, make_kernel

__all__ = ["LIMITS", "Limits", "check_jobs", "check_memory", "check_repeats", "check_restarts"]

#: A limit's name -> what it counts (its default is :class:`Limits`').
LIMITS = {
    "max_jobs": "jobs (data sets x kernels x grid points x splits x engines)",
    "max_grid_points": "points of [hyperparameters.grid]",
    "max_restarts": "optimiser restarts ([hyperparameters] n_restarts)",
    "max_repeats": "repeats of the splits ([splits] n_repeats)",
}
_LIFT = "raise it in the study's [limits] table ({name} = {value}), or run with --no-limits"


@dataclass(frozen=True)
class Limits:
    """A study's limits (see the module note); ``None`` lifts one, :meth:`lifted` all
    (and the memory estimate at load)."""

    max_jobs: int | None = 20_000
    max_grid_points: int | None = 10_000
    max_restarts: int | None = 100
    max_repeats: int | None = 1_000
    memory: bool = True

    @classmethod
    def lifted(cls) -> Limits:
        """No limit at all: ``--no-limits``."""
        return cls(None, None, None, None, memory=False)

    @classmethod
    def parse(cls, value: Any, p: str) -> Limits:
        """The ``[limits]`` table of study ``p``: whole numbers >= 1, defaults for the rest."""
        if not isinstance(value, dict):
            raise fail(p, "limits", "must be a table, e.g. [limits] max_jobs = 50000")
        check_keys(value, LIMITS, p, "limits")
        given = {}
        for name, limit in value.items():
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
                raise fail(p, f"limits.{name}", f"must be a whole number >= 1, got {limit!r}")
            given[name] = limit
        return cls(**given)

    def exceeded(self, name: str, count: int, p: str, where: str, what: str) -> None:
        """Refuse ``count`` beyond the limit ``name`` (a StudyError at ``where`` saying
        ``what`` the count means, the limit, and how to raise it)."""
        limit = getattr(self, name)
        if limit is None or count <= limit:
            return
        lift = _LIFT.format(name=name, value=count)
        raise fail(
            p,
            where,
            f"{what}: more than the limit of {limit:,} {LIMITS[name]}; if you mean it, {lift}",
        )


def check_repeats(splits: Mapping[str, Any], limits: Limits, p: str) -> None:
    """Refuse more repeats of the splits than ``max_repeats``."""
    repeats = int(splits.get("n_repeats", 1))
    per = splits.get("n_splits", 1) if splits["kind"] == "kfold" else 1
    what = f"{repeats:,} repeats ({repeats * per:,} splits, each refitting every engine)"
    limits.exceeded("max_repeats", repeats, p, "splits.n_repeats", what)


def check_restarts(n_restarts: int, limits: Limits, p: str) -> None:
    """Refuse more optimiser restarts than ``max_restarts``."""
    what = (
        f"n_restarts = {n_restarts:,} ({n_restarts + 1:,} optimisations, each tens of "
        "fits, in every job that selects its hyperparameters)"
    )
    limits.exceeded("max_restarts", n_restarts, p, "hyperparameters.n_restarts", what)


def check_grid(sizes: Mapping[str, int], limits: Limits, p: str) -> None:
    """Refuse a grid of more points than ``max_grid_points`` (``sizes``: points per axis),
    counted before any point is formed."""
    count = math.prod(sizes.values())
    axes = " x ".join(f"{name}: {n:,}" for name, n in sizes.items())
    what = f"{count:,} grid points ({axes})"
    limits.exceeded("max_grid_points", count, p, "hyperparameters.grid", what)


def check_jobs(factors: Mapping[str, tuple[str, int]], limits: Limits, p: str) -> None:
    """Refuse more jobs than ``max_jobs``: ``factors`` maps each factor's words ("data
    sets") to the field it comes from and its count; the error names the largest's field."""
    count = math.prod(n for _, n in factors.values())
    parts = " x ".join(f"{n:,} {words}" for words, (_, n) in factors.items())
    where = max(factors.values(), key=lambda f: f[1])[0]
    limits.exceeded("max_jobs", count, p, where, f"{count:,} jobs ({parts})")


def _train_size(n: int, splits: Mapping[str, Any]) -> int:
    """The largest training fold of n cases (stratified folds differ by a case at most)."""
    if splits["kind"] == "kfold":
        return n - n // splits["n_splits"]
    if splits["kind"] == "holdout":
        return n - math.ceil(splits["test_size"] * n)
    return n


def check_memory(config: Any, limits: Limits, p: str, available: int | None = None) -> None:
    """Refuse an engine whose options ask it to store more than the memory available on
    the largest training fold, where its n x n matrices alone would fit (see the module
    note); ``config`` is the study's fields (a StudyConfig). Only engines whose estimate
    depends on their options (that override :meth:`Engine.memory_bytes`) are checked."""
    if not limits.memory:
        return
    available = available_memory() if available is None else available
    storing = {
        label: get_engine(method)
        for label, method in config.methods.items()
        if type(get_engine(method)).memory_bytes is not Engine.memory_bytes
    }
    if available is None or not storing:
        return
    kernels = list(config.kernels.values()) or [config.kernel]
    for spec in config.datasets:
        data = load_dataset(spec, config.seed)
        n = _train_size(data.n_samples, config.splits)
        classes = data.n_classes if config.likelihood == "softmax" else None
        for label, engine in storing.items():
            own = {k: v for k, v in config.engines[label].items() if engine.takes_option(k)}
            options = engine.options(own)
            for kernel_spec in kernels:
                kernel = make_kernel(kernel_spec, data.X.shape[1])
                sizes = {"kernel": kernel, "classes": classes}
                need = engine.memory_bytes(n, options, **sizes)
                if need <= available or engine.dense_bytes(n, **sizes) > available:
                    continue  # (fits, or a dense engine's job the worker skips, and says)
                problem = engine.memory_problem(n, options, available=available, **sizes)
                raise fail(
                    p,
                    f"engines.{label}",
                    f"on {spec.label!r}: {problem}; if this machine is not the one that "
                    "runs the jobs, run with --no-limits (each job is checked again where "
                    "it runs)",
                )
