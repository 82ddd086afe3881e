"""Benchmark: the variational engines (KL, VB) against Laplace, parallel EP and one Cholesky.

What it measures
----------------
For each training-set size n (default 500, 1000, 2000) on the synthetic 2-D data of the
Laplace benchmark (``_common.make_data``, fixed seed), at fixed hyperparameters (SE kernel,
length-scale 1, variance 1), it times in one process, interleaved within every repetition
(so drift on a noisy machine hits all of them alike):

* ``kl``       -- ``gc.fit(X, y, method="kl", likelihood="probit")``, default tolerances
  (bound change < 1e-10 and site change < 1e-6);
* ``vb``       -- ``gc.fit(X, y, method="vb", likelihood="logistic")`` (the Jaakkola-Jordan
  bound exists for the logistic likelihood only), default tolerances;
* ``laplace``  -- ``gc.fit(X, y, method="laplace", likelihood="probit")``;
* ``ep``       -- ``gc.fit(X, y, method="ep", likelihood="probit", schedule="parallel")``;
* ``cholesky`` -- one ``scipy.linalg.cho_factor`` of the n x n matrix I + K, the unit of
  work every iteration of these engines costs at least once.

The median over repetitions is reported as a ratio to the Cholesky's median, with the
iterations each engine took. Targets (the variational issue): KL within 40x one Cholesky at
n = 1000, VB within 20x. BLAS is limited to one thread (``--blas-threads 1``) for all tasks
alike; on this shared 2-core machine two-thread OpenBLAS is badly oversubscribed.

Outputs: a table on stdout, ``<output>/variational.csv`` (tidy: n, what, value) and
``<output>/variational.md``.

How to run, from the repository root::

    python benchmarks/bench_variational.py
    python benchmarks/bench_variational.py --sizes 500 1000 --repeats 3 --output /tmp/bench
    python benchmarks/bench_variational.py --profile 1000   # cProfile one fit per engine
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
from pathlib import Path

import numpy as np
import scipy.linalg
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_facts, make_data, markdown_tail, timed, verdict, write_csv  # noqa: E402

import gpc_compare as gc  # noqa: E402

ENGINES = {
    "kl": {"method": "kl", "likelihood": "probit"},
    "vb": {"method": "vb", "likelihood": "logistic"},
    "laplace": {"method": "laplace", "likelihood": "probit"},
    "ep": {"method": "ep", "likelihood": "probit", "schedule": "parallel"},
}
TARGETS = {"kl": 40.0, "vb": 20.0}  # at n = 1000, in Cholesky-equivalents


def run(sizes: list[int], repeats: int) -> dict[int, dict[str, float]]:
    """Median seconds, ratios to one Cholesky, and iterations, per n."""
    kernel = gc.kernels.SquaredExponential(1.0, 1.0)
    rows: dict[int, dict[str, float]] = {}
    for n in sizes:
        X, y = make_data(n)
        A = kernel(X) + np.eye(n)
        times: dict[str, list[float]] = {name: [] for name in [*ENGINES, "cholesky"]}
        iterations: dict[str, int] = {}
        for _ in range(repeats + 1):  # the first round warms up and is not counted
            t, _ = timed(lambda A=A: scipy.linalg.cho_factor(A, lower=True))
            times["cholesky"].append(t)
            for name, options in ENGINES.items():
                t, post = timed(lambda o=options, X=X, y=y: gc.fit(X, y, kernel=kernel, **o))
                times[name].append(t)
                iterations[name] = post.convergence.iterations
        row: dict[str, float] = {}
        chol = float(np.median(times["cholesky"][1:]))
        row["cholesky_seconds"] = chol
        for name in ENGINES:
            med = float(np.median(times[name][1:]))
            row[f"{name}_seconds"] = med
            row[f"{name}_ratio"] = med / chol
            row[f"{name}_iterations"] = iterations[name]
        rows[n] = row
        print(
            f"n={n:5d}  cholesky {chol * 1e3:7.1f} ms  "
            + "  ".join(
                f"{name} {row[f'{name}_ratio']:6.1f}x ({row[f'{name}_iterations']:.0f} it)"
                for name in ENGINES
            ),
            flush=True,
        )
    return rows


def profile(n: int) -> None:
    """cProfile one fit of each variational engine at size n (where the time goes)."""
    X, y = make_data(n)
    kernel = gc.kernels.SquaredExponential(1.0, 1.0)
    for name in ("kl", "vb"):
        prof = cProfile.Profile()
        prof.enable()
        gc.fit(X, y, kernel=kernel, **ENGINES[name])
        prof.disable()
        print(f"--- {name}, n = {n}")
        pstats.Stats(prof).sort_stats("tottime").print_stats(8)


def write_markdown(rows: dict[int, dict[str, float]], path: Path, args) -> None:
    lines = [
        "# Variational engines: time per fit in Cholesky-equivalents",
        "",
        "Median time of one fit at fixed hyperparameters divided by the median time of one "
        "Cholesky factorisation of I + K of the same size, in one process, interleaved "
        "(`benchmarks/bench_variational.py`).",
        "",
        "| n | KL | VB | Laplace | EP (parallel) | KL iterations | VB iterations | EP sweeps |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n, r in rows.items():
        lines.append(
            f"| {n} | {r['kl_ratio']:.1f}x | {r['vb_ratio']:.1f}x | {r['laplace_ratio']:.1f}x "
            f"| {r['ep_ratio']:.1f}x | {r['kl_iterations']:.0f} | {r['vb_iterations']:.0f} | "
            f"{r['ep_iterations']:.0f} |"
        )
    lines += [
        "",
        "Iterations: Laplace's each factorise once; KL's and EP's parallel sweeps each "
        "factorise once and invert the factor once (the marginal variances); VB's each take "
        "a half-step on the mean by preconditioned conjugate gradients first, then factorise "
        "and invert once.",
    ]
    if 1000 in rows:
        lines += [
            "",
            "Targets at n = 1000: "
            + "; ".join(
                f"{name.upper()} within {t:g}x: {verdict(rows[1000][f'{name}_ratio'] <= t)}"
                for name, t in TARGETS.items()
            ),
        ]
    command = "python benchmarks/bench_variational.py " + " ".join(sys.argv[1:])
    facts = machine_facts()
    settings = {
        "kernel": "SE, length-scale 1, variance 1 (fixed)",
        "data": "benchmarks/_common.make_data (2-D, smooth boundary, 10% label noise)",
        "repetitions": str(args.repeats),
        "BLAS threads": str(args.blas_threads or "library default"),
    }
    lines += markdown_tail({"Settings": settings, "Machine": facts}, command.strip())
    path.write_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--blas-threads", type=int, default=1)
    parser.add_argument("--output", type=Path, default=Path("results/benchmarks"))
    parser.add_argument("--profile", type=int, default=None, metavar="N")
    args = parser.parse_args()
    limit = args.blas_threads or None
    with threadpool_limits(limits=limit, user_api="blas"):
        if args.profile:
            profile(args.profile)
            return
        rows = run(args.sizes, args.repeats)
    args.output.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.output / "variational.csv")
    write_markdown(rows, args.output / "variational.md", args)
    print(f"wrote {args.output / 'variational.csv'} and {args.output / 'variational.md'}")


if __name__ == "__main__":
    main()
