"""Where jobs run: in this process, on local worker processes, or on a Dask cluster.

Each executor has ``capacity`` (jobs in flight), ``submit(fn, *args)`` returning a future,
``wait(futures)`` returning the finished ones, and ``close(cancel)``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from multiprocessing import context as _mp

__all__ = ["DaskExecutor", "LocalExecutor", "SerialExecutor"]


class Deferred:
    """A job of the serial executor: run when waited for, so each result is saved at once."""

    def __init__(self, fn: Callable, args: tuple, executor: SerialExecutor) -> None:
        self.fn, self.args, self.executor = fn, args, executor

    def result(self):
        out = self.fn(*self.args)
        if self.executor.interrupted:  # a sampler caught the Ctrl-C and returned early
            raise KeyboardInterrupt
        return out


class SerialExecutor:
    """Runs the jobs one at a time in this process (``workers=1``).

    PyMC and nutpie catch ``KeyboardInterrupt`` and return the draws so far, so a Ctrl-C
    during sampling would end that job early and start the next: a SIGINT handler
    records it, and the job's result is discarded in favour of stopping.
    """

    capacity = 1

    def __init__(self) -> None:
        import signal
        import threading

        self.interrupted = False
        self._previous = None
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)

    def _on_sigint(self, signum, frame) -> None:
        self.interrupted = True
        raise KeyboardInterrupt

    def submit(self, fn: Callable, *args) -> Deferred:
        return Deferred(fn, args, self)

    @staticmethod
    def wait(futures):
        return {futures[0]}  # the caller's result() runs it

    def close(self, cancel: bool = False) -> None:
        import signal

        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None


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
            initializer=_ignore_sigint,  # Ctrl-C is the parent's to handle
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


def _ignore_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


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
        # as many jobs in flight as the cluster has threads, so "running" means running
        self.capacity = max(1, sum(self.client.nthreads().values()))

    def submit(self, fn: Callable, *args):
        return self.client.submit(fn, *args, pure=False)

    @staticmethod
    def wait(futures):
        from distributed import wait

        return wait(list(futures), return_when="FIRST_COMPLETED").done

    def close(self, cancel: bool = False) -> None:
        self.client.close()
