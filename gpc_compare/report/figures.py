"""The report's figures (matplotlib, drawn off-screen with the Agg canvas).

- ``metrics.png``: each held-out metric per engine and data set, the mean over splits with
  the summary's 95% interval (a bootstrap over test cases in the report);
- ``reliability.png``: reliability diagrams (test predictions pooled over splits);
- ``latent_vs_REFERENCE.png``: latent means and variances at the training inputs of each
  approximation against the reference engine (MCMC) at the same hyperparameters;
- ``evidence.png``: each engine's log evidence along each hyperparameter (a profile through
  the values it ran at), with the study's own evidences and the reference's estimate;
- ``timings.png``: one fit and, apart, the hyperparameter search, per engine and data set;
- ``mcmc_diagnostics.png``: ArviZ rank plots of the latent values with the largest R-hat;
- ``trust.png``: the Pareto-k check's k-hat per engine and data set (``psis = true``),
  beside the measured marginal KL from the reference where it ran.

Each ``plot_*`` function writes one PNG; those that may have nothing to draw return
whether they wrote it.
"""

from __future__ import annotations

import io
import json
import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._convergence import rank_diagnostics
from ..engines import capabilities
from ..metrics import reliability_curve, top_label_reliability_curve
from ..study import JobRecord
from ..study.output import atomic_write
from ..study.table import same_hyperparameters
from .formatting import reference_estimator
from .profiles import Profile, shown_hyperparameters
from .styles import METRICS, style

__all__ = [
    "plot_evidence",
    "plot_latent",
    "plot_mcmc",
    "plot_metrics",
    "plot_reliability",
    "plot_timings",
    "save_figure",
]

#: Job records as :func:`gpc_compare.study.load_records` returns them.
Records = list[JobRecord]


def save_figure(fig: Any, path: Path, dpi: int) -> None:
    """Write ``fig`` as the PNG ``path``, replacing whatever the name was (a link is not
    followed: :func:`gpc_compare.study.output.atomic_write`)."""
    buffer = io.BytesIO()
    fig.set_dpi(dpi)
    # constrained layout settles over two passes where an axes has a fixed aspect (the
    # reliability diagrams): laid out once before savefig's pass, the bottom label stays
    # inside the figure (it was cut at the edge)
    fig.draw_without_rendering()
    fig.savefig(buffer, format="png", dpi=dpi)
    atomic_write(path, buffer.getvalue())


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
    """``metrics.png``: each held-out metric's mean and 95% interval per engine and data set."""
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
                # (a percentile interval of a biased statistic, e.g. the ECE, may sit
                # beside its estimate; the bar then starts at the mean)
                err = np.where(np.isnan(err), np.nan, np.maximum(err, 0.0))
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
        ax.locator_params(axis="x", nbins=4)  # (a narrow interval's long tick labels)
        ax.grid(alpha=0.3)
        ax.set_yticks(y0, datasets)
        ax.set_ylim(len(datasets) - 0.5, -0.5)
    for ax in list(axes.flat)[len(present) :]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(engines), frameon=False)
    shown = summary[summary.metric.isin(present)]
    kinds = sorted(set(shown["interval"])) if "interval" in shown else ["t"]
    fig.suptitle(
        f"Held-out scores: mean over splits, 95% interval ({'; '.join(kinds)})", fontsize=12
    )
    save_figure(fig, path, dpi=110)


def plot_reliability(
    records: Records, datasets: Sequence[str], engines: Sequence[str], path: Path
) -> None:
    """``reliability.png``: reliability diagrams of the test predictions pooled over splits
    (with C classes, of the top label: its confidence against how often it is right), each
    bin with the 95% Jeffreys interval of its observed frequency."""
    ncols = min(3, len(datasets))
    nrows = math.ceil(len(datasets) / ncols)
    fig = _figure(4.6 * ncols, 4.4 * nrows + 0.6)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, dataset in zip(axes.flat, datasets, strict=False):
        ax.plot([0, 1], [0, 1], color="0.5", linestyle="--", linewidth=1)
        n_cases, top = 0, False
        for engine in engines:
            recs = [r for r in records if r.dataset == dataset and r.engine == engine]
            if not recs:
                continue
            y = np.concatenate([r.arrays.y_test for r in recs])
            top = recs[0].arrays.multiclass  # C classes: the top label's diagram
            if top:
                proba = np.concatenate([r.arrays.proba_test for r in recs])
                curve = top_label_reliability_curve(y, proba, n_bins=10)
            else:
                p1 = np.concatenate([r.arrays.p1_test for r in recs])
                curve = reliability_curve(y, p1, n_bins=10)
            n_cases = y.size
            colour, marker, name = style(engine)
            freq = curve["observed_frequency"]
            ax.errorbar(  # each bin's 95% Jeffreys interval: a sparse bin's is wide
                curve["mean_predicted"],
                freq,
                yerr=[freq - curve["observed_lower"], curve["observed_upper"] - freq],
                marker=marker,
                color=colour,
                label=name,
                alpha=0.85,
                capsize=2,
                elinewidth=0.8,
            )
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-0.02, 1.02)
        ax.set_aspect("equal")
        ax.set_title(f"{dataset} ({n_cases} test cases, pooled)", fontsize=10)
        ax.set_xlabel(
            "largest class probability, bin mean" if top else "predicted P(y = 1), bin mean"
        )
        ax.set_ylabel("observed fraction top label right" if top else "observed fraction y = 1")
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", fontsize=8)
    for ax in list(axes.flat)[len(datasets) :]:
        ax.set_visible(False)
    title = (
        "Reliability diagrams (10 equal-width bins, 95% Jeffreys intervals;"
        " dashed: perfect calibration)"
    )
    one_panel = title.replace(" (", "\n(").replace("; ", ";\n")  # (three lines)
    fig.suptitle(title if ncols > 1 else one_panel)
    save_figure(fig, path, dpi=110)


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
                if rec.dataset != dataset or rec.engine != engine:
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
            m = np.concatenate([r.arrays.mean_train for r, _ in sel])
            mr = np.concatenate([f.arrays.mean_train for _, f in sel])
            v = np.concatenate([r.arrays.var_train for r, _ in sel])
            vr = np.concatenate([f.arrays.var_train for _, f in sel])
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
    save_figure(fig, path, dpi=110)
    return True


def _reference_record(records: Records, rec: JobRecord, reference: str) -> JobRecord | None:
    """The reference engine's record of the same data set, split and hyperparameters."""
    for ref in records:
        if (
            ref.engine == reference
            and ref.dataset == rec.dataset
            and ref.split == rec.split
            and same_hyperparameters(ref, rec)
        ):
            return ref
    return None


#: The evidence figure's title, with and without refitted profiles.
_EVIDENCE_TITLES = {
    True: "Log evidence per training case along each hyperparameter, the others at the values "
    "used (lines: refitted; markers: the study's fits; dotted: the optimiser's bounds)",
    False: "Log evidence per training case at each engine's hyperparameters (markers: the "
    "study's fits; no profiles were refitted for this report)",
}


def plot_evidence(
    records: Records,
    profiles: Sequence[Profile],
    datasets: Sequence[str],
    engines: Sequence[str],
    methods: dict[str, str],
    path: Path,
) -> bool:
    """``evidence.png``: log evidence per training case along each hyperparameter.

    Curves: :func:`~gpc_compare.report.profiles.evidence_profiles` (each engine refitted
    along one hyperparameter on the first split, the others held); markers: the recorded
    evidences at the values used on that split (the reference's SMC or AIS estimate with its
    standard error); dotted
    lines: the optimiser's bounds. False (nothing written) when no record has an evidence.
    """
    recs = [r for r in records if r.log_evidence is not None]
    if not recs:
        return False
    shown = shown_hyperparameters(recs[0].hyperparameters.names)
    fig = _figure(5.4 * len(shown), 3.7 * len(datasets) + 0.8)
    axes = fig.subplots(len(datasets), len(shown), squeeze=False)
    for row, dataset in enumerate(datasets):
        split = min((r.split for r in recs if r.dataset == dataset), default=0)
        for col, hp in enumerate(shown):
            ax = axes[row][col]
            bounds: set[float] = set()
            for prof in profiles:
                if prof.dataset != dataset or prof.name != hp:
                    continue
                colour, _, name = style(prof.engine)
                ax.plot(prof.grid, prof.log_evidence / prof.n_train, color=colour, label=name)
                bounds.update(b for b in prof.bounds if np.isfinite(b))
                split = prof.split
            for engine in engines:
                sel = [
                    r
                    for r in recs
                    if r.dataset == dataset and r.engine == engine and r.split == split
                ]
                if not sel:
                    continue
                colour, marker, name = style(engine)
                values = [r.hyperparameters.as_dict().get(hp, np.nan) for r in sel]
                y = [r.log_evidence / r.n_train for r in sel]
                se = [(r.log_evidence_se or 0.0) / r.n_train for r in sel]
                drawn = any(p.engine == engine and p.dataset == dataset for p in profiles)
                est = reference_estimator(sel[0])[0].upper()
                label = (
                    None if drawn else f"{name} ({est})" if _samples(methods.get(engine)) else name
                )
                ax.errorbar(
                    values,
                    y,
                    yerr=se,
                    fmt=marker,
                    color=colour,
                    label=label,
                    capsize=3,
                    markersize=7,
                    zorder=3,
                )
            lo, hi = ax.get_xlim()
            for b in sorted(bounds):
                if lo - 0.5 <= b <= hi + 0.5:
                    ax.axvline(b, color="0.3", linestyle=":", linewidth=1.2)
                    ax.annotate(
                        "bound",
                        (b, 1.0),
                        xycoords=("data", "axes fraction"),
                        fontsize=7,
                        ha="center",
                        va="bottom",
                    )
            ax.set_xlabel(hp)
            ax.set_ylabel("log evidence / n_train")
            ax.set_title(f"{dataset} (split {split}): along {hp}", fontsize=10, pad=12)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8, loc="best")  # (clear of the markers: they can sit low)
    title = _EVIDENCE_TITLES[bool(profiles)]
    # about 12 characters per inch at 11 points: wrapped to the figure's width
    fig.suptitle(textwrap.fill(title, width=int(12 * 5.4 * len(shown))), fontsize=11)
    save_figure(fig, path, dpi=110)
    return True


def plot_timings(
    table: pd.DataFrame, datasets: Sequence[str], engines: Sequence[str], path: Path
) -> None:
    """``timings.png``: per split, one fit at the hyperparameters used (solid bars) and,
    apart, the hyperparameter search of the jobs that ran one (hatched); median bars and
    one dot per split."""
    per_job = table.drop_duplicates("job_id")
    series = []  # (engine, column, hatched)
    for engine in engines:
        series.append((engine, "fit_seconds", False))
        jobs = per_job[per_job.engine == engine]
        if "select_seconds" in jobs and (jobs["select_seconds"].fillna(0) > 0).any():
            series.append((engine, "select_seconds", True))
    # rows of data sets, each row about 14 inches of bars at most
    per_row = max(1, min(len(datasets), int(14 // (0.55 * max(1, len(series))))))
    rows = [list(datasets[k : k + per_row]) for k in range(0, len(datasets), per_row)]
    fig = _figure(2.0 + 0.55 * per_row * max(1, len(series)) + 2.5, 0.6 + 3.8 * len(rows))
    axes = fig.subplots(len(rows), 1, squeeze=False, sharey=True)[:, 0]
    width = 0.8 / max(len(series), 1)
    for ax, row in zip(axes, rows, strict=True):
        x0 = np.arange(len(row))
        for i, (engine, column, hatched) in enumerate(series):
            colour, _, name = style(engine)
            med = []
            shift = (i - (len(series) - 1) / 2) * width
            for j, dataset in enumerate(row):
                v = per_job[(per_job.dataset == dataset) & (per_job.engine == engine)][column]
                v = v.dropna()
                v = v[v > 0]
                med.append(np.median(v) if len(v) else np.nan)
                ax.scatter(np.full(len(v), x0[j] + shift), v, color="k", s=8, zorder=3)
            ax.bar(
                x0 + shift,
                med,
                width,
                color=colour,
                alpha=0.45 if hatched else 0.85,
                hatch="//" if hatched else None,
                edgecolor=colour,
                label=f"{name}: {'hyperparameter selection' if hatched else 'one fit'}",
            )
        ax.set_yscale("log")
        ax.set_xticks(x0, row)
        ax.set_xlim(-0.5, per_row - 0.5)
        ax.set_ylabel("seconds per split (log scale)")
        ax.grid(alpha=0.3, axis="y")
    axes[0].set_title(
        "One fit and, hatched, the hyperparameter search\n(bars: median over "
        "splits; dots: each split)",
        fontsize=10,
    )
    axes[0].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    save_figure(fig, path, dpi=110)


#: The caption of the rank plots, and of those kept as drawn when the samples are gone.
MCMC_CAPTION = "MCMC rank plots (ArviZ)"
KEPT_MCMC_CAPTION = "MCMC rank plots (ArviZ; drawn when the study ran, its samples not at hand)"


def rank_plots(result_dir: Path, records: Records, datasets: Sequence[str]) -> str | None:
    """The caption of ``figures/mcmc_diagnostics.png`` as this report shows it, or None.

    Drawn (:func:`plot_mcmc`) where every data set's sampler has a split whose
    InferenceData is at hand; else the figure drawn when the study ran is kept where every
    job it shows (``mcmc_diagnostics.json`` beside it) is still one of the study's (a
    clone: ``results/*/jobs/*.nc`` are not committed); else drawn from what is at hand."""
    path = result_dir / "figures" / "mcmc_diagnostics.png"
    sampled = {r.dataset for r in records if r.idata}
    at_hand = _at_hand(result_dir, records, datasets)
    if at_hand and {r.dataset for r in at_hand} == sampled:
        return MCMC_CAPTION if plot_mcmc(result_dir, records, datasets, path) else None
    if sampled and path.exists():
        side = path.with_suffix(".json")
        shown = json.loads(side.read_text())["jobs"] if side.exists() else []
        if set(shown) <= {r.id for r in records if r.idata}:  # (none listed: drawn before)
            return KEPT_MCMC_CAPTION
    return MCMC_CAPTION if plot_mcmc(result_dir, records, datasets, path) else None


def _at_hand(result_dir: Path, records: Records, datasets: Sequence[str]) -> list[JobRecord]:
    """Per data set, its first split's sampler record whose InferenceData is at hand."""
    chosen = []
    for dataset in datasets:
        recs = sorted(
            (r for r in records if r.dataset == dataset and r.idata), key=lambda r: r.split
        )
        first = next((r for r in recs if (result_dir / "jobs" / r.idata).exists()), None)
        chosen += [first] if first is not None else []
    return chosen


def plot_mcmc(result_dir: Path, records: Records, datasets: Sequence[str], path: Path) -> bool:
    """``mcmc_diagnostics.png``: ArviZ rank plots of the latent values with the largest
    R-hat, one row per data set (its first split whose InferenceData is at hand), and
    beside it ``mcmc_diagnostics.json``, the jobs shown; False (nothing written) when no
    InferenceData is at hand."""
    import arviz as az

    chosen = _at_hand(result_dir, records, datasets)
    if not chosen:
        return False
    n_show = 3
    n_bins = 20
    fig = _figure(4.4 * n_show, 3.2 * len(chosen) + 1.0)
    axes = fig.subplots(len(chosen), n_show, squeeze=False)
    for row, rec in enumerate(chosen):
        idata = az.from_netcdf(str(result_dir / "jobs" / rec.idata))
        f = idata.posterior["f"].to_numpy()  # (chains, draws, n) or (chains, draws, n, C)
        # az.rhat's and az.ess's values, vectorised (5.5 s -> 0.7 s for 4 x 1000 x 755)
        rhat, ess, _ = rank_diagnostics(f.reshape(f.shape[0], f.shape[1], -1))
        worst = np.argsort(-np.nan_to_num(rhat, nan=np.inf))[:n_show]
        for ax, k in zip(axes[row], worst, strict=False):
            at = [int(i) for i in np.unravel_index(k, f.shape[2:])]
            _rank_panel(ax, f[(slice(None), slice(None), *at)], n_bins)
            ax.set_title(
                f"{rec.dataset} split {rec.split}: f[{', '.join(map(str, at))}], "
                f"R-hat {rhat[k]:.3f}, ESS {ess[k]:.0f}",
                fontsize=9,
            )
    fig.suptitle(
        "MCMC rank plots of the latent values with the largest R-hat: draws per rank bin\n"
        "and chain; chains that mix stay inside the grey band (99% under uniform ranks)",
        fontsize=11,
    )
    save_figure(fig, path, dpi=100)
    shown = {"jobs": [r.id for r in chosen]}
    atomic_write(path.with_suffix(".json"), (json.dumps(shown, indent=1) + "\n").encode())
    return True


def _rank_panel(ax: Any, draws: np.ndarray, n_bins: int) -> None:
    """One rank plot: each chain's draws per bin of the ranks among all chains' draws, the
    uniform count and its 99% binomial band."""
    from scipy import stats

    chains, n = draws.shape
    ranks = stats.rankdata(draws.ravel()).reshape(chains, n)
    edges = np.linspace(0.5, chains * n + 0.5, n_bins + 1)
    expected = n / n_bins
    lo, hi = stats.binom.interval(0.99, n, 1.0 / n_bins)
    ax.axhspan(lo, hi, color="0.85", zorder=0)
    ax.axhline(expected, color="k", linestyle="--", linewidth=1)
    for c in range(chains):
        counts, _ = np.histogram(ranks[c], bins=edges)
        ax.step(edges[:-1], counts, where="post", linewidth=1.3, label=f"chain {c}")
    ax.set_ylim(0, max(hi * 1.3, expected * 1.6))
    ax.set_xlabel("rank among all chains' draws", fontsize=9)
    ax.set_ylabel(f"draws per bin ({n_bins} bins)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="upper right")


def _samples(method: str | None) -> bool:
    """Whether an engine holds draws (its evidence, if any, is a sampling estimate)."""
    return method is not None and "draws" in capabilities(method)
