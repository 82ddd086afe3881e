"""What the report says of what did not go as asked: fits that did not converge, engines
absent from the comparison with the reference (and why), and what to do about sampled
fits that failed their diagnostics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..engines.kl_softmax import BROKEN_DOWN, OPTIMISM_SE
from ..study.table import convergence_warnings, same_hyperparameters
from .formatting import fmt, markdown_table
from .styles import style

#: The report's :class:`~gpc_compare.report.markdown.Study` (which imports this module).
Study = Any

__all__ = ["absent_from_reference", "mcmc_advice", "monte_carlo_bounds", "not_converged"]


def not_converged(study: Study) -> list[str]:
    """``## Fits that did not converge``: every engine job (not a sampler's: the MCMC
    section has those) whose ``converged`` is False in the table, with its warnings."""
    rows = []
    for r in study.records:
        if r.evidence is not None or r.diagnostics is not None or r.convergence is None:
            continue
        said = convergence_warnings(r)
        if r.convergence.converged and not said:
            continue
        why = _first(said) or "the engine's own convergence test failed (no warning)"
        rows.append((r.dataset, r.split, r.engine, why))
    if not rows:
        return []
    engines = sorted({row[2] for row in rows})
    config = getattr(study, "config", None)
    searched = getattr(config, "policy", "optimize") not in ("fixed", "grid")
    lines = [
        "## Fits that did not converge",
        "",
        f"{len(rows)} job(s) (`converged` is False in `results.csv`): a fit of the job"
        + (", its last or one made during the hyperparameter search," if searched else "")
        + " stopped short of its tolerance, so its numbers"
        + (" (and the hyperparameters the search selected)" if searched else "")
        + " may be off.",
        "",
    ]
    for dataset, split, engine, why in sorted(rows):
        lines.append(f"- {dataset} split {split} {style(engine)[2]}: {why}")
    options = " ".join(f"--engine-option {e}.max_iter=N" for e in engines)
    lines += [
        "",
        "To do: give the engine more iterations (`max_iter`: on the command line "
        f"`{options}`, in the study file `[engines.NAME] max_iter = N`; "
        "`gpc-compare list engines` shows each engine's options and defaults), then rerun: "
        "the changed jobs are run again, the others kept.",
        "",
    ]
    return lines


def monte_carlo_bounds(study: Study) -> list[str]:
    """``## Monte Carlo bounds``: where an engine's bound is a Monte Carlo estimate
    maximised on its own draws (the softmax KL's), the bound less the same q's bound
    re-estimated on independent draws (the record's ``log_evidence_held_out``), per data
    set and engine; nothing when no record holds a re-estimate."""
    groups: dict[tuple[str, str], list] = {}
    for r in study.records:
        if _finite(r.extra.get("log_evidence_held_out")) and _finite(r.log_evidence):
            groups.setdefault((r.dataset, r.engine), []).append(r)
    if not groups:
        return []
    rows = [
        _bound_row(dataset, engine, recs) for (dataset, engine), recs in _ordered(study, groups)
    ]
    above = f"above {OPTIMISM_SE:g} se"
    header = ["data set", "engine", "jobs", "mean excess", "largest", "largest in se", above]
    header.append("broken down")
    engines = {engine for _, engine in groups}
    before = {  # (a Monte Carlo bound, its se nonzero, with no re-estimate)
        r.dataset
        for r in study.records
        if r.engine in engines
        and _finite(r.log_evidence_se)
        and r.log_evidence_se > 0
        and not _finite(r.extra.get("log_evidence_held_out"))
    }
    unchecked = [d for d in study.datasets if d in before]
    return [
        "## Monte Carlo bounds",
        "",
        "A bound estimated on fixed Monte Carlo draws and maximised on them is optimistic: q "
        "adapts to the draws (a sample average approximation's optimism; Mak, Morton and "
        "Wood 1999). Each fit re-estimates its bound at its q on independent draws. *Excess*: "
        "the bound on its own draws less that re-estimate, in nats per fit (mean over the "
        "jobs, and the largest); *largest in se*: the largest in combined standard errors "
        f"(the two estimates'); *{above}*: the fits the engine warned of. Where q has "
        "adapted far, both standard errors grow with the excess, so a large excess in nats "
        "says more than its count of standard errors; *broken down*: the fits whose "
        "estimated expected log likelihood was positive, which no likelihood allows (their "
        "bound means nothing, whatever its standard error). Distrust the bound there, and "
        "raise `n_samples`.",
        "",
        *markdown_table(header, rows),
        "",
        *(
            [
                f"Jobs of these engines on {', '.join(unchecked)} were written before the "
                "check and hold no re-estimate.",
                "",
            ]
            if unchecked
            else []
        ),
    ]


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and bool(np.isfinite(x))


def _or_nan(x: Any) -> float:
    return float(x) if _finite(x) else np.nan


def _ordered(study: Study, groups: dict) -> list:
    """The groups in the study's order of data sets, then engines."""

    def rank(key: tuple[str, str]) -> tuple[int, int]:
        order = list(study.datasets), list(study.engines)
        return tuple(o.index(k) if k in o else len(o) for o, k in zip(order, key, strict=True))

    return sorted(groups.items(), key=lambda item: rank(item[0]))


def _bound_row(dataset: str, engine: str, recs: Sequence) -> list:
    """One row of the Monte Carlo bounds table."""
    held_out = np.array([r.extra["log_evidence_held_out"] for r in recs], dtype=float)
    excess = np.array([r.log_evidence for r in recs], dtype=float) - held_out
    se = np.hypot(
        [_or_nan(r.log_evidence_se) for r in recs],
        [_or_nan(r.extra.get("log_evidence_held_out_se")) for r in recs],
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        in_se = excess / se  # (se 0: inf for an excess, nan for none; se unknown: nan)
    in_se[(se == 0) & (excess <= 0)] = np.nan
    flagged = int(np.sum(in_se > OPTIMISM_SE))
    broken = sum(
        any(w.startswith(f"RuntimeWarning: {BROKEN_DOWN}") for w in r.warnings) for r in recs
    )
    largest_se = float(np.nanmax(in_se)) if not np.all(np.isnan(in_se)) else None
    return [
        dataset,
        style(engine)[2],
        len(recs),
        fmt(float(excess.mean()), 3),
        fmt(float(excess.max()), 3),
        fmt(largest_se, 1),
        flagged,
        broken,
    ]


def absent_from_reference(study: Study, shown: Sequence[str]) -> list[str]:
    """Why each engine of the study is missing from ``## Against the reference``: the
    comparison needs the reference's hyperparameters on the same split."""
    reference = study.config.reference
    lines = []
    for engine in study.engines:
        if engine == reference or engine in shown:
            continue
        lines.append(f"- {style(engine)[2]} is not in this table: {_why_absent(study, engine)}")
    return [*lines, ""] if lines else []


def _why_absent(study: Study, engine: str) -> str:
    """The reason one engine has no comparison with the reference."""
    reference = study.config.reference
    mine = [r for r in study.records if r.engine == engine and r.evidence is None]
    theirs = {(r.dataset, r.kernel, r.split): r for r in study.records if r.engine == reference}
    if not mine:
        return "none of its jobs finished."
    pairs = [(r, theirs.get((r.dataset, r.kernel, r.split))) for r in mine]
    pairs = [(r, ref) for r, ref in pairs if ref is not None]
    if not pairs:
        return f"no job of the reference ({reference}) finished on its splits."
    if not any(same_hyperparameters(r, ref, rtol=0.0, atol=1e-10) for r, ref in pairs):
        own = _origin(pairs[0][0].hyperparameters.origin, engine)
        ref = _origin(pairs[0][1].hyperparameters.origin, reference)
        return (
            f"it ran at {own}, the reference at {ref} (policy `{study.config.policy}`), and "
            "the approximations are compared with the reference only at the same "
            "hyperparameters. Policy `shared` (`--policy shared`, or `[hyperparameters] "
            'policy = "shared"`) runs every engine at the source\'s values, so every '
            "engine is compared."
        )
    return "it records none of the quantities compared (latent moments, evidence)."


def _origin(origin: str, engine: str) -> str:
    """Where a job's hyperparameters came from, in words."""
    if origin == "own":
        return f"the values {engine} selected itself (its own evidence maximised)"
    if origin in ("fixed", "grid"):
        return f"the {origin} values"
    return f"the values {origin} selected"


def mcmc_advice(study: Study) -> list[str]:
    """What to do when sampled fits failed their diagnostics (R-hat, ESS, divergences)."""
    diag = [r for r in study.records if r.diagnostics is not None]
    failed = [r for r in diag if not r.diagnostics.passed]
    if not failed:
        return []
    engines = sorted({r.engine for r in failed})
    draws = max(_setting(r, "draws") for r in failed)
    tune = max(_setting(r, "tune") for r in failed)
    flags = " ".join(
        f"--engine-option {e}.draws={2 * draws} --engine-option {e}.tune={2 * tune}"
        for e in engines
    )
    return [
        f"**{len(failed)} of {len(diag)} sampled fits failed their diagnostics** (R-hat "
        "above `rhat_max`, an ESS below `ess_min`, or divergences): the reference is less "
        "certain there, and differences from it on those splits partly its error. To do: "
        f"sample longer, e.g. `{flags}` on the command line (in the study file "
        f"`[engines.{engines[0]}] draws = {2 * draws}`, `tune = {2 * tune}`), then rerun: "
        "the jobs whose options changed are run again. Divergences call for "
        "`target_accept = 0.95` rather than more draws.",
        "",
    ]


def _setting(rec, name: str) -> int:
    """A sampled fit's ``draws`` or ``tune``: as its diagnostics record it, else its
    options, else the engine's default (1000)."""
    value = rec.diagnostics.extra.get(name) or rec.options.get(name) or 1000
    return int(value)


def _first(warnings: Sequence[str]) -> str:
    """The first warning in full, and how many more there were (a search warns once per
    fit that stopped short: tens of lines alike)."""
    if not warnings:
        return ""
    more = len(warnings) - 1
    return warnings[0] + (f" (and {more} more such warning(s) in `jobs.csv`)" if more else "")
