"""A study's kernels: one ``[kernel]`` table, or several ``[kernels.LABEL]`` tables as an axis.

With several kernels every data set, split and engine runs once per kernel (data set x
kernel x split x engine); the label names the kernel in the table's ``kernel`` column, in
the report and in job file names, so it must be safe in a file name. A study with the
single ``[kernel]`` table has no axis: its jobs (and their ids) are as they always were,
and its ``kernel`` column holds the kernel's name.

Errors are ValueErrors whose message starts with the field (``kernels.se.name: ...``);
:func:`gpc_compare.study.load_study` prefixes the file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .datafiles import check_label
from .problem import KERNELS

__all__ = ["KERNEL_DEFAULTS", "kernel_axis", "kernel_column", "parse_kernel", "parse_kernels"]

#: A kernel table's defaults: the squared exponential with ell = sqrt(d) and sigma_f^2 = 1.
KERNEL_DEFAULTS: dict[str, Any] = {
    "name": "squared_exponential",
    "lengthscale": "sqrt_d",
    "variance": 1.0,
}
_BOUND_KEYS = ("lengthscale_bounds", "variance_bounds")
_KEYS = {"name", "lengthscale", "variance", "ard", *_BOUND_KEYS}


def _number(value: Any) -> bool:
    """A finite number (TOML has inf and nan)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def parse_kernel(value: Any, where: str = "kernel") -> dict[str, Any]:
    """One kernel table checked and completed with :data:`KERNEL_DEFAULTS`.

    Parameters
    ----------
    value : Any
        The table as read from TOML (``name``, ``lengthscale`` (a number or ``"sqrt_d"``),
        ``variance``, ``ard``, ``lengthscale_bounds``, ``variance_bounds``).
    where : str
        The field, for messages (``"kernel"`` or ``"kernels.LABEL"``).

    Returns
    -------
    dict

    Raises
    ------
    ValueError
        Naming the field: an unknown field or kernel, a bad value or bound.
    """
    if not isinstance(value, dict):
        raise ValueError(f"{where}: must be a table")
    unknown = sorted(set(value) - _KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {unknown}; allowed: {sorted(_KEYS)}")
    for key in _BOUND_KEYS:
        b = value.get(key)
        if b is None or b == "fixed":
            continue
        if (
            not isinstance(b, list)
            or len(b) != 2
            or not all(map(_number, b))
            or not 0 < b[0] < b[1]
        ):
            raise ValueError(f"{where}.{key}: must be [low, high] with 0 < low < high, got {b!r}")
    kernel = {**KERNEL_DEFAULTS, **value}
    if not isinstance(kernel.get("ard", False), bool):
        raise ValueError(f"{where}.ard: must be true or false, got {kernel['ard']!r}")
    kernel["ard"] = kernel.get("ard", False)
    if not isinstance(kernel["name"], str) or kernel["name"] not in KERNELS:
        raise ValueError(f"{where}.name: unknown kernel {kernel['name']!r}; known: {list(KERNELS)}")
    if kernel["ard"] and kernel["name"] == "neural_network":
        raise ValueError(f"{where}.ard: the neural-network kernel has one length-scale (covNNone)")
    ell = kernel["lengthscale"]
    if ell != "sqrt_d" and not (_number(ell) and ell > 0):
        raise ValueError(
            f"{where}.lengthscale: must be a positive finite number or 'sqrt_d', got {ell!r}"
        )
    var = kernel["variance"]
    if not (_number(var) and var > 0):
        raise ValueError(f"{where}.variance: must be a positive finite number, got {var!r}")
    return kernel


def parse_kernels(raw: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The study's kernel(s) from its top-level table ``raw``.

    ``[kernel]`` (or neither: the defaults) gives one kernel and no axis; ``[kernels.LABEL]``
    tables give the axis, in file order. In an axis table ``name`` defaults to the label
    when the label is a kernel name (``[kernels.matern52]``).

    Returns
    -------
    (dict, dict)
        The kernel (the axis's first), and the axis: label -> kernel (empty without one).

    Raises
    ------
    ValueError
        Naming the field: both forms given, an empty axis, a label unsafe in a file name
        (``[A-Za-z0-9_.-]+``, not ``.`` or ``..``), or a bad kernel table.
    """
    if "kernels" not in raw:
        return parse_kernel(raw.get("kernel", {}), "kernel"), {}
    if "kernel" in raw:
        raise ValueError(
            "kernel: give one [kernel] table or several [kernels.LABEL] tables, not both"
        )
    value = raw["kernels"]
    if not isinstance(value, dict) or not value:
        raise ValueError(
            "kernels: must hold one table per kernel, e.g. [kernels.se] name = "
            "'squared_exponential' and [kernels.matern52]"
        )
    axis: dict[str, dict[str, Any]] = {}
    for label, table in value.items():
        where = f"kernels.{label}"
        check_label(label, where)
        if not isinstance(table, dict):
            raise ValueError(f"{where}: must be a table of the kernel's settings")
        if "name" not in table and label not in KERNELS:
            raise ValueError(
                f"{where}.name: missing; name the kernel (one of {list(KERNELS)}); it defaults "
                "to the label only when the label is one of them"
            )
        axis[label] = parse_kernel({"name": label, **table}, where)
    return next(iter(axis.values())), axis


def kernel_axis(kernel: Mapping[str, Any], kernels: Mapping[str, Mapping[str, Any]]):
    """The study's (label, kernel) pairs: ``[(None, kernel)]`` without an axis."""
    return list(kernels.items()) if kernels else [(None, kernel)]


def kernel_column(label: str | None, kernel: Mapping[str, Any]) -> str:
    """What the table's ``kernel`` column holds: the axis label, else the kernel's name."""
    return kernel["name"] if label is None else label
