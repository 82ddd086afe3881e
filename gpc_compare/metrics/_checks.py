"""Input checks shared by the scoring rules and the calibration measures."""

from __future__ import annotations

import numpy as np

from .._validation import check_labels


def _labels01(y: object) -> np.ndarray:
    """Labels as ints in {0, 1} (1 = positive class)."""
    return (check_labels(y, name="y_true", both_classes=False) > 0).astype(int)


def _probabilities(p1: object, n: int | None = None) -> np.ndarray:
    p = np.asarray(p1, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"p1 must be a 1-D array of probabilities, got shape {p.shape}")
    if n is not None and p.shape[0] != n:
        raise ValueError(f"y_true has {n} labels but p1 has {p.shape[0]} probabilities")
    if not np.all((p >= 0.0) & (p <= 1.0)):  # also refuses NaN
        raise ValueError("p1 must hold probabilities in [0, 1] (no NaN)")
    return p


def _log_probabilities(log_p: object) -> np.ndarray:
    lp = np.asarray(log_p, dtype=float)
    if lp.ndim != 1 or lp.size == 0:
        raise ValueError(f"log_p must be a non-empty 1-D array, got shape {lp.shape}")
    if np.any(np.isnan(lp)):
        raise ValueError("log_p contains NaN")
    if np.any(lp > 1e-12):
        raise ValueError(f"log_p must be <= 0 (log probabilities), got max {lp.max():.3g}")
    return np.minimum(lp, 0.0)
