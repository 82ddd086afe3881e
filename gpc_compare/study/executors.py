"""Where jobs run: in this process, on local worker processes, or on a Dask cluster.

Each executor has ``capacity`` (jobs in flight), ``submit(fn, *args)`` returning a future,
``wait(futures)`` returning the finished ones, ``result(future)`` a finished one's
result, and ``close(cancel)``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import CancelledError
from multiprocessing import context as _mp

__all__ = [
    "DaskExecutor",
    "LocalExecutor",
    "SchedulerLost",
    "SerialExecutor",
    "Terminated",
    "WorkerDied",
    "raise_terminated",
]


class Terminated(KeyboardInterrupt):
    """SIGTERM (what ``timeout`` and batch schedulers send), handled like Ctrl-C: the run
    stops, its workers are stopped, finished jobs are kept."""


class WorkerDied(RuntimeError):
    """A job's worker process died under it (killed by a signal or the out-of-memory
    killer), twice: once among other jobs, once alone (the runner's retry)."""


class SchedulerLost(RuntimeError):
    """The Dask scheduler stopped answering in the middle of a run: the jobs finished
    before are kept; rerunning the same command resumes."""


def raise_terminated(signum, frame) -> None:
    """A SIGTERM handler: raise :class:`Terminated` in the main thread.

    Parameters
    ----------
    signum : int
        The signal's number (unused).
    frame : frame or None
        The interrupted stack frame (unused).

    Raises
    ------
    Terminated
        Always.
    """
    raise Terminated


class Deferred:
    """A job of the serial executor: run when waited for, so each result is saved at once."""

    def __init__(self, fn: Callable, args: tuple, executor: SerialExecutor) -> None:
        self.fn, self.args, self.executor = fn, args, executor

    def result(self):
        out = self.fn(*self.args)
        if self.executor.interrupted:  # a sampler caught the Ctrl-C and returned early
            raise self.executor.interrupted
        return out


class SerialExecutor:
    """Runs the jobs one at a time in this process (``workers=1``).

    PyMC and nutpie catch ``KeyboardInterrupt`` and return the draws so far, so a Ctrl-C
    (or a SIGTERM, :class:`Terminated`) during sampling would end that job early and start
    the next: a handler records it, and the job's result is discarded in favour of
    stopping.
    """

    capacity = 1

    def __init__(self) -> None:
        import signal
        import threading

        self.interrupted: type[KeyboardInterrupt] | None = None
        self._previous: dict[int, object] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._on_signal)

    def _on_signal(self, signum, frame) -> None:
        import signal

        self.interrupted = Terminated if signum == signal.SIGTERM else KeyboardInterrupt
        raise self.interrupted

    def submit(self, fn: Callable, *args) -> Deferred:
        return Deferred(fn, args, self)

    @staticmethod
    def wait(futures):
        return {futures[0]}  # the caller's result() runs it

    @staticmethod
    def result(future):
        """The job's record (run now: :class:`Deferred`)."""
        return future.result()

    def close(self, cancel: bool = False) -> None:
        import signal

        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}


class LocalExecutor:
    """Local worker processes (``concurrent.futures``, forkserver start method).

    The workers do not run the caller's ``__main__`` script (:func:`_without_main`): a job
    is a function of this package, so a script that runs a study needs no
    ``if __name__ == "__main__":`` guard, and is not run again in every worker.
    """

    def __init__(self, workers: int) -> None:
        from concurrent.futures import ProcessPoolExecutor

        self._make = lambda: ProcessPoolExecutor(
            max_workers=workers,
            mp_context=_without_main(),
            initializer=_start_worker,  # Ctrl-C is the parent's; the parent's death ends it
            initargs=(os.getpid(),),
        )
        self.capacity = workers
        self.pool = self._make()

    def submit(self, fn: Callable, *args):
        from concurrent.futures.process import BrokenProcessPool

        try:
            return self.pool.submit(fn, *args)
        except BrokenProcessPool:  # a worker died (killed, out of memory): start afresh
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = self._make()
            return self.pool.submit(fn, *args)

    @staticmethod
    def wait(futures):
        from concurrent.futures import FIRST_COMPLETED, wait

        return wait(futures, return_when=FIRST_COMPLETED).done

    @staticmethod
    def result(future):
        """A finished job's record (BrokenProcessPool where a worker died)."""
        return future.result()

    def close(self, cancel: bool = False) -> None:
        processes = list((getattr(self.pool, "_processes", None) or {}).values())
        self.pool.shutdown(wait=not cancel, cancel_futures=cancel)
        if cancel:  # an interrupted run: stop the jobs in flight too (their results are lost)
            for process in processes:
                process.terminate()


def _without_main():
    """The forkserver context, its processes started as if ``__main__`` had no file.

    multiprocessing re-runs the parent's main script in each child started by spawn or
    forkserver (so that functions defined there can be unpickled), which starts the study
    again in every worker of a script without a ``__main__`` guard (and fails with
    "An attempt has been made to start a new process before the current process has
    finished its bootstrapping phase"). The jobs need nothing from ``__main__``.
    """
    import multiprocessing

    multiprocessing.get_context("forkserver")  # (a ValueError where there is no forkserver)
    return _MainlessContext()


if hasattr(_mp, "ForkServerContext"):  # (POSIX)

    class _MainlessProcess(_mp.ForkServerProcess):
        """A forkserver process whose preparation data name no main script to re-run."""

        def start(self) -> None:
            main = sys.modules["__main__"]
            saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__}
            main.__dict__.pop("__file__", None)
            main.__spec__ = None  # (multiprocessing reads it; a script run by path has None)
            try:
                super().start()
            finally:
                main.__dict__.pop("__spec__", None)
                main.__dict__.update(saved)

    class _MainlessContext(_mp.ForkServerContext):
        Process = _MainlessProcess


def _start_worker(parent: int) -> None:
    """A worker ignores Ctrl-C (the parent stops the run) and exits when the parent is
    gone, however it went (SIGKILL included): a watchdog thread checks every
    :data:`WATCH_SECONDS`. (A worker is the forkserver's child, not the parent's, so a
    parent-death signal would watch the wrong process.)"""
    import signal
    import threading

    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while _alive(parent):
            time.sleep(WATCH_SECONDS)
        os._exit(1)  # (the job in flight is lost: its parent can no longer record it)

    threading.Thread(target=watch, name="gpc-compare-watchdog", daemon=True).start()


#: How often a worker checks that the run that started it is alive.
WATCH_SECONDS = 1.0


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (dead, not yet reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # (someone else's process has taken the pid)
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):  # (no /proc: macOS)
        return True


class DaskExecutor:
    """A Dask distributed cluster at ``address`` (``tcp://host:port``)."""

    def __init__(self, address: str) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise ValueError(
                "--scheduler needs Dask distributed: pip install 'gpc_compare[dask]'"
            ) from None
        try:
            self.client = Client(address, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise ValueError(f"cannot connect to the Dask scheduler at {address}: {exc}") from None
        except Exception as exc:  # (something answers there, but not Dask's protocol)
            raise ValueError(
                f"{address} answers, but not as a Dask scheduler ({type(exc).__name__}: "
                f"{str(exc)[:200]}): check the address and port of `dask scheduler`"
            ) from None
        self.address = address
        # as many jobs in flight as the cluster has threads, so "running" means running
        self.capacity = max(1, sum(self.client.nthreads().values()))

    def submit(self, fn: Callable, *args):
        return self.client.submit(fn, *args, pure=False)

    def wait(self, futures):
        """The finished futures; a scheduler that stopped answering (its futures
        cancelled, the connection closed) is :class:`SchedulerLost`."""
        from distributed import wait

        try:
            return wait(list(futures), return_when="FIRST_COMPLETED").done
        except (CancelledError, OSError) as exc:  # (CommClosedError is an OSError)
            raise self.lost(exc) from None

    def result(self, future):
        """A finished job's record; a job cancelled because the scheduler went away is
        :class:`SchedulerLost`, not a failure of the job."""
        try:
            return future.result()
        except (CancelledError, OSError) as exc:
            raise self.lost(exc) from None

    def lost(self, exc: BaseException) -> SchedulerLost:
        """What the run says when the scheduler stopped answering."""
        reason = " ".join(str(exc).split())[:300]
        return SchedulerLost(
            f"the Dask scheduler at {self.address} stopped answering in the middle of the "
            f"run ({type(exc).__name__}: {reason})"
        )

    def close(self, cancel: bool = False) -> None:
        try:
            self.client.close(timeout=10)
        except Exception:  # noqa: BLE001 - a scheduler already gone: nothing left to close
            pass
