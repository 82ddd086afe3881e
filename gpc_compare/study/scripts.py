"""Figure-study scripts (``studies/NAME.py`` with ``run(output)``) and the study list."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from .config import StudyError, load_study
from .jobs import expand

__all__ = ["check_study_script", "list_studies", "load_study_script"]


def check_study_script(path: str | os.PathLike[str]) -> None:
    """Check a study script without running it: a readable Python file that parses and
    defines ``run`` at its top level (a :class:`StudyError` otherwise).

    ``gpc-compare run`` checks every file so before it runs any: a script is Python that
    runs with your permissions, and it runs only once every TOML study has been read.

    Parameters
    ----------
    path : path
        The study script, ``studies/NAME.py``.

    Raises
    ------
    StudyError
        When the file is missing, does not parse as Python or defines no ``run``.
    """
    import ast

    p = Path(path)
    if not p.is_file():
        raise StudyError(f"{p}: no such study script")
    try:
        tree = ast.parse(p.read_bytes(), filename=str(p))
    except (SyntaxError, ValueError) as exc:
        raise StudyError(f"{p}: not a Python study script: {exc}") from None
    defined = set()
    for node in tree.body:  # def run(...), run = ..., from ... import run
        if isinstance(node, ast.FunctionDef):
            defined.add(node.name)
        elif isinstance(node, ast.Assign):
            defined |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            defined |= {alias.asname or alias.name for alias in node.names}
    if "run" not in defined:
        raise StudyError(f"{p}: a study script must define run(output), which writes results")


def load_study_script(path: str | os.PathLike[str]):
    """Import a figure study script ``studies/NAME.py`` and check it has ``run(output)``.

    Parameters
    ----------
    path : path
        A Python file defining ``run(output: pathlib.Path) -> None``, which writes its
        tables, figures and ``README.md`` into ``output`` (``results/NAME``).

    Returns
    -------
    module
        The imported module.

    Raises
    ------
    StudyError
        When the file is missing or has no callable ``run``.
    """
    import importlib.util

    p = Path(path)
    check_study_script(p)
    spec = importlib.util.spec_from_file_location(f"gpc_compare_study_{p.stem}", p)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses and pickling look the module up there)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "run", None)):
        raise StudyError(f"{p}: a study script must define run(output), which writes results")
    return module


def _docstring_line(path: Path) -> str:
    import ast

    try:
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    except (OSError, SyntaxError, ValueError):
        return "(unreadable)"
    return f"(script) {doc.strip().splitlines()[0] if doc.strip() else ''}"


def list_studies(directory: str | os.PathLike[str] = "studies") -> list[dict[str, Any]]:
    """The study files in ``directory``: name, path, description, or the error if malformed.

    Parameters
    ----------
    directory : path
        Where the study files are (``*.py`` scripts and ``*.toml`` studies).

    Returns
    -------
    list of dict
        One per file, scripts first, each in name order: keys ``name``, ``path``, ``jobs``
        (a script counts as one job; a malformed TOML study as none) and ``description``
        (the script's docstring line, the study's description, or the error message).
    """
    out = []
    for path in sorted(Path(directory).glob("*.py")):
        doc = _docstring_line(path)
        out.append({"name": path.stem, "path": str(path), "jobs": 1, "description": doc})
    for path in sorted(Path(directory).glob("*.toml")):
        try:
            cfg = load_study(path)
            out.append(
                {
                    "name": cfg.name,
                    "path": str(path),
                    "jobs": len(expand(cfg)),
                    "description": cfg.description,
                }
            )
        except StudyError as exc:  # (the file named by its name: the list says where it is)
            error = str(exc).replace(str(path), path.name, 1)
            out.append({"name": path.stem, "path": str(path), "jobs": 0, "description": error})
    return out
