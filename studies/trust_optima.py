"""Is the Pareto-k check right at each engine's own optimum, not only at EP's?

results/trust checks Laplace, EP and KL at one point per split: the hyperparameters the
MCMC reference of results/approximations sampled at, EP's selection. Laplace and KL select
their own (type-II maximum likelihood on Laplace's approximate evidence; KL's lower bound,
Nickisch and Rasmussen 2008), and a user checks an engine where it selected.
``studies/trust_at_laplace.toml`` and ``studies/trust_at_kl.toml`` run each at its own
optimum on repeat 0 of results/approximations (the same seed, splits and engine labels: the
same jobs, whose own numbers reproduce that study's), with the check on
(``psis = {draws = 4000}``) and the MCMC reference with SMC's evidence at the same
hyperparameters. This script joins their records with EP's rows of results/trust/trust.csv
(EP's own optimum is where that reference sampled) into ``optima.csv``, one row per data
set, split and engine, and writes the findings (:func:`findings`, every number from the
table), which ``studies/trust.py`` puts in results/trust/README.md as the section "At each
engine's own optimum". The questions are results/trust's: does k-hat rank the cases as the
mean marginal KL from MCMC does (Spearman), and where k-hat is below the threshold is the
importance-sampled evidence within 3 combined standard errors of SMC's and the corrected
held-out score within the combined Monte Carlo error of MCMC's (:func:`within_combined`)?

Writes ``results/trust_optima/``: ``optima.csv``, ``khat_vs_kl_optima.png`` and a README
pointing to the section. Run from the repository root, after the two studies:
``gpc-compare run studies/trust_optima.py`` (seconds: it reads records).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from gpc_compare.provenance import versions_text
from gpc_compare.report.trust_figure import symlog_khat_axis
from gpc_compare.study import read_records
from gpc_compare.study.records import read_record
from gpc_compare.study.table import converged
from gpc_compare.trust import KHAT_BOUND

ROOT = Path(__file__).resolve().parents[1]
#: Each engine checked at its own optimum, and the study that ran it there beside MCMC.
STUDIES = {
    "laplace": ROOT / "results" / "trust_at_laplace",
    "kl": ROOT / "results" / "trust_at_kl",
}
TRUST = ROOT / "results" / "trust" / "trust.csv"
APPROXIMATIONS = ROOT / "results" / "approximations"
ENGINES = ("laplace", "ep", "kl")
#: The columns of optima.csv taken from results/trust/trust.csv for EP.
SHARED = [
    *("dataset", "split", "engine", "n", "pareto_k", "khat_threshold", "ess"),
    *("is_log_evidence", "is_log_evidence_se", "log_evidence", "smc_log_evidence"),
    *("smc_log_evidence_se", "psis_seconds", "mcmc_seconds", "mean_log_predictive"),
    *("is_mean_log_predictive", "is_mean_log_predictive_se", "mcmc_mean_log_predictive"),
    *("mcmc_mean_log_predictive_mcse", "marginal_kl"),
]


def _row(rec, ref, marginal_kl: float) -> dict:
    """An engine's record (its check in ``rec.psis``) beside MCMC's at its hyperparameters."""
    psis = rec.psis
    return {
        "dataset": rec.dataset,
        "split": rec.split,
        "engine": rec.engine,
        "n": rec.n_train,
        **psis_columns(psis),
        "log_evidence": rec.log_evidence,
        "smc_log_evidence": ref.log_evidence,
        "smc_log_evidence_se": ref.log_evidence_se,
        "psis_seconds": psis.get("seconds", np.nan),
        "mcmc_seconds": ref.timings.fit_seconds,
        "mean_log_predictive": rec.metrics["mean_log_predictive"],
        "is_mean_log_predictive": psis.get("mean_log_predictive", np.nan),
        "is_mean_log_predictive_se": _se(psis),
        "mcmc_mean_log_predictive": ref.metrics["mean_log_predictive"],
        "mcmc_mean_log_predictive_mcse": ref.mcse.get("mean_log_predictive", np.nan),
        "marginal_kl": marginal_kl,
        "log_lengthscale": ref.hyperparameters.values[0],
        "log_sf": ref.hyperparameters.values[1] / 2.0,
        "mcmc_converged": converged(ref),
    }


def psis_columns(psis: dict) -> dict[str, float]:
    """A job record's Pareto-k check (``rec.psis``; NaN where it did not run) as the
    tables' columns: k-hat, its threshold, the ESS, the IS evidence and its se."""
    return {
        "pareto_k": psis.get("pareto_k", np.nan),
        "khat_threshold": psis.get("khat_threshold", np.nan),
        "ess": psis.get("ess", np.nan),
        "is_log_evidence": psis.get("log_evidence", np.nan),
        "is_log_evidence_se": psis.get("log_evidence_se", np.nan),
    }


def evidence_where_unreliable(df: pd.DataFrame) -> list[str]:
    """The findings' line on the cases whose k-hat is not below the threshold (NaN
    included): how far the approximation's own evidence lies below SMC's; none if none."""
    unreliable = df[~(df.pareto_k < df.khat_threshold)]
    if unreliable.empty:
        return []
    gap = unreliable.smc_log_evidence - unreliable.log_evidence
    return [
        f"- Where it is not ({len(unreliable)} cases), the approximation's own evidence is "
        f"{gap.median():.2f} nats below SMC's at the median (largest {gap.max():.2f})."
    ]


def _se(psis: dict) -> float:
    """The corrected held-out score's standard error where k-hat <= 0.7, else NaN, as
    :meth:`gpc_compare.trust.PSISDiagnosis.mean_log_predictive` now returns it (records
    written before that kept the delta method's value, which collapses towards 0 as the
    weights concentrate on one draw)."""
    reliable = psis.get("pareto_k", np.nan) <= KHAT_BOUND
    return psis.get("mean_log_predictive_se", np.nan) if reliable else np.nan


def _by_split(path: Path) -> dict[tuple[str, int, str], object]:
    records, _ = read_records(path)
    return {(r.dataset, r.split, r.engine): r for r in records.values() if r.ok}


def table() -> pd.DataFrame:
    """optima.csv: Laplace's and KL's checks at their own optima from the two studies' records
    (where MCMC at the same hyperparameters finished), EP's from trust.csv (with the
    hyperparameters of the reference it was checked at), in data set and split order."""
    rows = []
    for engine, path in STUDIES.items():
        if not (path / "results.csv").exists():
            continue
        by = _by_split(path)
        res = pd.read_csv(path / "results.csv")
        kl = res[res.metric == "marginal_kl_mean"].set_index(["dataset", "split", "engine"])
        kl = kl["value"].to_dict()
        for (dataset, split, e), rec in by.items():
            ref = by.get((dataset, split, "mcmc"))
            if e == engine and ref is not None:
                rows.append(_row(rec, ref, kl.get((dataset, split, engine), np.nan)))
    ref = {}
    for path in sorted((APPROXIMATIONS / "jobs").glob("*__s[0-4]__mcmc__*.json")):
        rec = read_record(path)  # (repeat 0's references only: reading all 360 takes long)
        ref[(rec.dataset, rec.split, "mcmc")] = rec
    ep = pd.read_csv(TRUST)
    ep = ep[ep.engine == "ep"][SHARED].copy()
    theta = np.array(
        [
            ref[(d, s, "mcmc")].hyperparameters.values
            for d, s in zip(ep.dataset, ep.split, strict=True)
        ]
    )
    ep["log_lengthscale"], ep["log_sf"] = theta[:, 0], theta[:, 1] / 2.0
    ep["mcmc_converged"] = [
        converged(ref[(d, s, "mcmc")]) for d, s in zip(ep.dataset, ep.split, strict=True)
    ]
    df = pd.concat([pd.DataFrame(rows), ep], ignore_index=True)
    order = {d: i for i, d in enumerate(pd.read_csv(TRUST).dataset.unique())}
    df["_order"] = df.dataset.map(order) * 100 + df.split
    df["_engine"] = df.engine.map({e: i for i, e in enumerate(ENGINES)})
    return (
        df.sort_values(["_order", "_engine"])
        .drop(columns=["_order", "_engine"])
        .reset_index(drop=True)
    )


def complete(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of the splits on which every engine was checked at its own optimum beside
    MCMC (all of them once both studies have finished)."""
    have = df.groupby(["dataset", "split"]).engine.transform("nunique")
    return df[have == len(ENGINES)].reset_index(drop=True)


def combined_error(df: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """|corrected score - MCMC's| and the combined Monte Carlo error of the two,
    sqrt(mcse_MCMC^2 + se_IS^2) (each estimate's own: MCMC's by chain, the importance
    sampler's by the delta method, ``PSISDiagnosis.mean_log_predictive``)."""
    gap = (df.is_mean_log_predictive - df.mcmc_mean_log_predictive).abs()
    return gap, np.hypot(df.mcmc_mean_log_predictive_mcse, df.is_mean_log_predictive_se)


def within_combined(ok: pd.DataFrame, indent: str = "  ") -> list[str]:
    """How many of ``ok``'s corrected held-out scores are within 1, 2 and 3 combined Monte
    Carlo errors of MCMC's (where both errors are recorded), and the largest deviation."""
    gap, se = combined_error(ok)
    have = se.notna()
    if not have.any():
        return [f"{indent}Against the Monte Carlo errors: none recorded."]
    gap, se = gap[have], se[have]
    z = gap / se
    worst = ok.loc[z.idxmax()]
    counts = ", ".join(f"{k}: {int((gap <= k * se).sum())}" for k in (1, 2, 3))
    return [
        f"{indent}Against the combined Monte Carlo error of the two, sqrt(MCMC's mcse^2 + "
        f"the importance estimate's se^2) ({se.median():.4f} at the median; the importance "
        f"estimate's own se {ok.is_mean_log_predictive_se[have].median():.4f}), the "
        f"{int(have.sum())} cases within 1, 2, 3 combined errors: {counts} (largest "
        f"{z.max():.1f} errors, {worst.engine} on {worst.dataset} split {worst.split})."
    ]


def _engine_line(engine: str, e: pd.DataFrame, at_ep: pd.DataFrame) -> str:
    """One engine's k-hat and marginal KL at its own optimum, beside results/trust's at
    EP's on the same splits."""
    below = int((e.pareto_k < e.khat_threshold).sum())
    line = (
        f"- **{engine}** at its own optimum: k-hat below the threshold on {below} of {len(e)} "
        f"splits (median {e.pareto_k.median():.2f}, largest {e.pareto_k.max():.2f}); mean "
        f"marginal KL from MCMC {e.marginal_kl.mean():.4f}"
    )
    if engine == "ep":
        return line + " (results/trust's rows: EP's optimum is where its reference sampled)."
    keys = ["dataset", "split"]
    same = at_ep[at_ep.engine == engine].merge(e[keys], on=keys)
    below_ep = int((same.pareto_k < same.khat_threshold).sum())
    return line + (
        f"; at EP's optimum on the same splits: {below_ep} of {len(same)} below (median "
        f"{same.pareto_k.median():.2f}), mean marginal KL {same.marginal_kl.mean():.4f}."
    )


def findings(df: pd.DataFrame, at_ep: pd.DataFrame) -> list[str]:
    """The section's findings, every number from ``df`` (optima.csv) and ``at_ep``
    (results/trust/trust.csv, for Laplace's and KL's checks at EP's optimum)."""
    ok = df.dropna(subset=["marginal_kl"])
    rho, p = stats.spearmanr(ok.pareto_k, ok.marginal_kl)
    lines = [
        f"- **k-hat against the measured distance from MCMC**: over the {len(ok)} engine x "
        f"split cases at the engines' own optima, Spearman's rank correlation of k-hat and the "
        f"mean marginal KL from MCMC at the same hyperparameters is {rho:.2f} (p = {p:.1g})."
    ]
    lines += [_engine_line(e, df[df.engine == e], at_ep) for e in ENGINES if (df.engine == e).any()]
    reliable = df[df.pareto_k < df.khat_threshold]
    z = (reliable.is_log_evidence - reliable.smc_log_evidence) / np.hypot(
        reliable.is_log_evidence_se, reliable.smc_log_evidence_se
    )
    counts = {
        e: (int((z[reliable.engine == e].abs() <= 3).sum()), int((reliable.engine == e).sum()))
        for e in ENGINES
    }
    per = ", ".join(f"{e} {a} of {b}" for e, (a, b) in counts.items())
    lines.append(
        f"- **Where k-hat is below the threshold, the importance-sampled evidence against "
        f"SMC's**: within 3 combined standard errors on {int((z.abs() <= 3).sum())} of "
        f"{len(z)} cases ({per}; largest |z| {z.abs().max():.1f})."
    )
    corrected = (reliable.is_mean_log_predictive - reliable.mcmc_mean_log_predictive).abs()
    own = (reliable.mean_log_predictive - reliable.mcmc_mean_log_predictive).abs()
    lines.append(
        f"- **Where k-hat is below the threshold, the corrected held-out score against "
        f"MCMC's**: over {len(reliable)} cases |corrected - MCMC's| is {corrected.median():.4f} "
        f"at the median (largest {corrected.max():.4f}; the approximation's own "
        f"{own.median():.4f}, largest {own.max():.4f})."
    )
    lines += within_combined(reliable)
    lines += evidence_where_unreliable(df)
    ratio = df.psis_seconds / df.mcmc_seconds
    lines.append(
        f"- **Cost**: a check took {df.psis_seconds.median():.2f} s at the median (largest "
        f"{df.psis_seconds.max():.2f} s), {100 * ratio.median():.1f}% of the MCMC fit at the "
        f"same hyperparameters (largest {100 * ratio.max():.1f}%; both timed on a machine "
        "shared with other work)."
    )
    return lines


def per_dataset_lines(df: pd.DataFrame, optima: bool = True) -> list[str]:
    """The table per data set and engine: the median k-hat, the splits below the threshold
    and the mean marginal KL, after the median own optimum (``optima``; studies/trust.py's
    table, at EP's values, leaves it out)."""
    head = ["data set", "engine"]
    head += ["median log ell", "median log sigma_f"] if optima else []
    head += ["median k-hat", "below threshold", "mean marginal KL"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (dataset, engine), g in df.groupby(["dataset", "engine"], sort=False):
        cells = [dataset, engine]
        if optima:
            cells += [f"{g.log_lengthscale.median():.2f}", f"{g.log_sf.median():.2f}"]
        below = int((g.pareto_k < g.khat_threshold).sum())
        cells += [f"{g.pareto_k.median():.2f}", f"{below} of {len(g)}"]
        lines.append("| " + " | ".join([*cells, f"{g.marginal_kl.mean():.4f}"]) + " |")
    return lines


def section(df: pd.DataFrame, at_ep: pd.DataFrame) -> list[str]:
    """results/trust/README.md's section "At each engine's own optimum", on the splits
    :func:`complete` keeps."""
    df = complete(df)
    datasets = list(df.dataset.unique())
    missing = [d for d in at_ep.dataset.unique() if d not in datasets]
    splits = df.groupby("dataset").split.nunique()
    lines = [
        "## At each engine's own optimum",
        "",
        "`../trust_optima/optima.csv` (`studies/trust_optima.py`): Laplace and KL each at the "
        "hyperparameters it selects (`studies/trust_at_laplace.toml`, "
        "`studies/trust_at_kl.toml`: repeat 0 of results/approximations, the check with "
        "4000 draws, and the MCMC reference with SMC's evidence run again at those values), "
        "EP at its own, where results/trust's reference sampled (the rows above). "
        f"{len(df) // len(ENGINES)} splits, each with all three engines: "
        + ", ".join(f"{d} {n}" for d, n in splits.items())
        + (f"; not finished by the deadline: {', '.join(missing)}" if missing else "")
        + f". MCMC passed its convergence diagnostics on {int(df.mcmc_converged.sum())} "
        f"of the {len(df)} cases.",
        "",
        *findings(df, at_ep),
        "",
        *per_dataset_lines(df),
        "",
        "![k-hat against the marginal KL at each engine's own optimum]"
        "(../trust_optima/khat_vs_kl_optima.png)",
    ]
    return lines


def khat_axes(ax, pareto_k: pd.Series, title: str) -> None:
    """The k-hat-against-marginal-KL axes of this study's figures (and studies/trust.py's):
    log x, the package's k-hat axis (:func:`~gpc_compare.report.trust_figure.symlog_khat_axis`),
    and the title counting the infinite k-hat the figure cannot show."""
    symlog_khat_axis(ax, pareto_k.to_numpy(dtype=float))
    ax.set_xscale("log")
    infinite = int((~np.isfinite(pareto_k)).sum())
    if infinite:
        title += f"\n({infinite} infinite k-hat not shown)"
    ax.set_title(title, fontsize=10)


def plot(df: pd.DataFrame, at_ep: pd.DataFrame, path: Path) -> None:
    """k-hat against the marginal KL from MCMC at each engine's own optimum (filled), and
    Laplace's and KL's at EP's on the same splits (open)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    colours = dict(zip(ENGINES, ("tab:orange", "tab:blue", "tab:green"), strict=True))
    keys = ["dataset", "split"]
    for engine, colour in colours.items():
        e = df[(df.engine == engine) & np.isfinite(df.pareto_k)]
        ax.scatter(e.marginal_kl, e.pareto_k, s=20, color=colour, label=f"{engine}, own optimum")
        if engine != "ep":
            o = at_ep[at_ep.engine == engine].merge(df[df.engine == engine][keys], on=keys)
            o = o[np.isfinite(o.pareto_k)]
            ax.scatter(
                o.marginal_kl,
                o.pareto_k,
                s=20,
                facecolors="none",
                edgecolors=colour,
                label=f"{engine}, EP's optimum",
            )
    khat_axes(ax, df.pareto_k, "The Pareto-k check at each engine's own optimum")
    ax.set_xlabel("mean marginal KL(MCMC || approximation) at the same hyperparameters")
    ax.legend(frameon=False, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def run(output: Path = ROOT / "results" / "trust_optima") -> pd.DataFrame:
    """Write optima.csv, its figure and a README pointing to results/trust's section."""
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    df = table()
    df.to_csv(output / "optima.csv", index=False)
    at_ep = pd.read_csv(TRUST)
    plot(complete(df), at_ep, output / "khat_vs_kl_optima.png")
    text = [
        "# The Pareto-k check at each engine's own optimum",
        "",
        "`optima.csv` and `khat_vs_kl_optima.png`, written by `studies/trust_optima.py` (its",
        "docstring has the set-up) from the records of results/trust_at_laplace,",
        "results/trust_at_kl and results/trust/trust.csv. The findings, computed from",
        '`optima.csv`: [results/trust/README.md](../trust/README.md), section "At each',
        "engine's own optimum\".",
        "",
        versions_text(),
        "",
    ]
    (output / "README.md").write_text("\n".join(text))
    return df
