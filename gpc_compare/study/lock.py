"""One run at a time per output directory: a lock file holding the running process's pid.

The lock is an ``flock`` on ``DIR/NAME/.lock``: the operating system releases it when its
holder exits, however it exits, so a lock left by a killed run is simply taken over. The
pid written into the file is for the message a second run prints.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from .output import refuse_link

__all__ = ["Held", "OutputBusy", "output_lock"]


class OutputBusy(ValueError):
    """Another run is writing to the same study output (exit code 2 on the command line)."""


@dataclass
class Held:
    """The lock of an output directory, held by the ``with`` block that made it: passed to
    :func:`~gpc_compare.study.run_study` (``lock=``) by a caller that writes into the
    directory before the run and so took the lock first."""

    result_dir: Path
    active: bool = True

    def covers(self, result_dir: str | os.PathLike[str]) -> bool:
        """Whether this lock is held and is ``result_dir``'s."""
        return self.active and Path(result_dir).resolve() == self.result_dir.resolve()


@contextmanager
def output_lock(
    result_dir: Path, *, wait: bool = False, stream: TextIO | None = None
) -> Iterator[Held]:
    """Hold the lock of ``result_dir`` for the duration of the ``with`` block.

    Parameters
    ----------
    result_dir : Path
        A study's output directory (it exists).
    wait : bool
        When another run holds the lock: wait for it (saying so on ``stream``) instead of
        raising :class:`OutputBusy`.
    stream : text stream, optional
        Where the "waiting for" line goes.

    Yields
    ------
    Held
        The lock, for :func:`~gpc_compare.study.run_study` (``lock=``).

    Raises
    ------
    OutputBusy
        (a ValueError) naming the other run's pid and the directory.
    ValueError
        If ``.lock`` is a symbolic link, a hard link or not a regular file (it is written
        in place, so writing it would change another file).
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - (Windows: no lock)
        yield Held(Path(result_dir))
        return
    with _open_lock(Path(result_dir) / ".lock") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            if not wait:
                raise OutputBusy(
                    f"another run (pid {holder}) is writing to {result_dir}: wait for it to "
                    "finish (or pass --wait), or write elsewhere with --output"
                ) from None
            print(
                f"waiting for the run (pid {holder}) writing to {result_dir}",
                file=stream or sys.stderr,
                flush=True,
            )
            fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        held = Held(Path(result_dir))
        try:
            yield held
        finally:
            held.active = False
            fh.seek(0)
            fh.truncate()
            fh.flush()
            fcntl.flock(fh, fcntl.LOCK_UN)


def _open_lock(path: Path) -> TextIO:
    """The lock file, opened for reading and writing (made if missing), never through a
    link: a symbolic link, a second hard link or anything but a regular file is refused."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    what = "the lock"
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        refuse_link(path, what)  # (O_NOFOLLOW: a link fails to open)
        raise exc from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        kind = "not a regular file" if not stat.S_ISREG(info.st_mode) else "a hard link"
        raise ValueError(
            f"refusing to write {what} to {path}: it is {kind} (writing it would change "
            "another file); remove it and run again"
        )
    return os.fdopen(fd, "r+", encoding="ascii")
