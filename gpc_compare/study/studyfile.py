"""Reading a study file's TOML (:func:`read_toml`), refusing what cannot be a study before
anything walks it: a folder, a FIFO (reading one would wait for a writer forever), text that
is not UTF-8 or not TOML, and fields nested deeper than a study's (:data:`MAX_DEPTH`).

Nesting is refused at both doors: in the text, before the TOML reader sees it, a table
header or key of more than :data:`MAX_DEPTH` dotted parts (Python's reader takes time
quadratic in their number: 1.3 s of CPU for 10,000, 5.8 s for 20,000), and in the parsed fields
(:func:`check_depth`, which :meth:`~gpc_compare.study.StudyConfig.from_dict` also runs on
a mapping given in Python). Lists and inline tables nested too deep for the reader's
recursion are refused as it fails.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .fields import StudyError

__all__ = ["MAX_DEPTH", "check_depth", "depth", "read_toml", "toml_text"]

#: How deep a study's tables and lists may nest: a study needs five levels
#: (``[evidence.ais.recheck]``, ``priors = {log_variance = [mu, sd]}``).
MAX_DEPTH = 32
#: A line that is a table header (``[a.b]``, ``[[a.b]]``) or starts with a key (``a.b =``):
#: its key, of key characters only (not a line inside a list of numbers or a string).
_KEY_LINE = re.compile(r"\s*(?:\[\[?([\w\s.\"'-]*)\]|([\w\s.\"'-]*)=)")


def read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A study file's TOML fields.

    Raises
    ------
    StudyError
        (a ValueError) naming the file and saying why it cannot be read as a study.
    """
    p = str(path)
    what = "a study file is a TOML text file (e.g. studies/quick.toml) or a .py study script"
    if Path(path).is_dir():
        raise StudyError(f"{p}: is a directory, not a study file: {what}")
    if Path(path).exists() and not Path(path).is_file():  # (a FIFO would block the read)
        raise StudyError(f"{p}: not a regular file (a FIFO, socket or device): {what}")
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8")
        _check_keys(text, p)
        return tomllib.loads(text)
    except FileNotFoundError:
        raise StudyError(f"{p}: no such study file") from None
    except UnicodeDecodeError:
        raise StudyError(f"{p}: not a text file (not UTF-8): {what}") from None
    except OSError as exc:
        raise StudyError(f"{p}: cannot be read ({exc.strerror or exc}): {what}") from None
    except tomllib.TOMLDecodeError as exc:
        raise StudyError(f"{p}: not valid TOML: {exc}") from None
    except RecursionError:  # (the reader recurses once per nested list or inline table)
        raise StudyError(
            f"{p}: not a study: lists or tables nested too deep to read (a study's fields "
            f"nest at most {MAX_DEPTH} deep)"
        ) from None


def _check_keys(text: str, p: str) -> None:
    """A StudyError for a table header or key of more than :data:`MAX_DEPTH` dotted parts."""
    for number, line in enumerate(text.splitlines(), 1):
        if line.count(".") <= MAX_DEPTH:  # (most lines: no need to look closer)
            continue
        match = _KEY_LINE.match(line)
        key = match and (match.group(1) or match.group(2))
        if key and key.count(".") >= MAX_DEPTH:
            raise StudyError(
                f"{p}: line {number}: a key of {key.count('.') + 1} dotted parts, nested too "
                f"deep for a study (its fields nest at most {MAX_DEPTH} deep)"
            )


def depth(value: Any, limit: int | None = None) -> int:
    """How deep tables (mappings) and lists nest in ``value`` (a scalar is 0), found
    without recursion (a mapping may nest 100,000 deep); with a ``limit``, the first depth
    found beyond it (the walk stops there)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, level + 1)
        if limit is not None and deepest > limit:
            break
        stack.extend((child, level + 1) for child in children)
    return deepest


def check_depth(fields: Any, p: str) -> None:
    """A StudyError naming ``p`` if ``fields`` nest deeper than :data:`MAX_DEPTH`."""
    if depth(fields, MAX_DEPTH) > MAX_DEPTH:
        raise StudyError(
            f"{p}: tables or lists nested more than {MAX_DEPTH} deep (deeper than a study's "
            "fields nest): not a study"
        )


def toml_text(fields: Mapping[str, Any]) -> str:
    """The study file of ``fields`` (the layout of :func:`gpc_compare.comparison.study_fields`:
    top-level values, one
    ``[[datasets]]`` table, then ``[splits]``, ``[hyperparameters]``, ``[kernel]``, and a
    table per engine)."""
    top = ["name", "description", "seed", "likelihood"]
    lines = [
        "# Written by gpc_compare (gc.compare or `gpc-compare compare`): this study ran the",
        "# results in this folder. Edit it and rerun: gpc-compare run THIS_FILE",
        *(f"{k} = {_toml(fields[k])}" for k in top),
    ]
    if "psis" in fields:  # the Pareto-k check of every Gaussian approximation
        lines.append(f"psis = {_toml(fields['psis'])}")
    if "evidence_profiles" in fields:  # the report's refits (off for gc.compare: issue 34)
        lines.append(f"evidence_profiles = {_toml(fields['evidence_profiles'])}")
    for dataset in fields["datasets"]:
        lines += ["", "[[datasets]]", *(f"{k} = {_toml(v)}" for k, v in dataset.items())]
    for table in ("splits", "hyperparameters", "kernel"):
        if table in fields:
            lines += ["", f"[{table}]", *(f"{k} = {_toml(v)}" for k, v in fields[table].items())]
    for engine, options in fields["engines"].items():
        lines += ["", f"[engines.{_key(engine)}]"]
        lines += [f"{k} = {_toml(v)}" for k, v in options.items()]
    return "\n".join(lines) + "\n"


def _key(key: str) -> str:
    """A TOML key: bare when it can be, quoted otherwise."""
    bare = key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key)
    return key if bare else json.dumps(key)


def _toml(value: Any) -> str:
    """A TOML value: a string, number, boolean, list or inline table."""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        if not np.isfinite(value):
            raise ValueError(f"a study value must be finite, got {value!r}")
        return repr(float(value))
    if isinstance(value, str):
        return json.dumps(value)  # (JSON's escapes are TOML's)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(str(k))} = {_toml(v)}" for k, v in value.items()) + "}"
    raise ValueError(f"cannot write {value!r} ({type(value).__name__}) in a study file")
