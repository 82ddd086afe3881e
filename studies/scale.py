"""The scale study: what the sparse approximations cost and lose as n grows, and at which M.

Runs two study files through the study runner (so either spreads over a Dask cluster:
``gpc-compare run studies/scale_sparse.toml --scheduler tcp://HOST:8786`` first, then this
script reads the records and recomputes nothing):

- ``studies/scale_full.toml``: Ripley's and Bishop's mixtures at n_train = 500 and 2000,
  the sparse engines (FITC-Laplace, FITC-EP, SVGP at M = 32, 128, 512 inducing inputs)
  beside the full Laplace, EP and KL and the MCMC reference;
- ``studies/scale_sparse.toml``: the sparse engines alone on the mixtures at n_train =
  8000, 32,000 and 100,000 and on six larger benchmarks (banana, twonorm, ringnorm, MAGIC,
  spambase, phoneme), 80% train and 20% held out;
- ``studies/scale_dense.toml``: the full Laplace, EP and KL at n_train = 8000 on the
  mixtures (the largest n at which a full fit takes minutes rather than hours here).

Every engine runs at the hyperparameters SVGP with M = 128 selects on the training set
(policy "shared"), so the differences are the approximations' alone. On the mixtures and
the generated twonorm/ringnorm the Bayes-optimal held-out log predictive is known (the
generating densities): the ceiling every engine is measured against.

Writes ``results/scale/``: ``summary.csv`` (one row per data set and engine: n, M, held-out
mean log predictive, its gap to the Bayes rule, error, ECE, fit seconds, peak traced
memory), ``growth.csv`` (each engine's fitted cost exponent), ``figures/`` and
``README.md`` (the finding). The per-job records stay in ``results/scale/<study>/jobs``
(git-ignored: at n = 100,000 each holds its latent moments, megabytes a job). Run from the
repository root: ``gpc-compare run studies/scale.py`` (results/README.md's index computes
the committed run's time from the three ``jobs.csv``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from gpc_compare.provenance import versions_text
from gpc_compare.study import load_records, load_study, run_study
from gpc_compare.study.problem import load_dataset, split_indices, stable_seed

ROOT = Path(__file__).resolve().parents[1]
STUDIES = [ROOT / "studies" / f"scale_{part}.toml" for part in ("full", "sparse", "dense")]
OUTPUT = ROOT / "results" / "scale"
WORKERS = 2
#: Within this many nats per held-out case of the full counterpart: "as good as full".
CLOSE = 0.01
#: Each sparse method and its full counterpart.
COUNTERPART = {"fitc_laplace": "laplace", "fitc_ep": "ep", "svgp": "kl"}
LABEL = {"laplace": "Laplace", "ep": "EP", "kl": "KL", "mcmc": "MCMC",
         "fitc_laplace": "FITC-Laplace", "fitc_ep": "FITC-EP", "svgp": "SVGP"}  # fmt: skip


def run(output: Path = OUTPUT, workers: int = WORKERS) -> None:
    """Run (or resume) both studies, then write the summary, figures and README."""
    for path in STUDIES:
        run_study(load_study(path), output, workers=workers, progress=sys.stdout)
    summary = summarise(output)
    summary.to_csv(output / "summary.csv", index=False, float_format="%.6g")
    growth = growth_exponents(summary)
    growth.to_csv(output / "growth.csv", index=False, float_format="%.4g")
    figures(summary, growth, output / "figures")
    (output / "README.md").write_text(readme(summary, growth))
    print(f"wrote {output / 'README.md'}")


def _bayes(config, spec, split: int) -> float | None:
    """The Bayes rule's mean log predictive on the job's held-out cases (None without a
    generating model)."""
    data = load_dataset(spec, config.seed)
    if data.true_log_proba is None:
        return None
    seed = stable_seed("split", config.seed, spec.label)
    _, test = split_indices(data, config.splits, split, seed)
    log_p = data.true_log_proba(data.X[test])
    return float(np.mean(log_p[np.arange(test.size), data.y[test]]))


def summarise(output: Path) -> pd.DataFrame:
    """One row per data set, split and engine, from the job records."""
    rows = []
    for path in STUDIES:
        config = load_study(path)
        records = load_records(output / config.name)
        bayes: dict[tuple[str, int], float | None] = {}
        for rec in records.values():
            if not rec.ok:
                continue
            spec = next(s for s in config.datasets if s.label == rec.dataset)
            key = (spec.label, rec.split)
            if key not in bayes:
                bayes[key] = _bayes(config, spec, rec.split)
            m = rec.metrics
            inducing = rec.inducing
            # the M asked for (at n = 500, M = 512 takes all 500 inputs: recorded as 500)
            asked = rec.options.get("inducing")
            rows.append({
                "study": config.name, "dataset": rec.dataset, "split": rec.split,
                "engine": rec.engine, "method": rec.method,
                "M": np.nan if inducing is None else (asked or inducing.M),
                "M_used": np.nan if inducing is None else inducing.M,
                "n_train": rec.n_train, "n_test": rec.n_test, "d": rec.d,
                "mean_log_predictive": m["mean_log_predictive"],
                "bayes_log_predictive": bayes[key],
                "error_rate": m["error_rate"], "ece": m["ece"],
                "fit_seconds": rec.timings.fit_seconds,
                "select_seconds": rec.timings.select_seconds,
                "peak_memory_mb": rec.timings.peak_memory_mb,
            })  # fmt: skip
    # (scale_dense repeats scale_sparse's SVGP source at n = 8000, with the same result)
    df = pd.DataFrame(rows).drop_duplicates(["dataset", "split", "engine"])
    df = df.sort_values(["study", "dataset", "method", "M"])
    df["gap_to_bayes"] = df["bayes_log_predictive"] - df["mean_log_predictive"]
    return df.reset_index(drop=True)


def growth_exponents(summary: pd.DataFrame) -> pd.DataFrame:
    """Each engine's cost growth: the slope of log fit seconds on log n_train over the
    mixtures (least squares, both mixtures pooled), with the n range it covers."""
    mix = summary[summary.dataset.str.match(r"(ripley|bishop)_\d+$")]
    rows = []
    for (method, M), g in mix.groupby(["method", mix.M.fillna(0)]):
        if g.n_train.nunique() < 2:
            continue
        slope, _ = np.polyfit(np.log(g.n_train), np.log(g.fit_seconds), 1)
        big = g[g.n_train >= 8000]
        big_slope = (np.polyfit(np.log(big.n_train), np.log(big.fit_seconds), 1)[0]
                     if big.n_train.nunique() >= 2 else np.nan)  # fmt: skip
        rows.append({"method": method, "M": int(M) if M else 0,
                     "n_min": int(g.n_train.min()), "n_max": int(g.n_train.max()),
                     "exponent": slope, "exponent_8000_up": big_slope})  # fmt: skip
    return pd.DataFrame(rows)


def _name(method: str, M) -> str:
    return LABEL[method] + ("" if pd.isna(M) else f" M={int(M)}")


def figures(summary: pd.DataFrame, growth: pd.DataFrame, out: Path) -> None:
    """Cost and held-out log predictive against n (log-log, each engine's fitted exponent
    in its label), and the log predictive against M."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gpc_compare.report.styles import style

    out.mkdir(parents=True, exist_ok=True)
    mix = summary[summary.dataset.str.match(r"(ripley|bishop)_\d+$")].copy()
    mix["family"] = mix.dataset.str.split("_").str[0]
    slopes = {(r.method, int(r.M)): r.exponent for r in growth.itertuples()}  # (M 0: full)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for (method, M), g in mix.groupby(["method", mix.M.fillna(0)]):
        if M not in (0, 128):
            continue
        colour, marker, _ = style(method)
        g = g.groupby("n_train", as_index=False)[["fit_seconds", "gap_to_bayes"]].mean()
        label = f"{_name(method, M or np.nan)} (slope {slopes.get((method, int(M)), np.nan):.2f})"
        axes[0].loglog(g.n_train, g.fit_seconds, marker=marker, color=colour, label=label)
        axes[1].semilogx(g.n_train, g.gap_to_bayes, marker=marker, color=colour,
                         label=_name(method, M or np.nan))  # fmt: skip
    axes[0].set(xlabel="n (training cases)", ylabel="fit seconds (one core)",
                title="Cost against n (mixtures; sparse at M = 128)")  # fmt: skip
    axes[1].axhline(0.0, color="k", lw=0.8)
    axes[1].set(xlabel="n (training cases)", ylabel="Bayes rule minus engine (nats / case)",
                title="Held-out log predictive below the Bayes rule")  # fmt: skip
    for ax in axes:
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(out / "scale_n.png", dpi=120)
    plt.close(fig)

    sets = [d for d in summary.dataset.unique() if summary[summary.dataset == d].M.notna().any()]
    cols = 4
    rows = int(np.ceil(len(sets) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False)
    for ax, name in zip(axes.ravel(), sets, strict=False):
        d = summary[summary.dataset == name]
        for method in COUNTERPART:
            g = d[d.method == method].sort_values("M")
            colour, marker, _ = style(method)
            ax.semilogx(g.M, g.mean_log_predictive, marker=marker, color=colour,
                        label=LABEL[method], base=2)  # fmt: skip
            full = d[d.method == COUNTERPART[method]]
            if len(full):
                ax.axhline(full.mean_log_predictive.iloc[0], color=colour, ls=":", lw=1)
        if d.bayes_log_predictive.notna().any():
            ax.axhline(d.bayes_log_predictive.iloc[0], color="k", lw=1, label="Bayes rule")
        ax.set_title(f"{name} (n = {int(d.n_train.iloc[0]):,})", fontsize=9)
        ax.set_xlabel("M")
        ax.grid(alpha=0.3)
    for ax in axes.ravel()[len(sets) :]:
        ax.set_visible(False)
    axes[0, 0].set_ylabel("held-out mean log predictive")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("Held-out log predictive against M (dotted: the full counterpart, where run; "
                 "black: the Bayes rule, where known)")  # fmt: skip
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(out / "scale_m.png", dpi=120)
    plt.close(fig)


def closest_m(summary: pd.DataFrame) -> pd.DataFrame:
    """Per data set with full engines and sparse method: the smallest M within CLOSE nats
    per case of the full counterpart's held-out log predictive (NaN if none)."""
    rows = []
    for name, d in summary.groupby("dataset"):
        for method, full in COUNTERPART.items():
            ref = d[d.method == full]
            sparse = d[d.method == method].sort_values("M")
            if ref.empty or sparse.empty:
                continue
            gap = (ref.mean_log_predictive.iloc[0] - sparse.mean_log_predictive).set_axis(sparse.M)
            ok = sparse[gap.abs().to_numpy() <= CLOSE]
            rows.append({
                "dataset": name, "n_train": int(ref.n_train.iloc[0]), "method": method,
                "smallest_M": ok.M.min() if len(ok) else np.nan,
                "gap_at_32": float(gap.get(32, np.nan)), "gap_at_512": float(gap.get(512, np.nan)),
            })  # fmt: skip
    return pd.DataFrame(rows)


def finding(close: pd.DataFrame, growth: pd.DataFrame) -> list[str]:
    """The finding in sentences: per method, the M needed on which data, and cost growth."""
    out = []
    for method in COUNTERPART:
        c = close[close.method == method]
        by_m: dict[str, list[str]] = {}
        for r in c.itertuples():
            key = "not even 512" if pd.isna(r.smallest_M) else f"M = {int(r.smallest_M)}"
            by_m.setdefault(key, []).append(r.dataset)
        parts = "; ".join(f"{k}: {', '.join(v)}" for k, v in sorted(by_m.items()))
        g = growth[(growth.method == method) & (growth.M > 0)]
        cost = ", ".join(f"n^{r.exponent_8000_up:.2f} at M = {int(r.M)}" for r in g.itertuples())
        out.append(f"- **{LABEL[method]}** comes within {CLOSE} nats per case of "
                   f"{LABEL[COUNTERPART[method]]} at {parts}. Its fit time grows as {cost} "
                   "(n = 8000 to 100,000, the mixtures).")  # fmt: skip
    full = growth[growth.M == 0]
    out.append("- The full engines' time grows as "
               + ", ".join(f"{LABEL[r.method]} n^{r.exponent:.2f}" for r in full.itertuples())
               + f" over n = {full.n_min.min():,} to {full.n_max.max():,} (MCMC to 2000; "
               "the cubic factorisation takes over).")  # fmt: skip
    return out


def against_mcmc(table_path: Path) -> list[str]:
    """Each engine against the MCMC reference at the same hyperparameters (n <= 2000): the
    mean KL divergence of the marginals KL(MCMC || engine) and the held-out log predictive
    minus MCMC's, averaged over the data sets."""
    if not table_path.exists():
        return []
    t = pd.read_csv(table_path)
    kl = t[t.metric == "marginal_kl_mean"].groupby("engine").value.median()
    lp = t[t.metric == "mean_log_predictive"].pivot_table(index="dataset", columns="engine",
                                                          values="value")  # fmt: skip
    d = lp.sub(lp["mcmc"], axis=0).drop(columns="mcmc")
    lines = ["## Against the MCMC reference (n_train <= 2000, the same hyperparameters)", "",
             "Median over the ten data sets of the marginal KL(MCMC || engine) at the "
             "training inputs, and the mean held-out log predictive minus MCMC's (nats per "
             "case; MCMC's own Monte Carlo error is about 0.001):", "",
             "| engine | median marginal KL | log predictive minus MCMC's, mean (min, max) |",
             "|---|---|---|"]  # fmt: skip
    for engine in d.columns:
        col = d[engine]
        lines.append(f"| {engine} | {kl.get(engine, np.nan):.4f} | {col.mean():+.4f} "
                     f"({col.min():+.4f}, {col.max():+.4f}) |")  # fmt: skip
    return lines


def readme(summary: pd.DataFrame, growth: pd.DataFrame) -> str:
    """The finding, the tables and the figures."""
    close = closest_m(summary)
    lines = ["# The scale study: sparse against full, n = 500 to 100,000", "",
             "Produced by `gpc-compare run studies/scale.py` (see its docstring for the design).",
             "", "## Finding", "", *finding(close, growth), ""]  # fmt: skip
    lines += ["## Where each sparse method reaches its full counterpart", "",
              f"Smallest M (of 32, 128, 512) within {CLOSE} nats per held-out case of the full "
              "engine at the same hyperparameters:", "",
              "| data set | n | method | smallest M | gap at M=32 | gap at M=512 |",
              "|---|---|---|---|---|---|"]  # fmt: skip
    for r in close.itertuples():
        m = "none" if pd.isna(r.smallest_M) else int(r.smallest_M)
        lines.append(f"| {r.dataset} | {r.n_train:,} | {LABEL[r.method]} | {m} | "
                     f"{r.gap_at_32:+.4f} | {r.gap_at_512:+.4f} |")  # fmt: skip
    lines += [
        "",
        "## Cost growth (fit seconds against n on the mixtures)",
        "",
        "| engine | M | n range | exponent | exponent, n >= 8000 |",
        "|---|---|---|---|---|",
    ]
    for r in growth.itertuples():
        big = "" if pd.isna(r.exponent_8000_up) else f"{r.exponent_8000_up:.2f}"
        lines.append(f"| {LABEL[r.method]} | {r.M or 'full'} | {r.n_min:,}-{r.n_max:,} | "
                     f"{r.exponent:.2f} | {big} |")  # fmt: skip
    lines += [""] + against_mcmc(OUTPUT / "scale_full" / "results.csv")
    lines += ["", "## Every run", "",
              "| data set | n | engine | M | mean log pred. | Bayes minus it | error | ECE | "
              "fit s | peak MiB |", "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in summary.itertuples():
        gap = "" if pd.isna(r.gap_to_bayes) else f"{r.gap_to_bayes:.4f}"
        peak = "" if pd.isna(r.peak_memory_mb) else f"{r.peak_memory_mb:.0f}"
        m = "" if pd.isna(r.M) else int(r.M)
        lines.append(f"| {r.dataset} | {r.n_train:,} | {LABEL[r.method]} | {m} | "
                     f"{r.mean_log_predictive:.4f} | {gap} | {r.error_rate:.4f} | {r.ece:.4f} | "
                     f"{r.fit_seconds:.2f} | {peak} |")  # fmt: skip
    lines += ["", "![cost and log predictive against n](figures/scale_n.png)", "",
              "![log predictive against M](figures/scale_m.png)", "", "## Versions", "",
              versions_text(), ""]  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    run()
