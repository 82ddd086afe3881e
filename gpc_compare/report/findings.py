"""The report's findings: plain statements with numbers, generated from the summaries.

A difference is called a win only when its interval excludes zero; caveats that would
repeat for every data set are said once, after the list.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..metrics import A_BETTER, CANNOT_DECIDE, INDISTINGUISHABLE, against_reference
from ..study import JobRecord
from .cases import Paired
from .formatting import fmt, markdown_table, reference_estimator
from .styles import style
from .trust import recommendation

__all__ = [
    "bound_counts",
    "findings",
    "grid_findings",
    "reference_mcse",
    "selection_comparison",
]

#: Job records as :func:`gpc_compare.study.load_records` returns them.
Records = list[JobRecord]
_TIE_NOTE = (
    "A difference is called a win only when its 95% interval (in brackets) excludes zero: "
    "the corrected resampled t-interval over the splits (Nadeau and Bengio 2003), which "
    "allows for the training cases the splits share. With J splits it has J - 1 degrees "
    "of freedom, so one repeat of five folds gives wide intervals; `n_repeats` in the "
    "study's `[splits]` gives more."
)
_MCSE_NOTE = (
    "The reference's Monte Carlo error is twice the standard error of its mean log "
    "predictive over the splits, from the effective sample size of each test case's "
    "p(y* | f) over its draws (the delta method; Vehtari et al. 2021). A difference from "
    "the reference within it is not a difference this reference can resolve: where the "
    "interval excludes zero, the reference cannot decide (rerun it with more draws: its "
    "error falls as one over the square root of the draws)."
)
_BOUND_NOTE = (
    "A hyperparameter at its bound was stopped by the bound, not by the objective "
    "(which was still rising there): widen the bound in the study's `[kernel]` "
    "to see where it would go, or read the results as conditional on the bound."
)


def findings(
    summary: pd.DataFrame,
    table: pd.DataFrame,
    records: Records,
    datasets: Sequence[str],
    engines: Sequence[str],
    reference: str | None,
    paired: Paired,
) -> list[str]:
    """Plain statements with numbers, and the caveats they need said once at the end.

    A difference between engines is called a win only when its 95% interval (the
    corrected resampled t over the splits, ``paired``) excludes zero; otherwise the
    engines are said to be indistinguishable, with the difference and its interval.
    """
    say = _Findings(summary, paired, engines, reference)
    say.reference_mcse = reference_mcse(records, reference)
    lines = []
    for dataset in datasets:
        advice = recommendation(records, table, dataset, engines)
        parts = [
            *([f"**{advice}**"] if advice else []),
            *say.log_predictive(dataset),
            *say.error_rates(dataset),
            *say.reference_gaps(dataset, _estimator(records, dataset, reference)),
            *_diagnostics_finding(records, dataset),
            *say.evidence_z(dataset, _estimator(records, dataset, reference)),
        ]
        for text in _bound_findings(table, dataset, engines):
            parts.append(text)
            say.notes["bound"] = _BOUND_NOTE
        if parts:
            lines.append(f"- **{dataset}**: " + "; ".join(parts) + ".")
    if say.notes:
        lines += ["", *(f"Note: {text}" for text in say.notes.values())]
    return lines


class _Findings:
    """The statements of :func:`findings` about one data set at a time, and the caveats
    they need (``notes``, said once)."""

    def __init__(self, summary, paired: Paired, engines: Sequence[str], reference) -> None:
        self.summary, self.paired = summary, paired
        self.engines, self.reference = engines, reference
        self.notes: dict[str, str] = {}
        self.reference_mcse: dict[str, float] = {}

    def get(self, dataset: str, engine: str, metric: str):
        """The summary's row, or None."""
        s = self.summary
        s = s[(s.dataset == dataset) & (s.engine == engine) & (s.metric == metric)]
        return None if s.empty else s.iloc[0]

    def diff(self, dataset: str, a: str, b: str, metric: str, digits: int = 4) -> str:
        """The paired difference a - b with its interval, or "n/a"."""
        if (dataset, a, b, metric) not in self.paired:
            return "n/a"
        p = self.paired[(dataset, a, b, metric)]
        if not (np.isfinite(p.lower) and np.isfinite(p.upper)):  # (one split: none)
            return f"{fmt(p.mean, digits)} (no interval)"
        return f"{fmt(p.mean, digits)} [{fmt(p.lower, digits)}, {fmt(p.upper, digits)}]"

    def _wins(self, dataset: str, a: str, b: str, metric: str) -> bool:
        """Whether a's score is better than b's: the interval of a - b excludes zero."""
        p = self.paired.get((dataset, a, b, metric))
        return p is not None and p.verdict == A_BETTER

    def log_predictive(self, dataset: str) -> list[str]:
        """The best mean log predictive (or no win), each engine against the reference,
        and the engines without results."""
        mlp = "mean_log_predictive"
        lp = {e: self.get(dataset, e, mlp) for e in self.engines}
        lp = {e: r for e, r in lp.items() if r is not None}
        n_max = max((int(r["n_splits"]) for r in lp.values()), default=0)
        complete = {e: r for e, r in lp.items() if int(r["n_splits"]) == n_max}
        parts = []
        if len(complete) >= 2:
            parts.append(self._best(dataset, complete, n_max))
        if self.reference in lp:
            parts += [self._against_reference(dataset, e) for e in lp if e != self.reference]
        missing = [e for e in self.engines if e not in lp]
        if missing:
            parts.append("no results from " + ", ".join(style(e)[2] for e in missing))
        return parts

    def _against_reference(self, dataset: str, engine: str) -> str:
        """engine - reference on the mean log predictive, and where the reference's own
        Monte Carlo error is known, whether the difference is within twice it."""
        mlp, ref = "mean_log_predictive", style(self.reference)[2]
        text = (
            f"{style(engine)[2]} - {ref} = {self.diff(dataset, engine, self.reference, mlp)} nats"
        )
        mcse = self.reference_mcse.get(dataset)
        p = self.paired.get((dataset, engine, self.reference, mlp))
        if mcse is None or p is None:
            return text
        self.notes["mcse"] = _MCSE_NOTE
        error = f"{ref}'s Monte Carlo error {fmt(2.0 * mcse, 4)}"
        verdict = against_reference(p, mcse)
        if verdict == INDISTINGUISHABLE:
            return text + f" (within {error}: indistinguishable)"
        if verdict == CANNOT_DECIDE:
            return text + f" (its interval excludes zero, but within {error}: {verdict})"
        return text + f" ({error})"

    def _best(self, dataset: str, complete: dict, n_max: int) -> str:
        """The best mean log predictive and its lead, or that it is no win."""
        mlp = "mean_log_predictive"
        best = max(complete, key=lambda e: complete[e]["mean"])
        ties = [e for e in complete if e != best and not self._wins(dataset, best, e, mlp)]
        name = style(best)[2]
        if not ties:
            return (
                f"best mean log predictive: {name} ({fmt(complete[best]['mean'])} nats over "
                f"{n_max} split{'s' if n_max > 1 else ''}; ahead of "
                + ", ".join(
                    f"{style(e)[2]} by {self.diff(dataset, best, e, mlp)}"
                    for e in complete
                    if e != best
                )
                + ")"
            )
        self.notes["tie"] = _TIE_NOTE
        if n_max < 2:  # no interval from one split, so no win whatever the difference
            return (
                f"no win on mean log predictive from one split: {name}'s "
                f"{fmt(complete[best]['mean'])} nats is ahead of "
                + ", ".join(f"{style(e)[2]}'s by {self.diff(dataset, best, e, mlp)}" for e in ties)
                + ", but an interval needs two splits or more"
            )
        return (
            f"no win on mean log predictive: {name}'s {fmt(complete[best]['mean'])} nats is "
            "within the interval of "
            + ", ".join(
                f"{style(e)[2]}'s (difference {self.diff(dataset, best, e, mlp)})" for e in ties
            )
        )

    def error_rates(self, dataset: str) -> list[str]:
        err = {e: self.get(dataset, e, "error_rate") for e in self.engines}
        err = {e: r for e, r in err.items() if r is not None}
        if not err:
            return []
        return [
            "error rates " + ", ".join(f"{style(e)[2]} {fmt(r['mean'])}" for e, r in err.items())
        ]

    def reference_gaps(self, dataset: str, est: str) -> list[str]:
        """Each engine's marginal KL from the reference and its evidence gap."""
        parts = []
        for e in self.engines:
            kl = self.get(dataset, e, "marginal_kl_mean")
            gap = self.get(dataset, e, "evidence_gap")
            if kl is not None:
                parts.append(
                    f"{style(e)[2]} mean marginal KL from {self.reference} {fmt(kl['mean'])}"
                )
            if gap is not None:
                parts.append(f"{style(e)[2]} evidence - {est} {fmt(gap['mean'], 2)}")
        return parts

    def evidence_z(self, dataset: str, est: str) -> list[str]:
        """Engines whose evidence lies more than 3 standard errors from the estimate."""
        parts = []
        for e in self.engines:
            z = self.get(dataset, e, "evidence_gap_z")
            if z is None or not np.isfinite(z["mean"]) or abs(z["mean"]) <= 3:
                continue
            side = "below" if z["mean"] < 0 else "above"
            parts.append(
                f"{style(e)[2]}'s evidence is {side} the {est} estimate by "
                f"{fmt(abs(z['mean']), 1)} standard errors on average"
            )
            self.notes[f"ais_{side}"] = (
                "SMC's and AIS's estimates of log Z are biased low if anything (unbiased in Z), "
                "so an evidence below the reference's estimate is the approximation's deficit"
                if side == "below"
                else "SMC's and AIS's estimates of log Z are biased low when the path is too "
                "short, so part of an evidence above the reference's estimate may be the "
                "reference's"
            ) + "."
        return parts


def reference_mcse(records: Records, reference: str | None) -> dict[str, float]:
    """Per data set, the Monte Carlo standard error of the reference's mean log predictive
    averaged over its splits, sqrt(sum_s mcse_s^2) / J (the runs are independent), where
    every split's record has one.

    Parameters
    ----------
    records : list of JobRecord
        The study's finished records.
    reference : str or None
        The reference engine's label.

    Returns
    -------
    dict of str to float
        Data sets whose every reference record has ``mcse["mean_log_predictive"]``.
    """
    per: dict[str, list[float]] = {}
    missing: set[str] = set()
    for r in records:
        if r.engine != reference or not r.metrics:
            continue
        value = r.mcse.get("mean_log_predictive")
        if value is None or not np.isfinite(value):
            missing.add(r.dataset)
        else:
            per.setdefault(r.dataset, []).append(float(value))
    return {
        d: float(np.sqrt(np.sum(np.square(v))) / len(v)) for d, v in per.items() if d not in missing
    }


def _diagnostics_finding(records: Records, dataset: str) -> list[str]:
    """On how many sampled fits the MCMC diagnostics passed."""
    diag = [r.diagnostics for r in records if r.dataset == dataset and r.diagnostics is not None]
    if not diag:
        return []
    n_pass = sum(d.passed for d in diag)
    return [
        f"MCMC diagnostics passed on {n_pass} of {len(diag)} fits"
        + ("" if n_pass == len(diag) else " (see the diagnostics table)")
    ]


def _bound_findings(table: pd.DataFrame, dataset: str, engines: Sequence[str]) -> list[str]:
    """For each engine that selected its own hyperparameters, those at a bound and on how
    many splits (from the table's ``at_bound`` column)."""
    if "at_bound" not in table:
        return []
    per_job = table[(table.dataset == dataset)].drop_duplicates("job_id")
    out = []
    for engine in engines:
        jobs = per_job[(per_job.engine == engine) & (per_job.hyperparameters_from == "own")]
        hits = bound_counts(jobs)
        if hits:
            out.append(
                f"{style(engine)[2]}'s "
                + ", ".join(
                    f"{name} at its {side} bound on {k} of {len(jobs)} splits"
                    for (name, side), k in hits.items()
                )
            )
    return out


def bound_counts(jobs: pd.DataFrame) -> dict[tuple[str, str], int]:
    """``(name, side) -> number of jobs`` with that hyperparameter at that bound."""
    counts: dict[tuple[str, str], int] = {}
    for cell in jobs["at_bound"]:  # NaN (read back from an empty column): none at a bound
        for item in str(cell).split("; ") if isinstance(cell, str) else ():
            if item:
                name, _, side = item.rpartition(" ")
                counts[(name, side)] = counts.get((name, side), 0) + 1
    return counts


def selection_comparison(
    table: pd.DataFrame, records: Records, datasets: Sequence[str], engines: Sequence[str]
) -> list[str]:
    """Where engines that select their own hyperparameters disagree, and what it changes."""
    own = [
        e
        for e in engines
        if any(r.engine == e and r.hyperparameters.origin == "own" for r in records)
    ]
    if len(own) < 2:
        return []
    rows = []
    for dataset in datasets:
        theta = {}
        for r in records:
            if r.dataset == dataset and r.engine in own:
                theta[(r.engine, r.split)] = np.asarray(r.hyperparameters.values)
        for i, e1 in enumerate(own):
            for e2 in own[i + 1 :]:
                splits = sorted(s for (e, s) in theta if e == e1 and (e2, s) in theta)
                if not splits:
                    continue
                gaps = [float(np.max(np.abs(theta[(e1, s)] - theta[(e2, s)]))) for s in splits]
                diffs = []
                for metric in ("mean_log_predictive", "loo_log_predictive"):
                    t = table[(table.dataset == dataset) & (table.metric == metric)]
                    a = t[t.engine == e1].set_index("split")["value"].reindex(splits)
                    b = t[t.engine == e2].set_index("split")["value"].reindex(splits)
                    d = (a - b).to_numpy(dtype=float)
                    diffs.append(fmt(float(np.mean(d)), 4) if np.isfinite(d).any() else "n/a")
                rows.append(
                    [
                        dataset,
                        f"{style(e1)[2]} vs {style(e2)[2]}",
                        f"{sum(g > 0.1 for g in gaps)} of {len(gaps)}",
                        fmt(float(np.median(gaps)), 2),
                        fmt(float(np.max(gaps)), 2),
                        *diffs,
                    ]
                )
    if not rows:
        return []
    return [
        "## Hyperparameter selections compared",
        "",
        "Engines that select their own hyperparameters, compared split by split: how often "
        "their selections differ by more than 0.1 in some log hyperparameter, the median and "
        "largest such difference, and the mean paired difference (first minus second) of the "
        "held-out mean log predictive and of the training-set LOO log predictive (EP).",
        "",
        *markdown_table(
            [
                "data set",
                "engines",
                "splits differing > 0.1",
                "median of max abs d log theta",
                "largest",
                "d held-out log pred.",
                "d LOO log pred. (train)",
            ],
            rows,
        ),
        "",
    ]


def grid_findings(table: pd.DataFrame, datasets: Sequence[str], methods: Sequence[str]):
    """For a grid study: where each method's log evidence peaks, per data set."""
    ev = table[table.metric == "log_evidence"]
    lines = []
    for dataset in datasets:
        parts = []
        for method in methods:
            t = ev[(ev.dataset == dataset) & (ev.engine == method)]
            if t.empty:
                continue
            best = t.loc[t.value.idxmax()]
            point = ", ".join(f"{k} {v:.2f}" for k, v in json.loads(best.hyperparameters).items())
            parts.append(f"{style(method)[2]} {best.value:.2f} at ({point})")
        if parts:
            lines.append(
                f"- **{dataset}**: largest log evidence over the grid: " + "; ".join(parts)
            )
    return lines or ["- No grid point has finished yet."]


def _estimator(records, dataset: str, reference: str | None) -> str:
    """The name of the estimator that gave the reference's evidence on ``dataset`` ("SMC",
    "AIS"; records written before the estimator was recorded came from AIS)."""
    names = {
        reference_estimator(r)[0].upper()
        for r in records
        if r.dataset == dataset and r.engine == reference and r.log_evidence
    }
    return "/".join(sorted(names)) or "the reference"
