"""The report's figures (matplotlib, drawn off-screen with the Agg canvas).

- ``metrics.png``: each held-out metric per engine and data set, the mean over splits with
  a 95% t-interval across splits;
- ``reliability.png``: reliability diagrams (test predictions pooled over splits);
- ``latent_vs_REFERENCE.png``: latent means and variances at the training inputs of each
  approximation against the reference engine (MCMC) at the same hyperparameters;
- ``evidence.png``: each engine's log evidence against the hyperparameters it ran at, with
  the reference's AIS estimate where it was computed;
- ``timings.png``: fitting time per engine and data set;
- ``mcmc_diagnostics.png``: ArviZ rank plots of the latent values with the largest R-hat.

Each ``plot_*`` function writes one PNG; those that may have nothing to draw return
whether they wrote it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..engines import capabilities
from ..metrics import reliability_curve, top_label_reliability_curve
from .styles import METRICS, style

__all__ = [
    "plot_evidence",
    "plot_latent",
    "plot_mcmc",
    "plot_metrics",
    "plot_reliability",
    "plot_timings",
]

#: Job records as :func:`gpc_compare.study.load_records` returns them (one dict per job).
Records = list[dict[str, Any]]


def _figure(width: float, height: float) -> Any:
    """A constrained-layout matplotlib Figure with an Agg canvas (no GUI backend)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def plot_metrics(
    summary: pd.DataFrame, datasets: Sequence[str], engines: Sequence[str], path: Path
) -> None:
    """``metrics.png``: each held-out metric's mean and 95% t-interval per engine and data set."""
    present = [m for m in METRICS if m in set(summary["metric"])]
    ncols = 3
    nrows = math.ceil(len(present) / ncols)
    fig = _figure(5.0 * ncols, 0.9 + 0.42 * len(datasets) * nrows + 1.2 * nrows)
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=True)
    y0 = np.arange(len(datasets))
    offsets = np.linspace(-0.25, 0.25, len(engines)) if len(engines) > 1 else [0.0]
    for ax, metric in zip(axes.flat, present, strict=False):
        label, better = METRICS[metric]
        for off, engine in zip(offsets, engines, strict=True):
            colour, marker, name = style(engine)
            sub = summary[(summary.metric == metric) & (summary.engine == engine)]
            sub = sub.set_index("dataset").reindex(datasets)
            mean = sub["mean"].to_numpy(dtype=float)
            ok = np.isfinite(mean)
            with np.errstate(invalid="ignore"):
                err = np.vstack(
                    [mean - sub["low"].to_numpy(float), sub["high"].to_numpy(float) - mean]
                )
            for i in np.flatnonzero(np.isinf(mean)):
                ax.annotate(
                    f"{name}: -inf (a confident mistake)" if mean[i] < 0 else f"{name}: inf",
                    (0.02, y0[i] + off),
                    xycoords=("axes fraction", "data"),
                    fontsize=7,
                    color=colour,
                    va="center",
                )
            ax.errorbar(
                mean[ok],
                y0[ok] + off,
                xerr=err[:, ok],
                fmt=marker,
                color=colour,
                capsize=3,
                markersize=6,
                label=name,
            )
        ax.set_title(f"{label} ({better} is better)", fontsize=10)
        ax.grid(alpha=0.3)
        ax.set_yticks(y0, datasets)
        ax.set_ylim(len(datasets) - 0.5, -0.5)
    for ax in list(axes.flat)[len(present) :]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(engines), frameon=False)
    fig.suptitle("Held-out scores: mean over splits with a 95% t-interval", fontsize=12)
    fig.savefig(path, dpi=110)


def plot_reliability(
    records: Records, datasets: Sequence[str], engines: Sequence[str], path: Path
) -> None:
    """``reliability.png``: reliability diagrams of the test predictions pooled over splits
    (with C classes, of the top label: its confidence against how often it is right)."""
    ncols = min(3, len(datasets))
    nrows = math.ceil(len(datasets) / ncols)
    fig = _figure(4.6 * ncols, 4.4 * nrows + 0.6)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, dataset in zip(axes.flat, datasets, strict=False):
        ax.plot([0, 1], [0, 1], color="0.5", linestyle="--", linewidth=1)
        n_cases, top = 0, False
        for engine in engines:
            recs = [r for r in records if r["dataset"] == dataset and r["engine"] == engine]
            if not recs:
                continue
            y = np.concatenate([r["arrays"]["y_test"] for r in recs])
            top = "proba_test" in recs[0]["arrays"]  # C classes: the top label's diagram
            if top:
                proba = np.concatenate([r["arrays"]["proba_test"] for r in recs])
                curve = top_label_reliability_curve(y, proba, n_bins=10)
            else:
                p1 = np.concatenate([r["arrays"]["p1_test"] for r in recs])
                curve = reliability_curve(y, p1, n_bins=10)
            n_cases = y.size
            colour, marker, name = style(engine)
            ax.plot(
                curve["mean_predicted"],
                curve["observed_frequency"],
                marker=marker,
                color=colour,
                label=name,
                alpha=0.85,
            )
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-0.02, 1.02)
        ax.set_aspect("equal")
        ax.set_title(f"{dataset} ({n_cases} test cases, pooled)", fontsize=10)
        ax.set_xlabel("top-label confidence max_c p_c, bin mean" if top else
                      "predicted P(y = 1), bin mean")  # fmt: skip
        ax.set_ylabel("observed fraction top label right" if top else "observed fraction y = 1")
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", fontsize=8)
    for ax in list(axes.flat)[len(datasets) :]:
        ax.set_visible(False)
    fig.suptitle("Reliability diagrams (10 equal-width bins; dashed: perfect calibration)")
    fig.savefig(path, dpi=110)


def plot_latent(
    records: Records, datasets: Sequence[str], engines: Sequence[str], reference: str, path: Path
) -> bool:
    """Latent means and variances of each approximation against ``reference``'s, at the
    same hyperparameters; False (nothing written) when no job has a reference twin."""
    pairs = []
    for dataset in datasets:
        for engine in engines:
            if engine == reference:
                continue
            for rec in records:
                if rec["dataset"] != dataset or rec["engine"] != engine:
                    continue
                ref = _reference_record(records, rec, reference)
                if ref is not None:
                    pairs.append((dataset, engine, rec, ref))
    if not pairs:
        return False
    fig = _figure(10.5, 4.0 * len(datasets) + 0.6)
    axes = fig.subplots(len(datasets), 2, squeeze=False)
    for row, dataset in enumerate(datasets):
        ax_m, ax_v = axes[row]
        for engine in engines:
            sel = [(r, f) for d, e, r, f in pairs if d == dataset and e == engine]
            if not sel:
                continue
            colour, marker, name = style(engine)
            m = np.concatenate([r["arrays"]["mean_train"] for r, _ in sel])
            mr = np.concatenate([f["arrays"]["mean_train"] for _, f in sel])
            v = np.concatenate([r["arrays"]["var_train"] for r, _ in sel])
            vr = np.concatenate([f["arrays"]["var_train"] for _, f in sel])
            kw = {"s": 10, "alpha": 0.5, "color": colour, "marker": marker, "label": name}
            ax_m.scatter(mr, m, **kw)
            ax_v.scatter(vr, v, **kw)
        for ax, what in ((ax_m, "mean"), (ax_v, "variance")):
            lo, hi = ax.get_xlim()
            lo2, hi2 = ax.get_ylim()
            lo, hi = min(lo, lo2), max(hi, hi2)
            ax.plot([lo, hi], [lo, hi], color="0.4", linestyle="--", linewidth=1)
            ax.set_xlim(lo, hi)
            ax.set_ylim(lo, hi)
            ax.set_xlabel(f"{style(reference)[2]} latent {what}")
            ax.set_ylabel(f"approximation's latent {what}")
            ax.set_title(f"{dataset}: latent {what} at the training inputs", fontsize=10)
            ax.grid(alpha=0.3)
            ax.legend(loc="upper left", fontsize=8)
    fig.suptitle(f"Approximations against {style(reference)[2]} at the same hyperparameters")
    fig.savefig(path, dpi=110)
    return True


def _reference_record(
    records: Records, rec: dict[str, Any], reference: str
) -> dict[str, Any] | None:
    """The reference engine's record of the same data set, split and hyperparameters."""
    for ref in records:
        if (
            ref["engine"] == reference
            and ref["dataset"] == rec["dataset"]
            and ref["split"] == rec["split"]
            and ref["hyperparameters"]["names"] == rec["hyperparameters"]["names"]
            and np.allclose(ref["hyperparameters"]["values"], rec["hyperparameters"]["values"])
        ):
            return ref
    return None


def plot_evidence(
    records: Records,
    datasets: Sequence[str],
    engines: Sequence[str],
    methods: dict[str, str],
    path: Path,
) -> bool:
    """``evidence.png``: log evidence per training case against the hyperparameters used;
    False (nothing written) when no record has a log evidence."""
    recs = [r for r in records if r.get("log_evidence") is not None]
    if not recs:
        return False
    names = recs[0]["hyperparameters"]["names"]
    # the first length-scale (all of them for an isotropic kernel) and the signal variance
    shown = [n for n in names if n.startswith("log_lengthscale")][:1]
    shown += [n for n in names if n.endswith("log_variance")][:1]
    shown = shown or names[:2]
    fig = _figure(5.0 * len(shown), 3.6 * len(datasets) + 0.6)
    axes = fig.subplots(len(datasets), len(shown), squeeze=False)
    for row, dataset in enumerate(datasets):
        for col, hp in enumerate(shown):
            ax = axes[row][col]
            for engine in engines:
                sel = [r for r in recs if r["dataset"] == dataset and r["engine"] == engine]
                if not sel:
                    continue
                colour, marker, name = style(engine)
                x = [
                    dict(
                        zip(
                            r["hyperparameters"]["names"],
                            r["hyperparameters"]["values"],
                            strict=True,
                        )
                    ).get(hp, np.nan)
                    for r in sel
                ]
                y = [r["log_evidence"] / r["n_train"] for r in sel]
                se = [(r.get("log_evidence_se") or 0.0) / r["n_train"] for r in sel]
                label = f"{name} (AIS)" if _samples(methods.get(engine)) else name
                ax.errorbar(
                    x, y, yerr=se, fmt=marker, color=colour, label=label, alpha=0.8, capsize=2
                )
            ax.set_xlabel(hp)
            ax.set_ylabel("log evidence / n_train")
            ax.set_title(f"{dataset}: evidence at the hyperparameters used", fontsize=10)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
    fig.suptitle("Log evidence per training case (one point per split or grid point)")
    fig.savefig(path, dpi=110)
    return True


def plot_timings(
    table: pd.DataFrame, datasets: Sequence[str], engines: Sequence[str], path: Path
) -> None:
    """``timings.png``: fitting time per split, median bars and one dot per split."""
    per_job = table.drop_duplicates("job_id")
    fig = _figure(1.6 + 1.4 * len(datasets) * max(1, len(engines)) / 2, 4.4)
    ax = fig.subplots()
    width = 0.8 / max(len(engines), 1)
    x0 = np.arange(len(datasets))
    for i, engine in enumerate(engines):
        colour, marker, name = style(engine)
        med = []
        for dataset in datasets:
            v = per_job[(per_job.dataset == dataset) & (per_job.engine == engine)]["fit_seconds"]
            med.append(np.median(v) if len(v) else np.nan)
            x = np.full(len(v), x0[datasets.index(dataset)] + (i - (len(engines) - 1) / 2) * width)
            ax.scatter(x, v, color="k", s=8, zorder=3)
        ax.bar(
            x0 + (i - (len(engines) - 1) / 2) * width,
            med,
            width,
            color=colour,
            label=name,
            alpha=0.8,
        )
    ax.set_yscale("log")
    ax.set_xticks(x0, datasets)
    ax.set_ylabel("fit time per split (s, log scale)")
    ax.set_title("Fitting time (bars: median over splits; dots: each split)")
    ax.grid(alpha=0.3, axis="y")
    ax.legend()
    fig.savefig(path, dpi=110)


def plot_mcmc(result_dir: Path, records: Records, datasets: Sequence[str], path: Path) -> bool:
    """``mcmc_diagnostics.png``: ArviZ rank plots of the latent values with the largest
    R-hat, one row per data set; False (nothing written) when no InferenceData is stored."""
    import arviz as az

    chosen = []
    for dataset in datasets:
        recs = sorted(
            (r for r in records if r["dataset"] == dataset and r.get("idata")),
            key=lambda r: r["split"],
        )
        if recs and (result_dir / "jobs" / recs[0]["idata"]).exists():
            chosen.append(recs[0])
    if not chosen:
        return False
    n_show = 3
    fig = _figure(4.0 * n_show, 3.0 * len(chosen) + 0.8)
    axes = fig.subplots(len(chosen), n_show, squeeze=False)
    for row, rec in enumerate(chosen):
        idata = az.from_netcdf(str(result_dir / "jobs" / rec["idata"]))
        rhat_f = az.rhat(idata, var_names=["f"])["f"]  # dims ("obs",), or ("obs", "class")
        rhat = rhat_f.to_numpy().ravel()
        ess = az.ess(idata, var_names=["f"])["f"].to_numpy().ravel()
        worst = np.argsort(-np.nan_to_num(rhat, nan=np.inf))[:n_show]
        for ax, k in zip(axes[row], worst, strict=False):
            at = [int(i) for i in np.unravel_index(k, rhat_f.shape)]
            coords = {dim: [i] for dim, i in zip(rhat_f.dims, at, strict=True)}
            az.plot_rank(idata, var_names=["f"], coords=coords, ax=np.array([ax]), kind="vlines")
            ax.set_title(
                f"{rec['dataset']} split {rec['split']}: f[{', '.join(map(str, at))}]\n"
                f"R-hat {rhat[k]:.3f}, bulk ESS {ess[k]:.0f}",
                fontsize=9,
            )
        for ax in axes[row]:
            ax.set_ylabel("rank count - uniform\n(one colour per chain)", fontsize=8)
            ax.set_xlabel("rank of the draw among all chains", fontsize=9)
    fig.suptitle(
        "MCMC rank plots (ArviZ) of the latent values with the largest R-hat: "
        "every chain's ranks near uniform (the dashed line) means the chains mix"
    )
    fig.savefig(path, dpi=100)
    return True


def _samples(method: str | None) -> bool:
    """Whether an engine holds draws (its evidence, if any, is a sampling estimate: AIS)."""
    return method is not None and "draws" in capabilities(method)
