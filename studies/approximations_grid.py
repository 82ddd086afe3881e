"""Laplace and EP evidence against a gold standard (SMC, and AIS) over a hyperparameter grid.

Reproduces the evidence part of Kuss and Rasmussen (2005, JMLR 6, Fig. 4) and Nickisch and
Rasmussen (2008, JMLR 9, Fig. 7). The computation is a study of the study runner,
``studies/approximations_grid.toml``: every engine at every point of a grid of (log
length-scale, log variance) (``policy = "grid"``), on all cases of each data set's subsample
(``splits.kind = "none"``), and two evidence estimators: sequential Monte Carlo with an
adaptive schedule (``[evidence.smc]``, the gold standard where the study has it) and AIS
(``[evidence.ais]``) annealed from EP's approximation, which anneals again with more
temperatures where its first estimate is degenerate or disagrees with EP. This script runs
that study (resuming from its job records) and draws what is specific to it: contour plots
of the evidence surfaces, maps of the approximations' (and AIS's) gaps to the gold standard
(:mod:`gpc_compare.report.grid`), a per-data-set summary and the README with the finding.

Writes to ``results/approximations_grid/``: the runner's ``results.csv``, ``jobs.csv`` and
``jobs/``; ``grid.csv`` (tidy: one row per data set, grid point and method), ``ais_check.csv``
(the points annealed again), ``summary.csv``, ``run_info.json`` (times),
``evidence_contours.png``, ``evidence_gaps.png`` and ``README.md``.

Run from the repository root: ``gpc-compare run studies/approximations_grid.py`` (the probit
grid's 1,470 jobs and the logistic grid's 1,764, the SMC jobs about half of their time;
results/README.md's index computes the committed run's time from ``jobs.csv`` and
``ais_check.csv``).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from gpc_compare.provenance import versions_text
from gpc_compare.report.grid import plot_contours, plot_gaps, surface
from gpc_compare.study import StudyConfig, expand, load_records, load_study, run_study

#: The two grids, by likelihood: each a study file and a subdirectory of the output. VB
#: (the Jaakkola-Jordan bound) exists for the logistic likelihood only.
STUDIES = {
    "probit": Path(__file__).with_suffix(".toml"),
    "logistic": Path(__file__).with_name("approximations_grid_logistic.toml"),
}
WORKERS = 2
#: The approximations a grid may hold, in the order shown.
APPROXIMATIONS = {"laplace": "Laplace", "ep": "EP", "kl": "KL (bound)", "vb": "VB (bound)"}
#: The gold-standard estimators, by preference: the first a study has is the reference.
GOLD = {"smc": "SMC", "ais": "AIS"}
#: Gold-standard estimates with se below this are the tightly determined ones
SE_TIGHT = 0.1


class Settings(NamedTuple):
    """What the study file says, as the figures and the README need it."""

    grid_size: str
    log_ell: list[float]
    log_sf: list[float]
    n_max: int
    temperatures: int
    temperatures_long: int
    runs: int
    se_max: float
    z: float
    nats: float
    seed: int
    likelihood: str
    gold: str  # "smc" or "ais": the reference
    smc: dict[str, Any] | None  # SMC's options, where the study has it


def settings(config: StudyConfig) -> Settings:
    ais = config.evidence["ais"]
    smc = config.evidence.get("smc")
    log_ell = sorted({p["log_lengthscale"] for p in config.grid})
    log_sf = sorted({p["log_variance"] / 2.0 for p in config.grid})
    return Settings(
        grid_size=f"{len(log_ell)} x {len(log_sf)}",
        log_ell=log_ell,
        log_sf=log_sf,
        n_max=max(d.subsample or 0 for d in config.datasets),
        temperatures=ais["temperatures"],
        temperatures_long=ais["recheck"]["temperatures"],
        runs=ais["runs"],
        se_max=ais["se_max"],
        z=ais["recheck"]["z"],
        nats=ais["recheck"]["nats"],
        seed=config.seed,
        likelihood=config.likelihood,
        gold=next(g for g in GOLD if g in config.evidence),
        smc=None if smc is None else dict(smc),
    )


# --------------------------------------------------------------------------- the runner's records
def frames(config: StudyConfig, result_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``grid.csv`` and ``ais_check.csv`` from the study's job records.

    grid: one row per data set, grid point and method (the engine or estimator label):
    log_evidence (for an estimator its final estimate), se, seconds, converged (an
    estimator: se <= se_max), checked (made again: AIS's longer anneal, SMC's more runs),
    warnings. check: one row per point AIS
    annealed again, with EP, both anneals and the reason.
    """
    records = load_records(result_dir)
    rows, checks = [], []
    for job in expand(config):
        rec = records[job.id]
        point = job.hyperparameters
        where = {
            "dataset": job.dataset.label,
            "n": rec.n_train,
            "d": rec.d,
            "log_lengthscale": point["log_lengthscale"],
            "log_sf": point["log_variance"] / 2.0,
        }
        evidence = rec.evidence
        rows.append(
            {
                **where,
                "method": job.engine,
                "log_evidence": rec.log_evidence,
                "se": np.nan if rec.log_evidence_se is None else rec.log_evidence_se,
                "seconds": rec.timings.fit_seconds,
                "converged": bool(rec.convergence.converged),
                "checked": bool(evidence and evidence.recheck),
                "warnings": " | ".join(rec.warnings),
            }
        )
        if evidence and evidence.recheck and evidence.method == "ais":
            first, long = evidence.runs
            checks.append(
                {
                    **where,
                    "ep": evidence.start_log_evidence,
                    "ais": first.log_evidence,
                    "ais_se": first.se,
                    "ais_seconds": first.seconds,
                    "ais_long": long.log_evidence,
                    "ais_long_se": long.se,
                    "ais_long_seconds": long.seconds,
                    "temperatures": first.temperatures,
                    "temperatures_long": long.temperatures,
                    "reason": evidence.recheck,
                }
            )
    grid = pd.DataFrame(rows)
    columns = [*where, "ep", "ais", "ais_se", "ais_seconds", "ais_long", "ais_long_se",
               "ais_long_seconds", "temperatures", "temperatures_long", "reason"]  # fmt: skip
    check = pd.DataFrame(checks, columns=columns)
    return grid, check.drop(columns=["n", "d"])


# --------------------------------------------------------------------------- the study
def present(df: pd.DataFrame) -> list[str]:
    """The approximations in a grid's table, in the order shown."""
    return [m for m in APPROXIMATIONS if m in set(df.method)]


def run(output: Path, *, study: Path | None = None, workers: int = WORKERS) -> None:
    """Run (or resume) the grid studies and write their figures and READMEs.

    With ``study``, that one study into ``output``; otherwise each of :data:`STUDIES` into
    ``output/LIKELIHOOD``, and an index ``output/README.md``.
    """
    output = Path(output)
    if study is not None:
        run_one(output, study, workers=workers)
        return
    for likelihood, path in STUDIES.items():
        run_one(output / likelihood, path, workers=workers)
    write_index(output)


def run_one(output: Path, study: Path, *, workers: int = WORKERS) -> None:
    """Run (or resume) one grid study into ``output`` and write its figures and README."""
    output = Path(output)
    config = dataclasses.replace(load_study(study), name=output.name)
    s = settings(config)
    t0 = time.perf_counter()
    summary_run = run_study(config, output.parent, workers=workers, progress=sys.stdout)
    wall = time.perf_counter() - t0
    if summary_run.failed or summary_run.failed_earlier:
        raise RuntimeError(f"{summary_run.failed} grid jobs failed: {summary_run.failures[:3]}")
    df, check = frames(config, output)
    df.to_csv(output / "grid.csv", index=False)
    check.to_csv(output / "ais_check.csv", index=False)
    gold = s.gold
    if gold == "smc":
        how = (f"SMC from EP (adaptive, CESS {s.smc['cess']}, R={s.smc['runs']} x "
               f"{s.smc['particles']} particles); AIS from EP, T={s.temperatures} "
               f"(T={s.temperatures_long} where degenerate or off EP)")  # fmt: skip
    else:
        how = (f"AIS from EP, R={s.runs}, T={s.temperatures} (T={s.temperatures_long} where "
               "degenerate or off EP)")  # fmt: skip
    title = (
        f"{s.likelihood.capitalize()} GPC, isotropic SE kernel: log evidence over a "
        f"{s.grid_size} grid\nstratified subsample of <= {s.n_max} cases per data set, "
        f"standardised inputs\n{how}"
    )
    methods = present(df)
    labels = {m: APPROXIMATIONS[m] for m in methods}
    se_max = s.smc["se_max"] if gold == "smc" else s.se_max
    shown = {**labels, gold: f"{GOLD[gold]} (gold standard)"}
    checked = f"T={s.temperatures_long} anneal" if gold == "ais" else None
    plot_contours(df, output / "evidence_contours.png", title, shown, gold,
                  checked_label=checked, unreliable_label=f"se > {se_max}: masked")  # fmt: skip
    if gold == "smc":  # AIS is compared with the gold standard too
        labels["ais"] = "AIS"
    gaps_title = title.replace("log evidence", "log evidence gaps (nats)")
    note = f"\n(*: T={s.temperatures_long} anneal; grey: se > {se_max})"
    if gold == "smc":
        note = f"\n(grey: SMC se > {se_max} or AIS se > {s.se_max}: value in brackets)"
    plot_gaps(df, output / "evidence_gaps.png", gaps_title, labels, gold, note=note)
    summary = summarise(df, gold)
    summary.to_csv(output / "summary.csv", index=False)
    info_path = output / "run_info.json"
    info = json.loads(info_path.read_text()) if info_path.exists() else {}
    if summary_run.done == summary_run.total or "wall_seconds" not in info:
        info["wall_seconds"] = wall  # the run that computed the grid
    info.update(
        last_run_wall_seconds=wall, last_run_computed=summary_run.done, jobs=summary_run.total
    )
    info["task_seconds"] = df.groupby("method").seconds.sum().round(1).to_dict()
    info["check_ais_seconds"] = round(float(check.ais_long_seconds.sum()), 1) if len(check) else 0
    info_path.write_text(json.dumps(info, indent=1))
    write_readme(output, df, summary, check, info, s, study)
    print(summary.to_string())


# --------------------------------------------------------------------------- summary
def summarise(df: pd.DataFrame, gold: str) -> pd.DataFrame:
    """Per data set: gaps to the gold standard over its reliable grid points, argmaxes,
    its se; with SMC the gold standard, AIS's agreement with it."""
    out = []
    for name in dict.fromkeys(df.dataset):
        le, ls, ref = surface(df, name, gold)
        se = surface(df, name, gold, "se")[2]
        ok = surface(df, name, gold, "converged")[2].astype(bool)
        row: dict[str, Any] = {"dataset": name, "gold_reliable": int(ok.sum()), "points": ok.size}
        k_ref = np.unravel_index(np.argmax(np.where(ok, ref, -np.inf)), ref.shape)
        for method in ("gold", *present(df)):
            Z = ref if method == "gold" else surface(df, name, method)[2]
            k = k_ref if method == "gold" else np.unravel_index(np.argmax(Z), Z.shape)
            row[f"{method}_argmax"] = (float(le[k[1]]), float(ls[k[0]]))
            row[f"{method}_max"] = float(Z[k])
            if method != "gold":
                gap = np.where(ok, Z - ref, np.nan)
                kk = np.unravel_index(np.nanargmax(np.abs(gap)), gap.shape)
                row[f"{method}_max_abs_gap"] = float(np.abs(gap[kk]))
                row[f"{method}_max_abs_gap_at"] = (float(le[kk[1]]), float(ls[kk[0]]))
                row[f"{method}_gap_min"] = float(np.nanmin(gap))
                row[f"{method}_gap_max"] = float(np.nanmax(gap))
                row[f"{method}_gap_at_gold_argmax"] = float(Z[k_ref] - ref[k_ref])
        tight = ok & (se <= SE_TIGHT)
        row["tight_points"] = int(tight.sum())
        for method in present(df):
            gap = np.where(tight, surface(df, name, method)[2] - ref, np.nan)
            kk = np.unravel_index(np.nanargmax(np.abs(gap)), gap.shape)
            row[f"{method}_max_abs_gap_tight"] = float(np.abs(gap[kk]))
            row[f"{method}_gap_tight_at"] = (float(le[kk[1]]), float(ls[kk[0]]))
        row["gold_se_median"] = float(np.median(se[ok]))
        row["gold_se_max"] = float(se[ok].max())
        if gold == "smc":  # the second estimator against the first
            ais, ais_se = surface(df, name, "ais")[2], surface(df, name, "ais", "se")[2]
            z = (ais - ref) / np.hypot(ais_se, se)
            healthy = ok & (ais_se <= SE_TIGHT)
            row["ais_healthy"] = int(healthy.sum())
            row["ais_agree"] = int((healthy & (np.abs(z) <= 3)).sum())
            row["ais_z_max_healthy"] = float(np.abs(z[healthy]).max()) if healthy.any() else np.nan
            row["ais_gap_min"] = float(np.min(np.where(ok, ais - ref, np.inf)))
        out.append(row)
    return pd.DataFrame(out)


def _check_sentence(check: pd.DataFrame, s: Settings) -> str:
    if not len(check):
        return "No point needed it."
    degenerate = check.ais_se > s.se_max
    d, o = check[degenerate], check[~degenerate]
    rescued = (d.ais_long_se <= s.se_max).sum()
    text = (
        f"{len(d)} degenerate points: the longer anneal brought {rescued} below se {s.se_max}, "
        f"raising the estimate by {np.median(d.ais_long - d.ais):.1f} nats (median; "
        f"max {np.max(d.ais_long - d.ais):.1f}). "
    )
    if len(o):
        moved = o.ais_long - o.ais
        towards_ep = np.abs(o.ais_long - o.ep) < np.abs(o.ais - o.ep) / 2
        text += (
            f"{len(o)} points where a non-degenerate AIS disagreed with EP: at "
            f"{int(towards_ep.sum())} the longer anneal closed more than half the gap "
            f"(AIS had failed quietly: its se was under {s.se_max} but wrong), at "
            f"{int((~towards_ep).sum())} it confirmed the T = {s.temperatures} value "
            f"(change {moved[~towards_ep].abs().max() if (~towards_ep).any() else 0:.2f} "
            "nats at most), so there EP's error is real."
        )
    return text


def _finding(output: Path) -> str:
    """The written finding, ``output/FINDING.md``: a person's reading of the numbers above
    (committed with the results; write it anew when the numbers change)."""
    path = output / "FINDING.md"
    if path.exists():
        return path.read_text().strip()
    return "(Not written yet: read the tables and figures, and write FINDING.md here.)"


def _table(header: list[str], rows: list[list]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(str(c) for c in row) + " |" for row in rows),
    ]


def _counts(flagged: pd.DataFrame) -> str:
    values = sorted(set(flagged.log_sf))
    counts = flagged.groupby("log_sf").size().tolist()
    return f"{', '.join(f'{v:.2f}' for v in values)} (counts {', '.join(map(str, counts))})"


def write_index(output: Path) -> None:
    """``output/README.md``: what the two grids are, and where each one's page is."""
    lines = [
        "# Evidence over a hyperparameter grid: Laplace, EP, KL, VB against a gold standard",
        "",
        "Kuss and Rasmussen (2005, Fig. 4) and Nickisch and Rasmussen (2008, Fig. 7) on six "
        "benchmarks, for two likelihoods (VB's Jaakkola-Jordan bound exists for the logistic "
        "only):",
        "",
        *(f"- [{lik}]({lik}/README.md): `studies/{path.name}`" for lik, path in STUDIES.items()),
        "",
        "Both run with `gpc-compare run studies/approximations_grid.py`.",
        "",
    ]
    (output / "README.md").write_text("\n".join(lines))


def _pt(p: tuple[float, float]) -> str:
    return f"({p[0]:.2f}, {p[1]:.2f})"


def _gold_paragraphs(s: Settings, check: pd.DataFrame, ais_rows: pd.DataFrame) -> list[str]:
    """What the gold standard is, and what AIS's check found."""
    ais = (
        f"annealed from EP's approximation with T = {s.temperatures} linear temperatures and "
        f"R = {s.runs} runs, K with the MCMC engine's jitter. An estimate whose reported "
        f"standard error exceeds {s.se_max} nats is called degenerate: one run carries nearly "
        "all the weight, the se saturates near 1 and, since AIS is unbiased for Z and not for "
        "log Z, the estimate is biased low. Where AIS was degenerate, or where it and EP "
        f"differed by more than {s.z:g} se and more than {s.nats} nats, the job annealed again "
        f"with T = {s.temperatures_long} (`ais_check.csv`), and that longer anneal is AIS's "
        "estimate at those points."
    )
    check_text = f"**AIS's check ({len(check)} points).** " + _check_sentence(check, s)
    if s.gold == "ais":
        return [f"**The gold standard: AIS**, {ais} Points still degenerate after it are "
                "masked and left out.", "", check_text, ""]  # fmt: skip
    o = s.smc
    return [
        "**The gold standard: SMC** (`gc.evidence.estimate`, `[evidence.smc]`): sequential "
        "Monte Carlo from EP's approximation along tempered posteriors whose temperatures "
        f"are chosen adaptively, each step keeping the conditional ESS at {o['cess']} of the "
        "particles (Del Moral, Doucet and Jasra 2006; Zhou, Johansen and Aston 2016), moved by "
        "elliptical slice sampling about EP's approximation (Murray, Adams and MacKay 2010; "
        f"Nishihara, Murray and Adams 2014), {o['runs']} independent runs of {o['particles']} "
        f"particles for the standard error. Where its se exceeds {o['se_max']} the job "
        f"estimates again with {o['recheck_runs']} runs (that estimate is final); a point is "
        f"reliable where the final se <= {o['se_max']}, the others are masked and left out.",
        "",
        f"**The second estimator: AIS**, {ais} It is degenerate (se > {s.se_max}) at "
        f"{int((~ais_rows.converged.astype(bool)).sum())} of {len(ais_rows)} points after "
        "that; `evidence_gaps.png`'s last column and the table below compare it with SMC.",
        "",
        check_text,
        "",
    ]


def write_readme(
    output: Path,
    df: pd.DataFrame,
    summary: pd.DataFrame,
    check: pd.DataFrame,
    info: dict,
    s: Settings,
    study: Path,
) -> None:
    """README.md: set-up, the numbers per data set, the verdict, how to regenerate."""
    cpu = info["task_seconds"]
    gold, G = s.gold, GOLD[s.gold]
    ref = df[df.method == gold]
    methods = present(df)
    names = {m: APPROXIMATIONS[m].removesuffix(" (bound)") for m in methods}
    described = {
        "laplace": "Laplace (R&W eq. 3.32)",
        "ep": "EP (parallel schedule, R&W eq. 3.65)",
        "kl": "the KL lower bound (Opper and Archambeau 2009)",
        "vb": "the VB (Jaakkola-Jordan) lower bound",
    }
    estimators = "`[evidence.smc]` and `[evidence.ais]` estimators" if gold == "smc" else (
        "an `[evidence.ais]` estimator")  # fmt: skip
    se_max = s.smc["se_max"] if gold == "smc" else s.se_max
    lines = [
        f"# {' and '.join(names.values())} evidence against {G} over a hyperparameter grid "
        f"({s.likelihood})",
        "",
        "The evidence part of Kuss and Rasmussen (2005, Fig. 4) and Nickisch and Rasmussen "
        f"(2008, Fig. 7): log p(y | X, theta) of a {s.likelihood} GP classifier with an "
        "isotropic squared-exponential kernel and zero mean, by "
        + ", ".join(described[m] for m in methods)
        + f" and a gold standard ({G} from EP's approximation"
        + (", with AIS as a second, independent estimator)" if gold == "smc" else ")")
        + f", over a {s.grid_size} grid of log length-scale in "
        f"[{s.log_ell[0]:g}, {s.log_ell[-1]:g}] and log sigma_f in [{s.log_sf[0]:g}, "
        f"{s.log_sf[-1]:g}]. The study runs through the study runner "
        f'(`studies/{study.name}`: `policy = "grid"`, `splits.kind = "none"`, {estimators}); '
        "this page and its figures come from `studies/approximations_grid.py`.",
        "",
        f"**Data.** Each data set is the runner's stratified subsample of at most {s.n_max} "
        "cases (`subsample`, seeded by the study seed; crabs is used whole), inputs standardised "
        "on it (digits' constant pixels are centred and left at zero). The grid is K&R's range "
        "for standardised inputs for every data set: for d = 60 / 64 (sonar, digits) the "
        "typical distance between standardised points is about sqrt(2d) ~ 11, so log ell = 0 "
        "makes K nearly diagonal and the informative length-scales (log ell ~ 1.5-4) lie inside "
        "the range; it was not changed.",
        "",
        *_gold_paragraphs(s, check, df[df.method == "ais"]),
        "## Numbers",
        "",
        f"Gaps are in nats (log evidence, not per case), over the grid points where {G} is "
        "reliable; positions are (log ell, log sigma_f).",
        "",
        *_table(
            ["data set", "n", "d", f"{G} reliable", f"{G} se median / max"]
            + [
                h
                for m in methods
                for h in (f"max abs({names[m]} - {G}) at", f"{names[m]} - {G} range")
            ],
            [
                [
                    r.dataset,
                    *df[df.dataset == r.dataset][["n", "d"]].iloc[0].tolist(),
                    f"{r.gold_reliable}/{r.points}",
                    f"{r.gold_se_median:.3f} / {r.gold_se_max:.3f}",
                ]
                + [
                    c
                    for m in methods
                    for c in (
                        f"{r[f'{m}_max_abs_gap']:.2f} at {_pt(r[f'{m}_max_abs_gap_at'])}",
                        f"[{r[f'{m}_gap_min']:.2f}, {r[f'{m}_gap_max']:.2f}]",
                    )
                ]
                for _, r in summary.iterrows()
            ],
        ),  # fmt: skip
        "",
        f"The same over the points where {G}'s se <= {SE_TIGHT} (tightly determined):",
        "",
        *_table(
            ["data set", "points"] + [f"max abs({names[m]} - {G}) at" for m in methods],
            [
                [r.dataset, r.tight_points]
                + [
                    f"{r[f'{m}_max_abs_gap_tight']:.2f} at {_pt(r[f'{m}_gap_tight_at'])}"
                    for m in methods
                ]
                for _, r in summary.iterrows()
            ],
        ),  # fmt: skip
        "",
        f"Maxima of each surface (log evidence; {G} over its reliable points) and each "
        f"approximation's error at {G}'s maximum:",
        "",
        *_table(
            ["data set", f"{G} argmax (max)"]
            + [f"{names[m]} argmax (max)" for m in methods]
            + [f"{names[m]} - {G} at {G} argmax" for m in methods],
            [
                [r.dataset, f"{_pt(r.gold_argmax)} ({r.gold_max:.2f})"]
                + [f"{_pt(r[f'{m}_argmax'])} ({r[f'{m}_max']:.2f})" for m in methods]
                + [f"{r[f'{m}_gap_at_gold_argmax']:.2f}" for m in methods]
                for _, r in summary.iterrows()
            ],
        ),  # fmt: skip
        "",
        *(_ais_against_smc(summary) if gold == "smc" else []),
        f"{G} not reliable (se > {se_max}) at {int((~ref.converged.astype(bool)).sum())} of "
        f"{len(ref)} points"
        + (
            f"; their log sigma_f: {_counts(ref[~ref.converged.astype(bool)])}"
            if (~ref.converged.astype(bool)).any()
            else ""
        )
        + ". Not converged: "
        + ", ".join(
            f"{names[m]} at {int((~df[df.method == m].converged.astype(bool)).sum())} points"
            for m in methods
        )
        + ".",  # fmt: skip
        "",
        "## Finding",
        "",
        _finding(output),
        "",
        "## Files",
        "",
        f"- `grid.csv`: one row per data set, grid point and method ({', '.join(methods)}, "
        f"{', '.join(g for g in GOLD if g in set(df.method))}): log_evidence (AIS: the longer "
        "anneal where one was made), se (the estimators'), seconds, converged (an estimator: "
        "its se within its threshold), checked (AIS annealed again), warnings.",
        f"- `ais_check.csv`: the points AIS annealed again: EP, AIS at T = {s.temperatures} and "
        f"at T = {s.temperatures_long} with standard errors and times, and why.",
        "- `summary.csv`: the numbers above, one row per data set.",
        f"- `evidence_contours.png`: log evidence / n, {' | '.join(names.values())} | {G}, the "
        "same contour levels within a row (dense near the maximum), the maximum crossed; in "
        f"the {G} column circles mark the points masked (se > {se_max}).",
        f"- `evidence_gaps.png`: {', '.join(f'{v} - {G}' for v in names.values())}"
        + (", AIS - SMC" if gold == "smc" else "")
        + " in nats at each grid point (diverging colours centred at 0, one colour scale per "
        "panel; grey: the gold standard, or AIS in its column, not reliable, the value in "
        "brackets).",
        "- `results.csv`, `jobs.csv`, `jobs/`: the study runner's tidy table, job list and "
        "job records (the table rebuilds from the records).",
        "",
        "## Reproduce",
        "",
        "From the repository root: `gpc-compare run studies/approximations_grid.py` (the study "
        "runner's jobs, then these figures and this page; `gpc-compare run "
        f"studies/{study.name}` runs the jobs alone). The jobs run on local worker "
        "processes with one BLAS thread each and are written as they finish, so a killed run "
        "resumes and a rerun only redraws. Summed job times (one core each): "
        + ", ".join(
            f"{(APPROXIMATIONS | GOLD)[m].removesuffix(' (bound)')} {cpu[m]:.0f} s" for m in cpu
        )  # fmt: skip
        + f" (of AIS's, {len(check)} longer anneals {info['check_ais_seconds']:.0f} s).",
        "",
        f"Versions: {versions_text()}. Seeds: the study seed {s.seed}, from which the runner "
        "derives each subsample's and each job's (AIS: `[job seed, T]`).",
        "",
    ]
    (output / "README.md").write_text("\n".join(lines))


def _ais_against_smc(summary: pd.DataFrame) -> list[str]:
    """AIS, the second estimator, against SMC: agreement where AIS is healthy."""
    return [
        f"AIS against SMC (z = the difference over the combined standard error; healthy = "
        f"AIS se <= {SE_TIGHT} at a reliable SMC point):",
        "",
        *_table(
            [
                "data set",
                "AIS healthy",
                "within 3 combined se",
                "max abs z there",
                "AIS - SMC lowest (any se)",
            ],
            [
                [
                    r.dataset,
                    r.ais_healthy,
                    r.ais_agree,
                    f"{r.ais_z_max_healthy:.1f}",
                    f"{r.ais_gap_min:.1f}",
                ]
                for _, r in summary.iterrows()
            ],
        ),  # fmt: skip
        "",
    ]


if __name__ == "__main__":
    run(Path(__file__).resolve().parent.parent / "results" / "approximations_grid")
