"""Figures and a written summary of a study's results (``gpc-compare report results/NAME``).

:func:`write_report` reads the job records and the tidy table under ``results/NAME`` and
writes ``report.md`` and ``figures/*.png``:

- ``metrics.png``: each held-out metric per engine and data set, the mean over splits with
  a 95% t-interval across splits;
- ``reliability.png``: reliability diagrams (test predictions pooled over splits);
- ``latent_vs_REFERENCE.png``: latent means and variances at the training inputs of each
  approximation against the reference engine (MCMC) at the same hyperparameters;
- ``evidence.png``: each engine's log evidence against the hyperparameters it ran at, with
  the reference's AIS estimate where it was computed;
- ``timings.png``: fitting time per engine and data set;
- ``mcmc_diagnostics.png``: ArviZ rank plots of the latent values with the largest R-hat.
"""

from __future__ import annotations

import json
import math
import os
import platform
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from . import metrics as gc_metrics
from .study import StudyConfig, assemble, load_records, load_study

__all__ = ["summarize", "write_report"]

#: Held-out metrics in the order they are shown, with labels and which way is better.
METRICS = {
    "mean_log_predictive": ("mean log predictive (nats)", "higher"),
    "information_bits": ("information (bits)", "higher"),
    "error_rate": ("error rate", "lower"),
    "brier": ("Brier score", "lower"),
    "ece": ("expected calibration error", "lower"),
    "auc": ("AUC", "higher"),
}
REFERENCE_METRICS = {
    "latent_mean_rmse": "latent mean RMSE",
    "latent_var_rmse": "latent variance RMSE",
    "marginal_kl_mean": "mean KL(ref ‖ approx)",
    "evidence_gap": "log evidence - reference AIS",
}
ENGINE_STYLE = {
    "laplace": ("tab:blue", "o", "Laplace"),
    "ep": ("tab:orange", "s", "EP"),
    "mcmc": ("tab:green", "^", "MCMC"),
}


_EXTRA_STYLES = [
    ("tab:purple", "D"),
    ("tab:red", "v"),
    ("tab:brown", "P"),
    ("tab:pink", "X"),
    ("tab:olive", "<"),
    ("tab:cyan", ">"),
]
_label_styles: dict[str, tuple[str, str, str]] = {}


def _set_styles(labels: Sequence[str]) -> None:
    """Colours and markers for engine labels: the three engines' own, then a palette."""
    _label_styles.clear()
    extra = iter(_EXTRA_STYLES)
    for label in labels:
        if label in ENGINE_STYLE:
            _label_styles[label] = ENGINE_STYLE[label]
        else:
            colour, marker = next(extra, ("tab:gray", "D"))
            _label_styles[label] = (colour, marker, label)


def _style(engine: str) -> tuple[str, str, str]:
    return _label_styles.get(engine) or ENGINE_STYLE.get(engine, ("tab:gray", "D", engine))


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard deviation and a 95% t-interval across splits per data set, engine, metric.

    Parameters
    ----------
    table : DataFrame
        The tidy study table (``results.csv``).

    Returns
    -------
    DataFrame
        Columns ``dataset, engine, metric, n_splits, mean, sd, low, high``; ``low`` and
        ``high`` are mean -/+ t_{0.975, k-1} sd / sqrt(k) over the k splits (equal to the
        mean for one split). Infinite values (a confident mistake) give an infinite mean.
    """
    from scipy import stats

    rows = []
    for (dataset, engine, metric), group in table.groupby(
        ["dataset", "engine", "metric"], sort=False
    ):
        v = group["value"].to_numpy(dtype=float)
        v = v[~np.isnan(v)]
        k = v.size
        if k == 0:
            continue
        mean = float(np.mean(v))
        sd = float(np.std(v, ddof=1)) if k > 1 and np.all(np.isfinite(v)) else 0.0
        half = float(stats.t.ppf(0.975, k - 1) * sd / math.sqrt(k)) if k > 1 else 0.0
        rows.append(
            {
                "dataset": dataset,
                "engine": engine,
                "metric": metric,
                "n_splits": k,
                "mean": mean,
                "sd": sd,
                "low": mean - half,
                "high": mean + half,
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- figures
def _plot_metrics(summary: pd.DataFrame, datasets: Sequence[str], engines: Sequence[str], path):
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
            colour, marker, name = _style(engine)
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


def _plot_reliability(records: list[dict], datasets: Sequence[str], engines: Sequence[str], path):
    ncols = min(3, len(datasets))
    nrows = math.ceil(len(datasets) / ncols)
    fig = _figure(4.6 * ncols, 4.4 * nrows + 0.6)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, dataset in zip(axes.flat, datasets, strict=False):
        ax.plot([0, 1], [0, 1], color="0.5", linestyle="--", linewidth=1)
        n_cases = 0
        for engine in engines:
            recs = [r for r in records if r["dataset"] == dataset and r["engine"] == engine]
            if not recs:
                continue
            y = np.concatenate([r["arrays"]["y_test"] for r in recs])
            p1 = np.concatenate([r["arrays"]["p1_test"] for r in recs])
            n_cases = y.size
            curve = gc_metrics.reliability_curve(y, p1, n_bins=10)
            colour, marker, name = _style(engine)
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
        ax.set_xlabel("predicted P(y = 1), bin mean")
        ax.set_ylabel("observed fraction y = 1")
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", fontsize=8)
    for ax in list(axes.flat)[len(datasets) :]:
        ax.set_visible(False)
    fig.suptitle("Reliability diagrams (10 equal-width bins; dashed: perfect calibration)")
    fig.savefig(path, dpi=110)


def _plot_latent(records, datasets, engines, reference, path) -> bool:
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
            colour, marker, name = _style(engine)
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
            ax.set_xlabel(f"{_style(reference)[2]} latent {what}")
            ax.set_ylabel(f"approximation's latent {what}")
            ax.set_title(f"{dataset}: latent {what} at the training inputs", fontsize=10)
            ax.grid(alpha=0.3)
            ax.legend(loc="upper left", fontsize=8)
    fig.suptitle(f"Approximations against {_style(reference)[2]} at the same hyperparameters")
    fig.savefig(path, dpi=110)
    return True


def _reference_record(records, rec, reference):
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


def _plot_evidence(records, datasets, engines, methods, path) -> bool:
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
                colour, marker, name = _style(engine)
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
                label = f"{name} (AIS)" if methods.get(engine) == "mcmc" else name
                ax.errorbar(
                    x, y, yerr=se, fmt=marker, color=colour, label=label, alpha=0.8, capsize=2
                )
            ax.set_xlabel(hp)
            ax.set_ylabel("log evidence / n_train")
            ax.set_title(f"{dataset}: evidence at the hyperparameters used", fontsize=10)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
    fig.suptitle("Log evidence per training case (one point per split)")
    fig.savefig(path, dpi=110)
    return True


def _plot_timings(table: pd.DataFrame, datasets, engines, path) -> None:
    per_job = table.drop_duplicates("job_id")
    fig = _figure(1.6 + 1.4 * len(datasets) * max(1, len(engines)) / 2, 4.4)
    ax = fig.subplots()
    width = 0.8 / max(len(engines), 1)
    x0 = np.arange(len(datasets))
    for i, engine in enumerate(engines):
        colour, marker, name = _style(engine)
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


def _plot_mcmc(result_dir: Path, records, datasets, path) -> bool:
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
        rhat = az.rhat(idata, var_names=["f"])["f"].to_numpy()
        worst = np.argsort(-np.nan_to_num(rhat, nan=np.inf))[:n_show]
        ess = az.ess(idata, var_names=["f"])["f"].to_numpy()
        az.plot_rank(
            idata,
            var_names=["f"],
            coords={"obs": [int(i) for i in worst]},
            ax=axes[row],
            kind="vlines",
        )
        for ax, i in zip(axes[row], worst, strict=True):
            ax.set_title(
                f"{rec['dataset']} split {rec['split']}: f[{int(i)}]\n"
                f"R-hat {rhat[i]:.3f}, bulk ESS {ess[i]:.0f}",
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


# --------------------------------------------------------------------------- Markdown
def _fmt(x: float, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "n/a"
    if np.isinf(x):
        return "-inf" if x < 0 else "inf"
    return f"{x:.{digits}f}"


def _interval(row) -> str:
    if row["n_splits"] > 1 and np.isfinite(row["mean"]):
        return f"{_fmt(row['mean'])} [{_fmt(row['low'])}, {_fmt(row['high'])}]"
    return _fmt(row["mean"])


def _markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def _findings(
    summary: pd.DataFrame, table: pd.DataFrame, records, datasets, engines, reference
) -> list[str]:
    """Plain statements with numbers, generated from the summary table."""
    lines = []

    def get(dataset, engine, metric):
        s = summary[
            (summary.dataset == dataset) & (summary.engine == engine) & (summary.metric == metric)
        ]
        return None if s.empty else s.iloc[0]

    def paired(dataset, engine, other, metric) -> tuple[float, int]:
        """Mean difference engine - other over the splits where both have a value."""
        t = table[(table.dataset == dataset) & (table.metric == metric)]
        a = t[t.engine == engine].set_index("split")["value"]
        b = t[t.engine == other].set_index("split")["value"]
        common = a.index.intersection(b.index)
        return float(np.mean(a[common] - b[common])) if len(common) else np.nan, len(common)

    for dataset in datasets:
        parts = []
        lp = {e: get(dataset, e, "mean_log_predictive") for e in engines}
        lp = {e: r for e, r in lp.items() if r is not None}
        n_max = max((int(r["n_splits"]) for r in lp.values()), default=0)
        complete = {e: r for e, r in lp.items() if int(r["n_splits"]) == n_max}
        if len(complete) >= 2:
            best = max(complete, key=lambda e: complete[e]["mean"])
            parts.append(
                f"best mean log predictive: {_style(best)[2]} ({_fmt(lp[best]['mean'])} nats"
                f" over {n_max} split{'s' if n_max > 1 else ''})"
            )
        if reference in lp:
            for e in lp:
                if e != reference:
                    d, k = paired(dataset, e, reference, "mean_log_predictive")
                    parts.append(
                        f"{_style(e)[2]} - {_style(reference)[2]} = {_fmt(d)} nats"
                        + ("" if k == n_max else f" (on the {k} splits both finished)")
                    )
        missing = [e for e in engines if e not in lp]
        if missing:
            parts.append("no results from " + ", ".join(_style(e)[2] for e in missing))
        err = {e: get(dataset, e, "error_rate") for e in engines}
        err = {e: r for e, r in err.items() if r is not None}
        if err:
            parts.append(
                "error rates "
                + ", ".join(f"{_style(e)[2]} {_fmt(r['mean'])}" for e, r in err.items())
            )
        for e in engines:
            kl = get(dataset, e, "marginal_kl_mean")
            gap = get(dataset, e, "evidence_gap")
            if kl is not None:
                parts.append(f"{_style(e)[2]} mean marginal KL from {reference} {_fmt(kl['mean'])}")
            if gap is not None:
                parts.append(f"{_style(e)[2]} evidence - AIS {_fmt(gap['mean'], 2)}")
        diag = [
            r["diagnostics"] for r in records if r["dataset"] == dataset and r.get("diagnostics")
        ]
        if diag:
            n_pass = sum(d["passed"] for d in diag)
            parts.append(
                f"MCMC diagnostics passed on {n_pass} of {len(diag)} fits"
                + ("" if n_pass == len(diag) else " (see the diagnostics table)")
            )
        for e in engines:
            z = get(dataset, e, "evidence_gap_z")
            if z is None or not np.isfinite(z["mean"]) or abs(z["mean"]) <= 3:
                continue
            if z["mean"] < 0:
                parts.append(
                    f"{_style(e)[2]}'s evidence is below the AIS estimate by {_fmt(-z['mean'], 1)}"
                    " standard errors on average (AIS is biased low if anything, so the deficit "
                    "is the approximation's)"
                )
            else:
                parts.append(
                    f"{_style(e)[2]}'s evidence is above the AIS estimate by {_fmt(z['mean'], 1)}"
                    " standard errors on average: AIS estimates of log Z are biased low when the "
                    "annealing is too short, so part of that gap may be the reference's"
                )
        if parts:
            lines.append(f"- **{dataset}**: " + "; ".join(parts) + ".")
    return lines


def write_report(result_dir: str | os.PathLike[str]) -> Path:
    """Write ``report.md`` and ``figures/*.png`` for the study results in ``result_dir``.

    Parameters
    ----------
    result_dir : path
        ``results/NAME`` as written by :func:`gpc_compare.study.run_study` (with its
        ``study.toml`` and ``jobs/``).

    Returns
    -------
    Path
        The path of ``report.md``.

    Raises
    ------
    ValueError
        When ``result_dir`` holds no study results.
    """
    result_dir = Path(result_dir)
    if not (result_dir / "study.toml").exists():
        raise ValueError(
            f"{result_dir} holds no study results (no study.toml): "
            "run `gpc-compare run studies/NAME.toml` first"
        )
    config = load_study(result_dir / "study.toml")
    table = assemble(result_dir, config)
    if table.empty:
        raise ValueError(f"{result_dir}: no job has finished yet; nothing to report")
    jobs = pd.read_csv(result_dir / "jobs.csv")
    current = set(jobs["job_id"])
    records = [
        r for r in load_records(result_dir).values() if r["id"] in current and r["status"] == "ok"
    ]
    datasets = [d.label for d in config.datasets]
    engines = list(config.engines)
    _set_styles(engines)
    summary = summarize(table)
    figures = result_dir / "figures"
    figures.mkdir(exist_ok=True)
    made: list[tuple[str, str]] = []

    _plot_metrics(summary, datasets, engines, figures / "metrics.png")
    made.append(("metrics.png", "Held-out scores per engine and data set"))
    _plot_reliability(records, datasets, engines, figures / "reliability.png")
    made.append(("reliability.png", "Reliability diagrams"))
    if config.reference is not None:
        name = f"latent_vs_{config.reference}.png"
        if _plot_latent(records, datasets, engines, config.reference, figures / name):
            made.append((name, f"Latent moments against {config.reference}"))
    if _plot_evidence(records, datasets, engines, config.methods, figures / "evidence.png"):
        made.append(("evidence.png", "Log evidence against the hyperparameters used"))
    _plot_timings(table, datasets, engines, figures / "timings.png")
    made.append(("timings.png", "Fitting time"))
    if _plot_mcmc(result_dir, records, datasets, figures / "mcmc_diagnostics.png"):
        made.append(("mcmc_diagnostics.png", "MCMC rank plots (ArviZ)"))

    try:
        study_file = json.loads((result_dir / "run.json").read_text())["study_file"]
    except (OSError, ValueError, KeyError):
        study_file = f"studies/{config.name}.toml"
    text = _markdown(
        config, table, jobs, summary, records, datasets, engines, made, study_file, result_dir
    )
    path = result_dir / "report.md"
    path.write_text(text)
    return path


def _selection_comparison(table, records, datasets, engines) -> list[str]:
    """Where engines that select their own hyperparameters disagree, and what it changes."""
    own = [e for e in engines if any(
        r["engine"] == e and r["hyperparameters"]["from"] == "own" for r in records
    )]  # fmt: skip
    if len(own) < 2:
        return []
    rows = []
    for dataset in datasets:
        theta = {}
        for r in records:
            if r["dataset"] == dataset and r["engine"] in own:
                theta[(r["engine"], r["split"])] = np.asarray(r["hyperparameters"]["values"])
        for i, e1 in enumerate(own):
            for e2 in own[i + 1 :]:
                splits = sorted(s for (e, s) in theta if e == e1 and (e2, s) in theta)
                if not splits:
                    continue
                gaps = [float(np.max(np.abs(theta[(e1, s)] - theta[(e2, s)]))) for s in splits]
                diffs = []
                for metric in ("mean_log_predictive", "loo_log_predictive"):
                    t = table[(table.dataset == dataset) & (table.metric == metric)]
                    a = t[t.engine == e1].set_index("split")["value"].reindex(splits)
                    b = t[t.engine == e2].set_index("split")["value"].reindex(splits)
                    d = (a - b).to_numpy(dtype=float)
                    diffs.append(_fmt(float(np.mean(d)), 4) if np.isfinite(d).any() else "n/a")
                rows.append(
                    [
                        dataset,
                        f"{_style(e1)[2]} vs {_style(e2)[2]}",
                        f"{sum(g > 0.1 for g in gaps)} of {len(gaps)}",
                        _fmt(float(np.median(gaps)), 2),
                        _fmt(float(np.max(gaps)), 2),
                        *diffs,
                    ]
                )
    if not rows:
        return []
    return [
        "## Hyperparameter selections compared",
        "",
        "Engines that select their own hyperparameters, compared split by split: how often "
        "their selections differ by more than 0.1 in some log hyperparameter, the median and "
        "largest such difference, and the mean paired difference (first minus second) of the "
        "held-out mean log predictive and of the training-set LOO log predictive (EP).",
        "",
        *_markdown_table(
            [
                "data set",
                "engines",
                "splits differing > 0.1",
                "median of max abs d log theta",
                "largest",
                "d held-out log pred.",
                "d LOO log pred. (train)",
            ],
            rows,
        ),
        "",
    ]


def _markdown(
    config: StudyConfig,
    table,
    jobs,
    summary,
    records,
    datasets,
    engines,
    made,
    study_file: str,
    result_dir: Path,
) -> str:
    versions = json.loads(table["versions"].iloc[0])
    n_ok = int((jobs.status == "ok").sum())
    failed = jobs[jobs.status == "failed"]
    not_run = jobs[jobs.status == "not run"]
    kernel = dict(config.kernel)
    splits = config.splits
    split_text = (
        f"{splits['n_splits']}-fold stratified cross-validation"
        if splits["kind"] == "kfold"
        else f"{splits['n_repeats']} stratified train/test splits, test size {splits['test_size']}"
    )
    lines = [
        f"# Study `{config.name}`",
        "",
        config.description.strip(),
        "",
        f"- Command: `gpc-compare run {study_file}` (it writes this report too; "
        f"`gpc-compare report {result_dir}` rewrites it)",
        f"- Report written {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} on "
        f"{platform.node() or 'this machine'} ({os.cpu_count()} CPUs)",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
        f"- Data: {', '.join(datasets)}; inputs standardised on each training fold; {split_text}",
        f"- Model: {kernel['name']} kernel"
        f"{' (ARD)' if kernel.get('ard') else ''}, {config.likelihood} likelihood, "
        f"{'constant prior mean (a hyperparameter)' if config.mean is not None else 'zero mean'}",
        f"- Hyperparameters: policy `{config.policy}`"
        + (f", source `{config.source}`" if config.source else "")
        + f", {config.n_restarts} optimiser restarts; study seed {config.seed}",
        "- Engines and options: "
        + "; ".join(
            f"{e}{'' if config.methods[e] == e else f' (method {config.methods[e]})'} "
            f"{dict(o) or '(defaults)'}"
            for e, o in config.engines.items()
        ),
        f"- Jobs: {len(jobs)} ({n_ok} finished, {len(failed)} failed, {len(not_run)} not run); "
        f"the table is `results.csv` ({len(table)} rows), per-job status in `jobs.csv`",
        "",
        "## Findings",
        "",
        *_findings(summary, table, records, datasets, engines, config.reference),
        "",
        "## Held-out scores",
        "",
        "Mean over splits with a 95% t-interval across splits in brackets.",
        "",
    ]
    present = [m for m in METRICS if m in set(summary.metric)]
    for dataset in datasets:
        lines += [f"### {dataset}", ""]
        rows = []
        for engine in engines:
            cells = [_style(engine)[2]]
            for m in present:
                s = summary[
                    (summary.dataset == dataset)
                    & (summary.engine == engine)
                    & (summary.metric == m)
                ]
                cells.append("n/a" if s.empty else _interval(s.iloc[0]))
            rows.append(cells)
        lines += _markdown_table(["engine", *[METRICS[m][0] for m in present]], rows) + [""]

    ref_present = [m for m in REFERENCE_METRICS if m in set(summary.metric)]
    if ref_present:
        lines += [
            f"## Against the reference ({config.reference}) at the same hyperparameters",
            "",
            "Latent moments at the training inputs; KL(reference ‖ approximation) between "
            "the Gaussian marginals, averaged over cases; evidence gap = the engine's log "
            "evidence minus the reference's AIS estimate.",
            "",
        ]
        rows = []
        for dataset in datasets:
            for engine in engines:
                cells = [dataset, _style(engine)[2]]
                have = False
                for m in ref_present:
                    s = summary[
                        (summary.dataset == dataset)
                        & (summary.engine == engine)
                        & (summary.metric == m)
                    ]
                    have |= not s.empty
                    cells.append("n/a" if s.empty else _interval(s.iloc[0]))
                if have:
                    rows.append(cells)
        lines += _markdown_table(
            ["data set", "engine", *[REFERENCE_METRICS[m] for m in ref_present]], rows
        ) + [""]

    lines += ["## Hyperparameters used", "", "Mean over splits of the log values.", ""]
    rows = []
    for dataset in datasets:
        for engine in engines:
            recs = [r for r in records if r["dataset"] == dataset and r["engine"] == engine]
            if not recs:
                continue
            names = recs[0]["hyperparameters"]["names"]
            vals = np.mean([r["hyperparameters"]["values"] for r in recs], axis=0)
            src = recs[0]["hyperparameters"]["from"]
            hp = ", ".join(f"{n} {v:.3f}" for n, v in zip(names, vals, strict=True))
            ev = [r["log_evidence"] for r in recs if r.get("log_evidence") is not None]
            rows.append(
                [dataset, _style(engine)[2], src, hp, _fmt(np.mean(ev), 2) if ev else "n/a"]
            )
    lines += _markdown_table(
        ["data set", "engine", "selected by", "hyperparameters", "log evidence (mean)"], rows
    ) + [""]

    lines += _selection_comparison(table, records, datasets, engines)

    diag = [r for r in records if r.get("diagnostics")]
    if diag:
        lines += ["## MCMC diagnostics", ""]
        rows = [
            [
                r["dataset"],
                r["split"],
                _fmt(r["diagnostics"]["r_hat_max"], 3),
                _fmt(r["diagnostics"]["ess_bulk_min"], 0),
                _fmt(r["diagnostics"]["ess_tail_min"], 0),
                r["diagnostics"]["divergences"],
                "yes" if r["diagnostics"]["passed"] else "**no**",
            ]
            for r in sorted(diag, key=lambda r: (datasets.index(r["dataset"]), r["split"]))
        ]
        lines += _markdown_table(
            [
                "data set",
                "split",
                "max R-hat",
                "min bulk ESS",
                "min tail ESS",
                "divergences",
                "passed",
            ],
            rows,
        ) + [""]

    lines += ["## Timings", "", "Median fitting time per split in seconds (prediction apart).", ""]
    per_job = table.drop_duplicates("job_id")
    rows = []
    for dataset in datasets:
        cells = [dataset]
        for engine in engines:
            v = per_job[(per_job.dataset == dataset) & (per_job.engine == engine)]["fit_seconds"]
            cells.append(f"{float(np.median(v)):.3g}" if len(v) else "n/a")
        rows.append(cells)
    lines += _markdown_table(["data set", *[_style(e)[2] for e in engines]], rows) + [""]

    if len(failed) or len(not_run):
        lines += ["## Jobs that did not finish", ""]
        for _, row in pd.concat([failed, not_run]).iterrows():
            err = row["error"] if isinstance(row["error"], str) and row["error"] else row["status"]
            lines.append(f"- {row['dataset']} split {row['split']} {row['engine']}: {err}")
        lines += ["", "Tracebacks are in `jobs/<job_id>.json`; rerun the study to retry.", ""]

    lines += ["## Figures", ""]
    for name, caption in made:
        lines += [f"### {caption}", "", f"![{caption}](figures/{name})", ""]
    return "\n".join(lines).rstrip() + "\n"
