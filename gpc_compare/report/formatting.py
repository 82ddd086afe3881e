"""How the report writes numbers: a zero is a zero, an interval says which it is."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["fmt", "interval_text", "markdown_table", "reference_estimator"]


def reference_estimator(record) -> tuple[str, str]:
    """``(method, start)`` of the estimator that gave a reference engine's evidence
    (a :class:`~gpc_compare.study.JobRecord`); records written before the estimator was
    recorded came from AIS from EP's approximation."""
    ev = record.reference_evidence
    return ("ais", "ep") if ev is None else (ev.method, ev.start)


def fmt(x: float | None, digits: int = 3) -> str:
    """A number to ``digits`` decimals; "n/a" for None or NaN, "inf"/"-inf" spelled out, and
    never "-0.000": a value that rounds to zero is written without a sign.

    Parameters
    ----------
    x : float or None
    digits : int

    Returns
    -------
    str
    """
    if x is None or (isinstance(x, float | np.floating) and np.isnan(x)):
        return "n/a"
    if np.isinf(x):
        return "-inf" if x < 0 else "inf"
    text = f"{x:.{digits}f}"
    if float(text) == 0.0:
        text = text.lstrip("-")
    return text


def interval_text(row: pd.Series, digits: int = 3) -> str:
    """A summary row as "mean [low, high]" (just the mean for one split or an infinite one)."""
    if row["n_splits"] > 1 and np.isfinite(row["mean"]) and np.isfinite(row["low"]):
        return f"{fmt(row['mean'], digits)} [{fmt(row['low'], digits)}, {fmt(row['high'], digits)}]"
    return fmt(row["mean"], digits)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The lines of a pipe table."""
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out
