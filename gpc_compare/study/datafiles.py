"""A study's data sets that are files: ``[[datasets]] file = "data/mine.csv"  target = "label"``.

:func:`file_dataset` reads and checks the file once, when the study is loaded (every
refusal names the study field, the file, the column and the row), and returns a
:class:`DatasetSpec` that carries the prepared arrays: a job (in this process, a worker
process or on a Dask cluster) never reads the file again. Its options hold the digest of
the data's content (:func:`~gpc_compare.datasets.files.data_digest`), so job ids change
when the numbers change and stay when only the path or the file format does: resuming
works after the data are moved, and a stale result is never reused.

:func:`copy_study` writes the copy of a study kept with its results so that its relative
paths still find the files (a ``data_dir`` line naming the original study's folder), and
:func:`check_same_data` refuses to put the study of one data file in the folder of
another's (two files of one stem compared into one output).
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..datasets.files import CATEGORICAL, MISSING, data_digest, file_sha256, load_table
from .output import atomic_write
from .problem import DatasetSpec

__all__ = [
    "FILE_HINT",
    "FILE_KEYS",
    "LABEL_PATTERN",
    "check_label",
    "check_same_data",
    "copy_study",
    "data_dir",
    "file_dataset",
]

#: The fields of a ``[[datasets]]`` table that names a file.
FILE_KEYS = (
    "file",
    "target",
    "features",
    "label",
    "positive",
    "categorical",
    "missing",
    "subsample",
    "sep",
    "decimal",
)
#: The hint for someone who names a file where a bundled data set's name goes.
FILE_HINT = 'for a file of your own: [[datasets]] file = "data.csv"  target = "COLUMN"'
#: What a label that becomes part of a file name (a job id) may hold.
LABEL_PATTERN = re.compile(r"[A-Za-z0-9_.-]+")


def check_label(value: Any, field: str | None = None) -> str:
    """``value`` if it is a label safe in a file name (``[A-Za-z0-9_.-]+``, not ``.`` or ``..``).

    Raises
    ------
    ValueError
        Naming ``field`` when given.
    """
    if not isinstance(value, str) or not LABEL_PATTERN.fullmatch(value) or value in (".", ".."):
        raise ValueError(
            f"{field + ': ' if field else ''}must be letters, digits, '_', '.' or '-' (it "
            f"becomes part of file names), and not '.' or '..', got {value!r}"
        )
    return value


def data_dir(raw: Mapping[str, Any], study_path: str | os.PathLike[str]) -> Path:
    """The folder a study's relative ``file`` paths start from: ``data_dir`` (itself
    relative to the study file) or the study file's folder, the folder it is named in (a
    link there is not followed: ``compare`` checks its study at its own name, where a link
    is then replaced, and its relative data path counts from there)."""
    base = Path(study_path).absolute().parent.resolve()
    given = raw.get("data_dir")
    if given is None:
        return base
    if not isinstance(given, str) or not given:
        raise ValueError(f"data_dir (top level): must be a folder path, got {given!r}")
    return (base / given).resolve()


def file_dataset(
    item: Mapping[str, Any],
    base: Path,
    likelihood: str,
    binary: bool,
    folds: int,
) -> DatasetSpec:
    """Read, check and prepare the data set of a ``[[datasets]]`` table with a ``file``.

    Parameters
    ----------
    item : mapping
        The table: ``file`` and ``target`` (required), ``features``, ``label`` (default:
        the file name without its endings), ``positive``, ``categorical``, ``missing``,
        ``subsample``, ``sep`` and ``decimal`` (a CSV file's field separator and decimal
        mark, one character each) (see :func:`gpc_compare.datasets.files.load_table`).
    base : Path
        The folder a relative ``file`` is taken from.
    likelihood : str
        The study's likelihood, named when a binary one meets more than two classes.
    binary : bool
        Whether that likelihood takes two classes only.
    folds : int
        The cases the smaller class needs (one per stratified fold).

    Returns
    -------
    DatasetSpec
        With ``file`` (the resolved path) and ``data`` (the prepared data set) set.

    Raises
    ------
    ValueError
        A message naming the field, or the file, column and row.
    """
    unknown = sorted(set(item) - set(FILE_KEYS))
    if unknown:
        raise ValueError(f"unknown field(s) {unknown} for a file data set; allowed: {FILE_KEYS}")
    given = item["file"]
    if not isinstance(given, str) or not given:
        raise ValueError(f"file: must be a path, got {given!r}")
    target = item.get("target")
    if not isinstance(target, str) or not target:
        raise ValueError(f'target: name the column of class labels (target = "...") in {given}')
    features = item.get("features")
    if features is not None and (
        not isinstance(features, list)
        or not features
        or not all(isinstance(f, str) for f in features)
    ):
        raise ValueError(f"features: must be a non-empty list of column names, got {features!r}")
    categorical = item.get("categorical")
    if categorical is not None and categorical not in CATEGORICAL:
        raise ValueError(f"categorical: must be one of {CATEGORICAL}, got {categorical!r}")
    missing = item.get("missing", "error")
    if missing not in MISSING:
        raise ValueError(f"missing: must be one of {MISSING}, got {missing!r}")
    positive = item.get("positive")
    if positive is not None and not isinstance(positive, str | int | bool):
        raise ValueError(f"positive: must be a label (text, integer or boolean), got {positive!r}")
    path = Path(given).expanduser()
    path = (path if path.is_absolute() else base / path).resolve()
    label = check_label(item.get("label", path.name.split(".")[0]), "label")
    subsample = item.get("subsample")
    if subsample is not None and (
        isinstance(subsample, bool) or not isinstance(subsample, int) or subsample < 10
    ):
        raise ValueError(f"subsample: must be an integer >= 10, got {subsample!r}")
    csv = {}
    for key in ("sep", "decimal"):
        value = item.get(key)
        if value is not None and (not isinstance(value, str) or len(value) != 1):
            raise ValueError(f"{key}: must be one character (e.g. ';'), got {value!r}")
        if value is not None:
            csv[key] = value
    data = load_table(
        path,
        target,
        features=features,
        positive=positive,
        categorical=categorical,
        missing=missing,
        name=label,
        **csv,
    )
    if binary and data.n_classes > 2:
        raise ValueError(
            f"{path}: the target column {target!r} has {data.n_classes} classes "
            f"{list(data.class_names)}, and likelihood = {likelihood!r} is binary: use "
            'likelihood = "softmax" for several classes, or keep two of them'
        )
    counts = np.bincount(data.y, minlength=data.n_classes)
    if subsample is not None:
        counts = np.floor(counts * min(1.0, subsample / data.n_samples)).astype(int)
    if counts.min() < folds:
        k = int(np.argmin(counts))
        raise ValueError(
            f"{path}: class {data.class_names[k]!r} of column {target!r} has {counts[k]} "
            f"case(s){' in the subsample' if subsample is not None else ''}, too few for "
            f"{folds} stratified folds: use fewer splits (n_splits) or more cases"
        )
    return DatasetSpec(
        name=label,
        options={"data_sha256": data_digest(data)},
        subsample=subsample,
        file=str(path),
        data=data,
    )


def copy_study(study_path: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Copy a study file to ``target`` (its results folder), adding ``data_dir`` (the
    original folder, absolute) when it names data files, so their relative paths resolve."""
    text = Path(study_path).read_text()
    raw = tomllib.loads(text)
    files = [d for d in raw.get("datasets", []) if isinstance(d, dict) and "file" in d]
    if files:
        folder = data_dir(raw, study_path)
        lines = text.splitlines()
        top = next((i for i, s in enumerate(lines) if s.lstrip().startswith("[")), len(lines))
        kept = [s for s in lines[:top] if not re.match(r"\s*data_dir\s*=", s)] + lines[top:]
        header = [
            "# the folder of the original study file: relative data-file paths start there",
            f"data_dir = {json.dumps(str(folder))}",
        ]
        text = "\n".join(header + kept) + "\n"
    atomic_write(target, text.encode())  # (a link at target is replaced, not followed)


def check_same_data(result_dir: str | os.PathLike[str], datasets: Sequence[DatasetSpec]) -> None:
    """Refuse to put a study of ``datasets`` in a folder that holds the study of another
    data file (``gpc-compare compare`` asks, under the folder's lock, before writing).

    Two files of one stem (``a/data.csv`` and ``b/data.csv``) compared into one
    ``--output`` map to one folder, ``OUTPUT/data``: the second would replace the first's
    study, table and report. A data set read from a file is the folder's own
    when the folder's ``study.toml`` names the same path under its label (an edited file
    is compared again), or a file with the same bytes (a moved file resumes; the SHA-256
    recorded in ``run.json``, else the old file's, when it is still there).

    Raises
    ------
    ValueError
        Naming the folder, both files, and what to do.
    """
    before = _folder_data(Path(result_dir))
    for spec in datasets:
        if spec.file is None or spec.data is None or spec.label not in before:
            continue
        old, sha = before[spec.label]
        if old == Path(spec.file):
            continue
        if sha is None and old.is_file():  # (a regular file only: never a FIFO)
            sha = file_sha256(old)
        if sha is None or sha == spec.data.info.get("sha256"):
            continue
        raise ValueError(
            f"{result_dir} holds the study of another data file, {old} (data set "
            f"{spec.label!r}), and {spec.file} is a different file: comparing it there "
            "would replace that study's table and report. Give it a folder of its own "
            f"(--name NAME, or another --output), or remove {result_dir} to start again"
        )


def _folder_data(result_dir: Path) -> dict[str, tuple[Path, str | None]]:
    """The data files the study in ``result_dir`` names: label -> (resolved path, its
    SHA-256 as ``run.json`` records it, or None). A folder without a readable study names
    none."""
    study_file = result_dir / "study.toml"
    try:
        raw = tomllib.loads(study_file.read_text()) if study_file.is_file() else {}
        base = data_dir(raw, study_file)
    except (OSError, ValueError, RecursionError):  # (damaged: nothing to compare with)
        return {}
    found = {}
    for item in raw.get("datasets", []) if isinstance(raw.get("datasets"), list) else []:
        file = item.get("file") if isinstance(item, dict) else None
        if isinstance(file, str) and file:
            label = item.get("label", Path(file).name.split(".")[0])
            found[str(label)] = ((base / Path(file).expanduser()).resolve(), None)
    try:
        recorded = json.loads((result_dir / "run.json").read_text()).get("data", {})
    except (OSError, ValueError, RecursionError, AttributeError):
        recorded = {}
    for label, (path, _) in found.items():
        entry = recorded.get(label) if isinstance(recorded, dict) else None
        if isinstance(entry, dict) and entry.get("file") == str(path):
            found[label] = (path, entry.get("sha256"))
    return found


def data_provenance(specs: Sequence[DatasetSpec]) -> list[str]:
    """Report lines (markdown) for the data sets read from files: the file, its SHA-256,
    its size, the inputs used, the rows read and used, and every note of what was dropped
    (which columns and rows, and why) or encoded."""
    lines = []
    for spec in specs:
        if spec.data is None:
            continue
        info = spec.data.info
        lines.append(
            f"- Data `{spec.label}`: file `{spec.file}` (sha256 {info['sha256']}); "
            f"{spec.data.description.split(': ', 1)[-1]}"
            + (f"; subsample {spec.subsample}" if spec.subsample is not None else "")
        )
        lines.append(f"  - inputs used ({len(info['columns'])}): {_names(info['columns'])}")
        lines.append(f"  - rows read: {info['rows']}; kept: {spec.data.n_samples}")
        lines += [f"  - note: {note}" for note in info["notes"]]
    return lines


def _names(columns: Sequence[str], most: int = 40) -> str:
    """Column names for the report, the first ``most`` of them."""
    shown = ", ".join(f"`{c}`" for c in columns[:most])
    return shown + (f" and {len(columns) - most} more" if len(columns) > most else "")
