"""Which job runs next, and how long the rest will take.

Two things a user watching a study needs (issue: "studies that finish while you watch"):

- **Cheap jobs keep flowing.** Sampling jobs (MCMC, AIS) cost tens of times a Laplace or EP
  fit. :func:`next_jobs` never lets them take every worker while cheaper jobs are ready:
  with ``c`` workers at most ``c - 1`` sampling jobs run at once while another job waits
  (one worker is enough to keep the sampler busy, and the deterministic engines' results
  arrive as they would without the samplers); with one worker the cheaper ready jobs go
  first. Dependencies are respected as before (a job waits for its source's record).
- **An honest time left.** :class:`CostModel` estimates each job from the jobs already
  finished: the mean time of the same engine on the same data set, else a fit of
  log time = engine effect + data-set effect to what has been seen (for a sampler, at
  least its mean over the data sets seen), an engine not seen
  yet entering by its method's prior cost (:data:`PRIOR_COST`, measured on the
  approximations study) relative to the engines seen, a data set not seen yet by its
  size. The time left replays the rest of the run with the estimated times (the running
  jobs by what is left of theirs). A mean over all jobs so far, as before, was off by
  2-4x while the cheap jobs finished first; the work divided among the workers misses
  that whole jobs run on whole workers (one long sampler alone at the end).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from .jobs import Job

__all__ = [
    "OPTIMIZE_COST",
    "PRIOR_COST",
    "SAMPLING_METHODS",
    "CostModel",
    "is_sampling",
    "next_jobs",
    "prior_cost",
]

#: Relative cost of one fit by method before any job of it has finished (one Laplace fit
#: is 1); a job that selects its hyperparameters costs :data:`OPTIMIZE_COST` fits. Medians
#: over the committed studies' jobs on this machine (2 cores): single fits Laplace 1,
#: KL 5; optimising Laplace 8-27, EP 7-70; MCMC 440-1600 (quick, approximations, iris).
PRIOR_COST = {
    "laplace": 1.0,
    "laplace_softmax": 3.0,
    "ep": 5.0,
    "kl": 5.0,
    "vb": 3.0,
    "mcmc": 800.0,
    "ais": 800.0,
    "smc": 400.0,  # (the probit grid's SMC jobs: median 2.4 s, Laplace's 7 ms)
}
OPTIMIZE_COST = 20.0
#: Up to this many pending jobs the time left replays the schedule (beyond it, the work
#: divided among the workers).
SIMULATE_MAX = 400
#: Methods that sample: the jobs that must not take every worker.
SAMPLING_METHODS = frozenset({"mcmc", "ais", "smc"})


def is_sampling(job: Job) -> bool:
    """Whether ``job`` samples (MCMC, AIS or SMC): tens of times a deterministic fit."""
    return job.method in SAMPLING_METHODS


def prior_cost(job: Job) -> float:
    """A job's cost before any of its kind has finished, in Laplace fits (see
    :data:`PRIOR_COST`)."""
    cost = PRIOR_COST.get(job.method, 5.0)
    if job.optimize:
        cost *= OPTIMIZE_COST
    return cost


def next_jobs(pending: Sequence[Job], running: Iterable[Job], capacity: int, ready) -> list[Job]:
    """The pending jobs to start now, in order, to fill the free workers.

    Parameters
    ----------
    pending : sequence of Job
        Not yet started, in the study's order.
    running : iterable of Job
        Running now.
    capacity : int
        Jobs the executor runs at once.
    ready : callable
        ``ready(job) -> bool``: whether the job's dependency has its record.

    Returns
    -------
    list of Job
        At most ``capacity - len(running)`` jobs; cheaper ready jobs before sampling
        ones, and no more than ``max(1, capacity - 1)`` sampling jobs running while a
        cheaper job is ready.
    """
    running = list(running)
    free = capacity - len(running)
    if free <= 0:
        return []
    candidates = [j for j in pending if ready(j)]
    cheap = [j for j in candidates if not is_sampling(j)]
    costly = [j for j in candidates if is_sampling(j)]
    # while a cheaper job is ready, the samplers may hold all workers but one (with one
    # worker, none: the cheaper job goes first)
    limit = capacity - 1 if cheap else capacity
    sampling = sum(is_sampling(j) for j in running)
    chosen: list[Job] = []
    for job in costly:  # the samplers first: the longest jobs start early
        if len(chosen) >= free or sampling >= limit:
            break
        chosen.append(job)
        sampling += 1
    chosen += cheap[: free - len(chosen)]
    return chosen


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


class CostModel:
    """Estimated seconds of each job from the jobs finished so far (see the module notes).

    Parameters
    ----------
    jobs : sequence of Job
        Every job of the run.
    sizes : mapping of data set label -> int, optional
        Cases per data set: a data set no job has finished on yet is taken to cost
        (n / n')^2 times one that has (between the n^2 of a sampler's gradient and the
        n^3 of a factorisation).
    """

    def __init__(self, jobs: Sequence[Job], sizes: Mapping[str, int] | None = None) -> None:
        self.jobs = list(jobs)
        self.sizes = dict(sizes or {})
        self._seconds: dict[tuple[str, str], list[float]] = defaultdict(list)
        self._first = {}  # engine label -> its first job (for its prior cost)
        for job in self.jobs:
            self._first.setdefault(job.engine, job)
        self._running: dict[str, float] = {}  # engine -> longest time a running job has run
        self._fitted: tuple[dict[str, float], dict[str, float]] | None = None  # (a, b)

    @staticmethod
    def _key(job: Job) -> tuple[str, str]:
        data = job.dataset.label + ("" if job.kernel_label is None else f"/{job.kernel_label}")
        return job.engine, data

    def seen(self, job: Job) -> bool:
        """Whether a job of ``job``'s engine has finished (on any data set)."""
        return any(e == job.engine for e, _ in self._seconds)

    def observe(self, job: Job, seconds: float) -> None:
        """Record that ``job`` took ``seconds``."""
        self._seconds[self._key(job)].append(float(seconds))
        self._fitted = None

    def estimate(self, job: Job) -> float | None:
        """Estimated seconds of ``job``; None before any job has finished.

        The mean of the same engine on the same data set when there is one; else
        exp(a_engine + b_data) from a fit of log seconds = a_engine + b_data to the
        (engine, data set) means seen so far (alternating least squares: engines and data
        sets seen on different cells stay comparable), an engine not seen yet getting its
        method's prior cost (:data:`PRIOR_COST`) on the scale of those seen.
        """
        engine, data = self._key(job)
        if (engine, data) in self._seconds:
            return _mean(self._seconds[(engine, data)])
        if not self._seconds:
            return None
        seen = [_mean(v) for (e, _), v in self._seconds.items() if e == engine]
        if self._fitted is None:  # (once per finished job, not once per estimate)
            self._fitted = self._fit()
        a, b = dict(self._fitted[0]), dict(self._fitted[1])
        if engine not in a:  # the prior cost, on the scale of the engines seen
            offset = _mean([a[e] - math.log(prior_cost(self._first[e])) for e in a])
            a[engine] = offset + math.log(prior_cost(job))
        if data not in b:  # a data set not seen yet: from its size and those seen
            n = self.sizes.get(job.dataset.label)
            known = {d: self.sizes[d.split("/")[0]] for d in b if d.split("/")[0] in self.sizes}
            b[data] = (
                _mean([b[d] + 2.0 * math.log(n / n_d) for d, n_d in known.items()])
                if n and known
                else 0.0
            )
        est = math.exp(a[engine] + b[data])
        if seen and is_sampling(job):
            # a sampler's cost on a data set follows its posterior (sigma_f, tree depth) as
            # much as its size: in the approximations study MCMC took 2-56 s a fold where
            # Laplace took 0.1-0.8 s, sonar the cheapest for Laplace and the dearest for
            # MCMC. At least its mean over the data sets seen (the time left needs a sum of
            # such jobs): after the first 20% of that study's jobs 137 of 144 estimates of
            # the time left within 2x (20 without), and the quick study's 21 of 21 kept
            est = max(est, _mean(seen))
        # a job of this engine that has run for T without finishing: the median of its
        # total time under a scale-free prior is 2T ("Lindy"), so others are as long
        return max(est, 2.0 * self._running.get(engine, 0.0))

    def _fit(self) -> tuple[dict[str, float], dict[str, float]]:
        """log seconds = a_engine + b_data (b centred) by alternating least squares."""
        cells = {k: math.log(max(_mean(v), 1e-6)) for k, v in self._seconds.items()}
        a = {e: 0.0 for e, _ in cells}
        b = {d: 0.0 for _, d in cells}
        for _ in range(50):
            a = {e: _mean([y - b[d] for (e2, d), y in cells.items() if e2 == e]) for e in a}
            b = {d: _mean([y - a[e] for (e, d2), y in cells.items() if d2 == d]) for d in b}
            shift = _mean(list(b.values()))
            b = {d: v - shift for d, v in b.items()}
            a = {e: v + shift for e, v in a.items()}
        return a, b

    def seconds_left(
        self, pending: Iterable[Job], running: Iterable[tuple[Job, float]], capacity: int
    ) -> float | None:
        """The estimated wall time to finish: work left over ``capacity`` workers.

        Parameters
        ----------
        pending : iterable of Job
            Not yet started.
        running : iterable of (Job, float)
            Running jobs and how long each has run.
        capacity : int
            Workers.

        Returns
        -------
        float or None
            None before any job has finished.
        """
        pending = list(pending)
        running = list(running)
        self._running = {}
        for job, elapsed in running:
            if not any(e == job.engine for e, _ in self._seconds):
                self._running[job.engine] = max(self._running.get(job.engine, 0.0), elapsed)
        estimates = {}
        for job in pending + [j for j, _ in running]:
            est = self.estimate(job)
            if est is None:
                return None
            estimates[job.id] = est
        # a running job past its estimate is not about to end: having run T, its median
        # total under a scale-free prior is 2T ("Lindy"), so T is left (never "~0s")
        rests = [
            estimates[j.id] - elapsed if estimates[j.id] > elapsed else elapsed
            for j, elapsed in running
        ]
        if len(pending) > SIMULATE_MAX:  # many jobs: the work shared among the workers
            work = sum(estimates[j.id] for j in pending) + sum(rests)
            return max(work / max(capacity, 1), max(rests, default=0.0))
        # the rest of the run replayed with the estimates: the same choices as the runner
        # (next_jobs), dependencies waited for, whole jobs on whole workers
        clock = 0.0
        ends = [(r, j) for r, (j, _) in zip(rests, running, strict=True)]
        waiting = {j.id for j in pending} | {j.id for j, _ in running}

        def ready(job: Job) -> bool:
            return job.depends_on is None or job.depends_on not in waiting

        while pending or ends:
            for job in next_jobs(pending, [j for _, j in ends], capacity, ready):
                pending.remove(job)
                ends.append((clock + estimates[job.id], job))
            if not ends:  # (a dependency that never finishes: nothing more can start)
                break
            ends.sort(key=lambda e: e[0])
            clock, job = ends.pop(0)
            waiting.discard(job.id)
        return clock
