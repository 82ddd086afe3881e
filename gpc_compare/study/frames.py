"""``X`` and ``y`` as the one table :func:`gpc_compare.compare` writes and its study reads.

``gc.compare(X, y)`` runs its data through the study runner as a data file: these check
that the table it writes holds the data the user gave (column names, one label per row,
labels that stay distinct through the CSV's text).
"""

from __future__ import annotations

import io
import numbers
from typing import Any

import numpy as np
import pandas as pd

from ..datasets.files import _label_text


def xy_frame(X: Any, y: Any) -> tuple[pd.DataFrame, str]:
    """``X`` and ``y`` as one table, and the name of ``y``'s column in it."""
    if isinstance(X, pd.DataFrame):
        frame = X.copy()
        frame.columns = [str(c) for c in frame.columns]
        twice = sorted({c for c in frame.columns if list(frame.columns).count(c) > 1})
        if twice:
            raise ValueError(f"X: column name(s) given more than once: {twice}; rename them")
    else:
        array = np.asarray(X)
        if array.ndim == 1:
            array = array[:, None]
        if array.ndim != 2:
            raise ValueError(f"X must be 2-D (n cases, d inputs), got shape {array.shape}")
        frame = pd.DataFrame(array, columns=[f"x{j + 1}" for j in range(array.shape[1])])
    labels = y.to_numpy() if isinstance(y, pd.Series) else np.asarray(y)
    if labels.ndim != 1 or labels.shape[0] != len(frame):
        raise ValueError(
            f"y must be 1-D with one label per row of X ({len(frame)}), got shape {labels.shape}"
        )
    target = str(y.name) if isinstance(y, pd.Series) and y.name is not None else "y"
    while target in frame.columns:
        target = f"{target}_"
    frame = frame.reset_index(drop=True)
    frame[target] = labels
    return frame, target


def check_labels_survive(labels: np.ndarray, text: str, target: str) -> None:
    """A ValueError if labels that are different values become one class through the data
    file :func:`gpc_compare.compare` writes and the study reads (a CSV keeps no types: the integer 1
    and the text "1", or "01" and "1", read back alike). Labels are compared as the file
    loader compares them (:func:`gpc_compare.datasets.files.load_table`): text with
    surrounding whitespace stripped, numbers by value (1 and 1.0 are one label), so
    " yes" and "yes " are one class here too, by that rule, and not refused."""
    back = pd.read_csv(io.StringIO(text), skipinitialspace=True, usecols=[target])[target]
    keys: dict[str, dict[tuple[str, Any], Any]] = {}  # read-back text -> label -> a value
    for value, read in zip(labels, back, strict=True):
        if not pd.isna(read):
            keys.setdefault(_label_text(read), {}).setdefault(_label_key(value), value)
    merged = {t: k for t, k in keys.items() if len(k) > 1}
    if merged:
        which = "; ".join(
            f"{', '.join(repr(_plain(v)) for v in k.values())} (all read back as {t!r})"
            for t, k in merged.items()
        )
        raise ValueError(
            f"y: labels that are different values would become one class in the data file "
            f"gc.compare writes: {which}. A CSV keeps no types; make the labels distinct as "
            "text (e.g. 'one' and 'two', not 1 and '1'), or map them to one value yourself"
        )


def _label_key(value: Any) -> tuple[str, Any]:
    """What makes two labels the same for :func:`check_labels_survive`: a number's value,
    a text's stripped self, a boolean's truth."""
    if isinstance(value, bool | np.bool_):
        return ("bool", bool(value))
    if isinstance(value, numbers.Number):
        return ("number", float(value))
    if isinstance(value, str):
        return ("text", value.strip())
    return ("other", repr(value))


def _plain(value: Any) -> Any:
    """A NumPy scalar as the Python value it holds (for messages)."""
    return value.item() if isinstance(value, np.generic) else value
