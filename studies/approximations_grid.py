"""Laplace and EP evidence against an AIS gold standard over a hyperparameter grid.

Reproduces the evidence part of Kuss and Rasmussen (2005, JMLR 6, Fig. 4) and Nickisch and
Rasmussen (2008, JMLR 9, Fig. 7). The computation is a study of the study runner,
``studies/approximations_grid.toml``: every engine at every point of a grid of (log
length-scale, log variance) (``policy = "grid"``), on all cases of each data set's subsample
(``splits.kind = "none"``), and an AIS evidence estimator (``[evidence.ais]``) annealed from
EP's approximation, which anneals again with more temperatures where its first estimate is
degenerate or disagrees with EP. This script runs that study (resuming from its job records)
and draws what is specific to it: contour plots of the three evidence surfaces, maps of the
approximations' gaps to AIS, a per-data-set summary and the README with the finding.

Writes to ``results/approximations_grid/``: the runner's ``results.csv``, ``jobs.csv`` and
``jobs/``; ``grid.csv`` (tidy: one row per data set, grid point and method), ``ais_check.csv``
(the points annealed again), ``summary.csv``, ``run_info.json`` (times),
``evidence_contours.png``, ``evidence_gaps.png`` and ``README.md``.

Run from the repository root: ``gpc-compare run studies/approximations_grid.py`` (882 jobs,
about 17 minutes on 2 cores).
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
from gpc_compare.study import StudyConfig, expand, load_records, load_study, run_study

#: The two grids, by likelihood: each a study file and a subdirectory of the output. VB
#: (the Jaakkola-Jordan bound) exists for the logistic likelihood only.
STUDIES = {
    "probit": Path(__file__).with_suffix(".toml"),
    "logistic": Path(__file__).with_name("approximations_grid_logistic.toml"),
}
WORKERS = 2
#: The approximations a grid may hold, in the order shown, and the gold standard.
APPROXIMATIONS = {"laplace": "Laplace", "ep": "EP", "kl": "KL (bound)", "vb": "VB (bound)"}
GOLD = {"ais": "AIS (gold standard)"}
#: AIS estimates with se below this are the tightly determined ones (a second summary)
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


def settings(config: StudyConfig) -> Settings:
    ais = config.evidence["ais"]
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
    )


# --------------------------------------------------------------------------- the runner's records
def frames(config: StudyConfig, result_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``grid.csv`` and ``ais_check.csv`` from the study's job records.

    grid: one row per data set, grid point and method (the engine or estimator label):
    log_evidence (for AIS the final, gold-standard estimate), se, seconds, converged (AIS:
    se <= se_max), checked (AIS annealed again), warnings. check: one row per point AIS
    annealed again, with EP, both anneals and the reason.
    """
    records = load_records(result_dir)
    rows, checks = [], []
    for job in expand(config):
        rec = records[job.id]
        point = job.hyperparameters
        where = {
            "dataset": job.dataset.label,
            "n": rec["n_train"],
            "d": rec["d"],
            "log_lengthscale": point["log_lengthscale"],
            "log_sf": point["log_variance"] / 2.0,
        }
        evidence = rec.get("evidence")
        rows.append(
            {
                **where,
                "method": job.engine,
                "log_evidence": rec["log_evidence"],
                "se": np.nan if rec["log_evidence_se"] is None else rec["log_evidence_se"],
                "seconds": rec["timings"]["fit_seconds"],
                "converged": bool(rec["convergence"]["converged"]),
                "checked": bool(evidence and evidence["recheck"]),
                "warnings": " | ".join(rec.get("warnings", [])),
            }
        )
        if evidence and evidence["recheck"]:
            first, long = evidence["runs"]
            checks.append(
                {
                    **where,
                    "ep": evidence["start_log_evidence"],
                    "ais": first["log_evidence"],
                    "ais_se": first["se"],
                    "ais_seconds": first["seconds"],
                    "ais_long": long["log_evidence"],
                    "ais_long_se": long["se"],
                    "ais_long_seconds": long["seconds"],
                    "temperatures": first["temperatures"],
                    "temperatures_long": long["temperatures"],
                    "reason": evidence["recheck"],
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
    title = (
        f"{s.likelihood.capitalize()} GPC, isotropic SE kernel: log evidence over a "
        f"{s.grid_size} grid\nstratified "
        f"subsample of <= {s.n_max} cases per data set, standardised inputs\nAIS from EP, "
        f"R={s.runs}, T={s.temperatures} (T={s.temperatures_long} where degenerate or off EP)"
    )
    plot_contours(df, output / "evidence_contours.png", title, s)
    gaps_title = title.replace("log evidence", "log evidence gaps (nats)")
    plot_gaps(df, output / "evidence_gaps.png", gaps_title, s)
    summary = summarise(df)
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


# --------------------------------------------------------------------------- figures
def _surface(df: pd.DataFrame, name: str, method: str, column: str = "log_evidence"):
    sub = df[(df.dataset == name) & (df.method == method)]
    tab = sub.pivot(index="log_sf", columns="log_lengthscale", values=column)
    return tab.columns.to_numpy(), tab.index.to_numpy(), tab.to_numpy()


def plot_contours(df: pd.DataFrame, path: Path, title: str, s: Settings) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import BoundaryNorm
    from matplotlib.figure import Figure

    names = list(dict.fromkeys(df.dataset))
    methods = present(df)
    labels = {**{m: APPROXIMATIONS[m] for m in methods}, **GOLD}
    fig = Figure(figsize=(4.3 * len(labels), 3.4 * len(names)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(names), len(labels), squeeze=False)
    checked_label = f"T={s.temperatures_long} anneal"
    for r, name in enumerate(names):
        n = int(df[df.dataset == name].n.iloc[0])
        surfaces = {m: _surface(df, name, m) for m in labels}
        _, _, ok = _surface(df, name, "ais", "converged")
        ok = ok.astype(bool)
        values = np.concatenate(
            [surfaces[m][2].ravel() / n for m in methods] + [surfaces["ais"][2][ok] / n]
        )
        # levels at depths 0.0025 * 2^k per case below the row's maximum (as K&R's plots,
        # dense near the top), one colour per band
        top = float(values.max())
        depths = 0.0025 * 2.0 ** np.arange(12)
        levels = np.sort(top - depths[top - depths > values.min() - 1e-12])
        levels = np.append(np.insert(levels, 0, values.min()), top)
        norm = BoundaryNorm(levels, 256)
        for c, method in enumerate(labels):
            ax = axes[r, c]
            le, ls, Z = surfaces[method]
            Z = Z / n
            if method == "ais":
                Z = np.ma.masked_array(Z, ~ok)
            cs = ax.contourf(le, ls, Z, levels=levels, cmap="viridis", norm=norm)
            ax.contour(le, ls, Z, levels=levels, colors="k", linewidths=0.4)
            k = np.unravel_index(np.ma.argmax(Z), Z.shape)
            ax.plot(le[k[1]], ls[k[0]], "x", color="red", ms=12, mew=3)
            if method == "ais":
                checked = _surface(df, name, "ais", "checked")[2].astype(bool)
                jj, ii = np.nonzero(checked & ok)
                ax.plot(le[ii], ls[jj], ".", color="white", mec="k", ms=7, label=checked_label)
                jj, ii = np.nonzero(~ok)
                ax.plot(le[ii], ls[jj], "o", mfc="none", mec="0.3", ms=7,
                        label=f"se > {s.se_max} still: masked")  # fmt: skip
                ax.legend(loc="lower right", fontsize=7, framealpha=0.8)
            ax.set_title(
                f"{name} (n={n}): {labels[method]}\nmax {Z.max():.3f} at "
                f"({le[k[1]]:.2f}, {ls[k[0]]:.2f})",
                fontsize=10,
            )
            ax.set_xlabel("log length-scale")
            ax.set_ylabel("log sigma_f")
        cb = fig.colorbar(cs, ax=axes[r, :], shrink=0.95, label="log evidence / n")
        cb.set_ticks(levels)
        cb.set_ticklabels([f"{v:.3f}" for v in levels], fontsize=7)
    fig.suptitle(title, fontsize=12)
    fig.savefig(path, dpi=90)


def plot_gaps(df: pd.DataFrame, path: Path, title: str, s: Settings) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.figure import Figure

    names = list(dict.fromkeys(df.dataset))
    methods = present(df)
    fig = Figure(figsize=(6.0 * len(methods), 3.6 * len(names)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(names), len(methods), squeeze=False)
    for r, name in enumerate(names):
        le, ls, Zais = _surface(df, name, "ais")
        ok = _surface(df, name, "ais", "converged")[2].astype(bool)
        checked = _surface(df, name, "ais", "checked")[2].astype(bool)
        for c, method in enumerate(methods):
            ax = axes[r, c]
            gap = np.ma.masked_array(_surface(df, name, method)[2] - Zais, ~ok)
            vmax = max(float(np.abs(gap).max()) if gap.count() else 1.0, 1e-3)
            mesh = ax.pcolormesh(
                le, ls, gap, cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -vmax, vmax), shading="nearest"
            )
            ax.set_facecolor("0.85")
            for j in range(len(ls)):
                for i in range(len(le)):
                    v = float(gap.data[j, i])
                    text = "n/a" if not ok[j, i] else f"{v:.2f}" if abs(v) < 10 else f"{v:.0f}"
                    text += "*" if checked[j, i] and ok[j, i] else ""
                    dark = ok[j, i] and abs(v) > 0.6 * vmax
                    ax.text(le[i], ls[j], text, ha="center", va="center", fontsize=7,
                            color="white" if dark else "black")  # fmt: skip
            fig.colorbar(mesh, ax=ax, label="nats")
            label = APPROXIMATIONS[method].removesuffix(" (bound)")
            ax.set_title(
                f"{name}: {label} - AIS\n(*: AIS T={s.temperatures_long}; "
                f"grey: AIS se > {s.se_max})",
                fontsize=10,
            )
            ax.set_xlabel("log length-scale")
            ax.set_ylabel("log sigma_f")
    fig.suptitle(title, fontsize=12)
    fig.savefig(path, dpi=90)


# --------------------------------------------------------------------------- summary
def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Per data set: gaps to AIS over the reliable grid points, argmaxes, AIS se."""
    out = []
    for name in dict.fromkeys(df.dataset):
        le, ls, ais = _surface(df, name, "ais")
        se = _surface(df, name, "ais", "se")[2]
        ok = _surface(df, name, "ais", "converged")[2].astype(bool)
        row: dict[str, Any] = {"dataset": name, "ais_reliable": int(ok.sum()), "points": ok.size}
        k_ais = np.unravel_index(np.argmax(np.where(ok, ais, -np.inf)), ais.shape)
        for method in ("ais", *present(df)):
            Z = _surface(df, name, method)[2]
            k = k_ais if method == "ais" else np.unravel_index(np.argmax(Z), Z.shape)
            row[f"{method}_argmax"] = (float(le[k[1]]), float(ls[k[0]]))
            row[f"{method}_max"] = float(Z[k])
            if method != "ais":
                gap = np.where(ok, Z - ais, np.nan)
                kk = np.unravel_index(np.nanargmax(np.abs(gap)), gap.shape)
                row[f"{method}_max_abs_gap"] = float(np.abs(gap[kk]))
                row[f"{method}_gap_at_max"] = float(gap[kk])
                row[f"{method}_max_abs_gap_at"] = (float(le[kk[1]]), float(ls[kk[0]]))
                row[f"{method}_gap_min"] = float(np.nanmin(gap))
                row[f"{method}_gap_max"] = float(np.nanmax(gap))
                row[f"{method}_gap_z_max"] = float(np.nanmax(np.abs(gap) / se))
                row[f"{method}_gap_at_ais_argmax"] = float(Z[k_ais] - ais[k_ais])
        tight = ok & (se <= SE_TIGHT)
        row["tight_points"] = int(tight.sum())
        for method in present(df):
            gap = np.where(tight, _surface(df, name, method)[2] - ais, np.nan)
            kk = np.unravel_index(np.nanargmax(np.abs(gap)), gap.shape)
            row[f"{method}_max_abs_gap_tight"] = float(np.abs(gap[kk]))
            row[f"{method}_gap_tight_at"] = (float(le[kk[1]]), float(ls[kk[0]]))
        row["ais_se_median"] = float(np.median(se[ok]))
        row["ais_se_max_reliable"] = float(se[ok].max())
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
        "# Evidence over a hyperparameter grid: Laplace, EP, KL, VB against AIS",
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
    ais = df[df.method == "ais"]
    methods = present(df)
    names = {m: APPROXIMATIONS[m].removesuffix(" (bound)") for m in methods}
    described = {
        "laplace": "Laplace (R&W eq. 3.32)",
        "ep": "EP (parallel schedule, R&W eq. 3.65)",
        "kl": "the KL lower bound (Opper and Archambeau 2009)",
        "vb": "the VB (Jaakkola-Jordan) lower bound",
    }
    lines = [
        f"# {' and '.join(names.values())} evidence against AIS over a hyperparameter grid "
        f"({s.likelihood})",
        "",
        "The evidence part of Kuss and Rasmussen (2005, Fig. 4) and Nickisch and Rasmussen "
        f"(2008, Fig. 7): log p(y | X, theta) of a {s.likelihood} GP classifier with an "
        "isotropic squared-exponential kernel and zero mean, by "
        + ", ".join(described[m] for m in methods)
        + " and annealed importance sampling started from EP's approximation (the gold "
        f"standard), over a {s.grid_size} grid of log length-scale in "
        f"[{s.log_ell[0]:g}, {s.log_ell[-1]:g}] and log sigma_f in [{s.log_sf[0]:g}, "
        f"{s.log_sf[-1]:g}]. The study runs through the study runner "
        f'(`studies/{study.name}`: `policy = "grid"`, `splits.kind = "none"`, an '
        "`[evidence.ais]` estimator); this page and its figures come from "
        "`studies/approximations_grid.py`.",
        "",
        f"**Data.** Each data set is the runner's stratified subsample of at most {s.n_max} "
        "cases (`subsample`, seeded by the study seed; crabs is used whole), inputs standardised "
        "on it (digits' constant pixels are centred and left at zero). The grid is K&R's range "
        "for standardised inputs for every data set: for d = 60 / 64 (sonar, digits) the "
        "typical distance between standardised points is about sqrt(2d) ~ 11, so log ell = 0 "
        "makes K nearly diagonal and the informative length-scales (log ell ~ 1.5-4) lie inside "
        "the range; it was not changed.",
        "",
        f"**AIS.** Annealed from EP's approximation with T = {s.temperatures} linear "
        f"temperatures and R = {s.runs} runs, K with the MCMC engine's jitter. An estimate whose "
        f"reported standard error exceeds {s.se_max} nats is called degenerate: one run carries "
        "nearly all the weight, the se saturates near 1 and, since AIS is unbiased for Z and "
        "not for log Z, the estimate is biased low. Where AIS was degenerate, or where it and "
        f"EP differed by more than {s.z:g} se and more than {s.nats} nats, the job annealed "
        f"again with T = {s.temperatures_long} (`ais_check.csv`), and that longer anneal is "
        "the gold standard at those points in `grid.csv`, the figures and every number below. "
        "Points still degenerate after it are masked and left out.",
        "",
        f"**The check ({len(check)} points).** " + _check_sentence(check, s),
        "",
        "## Numbers",
        "",
        "Gaps are in nats (log evidence, not per case), over the grid points where AIS is "
        "reliable; positions are (log ell, log sigma_f).",
        "",
        *_table(
            ["data set", "n", "d", "AIS reliable", "AIS se median / max"]
            + [
                h
                for m in methods
                for h in (f"max abs({names[m]} - AIS) at", f"{names[m]} - AIS range")
            ],
            [
                [
                    r.dataset,
                    *df[df.dataset == r.dataset][["n", "d"]].iloc[0].tolist(),
                    f"{r.ais_reliable}/{r.points}",
                    f"{r.ais_se_median:.3f} / {r.ais_se_max_reliable:.3f}",
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
        f"The same over the points where AIS's se <= {SE_TIGHT} (AIS tightly determined):",
        "",
        *_table(
            ["data set", "points"] + [f"max abs({names[m]} - AIS) at" for m in methods],
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
        "Maxima of each surface (log evidence; AIS over its reliable points) and each "
        "approximation's error at AIS's maximum:",
        "",
        *_table(
            ["data set", "AIS argmax (max)"]
            + [f"{names[m]} argmax (max)" for m in methods]
            + [f"{names[m]} - AIS at AIS argmax" for m in methods],
            [
                [r.dataset, f"{_pt(r.ais_argmax)} ({r.ais_max:.2f})"]
                + [f"{_pt(r[f'{m}_argmax'])} ({r[f'{m}_max']:.2f})" for m in methods]
                + [f"{r[f'{m}_gap_at_ais_argmax']:.2f}" for m in methods]
                for _, r in summary.iterrows()
            ],
        ),  # fmt: skip
        "",
        f"AIS still degenerate at {len(ais[~ais.converged.astype(bool)])} of {len(ais)} points; "
        "their log sigma_f: "
        + _counts(ais[~ais.converged.astype(bool)])
        + ". Not converged: "
        + ", ".join(
            f"{names[m]} at {int((~df[df.method == m].converged.astype(bool)).sum())} points"
            for m in methods
        )
        + ".",
        "",
        "## Finding",
        "",
        _finding(output),
        "",
        "## Files",
        "",
        f"- `grid.csv`: one row per data set, grid point and method ({', '.join(methods)}, ais): "
        "log_evidence (AIS: the gold standard, the longer anneal where one was made), se "
        f"(AIS), seconds, converged (AIS: se <= {s.se_max}), checked (AIS annealed again), "
        "warnings.",
        f"- `ais_check.csv`: the points annealed again: EP, AIS at T = {s.temperatures} and at "
        f"T = {s.temperatures_long} with standard errors and times, and why.",
        "- `summary.csv`: the numbers above, one row per data set.",
        f"- `evidence_contours.png`: log evidence / n, {' | '.join(names.values())} | AIS, "
        "the same contour "
        "levels within a row (dense near the maximum), the maximum crossed; in the AIS column "
        f"dots mark the T = {s.temperatures_long} estimates, circles the points still "
        "degenerate (masked).",
        f"- `evidence_gaps.png`: {', '.join(f'{v} - AIS' for v in names.values())} in nats "
        "at each grid point "
        "(diverging colours centred at 0, one colour scale per panel; * = AIS at T = "
        f"{s.temperatures_long}; grey = AIS still degenerate).",
        "- `results.csv`, `jobs.csv`, `jobs/`: the study runner's tidy table, job list and "
        "job records (the table rebuilds from the records).",
        "",
        "## Reproduce",
        "",
        "From the repository root: `gpc-compare run studies/approximations_grid.py` (the study "
        "runner's jobs, then these figures and this page; `gpc-compare run "
        "studies/approximations_grid.toml` runs the jobs alone). The jobs run on local worker "
        "processes with one BLAS thread each and are written as they finish, so a killed run "
        "resumes and a rerun only redraws. Full run "
        f"{info['wall_seconds'] / 60:.1f} min wall clock on 2 shared cores (summed job times "
        f"Laplace {cpu.get('laplace', 0):.0f} s, EP {cpu.get('ep', 0):.0f} s, AIS "
        f"{cpu.get('ais', 0):.0f} s, of which {len(check)} longer anneals "
        f"{info['check_ais_seconds']:.0f} s).",
        "",
        f"Versions: {versions_text()}. Seeds: the study seed {s.seed}, from which the runner "
        "derives each subsample's and each job's (AIS: `[job seed, T]`).",
        "",
    ]
    (output / "README.md").write_text("\n".join(lines))


if __name__ == "__main__":
    run(Path(__file__).resolve().parent.parent / "results" / "approximations_grid")
