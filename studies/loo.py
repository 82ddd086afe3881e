"""How close are the cavity and PSIS leave-one-out forms to exact leave-one-out (issue 29)?

On the held-out comparison's folds (results/approximations: six benchmarks, 5-fold
cross-validation, probit, squared-exponential kernel; the same problems and splits, checked
by refitting EP and recomputing its committed held-out score), at EP's selected
hyperparameters: EP and Laplace (at EP's values, and Laplace at its own selection), each
with elpd_loo = sum_i log p(y_i | x_i, D_-i) computed three ways by :func:`gpc_compare.loo`:

- ``cavity``: the site-removed marginals of the approximation (Opper and Winther 2000;
  Vehtari, Mononen, Tolvanen, Sivula and Winther 2016, JMLR 17(103), section 3);
- ``psis``: Pareto-smoothed importance sampling from 4000 draws of q (Vehtari, Gelman and
  Gabry 2017);
- ``exact``: the same engine refitted without case i at the same hyperparameters
  (:func:`gpc_compare.loo_refits`, warm-started from the full fit with site i dropped;
  EP's refits by the "auto" schedule, whose fixed point is that of the parallel one the
  studies ran, reached in fewer sweeps). On training sets above ``FULL_N`` cases the exact
  values are computed on a random subsample of ``SUBSAMPLE`` cases per fold, and the error
  of the sum is the difference estimator's (Magnusson, Andersen, Jonasson and Vehtari
  2019, ICML): n times the mean error on the subsample, with its standard error.

Second part (results/ep_loo's accuracy): at the hyperparameters each of results/ep_loo's
selections reached (evidence; LOO with the total gradient; LOO with the fixed-site
gradient), EP's cavity LOO (the objective that study maximised) beside exact EP LOO, on the
folds listed in ``EP_LOO_FOLDS``.

Writes ``results/loo/``: ``pointwise.csv`` (data set, fold, engine, method, case, value,
Pareto k), ``folds.csv`` (one row per data set and fold: n, the held-out score),
``ep_loo.csv`` (one row per ep_loo selection rerun), ``loo_error.png`` and ``README.md``
(its numbers computed from the tables by :func:`findings`). Resumes: folds already in the
tables are kept. Run from the repository root: ``gpc-compare run studies/loo.py``, or
``python studies/loo.py [loo] [ep_loo]`` for one part (the two can run in parallel; their
committed times, from the tables' seconds columns, are in results/README.md's index; the
refits run with one BLAS thread, which at a load of ~15 on 2 cores was ten times faster
than the default threads).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

import gpc_compare as gc
from gpc_compare import loo_refits
from gpc_compare.provenance import versions_text
from gpc_compare.study import expand, load_study, read_records
from gpc_compare.study.problem import load_dataset, make_kernel, split_indices, stable_seed

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "results" / "approximations"
EP_LOO = ROOT / "results" / "ep_loo"
DATASETS = ["breast_cancer", "ionosphere", "sonar", "pima", "crabs", "digits_3v5"]
#: The folds of results/approximations computed (every one).
FOLDS = range(5)
#: Training sets up to this size get exact LOO at every case; larger ones at a subsample.
FULL_N = 300
SUBSAMPLE = 60
DRAWS = 4000
#: (engine label, method, whose hyperparameters: the approximations record's engine)
ENGINES = (
    ("ep", "ep", "ep"),
    ("laplace_at_ep", "laplace", "ep"),
    ("laplace", "laplace", "laplace"),
)
#: results/ep_loo folds rerun with exact LOO: every fold of the six sets.
EP_LOO_FOLDS = {d: range(5) for d in DATASETS}
EP_OPTIONS = {"schedule": "parallel"}  # as both studies ran EP
#: A ranking counts as reversed by exact LOO where it differs by more than this (nats).
REVERSED = 0.01
REFIT_OPTIONS = {"ep": {"schedule": "auto"}, "laplace": {}}


def problem(config_path: Path, dataset: str, split: int):
    """The training and test folds of a study's job (as its worker made them) and the job."""
    config = load_study(config_path)
    job = next(j for j in expand(config) if j.dataset.label == dataset and j.split == split)
    data = load_dataset(job.dataset, job.study_seed)
    seed = stable_seed("split", job.study_seed, job.dataset.seed_key)
    train, test = split_indices(data, job.splits, job.split, seed)
    X, X_test = gc.datasets.standardize(data.X[train], data.X[test])
    return X, data.y[train], X_test, data.y[test], job


def _records(source: Path) -> dict:
    records, _ = read_records(source)
    return {(r.dataset, r.split, r.engine): r for r in records.values() if r.ok}


def _fit(X, y, job, record, method: str):
    theta = np.asarray(record.hyperparameters.values, dtype=float)
    kernel = make_kernel(job.kernel, X.shape[1]).with_theta(theta)
    options = EP_OPTIONS if method == "ep" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return gc.fit(X, y, method=method, kernel=kernel, **options)


def _cases(n: int, dataset: str, split: int) -> np.ndarray:
    """Every case, or a seeded random subsample of SUBSAMPLE above FULL_N."""
    if n <= FULL_N:
        return np.arange(n)
    rng = np.random.default_rng(stable_seed("loo", 0, f"{dataset}/{split}"))
    return np.sort(rng.choice(n, SUBSAMPLE, replace=False))


def _fold_rows(dataset: str, split: int, records: dict) -> tuple[list[dict], dict]:
    """The pointwise rows of one fold (every engine and method) and its fold row."""
    X, y, X_test, y_test, job = problem(SOURCE / "study.toml", dataset, split)
    rows, fold = [], {"dataset": dataset, "fold": split, "n": int(y.size)}
    cases = _cases(y.size, dataset, split)
    for label, method, source in ENGINES:
        record = records[(dataset, split, source)]
        post = _fit(X, y, job, record, method)
        test = post.log_predictive(X_test, y_test)
        fold[f"test_{label}"] = float(test.mean())
        if label in ("ep", "laplace"):  # the committed record's score: same problem?
            fold[f"record_test_{label}"] = record.metrics["mean_log_predictive"]
        t0 = time.perf_counter()
        out = {
            "cavity": (np.arange(y.size), gc.loo(post).pointwise, None),
            "psis": (np.arange(y.size), *_psis(post, split)),
        }
        fold[f"seconds_cheap_{label}"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        values, converged = loo_refits(post, cases, **REFIT_OPTIONS[method])
        fold[f"seconds_exact_{label}"] = time.perf_counter() - t0
        fold[f"unconverged_{label}"] = int((~converged).sum())
        out["exact"] = (cases, values, None)
        for name, (idx, vals, k) in out.items():
            for j, (i, v) in enumerate(zip(idx, vals, strict=True)):
                rows.append(
                    {
                        "dataset": dataset,
                        "fold": split,
                        "engine": label,
                        "method": name,
                        "case": int(i),
                        "value": float(v),
                        "pareto_k": np.nan if k is None else float(k[j]),
                    }
                )
        print(dataset, split, label, f"{time.perf_counter() - t0:.1f} s", flush=True)
    return rows, fold


def _psis(post, split: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (k-hat above 0.7: recorded per case)
        r = gc.loo(post, "psis", draws=DRAWS, random_seed=split)
    return r.pointwise, r.pareto_k


def _ep_loo_rows(done: set) -> list[dict]:
    """results/ep_loo's selections rerun: the record's LOO, the cavity and exact LOO."""
    records = _records(EP_LOO)
    for dataset, folds in EP_LOO_FOLDS.items():
        for split in folds:
            X, y, _, _, job = problem(ROOT / "studies" / "ep_loo.toml", dataset, split)
            for engine in ("ep_evidence", "ep_loo_total", "ep_loo_fixed_sites"):
                if (dataset, split, engine) in done:
                    continue
                record = records[(dataset, split, engine)]
                post = _fit(X, y, job, record, "ep")
                t0 = time.perf_counter()
                exact, converged = loo_refits(post, np.arange(y.size), **REFIT_OPTIONS["ep"])
                theta = record.hyperparameters.values
                yield {
                    "dataset": dataset,
                    "fold": split,
                    "engine": engine,
                    "n": int(y.size),
                    "log_lengthscale": theta[0],
                    "log_variance": theta[1],
                    "record_loo": record.loo_log_predictive,
                    "cavity_loo": gc.loo(post).elpd,
                    "exact_loo": float(exact.sum()),
                    "max_abs_error": float(
                        np.max(np.abs(post.loo_log_predictive_pointwise - exact))
                    ),
                    "unconverged": int((~converged).sum()),
                    "seconds": time.perf_counter() - t0,
                }
                print(dataset, split, engine, flush=True)


def _append(path: Path, rows: list[dict]) -> None:
    new = pd.DataFrame(rows)
    if path.exists():
        new = pd.concat([pd.read_csv(path), new], ignore_index=True)
    new.to_csv(path, index=False, float_format="%.10g")


def compute(output: Path, parts: tuple[str, ...] = ("loo", "ep_loo")) -> None:
    """The missing folds of the parts (a killed run keeps what it finished)."""
    if "loo" in parts:
        _compute_loo(output)
    if "ep_loo" in parts:
        _compute_ep_loo(output)


def _compute_loo(output: Path) -> None:
    records = _records(SOURCE)
    folds_path = output / "folds.csv"
    done = set()
    if folds_path.exists():
        f = pd.read_csv(folds_path)
        done = set(zip(f.dataset, f.fold, strict=True))
    for split in FOLDS:
        for dataset in DATASETS:
            if (dataset, split) in done:
                continue
            rows, fold = _fold_rows(dataset, split, records)
            _append(output / "pointwise.csv", rows)
            _append(folds_path, [fold])


def _compute_ep_loo(output: Path) -> None:
    path = output / "ep_loo.csv"
    e = pd.read_csv(path) if path.exists() else pd.DataFrame()
    done = set() if e.empty else set(zip(e.dataset, e.fold, e.engine, strict=True))
    for row in _ep_loo_rows(done):
        _append(path, [row])


# ------------------------------------------------------------------------- findings
LABELS = {
    ("ep", "cavity"): "cavity EP",
    ("laplace_at_ep", "cavity"): "cavity Laplace (at EP's values)",
    ("laplace", "cavity"): "cavity Laplace (at its own optimum)",
    ("ep", "psis"): "PSIS from EP's q",
    ("laplace_at_ep", "psis"): "PSIS from Laplace's q (at EP's values)",
    ("laplace", "psis"): "PSIS from Laplace's q (at its own optimum)",
}


def errors(pointwise: pd.DataFrame, folds: pd.DataFrame) -> pd.DataFrame:
    """One row per data set, fold, engine and approximate method: its error against exact
    LOO (approximate - exact) per case and of the sum (where exact LOO ran on a subsample,
    or PSIS gave no finite value at some cases, the difference estimator's: n times the
    mean error, with its finite-population standard error; Magnusson et al. 2019), and
    exact elpd_loo's se."""
    group = ["dataset", "fold", "engine", "method"]
    c = case_errors(pointwise)
    ok = c[np.isfinite(c.error)]
    e = ok.groupby(group, sort=False).error.agg(["mean", "std", "size"])
    e["mean_abs_error"] = ok.error.abs().groupby([ok[k] for k in group], sort=False).mean()
    e["max_abs_error"] = ok.error.abs().groupby([ok[k] for k in group], sort=False).max()
    e["exact_cases"] = c.groupby(group, sort=False).size()
    approx = pointwise[pointwise.method != "exact"]
    e["not_finite"] = (~np.isfinite(approx.value)).groupby([approx[k] for k in group]).sum()
    e["pareto_k_above"] = (approx.pareto_k > 0.7).groupby([approx[k] for k in group]).sum()
    e = e.reset_index().merge(folds[["dataset", "fold", "n"]], on=["dataset", "fold"])
    m = e["size"]
    e["sum_error"] = e.n * e["mean"]
    fpc = np.sqrt(np.clip(1 - m / e.n, 0.0, None))  # (0 where every case is exact)
    e["sum_error_se"] = (e.n * e["std"].fillna(0.0) / np.sqrt(m) * fpc).where(m < e.n, 0.0)
    # exact elpd_loo's se (sqrt(n) sd, ddof=0): the cavity's pointwise values with the
    # exact ones put in where computed (every case at FULL_N and below)
    key = ["dataset", "fold", "engine", "case"]
    exact = pointwise[pointwise.method == "exact"].set_index(key).value.rename("exact")
    cavity = pointwise[pointwise.method == "cavity"].join(exact, on=key)
    cavity = cavity.assign(v=cavity.exact.fillna(cavity.value))
    se = cavity.groupby(["dataset", "fold", "engine"]).v.agg(
        lambda v: np.sqrt(v.size) * v.std(ddof=0)
    )
    e = e.join(se.rename("elpd_se"), on=["dataset", "fold", "engine"])
    columns = [*group, "n", "exact_cases", "not_finite", "mean_abs_error", "max_abs_error"]
    return e[[*columns, "sum_error", "sum_error_se", "elpd_se", "pareto_k_above"]]


def heldout_gap() -> pd.Series:
    """Per data set, EP - Laplace (each at its own optimum) in held-out mean log predictive
    per case, mean over results/approximations' folds."""
    t = pd.read_csv(SOURCE / "results.csv")
    t = t[t.metric == "mean_log_predictive"].pivot_table(
        index=["dataset", "split"], columns="engine", values="value"
    )
    return (t.ep - t.laplace).groupby("dataset").mean()


def case_errors(pointwise: pd.DataFrame) -> pd.DataFrame:
    """Approximate - exact per case where exact LOO ran, with the case's Pareto k (PSIS)."""
    key = ["dataset", "fold", "engine", "case"]
    exact = pointwise[pointwise.method == "exact"].set_index(key).value.rename("exact")
    approx = pointwise[pointwise.method != "exact"].join(exact, on=key, how="inner")
    return approx.assign(error=approx.value - approx.exact)


def findings(pointwise: pd.DataFrame, folds: pd.DataFrame) -> list[str]:
    """The README's findings on results/approximations' folds, every number from the tables."""
    e = errors(pointwise, folds)
    cases = case_errors(pointwise)
    lines = []
    for (engine, method), label in LABELS.items():
        g = e[(e.engine == engine) & (e.method == method)]
        c = cases[(cases.engine == engine) & (cases.method == method)]
        worst = g.loc[g.sum_error.abs().idxmax()]
        ratio = (g.sum_error.abs() / g.elpd_se).max()
        if method == "cavity":
            lines.append(
                f"- **{label}**: per case {c.error.abs().mean():.4f} nats from exact LOO on "
                f"average, at most {c.error.abs().max():.2f}; error of the sum per fold "
                f"{_range(g.sum_error)} nats (largest {worst.sum_error:+.2f}, {worst.dataset} "
                f"fold {worst.fold}), at most {ratio:.2f} times the se of elpd_loo."
            )
            continue
        low = c[c.pareto_k <= 0.7]
        finite = np.isfinite(c.error)
        lines.append(
            f"- **{label}**: Pareto k above 0.7 on {100 * (c.pareto_k > 0.7).mean():.0f}% of "
            f"the cases (no finite value on {int((~finite).sum())}); the median per-case "
            f"error is {c.error[finite].median():+.3f} nats and the error of the sum per fold "
            f"{g.sum_error.min():+.3g} to {g.sum_error.max():+.3g} nats (up to {ratio:.3g} "
            f"times the se of elpd_loo). Where k <= 0.7 ({len(low)} cases) the per-case error "
            f"is {low.error.abs().mean():.4f} on average, at most {low.error.abs().max():.2f}."
        )
    gap = heldout_gap().reindex(DATASETS)
    ep = e[(e.engine == "ep") & (e.method == "cavity")]
    per_case = (ep.sum_error / ep.n).groupby(ep.dataset).mean().reindex(DATASETS)
    lines.append(
        "- **On the scale of the studies' differences**: cavity EP's error of the sum per "
        "case, mean over folds, is "
        + ", ".join(f"{d} {per_case[d]:+.4f}" for d in DATASETS)
        + " nats; held out, EP - Laplace (each at its own optimum, results/approximations, "
        "mean over folds) is "
        + ", ".join(f"{d} {gap[d]:+.4f}" for d in DATASETS)
        + " nats per case: the cavity error is the smaller on "
        f"{int((per_case.abs() < gap.abs()).sum())} of {len(DATASETS)} sets."
    )
    return lines


def _range(x: pd.Series) -> str:
    return f"{x.min():+.2f} to {x.max():+.2f}"


def ep_loo_findings(df: pd.DataFrame) -> list[str]:
    """The accuracy statement for results/ep_loo, every number from ep_loo.csv."""
    df = df.assign(error=df.cavity_loo - df.exact_loo)
    rep = (df.record_loo - df.cavity_loo).abs().max()
    spread = df.groupby(["dataset", "fold"]).error.agg(lambda x: x.max() - x.min())
    spread = spread.groupby("dataset", sort=False).max()
    lines = [
        f"- **At the {len(df)} selections rerun** ({_sets(df)}; the records' LOO values "
        f"reproduced to {rep:.0e}), cavity - exact EP LOO is {df.error.mean():+.2f} nats on "
        f"average ({_range(df.error)}; largest single case {df.max_abs_error.max():.2f} "
        "nats). Between the three selections of one fold it changes by at most "
        + ", ".join(f"{spread[d]:.2f} ({d})" for d in spread.index)
        + ": where it is nearly constant the cavity objective ranks selections as exact LOO "
        "does; where it is not, it can reverse a ranking."
    ]
    names = {"ep_evidence": "the evidence's", "ep_loo_fixed_sites": "the fixed-site"}
    for engine, (cav, ex, flips) in gains(df).items():
        name = names[engine]
        listed = "; ".join(
            f"{d} fold {f}: cavity {cav[(d, f)]:+.2f}, exact {ex[(d, f)]:+.2f}" for d, f in flips
        )
        lines.append(
            f"- **Total-gradient LOO selection - {name} selection**: the cavity objective "
            f"gains {cav.mean():+.3f} nats on average ({_range(cav)}), exact LOO "
            f"{ex.mean():+.3f} ({_range(ex)}). Exact LOO puts the total gradient's "
            f"selection lower by more than {REVERSED} nats on {len(flips)} of {len(ex)} folds"
            + (f" ({listed})." if len(flips) else ".")
        )
    return lines


def gains(df: pd.DataFrame) -> dict[str, tuple[pd.Series, pd.Series, pd.Index]]:
    """Per compared selection: the total-gradient selection's LOO minus its, by the cavity
    and by exact LOO, per fold; and the folds where exact LOO reverses the cavity's
    ranking by more than REVERSED nats."""
    w = df.pivot_table(
        index=["dataset", "fold"], columns="engine", values=["cavity_loo", "exact_loo"]
    ).dropna()  # (folds with all three selections)
    out = {}
    for engine in ("ep_evidence", "ep_loo_fixed_sites"):
        cav = w.cavity_loo.ep_loo_total - w.cavity_loo[engine]
        ex = w.exact_loo.ep_loo_total - w.exact_loo[engine]
        out[engine] = (cav, ex, ex[(ex < -REVERSED) & (cav > 0)].index)
    return out


def top_finding(pointwise: pd.DataFrame, folds: pd.DataFrame, ep_loo: pd.DataFrame) -> str:
    """results/README.md's finding, every number from the tables."""
    e = errors(pointwise, folds)
    c = case_errors(pointwise)
    cav = c[c.method == "cavity"]
    ep = e[(e.engine == "ep") & (e.method == "cavity")]
    psis = c[c.method == "psis"]
    sums = e[e.method == "psis"].sum_error
    err = ep_loo.cavity_loo - ep_loo.exact_loo
    g = gains(ep_loo)
    reversed_ = sum(len(flips) for _, _, flips in g.values())
    compared = sum(len(ex) for _, ex, _ in g.values())
    gain_cavity, gain_exact, _ = g["ep_evidence"]
    verb = "overstates" if gain_cavity.mean() > gain_exact.mean() else "understates"
    spread = (ep_loo.cavity_loo - ep_loo.exact_loo).groupby([ep_loo.dataset, ep_loo.fold])
    spread = spread.agg(lambda x: x.max() - x.min()).groupby("dataset").max()
    varies = list(spread[spread > 0.1].index)  # (more than 0.1 nats within a fold)
    return (
        "**The cavity leave-one-out forms are close to refits; PSIS from q is not; and "
        "a LOO optimiser exploits the cavity's error.** Against exact LOO (refits at the "
        "same hyperparameters, every fold of approximations at EP's values), cavity EP and "
        f"cavity Laplace are off by {cav.error.abs().mean():.4f} nats per case on average "
        f"(at most {cav.error.abs().max():.2f}); cavity EP's error of the sum is "
        f"{_range(ep.sum_error)} nats per fold, at most "
        f"{(ep.sum_error.abs() / ep.elpd_se).max():.2f} times the se of elpd_loo. PSIS from "
        f"draws of q has Pareto k above 0.7 on {100 * (psis.pareto_k > 0.7).mean():.0f}% of "
        f"the cases and its sums are off by up to {sums.abs().max():.2g} nats per fold. At "
        "results/ep_loo's "
        f"selections cavity - exact is {_range(err)} nats, and it differs between nearby "
        f"selections of one fold on {', '.join(varies)} (by up to {spread.max():.2f}), so the "
        f"cavity objective {verb} what the LOO "
        f"selection gains and exact LOO reverses {reversed_} of its {compared} rankings "
        "([loo](loo/README.md))."
    )


def _sets(df: pd.DataFrame) -> str:
    return ", ".join(f"{d} {g.fold.nunique()} folds" for d, g in df.groupby("dataset", sort=False))


def plot(pointwise: pd.DataFrame, path: Path) -> None:
    """Per-case error against exact LOO of each form, per data set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    key = ["dataset", "fold", "engine", "case"]
    exact = pointwise[pointwise.method == "exact"].set_index(key).value
    fig, ax = plt.subplots(figsize=(8.0, 4.5))
    shown = [
        ("ep", "cavity"),
        ("laplace_at_ep", "cavity"),
        ("ep", "psis"),
        ("laplace_at_ep", "psis"),
    ]
    colours = ("tab:blue", "tab:orange", "tab:cyan", "tab:red")
    for j, ((engine, method), colour) in enumerate(zip(shown, colours, strict=True)):
        g = pointwise[(pointwise.engine == engine) & (pointwise.method == method)]
        g = g.set_index(key).value
        err = (g.reindex(exact.index) - exact).dropna()
        err = err[err.index.get_level_values("engine") == engine]
        for i, d in enumerate(DATASETS):
            e = err[err.index.get_level_values("dataset") == d].to_numpy()
            x = i + (j - 1.5) * 0.18 + np.random.default_rng(i).uniform(-0.05, 0.05, e.size)
            ax.scatter(
                x,
                e,
                s=5,
                color=colour,
                alpha=0.5,
                label=LABELS[(engine, method)] if i == 0 else None,
            )
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_yscale("symlog", linthresh=0.01)
    ax.set_xticks(range(len(DATASETS)), DATASETS)
    ax.set_ylabel("approximate - exact log p(y_i | D_-i) (nats)")
    ax.set_title(
        "Leave-one-out forms against refits (EP's hyperparameters, every fold;\n"
        "PSIS cases without a finite value not shown)",
        fontsize=10,
    )
    ax.legend(frameon=False, fontsize=7, markerscale=3)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def table_rows(pointwise: pd.DataFrame, folds: pd.DataFrame) -> list[str]:
    """The README's table, one row per data set, engine and method."""
    e = errors(pointwise, folds)
    c = case_errors(pointwise)
    rows = []
    for (dataset, engine, method), g in e.groupby(["dataset", "engine", "method"], sort=False):
        err = c[(c.dataset == dataset) & (c.engine == engine) & (c.method == method)].error
        err = err[np.isfinite(err)].abs()
        rows.append(
            f"| {dataset} | {engine} | {method} | {len(g)} | {g.exact_cases.min()} | "
            f"{err.mean():.4g} | {err.max():.3g} | {g.sum_error.min():+.3g} to "
            f"{g.sum_error.max():+.3g} | {g.sum_error_se.max():.2g} | {g.elpd_se.mean():.2f} |"
        )
    return rows


def write_readme(output: Path) -> None:
    pointwise = pd.read_csv(output / "pointwise.csv")
    folds = pd.read_csv(output / "folds.csv")
    plot(pointwise, output / "loo_error.png")
    text = [
        "# Cavity and PSIS leave-one-out against exact leave-one-out",
        "",
        "Generated by `studies/loo.py` from `pointwise.csv`, `folds.csv` and `ep_loo.csv` (see",
        "its docstring for the set-up): every fold of results/approximations' six benchmarks,",
        "at EP's selected hyperparameters, elpd_loo computed by the cavity form,",
        f"by PSIS from {DRAWS} draws of q and by refits without each case (exact); on training",
        f"sets above {FULL_N} cases the refits ran on {SUBSAMPLE} random cases and the sum's",
        "error is the difference estimator's (Magnusson et al. 2019). Errors are approximate -",
        "exact (positive: the approximation is optimistic).",
        "",
        "## Findings",
        "",
        *findings(pointwise, folds),
        "",
        "![per-case errors](loo_error.png)",
        "",
        "## results/ep_loo's selections: the cavity objective against exact EP LOO",
        "",
        *ep_loo_findings(pd.read_csv(output / "ep_loo.csv")),
        "",
        "## Per data set, engine and method (over the folds)",
        "",
        "Mean and largest per-case error over the folds; the error of the sum per fold (its",
        "range; with a subsample, the difference estimator's, and its largest standard error:",
        "0 where every case was refitted and every value finite); the se of exact elpd_loo",
        "(mean over the folds).",
        "",
        "| data set | engine | method | folds | exact cases per fold | mean abs error "
        "| max abs error | sum error | its se (largest) | se of elpd_loo |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *table_rows(pointwise, folds),
    ]
    text += ["", versions_text(), ""]
    (output / "README.md").write_text("\n".join(text))


EP_LOO_SECTION = "## How accurate the cavity LOO objective is (exact refits: results/loo)"


def write_ep_loo_section(output: Path, readme: Path = EP_LOO / "README.md") -> None:
    """results/ep_loo/README.md's accuracy statement (replacing the section if there)."""
    text = readme.read_text()
    text = text.split(EP_LOO_SECTION)[0].rstrip("\n")
    section = [
        "",
        "",
        EP_LOO_SECTION,
        "",
        "The LOO values above are EP's cavity form (Opper and Winther 2000), not refits.",
        "`studies/loo.py` recomputed, at the hyperparameters each selection reached, exact EP",
        "LOO (EP refitted without each case at the same hyperparameters) beside the cavity",
        "form, on every fold of the six sets (table: `results/loo/ep_loo.csv`). Differences",
        "are the total-gradient selection's LOO minus the other's.",
        "",
        *ep_loo_findings(pd.read_csv(output / "ep_loo.csv")),
        "",
    ]
    readme.write_text(text + "\n".join(section))


def run(
    output: Path = ROOT / "results" / "loo", parts: tuple[str, ...] = ("loo", "ep_loo")
) -> None:
    """Compute the missing rows, then the figure and the README."""
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    with threadpool_limits(1):  # (one BLAS thread: the refits are many small problems)
        compute(output, parts)
    write_readme(output)
    if output.resolve() == (ROOT / "results" / "loo").resolve():  # (not into another run's)
        write_ep_loo_section(output)


if __name__ == "__main__":
    import sys

    run(parts=tuple(sys.argv[1:]) or ("loo", "ep_loo"))
