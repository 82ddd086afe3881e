"""Held-out scores with intervals over test cases, and paired differences between engines.

Each engine's score: the per-case predictions every job records (test labels, ``p1`` or the
class probabilities, ``log p``) are resampled by
:func:`gpc_compare.metrics.bootstrap_indices` (within each split and class; the same cases
for every engine) and rescored by :func:`gpc_compare.metrics.bootstrap_scores`.

Two engines compared: the corrected resampled t-interval over the splits both finished
(:func:`gpc_compare.metrics.paired_difference`; Nadeau and Bengio 2003), which allows for
the training sets the splits share. A test-case bootstrap holds the training folds fixed
and so cannot see that variability; it is not used for comparisons.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .. import metrics
from ..study import JobRecord

__all__ = ["BOOTSTRAP_LABEL", "N_BOOT", "Paired", "case_intervals", "paired_differences"]

#: Bootstrap replicates (the report is deterministic: the resampling is seeded).
N_BOOT = 2000
#: How the report names this interval.
BOOTSTRAP_LABEL = "bootstrap over test cases"

Records = list[JobRecord]
#: ``(dataset, engine_a, engine_b, metric) -> the corrected t-interval of a - b``.
Paired = dict[tuple[str, str, str, str], metrics.PairedDifference]


def case_intervals(
    records: Records, datasets: Sequence[str], engines: Sequence[str], *, seed: int = 0
) -> tuple[pd.DataFrame, Paired]:
    """Percentile intervals of each held-out score, and paired differences of engines.

    Parameters
    ----------
    records : list of JobRecord
        Finished job records (those with ``arrays`` are used).
    datasets, engines : sequence of str
    seed : int
        Seeds the resampling.

    Returns
    -------
    summary : DataFrame
        As :func:`gpc_compare.metrics.summarize` (``dataset, engine, metric, n_splits,
        mean, sd, low, high, interval``): the mean over splits of each split's recorded
        score, and a 95% bias-corrected percentile interval of :data:`N_BOOT`
        replicates.
    paired : dict
        ``(dataset, engine_a, engine_b, metric) ->``
        :class:`~gpc_compare.metrics.PairedDifference` of a - b over the splits both
        engines finished (:func:`paired_differences`).
    """
    rows = []
    paired: Paired = {}
    for dataset in datasets:
        finished: dict[str, dict[int, JobRecord]] = {}
        for r in records:
            if r.dataset == dataset and r.engine in engines and r.metrics:
                finished.setdefault(r.engine, {})[r.split] = r
        paired.update(paired_differences(dataset, finished))
        by_engine: dict[str, dict[int, JobRecord]] = {}
        for engine in engines:
            recs = [
                r
                for r in records
                if r.dataset == dataset and r.engine == engine and r.arrays is not None
            ]
            if recs:
                by_engine[engine] = {r.split: r for r in recs}
        if not by_engine:
            continue
        labels = {}
        for recs in by_engine.values():
            for split, r in recs.items():
                labels.setdefault(split, r.arrays.y_test)
        indices = metrics.bootstrap_indices(labels, n_boot=N_BOOT, seed=seed)
        replicates = {}
        for engine, recs in by_engine.items():
            cases = {s: _cases(r) for s, r in recs.items()}
            replicates[engine] = metrics.bootstrap_scores(cases, indices)
            for metric, reps in replicates[engine].items():
                v = np.array([r.metrics[metric] for r in recs.values()], dtype=float)
                low, high = metrics.percentile_interval(reps, float(np.mean(v)))
                rows.append(
                    {
                        "dataset": dataset,
                        "engine": engine,
                        "metric": metric,
                        "n_splits": v.size,
                        "mean": float(np.mean(v)),
                        "sd": float(np.std(v, ddof=1)) if v.size > 1 else 0.0,
                        "low": low,
                        "high": high,
                        "interval": BOOTSTRAP_LABEL,
                    }
                )
    return pd.DataFrame(rows), paired


def paired_differences(dataset: str, by_engine: dict[str, dict[int, JobRecord]]) -> Paired:
    """Every ordered pair of engines on the splits both finished: the corrected resampled
    t-interval (:func:`gpc_compare.metrics.paired_difference`, Nadeau and Bengio 2003) of
    each held-out score's difference over those splits."""
    out = {}
    for a, recs_a in by_engine.items():
        for b, recs_b in by_engine.items():
            common = sorted(set(recs_a) & set(recs_b))
            if a == b or not common:
                continue
            first = recs_a[common[0]]
            for metric in first.metrics:
                va = [recs_a[s].metrics.get(metric, np.nan) for s in common]
                vb = [recs_b[s].metrics.get(metric, np.nan) for s in common]
                if not (np.all(np.isfinite(va)) and np.all(np.isfinite(vb))):
                    continue  # (a split without the score: no interval over the others)
                out[(dataset, a, b, metric)] = metrics.paired_difference(
                    va,
                    vb,
                    [recs_a[s].n_train for s in common],
                    [recs_a[s].n_test for s in common],
                    higher_is_better=metric not in metrics.LOWER_IS_BETTER,
                )
    return out


def _cases(rec: JobRecord) -> dict[str, Any]:
    """One job's test predictions as :func:`gpc_compare.metrics.bootstrap_scores` takes them."""
    a = rec.arrays
    if a.multiclass:  # the training classes' entropy from the record's
        m = rec.metrics  # information_bits = H + mean log p / ln 2
        entropy = m["information_bits"] - m["mean_log_predictive"] / np.log(2.0)
        return {
            "y": a.y_test,
            "proba": a.proba_test,
            "log_p": a.log_p_test,
            "entropy_bits": entropy,
        }
    return {"y": a.y_test, "p1": a.p1_test, "log_p": a.log_p_test, "base_rate": rec.base_rate}
