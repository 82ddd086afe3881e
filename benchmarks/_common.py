"""What the benchmark scripts share: the synthetic data, timing, machine facts, output."""

from __future__ import annotations

import csv
import datetime as dt
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy
from threadpoolctl import threadpool_info

import gpc_compare as gc

LABEL_NOISE = 0.1
SEED = 20240601


def make_data(n: int, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic 2-D binary data: a smooth decision function plus label noise.

    Parameters
    ----------
    n : int
        Number of points.
    seed : int
        Seed of the generator (the same n and seed give the same data).

    Returns
    -------
    X : ndarray, shape (n, 2)
        Inputs, 1.5 * N(0, I_2).
    y : ndarray, shape (n,)
        Labels in {0, 1}: the sign of sin(1.5 x_1) + 0.5 x_2^2 - 0.5, each flipped with
        probability ``LABEL_NOISE``; both classes are present.
    """
    rng = np.random.default_rng(seed + n)
    X = 1.5 * rng.standard_normal((n, 2))
    g = np.sin(1.5 * X[:, 0]) + 0.5 * X[:, 1] ** 2 - 0.5
    y = (g > 0).astype(int)
    flip = rng.random(n) < LABEL_NOISE
    y[flip] = 1 - y[flip]
    if y.min() == y.max():  # pragma: no cover - practically impossible at these sizes
        raise RuntimeError("synthetic data has a single class; change the seed")
    return X, y


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    """Run ``fn`` once and return (elapsed seconds by ``time.perf_counter``, its result)."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def machine_facts(**peers: str) -> dict[str, str]:
    """CPU count, library versions (``peers`` adds the peer's), platform, date."""
    return {
        "os.cpu_count()": str(os.cpu_count()),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        **peers,
        "gpc_compare": gc.__version__,
        "BLAS/OpenMP threads": ", ".join(
            f"{i['internal_api']} {i.get('version') or ''} x{i['num_threads']}".replace("  ", " ")
            for i in threadpool_info()
        ),
        "platform": platform.platform(),
        "date (UTC)": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M"),
    }


def verdict(ok: bool) -> str:
    return "yes" if ok else "**NO**"


def write_csv(rows: dict[int, dict[str, float]], path: Path) -> None:
    """Write the results in tidy form: one (n, what, value) row per number."""
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["n", "what", "value"])
        for n, r in rows.items():
            for what, value in r.items():
                w.writerow([n, what, repr(float(value))])


def markdown_tail(sections: dict[str, dict[str, str]], command: str) -> list[str]:
    """Markdown lines: a bulleted section per entry (settings, machine, ...), then the
    command that produced the file."""
    out: list[str] = []
    for title, items in sections.items():
        out += ["", f"## {title}", ""]
        out += [f"- {k}: {v}" for k, v in items.items()]
    return out + ["", "## Command", "", "```", command, "```", ""]


def numba_import_seconds(module: str, *preload: str) -> tuple[float, float]:
    """Seconds to import ``module`` (numba functions cached on disk) in a new process with
    an empty numba cache, then in a second process loading from that cache: what the first
    process on a machine, and every later one, pays once. ``preload`` (and gpc_compare,
    numba) are imported before the clock starts."""
    code = (
        f"import time, numba, gpc_compare, {', '.join(preload) or 'numpy'}; "
        f"t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    )
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        compile_s, load_s = (
            float(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                 capture_output=True, text=True).stdout)
            for _ in range(2)
        )  # fmt: skip
    return compile_s, load_s
