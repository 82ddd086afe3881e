"""A user's own data: a table in a file (CSV, gzip CSV, Parquet), checked, as a :class:`Dataset`.

Files are data: they are read with pandas (``read_csv``, ``read_parquet``), never
executed or unpickled. Everything that would make a study fail later, or mislead, is
refused here with a message that names the file, the column and the row and says what
to do (:func:`load_table`); a constant column is dropped and the drop recorded as a note
(``Dataset.info["notes"]``) that the study report shows.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._dataset import Dataset

__all__ = ["CATEGORICAL", "MISSING", "data_digest", "file_sha256", "load_table", "read_table"]

#: What to do with non-numeric feature columns: one 0/1 column per level, or drop them.
CATEGORICAL = ("onehot", "drop")
#: What to do with rows that have a missing value: refuse the file, or drop the rows.
MISSING = ("error", "drop")
#: File endings read as CSV (gzip by its ending) and as Parquet.
CSV_SUFFIXES = (".csv", ".csv.gz", ".txt", ".txt.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes (hex), recorded in the study's provenance."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def data_digest(data: Dataset) -> str:
    """The SHA-256 of a data set's content (inputs, labels, class names), hex.

    The same data give the same digest whatever file format or column order of rows it
    came in, so a study's job ids (which hash it) survive re-encoding a file, and change
    when its numbers change.
    """
    digest = hashlib.sha256()
    digest.update(np.ascontiguousarray(data.X, dtype="<f8").tobytes())
    digest.update(np.ascontiguousarray(data.y, dtype="<i8").tobytes())
    digest.update(repr((data.X.shape, tuple(data.class_names))).encode())
    return digest.hexdigest()


def read_table(path: str | os.PathLike[str], *, sep: str = ",", decimal: str = ".") -> pd.DataFrame:
    """Read a CSV (``.csv``, gzip ``.csv.gz``) or Parquet (``.parquet``) file with pandas.

    Parameters
    ----------
    path : path
    sep, decimal : str
        A CSV file's field separator and decimal mark (``";"`` and ``","`` for a file
        written with decimal commas); not used for Parquet.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    ValueError
        The file is missing, not a regular file (a folder, a FIFO), has an ending not
        listed above, cannot be parsed (a truncated or damaged gzip file included), or is
        Parquet without pyarrow installed (the message names the extra to install).
    """
    path = Path(path)
    name = path.name.lower()
    _check_regular_file(path)
    try:
        if name.endswith(CSV_SUFFIXES):
            # the header as written (pandas would rename a second "label" to "label.1")
            header = (
                pd.read_csv(
                    path,
                    compression="infer",
                    skipinitialspace=True,
                    header=None,
                    nrows=1,
                    dtype=str,
                    sep=sep,
                )
                .iloc[0]
                .tolist()
            )
            _check_unique_columns(path, header)
            return pd.read_csv(
                path, compression="infer", skipinitialspace=True, sep=sep, decimal=decimal
            )
        if name.endswith(PARQUET_SUFFIXES):
            try:
                import pyarrow  # noqa: F401
                import pyarrow.parquet as pq
            except ImportError:
                raise ValueError(
                    f"{path}: reading Parquet needs pyarrow: pip install 'gpc_compare[parquet]' "
                    "(or save the table as CSV)"
                ) from None
            try:
                _check_unique_columns(path, pq.read_schema(path).names)
                return pd.read_parquet(path)
            except pyarrow.ArrowException as exc:
                raise ValueError(f"{path}: cannot be read as Parquet: {exc}") from None
    except (
        pd.errors.ParserError,
        pd.errors.EmptyDataError,
        UnicodeDecodeError,
        OSError,  # (gzip.BadGzipFile among them: not gzip, or its checksum fails)
        EOFError,  # a gzip file cut short
        zlib.error,  # a gzip file damaged inside
    ) as exc:
        raise ValueError(
            f"{path}: cannot be read as a table ({type(exc).__name__}: {exc}); is the file "
            "complete and undamaged?"
        ) from None
    raise ValueError(
        f"{path}: unknown file type; give a CSV ({', '.join(CSV_SUFFIXES)}) or Parquet "
        f"({', '.join(PARQUET_SUFFIXES)}) file"
    )


def _check_regular_file(path: Path) -> None:
    """A ValueError unless ``path`` is a regular file (or a link to one): missing, a
    folder, or a FIFO, socket or device (reading a FIFO would wait for a writer forever)."""
    where = " (a relative path is taken from the study file's folder)"
    if not path.exists():
        raise ValueError(f"{path}: no such file{where}")
    if path.is_dir():
        raise ValueError(f"{path}: is a folder, not a data file: give the CSV or Parquet file")
    if not path.is_file():
        raise ValueError(
            f"{path}: is not a regular file (a FIFO, socket or device): give a CSV or "
            "Parquet file saved on disk"
        )


def _check_unique_columns(path: Path, names: Sequence[Any]) -> None:
    """A ValueError naming the file and the column names given more than once (pandas
    would rename the second ``label`` to ``label.1`` and take the first as the target)."""
    seen = [str(c) for c in names if not pd.isna(c)]  # (unnamed columns are not a clash)
    twice = sorted({c for c in seen if seen.count(c) > 1})
    if twice:
        counts = ", ".join(f"{c!r} ({seen.count(c)} times)" for c in twice)
        raise ValueError(
            f"{path}: column name(s) given more than once: {counts}; a column is chosen by "
            "its name, so rename or remove the copies"
        )


def load_table(
    path: str | os.PathLike[str],
    target: str,
    *,
    features: Sequence[str] | None = None,
    positive: Any = None,
    categorical: str | None = None,
    missing: str = "error",
    name: str | None = None,
    frame: pd.DataFrame | None = None,
    sep: str = ",",
    decimal: str = ".",
) -> Dataset:
    """A classification data set from a table: ``target`` the labels, the other columns the inputs.

    Parameters
    ----------
    path : path
        The file (CSV, gzip CSV or Parquet; see :func:`read_table`), named in every message.
    target : str
        The column of class labels (any two or more distinct values). Labels are compared
        as text with surrounding whitespace stripped: ``" yes"``, ``"yes "`` and ``"yes"``
        are one class, ``1``, ``1.0`` and ``"1"`` another; a one-hot column's levels are
        stripped likewise.
    features : sequence of str, optional
        The input columns, in order (default: every column but ``target`` and a row
        index: a column without a name in the header, pandas' ``Unnamed: 0``, whose values
        are all distinct, as ``DataFrame.to_csv`` writes the index and R's ``write.csv``
        the row names, is not an input (``read_csv(index_col=0)`` would make it the
        index), and the report notes it; an unnamed column whose values repeat is refused).
    positive : optional
        The label of the +1 class (``y = 1``) of a binary set; compared as text, so
        ``"1"`` and ``1`` are the same. Default: the larger of the two sorted labels.
    categorical : {"onehot", "drop"}, optional
        Non-numeric input columns: one 0/1 column per level (``name=level``), or dropped.
        Without it such columns are refused.
    missing : {"error", "drop"}
        Rows with a missing value in ``target`` or an input column: refused (default), or
        dropped (the count is noted).
    name : str, optional
        The data set's name (default: the file name without its endings).
    frame : DataFrame, optional
        The table already read from ``path`` (it is not read again).
    sep, decimal : str
        A CSV file's field separator and decimal mark (:func:`read_table`).

    Returns
    -------
    Dataset
        Inputs unscaled; labels ``y`` indexing ``class_names`` (sorted labels, as text);
        ``info`` holds ``file``, ``sha256`` (of the file's bytes), ``rows`` (read),
        ``columns`` (used) and ``notes`` (what was dropped, for the report).

    Raises
    ------
    ValueError
        Naming the file, and the column and row where there is one: a missing file or
        column, a file with no rows, a non-numeric input column, missing or infinite
        values, a target with one class, a ``positive`` that is not a label, no input
        column left.
    """
    path = Path(path)
    if sep == decimal:
        raise ValueError(f"{path}: the separator and the decimal mark are both {sep!r}")
    df = read_table(path, sep=sep, decimal=decimal) if frame is None else frame
    df.columns = [str(c) for c in df.columns]
    if len(df) == 0:
        raise ValueError(
            f"{path}: has no rows, only a header ({len(df.columns)} column(s)): a data set "
            "needs one row per case"
        )
    if categorical is not None and categorical not in CATEGORICAL:
        raise ValueError(f"categorical must be one of {CATEGORICAL}, got {categorical!r}")
    if missing not in MISSING:
        raise ValueError(f"missing must be one of {MISSING}, got {missing!r}")
    notes: list[str] = []
    if features is None:
        features = _without_row_index(df, path, target, notes)
    features = _select_columns(path, list(df.columns), target, features)
    rows = _Rows(path)
    df = df[[*features, target]]
    n_read = len(df)
    df = _drop_missing(df, path, missing, rows, notes)
    df, features = _encode_text(df, features, path, categorical, rows, notes)
    X, features = _inputs(df, features, path, rows, notes)
    classes, y = _classes(df[target].to_numpy(), path, target, positive)
    counts = np.bincount(y, minlength=len(classes))
    balance = " / ".join(f"{k} {c}" for c, k in zip(classes, counts, strict=True))
    info = {
        "file": str(path),
        "sha256": file_sha256(path) if path.is_file() else None,
        "rows": n_read,
        "target": target,
        "columns": list(features),
        "notes": notes,
    }
    return Dataset(
        name=name or path.name.split(".")[0],
        X=X,
        y=y,
        feature_names=list(features),
        description=f"{path}: {len(y)} cases, {len(features)} inputs, target {target!r} "
        f"({balance})",
        class_names=tuple(classes),
        info=info,
    )


class _Rows:
    """How messages name a row: a 0-based position as a row (and, in a CSV file, the line)
    a person can find in the file."""

    def __init__(self, path: Path) -> None:
        self.line = 1 if path.name.lower().endswith(CSV_SUFFIXES) else None  # the header line

    def __call__(self, i: int) -> str:
        return f"row {i + 1}" + ("" if self.line is None else f" (line {i + 1 + self.line})")


#: pandas' name for a column without a name in the header.
_UNNAMED = re.compile(r"Unnamed: \d+")


def _without_row_index(df: pd.DataFrame, path: Path, target: str, notes: list[str]) -> list[str]:
    """Every column but the target and a row index (an unnamed column of distinct values:
    pandas' index or R's row names, written to the file with the data); a note says so.
    An unnamed column whose values repeat is refused (it is neither an index nor named)."""
    features = []
    for c in df.columns:
        if c == target:
            continue
        if not _UNNAMED.fullmatch(c):
            features.append(c)
            continue
        if df[c].notna().all() and df[c].is_unique:
            notes.append(
                f"column {c!r} (no name in the header, a distinct value in every row: a row "
                "index, as pandas' DataFrame.to_csv writes it) not used as an input; name it "
                "in the header, or list it in the features, to use it"
            )
            continue
        raise ValueError(
            f"{path}: column {c!r} has no name in the header and its values repeat, so it "
            "is not a row index: give it a name in the header, or list the inputs in "
            "features = [...]"
        )
    return features


def _select_columns(
    path: Path, columns: list[str], target: str, features: Sequence[str] | None
) -> list[str]:
    """The input columns (every column but the target by default), each checked present."""
    if target not in columns:
        hint = ""
        found = [s for s in ";\t|" if len(columns) == 1 and s in columns[0]]
        if found:
            hint = (
                f" (one column: the file looks separated by {found[0]!r}: set sep = "
                f'{json.dumps(found[0])}, and decimal = "," if its numbers have decimal commas)'
            )
        raise ValueError(f"{path}: no column {target!r} (the target); its columns: {columns}{hint}")
    if features is None:
        features = [c for c in columns if c != target]
    else:
        features = [str(c) for c in features]
        absent = [c for c in features if c not in columns]
        if absent:
            raise ValueError(f"{path}: no column(s) {absent} (features); its columns: {columns}")
        if target in features:
            raise ValueError(f"{path}: the target {target!r} is also listed among the features")
    if not features:
        raise ValueError(f"{path}: no input column besides the target {target!r}")
    return features


def _drop_missing(
    df: pd.DataFrame, path: Path, missing: str, rows: _Rows, notes: list[str]
) -> pd.DataFrame:
    """Missing values, counted per column: refused (``missing="error"``) or their rows
    dropped (and noted)."""
    holes = df.isna()
    if not holes.to_numpy().any():
        return df
    counts = {c: int(k) for c, k in holes.sum().items() if k}
    where = ", ".join(
        f"{c!r} {k} (first at {rows(int(np.flatnonzero(holes[c].to_numpy())[0]))})"
        for c, k in counts.items()
    )
    bad = holes.any(axis=1).to_numpy()
    if missing == "error":
        raise ValueError(
            f"{path}: missing values in column(s) {where}: fill them in, or set "
            f'missing = "drop" to drop those {int(bad.sum())} of {len(df)} rows'
        )
    notes.append(f"{int(bad.sum())} of {len(df)} rows dropped for missing values ({where})")
    return df.loc[~bad]


def _encode_text(
    df: pd.DataFrame,
    features: list[str],
    path: Path,
    categorical: str | None,
    rows: _Rows,
    notes: list[str],
) -> tuple[pd.DataFrame, list[str]]:
    """Non-numeric inputs: refused (``categorical=None``), dropped, or one-hot encoded
    (``name=level``, levels stripped of surrounding whitespace)."""
    text = [c for c in features if not _numeric(df[c])]
    if not text:
        return df, features
    if categorical is None:
        where = "; ".join(_first_text(df[c], c, rows) for c in text)
        raise ValueError(
            f"{path}: non-numeric feature column(s) {text} ({where}): set "
            'categorical = "onehot" (one 0/1 column per level) or categorical = "drop", '
            "or list the numeric columns in features = [...]"
        )
    if categorical == "drop":
        notes.append(f"non-numeric column(s) {text} dropped (categorical = 'drop')")
        features = [c for c in features if c not in text]
    else:
        levels = {c: sorted(df[c].astype(str).str.strip().unique()) for c in text}
        notes.append(
            "one-hot encoded: " + "; ".join(f"{c!r} ({len(v)} levels)" for c, v in levels.items())
        )
        expanded = []
        for c in features:
            if c not in text:
                expanded.append(c)
                continue
            for level in levels[c]:
                is_level = df[c].astype(str).str.strip() == level
                df = df.assign(**{f"{c}={level}": is_level.astype(float)})
                expanded.append(f"{c}={level}")
        features = expanded
    if not features:
        raise ValueError(f"{path}: no numeric input column left after dropping {text}")
    return df, features


def _inputs(
    df: pd.DataFrame, features: list[str], path: Path, rows: _Rows, notes: list[str]
) -> tuple[np.ndarray, list[str]]:
    """The inputs as floats: an infinite value refused (naming its column and row),
    constant columns (no information) dropped and noted."""
    X = df[features].to_numpy(dtype=float)
    infinite = ~np.isfinite(X)
    if infinite.any():
        i, j = (int(v[0]) for v in np.nonzero(infinite))
        raise ValueError(
            f"{path}: column {features[j]!r} holds an infinite value at {rows(_position(df, i))}"
        )
    constant = [c for j, c in enumerate(features) if X.shape[0] and np.all(X[:, j] == X[0, j])]
    if constant:
        notes.append(
            f"constant column(s) {constant} dropped (one value in every row: no information)"
        )
        keep = [j for j, c in enumerate(features) if c not in constant]
        X, features = X[:, keep], [features[j] for j in keep]
        if not features:
            raise ValueError(f"{path}: every input column is constant: nothing to classify by")
    return X, features


def _classes(labels: np.ndarray, path: Path, target: str, positive: Any) -> tuple[list, np.ndarray]:
    """The classes (labels as text, sorted; a binary set's ``positive`` second) and ``y``,
    each case's class index."""
    names = [_label_text(v) for v in labels]
    classes = sorted(set(names), key=_label_key)
    if len(classes) < 2:
        only = classes[0] if classes else "none"
        raise ValueError(
            f"{path}: the target column {target!r} has one class ({only!r} in all {len(names)} "
            "rows): a classifier needs cases of at least two classes"
        )
    if positive is not None:
        if _label_text(positive) not in classes:
            raise ValueError(
                f"{path}: positive = {positive!r} is not a label of column {target!r}; its "
                f"labels: {classes}"
            )
        if len(classes) == 2:  # the positive class second: y = 1
            classes = [c for c in classes if c != _label_text(positive)] + [_label_text(positive)]
    index = {c: k for k, c in enumerate(classes)}
    return classes, np.array([index[c] for c in names], dtype=int)


def _numeric(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column)


def _first_text(column: pd.Series, name: str, row) -> str:
    """Where a column first holds a value that is not a number: ``'x' row 3: 'abc'``."""
    values = pd.to_numeric(column, errors="coerce")
    bad = np.flatnonzero(values.isna().to_numpy() & column.notna().to_numpy())
    if bad.size == 0:  # pragma: no cover (a non-numeric dtype holds some non-number)
        return f"{name!r}"
    i = int(bad[0])
    return f"{name!r} {row(_position_of(column, i))}: {column.iloc[i]!r}"


def _position(df: pd.DataFrame, i: int) -> int:
    """Row ``i`` of ``df`` (after rows were dropped) as its position in the file."""
    return _position_of(df.iloc[:, 0], i)


def _position_of(column: pd.Series, i: int) -> int:
    label = column.index[i]
    return int(label) if isinstance(label, int | np.integer) else i


def _label_text(value: Any) -> str:
    """A label as text: integral floats as integers (``1.0`` -> ``"1"``, as a CSV with gaps
    reads an integer column), and text without surrounding whitespace (``" yes"``,
    ``"yes "`` and ``"yes"`` are one label: the CSV reader strips the leading space only,
    which made ``"yes "`` a third class)."""
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, np.generic):
        value = value.item()
    return str(value).strip()


def _label_key(text: str) -> tuple[int, float, str]:
    """Sort numbers numerically, then text alphabetically."""
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)
