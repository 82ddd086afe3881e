"""Benchmark: every multi-class engine's fit against the floor, C Choleskys of n x n.

What it measures
----------------
For each training-set size n (default 150, 300, 600) on synthetic 2-D data with C = 3
classes it times, in one process and interleaved within every repetition (so that drift on
a noisy machine hits all of them alike), each multi-class engine's fit at fixed
hyperparameters (``gc.fit(X, y, method=..., likelihood=..., kernel=SE(ell, sigma_f^2))``:
the kernel matrix, the engine's iteration to convergence at its default tolerances, the
final factorisation and the evidence or bound):

* ``laplace``  -- softmax Laplace (R&W section 3.5, Alg. 3.3);
* ``kl``       -- the multi-class KL approximation, softmax (Opper and Archambeau 2009);
* ``ep``       -- nested EP, multinomial probit (Riihimaki, Jylanki and Vehtari 2013);
* ``svgp``     -- the multi-class SVGP, softmax, M = min(n, 64) inducing inputs
  (Hensman, Matthews and Ghahramani 2015);

against ``floor``: C Choleskys of the n x n matrix I + K (``scipy.linalg.cho_factor``),
the least the C n-dimensional problem's blocks cost once (every Newton step of softmax
Laplace factorises C such blocks, nested EP and KL as many or more). The median over
repetitions is reported, with each engine's ratio to the floor and its iteration count.
Absolute times mean little on a shared machine; the ratios are the point.

Outputs: a table on stdout, ``<output>/multiclass.csv`` (tidy: n, what, value) and
``<output>/multiclass.md`` (the ratios, settings, machine facts, the command).

How to run
----------
From the repository root::

    python benchmarks/bench_multiclass.py
    python benchmarks/bench_multiclass.py --sizes 150 300 --repeats 3 --variance 100
    python benchmarks/bench_multiclass.py --engines laplace kl --blas-threads 1
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shlex
import statistics
import sys
import warnings
from pathlib import Path

import numpy as np
import scipy.linalg
from threadpoolctl import threadpool_limits

import gpc_compare as gc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SEED, machine_facts, markdown_tail, timed, write_csv  # noqa: E402

C = 3
#: Each engine: the method and the likelihood it is fitted with.
ENGINES = {
    "laplace": ("laplace", "softmax"),
    "kl": ("kl", "softmax"),
    "ep": ("ep", "multinomial_probit"),
    "svgp": ("svgp", "softmax"),
}


def make_data(n: int, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """Three overlapping classes in 2-D: the largest of two noisy linear scores and minus
    their sum (every class present at these sizes)."""
    rng = np.random.default_rng(seed + n)
    X = 1.5 * rng.standard_normal((n, 2))
    scores = X @ np.array([[1.0, -1.0, 0.0], [0.0, 1.0, -1.0]]) + 0.8 * rng.normal(size=(n, C))
    return X, np.argmax(scores, axis=1)


def bench_one(n: int, engines: list[str], repeats: int, ell: float, sf2: float) -> dict[str, float]:
    """Medians (seconds), ratios to the floor and iteration counts at one n."""
    X, y = make_data(n)
    kernel = gc.kernels.SquaredExponential(lengthscale=ell, variance=sf2)
    A = np.eye(n) + kernel(X)

    def fitter(name: str):
        method, likelihood = ENGINES[name]
        extra = {"inducing": min(n, 64)} if name == "svgp" else {}

        def fit():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # convergence is reported, not warned
                return gc.fit(X, y, method=method, likelihood=likelihood, kernel=kernel, **extra)

        return fit

    def floor() -> list:
        return [scipy.linalg.cho_factor(A, lower=True) for _ in range(C)]

    tasks = {name: fitter(name) for name in engines} | {"floor": floor}
    fits = {name: fn() for name, fn in tasks.items()}  # warm-up, and the fits reported
    times: dict[str, list[float]] = {name: [] for name in tasks}
    for _ in range(repeats):
        for name, fn in tasks.items():
            times[name].append(timed(fn)[0])
    med = {name: statistics.median(ts) for name, ts in times.items()}
    out = {f"{name}_s": med[name] for name in tasks}
    for name in engines:
        out[f"ratio_{name}_floor"] = med[name] / med["floor"]
        out[f"{name}_iterations"] = float(fits[name].convergence.iterations)
        out[f"{name}_converged"] = float(fits[name].convergence.converged)
    return out


def profile(n: int, engines: list[str], ell: float, sf2: float, top: int = 6) -> list[str]:
    """Markdown lines: where each engine's fit at n spends its time (cProfile, the ``top``
    functions by own time, after a warm-up fit)."""
    X, y = make_data(n)
    kernel = gc.kernels.SquaredExponential(lengthscale=ell, variance=sf2)
    lines = ["", f"## Where the time goes (n = {n}; cProfile, own time)", ""]
    for name in engines:
        method, likelihood = ENGINES[name]
        extra = {"inducing": min(n, 64)} if name == "svgp" else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gc.fit(X, y, method=method, likelihood=likelihood, kernel=kernel, **extra)
            prof = cProfile.Profile()
            prof.runcall(gc.fit, X, y, method=method, likelihood=likelihood, kernel=kernel, **extra)
        stats = pstats.Stats(prof, stream=io.StringIO())
        total = sum(v[2] for v in stats.stats.values())
        ranked = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:top]
        parts = [
            f"{Path(f).name}:{line}({fn}) {100 * v[2] / total:.0f}%" for (f, line, fn), v in ranked
        ]
        lines.append(f"- {name}: " + "; ".join(parts))
    return lines


def markdown(rows: dict[int, dict[str, float]], engines: list[str], args, command: str) -> str:
    head = "| n | floor (s) | " + " | ".join(f"{e} (s) | {e} / floor" for e in engines) + " |"
    lines = [
        "# Multi-class engines against the floor (C Choleskys of n x n)",
        "",
        f"C = {C}, SE kernel ell = {args.lengthscale}, sigma_f^2 = {args.variance}; median of"
        f" {args.repeats} interleaved repetitions after a warm-up. Iterations in brackets"
        " (an engine that did not converge at its defaults is marked `not conv.`). Load"
        f" average (1 min) when written: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.",
        "",
        head,
        "|" + "---|" * (2 + 2 * len(engines)),
    ]
    for n, r in rows.items():
        cells = [f"{n}", f"{r['floor_s']:.4f}"]
        for e in engines:
            conv = "" if r[f"{e}_converged"] else ", not conv."
            cells += [
                f"{r[f'{e}_s']:.3f} ({r[f'{e}_iterations']:.0f}{conv})",
                f"{r[f'ratio_{e}_floor']:.0f}",
            ]
        lines.append("| " + " | ".join(cells) + " |")
    if args.profile:
        lines += profile(args.profile, engines, args.lengthscale, args.variance)
    facts = machine_facts()
    return "\n".join(lines + markdown_tail({"Machine": facts}, command))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[150, 300, 600])
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=list(ENGINES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lengthscale", type=float, default=1.0)
    parser.add_argument("--variance", type=float, default=4.0)
    parser.add_argument(
        "--blas-threads",
        type=int,
        default=1,
        help="BLAS threads (default 1: steady on a shared machine)",
    )
    parser.add_argument(
        "--profile", type=int, default=300, help="profile the fits at this n (0: none)"
    )
    parser.add_argument("--output", default="results/benchmarks")
    args = parser.parse_args(argv)
    command = "python benchmarks/bench_multiclass.py " + shlex.join(
        sys.argv[1:] if argv is None else argv
    )
    rows = {}
    with threadpool_limits(args.blas_threads):
        for n in args.sizes:
            rows[n] = bench_one(n, args.engines, args.repeats, args.lengthscale, args.variance)
            print(n, {k: round(v, 4) for k, v in rows[n].items()}, flush=True)
        text = markdown(rows, args.engines, args, command.strip())
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, out / "multiclass.csv")
    (out / "multiclass.md").write_text(text)
    print(f"wrote {out / 'multiclass.md'}")


if __name__ == "__main__":
    main()
