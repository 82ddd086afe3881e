"""One run at a time per output directory: a lock file holding the running process's pid.

The lock is an ``flock`` on ``DIR/NAME/.lock``: the operating system releases it when its
holder exits, however it exits, so a lock left by a killed run is simply taken over. The
pid written into the file is for the message a second run prints.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

__all__ = ["OutputBusy", "output_lock"]


class OutputBusy(ValueError):
    """Another run is writing to the same study output (exit code 2 on the command line)."""


@contextmanager
def output_lock(
    result_dir: Path, *, wait: bool = False, stream: TextIO | None = None
) -> Iterator[None]:
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

    Raises
    ------
    OutputBusy
        (a ValueError) naming the other run's pid and the directory.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - (Windows: no lock)
        yield
        return
    path = result_dir / ".lock"
    with open(path, "a+", encoding="ascii") as fh:
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
        try:
            yield
        finally:
            fh.seek(0)
            fh.truncate()
            fh.flush()
            fcntl.flock(fh, fcntl.LOCK_UN)
