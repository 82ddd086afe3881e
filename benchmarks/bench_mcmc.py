"""Benchmark: the MCMC reference engine against plain ``pm.gp.Latent`` with ``pm.sample()``.

What it measures
----------------
For each training-set size n (default 100, 300) on the synthetic 2-D data of the other
benchmarks (``_common.make_data``, fixed seed), at fixed hyperparameters (SE kernel,
lengthscale 1.0, variance 1.0, probit likelihood), it runs in one process and interleaved
within every repetition (each repetition has its own seed, ``SEED + repetition``, shared by
all tasks):

* ``ours_nutpie``   -- ``gc.fit(X, y, method="mcmc", kernel=SE(1, 1), likelihood="probit",
  draws=1000, tune=1000, chains=4, random_seed=seed)``: the engine's default sampler,
  nutpie, and the engine's other defaults (``target_accept``, the parameterisation...:
  read from ``gpc_compare.engines.mcmc.MCMCOptions`` at run time and written to the
  Markdown). The model is the engine's: L = chol(K) and the whitening (EP's sites, the
  eigenvectors G of K) computed once in NumPy, f a linear function of the sampled vector
  z; nutpie samples the log density of z written once in numba for every problem
  (``gpc_compare/engines/_compiled.py``), so nothing is compiled per model. Its one-time
  costs (compiling it with an empty numba cache, loading it from the cache in a new
  process) are measured apart, in subprocesses, and the load is charged to the target's
  whole-call ratio;
* ``ours_pymc``     -- the same with ``nuts_sampler="pymc"`` (PyMC's own NUTS, PyTensor's
  C backend);
* ``baseline``      -- the same model written the plain PyMC way::

      with pm.Model():
          cov = 1.0 * pm.gp.cov.ExpQuad(2, ls=1.0)
          gp = pm.gp.Latent(cov_func=cov)
          f = gp.prior("f", X=X)
          pm.Bernoulli("y", p=pm.math.invprobit(f), observed=y)
          pm.sample(random_seed=seed, progressbar=False)

  i.e. ``pm.sample()`` with all its defaults but the seed and the progress bar (the same
  probit likelihood as ours, written as a Bernoulli of ``invprobit(f)``; ``gp.prior`` is
  non-centred too, ``reparameterize=True``, with its default jitter 1e-6). The defaults
  ``pm.sample`` resolved on the machine (chains, cores, target_accept, init) are recorded;
* ``baseline_nutpie`` -- the baseline model with ``pm.sample(nuts_sampler="nutpie")``, all
  other defaults as the baseline: it separates the sampler from the model.

Metric: the minimum bulk ESS over the n latent values f (``az.ess(idata, var_names=["f"],
method="bulk")``, the same call for every task) divided by the sampling seconds (tuning and
draws, as PyMC records them in ``posterior.attrs["sampling_time"]``), and by the whole
call's seconds. "Overhead" is the whole call minus the sampling: model construction,
compilation, initialisation, conversion and diagnostics (ours: also K, its Cholesky, EP).
Also reported: max R-hat over f, divergences, tail ESS, chains, the mean tree size
(leapfrog steps per draw) and the ESS per 1000 gradient evaluations of the draws (tuning
excluded): the sampler's efficiency apart from the cost of a gradient.

Before the timed runs every task is run once, untimed, at n = 30 (50 tuning steps and 50
draws): imports and first-call costs; compiling each real model is timed.

The Cholesky question: ``pm.gp.Latent`` builds K and its Cholesky in the graph; at fixed
hyperparameters PyTensor folds them into a constant at compile time (checked for every n,
untimed: ``baseline_cholesky_in_graph``).

Threads: BLAS is limited to one thread (threadpoolctl, ``--blas-threads 1``) for all tasks,
as in the other benchmarks. ``pm.sample``'s default ``cores`` is
``min(4, cpu_count() // 2)`` = 1 on this 2-CPU box (PyMC's chains run one after another in
this process); nutpie runs ``min(chains, os.cpu_count())`` = 2 chains at a time in
threads. ESS per second is per wall-clock second.

Outputs: a table on stdout, ``<output>/mcmc.csv`` (tidy: columns n, what, value) and
``<output>/mcmc.md`` (the table plus settings, machine facts and the command used).

How to run
----------
From the repository root (needs PyMC; nutpie for the nutpie rows)::

    python benchmarks/bench_mcmc.py
    python benchmarks/bench_mcmc.py --sizes 100 --repeats 3 --output /tmp/bench
    python benchmarks/bench_mcmc.py --draws 500   # cap every task's draws (and tuning)
"""

from __future__ import annotations

import argparse
import inspect
import logging
import multiprocessing
import os
import shlex
import statistics
import subprocess
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import arviz as az
import numpy as np
import nutpie
import pymc as pm
import pytensor
from threadpoolctl import threadpool_limits

import gpc_compare as gc
from gpc_compare.engines import mcmc as mcmc_engine

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    SEED,
    machine_facts,
    make_data,
    markdown_tail,
    numba_import_seconds,
    timed,
    verdict,
    write_csv,
)

LENGTHSCALE = 1.0
VARIANCE = 1.0
DRAWS = 1000
TUNE = 1000
OURS_CHAINS = 4

#: Targets from the issues: ours (default sampler) at least this many times the baseline's
#: minimum bulk ESS per sampling second, and per second of the whole call (compilation
#: included), at n = TARGET_N (the first target, 5x, held at every n).
TARGET_RATIO = 10.0
TARGET_RATIO_TOTAL = 3.0
TARGET_N = 300

TASKS = ("ours_nutpie", "ours_pymc", "baseline", "baseline_nutpie")
LABELS = {
    "ours_nutpie": "ours (nutpie)",
    "ours_pymc": "ours (pymc)",
    "baseline": "pm.gp.Latent + pm.sample()",
    "baseline_nutpie": "pm.gp.Latent + nutpie",
}

#: Per-run numbers kept for every task (medians over repetitions are reported).
METRICS = (
    "total_s",
    "sampling_s",
    "overhead_s",
    "ess_bulk_min",
    "ess_tail_min",
    "ess_per_s",
    "ess_per_s_total",
    "r_hat_max",
    "divergences",
    "chains",
    "draws",
    "mean_tree_size",
    "ess_per_kgrad",
)


def baseline_model(X: np.ndarray, y: np.ndarray) -> pm.Model:
    """The plain PyMC model: ``pm.gp.Latent`` prior, Bernoulli of ``invprobit(f)``."""
    with pm.Model() as model:
        cov = VARIANCE * pm.gp.cov.ExpQuad(X.shape[1], ls=LENGTHSCALE)
        gp = pm.gp.Latent(cov_func=cov)
        f = gp.prior("f", X=X)
        pm.Bernoulli("y", p=pm.math.invprobit(f), observed=y)
    return model


def cholesky_in_graph(X: np.ndarray, y: np.ndarray) -> bool:
    """Whether the baseline's compiled log density and gradient still hold a Cholesky node
    (False: PyTensor folded the constant K and its Cholesky at compile time)."""
    model = baseline_model(X, y)
    fn = model.logp_dlogp_function(ravel_inputs=True)
    nodes = fn._pytensor_function.maker.fgraph.apply_nodes
    return any("cholesky" in type(node.op).__name__.lower() for node in nodes)


def pm_sample_defaults() -> dict[str, str]:
    """The defaults ``pm.sample()`` resolves to on this machine (PyMC's own rules)."""
    params = inspect.signature(pm.sample).parameters
    cores = min(4, max(multiprocessing.cpu_count() // 2, 1))  # pymc.sampling.mcmc._cpu_count
    chains = max(2, cores)
    nuts = inspect.signature(pm.NUTS.__init__).parameters
    return {
        "draws": str(params["draws"].default),
        "tune": str(params["tune"].default),
        "chains": f"{chains} (chains=None -> max(2, cores))",
        "cores": f"{cores} (cores=None -> min(4, cpu_count() // 2); "
        + ("sequential in one process)" if min(cores, chains) == 1 else "parallel processes)"),
        "target_accept": "0.8 (NUTS default)",
        "max_treedepth": str(nuts["max_treedepth"].default),
        "init": f"{params['init'].default!r} (jitter+adapt_diag)",
        "nuts_sampler": repr(params["nuts_sampler"].default),
        "compute_convergence_checks": str(params["compute_convergence_checks"].default),
        "blas_cores": repr(params["blas_cores"].default),
        "mp_ctx": f"{params['mp_ctx'].default} ({multiprocessing.get_start_method()})",
    }


def engine_commit() -> str:
    """The repository's commit, and whether the MCMC engine differs from it (the engine
    is being developed alongside; its options are recorded too)."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "diff", "--quiet", "HEAD", "--", "gpc_compare"],
            check=False,
        ).returncode
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no git)"
    return head + (" (gpc_compare modified since)" if dirty else "")


def sampling_seconds(idata) -> float:
    """The sampling time PyMC records (nutpie: posterior attrs; PyMC: both groups)."""
    for group in ("posterior", "sample_stats"):
        attrs = getattr(idata, group).attrs
        if "sampling_time" in attrs:
            return float(attrs["sampling_time"])
    raise KeyError("no sampling_time in the InferenceData")


def summarise(idata, total_s: float) -> dict[str, float]:
    """The per-run numbers: ESS (per second), R-hat, divergences, tree size, times."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bulk = float(az.ess(idata, var_names=["f"], method="bulk")["f"].min())
        tail = float(az.ess(idata, var_names=["f"], method="tail")["f"].min())
        rhat = float(az.rhat(idata, var_names=["f"])["f"].max())
    stats = idata.sample_stats
    sampling = sampling_seconds(idata)
    return {
        "total_s": total_s,
        "sampling_s": sampling,
        "overhead_s": total_s - sampling,
        "ess_bulk_min": bulk,
        "ess_tail_min": tail,
        "ess_per_s": bulk / sampling,
        "ess_per_s_total": bulk / total_s,
        "r_hat_max": rhat,
        "divergences": float(stats["diverging"].sum()),
        "chains": float(idata.posterior.sizes["chain"]),
        "draws": float(idata.posterior.sizes["draw"]),
        "mean_tree_size": float(stats["n_steps"].mean()),
        "ess_per_kgrad": 1000.0 * bulk / float(stats["n_steps"].sum()),
    }


def make_tasks(
    X: np.ndarray, y: np.ndarray, draws: int, tune: int
) -> dict[str, Callable[[int], object]]:
    """Each task: seed -> InferenceData (everything a user would call, model included)."""
    kernel = gc.kernels.SquaredExponential(lengthscale=LENGTHSCALE, variance=VARIANCE)

    def ours(sampler: str) -> Callable[[int], object]:
        def run(seed: int):
            post = gc.fit(
                X,
                y,
                method="mcmc",
                kernel=kernel,
                likelihood="probit",
                draws=draws,
                tune=tune,
                chains=OURS_CHAINS,
                nuts_sampler=sampler,
                random_seed=seed,
            )
            return post.idata

        return run

    def baseline(sampler: str) -> Callable[[int], object]:
        def run(seed: int):
            with baseline_model(X, y):
                kwargs = {} if sampler == "pymc" else {"nuts_sampler": sampler}
                if draws != DRAWS or tune != TUNE:  # only when capped (--draws / --tune)
                    kwargs.update(draws=draws, tune=tune)
                return pm.sample(random_seed=seed, progressbar=False, **kwargs)

        return run

    return {
        "ours_nutpie": ours("nutpie"),
        "ours_pymc": ours("pymc"),
        "baseline": baseline("pymc"),
        "baseline_nutpie": baseline("nutpie"),
    }


def warm_up() -> None:
    """One small untimed run of every task: imports and first-call costs."""
    X, y = make_data(30)
    for fn in make_tasks(X, y, draws=50, tune=50).values():
        fn(SEED)


def bench_one(n: int, repeats: int, draws: int, tune: int) -> dict[str, float]:
    """Run every task ``repeats`` times (interleaved, one seed per repetition) at one n.

    Parameters
    ----------
    n : int
        Training-set size.
    repeats : int
        Repetitions; repetition r uses seed ``SEED + r`` for every task.
    draws, tune : int
        Draws and tuning steps per chain, for every task.

    Returns
    -------
    dict
        Medians over repetitions of every metric per task (``<task>_<metric>``), the
        smallest and largest ESS per second, the ratios to the baseline and whether the
        baseline's compiled graph still holds a Cholesky.
    """
    X, y = make_data(n)
    tasks = make_tasks(X, y, draws, tune)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in tasks}
    for r in range(repeats):
        for name, fn in tasks.items():
            elapsed, idata = timed(lambda fn=fn, seed=SEED + r: fn(seed))
            runs[name].append(summarise(idata, elapsed))
            s = runs[name][-1]
            print(
                f"    n = {n}, rep {r}: {name:<16} total {s['total_s']:6.1f} s, sampling "
                f"{s['sampling_s']:6.1f} s, min bulk ESS {s['ess_bulk_min']:6.0f}, "
                f"ESS/s {s['ess_per_s']:7.1f}, R-hat {s['r_hat_max']:.3f}, "
                f"div {int(s['divergences'])}",
                flush=True,
            )
    row: dict[str, float] = {}
    for name, rs in runs.items():
        for metric in METRICS:
            row[f"{name}_{metric}"] = statistics.median(x[metric] for x in rs)
        row[f"{name}_ess_per_s_lo"] = min(x["ess_per_s"] for x in rs)
        row[f"{name}_ess_per_s_hi"] = max(x["ess_per_s"] for x in rs)
        row[f"{name}_divergences_total"] = float(sum(x["divergences"] for x in rs))
        row[f"{name}_r_hat_worst"] = max(x["r_hat_max"] for x in rs)
        row[f"repeats_{name}"] = float(len(rs))
    for name in tasks:
        if name == "baseline":
            continue
        for metric in ("ess_per_s", "ess_per_s_total"):
            row[f"ratio_{name}_baseline_{metric}"] = (
                row[f"{name}_{metric}"] / row[f"baseline_{metric}"]
            )
    row["baseline_cholesky_in_graph"] = float(cholesky_in_graph(X, y))
    return row


def format_table(rows: dict[int, dict[str, float]]) -> str:
    """A plain-text table of the results for stdout."""
    head = (
        f"{'n':>4} {'task':<16} {'ESS/s':>8} {'ESS/s tot':>9} {'ratio':>6} {'ratio tot':>9} "
        f"{'min ESS':>8} {'sample s':>8} {'overhead s':>10} {'R-hat':>6} {'div':>4} "
        f"{'chains':>6} {'tree':>5} {'ESS/kgrad':>9}"
    )
    lines = [
        "medians over repetitions; ESS = min bulk ESS over f; ratio = ESS/s over the "
        "baseline's (pm.gp.Latent + pm.sample())",
        head,
        "-" * len(head),
    ]
    for n, r in rows.items():
        for name in TASKS:
            ratio = 1.0 if name == "baseline" else r[f"ratio_{name}_baseline_ess_per_s"]
            ratio_t = 1.0 if name == "baseline" else r[f"ratio_{name}_baseline_ess_per_s_total"]
            lines.append(
                f"{n:>4} {name:<16} {r[f'{name}_ess_per_s']:>8.1f} "
                f"{r[f'{name}_ess_per_s_total']:>9.1f} {ratio:>6.2f} {ratio_t:>9.2f} "
                f"{r[f'{name}_ess_bulk_min']:>8.0f} {r[f'{name}_sampling_s']:>8.2f} "
                f"{r[f'{name}_overhead_s']:>10.2f} {r[f'{name}_r_hat_max']:>6.3f} "
                f"{int(r[f'{name}_divergences_total']):>4} {int(r[f'{name}_chains']):>6} "
                f"{r[f'{name}_mean_tree_size']:>5.1f} {r[f'{name}_ess_per_kgrad']:>9.1f}"
            )
    return "\n".join(lines)


def write_markdown(
    rows: dict[int, dict[str, float]],
    facts: dict[str, str],
    settings: dict[str, str],
    defaults: dict[str, str],
    command: str,
    path: Path,
) -> None:
    """Write the Markdown summary: the table, the target, settings, machine facts, command."""
    out = [
        "# MCMC engine benchmark",
        "",
        f"Fixed-hyperparameter probit GP classification, SE kernel (lengthscale "
        f"{LENGTHSCALE}, variance {VARIANCE}), the synthetic 2-D data of the other "
        "benchmarks. ESS is the minimum bulk ESS over the n latent values f "
        '(`az.ess(idata, var_names=["f"], method="bulk")`, the same call for every row); '
        "ESS/s divides it by the sampling seconds PyMC records in the InferenceData "
        "(`sampling_time`: tuning and draws), ESS/s total by the whole call's seconds. "
        "Overhead = whole call - sampling: model construction, compilation, initialisation, "
        "conversion and diagnostics (mostly compilation). Ratios are ESS/s over the "
        "baseline's (`pm.gp.Latent` + `pm.sample()` defaults); above 1 means ours is better. "
        "Values are medians over the repetitions (each its own seed, interleaved); ESS/s "
        "range is min-max over repetitions; divergences are summed over repetitions. Mean tree "
        "size is leapfrog steps (gradient evaluations) per draw; ESS per 1000 gradients is "
        "over the draws' gradients (tuning excluded): the sampler's efficiency apart from "
        "the cost of a gradient. Sampling seconds are wall-clock: the nutpie rows run two "
        "chains at a time in threads, the PyMC rows one chain at a time.",
        "",
        "## ESS per second",
        "",
        "| n | row | ESS/s (sampling) | range | ratio | ESS/s (total) | ratio (total) "
        "| min bulk ESS | sampling (s) | overhead (s) | R-hat max | divergences | chains "
        "x draws | mean tree size | ESS per 1000 gradients |",
        "|---:|:---|---:|:---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|---:|---:|",
    ]
    for n, r in rows.items():
        for name in TASKS:
            if name == "baseline":
                ratio, ratio_t = "1", "1"
            else:
                ratio = f"{r[f'ratio_{name}_baseline_ess_per_s']:.2f}"
                ratio_t = f"{r[f'ratio_{name}_baseline_ess_per_s_total']:.2f}"
            out.append(
                f"| {n} | {LABELS[name]} | {r[f'{name}_ess_per_s']:.0f} "
                f"| {r[f'{name}_ess_per_s_lo']:.0f}-{r[f'{name}_ess_per_s_hi']:.0f} "
                f"| {ratio} | {r[f'{name}_ess_per_s_total']:.0f} | {ratio_t} "
                f"| {r[f'{name}_ess_bulk_min']:.0f} | {r[f'{name}_sampling_s']:.2f} "
                f"| {r[f'{name}_overhead_s']:.2f} | {r[f'{name}_r_hat_worst']:.3f} "
                f"| {int(r[f'{name}_divergences_total'])} "
                f"| {int(r[f'{name}_chains'])} x {int(r[f'{name}_draws'])} "
                f"| {r[f'{name}_mean_tree_size']:.1f} | {r[f'{name}_ess_per_kgrad']:.1f} |"
            )
    out += [
        "",
        "R-hat max is the worst over repetitions. `pm.gp.Latent` builds K and its Cholesky "
        "inside the graph; at fixed hyperparameters PyTensor folds them into a constant at "
        "compile time. A Cholesky node in the baseline's compiled log density and gradient: "
        + ", ".join(
            f"n = {n}: {'yes' if r['baseline_cholesky_in_graph'] else 'no'}"
            for n, r in rows.items()
        )
        + ".",
        "",
        "## Target",
        "",
    ]
    for n, r in rows.items():
        ratio = r["ratio_ours_nutpie_baseline_ess_per_s"]
        total = r["ratio_ours_nutpie_baseline_ess_per_s_total_loaded"]
        goal, goal_total = (TARGET_RATIO, TARGET_RATIO_TOTAL) if n == TARGET_N else (5.0, None)
        out.append(
            f"- n = {n}: ours (nutpie, the default) / baseline, min bulk ESS per sampling "
            f"second: {ratio:.2f} (target >= {goal:g}): {verdict(ratio >= goal)}; per second "
            f"of the whole call with the compiled density's load charged to it: {total:.2f}"
            + (f" (target >= {goal_total:g}): {verdict(total >= goal_total)}" if goal_total
               else "")
        )  # fmt: skip
    first = rows[next(iter(rows))]
    compile_s, load_s = first["compiled_compile_s"], first["compiled_load_s"]
    out += [
        "",
        "Ours (nutpie) samples a log density compiled once for every problem (numba, "
        "`gpc_compare/engines/_compiled.py`), not a PyMC model compiled per problem. With an "
        f"empty numba cache it compiled in {compile_s:.1f} s (once per machine); it loaded "
        f"from the cache in {load_s:.2f} s (once per process). The timed rows include "
        "neither; the target's whole-call ratio charges the load to every call.",
    ]
    sections = {
        "Settings": settings,
        "pm.sample() defaults as resolved on this machine": defaults,
        "Machine": facts,
    }
    out += markdown_tail(sections, command)
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
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300])
    parser.add_argument(
        "--repeats", type=int, default=1, help="repetitions per task; each its own seed"
    )
    parser.add_argument("--output", type=Path, default=Path("results/benchmarks"))
    parser.add_argument(
        "--draws",
        type=int,
        default=DRAWS,
        help=f"draws per chain for every task (default {DRAWS}, pm.sample's default)",
    )
    parser.add_argument(
        "--tune",
        type=int,
        default=TUNE,
        help=f"tuning steps per chain for every task (default {TUNE}, pm.sample's default)",
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
    logging.getLogger("pymc").setLevel(logging.ERROR)  # PyMC's per-run sampling messages
    warnings.simplefilter("ignore")  # e.g. "run at least 4 chains": the numbers say it

    facts = machine_facts(
        **{
            "pymc": pm.__version__,
            "pytensor": f"{pytensor.__version__} (blas__ldflags "
            f"{pytensor.config.blas__ldflags!r}: "
            + (
                "no BLAS linked for the C backend"
                if not pytensor.config.blas__ldflags
                else "BLAS linked"
            )
            + ")",
            "nutpie": nutpie.__version__,
            "arviz": az.__version__,
        }
    )
    defaults = pm_sample_defaults()
    ours_explicit = ("draws", "tune", "chains", "random_seed", "nuts_sampler")
    ours_defaults = mcmc_engine.MCMCOptions.defaults()
    capped = args.draws != DRAWS or args.tune != TUNE
    settings = {
        "ours": f"gc.fit(method='mcmc', kernel=SE({LENGTHSCALE:g}, {VARIANCE:g}), "
        f"likelihood='probit', draws={args.draws}, tune={args.tune}, chains={OURS_CHAINS}, "
        "random_seed=seed), nuts_sampler='nutpie' (the default when installed) / 'pymc'; "
        "the engine's other options at their defaults: "
        + ", ".join(f"{k}={v!r}" for k, v in ours_defaults.items() if k not in ours_explicit)
        + "; L = chol(K + 1e-10 I) in NumPy, y in {-1, +1}, log Phi(y f) in numba (nutpie: "
        "the compiled density, its gradient's H^T d in float32) or "
        "pm.Potential(normal_lcdf(0, 1, y f).sum()) (PyMC's sampler)",
        "baseline": "pm.gp.Latent(cov_func=1.0 * pm.gp.cov.ExpQuad(2, ls=1.0)).prior('f', "
        "X=X) (reparameterize=True, jitter 1e-6), pm.Bernoulli('y', "
        "p=pm.math.invprobit(f), observed=y) with y in {0, 1}; pm.sample(random_seed=seed, "
        "progressbar=False)"
        + (f", draws={args.draws}, tune={args.tune} (capped)" if capped else "")
        + ", all else default (below); 'pm.gp.Latent + nutpie' adds only "
        "nuts_sampler='nutpie'",
        "nutpie": "ours: the compiled density (gpc_compare/engines/_compiled.py); the "
        "baseline: compile_pymc_model defaults (numba backend); cores = min(chains, "
        f"os.cpu_count()) = {min(OURS_CHAINS, os.cpu_count() or 1)} for ours, "
        f"{min(2, os.cpu_count() or 1)} for the baseline's 2 chains (threads)",
        "gpc_compare commit": engine_commit(),
        "seeds": f"repetition r uses {SEED} + r for every row",
        "warm-up": "every row once, untimed, at n = 30 with 50 tuning steps and 50 draws",
        "BLAS threads": "library default"
        if args.blas_threads <= 0
        else f"{args.blas_threads} (threadpoolctl, all rows; PyMC samples sequentially "
        "in-process here, nutpie in threads)",
        "repetitions": str(args.repeats),
    }
    print("MCMC benchmark: " + ", ".join(f"{k} {v}" for k, v in facts.items()))
    print("pm.sample() defaults: " + ", ".join(f"{k} {v}" for k, v in defaults.items()))
    compile_s, load_s = numba_import_seconds("gpc_compare.engines._compiled", "nutpie")
    print(f"compiled density: compiled in {compile_s:.2f} s, loaded from the cache in "
          f"{load_s:.2f} s")  # fmt: skip
    warm_up()
    rows: dict[int, dict[str, float]] = {}
    for n in args.sizes:
        rows[n] = bench_one(n, args.repeats, args.draws, args.tune)
        rows[n]["compiled_compile_s"], rows[n]["compiled_load_s"] = compile_s, load_s
        ours = rows[n]["ours_nutpie_ess_bulk_min"] / (rows[n]["ours_nutpie_total_s"] + load_s)
        rows[n]["ratio_ours_nutpie_baseline_ess_per_s_total_loaded"] = (
            ours / rows[n]["baseline_ess_per_s_total"]
        )
    print()
    print(format_table(rows))

    args.output.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = args.output / "mcmc.csv", args.output / "mcmc.md"
    write_csv(rows, csv_path)
    write_markdown(rows, facts, settings, defaults, command, md_path)
    print(f"\nwrote {csv_path} and {md_path}")

    if TARGET_N in rows:
        r = rows[TARGET_N]
        for key, goal in (("", TARGET_RATIO), ("_total_loaded", TARGET_RATIO_TOTAL)):
            ratio = r[f"ratio_ours_nutpie_baseline_ess_per_s{key}"]
            if ratio < goal:
                print(f"TARGET MISSED: ours (nutpie) / baseline min-bulk-ESS/s{key} = "
                      f"{ratio:.2f} < {goal:g} at n = {TARGET_N}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
