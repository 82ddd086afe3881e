"""The report's trust figure (``figures/trust.png``): the Pareto-k check
(:func:`gpc_compare.psis`; Vehtari, Simpson, Gelman, Yao and Gabry 2024) of each engine on each
data set, beside the measured distance from the reference; and the k-hat axis every k-hat
figure shares (the studies' too: studies/trust.py, studies/trust_optima.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .figures import Records, _figure, save_figure
from .styles import style

__all__ = ["plot_trust", "symlog_khat_axis"]


def _khat_points(records: Records, datasets: Sequence[str], engines: Sequence[str]):
    """(dataset, split, engine, k-hat) of every Pareto-k check, in the order shown; a NaN
    k-hat is drawn as inf, the same verdict ("not reliable"): a job record stores an
    infinite number as NaN (:mod:`gpc_compare.study.record`), and gc.psis's inf is a
    tail ArviZ could not fit (one draw carrying all the weight)."""
    order = {d: i for i, d in enumerate(datasets)}
    return [
        (r.dataset, r.split, r.engine, _not_nan(float(r.psis["pareto_k"])))
        for r in records
        if r.psis and "pareto_k" in r.psis and r.dataset in order and r.engine in engines
    ]


def _not_nan(k: float) -> float:
    """k-hat, with NaN (no tail fitted) as inf."""
    return math.inf if math.isnan(k) else k


def symlog_khat_axis(ax: Any, values: np.ndarray, threshold: float = 0.7) -> tuple[float, float]:
    """Pareto k-hat's y axis on a matplotlib ``ax``: symlog (k-hat runs from about 0 to the
    hundreds; linear up to 1), the dashed 0.7 line of Vehtari et al. (2024), its ticks and
    label. Returns (bottom, top): where infinite values of ``values`` can be drawn, just
    outside the finite ones."""
    finite = values[np.isfinite(values)]
    lo = min(0.0, float(finite.min())) if finite.size else 0.0
    hi = max(1.0, float(finite.max())) if finite.size else 1.0
    top, bottom = hi * 1.6 + 0.2, lo - 0.25
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_ylim(bottom - 0.05, top * 1.4)
    ticks = [t for t in (-1.0, -0.5, 0.0, 0.5, 0.7, 1.0, 10.0, 100.0, 1000.0) if lo <= t <= top]
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.axhline(threshold, color="0.35", linestyle="--", linewidth=1)
    ax.set_ylabel("Pareto k-hat (symlog; above the dashed 0.7: not reliable)")
    ax.grid(alpha=0.3, axis="y")
    return bottom, top


def plot_trust(
    records: Records,
    table: pd.DataFrame,
    datasets: Sequence[str],
    engines: Sequence[str],
    reference: str | None,
    path: Path,
) -> bool:
    """``trust.png``: the Pareto-k check (:func:`gpc_compare.psis`) of each engine on each
    data set, one dot per split, with the 0.7 line of Vehtari et al. (2024); beside it,
    where the reference ran, k-hat against the measured mean marginal KL from the
    reference on the same split. Infinite or NaN k-hat (a tail that could not be fitted)
    is drawn as a triangle at the top, -inf (equal weights: q is the posterior) at the bottom.
    False (nothing written) when no job ran the check."""
    points = _khat_points(records, datasets, engines)
    if not points:
        return False
    kl = table[table.metric == "marginal_kl_mean"] if "metric" in table else table.iloc[:0]
    kl = kl.set_index(["dataset", "split", "engine"])["value"].to_dict()
    paired = [(e, kl[(d, s, e)], k) for d, s, e, k in points if (d, s, e) in kl]
    shown = [e for e in engines if any(p[2] == e for p in points)]
    fig = _figure(4.0 + 0.9 * len(datasets) + (4.5 if paired else 0.0), 4.2)
    axes = fig.subplots(1, 2 if paired else 1, squeeze=False)[0]
    values = np.array([p[3] for p in points])
    bottom, top = symlog_khat_axis(axes[0], values)
    width = 0.7 / max(len(shown), 1)
    for i, engine in enumerate(shown):
        colour, marker, name = style(engine)
        x = [
            datasets.index(d) + (i - (len(shown) - 1) / 2) * width
            for d, _, e, _ in points
            if e == engine
        ]
        k = np.array([p[3] for p in points if p[2] == engine])
        axes[0].scatter(
            np.asarray(x)[np.isfinite(k)],
            k[np.isfinite(k)],
            color=colour,
            marker=marker,
            s=22,
            alpha=0.8,
            label=name,
        )
        for value, y, m in ((np.inf, top, "^"), (-np.inf, bottom, "v")):
            hit = k == value
            axes[0].scatter(
                np.asarray(x)[hit],
                np.full(hit.sum(), y),
                color=colour,
                marker=m,
                s=30,
                facecolors="none",
            )
    axes[0].set_xticks(np.arange(len(datasets)), datasets, rotation=20, ha="right")
    axes[0].set_xlim(-0.6, len(datasets) - 0.4)
    title = "k-hat per engine and data set (one dot per split)"
    marks = [
        what
        for value, what in (
            (np.inf, "inf or not fitted (top)"),
            (-np.inf, "-inf (bottom: equal weights)"),
        )
        if (values == value).any()
    ]
    if marks:
        title += "\nopen triangles: k-hat " + ", ".join(marks)
    axes[0].set_title(title, fontsize=10)
    for edge in np.arange(len(datasets) - 1) + 0.5:
        axes[0].axvline(edge, color="0.85", linewidth=0.8)
    axes[0].legend(fontsize=8, loc="upper left")
    if paired:
        _khat_against_kl(axes[1], paired, shown, reference)
    save_figure(fig, path, dpi=110)
    return True


def _khat_against_kl(ax: Any, paired: list, shown: Sequence[str], reference: str | None) -> None:
    """The right panel of ``trust.png``: (engine, marginal KL, k-hat) per split."""
    ref = style(reference)[2] if reference else "the reference"
    symlog_khat_axis(ax, np.array([p[2] for p in paired]))
    for engine in shown:
        colour, marker, name = style(engine)
        sel = np.array([(x, k) for e, x, k in paired if e == engine and np.isfinite(k)])
        if sel.size:
            ax.scatter(
                np.maximum(sel[:, 0], 1e-6),
                sel[:, 1],
                color=colour,
                marker=marker,
                s=22,
                alpha=0.8,
                label=name,
            )
    ax.set_xscale("log")
    ax.set_xlabel(f"mean marginal KL({ref} ‖ approximation) on the split")
    ax.set_title(f"k-hat beside the measured distance from {ref}", fontsize=10)
