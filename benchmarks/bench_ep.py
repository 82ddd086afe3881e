"""Benchmark: the hand-coded EP engine (both schedules) against GPy's EP and one Cholesky.

What it measures
----------------
For each training-set size n (default 500, 1000, 2000) on the synthetic 2-D data of the
Laplace benchmark (``bench_laplace.make_data``, fixed seed) it times, in one process and
interleaved within every repetition (so drift in a noisy machine hits all of them alike):

* ``ours_parallel``   -- ``gc.fit(X, y, method="ep", kernel=SE(1, 1), likelihood="probit",
  schedule="parallel")`` at fixed hyperparameters (kernel matrix, the EP sweeps, the final
  factorisation and the log marginal likelihood, all inside ``fit``), default tolerances
  (evidence change < 1e-10 and undamped site change < 1e-6 between sweeps; adaptive
  damping for the parallel schedule);
* ``ours_sequential`` -- the same with ``schedule="sequential"`` (random order, seeded;
  rank-one updates of Sigma; no damping);
* ``gpy``             -- ``GPy.core.GP(X, y[:, None], GPy.kern.RBF(2, 1, 1),
  GPy.likelihoods.Bernoulli(), inference_method=EP(...))``: GPy's own default EP, the
  sequential schedule (``parallel_updates=False``, random order from numpy's global
  generator, seeded before every run), ``ep_mode="nested"`` (EP is run on construction,
  as for every hyperparameter change), no damping (``delta=1``, ``eta=1``) and
  ``epsilon=GPY_EPSILON`` (GPy stops when the mean squared change of both site parameters
  over a sweep is below epsilon). The hyperparameters are never optimised; what is timed
  is the construction, whose ``parameters_changed`` runs EP and then the evidence and its
  gradients (GPy does not separate them). ``Bernoulli()`` has the probit link, y in {0, 1};
* ``gpy_parallel``    -- the same with ``parallel_updates=True`` (GPy's parallel schedule,
  also undamped), the like-for-like partner of our parallel schedule;
* ``cholesky``        -- one ``scipy.linalg.cho_factor`` of the n x n matrix I + K, the
  unit of work every EP sweep costs at least once.

The median over repetitions is reported (and the ratios of the fastest repetitions). The
evidences are compared: our ``post.log_marginal_likelihood`` against GPy's
``m.log_likelihood()`` (the EP evidence; GPy's agrees with GPML's to 1e-13 when converged).
Sweeps are ``post.convergence.iterations`` for ours and counted for GPy by a subclass of
its ``EP`` whose only change is a counter in ``_local_updates`` (one call per sweep).

Slow runs: a task whose first (untimed, warm-up) run takes longer than ``--max-seconds`` is
not repeated; that first run is then its only timing (reported as 1 repetition), because
at that length a warm-up changes nothing and repeating it would take most of the budget.

Threads: BLAS is limited to one thread by default (``--blas-threads 1``, threadpoolctl),
for all tasks alike. On this 2-core machine, shared with other jobs, two-thread OpenBLAS
is badly oversubscribed (while other jobs ran, one Cholesky at n = 2000 measured 0.14 s
single-threaded and a median 5.5 s with two threads), which swamps the comparison with
noise; ``0`` keeps the library default.

Outputs: a table on stdout, ``<output>/ep.csv`` (tidy: columns n, what, value) and
``<output>/ep.md`` (the ratios plus machine facts, GPy settings and the command used).

How to run
----------
From the repository root (needs GPy: ``pip install GPy``, the ``bench`` extra)::

    python benchmarks/bench_ep.py
    python benchmarks/bench_ep.py --sizes 500 1000 --repeats 3 --output /tmp/bench
    python benchmarks/bench_ep.py --profile 1000   # also cProfile one fit per schedule
    python benchmarks/bench_ep.py --blas-threads 0  # the BLAS library's default threads
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import shlex
import statistics
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import GPy
import numpy as np
import scipy
import scipy.linalg
from GPy.inference.latent_function_inference import EP
from threadpoolctl import threadpool_limits

import gpc_compare as gc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SEED, machine_facts, make_data, markdown_tail, timed, verdict, write_csv  # noqa: E402

LENGTHSCALE = 1.0
VARIANCE = 1.0

#: GPy's stopping rule: mean squared change of tau~ and of nu~ over a sweep below this.
#: 1e-8 gives GPy's evidence within ~1e-7 of the converged value at these sizes (1e-6
#: leaves errors of ~1e-6..1e-5; the extra sweeps cost GPy about 20-30% more time).
GPY_EPSILON = 1e-8
GPY_MAX_ITERS = 1000

#: Targets from the issue, both at n = TARGET_N: ours (either schedule) at least 10x
#: faster than GPy's EP, our parallel schedule within 30x one Cholesky; and the same
#: evidence as GPy to EVIDENCE_TOL.
TARGET_VS_GPY = 0.1
TARGET_VS_CHOLESKY = 30.0
TARGET_N = 1000
EVIDENCE_TOL = 1e-4

TASKS = ("ours_parallel", "ours_sequential", "gpy", "gpy_parallel", "cholesky")


class CountingEP(EP):
    """GPy's ``EP``, unchanged but for a count of sweeps (calls of ``_local_updates``)."""

    sweeps = 0

    def _local_updates(self, *args, **kwargs):
        self.sweeps += 1
        return super()._local_updates(*args, **kwargs)


def gpy_fit(X: np.ndarray, y: np.ndarray, parallel: bool) -> GPy.core.GP:
    """GPy's EP at the fixed hyperparameters (the construction runs EP once).

    Parameters
    ----------
    X : ndarray, shape (n, 2)
    y : ndarray, shape (n,)
        Labels in {0, 1}.
    parallel : bool
        GPy's ``parallel_updates``.

    Returns
    -------
    GPy.core.GP
        The model; ``m.log_likelihood()`` is the EP evidence, ``m.inference_method.sweeps``
        the number of sweeps.
    """
    # GPy draws its sequential order from numpy's global (legacy) generator
    np.random.seed(SEED)  # noqa: NPY002
    inference = CountingEP(
        epsilon=GPY_EPSILON,
        eta=1.0,
        delta=1.0,
        max_iters=GPY_MAX_ITERS,
        ep_mode="nested",
        parallel_updates=parallel,
    )
    return GPy.core.GP(
        X,
        y[:, None].astype(float),
        kernel=GPy.kern.RBF(2, variance=VARIANCE, lengthscale=LENGTHSCALE),
        likelihood=GPy.likelihoods.Bernoulli(),
        inference_method=inference,
    )


def bench_one(n: int, repeats: int, max_seconds: float) -> dict[str, float]:
    """Time both our schedules, GPy's EP (both schedules) and one Cholesky at one n.

    Parameters
    ----------
    n : int
        Training-set size.
    repeats : int
        Timed repetitions, interleaved, after one untimed warm-up of each task.
    max_seconds : float
        A task whose warm-up takes longer is not repeated; its warm-up is its one timing.

    Returns
    -------
    dict
        Medians (seconds), ratios, sweeps, repetitions and the evidence comparison.
    """
    X, y = make_data(n)
    kernel = gc.kernels.SquaredExponential(lengthscale=LENGTHSCALE, variance=VARIANCE)
    A = np.eye(n) + kernel(X)  # I + K: the shape and conditioning of B = I + sW K sW

    def ours(schedule: str) -> Callable[[], gc.Posterior]:
        def run() -> gc.Posterior:
            return gc.fit(
                X,
                y,
                method="ep",
                kernel=kernel,
                likelihood="probit",
                schedule=schedule,
                random_seed=SEED,
            )

        return run

    def chol() -> tuple[np.ndarray, bool]:
        return scipy.linalg.cho_factor(A, lower=True)

    tasks: dict[str, Callable[[], object]] = {
        "ours_parallel": ours("parallel"),
        "ours_sequential": ours("sequential"),
        "gpy": lambda: gpy_fit(X, y, parallel=False),
        "gpy_parallel": lambda: gpy_fit(X, y, parallel=True),
        "cholesky": chol,
    }
    results: dict[str, object] = {}
    times: dict[str, list[float]] = {name: [] for name in tasks}
    repeated: list[str] = []
    for name, fn in tasks.items():  # warm-up, and the fits to compare
        elapsed, results[name] = timed(fn)
        if elapsed > max_seconds:
            times[name].append(elapsed)
            print(f"    n = {n}: {name} took {elapsed:.1f} s > {max_seconds:g} s: timed once")
        else:
            repeated.append(name)
    for _ in range(repeats):
        for name in repeated:
            elapsed, _ = timed(tasks[name])
            times[name].append(elapsed)

    med = {name: statistics.median(ts) for name, ts in times.items()}
    best = {name: min(ts) for name, ts in times.items()}
    row: dict[str, float] = {f"{name}_s": med[name] for name in tasks}
    row.update({f"{name}_min_s": best[name] for name in tasks})
    row.update({f"repeats_{name}": float(len(times[name])) for name in tasks})
    for ours_name in ("ours_parallel", "ours_sequential"):
        for other in ("gpy", "gpy_parallel", "cholesky"):
            row[f"ratio_{ours_name}_{other}"] = med[ours_name] / med[other]
            row[f"ratio_{ours_name}_{other}_min"] = best[ours_name] / best[other]
    for gpy_name in ("gpy", "gpy_parallel"):
        row[f"ratio_{gpy_name}_cholesky"] = med[gpy_name] / med["cholesky"]

    lml_gpy = float(results["gpy"].log_likelihood())
    lml_gpy_par = float(results["gpy_parallel"].log_likelihood())
    row["lml_gpy"] = lml_gpy
    row["lml_gpy_parallel"] = lml_gpy_par
    for name in ("ours_parallel", "ours_sequential"):
        post = results[name]
        short = name.removeprefix("ours_")
        sweeps = post.convergence.iterations
        row[f"sweeps_{short}"] = float(sweeps)
        row[f"converged_{short}"] = float(post.convergence.converged)
        row[f"lml_{short}"] = float(post.log_marginal_likelihood)
        row[f"lml_absdiff_{short}_gpy"] = abs(float(post.log_marginal_likelihood) - lml_gpy)
        row[f"cholesky_per_sweep_{short}"] = med[name] / sweeps / med["cholesky"]
    for name in ("gpy", "gpy_parallel"):
        sweeps = results[name].inference_method.sweeps
        row[f"sweeps_{name}"] = float(sweeps)
        row[f"converged_{name}"] = float(sweeps < GPY_MAX_ITERS)
        row[f"cholesky_per_sweep_{name}"] = med[name] / sweeps / med["cholesky"]
    row["lml_absdiff_gpy_parallel_gpy"] = abs(lml_gpy_par - lml_gpy)
    return row


def profile_fit(n: int, schedule: str, top: int = 15) -> str:
    """cProfile one ``gc.fit(method="ep")`` at size n and return the top cumulative entries.

    Parameters
    ----------
    n : int
        Training-set size.
    schedule : {"parallel", "sequential"}
    top : int
        How many entries to show.

    Returns
    -------
    str
        The ``pstats`` report.
    """
    X, y = make_data(n)
    kernel = gc.kernels.SquaredExponential(lengthscale=LENGTHSCALE, variance=VARIANCE)
    kwargs = dict(
        method="ep", kernel=kernel, likelihood="probit", schedule=schedule, random_seed=SEED
    )
    gc.fit(X[:50], y[:50], **kwargs)  # warm-up (imports, caches), cheaply
    prof = cProfile.Profile()
    prof.enable()
    gc.fit(X, y, **kwargs)
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(top)
    return buf.getvalue()


def format_table(rows: dict[int, dict[str, float]]) -> str:
    """A plain-text table of the results for stdout."""
    head = (
        f"{'n':>5} {'ours par s':>10} {'ours seq s':>10} {'GPy s':>9} {'GPy par s':>9} "
        f"{'chol s':>8} {'par/GPy':>8} {'seq/GPy':>8} {'par/chol':>9} {'seq/chol':>9} "
        f"{'sweeps p/s/G/Gp':>16} {'|dlml| par':>10} {'|dlml| seq':>10}"
    )
    lines = [
        "times are medians; ratios are of medians; GPy = GPy's default (sequential) EP",
        head,
        "-" * len(head),
    ]
    for n, r in rows.items():
        sweeps = "/".join(
            str(int(r[f"sweeps_{k}"])) for k in ("parallel", "sequential", "gpy", "gpy_parallel")
        )
        lines.append(
            f"{n:>5} {r['ours_parallel_s']:>10.3f} {r['ours_sequential_s']:>10.3f} "
            f"{r['gpy_s']:>9.3f} {r['gpy_parallel_s']:>9.3f} {r['cholesky_s']:>8.4f} "
            f"{r['ratio_ours_parallel_gpy']:>8.3f} {r['ratio_ours_sequential_gpy']:>8.3f} "
            f"{r['ratio_ours_parallel_cholesky']:>9.1f} "
            f"{r['ratio_ours_sequential_cholesky']:>9.1f} {sweeps:>16} "
            f"{r['lml_absdiff_parallel_gpy']:>10.1e} {r['lml_absdiff_sequential_gpy']:>10.1e}"
        )
    return "\n".join(lines)


def write_markdown(
    rows: dict[int, dict[str, float]],
    facts: dict[str, str],
    settings: dict[str, str],
    command: str,
    path: Path,
) -> None:
    """Write the Markdown summary: ratios against the targets, machine facts, command."""
    out = [
        "# EP engine benchmark",
        "",
        f"Fixed-hyperparameter probit EP, SE kernel (lengthscale {LENGTHSCALE}, variance "
        f"{VARIANCE}), the synthetic 2-D data of the Laplace benchmark. Times are medians "
        "over interleaved repetitions in one process; the ratios matter, not the absolute "
        "times. `GPy` is GPy's default EP (sequential updates), `GPy par` its "
        "`parallel_updates=True`; both time the model's construction, which runs EP and "
        "then the evidence and its gradients. `cholesky` is one `scipy.linalg.cho_factor` "
        "of I + K. Ratios below 1 mean ours is faster.",
        "",
        "## Times and ratios",
        "",
        "| n | ours par (s) | ours seq (s) | GPy (s) | GPy par (s) | cholesky (s) "
        "| par/GPy | seq/GPy | par/GPy par | seq/GPy par | par/chol | seq/chol "
        "| GPy/chol | GPy par/chol |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, r in rows.items():
        out.append(
            f"| {n} | {r['ours_parallel_s']:.3f} | {r['ours_sequential_s']:.3f} "
            f"| {r['gpy_s']:.3f} | {r['gpy_parallel_s']:.3f} | {r['cholesky_s']:.4f} "
            f"| {r['ratio_ours_parallel_gpy']:.3f} | {r['ratio_ours_sequential_gpy']:.3f} "
            f"| {r['ratio_ours_parallel_gpy_parallel']:.2f} "
            f"| {r['ratio_ours_sequential_gpy_parallel']:.1f} "
            f"| {r['ratio_ours_parallel_cholesky']:.0f} "
            f"| {r['ratio_ours_sequential_cholesky']:.0f} "
            f"| {r['ratio_gpy_cholesky']:.0f} | {r['ratio_gpy_parallel_cholesky']:.0f} |"
        )
    out += [
        "",
        "Ratios of the fastest repetitions instead of the medians (less sensitive to other "
        "load on the machine), and the repetitions behind each median "
        "(ours par / ours seq / GPy / GPy par / cholesky):",
        "",
        "| n | par/GPy (min) | seq/GPy (min) | par/chol (min) | seq/chol (min) | repetitions |",
        "|---:|---:|---:|---:|---:|:---:|",
    ]
    for n, r in rows.items():
        reps = "/".join(str(int(r[f"repeats_{t}"])) for t in TASKS)
        out.append(
            f"| {n} | {r['ratio_ours_parallel_gpy_min']:.3f} "
            f"| {r['ratio_ours_sequential_gpy_min']:.3f} "
            f"| {r['ratio_ours_parallel_cholesky_min']:.0f} "
            f"| {r['ratio_ours_sequential_cholesky_min']:.0f} | {reps} |"
        )
    out += [
        "",
        "## Sweeps, cost per sweep and evidence",
        "",
        "Cost per sweep is the median time divided by the sweeps, in units of one Cholesky.",
        "",
        "| n | sweeps par / seq / GPy / GPy par | chol per sweep par / seq / GPy / GPy par "
        "| evidence (ours par) | abs diff par - GPy | abs diff seq - GPy "
        "| abs diff GPy par - GPy |",
        "|---:|:---:|:---:|---:|---:|---:|---:|",
    ]
    for n, r in rows.items():
        keys = ("parallel", "sequential", "gpy", "gpy_parallel")
        sweeps = " / ".join(str(int(r[f"sweeps_{k}"])) for k in keys)
        per = " / ".join(f"{r[f'cholesky_per_sweep_{k}']:.1f}" for k in keys)
        out.append(
            f"| {n} | {sweeps} | {per} | {r['lml_parallel']:.6f} "
            f"| {r['lml_absdiff_parallel_gpy']:.1e} | {r['lml_absdiff_sequential_gpy']:.1e} "
            f"| {r['lml_absdiff_gpy_parallel_gpy']:.1e} |"
        )
    out += ["", "## Targets", ""]
    t = rows.get(TARGET_N)
    if t is None:
        out.append(f"(n = {TARGET_N} was not run.)")
    else:
        for name, label in (("parallel", "parallel"), ("sequential", "sequential")):
            ratio = t[f"ratio_ours_{name}_gpy"]
            out.append(
                f"- ours ({label}) / GPy at n = {TARGET_N}: {ratio:.3f} (target <= "
                f"{TARGET_VS_GPY:g}, i.e. 10x faster): {verdict(ratio <= TARGET_VS_GPY)}"
            )
        ratio = t["ratio_ours_parallel_cholesky"]
        out.append(
            f"- ours (parallel) / cholesky at n = {TARGET_N}: {ratio:.1f} (target <= "
            f"{TARGET_VS_CHOLESKY:g}): {verdict(ratio <= TARGET_VS_CHOLESKY)}"
        )
        worst = max(
            r[f"lml_absdiff_{s}_gpy"] for r in rows.values() for s in ("parallel", "sequential")
        )
        out.append(
            f"- evidence, ours vs GPy, worst over n and schedules: {worst:.1e} (target <= "
            f"{EVIDENCE_TOL:g}): {verdict(worst <= EVIDENCE_TOL)}"
        )
    out += markdown_tail({"Settings": settings, "Machine": facts}, command)
    path.write_text("\n".join(out))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the table and write the CSV and Markdown files.

    Parameters
    ----------
    argv : sequence of str, optional
        Command-line arguments (``sys.argv[1:]`` by default).

    Returns
    -------
    int
        Exit status (0).
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=60.0,
        metavar="S",
        help="a task whose warm-up takes longer than S seconds is timed by that run only",
    )
    parser.add_argument("--output", type=Path, default=Path("results/benchmarks"))
    parser.add_argument(
        "--profile",
        type=int,
        default=None,
        metavar="N",
        help="also print a cProfile (top 15, cumulative) of one fit per schedule at size N",
    )
    parser.add_argument(
        "--blas-threads",
        type=int,
        default=1,
        metavar="T",
        help="limit BLAS/OpenMP to T threads (threadpoolctl); 0 for the library default",
    )
    args = parser.parse_args(argv)
    if args.blas_threads > 0:
        threadpool_limits(args.blas_threads)
    command = shlex.join(["python", sys.argv[0], *(sys.argv[1:] if argv is None else argv)])

    facts = machine_facts(**{"GPy": GPy.__version__})
    settings = {
        "ours": "gc.fit defaults for EP: tol 1e-10 (evidence change), site_tol 1e-6 (max "
        "undamped site change), damping adaptive (parallel) / none (sequential), random_seed "
        f"{SEED} (sequential order)",
        "GPy": f"EP(epsilon={GPY_EPSILON:g}, eta=1, delta=1, max_iters={GPY_MAX_ITERS}, "
        "ep_mode='nested', parallel_updates=False / True); stop when the mean squared "
        "change of tau~ and of nu~ over a sweep is below epsilon; np.random.seed"
        f"({SEED}) before each run; RBF(2, variance={VARIANCE:g}, lengthscale="
        f"{LENGTHSCALE:g}), Bernoulli() (probit link), Y = y[:, None] in {{0, 1}}",
        "BLAS threads": "library default"
        if args.blas_threads <= 0
        else f"{args.blas_threads} (threadpoolctl, all tasks)",
        "repetitions": f"{args.repeats} after a warm-up; a task whose warm-up exceeds "
        f"{args.max_seconds:g} s is timed by the warm-up only",
    }
    print("EP benchmark: " + ", ".join(f"{k} {v}" for k, v in facts.items()))
    rows: dict[int, dict[str, float]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a non-converged fit is a failure
        for n in args.sizes:
            rows[n] = bench_one(n, args.repeats, args.max_seconds)
            r = rows[n]
            print(
                f"  n = {n}: ours parallel {r['ours_parallel_s']:.3f} s, sequential "
                f"{r['ours_sequential_s']:.3f} s, GPy {r['gpy_s']:.3f} s, GPy parallel "
                f"{r['gpy_parallel_s']:.3f} s, cholesky {r['cholesky_s']:.4f} s",
                flush=True,
            )
    print()
    print(format_table(rows))

    args.output.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = args.output / "ep.csv", args.output / "ep.md"
    write_csv(rows, csv_path)
    write_markdown(rows, facts, settings, command, md_path)
    print(f"\nwrote {csv_path} and {md_path}")

    t = rows.get(TARGET_N)
    if t is not None:
        for name in ("parallel", "sequential"):
            if t[f"ratio_ours_{name}_gpy"] > TARGET_VS_GPY:
                print(
                    f"TARGET MISSED: ours ({name}) / GPy = {t[f'ratio_ours_{name}_gpy']:.3f} "
                    f"> {TARGET_VS_GPY:g} at n = {TARGET_N}"
                )
        if t["ratio_ours_parallel_cholesky"] > TARGET_VS_CHOLESKY:
            print(
                f"TARGET MISSED: ours (parallel) / cholesky = "
                f"{t['ratio_ours_parallel_cholesky']:.1f} > {TARGET_VS_CHOLESKY:g} "
                f"at n = {TARGET_N}"
            )
    bad = [
        (n, s)
        for n, r in rows.items()
        for s in ("parallel", "sequential")
        if r[f"lml_absdiff_{s}_gpy"] > EVIDENCE_TOL
    ]
    if bad:
        print(f"TARGET MISSED: evidence differs from GPy's by > {EVIDENCE_TOL:g} at {bad}")

    if args.profile is not None:
        for schedule in ("parallel", "sequential"):
            print(
                f"\ncProfile of one {schedule} EP fit at n = {args.profile} (top 15, cumulative):"
            )
            print(profile_fit(args.profile, schedule))
    return 0


if __name__ == "__main__":
    sys.exit(main())
