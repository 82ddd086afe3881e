"""Held-out scores with intervals over test cases, and paired differences between engines.

The per-case predictions every job records (test labels, ``p1`` or the class
probabilities, ``log p``) are resampled
by :func:`gpc_compare.metrics.bootstrap_indices` (within each split and class; the same
cases for every engine) and rescored by :func:`gpc_compare.metrics.bootstrap_scores`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .. import metrics
from ..study import JobRecord

__all__ = ["BOOTSTRAP_LABEL", "N_BOOT", "case_intervals"]

#: Bootstrap replicates (the report is deterministic: the resampling is seeded).
N_BOOT = 2000
#: How the report names this interval.
BOOTSTRAP_LABEL = "bootstrap over test cases"

Records = list[JobRecord]


def case_intervals(
    records: Records, datasets: Sequence[str], engines: Sequence[str], *, seed: int = 0
) -> tuple[pd.DataFrame, dict[tuple[str, str, str, str], tuple[float, float, float, int]]]:
    """Percentile intervals of each held-out score, and of paired differences.

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
        ``(dataset, engine_a, engine_b, metric) -> (mean difference a - b, low, high,
        splits)`` over the splits both engines finished, on the same resampled cases.
    """
    rows = []
    paired = {}
    for dataset in datasets:
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
        for a in by_engine:
            for b in by_engine:
                if a == b:
                    continue
                common = sorted(set(by_engine[a]) & set(by_engine[b]))
                if not common:
                    continue
                ra = metrics.bootstrap_scores({s: _cases(by_engine[a][s]) for s in common}, indices)
                rb = metrics.bootstrap_scores({s: _cases(by_engine[b][s]) for s in common}, indices)
                for metric in ra:
                    d = np.array(
                        [
                            by_engine[a][s].metrics[metric] - by_engine[b][s].metrics[metric]
                            for s in common
                        ],
                        dtype=float,
                    )
                    with np.errstate(invalid="ignore"):
                        low, high = metrics.percentile_interval(
                            ra[metric] - rb[metric], float(np.mean(d))
                        )
                    paired[(dataset, a, b, metric)] = (float(np.mean(d)), low, high, len(common))
    return pd.DataFrame(rows), paired


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
