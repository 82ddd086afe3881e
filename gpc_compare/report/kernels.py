"""The report of a study with a kernel axis (``[kernels.LABEL]``): every section and figure
per data set and kernel, and a section comparing the kernels."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd
from scipy import stats

from .figures import Records

__all__ = ["by_kernel", "kernel_section"]

#: The metrics the kernel comparison shows, and whether larger is better.
KERNEL_METRICS = {
    "mean_log_predictive": ("mean log predictive (nats per case)", True),
    "error_rate": ("error rate", False),
    "log_evidence": ("log evidence of the training fold", True),
}


def by_kernel(
    table: pd.DataFrame, records: Records, datasets: Sequence[str], kernels: Sequence[str]
) -> tuple[pd.DataFrame, Records, list[str]]:
    """The table, records and data-set labels with each data set split by kernel
    (``"sonar / nn"``), so that every per-data-set section and figure groups by kernel too."""
    table = table.assign(dataset=table["dataset"] + " / " + table["kernel"])
    records = [replace(r, dataset=f"{r.dataset} / {r.kernel}") for r in records]
    return table, records, [f"{d} / {k}" for d in datasets for k in kernels]


def _paired(table: pd.DataFrame, a: str, b: str) -> tuple[float, float, float, int]:
    """Mean of kernel a minus kernel b over the splits both have, and its 95% t-interval."""
    va = table[table.kernel == a].set_index("split")["value"]
    vb = table[table.kernel == b].set_index("split")["value"]
    d = (va - vb).dropna().to_numpy(dtype=float)
    k = d.size
    if k == 0 or not np.all(np.isfinite(d)):
        return math.nan, math.nan, math.nan, k
    mean = float(d.mean())
    half = float(stats.t.ppf(0.975, k - 1) * d.std(ddof=1) / math.sqrt(k)) if k > 1 else math.inf
    return mean, mean - half, mean + half, k


def kernel_section(
    table: pd.DataFrame, datasets: Sequence[str], kernels: Sequence[str], engines: Sequence[str]
) -> list[str]:
    """``## Kernels compared``: per data set, engine and metric each kernel's mean over the
    splits, and the best kernel against each other one as a paired difference over the
    same splits with its 95% t-interval ("beyond" when the interval excludes zero)."""
    lines = [
        "## Kernels compared",
        "",
        "Each kernel's mean over the splits (every kernel sees the same splits, so the "
        "differences are paired); the last column names the best kernel and its paired "
        "difference from each other kernel with the 95% t-interval, *beyond* when the "
        "interval excludes zero.",
        "",
    ]
    for metric, (label, larger) in KERNEL_METRICS.items():
        t = table[table.metric == metric]
        if t.empty:
            continue
        lines += [f"### {label}", "", "| data set | engine | " + " | ".join(kernels) + " | best |"]
        lines.append("|---|---|" + "---|" * (len(kernels) + 1))
        for dataset in datasets:
            for engine in engines:
                sub = t[(t.dataset == dataset) & (t.engine == engine)]
                if sub.empty:
                    continue
                means = {k: sub[sub.kernel == k]["value"].mean() for k in kernels}
                shown = {k: v for k, v in means.items() if np.isfinite(v)}
                if not shown:
                    continue
                best = (max if larger else min)(shown, key=shown.get)
                parts = []
                for other in shown:
                    if other == best:
                        continue
                    d, lo, hi, _ = _paired(sub, best, other)
                    beyond = np.isfinite(lo) and (lo > 0 or hi < 0)
                    parts.append(
                        f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}] vs {other}"
                        + (" beyond" if beyond else "")
                    )
                cells = [f"{means[k]:.3f}" if np.isfinite(means[k]) else "n/a" for k in kernels]
                lines.append(
                    f"| {dataset} | {engine} | "
                    + " | ".join(cells)
                    + f" | {best}: {'; '.join(parts) or '-'} |"
                )
        lines.append("")
    return lines
