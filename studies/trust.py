"""Can the Pareto-k check stand in for the MCMC reference? Validated where the reference ran.

For every fold of the first repeat of the committed held-out comparison
(results/approximations: six benchmarks, 5 folds, probit, squared-exponential kernel; its
repeat 0, whatever its ``n_repeats``, so trust.csv stays 90 rows), each Gaussian approximation
(Laplace, EP, KL) is fitted at the hyperparameters the MCMC reference sampled at (EP's
selection) and checked by :func:`gpc_compare.psis` (4000 draws from q, weights
p(y | f) p(f) / q(f), Pareto-smoothed; Vehtari, Simpson, Gelman, Yao and Gabry 2024). Beside
each check, from the committed records of the same split: the approximation's marginal KL
from MCMC's latent marginals, its evidence and the reference's SMC evidence (with its
standard error), MCMC's held-out mean log predictive (and its Monte Carlo standard error,
where the record has one) and the time MCMC took. The questions (issue of the trust check):

- does k-hat rank the approximations as their measured distance from MCMC does (Spearman's
  rank correlation of k-hat and the mean marginal KL over all engine x split cases)?
- where k-hat is below the threshold, is the importance-sampled evidence within 3
  standard errors (its own and SMC's, combined) of the SMC estimate, and the
  importance-corrected held-out score within the Monte Carlo error of the two (MCMC's and
  the importance estimate's own, combined)?
- what does a check cost against the MCMC fit it replaces?

And on the probit grid of results/approximations_grid (Kuss and Rasmussen 2005, Fig. 4:
six benchmarks, a 7 x 7 grid of hyperparameters, SMC's evidence at every point): every
Laplace, EP and KL job run again by the study's own worker with the check on. Does Laplace's
k-hat exceed 0.7 where its evidence is more than a few (``GAP_NATS``) nats below SMC's, and
is the importance-sampled evidence within 3 standard errors of SMC's where k-hat <= 0.7?

Writes ``results/trust/``: ``trust.csv`` (one row per data set, split and engine),
``grid.csv`` (one row per data set, grid point and engine), ``khat_vs_kl.png``,
``khat_vs_gap_grid.png`` and ``README.md`` (its numbers computed from the CSVs by
:func:`findings` and :func:`grid_findings`; its section "At each engine's own optimum", where
Laplace and KL are checked at their own hyperparameters beside MCMC run again there, by
``studies/trust_optima.py`` from results/trust_optima/optima.csv, which it writes first).
Resumes: rows already in a CSV are kept. Run
from the repository root: ``gpc-compare run studies/trust.py`` (its time: the studies'
index in results/README.md, computed from the seconds trust.csv and grid.csv record).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

import gpc_compare as gc
from gpc_compare.provenance import versions_text
from gpc_compare.study import expand, load_study, load_study_script, read_records
from gpc_compare.study.problem import load_dataset, make_kernel, split_indices, stable_seed

ROOT = Path(__file__).resolve().parents[1]
#: Each engine at its own optimum (the README's section of that name).
OPTIMA = load_study_script(Path(__file__).with_name("trust_optima.py"))
SOURCE = ROOT / "results" / "approximations"
#: The probit grid of Kuss and Rasmussen (2005, Fig. 4): its study file and its results.
GRID_STUDY = ROOT / "studies" / "approximations_grid.toml"
GRID_SOURCE = ROOT / "results" / "approximations_grid" / "probit"
#: An approximation's evidence more than this below SMC's is "a few nats" low.
GAP_NATS = 3.0
#: Each approximation, and the engine label whose records hold its comparison with MCMC
#: at the reference's hyperparameters.
ENGINES = {"laplace": "laplace_at_ep", "ep": "ep", "kl": "kl_at_ep"}
DRAWS = 4000
#: A mean marginal KL from MCMC below this counts as close (nats per case).
CLOSE_KL = 0.01


def _split_data(job):
    """The job's training and test folds, standardised on the training fold (as its
    worker made them)."""
    data = load_dataset(job.dataset, job.study_seed)
    seed = stable_seed("split", job.study_seed, job.dataset.seed_key)
    train, test = split_indices(data, job.splits, job.split, seed)
    X, Xs = gc.datasets.standardize(data.X[train], data.X[test])
    return X, data.y[train], Xs, data.y[test]


def _rows(done: set[tuple[str, int, str]]):
    """The checks not in ``done`` (yielded one at a time), from the committed records of
    results/approximations."""
    config = load_study(SOURCE / "study.toml")
    records, _ = read_records(SOURCE)
    by = {(r.dataset, r.split, r.engine): r for r in records.values() if r.ok}
    table = pd.read_csv(SOURCE / "results.csv")
    kl = table[table.metric == "marginal_kl_mean"].set_index(["dataset", "split", "engine"])
    kl = kl["value"].to_dict()
    folds = config.splits["n_splits"]  # repeat 0 only: splits 0 .. k - 1
    for job in (j for j in expand(config) if j.engine == "mcmc" and j.split < folds):
        ref = by.get((job.dataset.label, job.split, "mcmc"))
        if ref is None:
            continue
        X, y, Xs, ys = _split_data(job)
        theta = np.asarray(ref.hyperparameters.values, dtype=float)
        kernel = make_kernel(job.kernel, X.shape[1]).with_theta(theta)
        for method, label in ENGINES.items():
            if (job.dataset.label, job.split, method) in done:
                continue
            row = _check((X, y, Xs, ys), kernel, method, ref)
            row["marginal_kl"] = kl.get((job.dataset.label, job.split, label), np.nan)
            yield row


def _check(folds, kernel, method: str, ref) -> dict:
    """One approximation's Pareto-k check, beside its committed comparison with MCMC: the
    held-out mean log predictive, the approximation's own and corrected by the weights,
    beside MCMC's (and its Monte Carlo standard error where its record has one)."""
    X, y, Xs, ys = folds
    post = gc.fit(X, y, method=method, kernel=kernel)
    t0 = time.perf_counter()
    d = gc.psis(post, draws=DRAWS, random_seed=ref.split)
    seconds = time.perf_counter() - t0
    score, se = d.mean_log_predictive(Xs, ys)
    return {
        "dataset": ref.dataset,
        "split": ref.split,
        "engine": method,
        "n": int(y.size),
        "pareto_k": d.pareto_k,
        "khat_threshold": d.khat_threshold,
        "ess": d.ess,
        "is_log_evidence": d.log_evidence,
        "is_log_evidence_se": d.log_evidence_se,
        "log_evidence": post.log_marginal_likelihood,
        "smc_log_evidence": ref.log_evidence,
        "smc_log_evidence_se": ref.log_evidence_se,
        "psis_seconds": seconds,
        "mcmc_seconds": ref.timings.fit_seconds,
        "mean_log_predictive": float(np.mean(post.log_predictive(Xs, ys))),
        "is_mean_log_predictive": score,
        "is_mean_log_predictive_se": se,
        "mcmc_mean_log_predictive": ref.metrics["mean_log_predictive"],
        "mcmc_mean_log_predictive_mcse": ref.mcse.get("mean_log_predictive", np.nan),
    }


def _grid_rows(done: set[tuple[str, int, str]]):
    """The grid's checks not in ``done``: each Laplace, EP and KL job of the probit grid
    (studies/approximations_grid.toml) run again by the study's own worker, with its seed
    and ``psis`` on, beside the committed SMC estimate at the same point."""
    from gpc_compare.study.worker import run_job

    grid = pd.read_csv(GRID_SOURCE / "grid.csv")
    smc = grid[grid.method == "smc"].set_index(["dataset", "log_lengthscale", "log_sf"])
    own = grid.set_index(["dataset", "log_lengthscale", "log_sf", "method"])["log_evidence"]
    for job in expand(load_study(GRID_STUDY)):
        if job.engine not in ENGINES or (job.dataset.label, job.point, job.engine) in done:
            continue
        t0 = time.perf_counter()
        rec = run_job(dataclasses.replace(job, psis={"draws": DRAWS, "proposal": "gaussian"}))
        seconds = time.perf_counter() - t0
        point = (
            job.dataset.label,
            job.hyperparameters["log_lengthscale"],
            job.hyperparameters["log_variance"] / 2.0,
        )
        ref = smc.loc[point]
        psis = rec.psis or {}  # (none where the weights were not finite: see warnings)
        yield {
            "dataset": job.dataset.label,
            "point": job.point,
            "log_lengthscale": point[1],
            "log_sf": point[2],
            "engine": job.engine,
            "n": rec.n_train,
            **OPTIMA.psis_columns(psis),
            "log_evidence": rec.log_evidence,
            "committed_log_evidence": own.loc[(*point, job.engine)],
            "smc_log_evidence": ref["log_evidence"],
            "smc_log_evidence_se": ref["se"],
            "smc_seconds": ref["seconds"],
            "psis_seconds": psis.get("seconds", np.nan),
            "job_seconds": seconds,
            "warnings": "; ".join(rec.warnings),
        }


def findings(df: pd.DataFrame) -> list[str]:
    """The README's findings, every number from ``df`` (trust.csv)."""
    ok = df.dropna(subset=["marginal_kl"])
    rho, p = stats.spearmanr(ok.pareto_k, ok.marginal_kl)
    close = ok[ok.marginal_kl < CLOSE_KL]
    flagged = close[close.pareto_k >= close.khat_threshold]
    lines = [
        f"- **k-hat and the measured distance from MCMC agree in rank**: over the {len(ok)} "
        f"engine x split cases, Spearman's rank correlation of k-hat and the mean marginal "
        f"KL from MCMC is {rho:.2f} (p = {p:.1g}).",
        f"- **The check is stricter than the marginals**: of the {len(close)} cases whose "
        f"mean marginal KL from MCMC was below {CLOSE_KL}, {len(flagged)} had k-hat above the "
        f"threshold ({', '.join(sorted(set(flagged.dataset)))}). k-hat judges q over all n "
        "latent values at once, and small errors in each direction add up over n; the "
        "held-out predictions use one marginal at a time. A high k-hat says the joint "
        "approximation (its evidence, its importance-corrected numbers) is not to be "
        "trusted, not that its predictions are poor.",
    ]
    for engine in ENGINES:
        e = df[df.engine == engine]
        below = int((e.pareto_k < e.khat_threshold).sum())
        lines.append(
            f"- **{engine}**: k-hat below the threshold on {below} of {len(e)} splits "
            f"(median {e.pareto_k.median():.2f}, largest {e.pareto_k.max():.2f}); mean "
            f"marginal KL from MCMC {e.marginal_kl.mean():.4f}."
        )
    reliable = df[df.pareto_k < df.khat_threshold]
    z = (reliable.is_log_evidence - reliable.smc_log_evidence) / np.hypot(
        reliable.is_log_evidence_se, reliable.smc_log_evidence_se
    )
    lines.append(
        f"- **Where k-hat is below the threshold the importance-sampled evidence agrees with "
        f"SMC's**: within 3 combined standard errors on {int((z.abs() <= 3).sum())} of "
        f"{len(z)} cases (largest |z| {z.abs().max():.1f})."
    )
    if "is_mean_log_predictive" in df:
        lines += heldout_findings(df)
    lines += OPTIMA.evidence_where_unreliable(df)
    ratio = df.psis_seconds / df.mcmc_seconds
    lines.append(
        f"- **Cost**: a check took {df.psis_seconds.median():.2f} s at the median (largest "
        f"{df.psis_seconds.max():.2f} s), {100 * ratio.median():.1f}% of the MCMC fit it "
        f"stands in for (largest {100 * ratio.max():.1f}%); the checks were timed when "
        "trust.csv was last written, on a machine shared with other work, MCMC when "
        "results/approximations ran, so the ratio overstates the check's cost."
    )
    return lines


def heldout_findings(df: pd.DataFrame) -> list[str]:
    """The importance-corrected held-out mean log predictive against MCMC's (per split,
    nats per test case), where k-hat is below the threshold."""
    reliable = df.pareto_k < df.khat_threshold
    ok = df[reliable & df.is_mean_log_predictive.notna()]
    corrected = (ok.is_mean_log_predictive - ok.mcmc_mean_log_predictive).abs()
    own = (ok.mean_log_predictive - ok.mcmc_mean_log_predictive).abs()
    scored = "" if len(ok) == reliable.sum() else f" of the {int(reliable.sum())}"
    lines = [
        f"- **Where k-hat is below the threshold the corrected held-out score is close to "
        f"MCMC's**: "
        f"over {len(ok)}{scored} cases the importance-corrected mean log predictive differs "
        f"from MCMC's by {corrected.median():.4f} at the median (largest "
        f"{corrected.max():.4f}; the approximation's own: {own.median():.4f}, largest "
        f"{own.max():.4f})."
    ]
    lap = df[(df.engine == "laplace") & df.is_mean_log_predictive.notna()]
    lap_c = (lap.is_mean_log_predictive - lap.mcmc_mean_log_predictive).abs()
    lap_o = (lap.mean_log_predictive - lap.mcmc_mean_log_predictive).abs()
    lines.append(
        f"  Laplace's correction helps even where its k-hat is above the threshold: over its "
        f"{len(lap)} splits |score - MCMC's| goes from {lap_o.median():.4f} to "
        f"{lap_c.median():.4f} at the median (closer on {int((lap_c < lap_o).sum())})."
    )
    return [*lines, *OPTIMA.within_combined(ok)]


def plot(df: pd.DataFrame, path: Path) -> None:
    """k-hat against the measured marginal KL from MCMC, one colour per engine."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 4.2))
    for engine, colour in zip(ENGINES, ("tab:orange", "tab:blue", "tab:green"), strict=True):
        e = df[(df.engine == engine) & np.isfinite(df.pareto_k)]
        ax.scatter(e.marginal_kl, e.pareto_k, s=18, color=colour, label=engine, alpha=0.8)
    OPTIMA.khat_axes(ax, df.pareto_k, "The Pareto-k check against the measured distance from MCMC")
    ax.set_xlabel("mean marginal KL(MCMC || approximation) on the split")
    ax.legend(frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _z(df: pd.DataFrame) -> pd.Series:
    """(IS evidence - SMC's) in combined standard errors."""
    se = np.hypot(df.is_log_evidence_se, df.smc_log_evidence_se)
    return (df.is_log_evidence - df.smc_log_evidence) / se


def grid_tables(grid: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per engine, the grid points counted by "evidence more than GAP_NATS below SMC's"
    (rows) and "k-hat above 0.7" (columns): the contingency tables of the README."""
    low = grid.smc_log_evidence - grid.log_evidence > GAP_NATS
    high = ~(grid.pareto_k <= 0.7)  # (NaN, where no check ran, counts as not reliable)
    out = {}
    for engine in ENGINES:
        e = grid.engine == engine
        t = pd.crosstab(low[e], high[e]).reindex(index=[True, False], columns=[True, False])
        out[engine] = t.fillna(0).astype(int)
    return out


def grid_findings(grid: pd.DataFrame) -> list[str]:
    """The README's findings on the probit grid, every number from ``grid`` (grid.csv)."""
    points = grid.groupby("engine").size()
    drift = (grid.log_evidence - grid.committed_log_evidence).abs().max()
    t = grid_tables(grid)["laplace"]
    low, flagged = int(t.loc[True].sum()), int(t.loc[True, True])
    high = int(t[True].sum())
    lap = grid[grid.engine == "laplace"]
    gap = lap.smc_log_evidence - lap.log_evidence
    near = gap[(gap <= GAP_NATS) & ~(lap.pareto_k <= 0.7)]
    lines = [
        f"- **The grid's jobs, run again with the check**: {len(grid)} checks (Laplace, EP "
        f"and KL at each of the {points.max()} data set x grid points); each engine's own "
        f"evidence reproduced the committed one to {drift:.1g} nats. At "
        f"{int(grid.pareto_k.isna().sum())} checks k-hat is infinite (one draw carries all "
        "the weight, the others thousands of nats below it: ArviZ's psislw returns inf, "
        "which a job record stores as NaN); they count as above 0.7, gc.psis's verdict.",
        f"- **Laplace's k-hat exceeds 0.7 at {flagged} of the {low} points where its evidence "
        f"is more than {GAP_NATS:g} nats below SMC's.** The converse does not hold: "
        f"{high - flagged} of its {high} points above 0.7 are within {GAP_NATS:g} nats "
        f"(there {near.median():.2f} nats below SMC's at the median, at most {near.max():.2f}): "
        "k-hat judges q as a proposal for the posterior over all n latent values, a stricter "
        "test than Laplace's evidence being within a few nats."
        + (
            f" At the {low - flagged} points below 0.7 and more than {GAP_NATS:g} nats low, q is "
            "a usable proposal although Laplace's evidence is not: the importance-sampled "
            "evidence recovers SMC's there (next finding)."
            if low > flagged
            else ""
        ),
    ]
    ok = grid[grid.pareto_k <= 0.7]
    z = _z(ok).abs()
    per = ", ".join(
        f"{e} {int((z[ok.engine == e] <= 3).sum())} of {int((ok.engine == e).sum())}"
        for e in ENGINES
    )
    worst = ok.loc[z.idxmax()]
    lines.append(
        f"- **Where k-hat <= 0.7 the importance-sampled evidence is within 3 combined standard "
        f"errors of SMC's at {int((z <= 3).sum())} of {len(z)} points** ({per}; largest |z| "
        f"{z.max():.1f}, {worst.engine} on {worst.dataset} at (log ell, log sigma_f) = "
        f"({worst.log_lengthscale:.2f}, {worst.log_sf:.2f}), "
        f"{abs(worst.is_log_evidence - worst.smc_log_evidence):.2f} nats)."
    )
    bad = grid[~(grid.pareto_k <= 0.7)]
    err = (bad.is_log_evidence - bad.smc_log_evidence).abs()
    lines.append(
        f"- Where k-hat > 0.7 ({len(bad)} points) it is not: |IS - SMC| is "
        f"{err.median():.2f} nats at the median (largest {err.max():.1f}), and within 3 "
        f"standard errors at {int((_z(bad).abs() <= 3).sum())}."
    )
    gap = (grid.smc_log_evidence - grid.log_evidence).abs()
    finite = np.isfinite(grid.pareto_k)
    rho, p = stats.spearmanr(grid.pareto_k[finite], gap[finite])
    lines.append(
        f"- **k-hat and each engine's own evidence error agree in rank**: Spearman's "
        f"correlation of k-hat and |evidence - SMC's| over the {int(finite.sum())} checks with "
        f"a finite k-hat is {rho:.2f} (p = {p:.1g}); medians of k-hat "
        + ", ".join(f"{e} {grid.pareto_k[grid.engine == e].median():.2f}" for e in ENGINES)
        + "."
    )
    return lines + _grid_ep_and_cost(grid)


def _grid_ep_and_cost(grid: pd.DataFrame) -> list[str]:
    """The grid findings on EP's k-hat and on the check's cost."""
    lines = []
    ep = grid[grid.engine == "ep"]
    ep_gap = ep.smc_log_evidence - ep.log_evidence
    ep_high = ~(ep.pareto_k <= 0.7)
    lo, hi = ep.log_sf == ep.log_sf.min(), ep.log_sf == ep.log_sf.max()
    lines.append(
        f"- **EP's k-hat is above 0.7 at {int(ep_high.sum())} of its {len(ep)} points, where "
        f"its evidence is at most {ep_gap[ep_high].max():.2f} nats below SMC's**, the more "
        f"often the larger sigma_f ({int(ep_high[lo].sum())} of {int(lo.sum())} points at log "
        f"sigma_f = {ep.log_sf.min():g}, {int(ep_high[hi].sum())} of {int(hi.sum())} at "
        f"{ep.log_sf.max():g}), where q's joint crosses the probit's wall that its marginals "
        "respect ([sonar/README.md](sonar/README.md)). The check then says that q cannot "
        "stand in for the posterior in importance sampling, not that EP's evidence is poor."
    )
    ratio = grid.psis_seconds / grid.smc_seconds
    lines.append(
        f"- **Cost** (n = {int(grid.n.max())}, {DRAWS} draws): a check took "
        f"{grid.psis_seconds.median():.2f} s at the median (largest "
        f"{grid.psis_seconds.max():.2f} s), {100 * ratio.median():.0f}% of SMC's time at the "
        "same point at the median; the checks were timed on a machine shared with other "
        "work, SMC when the grid ran, so the ratio overstates "
        "the check's cost."
    )
    return lines


def grid_table_lines(grid: pd.DataFrame) -> list[str]:
    """The contingency tables as one markdown table, a row per engine."""
    lines = [
        f"| engine | evidence > {GAP_NATS:g} nats below SMC's, k-hat > 0.7 | same, k-hat <= 0.7 "
        f"| within {GAP_NATS:g} nats, k-hat > 0.7 | same, k-hat <= 0.7 |",
        "|---|---|---|---|---|",
    ]
    for engine, t in grid_tables(grid).items():
        cells = [t.loc[True, True], t.loc[True, False], t.loc[False, True], t.loc[False, False]]
        lines.append(f"| {engine} | " + " | ".join(str(int(c)) for c in cells) + " |")
    return lines


def plot_grid(grid: pd.DataFrame, path: Path) -> None:
    """k-hat against each engine's evidence gap to SMC (left) and the importance-sampled
    evidence's error in standard errors against k-hat (right), over the probit grid."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11.0, 4.4))
    colours = dict(zip(ENGINES, ("tab:blue", "tab:orange", "tab:red"), strict=True))
    for engine, colour in colours.items():
        e = grid[(grid.engine == engine) & np.isfinite(grid.pareto_k)]
        kw = {"s": 14, "color": colour, "alpha": 0.7, "label": engine, "zorder": 2}
        axes[0].scatter(e.smc_log_evidence - e.log_evidence, e.pareto_k, **kw)
        axes[1].scatter(e.pareto_k, _z(e), **kw)
    khat_ticks = [0.0, 0.5, 0.7, 1.0, 10.0, 100.0]
    ax = axes[0]
    ax.axhline(0.7, color="grey", lw=0.8, ls="--")
    ax.axvline(GAP_NATS, color="grey", lw=0.8, ls=":")
    ax.set_xscale("symlog", linthresh=0.1)
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_yticks(khat_ticks, [f"{t:g}" for t in khat_ticks])
    ax.set_ylim(bottom=-0.05)
    ax.set_xlim(left=min(-0.05, float((grid.smc_log_evidence - grid.log_evidence).min())))
    ax.set_xlabel("SMC's log evidence - the engine's own (nats; symlog)")
    ax.set_ylabel("Pareto k-hat (symlog)")
    ax.set_title(f"k-hat against the evidence gap (dashed: 0.7, dotted: {GAP_NATS:g} nats)")
    ax = axes[1]
    ax.axvline(0.7, color="grey", lw=0.8, ls="--")
    ax.axhspan(-3, 3, color="0.9", zorder=0)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xticks(khat_ticks, [f"{t:g}" for t in khat_ticks])
    ax.set_xlim(left=-0.05)
    ax.set_yscale("symlog", linthresh=3.0)
    z_ticks = [-1000.0, -100.0, -10.0, -3.0, 0.0, 3.0, 10.0]
    ax.set_yticks(z_ticks, [f"{t:g}" for t in z_ticks])
    ax.set_xlabel("Pareto k-hat (symlog)")
    ax.set_ylabel("(IS evidence - SMC's) / combined se (symlog)")
    ax.set_title("The importance-sampled evidence against SMC's (band: 3 se)")
    for ax in axes:
        ax.title.set_fontsize(9)
        ax.legend(frameon=False, fontsize=8)
    hidden = int((~np.isfinite(grid.pareto_k)).sum())
    title = "The probit grid of results/approximations_grid"
    if hidden:
        title += f" ({hidden} infinite k-hat, NaN in the table, not shown)"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _optima_section(optima: pd.DataFrame | None, df: pd.DataFrame) -> list[str]:
    """The section "At each engine's own optimum" and a blank line, if any split has all
    three engines checked at their own optima."""
    if optima is None or OPTIMA.complete(optima).empty:
        return []
    return [*OPTIMA.section(optima, df), ""]


def write_readme(
    output: Path, df: pd.DataFrame, grid: pd.DataFrame, optima: pd.DataFrame | None = None
) -> None:
    text = [
        "# Can the Pareto-k check stand in for the MCMC reference?",
        "",
        "Generated by `studies/trust.py` from `trust.csv` (see its docstring for the set-up):",
        "every fold of repeat 0 of results/approximations (its first 5-fold partition),",
        "each Gaussian approximation at the",
        f"hyperparameters MCMC sampled at, checked by `gc.psis` with {DRAWS} draws.",
        "",
        "## Findings",
        "",
        *findings(df),
        "",
        "![k-hat against the marginal KL from MCMC](khat_vs_kl.png)",
        "",
        "## Per data set and engine (median k-hat, splits below the threshold)",
        "",
        *OPTIMA.per_dataset_lines(df, optima=False),
        "",
        "Why EP's k-hat is so large on sonar, where its marginals are close to MCMC's:",
        "[sonar/README.md](sonar/README.md) (`studies/trust_sonar.py`).",
        "",
        *_optima_section(optima, df),
        "## On the probit grid of results/approximations_grid",
        "",
        "`grid.csv`: every Laplace, EP and KL job of `studies/approximations_grid.toml` (the",
        f"{grid.dataset.nunique()} benchmarks' subsamples of at most {grid.n.max()} cases, all "
        f"training; a {grid.log_lengthscale.nunique()} x {grid.log_sf.nunique()} grid of log",
        f"length-scale in [{grid.log_lengthscale.min():g}, {grid.log_lengthscale.max():g}] and "
        f"log sigma_f in [{grid.log_sf.min():g}, {grid.log_sf.max():g}]; Kuss and Rasmussen "
        "2005, Fig. 4) run again by the study's worker with its own seed and the check on",
        f"(`psis = {{draws = {DRAWS}}}`), beside the committed SMC estimate at the same point",
        f"(the grid's gold standard, se <= {grid.smc_log_evidence_se.max():.2f} everywhere). "
        "There is no MCMC on the grid: the",
        "measured distance is each engine's evidence error against SMC's.",
        "",
        *grid_findings(grid),
        "",
        f"Points by Laplace's, EP's and KL's own evidence error and k-hat (a point counts as "
        f"\"below\" when the engine's evidence is more than {GAP_NATS:g} nats below SMC's):",
        "",
        *grid_table_lines(grid),
        "",
        "![k-hat against the evidence gap on the grid](khat_vs_gap_grid.png)",
        "",
        versions_text(),
        "",
    ]
    (output / "README.md").write_text("\n".join(text))


def _extend(path: Path, keys: list[str], rows) -> pd.DataFrame:
    """The table at ``path`` with the rows ``rows(done)`` yields appended, written after
    each (a killed run keeps what it finished); ``done`` holds the ``keys`` of those in it."""
    done = pd.read_csv(path) if path.exists() else pd.DataFrame()
    have = set() if done.empty else set(zip(*(done[k] for k in keys), strict=True))
    for row in rows(have):
        done = pd.concat([done, pd.DataFrame([row])], ignore_index=True)
        done.to_csv(path, index=False)
    return done


def run(output: Path = ROOT / "results" / "trust") -> None:
    """Compute the missing rows of both tables, then the figures and the README."""
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    done = _extend(output / "trust.csv", ["dataset", "split", "engine"], _rows)
    grid = _extend(output / "grid.csv", ["dataset", "point", "engine"], _grid_rows)
    plot(done, output / "khat_vs_kl.png")
    plot_grid(grid, output / "khat_vs_gap_grid.png")
    write_readme(output, done, grid, OPTIMA.run())


if __name__ == "__main__":
    run()
