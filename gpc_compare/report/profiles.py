"""Evidence profiles: each engine's log evidence along one hyperparameter, the others held.

A study records each engine's evidence only at the hyperparameters it ran at: with a
shared policy every engine sits at the same point, and the figure of those points alone
is a vertical stack. The report therefore refits each engine that computes an evidence
(and holds no draws: AIS is far too slow for a curve) on one split's training fold
(the first), along each shown hyperparameter, with the others at that engine's values on
that split (for a grid study, the grid point with its largest evidence). The fits are
one Laplace or EP fit per point, from the value used outwards, each warm-started from
its neighbour's state, and deterministic: each profile is kept in ``profiles.json``
beside the job records, keyed by its record, hyperparameter and grid, so that a rerun of
the report refits nothing (and an interrupted one resumes). A study with
``evidence_profiles = false`` (``gc.compare``'s) draws the recorded evidences only.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from .. import datasets as gc_datasets
from .._fit import fit
from ..engines import capabilities, get_engine
from ..hyperparameters import MEAN_BOUNDS
from ..study import JobRecord, StudyConfig, expand
from ..study.output import atomic_write
from ..study.problem import load_dataset, make_kernel, split_indices, stable_seed

__all__ = ["Profile", "evidence_profiles", "shown_hyperparameters"]

#: Profiles are drawn for training folds of at most this many cases (each is a dozen refits).
PROFILE_MAX_N = 1000

#: Records as :func:`gpc_compare.study.load_records` returns them.
Records = list[JobRecord]


@dataclass
class Profile:
    """One engine's log evidence along one hyperparameter on one split's training fold.

    Attributes
    ----------
    dataset, engine, name : str
        Data set label, engine label and hyperparameter name.
    split : int
        The split whose training fold was refitted.
    n_train : int
        Its training cases (the figure divides the evidence by it).
    grid, log_evidence : ndarray
        The hyperparameter's values and the evidence there (NaN where a fit failed).
    centre : float
        The value the engine ran at (the others are held at theirs).
    bounds : (float, float)
        The optimiser's bounds on this hyperparameter.
    failures : list of str
        Fits that failed (their point is NaN) or warned (e.g. not converged).
    """

    dataset: str
    engine: str
    name: str
    split: int
    n_train: int
    grid: np.ndarray
    log_evidence: np.ndarray
    centre: float
    bounds: tuple[float, float]
    failures: list[str] = field(default_factory=list)


def shown_hyperparameters(names: Sequence[str]) -> list[str]:
    """The first length-scale (all of them for an isotropic kernel) and the signal variance."""
    shown = [n for n in names if n.startswith("log_lengthscale")][:1]
    shown += [n for n in names if n.endswith("log_variance")][:1]
    return shown or list(names[:2])


def evidence_profiles(
    config: StudyConfig,
    records: Records,
    datasets: Sequence[str],
    engines: Sequence[str],
    *,
    n_points: int = 11,
    half_width: float = 2.5,
    cache: str | Path | None = None,
    progress: TextIO | None = None,
) -> list[Profile]:
    """Profiles of the log evidence of every engine that computes one without draws.

    Parameters
    ----------
    config : StudyConfig
        The study (its jobs say how each record's problem was built).
    records : list of JobRecord
        The finished jobs' records.
    datasets, engines : sequence of str
        Data set and engine labels to profile.
    n_points : int
        Points per profile.
    half_width : float
        Each profile spans the value used -/+ this much (log units), bounds included.
    cache : path, optional
        A JSON file of computed profiles (``RESULTS/profiles.json``): those found there
        are not refitted, and each engine's new ones are added as they finish.
    progress : text stream, optional
        Where a line per engine's profiles goes (e.g. ``sys.stderr``).

    Returns
    -------
    list of Profile
        One per data set, engine and shown hyperparameter (none for an engine without an
        evidence, or with draws).
    """
    jobs = {j.id: j for j in expand(config)}
    store = _read_cache(cache)
    out = []
    for dataset in datasets:
        for engine in engines:
            method = config.methods.get(engine, engine)
            caps = capabilities(method)
            if "evidence" not in caps or "draws" in caps:
                continue
            recs = [
                r
                for r in records
                if r.dataset == dataset
                and r.engine == engine
                and r.log_evidence is not None
                and r.id in jobs
            ]
            if not recs or (recs[0].n_train or 0) > PROFILE_MAX_N:
                continue  # (a curve of refits at n = 10^5 would take longer than the study)
            split = min(r.split for r in recs)
            centre = max((r for r in recs if r.split == split), key=lambda r: r.log_evidence)
            key = _key(centre, n_points, half_width)
            if key not in store:
                args = (jobs[centre.id], centre, method, n_points, half_width)
                _compute(store, key, args, cache, progress, f"{engine} on {dataset}")
            out += [_from_json(p) for p in store[key]]
    return out


def _compute(
    store: dict, key: str, args: tuple, cache: Any, progress: TextIO | None, what: str
) -> None:
    """Compute one record's profiles into ``store`` (and ``cache``, at once: an
    interrupted report keeps them), saying so on ``progress``."""
    start = time.perf_counter()
    if progress is not None:
        print(f"  evidence profiles: {what} ...", file=progress, flush=True)
    store[key] = [_as_json(p) for p in _profile(*args)]
    if cache is not None:
        atomic_write(Path(cache), json.dumps(store).encode())
    if progress is not None:
        took = time.perf_counter() - start
        print(f"  evidence profiles: {what}: {took:.1f} s", file=progress, flush=True)


def _key(rec: JobRecord, n_points: int, half_width: float) -> str:
    """What a cached profile is of: the record (its job, and so its data, split, engine
    and options), the hyperparameters it ran at and the grid."""
    values = ",".join(f"{v:.17g}" for v in rec.hyperparameters.values)
    return f"{rec.id}|{values}|{n_points}|{half_width:.17g}"


def _read_cache(cache: str | Path | None) -> dict[str, list[dict[str, Any]]]:
    """The cached profiles, or none when the file is missing or unreadable."""
    if cache is None:
        return {}
    try:
        store = json.loads(Path(cache).read_text())
    except (OSError, ValueError, RecursionError):
        return {}
    return store if isinstance(store, dict) else {}


def _as_json(prof: Profile) -> dict[str, Any]:
    out = dict(prof.__dict__)
    out["grid"] = prof.grid.tolist()
    out["log_evidence"] = [None if np.isnan(v) else float(v) for v in prof.log_evidence]
    out["bounds"] = list(prof.bounds)
    return out


def _from_json(value: dict[str, Any]) -> Profile:
    fields = dict(value)
    fields["grid"] = np.asarray(fields["grid"], dtype=float)
    fields["log_evidence"] = np.array(
        [np.nan if v is None else v for v in fields["log_evidence"]], dtype=float
    )
    fields["bounds"] = tuple(fields["bounds"])
    return Profile(**fields)


def _profile(job, rec: JobRecord, method: str, n_points: int, half_width: float) -> list[Profile]:
    """The profiles of one record's engine along its shown hyperparameters."""
    data = load_dataset(job.dataset, job.study_seed)
    split_seed = stable_seed("split", job.study_seed, job.dataset.seed_key)
    train, test = split_indices(data, job.splits, job.split, split_seed)
    X = gc_datasets.standardize(data.X[train], data.X[test if test.size else train])[0]
    y = data.y[train]
    kernel = make_kernel(job.kernel, X.shape[1])
    names = list(rec.hyperparameters.names)
    theta0 = np.asarray(rec.hyperparameters.values, dtype=float)
    bounds = np.vstack([kernel.bounds, [MEAN_BOUNDS]])[: len(names)]
    options = {k: v for k, v in job.options.items() if k not in ("objective",)}
    if rec.inducing is not None:  # a sparse engine: at the job's own inducing inputs, held
        options["inducing"] = np.asarray(rec.inducing.values, dtype=float)
        options.pop("optimize_inducing", None)
    warm = get_engine(method).takes_option("warm_start") and "warm_start" not in options
    out = []
    for name in shown_hyperparameters(names):
        i = names.index(name)
        grid = np.linspace(theta0[i] - half_width, theta0[i] + half_width, n_points)
        grid = np.unique(np.concatenate([grid, [theta0[i]]]))
        values = np.full(grid.size, np.nan)
        failures = []
        c = int(np.flatnonzero(grid == theta0[i])[0])
        problem = (X, y, method, kernel, job, options)
        # from the value used outwards, each fit warm-started from its neighbour's state
        steps = [(c, None)] + [(j, j - 1) for j in range(c + 1, grid.size)]
        steps += [(j, j + 1) for j in range(c - 1, -1, -1)]
        states: dict[int, Any] = {}
        for j, neighbour in steps:
            theta = theta0.copy()
            theta[i] = grid[j]
            start = states.get(neighbour) if warm and neighbour is not None else None
            values[j], states[j], messages = _fit_at(problem, theta, start)
            failures += [f"{name} = {grid[j]:.2f}: {m}" for m in messages]
        out.append(
            Profile(
                dataset=rec.dataset,  # (with a kernel axis, "DATASET / KERNEL")
                engine=job.engine,
                name=name,
                split=job.split,
                n_train=int(y.size),
                grid=grid,
                log_evidence=values,
                centre=float(theta0[i]),
                bounds=(float(bounds[i, 0]), float(bounds[i, 1])),
                failures=failures,
            )
        )
    return out


def _fit_at(problem: tuple, theta: np.ndarray, warm_start: Any) -> tuple[float, Any, list[str]]:
    """One profile point: the log evidence at ``theta`` (NaN where the fit fails), the
    fit's warm start for its neighbour, and its warnings or error."""
    X, y, method, kernel, job, options = problem
    p = kernel.n_hyperparameters
    extra = {} if warm_start is None else {"warm_start": warm_start}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            post = fit(
                X,
                y,
                method=method,
                kernel=kernel.with_theta(theta[:p]),
                likelihood=job.likelihood,
                mean=None if job.mean is None else float(theta[p]),
                **options,
                **extra,
            )
    except (ValueError, FloatingPointError, np.linalg.LinAlgError) as exc:
        return np.nan, None, [str(exc)]
    state = getattr(post, "warm_start", None)
    return float(post.log_marginal_likelihood), state, [str(w.message) for w in caught]
