"""The study scheduler: cheap jobs are not blocked behind the samplers, and the time left
is right within about 2x once a fifth of the jobs have finished (the committed studies'
real job times, tests/data/study_job_seconds.csv, replayed through the scheduler)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpc_compare.study import load_study
from gpc_compare.study.jobs import expand
from gpc_compare.study.schedule import CostModel, is_sampling, next_jobs

ROOT = Path(__file__).resolve().parents[2]
SECONDS = pd.read_csv(Path(__file__).parents[1] / "data" / "study_job_seconds.csv",
                      keep_default_na=False)  # fmt: skip
#: Relative job times of the quick study as it ran (medians: Laplace at EP's
#: hyperparameters 0.02 s, EP with its search 0.14 s, MCMC with AIS 8.8 s)
METHOD_COST = {"laplace": 1.0, "ep": 7.0, "mcmc": 440.0}
DATA_COST = {"crabs": 1.0, "sonar": 1.5, "ionosphere": 3.0}
SIZES = {"crabs": 200, "sonar": 208, "ionosphere": 351}


@pytest.fixture(scope="module")
def quick_jobs():
    return expand(load_study(ROOT / "studies" / "quick.toml"))


def _replay(jobs, true, capacity: int, sizes=None, old_eta: bool = False):
    """Run the scheduler on a virtual clock with the jobs' times ``true`` (id -> s): at
    every finish, (fraction of jobs done, estimated time left, true time left); and the
    start times."""
    pending, running, done = list(jobs), {}, set()
    cost, t, events, order = CostModel(jobs, sizes), 0.0, [], []

    def ready(job):
        return job.depends_on is None or job.depends_on in done

    while pending or running:
        for job in next_jobs(pending, running.values(), capacity, ready):
            pending.remove(job)
            running[t + true[job.id] + 1e-9 * len(order)] = job
            order.append((t, job))
        t = min(running)
        job = running.pop(t)
        done.add(job.id)
        cost.observe(job, true[job.id])
        in_flight = [(j, t - (end - true[j.id])) for end, j in running.items()]
        if old_eta:  # before: the mean time of a finished job times the jobs left
            est = t / len(done) * (len(pending) + len(running))
        else:
            est = cost.seconds_left(pending, in_flight, capacity)
        events.append((len(done) / len(jobs), est, t))
    return [(f, est, t - at) for f, est, at in events], order


def _ratios(events) -> np.ndarray:
    return np.array([est / left for f, est, left in events if f >= 0.2 and left > 0])


def _simulated(jobs, seed: int = 0) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    return {j.id: METHOD_COST[j.method] * DATA_COST[j.dataset.label] * rng.uniform(0.8, 1.25)
            for j in jobs}  # fmt: skip


@pytest.mark.parametrize("study", ["quick", "kernels", "ep_loo", "approximations_logistic",
                                   "iris", "approximations"])  # fmt: skip
def test_time_left_on_the_committed_studies_real_job_times(study):
    """After a fifth of the jobs, at every finish: within 2x at 75% of them or more, never
    beyond 3x; the old estimate was off by more than 2x on every study (50x on the quick
    study, whose samplers finish last). The approximations study's MCMC jobs cost 2-56 s
    by data set, in no relation to the deterministic engines' times there (sonar the
    cheapest for Laplace, the dearest for MCMC): a sampler on a data set not seen yet is
    estimated at least at its mean over those seen (within 2x at 14% of that study's
    finishes before, 95% now)."""
    config = load_study(ROOT / "studies" / f"{study}.toml")
    rows = SECONDS[SECONDS.study == study].set_index(["dataset", "kernel", "split", "engine"])
    # the jobs whose times the snapshot holds (a study's first repeat, timed on a quiet
    # machine; later repeats ran beside other work, at another speed)
    jobs = [
        j
        for j in expand(config)
        if (j.dataset.label, j.kernel_label or "", j.split, j.engine) in rows.index
    ]
    true = {j.id: float(rows.loc[(j.dataset.label, j.kernel_label or "", j.split, j.engine),
                                 "seconds"]) for j in jobs}  # fmt: skip
    from gpc_compare.study.runner import _sizes

    new = _ratios(_replay(jobs, true, 2, _sizes(jobs, config.seed))[0])
    old = _ratios(_replay(jobs, true, 2, old_eta=True)[0])
    assert np.mean((new >= 0.5) & (new <= 2.0)) >= 0.75, np.round(new, 2)
    assert np.all((new >= 1 / 3) & (new <= 3.0)), np.round(new, 2)
    assert np.any((old < 0.5) | (old > 2.0))


def test_cheap_jobs_are_not_blocked_behind_the_samplers(quick_jobs):
    _, order = _replay(quick_jobs, _simulated(quick_jobs), 2, SIZES)
    # every Laplace and EP job starts before the samplers' share of the run is over: by
    # then at most one worker has been sampling at any time while cheap jobs waited
    last_cheap = max(t for t, j in order if not is_sampling(j))
    total = sum(METHOD_COST[j.method] * DATA_COST[j.dataset.label] for j in quick_jobs)
    assert last_cheap < 0.35 * total / 2
    # serial: every cheap job that is ready runs before a sampler
    _, serial = _replay(quick_jobs, _simulated(quick_jobs), 1, SIZES)
    first_sampler = min(i for i, (_, j) in enumerate(serial) if is_sampling(j))
    assert not any(is_sampling(j) for _, j in serial[:first_sampler])
    assert first_sampler >= len([j for j in quick_jobs if j.depends_on is None])


def test_next_jobs_leaves_a_worker_for_cheap_jobs(quick_jobs):
    mcmc = [j for j in quick_jobs if is_sampling(j)]
    cheap = [j for j in quick_jobs if not is_sampling(j)]
    always = lambda j: True  # noqa: E731
    assert next_jobs(mcmc[:2] + cheap[:1], [], 2, always) == [mcmc[0], cheap[0]]
    assert next_jobs(mcmc[:2] + cheap[:1], [mcmc[2]], 2, always) == [cheap[0]]
    assert next_jobs(mcmc[:2], [], 2, always) == mcmc[:2]  # nothing cheap: both sample
    assert next_jobs(mcmc[:2] + cheap[:2], [], 1, always) == [cheap[0]]
    assert next_jobs(mcmc[:2] + cheap[:2], [cheap[3], cheap[4]], 2, always) == []
    assert next_jobs(cheap[:3], [], 4, lambda j: j is not cheap[1]) == [cheap[0], cheap[2]]
