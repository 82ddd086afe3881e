"""The checks every part of a study file shares: an error that names the file and the field,
integers, finite numbers, labels, the splits and a hyperparameter grid; and
:func:`plain`, a mapping built in Python as the TOML reader would give it."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from .datafiles import check_label
from .problem import make_kernel

__all__ = [
    "SPLIT_KINDS",
    "StudyError",
    "check_keys",
    "fail",
    "integer",
    "is_number",
    "label",
    "parse_grid",
    "parse_splits",
    "plain",
]

SPLIT_KINDS = ("kfold", "holdout", "none")


class StudyError(ValueError):
    """A study file that cannot be run: the message names the file and the field."""


def fail(path: str, where: str, message: str) -> StudyError:
    return StudyError(f"{path}: {where}: {message}")


def check_keys(table: Mapping[str, Any], allowed: Iterable[str], path: str, where: str) -> None:
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise fail(path, where, f"unknown field(s) {unknown}; allowed: {sorted(allowed)}")


def label(value: Any, p: str, where: str) -> str:
    try:
        return check_label(value)
    except ValueError as exc:
        raise fail(p, where, str(exc)) from None


def integer(value: Any, path: str, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise fail(path, where, f"must be an integer >= {minimum}, got {value!r}")
    return int(value)


def boolean(value: Any, path: str, where: str) -> bool:
    """``value``, a TOML boolean, or a StudyError naming ``where``."""
    if not isinstance(value, bool):
        raise fail(path, where, f"must be true or false, got {value!r}")
    return value


def parse_grid(
    value: Any,
    policy: str,
    kernel: Mapping[str, Any],
    mean: Any,
    dims: Mapping[str, int],
    p: str,
    check_size: Callable[[dict[str, int]], None] | None = None,
) -> tuple[dict[str, float], ...]:
    """The grid points of ``[hyperparameters.grid]``: the product of its axes, in order.

    Each axis is named by a hyperparameter (``log_lengthscale``, ``log_variance``, ...,
    ``mean``) and holds a list of values or ``{start, stop, num}`` (``numpy.linspace``);
    hyperparameters without an axis keep the kernel's (or the mean's) given value.
    ``check_size``, given the points per axis, may refuse the grid before any point is
    formed (the study's ``max_grid_points``).
    """
    if policy != "grid":
        return ()
    axes = value["grid"]
    if not isinstance(axes, dict) or not axes:
        raise fail(p, "hyperparameters.grid", "must be a table of axes, e.g. log_lengthscale")
    if "mean" in axes and mean is None:
        raise fail(
            p,
            "hyperparameters.grid.mean",
            "a grid over the prior mean needs a constant mean: "
            "set mean = 0.0 at the top level (the value of points without a mean axis)",
        )
    for label, d in dims.items():  # every data set's kernel must have these hyperparameters
        names = make_kernel(kernel, d).hyperparameter_names + ([] if mean is None else ["mean"])
        check_keys(axes, names, p, f"hyperparameters.grid (for {label!r}, d = {d})")
    sizes = {
        name: _axis_size(axis, p, f"hyperparameters.grid.{name}") for name, axis in axes.items()
    }
    if check_size is not None:
        check_size(sizes)
    values = []
    for name, axis in axes.items():
        if isinstance(axis, dict):
            points = np.linspace(float(axis["start"]), float(axis["stop"]), sizes[name])
        else:
            points = np.asarray(axis, dtype=float)
        if not np.all(np.isfinite(points)):
            raise fail(p, f"hyperparameters.grid.{name}", "values must be finite")
        values.append([float(v) for v in points])
    names = list(axes)
    return tuple(dict(zip(names, combo, strict=True)) for combo in itertools.product(*values))


def _axis_size(axis: Any, p: str, where: str) -> int:
    """The points of one grid axis, checked: a list of numbers, or {start, stop, num}."""
    if isinstance(axis, dict):
        check_keys(axis, {"start", "stop", "num"}, p, where)
        if set(axis) != {"start", "stop", "num"} or not all(
            is_number(axis[k]) for k in ("start", "stop")
        ):
            raise fail(p, where, "needs start, stop (numbers) and num (points)")
        return integer(axis["num"], p, f"{where}.num", 1)
    if isinstance(axis, list) and axis and all(is_number(v) for v in axis):
        return len(axis)
    raise fail(p, where, f"must be numbers or {{start, stop, num}}, got {axis!r}")


def is_number(value: Any) -> bool:
    """A finite number (TOML has inf and nan)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and np.isfinite(value)


MIN_FOLD_PAIRS = 10
"""Fold pairs a k-fold study makes by default: the corrected resampled t (Nadeau and
Bengio 2003) of a comparison has r k - 1 degrees of freedom, and one repeat of five folds
(4) gives intervals too wide to decide much."""


def default_repeats(n_splits: int) -> int:
    """``n_repeats`` of ``[splits] kind = "kfold"`` when the study does not state it:
    ceil(10 / k), so that r x k >= :data:`MIN_FOLD_PAIRS` (2 repeats of 5 folds, 1 of 10)."""
    return -(-MIN_FOLD_PAIRS // n_splits)


def parse_splits(value: Any, p: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail(p, "splits", "must be a table")
    check_keys(value, {"kind", "n_splits", "test_size", "n_repeats"}, p, "splits")
    kind = value.get("kind", "kfold")
    if kind not in SPLIT_KINDS:
        raise fail(p, "splits.kind", f"must be one of {SPLIT_KINDS}, got {kind!r}")
    if kind == "none":
        if len(value) > 1:
            why = "kind = 'none' (every case trains, none is held out) has no other fields"
            raise fail(p, "splits", why)
        return {"kind": kind}
    if kind == "kfold":  # n_repeats kept only above 1 (see default_repeats)
        if "test_size" in value:
            raise fail(p, "splits", "test_size belongs to kind = 'holdout'")
        folds = {
            "kind": kind,
            "n_splits": integer(value.get("n_splits", 5), p, "splits.n_splits", 2),
        }
        default = default_repeats(folds["n_splits"])
        repeats = integer(value.get("n_repeats", default), p, "splits.n_repeats", 1)
        return folds if repeats == 1 else {**folds, "n_repeats": repeats}
    if "n_splits" in value:
        raise fail(p, "splits.n_splits", "belongs to kind = 'kfold'; use n_repeats")
    test_size = value.get("test_size", 0.25)
    if isinstance(test_size, bool) or not isinstance(test_size, float) or not 0 < test_size < 1:
        raise fail(p, "splits.test_size", f"must be a fraction in (0, 1), got {test_size!r}")
    n_repeats = integer(value.get("n_repeats", 5), p, "splits.n_repeats", 1)
    return {"kind": kind, "test_size": test_size, "n_repeats": n_repeats}


def plain(value: Any) -> Any:
    """``value`` as a TOML reader gives it: mappings as dicts, sequences (not strings) as
    lists, NumPy scalars as Python's; anything else as it is (the checks refuse it)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


#: ``psis = true``: :func:`gpc_compare.psis`'s defaults.
PSIS_DEFAULTS = {"draws": 4000, "proposal": "gaussian"}


def parse_psis(value: Any, p: str) -> dict[str, Any] | None:
    """``psis``: false (off), true (:data:`PSIS_DEFAULTS`), or a table of ``draws`` (an
    integer, at least 100) and ``proposal`` ("gaussian" or "student_t")."""
    if value is False:
        return None
    if value is True:
        return dict(PSIS_DEFAULTS)
    if not isinstance(value, dict):
        raise fail(p, "psis", f"must be true, false or a table (draws, proposal), got {value!r}")
    check_keys(value, tuple(PSIS_DEFAULTS), p, "psis")
    out = {**PSIS_DEFAULTS, **value}
    out["draws"] = integer(out["draws"], p, "psis.draws", 100)
    if out["proposal"] not in ("gaussian", "student_t"):
        raise fail(
            p, "psis.proposal", f"must be 'gaussian' or 'student_t', got {out['proposal']!r}"
        )
    return out
