"""Calibrate the run plan's cost model (:mod:`gpc_compare.study.plan`) on this machine's
committed timings, and check it: ``python benchmarks/plan_calibration.py``.

Reads the committed job records (``results/*/jobs/*.json``: per job n, d, engine,
likelihood, optimiser evaluations and seconds) and the scale study's fits
(``results/scale/summary.csv``: n = 500 to 100,000, one fit each), writes the
observations (``results/benchmarks/plan_observations.csv``), fits the constants
(:func:`fit_constants`), and writes the estimate against the actual time per committed
study and engine (``results/benchmarks/plan.csv``) and its summary (``plan.md``).
No timing is run: the machine the records came from is the calibration.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpc_compare.study import plan  # noqa: E402

OUT = ROOT / "results" / "benchmarks"
COLUMNS = [
    "source",
    "study",
    "method",
    "likelihood",
    "policy",
    "n_train",
    "d",
    "inducing",
    "runs",
    "evaluations",
    "fit_seconds",
    "seconds",
]


def observations(root: Path = ROOT) -> pd.DataFrame:
    """One row per committed binary job of a calibrated engine (records) or scale fit."""
    rows = []
    for path in sorted((root / "results").glob("**/jobs/*.json")):
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if rec.get("status") != "ok" or rec.get("method") not in plan.METHODS:
            continue
        if rec.get("likelihood") not in ("probit", "logistic"):  # (binary only)
            continue
        opt = rec.get("optimizer") or {}
        timings = rec.get("timings") or {}
        rows.append(
            {
                "source": "record",
                "study": str(path.parent.parent.relative_to(root / "results")),
                "method": rec["method"],
                "likelihood": rec["likelihood"],
                "policy": rec["policy"],
                "n_train": rec["n_train"],
                "d": rec["d"],
                "inducing": (rec.get("options") or {}).get("inducing"),
                "runs": opt.get("runs"),
                "evaluations": opt.get("evaluations"),
                "fit_seconds": timings.get("fit_seconds"),
                "seconds": rec["finished"] - rec["started"],
            }
        )
    scale = pd.read_csv(root / "results" / "scale" / "summary.csv")
    for row in scale.itertuples():
        if row.method not in plan.METHODS:
            continue
        rows.append(
            {
                "source": "scale",
                "study": f"scale/{row.study}",
                "method": row.method,
                "likelihood": "probit",
                "policy": "fixed",
                "n_train": row.n_train,
                "d": row.d,
                "inducing": None if pd.isna(row.M) else int(row.M),
                "runs": None,
                "evaluations": None,
                "fit_seconds": row.fit_seconds + row.select_seconds,
                "seconds": row.fit_seconds + row.select_seconds,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def fit_constants(obs: pd.DataFrame) -> dict[str, dict[str, float]]:
    """The cost model's constants per engine, by least squares in log seconds.

    One fit (:func:`gpc_compare.study.plan.fit_seconds`) on the one-fit observations
    (scale fits, grid and fixed jobs, the records' final fits), their median per study,
    engine, n and d so that no study outweighs the others by its job count; then
    ``per_evaluation_LIKELIHOOD``: the median over optimised jobs of (seconds - one fit) /
    (evaluations x one fit); ``evaluations``: the median evaluations per optimiser run.
    """
    out: dict[str, dict[str, float]] = {}
    for method, rows in obs.groupby("method"):
        rows = rows[rows["fit_seconds"] > 0]
        probit = rows[rows["likelihood"] == "probit"]
        probit = probit if len(probit) else rows  # (VB: logistic only, its own scale)
        groups = probit.groupby(["study", "n_train", "d", "inducing"], dropna=False)
        const = _fit_one(str(method), groups["fit_seconds"].median().reset_index())
        one = plan.fit_seconds(method, rows["n_train"], rows["d"], rows["inducing"], const)
        logistic = rows["likelihood"] == "logistic"
        if logistic.any() and not logistic.all():  # one logistic fit against a probit one
            const["fit_logistic"] = float(np.median(rows["fit_seconds"][logistic] / one[logistic]))
        one = one * np.where(logistic, const.get("fit_logistic", 1.0), 1.0)
        single = rows[(rows["source"] == "record") & (rows["policy"] != "optimize")]
        if len(single):  # the job's own work besides its fit (data, prediction, PSIS)
            const["job"] = float(np.median(single["seconds"] - single["fit_seconds"]))
        opt = (rows["policy"] == "optimize") & rows["evaluations"].notna()
        if opt.any():
            spent = rows["seconds"][opt] - const.get("job", 0.0) - one[opt]
            extra = spent / (rows["evaluations"][opt] * one[opt])
            for lik, ratio in extra.groupby(rows["likelihood"][opt]):
                const[f"per_evaluation_{lik}"] = float(np.median(ratio.clip(lower=0.0)))
            const["evaluations"] = float(np.median(rows["evaluations"][opt] / rows["runs"][opt]))
        out[str(method)] = {k: float(f"{v:.3g}") for k, v in const.items()}
    return out


def _fit_one(method: str, fits: pd.DataFrame) -> dict[str, float]:
    """The one-fit constants of ``method``: nonnegative, by least squares in log seconds."""
    from scipy.optimize import least_squares

    y = np.log(fits["fit_seconds"].to_numpy(float))
    n, d, m = fits["n_train"], fits["d"], fits["inducing"]
    if method == "mcmc":
        names = ["c", "alpha", "beta"]

        def model(p):
            return dict(zip(names, (np.exp(p[0]), p[1], p[2]), strict=True))

        start = np.array([0.0, 1.0, 0.5])
    else:
        names = ["c0", "a"] if method in plan.SPARSE else ["c0", "a", "b"]

        def model(p):
            return dict(zip(names, np.exp(p), strict=True))

        start = np.full(len(names), -3.0)

    def residual(p):
        return np.log(plan.fit_seconds(method, n, d, m, model(p))) - y

    p = least_squares(residual, start).x
    return model(p)


def estimate_vs_actual(obs: pd.DataFrame) -> pd.DataFrame:
    """Per study, engine and likelihood: the jobs, the plan's estimate and the actual
    seconds (summed over the jobs), and their ratio."""
    rows = []
    for (study, method, lik), group in obs.groupby(["study", "method", "likelihood"]):
        est = plan.job_seconds(
            method,
            lik,
            group["n_train"],
            group["d"],
            optimize=group["policy"].eq("optimize").to_numpy(),
            runs=group["runs"].fillna(1).to_numpy(),
            inducing=group["inducing"],
        )
        rows.append(
            {
                "study": study,
                "engine": method,
                "likelihood": lik,
                "jobs": len(group),
                "n_min": int(group["n_train"].min()),
                "n_max": int(group["n_train"].max()),
                "estimate_s": float(np.sum(est)),
                "actual_s": float(group["seconds"].sum()),
            }
        )
    table = pd.DataFrame(rows)
    table["ratio"] = table["estimate_s"] / table["actual_s"]
    return table


def job_factors(obs: pd.DataFrame) -> np.ndarray:
    """Each observed job's factor between its estimate and its actual seconds (>= 1)."""
    est = np.concatenate(
        [
            plan.job_seconds(
                method,
                lik,
                g["n_train"],
                g["d"],
                optimize=g["policy"].eq("optimize").to_numpy(),
                runs=g["runs"].fillna(1).to_numpy(),
                inducing=g["inducing"],
            )
            / g["seconds"].to_numpy(float)
            for (method, lik), g in obs.groupby(["method", "likelihood"])
        ]
    )
    return np.maximum(est, 1 / est)


def summary_text(table: pd.DataFrame, jobs: np.ndarray | None = None) -> str:
    """plan.md: the factor reached, from the table (and each job's, ``jobs``)."""
    factor = np.maximum(table["ratio"], 1 / table["ratio"])
    big = table[table["actual_s"] >= 60]
    big_factor = np.maximum(big["ratio"], 1 / big["ratio"])
    lines = [
        "# The run plan's cost model against the committed timings",
        "",
        "Written by `python benchmarks/plan_calibration.py` from `plan.csv` (one row per",
        "committed study, engine and likelihood: the estimate of `gpc_compare.study.plan`",
        "summed over the jobs, against their recorded seconds). Records: `results/*/jobs`",
        "(n = 120 to 456); the scale study's fits: `results/scale/summary.csv` (n = 500 to",
        "8,000 for the dense engines, to 100,000 for the sparse ones). The constants are",
        "fitted on these same observations, so the check is in-sample; no timing beyond",
        "those sizes is committed, and none was run for this table (a loaded machine).",
        "",
        f"- Rows: {len(table)}; within a factor of 2: {int((factor <= 2).sum())}; "
        f"the largest factor: {factor.max():.2f}.",
        f"- Rows of at least a minute of actual time: {len(big)}; within a factor of 2: "
        f"{int((big_factor <= 2).sum())}; the largest factor: "
        f"{(big_factor.max() if len(big) else float('nan')):.2f}.",
    ]
    if jobs is not None:  # a job's own time varies with its data: the plan is of totals
        lines.append(
            f"- Single jobs: {jobs.size}; within a factor of 2: {(jobs <= 2).mean():.0%}; "
            f"median factor {np.median(jobs):.2f}, 90th percentile "
            f"{np.quantile(jobs, 0.9):.2f}."
        )
    lines += [
        "",
        "| study | engine | likelihood | jobs | n | estimate (s) | actual (s) | ratio |",
        "|---|---|---|---:|---|---:|---:|---:|",
    ]
    for r in table.itertuples():
        lines.append(
            f"| {r.study} | {r.engine} | {r.likelihood} | {r.jobs} | {r.n_min}-{r.n_max} "
            f"| {r.estimate_s:.1f} | {r.actual_s:.1f} | {r.ratio:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    obs = observations()
    obs.to_csv(OUT / "plan_observations.csv", index=False)
    print(json.dumps(fit_constants(obs), indent=1))
    table = estimate_vs_actual(obs)
    table.to_csv(OUT / "plan.csv", index=False, float_format="%.4g")
    text = summary_text(table, job_factors(obs))
    (OUT / "plan.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
