"""Writing inside a study's output folder, never through a symbolic link.

Every file the study runner, its report and ``gc.compare`` write under ``OUTPUT/NAME``
(``study.toml``, ``run.json``, ``results.csv``, ``jobs.csv``, ``jobs/ID.json``,
``jobs/ID.nc``, ``report.md``, ``figures/*.png``, ``data.csv``) goes through
:func:`atomic_write`: a new file beside it, flushed, then renamed over the name
(``os.replace``). The rename replaces whatever the name was, a symbolic link or a hard link
included, so the file a link pointed at is never written; and a reader sees the old file or
the new, never half of one. The folders they write into (``jobs/``, ``figures/``) are made
by :func:`output_folder`, which refuses one that is a symbolic link: what went into it
would land outside the output. (``OUTPUT`` and ``OUTPUT/NAME`` themselves may be links:
where a study's results go is the user's choice.) The lock file (``.lock``) is opened
by :mod:`.lock`, which refuses a link there too: it is written in place.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

__all__ = ["atomic_write", "copy_results", "output_folder", "refuse_link"]


def refuse_link(path: str | os.PathLike[str], what: str) -> None:
    """A ValueError if ``path`` is a symbolic link, saying that ``what`` would be written
    through it, to the file or folder it points at, and what to do."""
    if os.path.islink(path):
        raise ValueError(
            f"refusing to write {what} through {path}: it is a symbolic link (to "
            f"{os.readlink(path)}), so the writing would land outside the output; remove "
            "the link and run again"
        )


def output_folder(path: str | os.PathLike[str], *, parents: bool = False) -> Path:
    """The folder ``path`` inside a study's output, made if missing.

    Raises
    ------
    ValueError
        If ``path`` is a symbolic link (files written into it would land outside the
        output).
    """
    refuse_link(path, "files")
    path = Path(path)
    path.mkdir(parents=parents, exist_ok=True)
    return path


def atomic_write(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader sees the old file or the new, never half,
    and a link at ``path`` is replaced, never written through.

    A new file (``.NAME.PID.RANDOM.tmp``, made exclusively: an existing name, a link
    included, is never opened) is written and flushed in the same folder, then renamed over
    ``path``; on failure it is removed.
    """
    path = Path(path)
    while True:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(tmp, flags | getattr(os, "O_CLOEXEC", 0), 0o666)
        except FileExistsError:  # pragma: no cover - (a 32-bit random name taken)
            continue
        break
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def copy_results(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Copy a study's results folder (its regular files and folders; links are left out)
    into ``target``, each file with :func:`atomic_write` and each folder with
    :func:`output_folder`, so nothing is written through a link in ``target``."""
    source, target = Path(source), Path(target)
    output_folder(target, parents=True)
    for folder, dirs, files in os.walk(source):  # (os.walk does not follow links)
        here = Path(folder)
        into = target / here.relative_to(source)
        for name in sorted(dirs):
            if not (here / name).is_symlink():
                output_folder(into / name)
        for name in sorted(files):
            path = here / name
            temporary = name.startswith(".") and name.endswith(".tmp")
            if name != ".lock" and not temporary and not path.is_symlink() and path.is_file():
                atomic_write(into / name, path.read_bytes())
