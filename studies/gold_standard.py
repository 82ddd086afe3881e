"""The gold standard checked where the truth is known, and where AIS degenerated.

Two parts, each a table the README summarises (``gc.evidence.estimate`` throughout):

1. **Gaussian likelihood, exact evidence.** GP regression has the closed form
   log N(y; m, K + s^2 I) (R&W eq. 2.30) at any n: n = 200 inputs in 2-D, targets drawn
   from the model itself, sigma_f^2 in {1, e^4, e^8}, noise variance s^2 in {0.01, 1}. Each
   estimator (SMC with an adaptive schedule; AIS with a fixed one) from each start (EP's
   approximation, exact here; the prior, the stress test: at sigma_f^2 = e^8 and
   s^2 = 0.01 the posterior is some 500 times narrower than the prior along each of its
   leading directions) against the exact value, in standard errors. An SMC estimate with
   se > 0.1 is made again with 64 runs, as the studies' ``recheck_runs`` does; both rows
   are kept, the summary counts the second.
2. **Classification, the hardest points of the evidence grid** (studies/
   approximations_grid.toml: probit, isotropic SE, zero mean, <= 200 cases): the 30 points
   with the largest sigma_f and the shortest length-scales, where AIS from EP (1000
   temperatures, then 5000) degenerated. SMC from EP twice with different seeds, against
   each other and against the committed AIS estimate where that is healthy (se <= 0.1).

Writes ``results/gold_standard/``: ``gaussian.csv``, ``grid_hard.csv`` and ``README.md``.
Resumes: rows already in the CSVs are kept. Run from the repository root:
``gpc-compare run studies/gold_standard.py`` (the README sums the estimates' seconds, one
core each; the two parts can run in two processes, ``run(output, parts=("gaussian",))`` and
``("grid",)``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import gpc_compare as gc
from gpc_compare.numerics import JITTER, cholesky
from gpc_compare.provenance import versions_text
from gpc_compare.study import JobRecord
from gpc_compare.study.problem import DatasetSpec, load_dataset

ROOT = Path(__file__).resolve().parents[1]
GRID_JOBS = ROOT / "results" / "approximations_grid" / "probit" / "jobs"
GAUSSIAN_CASES = [(lv, s2) for lv in (0.0, 4.0, 8.0) for s2 in (0.01, 1.0)]
ESTIMATORS = [("smc", "ep"), ("smc", "prior"), ("ais", "ep"), ("ais", "prior")]
#: AIS from the prior as Kuss & Rasmussen ran it, longer: the second estimator's stress run
AIS_PRIOR_TEMPERATURES = 10_000
N_GAUSSIAN = 200
#: The hardest grid points: log variance and log length-scale (of the 7 x 7 grid)
HARD = [(10.0, 0.0), (10.0, 0.8333), (10.0, 1.6667), (8.3333, 0.0), (8.3333, 0.8333)]
SE_TIGHT = 0.1
#: An SMC estimate with se > SE_TIGHT is made again with this many runs (as the studies'
#: ``[evidence.smc] recheck_runs`` does)
RECHECK_RUNS = 64


def gaussian_problem(seed: int, log_variance: float, noise: float):
    """n inputs in 2-D and targets drawn from GP regression at these hyperparameters."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N_GAUSSIAN, 2))
    kernel = gc.kernels.SquaredExponential(1.0, float(np.exp(log_variance)))
    L = cholesky(kernel(X), jitter=JITTER, what="K")
    K = L @ L.T  # (the prior the estimators use: K with the jitter of its Cholesky factor)
    y = L @ rng.normal(size=N_GAUSSIAN) + np.sqrt(noise) * rng.normal(size=N_GAUSSIAN)
    C = np.linalg.cholesky(K + noise * np.eye(N_GAUSSIAN))
    a = np.linalg.solve(C, y)
    exact = -0.5 * a @ a - np.log(np.diag(C)).sum() - 0.5 * N_GAUSSIAN * np.log(2 * np.pi)
    return X, y, kernel, gc.likelihoods.Gaussian(noise), float(exact)


def gaussian_rows(done: pd.DataFrame) -> list[dict]:
    rows = []
    for lv, s2 in GAUSSIAN_CASES:
        X, y, kernel, lik, exact = gaussian_problem(0, lv, s2)
        for method, start in ESTIMATORS:
            options = {"temperatures": AIS_PRIOR_TEMPERATURES} if (method, start) == (
                "ais", "prior") else {}  # fmt: skip
            r = _gaussian_estimate(done, rows, X, y, kernel, lik, exact, lv, s2, method, start,
                                   options)  # fmt: skip
            if method == "smc" and r["se"] > SE_TIGHT:  # the studies' recheck (se_max 0.1)
                _gaussian_estimate(done, rows, X, y, kernel, lik, exact, lv, s2, method, start,
                                   {"runs": RECHECK_RUNS})  # fmt: skip
    return rows


def _gaussian_estimate(done, rows, X, y, kernel, lik, exact, lv, s2, method, start, options):
    """The row of one estimate: from ``done`` (resumed) or computed and appended to ``rows``."""
    if not done.empty:
        same = (done.log_variance == lv) & (done.noise == s2) & (done.method == method)
        same &= done.start == start
        if method == "smc":
            same &= done.runs == options.get("runs", gc.evidence.OPTIONS["smc"]["runs"])
        if same.any():
            return done[same].iloc[-1].to_dict()
    r = gc.evidence.estimate(X, y, kernel=kernel, likelihood=lik, method=method, start=start,
                             random_seed=1, **options)  # fmt: skip
    rows.append(_row(r, log_variance=lv, noise=s2, exact=exact))
    got = f"{r.log_evidence:.3f} +- {r.standard_error:.3f}"
    print(f"gaussian lv={lv} s2={s2} {method}/{start} {options}: {got} (exact {exact:.3f}) "
          f"{r.seconds:.1f}s", flush=True)  # fmt: skip
    return rows[-1]


def hard_points() -> list[tuple[str, float, float, dict]]:
    """(data set, log length-scale, log variance, committed AIS record) of the hard points."""
    out = []
    for path in sorted(GRID_JOBS.glob("*__ais__*.json")):
        rec = JobRecord.from_json(path.read_text())
        hp = rec.hyperparameters.as_dict()
        ll, lv = hp["log_lengthscale"], hp["log_variance"]
        if any(abs(lv - v) < 1e-3 and abs(ll - e) < 1e-3 for v, e in HARD):
            out.append((rec.dataset, ll, lv, rec))
    return out


def grid_rows(done: pd.DataFrame) -> list[dict]:
    rows = []
    lik = gc.likelihoods.get_likelihood("probit")
    for dataset, ll, lv, ais_rec in hard_points():
        data = load_dataset(DatasetSpec(dataset, {}, 200), 0)
        X = gc.datasets.standardize(data.X, data.X)[0]
        kernel = gc.kernels.SquaredExponential(float(np.exp(ll)), float(np.exp(lv)))
        for seed in (1, 2):
            if not done.empty:
                same = (done.dataset == dataset) & (done.seed == seed)
                same &= np.isclose(done.log_lengthscale, ll) & np.isclose(done.log_variance, lv)
                if same.any():
                    continue
            r = gc.evidence.estimate(X, data.y, kernel=kernel, likelihood=lik, random_seed=seed)
            last = ais_rec.evidence.runs[-1]
            rows.append(_row(r, dataset=dataset, log_lengthscale=ll, log_variance=lv, seed=seed,
                             ais=last.log_evidence, ais_se=last.se,
                             ais_temperatures=last.temperatures))  # fmt: skip
            print(f"{dataset} ll={ll:.2f} lv={lv:.2f} seed {seed}: {r.log_evidence:.3f} +- "
                  f"{r.standard_error:.3f} (AIS {last.log_evidence:.3f} +- {last.se:.3f}, "
                  f"EP {r.start_log_evidence:.3f}) {r.seconds:.1f}s", flush=True)  # fmt: skip
    return rows


def _row(r, **fields) -> dict:
    health = {k: v for k, v in r.health.items() if k != "run_log_evidence"}
    return {**fields, "method": r.method, "start": r.start, "log_evidence": r.log_evidence,
            "se": r.standard_error, "ep": r.start_log_evidence, "seconds": r.seconds,
            **health}  # fmt: skip


def _resume(path: Path) -> pd.DataFrame:
    return pd.read_csv(path) if path.exists() else pd.DataFrame()


def run(output: Path, parts: tuple[str, ...] = ("gaussian", "grid")) -> None:
    """Compute the missing rows of both tables and write the README."""
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    for part, compute in (("gaussian", gaussian_rows), ("grid_hard", grid_rows)):
        if part.split("_")[0] not in parts:
            continue
        path = output / f"{part}.csv"
        done = _resume(path)
        new = compute(done)
        table = pd.concat([done, pd.DataFrame(new)], ignore_index=True)
        table.to_csv(path, index=False)
    if (output / "gaussian.csv").exists() and (output / "grid_hard.csv").exists():
        write_readme(output)


def write_readme(output: Path) -> None:
    g = pd.read_csv(output / "gaussian.csv")
    g = g.sort_values(["log_variance", "noise", "method", "start", "runs"], ignore_index=True)
    g["error"] = g.log_evidence - g.exact
    g["z"] = g.error / g.se.where(g.se > 1e-6)  # (from EP's exact start: se 0, no z)
    h = pd.read_csv(output / "grid_hard.csv")
    lines = ["# The gold standard where the truth is known, and where AIS degenerated", "",
             "Generated by `studies/gold_standard.py` (see its docstring for the set-up).", "",
             "## Gaussian likelihood: estimates against the exact log evidence", ""]  # fmt: skip
    lines += [_table(g[["log_variance", "noise", "method", "start", "runs", "exact",
                        "log_evidence", "error", "se", "z", "seconds"]]), ""]  # fmt: skip
    exact_start = g[g.start == "ep"]
    # each case's final estimate: the recheck (more runs) where there is one
    final = g.sort_values("runs").groupby(["log_variance", "noise", "method", "start"]).tail(1)
    for (method, start), rows in final[final.start == "prior"].groupby(["method", "start"]):
        ok = (rows.z.abs() <= 3) & (rows.se <= SE_TIGHT)
        lines.append(f"- {method.upper()} from the {start}: within 3 standard errors of the "
                     f"exact value with se <= {SE_TIGHT} at {int(ok.sum())} of {len(rows)} "
                     f"cases (z from {rows.z.min():.1f} to {rows.z.max():.1f}; se up to "
                     f"{rows.se.max():.3f}; {int((rows.runs == RECHECK_RUNS).sum())} after the "
                     f"{RECHECK_RUNS}-run recheck).")  # fmt: skip
    lines.append(f"- From EP's start (exact here: every weight equal, se 0): largest |error| "
                 f"{exact_start.error.abs().max():.4f} nats, the rounding of the start's "
                 "normaliser at the largest sigma_f^2 / s^2.")  # fmt: skip
    both = h.pivot_table(index=["dataset", "log_lengthscale", "log_variance"], columns="seed",
                         values=["log_evidence", "se"]).reset_index()  # fmt: skip
    both.columns = ["dataset", "log_lengthscale", "log_variance", "smc_1", "smc_2", "se_1",
                    "se_2"]  # fmt: skip
    first = h[h.seed == 1].set_index(["dataset", "log_lengthscale", "log_variance"])
    both = both.join(first[["ep", "ais", "ais_se", "steps", "seconds"]],
                     on=["dataset", "log_lengthscale", "log_variance"])  # fmt: skip
    both["z_seeds"] = (both.smc_1 - both.smc_2) / np.hypot(both.se_1, both.se_2)
    both["z_ais"] = (both.smc_1 - both.ais) / np.hypot(both.se_1, both.ais_se)
    lines += ["", "## The hardest points of the probit evidence grid: SMC twice, and AIS", ""]
    lines += [_table(both)]
    healthy = both.ais_se <= SE_TIGHT
    gap = np.abs(both.smc_1 - both.ep)
    lines += ["", f"- SMC standard error <= {SE_TIGHT} at {int((h.se <= SE_TIGHT).sum())} of "
              f"{len(h)} runs (largest {h.se.max():.3f}).",
              f"- Two seeds within 3 combined standard errors at "
              f"{int((both.z_seeds.abs() <= 3).sum())} of {len(both)} points.",
              f"- Against AIS where AIS is healthy (se <= {SE_TIGHT}, {int(healthy.sum())} "
              f"points): within 3 combined standard errors at "
              f"{int((both.z_ais[healthy].abs() <= 3).sum())}.",
              f"- |SMC - EP| at these points: median {np.median(gap):.3f}, largest "
              f"{np.max(gap):.3f} nats.", "",
              f"The estimates took {(g.seconds.sum() + h.seconds.sum()) / 60:.0f} minutes in "
              "all (the seconds columns).", ""]  # fmt: skip
    lines.append(versions_text())
    (output / "README.md").write_text("\n".join(lines) + "\n")


def _table(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        out.append("| " + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v)
                                     for v in row) + " |")  # fmt: skip
    return "\n".join(out)
