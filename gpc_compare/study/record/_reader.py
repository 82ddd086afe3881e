"""Reading a record's JSON object field by field, each failure naming its field."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

import numpy as np

__all__ = ["SCHEMA_VERSION", "STATUSES", "RecordError", "Reader", "json_part", "numeric", "show"]

#: The record layout this code writes (and the newest it reads).
SCHEMA_VERSION = 1
#: A job's possible states: finished, failed (an error), skipped (too large for its engine).
STATUSES = ("ok", "failed", "skipped")


class RecordError(ValueError):
    """A job record that does not follow the schema: the message names the field."""


def show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class Reader:
    """A JSON object being read: each read names its field when the value is wrong, and
    turns an infinite number into NaN with a note."""

    def __init__(self, raw: Any, where: str, notes: list[str]) -> None:
        if not isinstance(raw, dict):
            what = repr(where) if where else "the record"
            raise RecordError(f"{what} is {show(raw)}, not an object")
        self.raw, self.where, self.notes, self.read = raw, where, notes, set()

    def name(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def get(self, key: str, optional: bool = False) -> Any:
        """The raw value; for an optional field None when absent or null."""
        self.read.add(key)
        if key not in self.raw or (optional and self.raw[key] is None):
            if optional:
                return None
            raise RecordError(f"no {self.name(key)!r} field")
        return self.raw[key]

    def _typed(self, key: str, kinds: type | tuple[type, ...], what: str, optional: bool):
        value = self.get(key, optional)
        if value is None and optional:
            return None
        if isinstance(value, bool) and bool not in (
            kinds if isinstance(kinds, tuple) else (kinds,)
        ):
            raise RecordError(f"{self.name(key)!r} is {show(value)}, not {what}")
        if not isinstance(value, kinds):
            raise RecordError(f"{self.name(key)!r} is {show(value)}, not {what}")
        return value

    def text(self, key: str, optional: bool = False) -> str | None:
        return self._typed(key, str, "a string", optional)

    def integer(self, key: str, optional: bool = False, minimum: int | None = None) -> int | None:
        value = self._typed(key, int, "an integer", optional)
        if value is not None and minimum is not None and value < minimum:
            raise RecordError(f"{self.name(key)!r} is {value}, not an integer >= {minimum}")
        return value

    def flag(self, key: str, optional: bool = False) -> bool | None:
        return self._typed(key, bool, "true or false", optional)

    def number(self, key: str, optional: bool = False) -> float | None:
        value = self._typed(key, (int, float), "a number", optional)
        return None if value is None else self.finite(value, self.name(key))

    def finite(self, value: int | float, name: str) -> float:
        """``value`` as a float; an infinite one as NaN, with a note."""
        value = float(value)
        if math.isinf(value):
            self.notes.append(f"{name} was {value} in the file: read as NaN")
            return math.nan
        return value

    def obj(self, key: str, optional: bool = False) -> Reader | None:
        value = self.get(key, optional)
        return None if value is None and optional else Reader(value, self.name(key), self.notes)

    def items(self, key: str, optional: bool = False) -> list[Any] | None:
        value = self._typed(key, list, "a list", optional)
        return None if value is None else value

    def texts(self, key: str, optional: bool = False) -> tuple[str, ...]:
        value = self.items(key, optional) or []
        if not all(isinstance(v, str) for v in value):
            raise RecordError(f"{self.name(key)!r} holds a value that is not a string")
        return tuple(value)

    def numbers(self, key: str) -> tuple[float, ...]:
        value = self.items(key)
        for i, v in enumerate(value):
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise RecordError(f"{self.name(key)}[{i}] is {show(v)}, not a number")
        return tuple(self.finite(v, f"{self.name(key)}[{i}]") for i, v in enumerate(value))

    def mapping(self, key: str, optional: bool = False) -> dict[str, Any] | None:
        """A JSON object kept as it is (its content is another module's)."""
        value = self.get(key, optional)
        if value is None and optional:
            return None
        if not isinstance(value, dict):
            raise RecordError(f"{self.name(key)!r} is {show(value)}, not an object")
        return dict(value)

    def rest(self) -> dict[str, Any]:
        """The fields not read: kept as they are."""
        return {k: v for k, v in self.raw.items() if k not in self.read}


def numeric(value: list[Any], r: Reader, key: str) -> list[Any]:
    """A (nested) list of numbers as it is, or with its infinite entries NaN (a note)."""
    try:
        a = np.asarray(value)
    except (TypeError, ValueError):  # (ragged)
        a = np.asarray([], dtype=object)
    if a.dtype.kind not in "iuf":
        raise RecordError(f"{r.name(key)!r} is not a (nested) list of numbers")
    if not np.isinf(a).any():
        return value
    r.notes.append(f"{r.name(key)} held {int(np.isinf(a).sum())} infinite value(s): read as NaN")
    return np.where(np.isinf(a), np.nan, a).tolist()


def json_part(part: Any, renames: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A part as JSON: its fields (None ones left out), renamed where JSON's names differ,
    ``extra`` merged back."""
    out: dict[str, Any] = {}
    for f in fields(part):
        value = getattr(part, f.name)
        if f.name == "extra":
            out.update(value)
        elif value is not None:
            out[(renames or {}).get(f.name, f.name)] = (
                list(value) if isinstance(value, tuple) else value
            )
    return out
