"""Evidence surfaces over a hyperparameter grid against a gold standard (Kuss and Rasmussen
2005, Fig. 4; Nickisch and Rasmussen 2008, Fig. 7).

Both figures read one tidy table, one row per data set, grid point and method, with the
columns ``dataset``, ``n``, ``log_lengthscale``, ``log_sf``, ``method``, ``log_evidence``,
``converged`` (for an estimator: its standard error within its threshold) and ``checked``
(an estimate made again with a longer path):

- :func:`plot_contours`: log evidence / n of each method and the gold standard, one row per
  data set, the same contour levels within a row, dense near the maximum;
- :func:`plot_gaps`: each method's log evidence minus the gold standard's, in nats, at each
  grid point, the points where the gold standard is not reliable greyed out.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from .figures import save_figure

__all__ = ["plot_contours", "plot_gaps", "surface"]


def surface(df: pd.DataFrame, name: str, method: str, column: str = "log_evidence"):
    """``(log ell values, log sigma_f values, Z)`` of one data set and method, Z with one
    row per log sigma_f."""
    sub = df[(df.dataset == name) & (df.method == method)]
    tab = sub.pivot(index="log_sf", columns="log_lengthscale", values=column)
    return tab.columns.to_numpy(), tab.index.to_numpy(), tab.to_numpy()


def _reliable(df: pd.DataFrame, name: str, method: str) -> np.ndarray:
    return surface(df, name, method, "converged")[2].astype(bool)


def plot_contours(
    df: pd.DataFrame,
    path: Path,
    title: str,
    labels: Mapping[str, str],
    gold: str,
    *,
    checked_label: str | None = None,
    unreliable_label: str = "not reliable: masked",
) -> None:
    """Contours of log evidence / n: a column per method of ``labels`` (the gold standard
    ``gold`` among them, masked where not reliable), a row per data set, the maximum
    crossed. In the gold column dots mark the points made again (``checked_label``),
    circles the points left unreliable."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import BoundaryNorm
    from matplotlib.figure import Figure

    names = list(dict.fromkeys(df.dataset))
    fig = Figure(figsize=(4.3 * len(labels), 3.4 * len(names)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(names), len(labels), squeeze=False)
    for r, name in enumerate(names):
        n = int(df[df.dataset == name].n.iloc[0])
        surfaces = {m: surface(df, name, m) for m in labels}
        ok = _reliable(df, name, gold)
        values = np.concatenate(
            [surfaces[m][2].ravel() / n for m in labels if m != gold] + [surfaces[gold][2][ok] / n]
        )
        # levels at depths 0.0025 * 2^k per case below the row's maximum (as K&R's plots,
        # dense near the top), one colour per band
        top = float(values.max())
        depths = 0.0025 * 2.0 ** np.arange(12)
        levels = np.sort(top - depths[top - depths > values.min() - 1e-12])
        levels = np.append(np.insert(levels, 0, values.min()), top)
        norm = BoundaryNorm(levels, 256)
        for c, method in enumerate(labels):
            ax = axes[r, c]
            le, ls, Z = surfaces[method]
            Z = Z / n
            if method == gold:
                Z = np.ma.masked_array(Z, ~ok)
            cs = ax.contourf(le, ls, Z, levels=levels, cmap="viridis", norm=norm)
            ax.contour(le, ls, Z, levels=levels, colors="k", linewidths=0.4)
            k = np.unravel_index(np.ma.argmax(Z), Z.shape)
            ax.plot(le[k[1]], ls[k[0]], "x", color="red", ms=12, mew=3)
            if method == gold:
                checked = surface(df, name, gold, "checked")[2].astype(bool)
                jj, ii = np.nonzero(checked & ok)
                if checked_label and len(jj):
                    ax.plot(le[ii], ls[jj], ".", color="white", mec="k", ms=7, label=checked_label)
                jj, ii = np.nonzero(~ok)
                if len(jj):
                    ax.plot(
                        le[ii], ls[jj], "o", mfc="none", mec="0.3", ms=7, label=unreliable_label
                    )
                if ax.get_legend_handles_labels()[0]:
                    ax.legend(loc="lower right", fontsize=7, framealpha=0.8)
            ax.set_title(
                f"{name} (n={n}): {labels[method]}\nmax {Z.max():.3f} at "
                f"({le[k[1]]:.2f}, {ls[k[0]]:.2f})",
                fontsize=10,
            )
            ax.set_xlabel("log length-scale")
            ax.set_ylabel("log sigma_f")
        cb = fig.colorbar(cs, ax=axes[r, :], shrink=0.95, label="log evidence / n")
        cb.set_ticks(levels)
        cb.set_ticklabels([f"{v:.3f}" for v in levels], fontsize=7)
    fig.suptitle(title, fontsize=12)
    save_figure(fig, path, dpi=90)


def plot_gaps(
    df: pd.DataFrame,
    path: Path,
    title: str,
    labels: Mapping[str, str],
    gold: str,
    *,
    note: str = "",
) -> None:
    """Each method of ``labels`` minus the gold standard ``gold`` in nats at each grid
    point (diverging colours centred at 0, one scale per panel; grey where the gold
    standard, or an estimator compared with it, is not reliable; * where the gold standard
    was made again). ``note`` is added to each panel's title."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.figure import Figure

    names = list(dict.fromkeys(df.dataset))
    fig = Figure(figsize=(6.0 * len(labels), 3.6 * len(names)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(names), len(labels), squeeze=False)
    for r, name in enumerate(names):
        le, ls, Z_gold = surface(df, name, gold)
        ok_gold = _reliable(df, name, gold)
        checked = surface(df, name, gold, "checked")[2].astype(bool)
        for c, method in enumerate(labels):
            ax = axes[r, c]
            ok = ok_gold.copy()
            if "se" in df and df[df.method == method].se.notna().any():  # an estimator
                ok &= _reliable(df, name, method)
            gap = np.ma.masked_array(surface(df, name, method)[2] - Z_gold, ~ok)
            vmax = max(float(np.abs(gap).max()) if gap.count() else 1.0, 1e-3)
            mesh = ax.pcolormesh(
                le, ls, gap, cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -vmax, vmax), shading="nearest"
            )
            ax.set_facecolor("0.85")
            for j in range(len(ls)):
                for i in range(len(le)):
                    v = float(gap.data[j, i])
                    text = f"{v:.2f}" if abs(v) < 10 else f"{v:.0f}"
                    text = text if ok[j, i] else f"({text})" if np.isfinite(v) else "n/a"
                    text += "*" if checked[j, i] and ok[j, i] else ""
                    dark = ok[j, i] and abs(v) > 0.6 * vmax
                    ax.text(
                        le[i],
                        ls[j],
                        text,
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="white" if dark else "black",
                    )
            fig.colorbar(mesh, ax=ax, label="nats")
            ax.set_title(f"{name}: {labels[method]} - {gold.upper()}{note}", fontsize=10)
            ax.set_xlabel("log length-scale")
            ax.set_ylabel("log sigma_f")
    fig.suptitle(title, fontsize=12)
    save_figure(fig, path, dpi=90)
