"""The run plan: each engine's time and memory, estimated before a study runs (issue 34).

``gpc-compare compare`` and :func:`gpc_compare.compare` print the plan (engine, jobs,
training cases, estimated time per job and in all, memory per job) and refuse a study
whose estimate exceeds ``max_minutes`` (a ValueError; exit code 2 on the command line),
naming the ways out: fewer cases (``--subsample N``, the largest that fits said) and the
sparse engines (``fitc_ep``, ``fitc_laplace``, ``svgp``: O(n M^2) time, O(n M) memory).

The cost model, per job (one engine on one training fold of n cases in d inputs)::

    one fit  t = c0 + a s^2 + b s^3,  s = n / 1000              [dense engines]
             t = c0 + a s,  s = n M^2 / (1000 x 128^2)          [sparse, M inducing inputs]
             t = c s^alpha (1 + d)^beta,  s = n / 1000          [MCMC, default draws]
    job      T = j + t(n) f (1 + R E r)

where R = n_restarts + 1 optimiser runs, E the evaluations per run and r the time of
one evaluation (a fit and its gradient) in fits, for a job that selects its
hyperparameters (policy ``optimize`` or ``full_bayes``, and ``shared``'s source engine);
R E r = 0 for one fit at given hyperparameters; f is the likelihood's factor (a logistic
fit against a probit one: EP's logistic moments are by quadrature) and j the job's own
work besides its fits (data, prediction, the PSIS check). Dense fits cost O(n^3) (the Cholesky
factor of an n x n matrix, Rasmussen and Williams 2006, Algorithm 3.1/3.5), so alpha
is the cubic term that dominates at large n, the quadratic one (kernel matrices, EP's
site updates) below a few thousand cases.

The constants (:data:`ENGINE_COSTS`) are fitted by ``benchmarks/plan_calibration.py``
by least squares in log seconds on this machine's committed timings: the job records of
the committed studies (``results/*/jobs/*.json``, n = 120 to 456) and the scale study's
fits (``results/scale/summary.csv``, n = 500 to 100,000); their observations are
``results/benchmarks/plan_observations.csv`` and the estimate against the actual time,
per committed study and engine, ``results/benchmarks/plan.md``
(``tests/findings/test_findings_plan.py`` refits both). The estimates are of a loaded
2-core machine; a job's own time varies with its data (EP on separable data iterates
longer), so the plan is of a study's total, which is what it is checked on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np

__all__ = [
    "DEFAULT_MAX_MINUTES",
    "ENGINE_COSTS",
    "SPARSE_ABOVE",
    "Plan",
    "PlanRow",
    "check_plan",
    "fit_seconds",
    "job_seconds",
    "plan_data_study",
    "plan_study",
    "size_factor",
]

#: ``compare``'s default limit on a plan's estimated wall time, in minutes.
DEFAULT_MAX_MINUTES = 30.0
#: Above this many training cases the plan suggests the sparse engines.
SPARSE_ABOVE = 3000
#: The sparse engines, and the inducing inputs they use when not told.
SPARSE = ("fitc_ep", "fitc_laplace", "svgp")
DEFAULT_INDUCING = 128

#: The engines the model is calibrated for (binary likelihoods).
METHODS = ("laplace", "ep", "kl", "vb", "mcmc", *SPARSE)

#: The cost model's constants per engine (see the module note), fitted by
#: ``benchmarks/plan_calibration.py`` (``fit_constants``) on the committed timings.
ENGINE_COSTS: dict[str, dict[str, float]] = {
    "ep": {
        "c0": 5.87e-20,
        "a": 0.951,
        "b": 0.128,
        "fit_logistic": 3.81,
        "job": 0.0158,
        "per_evaluation_logistic": 2.3,
        "per_evaluation_probit": 0.686,
        "evaluations": 15.3,
    },
    "fitc_ep": {"c0": 0.0613, "a": 0.0529},
    "fitc_laplace": {"c0": 0.0312, "a": 0.0132},
    "kl": {
        "c0": 0.0481,
        "a": 0.288,
        "b": 0.383,
        "fit_logistic": 0.326,
        "job": 0.0086,
        "per_evaluation_logistic": 1.86,
        "per_evaluation_probit": 0.634,
        "evaluations": 12.7,
    },
    "laplace": {
        "c0": 0.00199,
        "a": 5.61e-10,
        "b": 0.101,
        "fit_logistic": 1.25,
        "job": 0.0159,
        "per_evaluation_logistic": 2.54,
        "per_evaluation_probit": 2.14,
        "evaluations": 13.0,
    },
    "mcmc": {"c": 5.92, "alpha": 0.673, "beta": 0.81},
    "svgp": {"c0": 0.387, "a": 0.0957},
    "vb": {
        "c0": 0.0105,
        "a": 1.88e-08,
        "b": 0.491,
        "job": 0.0141,
        "per_evaluation_logistic": 1.74,
        "evaluations": 12.2,
    },
}

#: Engines without constants of their own are estimated as this one (and say so).
FALLBACK = "ep"


def size_factor(method: str, n: Any, inducing: Any = None) -> np.ndarray:
    """The problem size the cost grows with: n / 1000 for a dense engine or MCMC,
    n M^2 / (1000 x 128^2) for a sparse one (M inducing inputs, 128 when not given)."""
    n = np.asarray(n, dtype=float)
    if method not in SPARSE:
        return n / 1000.0
    m = np.asarray(_fill(inducing, DEFAULT_INDUCING, n.shape), dtype=float)
    return n * m**2 / (1000.0 * DEFAULT_INDUCING**2)


def _fill(values: Any, default: float, shape: tuple[int, ...]) -> np.ndarray:
    """``values`` as floats with missing (None, NaN) ones ``default``, broadcast."""
    if values is None:
        return np.full(shape, float(default))
    out = np.array(
        [
            default if v is None or (isinstance(v, float) and math.isnan(v)) else v
            for v in np.atleast_1d(np.asarray(values, dtype=object))
        ],
        dtype=float,
    )
    return np.broadcast_to(out if out.size > 1 else out.reshape(()), shape).astype(float)


def _constants(method: str) -> dict[str, float]:
    return ENGINE_COSTS.get(method) or ENGINE_COSTS[FALLBACK]


def fit_seconds(
    method: str, n: Any, d: Any, inducing: Any = None, const: Mapping[str, float] | None = None
) -> np.ndarray:
    """Seconds of one fit at given hyperparameters (see the module note): for a dense
    engine c0 + a s^2 + b s^3 (s = n / 1000), for a sparse one c0 + a s, for MCMC
    c s^alpha (1 + d)^beta."""
    k = _constants(method) if const is None else const
    s = size_factor(method, n, inducing)
    if "alpha" in k:
        return k["c"] * s ** k["alpha"] * (1.0 + np.asarray(d, dtype=float)) ** k["beta"]
    return (
        k["c0"] + k["a"] * s**2 + k.get("b", 0.0) * s**3
        if method not in SPARSE
        else (k["c0"] + k["a"] * s)
    )


def job_seconds(
    method: str,
    likelihood: str,
    n: Any,
    d: Any,
    *,
    optimize: Any = True,
    runs: Any = 3,
    inducing: Any = None,
) -> np.ndarray:
    """Seconds of one job: one fit, and R E r fits' worth of evaluations when the job
    selects its hyperparameters (``optimize``; ``runs`` = R = n_restarts + 1)."""
    k = _constants(method)
    one = fit_seconds(method, n, d, inducing, k)
    if likelihood != "probit":
        one = one * k.get(f"fit_{likelihood}", 1.0)
    ratio = k.get(f"per_evaluation_{likelihood}", k.get("per_evaluation_probit", 0.0))
    evaluations = np.asarray(runs, dtype=float) * k.get("evaluations", 0.0) * ratio
    return k.get("job", 0.0) + one * (1.0 + np.asarray(optimize, dtype=float) * evaluations)


#: Sparse engines' optimiser counts (evaluations per run, an evaluation's cost in fits)
#: come from the dense engine of the same approximation (no committed record optimises a
#: sparse engine's hyperparameters by itself yet).
OPTIMISER_AS = {"fitc_ep": "ep", "fitc_laplace": "laplace", "svgp": "kl"}


@dataclass(frozen=True)
class PlanRow:
    """One engine on one data set: its jobs, their training cases and the estimates."""

    dataset: str
    engine: str
    method: str
    jobs: int
    n_train: int
    d: int
    job_seconds: float
    memory_bytes: int
    calibrated: bool
    optimize: bool = True


@dataclass(frozen=True)
class Plan:
    """A study's plan: one :class:`PlanRow` per data set and engine, on ``workers``."""

    rows: tuple[PlanRow, ...]
    workers: int
    n_cases: dict[str, int]
    done: int = 0
    available: int | None = None

    @property
    def seconds(self) -> float:
        """The estimated wall time: the jobs' seconds shared by the workers, and at least
        the longest job."""
        total = sum(r.jobs * r.job_seconds for r in self.rows)
        longest = max((r.job_seconds for r in self.rows), default=0.0)
        return max(total / self.workers, longest)

    def text(self) -> str:
        """The plan on one screen."""
        lines = [f"plan ({self.workers} worker(s); the estimates are good to about 2x):"]
        lines.append(
            f"  {'data set':<16} {'engine':<14} {'jobs':>4} {'n train':>8} {'d':>4} "
            f"{'per job':>9} {'in all':>9} {'memory':>9}"
        )
        for r in self.rows:
            note = "" if r.calibrated else f"  (no calibration: as {FALLBACK})"
            lines.append(
                f"  {r.dataset[:16]:<16} {r.engine[:14]:<14} {r.jobs:>4} {r.n_train:>8,} "
                f"{r.d:>4} {_duration(r.job_seconds):>9} "
                f"{_duration(r.jobs * r.job_seconds):>9} {_bytes(r.memory_bytes):>9}{note}"
            )
        done = f" ({self.done} job(s) done earlier, skipped)" if self.done else ""
        lines.append(f"  estimated wall time: {_duration(self.seconds)}{done}")
        over = [
            r.engine
            for r in self.rows
            if self.available and r.memory_bytes > self.available and r.method not in SPARSE
        ]  # (a dense job beyond the memory is skipped by its worker: engines.memory_problem)
        if over:
            lines.append(
                f"  {', '.join(over)}: more memory than this machine has available "
                f"({_bytes(self.available or 0)}): those jobs will be skipped, and said"
            )
        dense = sorted({r.engine for r in self.rows if r.method not in SPARSE + ("mcmc",)})
        if dense and max(r.n_train for r in self.rows) > SPARSE_ABOVE:
            lines.append(
                f"  above {SPARSE_ABOVE:,} training cases the dense engines ({', '.join(dense)}) "
                "cost O(n^3) time and O(n^2) memory;\n  the sparse engines (fitc_ep, "
                "fitc_laplace, svgp) O(n M^2) and O(n M): e.g. --engines fitc_ep,svgp"
            )
        return "\n".join(lines)


def plan_study(config: Any, workers: int | None = None, result_dir: Any = None) -> Plan:
    """The plan of a study: each engine's jobs, time and memory per data set.

    Parameters
    ----------
    config : StudyConfig
        The study (its data sets loaded, as :func:`~gpc_compare.study.load_study` leaves
        them).
    workers : int, optional
        Local worker processes (default: one per CPU).
    result_dir : path, optional
        The study's results folder: jobs with a finished record there are left out (a
        rerun resumes).

    Returns
    -------
    Plan
    """
    import os

    from .._validation import available_memory
    from .jobs import expand
    from .limits import _train_size
    from .problem import load_dataset
    from .records import read_records

    workers = max(1, workers or os.cpu_count() or 1)
    jobs = [j for j in expand(config) if j.kind == "engine"]
    finished = set()
    if result_dir is not None and os.path.isdir(os.path.join(result_dir, "jobs")):
        finished = {i for i, r in read_records(result_dir)[0].items() if r.ok}
    done = sum(j.id in finished for j in jobs)
    jobs = [j for j in jobs if j.id not in finished]
    rows, n_cases = [], {}
    for spec in config.datasets:
        data = load_dataset(spec, config.seed)
        n_cases[spec.label] = int(data.n_samples)
        n = _train_size(data.n_samples, config.splits)
        d = int(data.X.shape[1])
        for label, method in config.methods.items():
            mine = [j for j in jobs if j.dataset.label == spec.label and j.engine == label]
            if not mine:
                continue
            rows.append(_row(config, spec.label, label, method, mine, n, d))
    return Plan(tuple(rows), workers, n_cases, done, available_memory())


def _row(config: Any, dataset: str, label: str, method: str, jobs: list, n: int, d: int):
    """The plan of one engine's jobs on one data set of n training cases."""
    from ..engines import get_engine
    from .problem import make_kernel

    engine = get_engine(method)
    own = {k: v for k, v in config.engines[label].items() if engine.takes_option(k)}
    options = engine.options(own)
    inducing = own.get("inducing") if isinstance(own.get("inducing"), int) else None
    optimize = any(j.optimize for j in jobs)
    seconds = estimate_job(method, config.likelihood, n, d, optimize, config.n_restarts, inducing)
    kernel = make_kernel(config.kernel, d)
    memory = engine.memory_bytes(n, options, optimize, kernel=kernel)
    if method in SPARSE:  # six n x M matrices: the scale study's peak memory, n = 500 to 2,000
        memory = max(memory, 6 * 8 * n * (inducing or DEFAULT_INDUCING))
    calibrated = method in ENGINE_COSTS
    return PlanRow(
        dataset, label, method, len(jobs), n, d, seconds, int(memory), calibrated, optimize
    )


def estimate_job(
    method: str,
    likelihood: str,
    n: int,
    d: int,
    optimize: bool,
    n_restarts: int,
    inducing: int | None = None,
) -> float:
    """Seconds of one job of ``method`` on n training cases (see the module note)."""
    seconds = float(
        job_seconds(method, likelihood, n, d, optimize=False, runs=1, inducing=inducing)
    )
    if optimize:
        as_ = OPTIMISER_AS.get(method, method)
        k = _constants(as_)
        ratio = k.get(f"per_evaluation_{likelihood}", k.get("per_evaluation_probit", 0.0))
        one = float(fit_seconds(method, n, d, inducing))
        seconds += one * (n_restarts + 1) * k.get("evaluations", 0.0) * ratio
    return seconds


def check_plan(
    plan: Plan,
    max_minutes: float | None,
    config: Any,
    stream: TextIO | None = None,
) -> None:
    """Print ``plan`` to ``stream`` and refuse it (ValueError) when its estimate exceeds
    ``max_minutes`` (None: never), naming the ways out: the largest ``subsample`` that
    fits, the sparse engines, fewer engines, or a larger limit."""
    if stream is not None:
        print(plan.text(), file=stream, flush=True)
    if max_minutes is None or plan.seconds <= 60.0 * max_minutes:
        return
    fits = _largest_subsample(plan, config, 60.0 * max_minutes)
    slow = max(plan.rows, key=lambda r: r.jobs * r.job_seconds)
    way = (
        f"--subsample {fits} (subsample={fits}) fits in the limit"
        if fits
        else "--subsample N, though no N of 100 or more fits in the limit with these engines"
    )
    raise ValueError(
        f"the plan's estimate, {_duration(plan.seconds)} on {plan.workers} worker(s), exceeds "
        f"the limit of {max_minutes:g} min (--max-minutes; max_minutes= in Python), the "
        f"slowest engine {slow.engine!r} at {_duration(slow.job_seconds)} a job on "
        f"{slow.n_train:,} training cases; run fewer cases: {way}; or the sparse engines "
        "(--engines fitc_ep,svgp: O(n M^2) time), fewer engines or folds, or raise "
        "--max-minutes"
    )


def plan_data_study(
    fields: dict[str, Any],
    text: str,
    workers: int | None,
    result_dir: Any,
    max_minutes: float | None,
    progress: TextIO | None,
) -> Plan:
    """The plan of :func:`gpc_compare.compare`'s study (``fields``, of the data file
    ``data.csv`` holding ``text``), checked in a scratch folder before the output is
    touched, printed to ``progress`` and refused beyond ``max_minutes``
    (:func:`check_plan`)."""
    import tempfile
    from pathlib import Path

    from .config import StudyConfig

    with tempfile.TemporaryDirectory(prefix="gpc_compare_check_") as scratch:
        Path(scratch, "data.csv").write_text(text)
        checked = StudyConfig.from_dict(fields, Path(scratch, "study.toml"))
        plan = plan_study(checked, workers, result_dir)
        check_plan(plan, max_minutes, checked, progress)
    return plan


def _largest_subsample(plan: Plan, config: Any, limit: float) -> int | None:
    """The largest number of cases (of the largest data set) whose plan fits ``limit``
    seconds, or None below 100."""
    n_all = max(plan.n_cases.values())
    scale = {r.dataset: r.n_train / max(plan.n_cases[r.dataset], 1) for r in plan.rows}

    def wall(n: int) -> float:
        rows = [
            PlanRow(
                r.dataset,
                r.engine,
                r.method,
                r.jobs,
                int(n * scale[r.dataset]),
                r.d,
                estimate_job(
                    r.method,
                    config.likelihood,
                    int(n * scale[r.dataset]),
                    r.d,
                    r.optimize,
                    config.n_restarts,
                ),
                0,
                r.calibrated,
                r.optimize,
            )
            for r in plan.rows
        ]
        return Plan(tuple(rows), plan.workers, plan.n_cases).seconds

    lo, hi = 100, n_all
    if wall(lo) > limit:
        return None
    while hi - lo > max(1, lo // 50):  # (to 2%: the estimate is good to a factor of 2)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if wall(mid) <= limit else (lo, mid)
    return lo // 100 * 100 if lo >= 1000 else lo


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 1 else "< 1 s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _bytes(count: float) -> str:
    if count < 2**20:
        return "< 1 MB"
    return f"{count / 2**20:.0f} MB" if count < 2**30 else f"{count / 2**30:.1f} GB"
