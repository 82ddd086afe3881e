"""Can the Pareto-k check stand in for the MCMC reference? Validated where the reference ran.

For every fold of the first repeat of the committed held-out comparison
(results/approximations: six benchmarks, 5 folds, probit, squared-exponential kernel; its
repeat 0, whatever its ``n_repeats``, so trust.csv stays 90 rows), each Gaussian approximation
(Laplace, EP, KL) is fitted at the hyperparameters the MCMC reference sampled at (EP's
selection) and checked by :func:`gpc_compare.psis` (4000 draws from q, weights
p(y | f) p(f) / q(f), Pareto-smoothed; Vehtari, Simpson, Gelman, Yao and Gabry 2024). Beside
each check, from the committed records of the same split: the approximation's marginal KL
from MCMC's latent marginals, its evidence and the reference's SMC evidence (with its
standard error), and the time MCMC took. The questions (issue of the trust check):

- does k-hat rank the approximations as their measured distance from MCMC does (Spearman's
  rank correlation of k-hat and the mean marginal KL over all engine x split cases)?
- where k-hat is below the threshold, is the importance-sampled evidence within 3
  standard errors (its own and SMC's, combined) of the SMC estimate?
- what does a check cost against the MCMC fit it replaces?

Writes ``results/trust/``: ``trust.csv`` (one row per data set, split and engine),
``khat_vs_kl.png`` and ``README.md`` (its numbers computed from the CSV by
:func:`findings`). Resumes: rows already in the CSV are kept. Run from the repository root:
``gpc-compare run studies/trust.py`` (about 10 minutes on 2 cores).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

import gpc_compare as gc
from gpc_compare.provenance import versions_text
from gpc_compare.study import expand, load_study, read_records
from gpc_compare.study.problem import load_dataset, make_kernel, split_indices, stable_seed

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "results" / "approximations"
#: Each approximation, and the engine label whose records hold its comparison with MCMC
#: at the reference's hyperparameters.
ENGINES = {"laplace": "laplace_at_ep", "ep": "ep", "kl": "kl_at_ep"}
DRAWS = 4000
#: A mean marginal KL from MCMC below this counts as close (nats per case).
CLOSE_KL = 0.01


def _split_data(job):
    """The job's standardised training fold (as its worker made it)."""
    data = load_dataset(job.dataset, job.study_seed)
    seed = stable_seed("split", job.study_seed, job.dataset.seed_key)
    train, test = split_indices(data, job.splits, job.split, seed)
    X = gc.datasets.standardize(data.X[train], data.X[test])[0]
    return X, data.y[train]


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
        X, y = _split_data(job)
        theta = np.asarray(ref.hyperparameters.values, dtype=float)
        kernel = make_kernel(job.kernel, X.shape[1]).with_theta(theta)
        for method, label in ENGINES.items():
            if (job.dataset.label, job.split, method) in done:
                continue
            row = _check(X, y, kernel, method, ref)
            row["marginal_kl"] = kl.get((job.dataset.label, job.split, label), np.nan)
            yield row


def _check(X, y, kernel, method: str, ref) -> dict:
    """One approximation's Pareto-k check, beside its committed comparison with MCMC."""
    post = gc.fit(X, y, method=method, kernel=kernel)
    t0 = time.perf_counter()
    d = gc.psis(post, draws=DRAWS, random_seed=ref.split)
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
        "psis_seconds": time.perf_counter() - t0,
        "mcmc_seconds": ref.timings.fit_seconds,
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
    unreliable = df[df.pareto_k >= df.khat_threshold]
    if len(unreliable):
        gap = unreliable.log_evidence - unreliable.smc_log_evidence
        lines.append(
            f"- Where it is not ({len(unreliable)} cases), the approximation's own evidence is "
            f"{(-gap).median():.2f} nats below SMC's at the median (largest {(-gap).max():.2f})."
        )
    ratio = df.psis_seconds / df.mcmc_seconds
    lines.append(
        f"- **Cost**: a check took {df.psis_seconds.median():.2f} s at the median (largest "
        f"{df.psis_seconds.max():.2f} s), {100 * ratio.median():.1f}% of the MCMC fit it "
        f"stands in for (largest {100 * ratio.max():.1f}%)."
    )
    return lines


def plot(df: pd.DataFrame, path: Path) -> None:
    """k-hat against the measured marginal KL from MCMC, one colour per engine."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 4.2))
    for engine, colour in zip(ENGINES, ("tab:orange", "tab:blue", "tab:green"), strict=True):
        e = df[(df.engine == engine) & np.isfinite(df.pareto_k)]
        ax.scatter(e.marginal_kl, e.pareto_k, s=18, color=colour, label=engine, alpha=0.8)
    ax.axhline(0.7, color="grey", lw=0.8, ls="--")
    ax.text(ax.get_xlim()[0], 0.72, " k-hat = 0.7", color="grey", fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=1.0)  # (k-hat runs from about 0 to the hundreds)
    ax.set_ylim(bottom=0.0)
    ax.set_xlabel("mean marginal KL(MCMC || approximation) on the split")
    ax.set_ylabel("Pareto k-hat of the approximation")
    infinite = int((~np.isfinite(df.pareto_k)).sum())
    title = "The Pareto-k check against the measured distance from MCMC"
    if infinite:
        title += f"\n({infinite} infinite k-hat not shown)"
    ax.set_title(title, fontsize=10)
    ax.legend(frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def write_readme(output: Path, df: pd.DataFrame) -> None:
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
        "| data set | engine | median k-hat | below threshold | mean marginal KL |",
        "|---|---|---|---|---|",
    ]
    for (dataset, engine), g in df.groupby(["dataset", "engine"], sort=False):
        below = int((g.pareto_k < g.khat_threshold).sum())
        text.append(
            f"| {dataset} | {engine} | {g.pareto_k.median():.2f} | {below} of {len(g)} | "
            f"{g.marginal_kl.mean():.4f} |"
        )
    text += ["", versions_text(), ""]
    (output / "README.md").write_text("\n".join(text))


def run(output: Path = ROOT / "results" / "trust") -> None:
    """Compute the missing rows, then the figure and the README."""
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    path = output / "trust.csv"
    done = pd.read_csv(path) if path.exists() else pd.DataFrame()
    keys = set() if done.empty else set(zip(done.dataset, done.split, done.engine, strict=True))
    for row in _rows(keys):  # (one row at a time: a killed run keeps what it finished)
        done = pd.concat([done, pd.DataFrame([row])], ignore_index=True)
        done.to_csv(path, index=False)
    plot(done, output / "khat_vs_kl.png")
    write_readme(output, done)


if __name__ == "__main__":
    run()
