"""Benchmark: where the MCMC engine's sampling time goes, against NUTS's own floor.

What it measures
----------------
On the problems of ``bench_mcmc.py`` (its synthetic 2-D data, SE kernel with lengthscale
1 and variance 1, probit, fixed hyperparameters), the engine's default model: EP's
whitening of the eigenbasis of K (r of the n directions) and the log density compiled once
(``gpc_compare/engines/_compiled.py``), sampled by nutpie as ``gc.fit(method="mcmc")``
samples it (1000 tuning steps and 1000 draws in each of 4 chains, 2 at a time). Beside it,
through the same compiled density and the same sampler settings:

* ``standard normal`` -- N(0, I_r) in the same dimension r (H = 0, a constant
  likelihood): the trajectories NUTS needs at the target acceptance if the whitening were
  exact. A tree size near it means a better whitening cannot shorten the trajectories;
* ``one observation`` -- the same with n = 1: nutpie's own cost per leapfrog step;

and the density's parts timed alone (a numba loop, one thread): the two n x r products
(g = g0 + H z, and the gradient's H^T d in single precision, as the density takes them)
(H lower trapezoidal: its entries on and below the diagonal) and the n likelihood terms
(log Phi and its derivative).

Also the engine's model at target_accept 0.65 and 0.7 besides the default 0.8 (PyMC's,
the baseline's): the minimum over f of bulk, tail and sd ESS (``az.ess`` methods "bulk",
"tail", "sd") per sampling second. Bulk ESS rewards the anti-correlated draws of long
steps; the sd's ESS (what a posterior variance is estimated from) does not.

Values are medians over ``--repeats`` runs (seed 20240601 + r). Outputs: a table on stdout,
``<output>/mcmc_floor.csv`` and ``<output>/mcmc_floor.md``.

How to run, from the repository root::

    python benchmarks/bench_mcmc_floor.py
    python benchmarks/bench_mcmc_floor.py --sizes 300 --repeats 3 --output /tmp/bench
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
import warnings
from pathlib import Path

import arviz as az
import numba
import numpy as np
import nutpie
from threadpoolctl import threadpool_limits

import gpc_compare as gc
from gpc_compare.engines import _compiled, ep
from gpc_compare.engines._whitening import lower_trapezoidal, prior_factor, site_whitening
from gpc_compare.likelihoods import Gaussian, Probit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SEED, machine_facts, make_data, markdown_tail, write_csv  # noqa: E402

DRAWS = TUNE = 1000
CHAINS = 4
CORES = 2
TARGET_ACCEPTS = (0.8, 0.7, 0.65)


def whitened(n: int) -> tuple[np.ndarray, tuple]:
    """The engine's packed density at the benchmark problem, and (H, g0, y, T, b)."""
    X, labels = make_data(n)
    y = 2.0 * labels - 1.0
    kernel = gc.kernels.SquaredExponential(lengthscale=1.0, variance=1.0)
    G, _ = prior_factor(kernel(X))
    approx = ep.infer(X, y, kernel, Probit(), None, schedule="parallel")
    a, B = site_whitening(approx.ttau, approx.tnu, G)
    parts = (lower_trapezoidal(G @ B), G @ a, y, approx.ttau, approx.tnu)
    return _compiled.pack(*parts[:2], 0.0, *parts[2:], Probit()), parts


def constant(n: int, r: int) -> np.ndarray:
    """N(0, I_r) through the compiled density: H = 0 and a constant likelihood."""
    zeros = np.zeros(n)
    return _compiled.pack(np.zeros((n, r)), zeros, 0.0, zeros, zeros, zeros, Gaussian(1.0))


def run(data: np.ndarray, seed: int, target_accept: float = 0.8) -> dict[str, float]:
    """One nutpie run: seconds, gradients, tree size, step size, min ESS per second."""
    model = _compiled.whitened_model(data)
    t0 = time.perf_counter()
    idata = nutpie.sample(model, draws=DRAWS, tune=TUNE, chains=CHAINS, cores=CORES,
                          seed=seed, target_accept=target_accept, progress_bar=False)  # fmt: skip
    seconds = time.perf_counter() - t0
    stats = idata.sample_stats
    gradients = float(idata.warmup_sample_stats["n_steps"].sum() + stats["n_steps"].sum())
    out = {
        "seconds": seconds,
        "gradients": gradients,
        "us_per_gradient": 1e6 * seconds * CORES / gradients,  # (per thread)
        "tree_size": float(stats["n_steps"].mean()),
        "step_size": float(stats["step_size"].mean()),
        "divergences": float(stats["diverging"].sum()),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in ("bulk", "tail", "sd"):
            ess = float(az.ess(idata, var_names=["f"], method=method)["f"].min())
            out[f"ess_{method}_per_s"] = ess / seconds
    return out


@numba.njit(cache=False)
def _products(data, z, d_single, repeats):  # pragma: no cover - timed, compiled
    H, g0, _, _, _, H_single = _compiled._unpack(data)
    n, r = g0.shape[0], z.shape[0]
    s = 0.0
    for _ in range(repeats):  # as the density: H z in double, H^T d in single precision
        s += (
            _compiled.lower_product(H, z, n)[0]
            + _compiled.lower_transpose_product(d_single, H_single, r)[0]
        )
    return s


@numba.njit(cache=False)
def _likelihood(y, f, repeats):  # pragma: no cover - timed, compiled
    s = 0.0
    for _ in range(repeats):
        for i in range(f.shape[0]):
            value, slope = _compiled.log_phi_ratio(y[i] * f[i])
            s += value + slope
    return s


@numba.njit(cache=False)
def _density(z, grad, data, repeats):  # pragma: no cover - timed, compiled
    s = 0.0
    for _ in range(repeats):
        s += _compiled._log_density(z, grad, data)
    return s


def parts(H: np.ndarray, g0: np.ndarray, y: np.ndarray, repeats: int = 20000) -> dict[str, float]:
    """Microseconds per call of the density's parts, and of the whole density (its value
    and gradient), each in a compiled loop."""
    z = np.random.default_rng(0).standard_normal(H.shape[1])
    d, f, grad = g0.copy(), g0 + H @ z, np.empty(H.shape[1])
    data = _compiled.pack(H, g0, 0.0, y, np.ones_like(y), np.zeros_like(y), Probit())
    out = {}
    for name, call in (
        ("us_products", lambda k: _products(data, z, d.astype(np.float32), k)),
        ("us_likelihood", lambda k: _likelihood(y, f, k)),
        ("us_density", lambda k: _density(z, grad, data, k)),
    ):
        call(10)
        t0 = time.perf_counter()
        call(repeats)
        out[name] = 1e6 * (time.perf_counter() - t0) / repeats
    return out


def bench(n: int, repeats: int) -> dict[str, float]:
    data, (H, g0, y, _, _) = whitened(n)
    r = H.shape[1]
    rows: dict[str, list[dict[str, float]]] = {}
    for rep in range(repeats):
        seed = SEED + rep
        for ta in TARGET_ACCEPTS:
            rows.setdefault(f"ours_{ta:g}", []).append(run(data, seed, ta))
        rows.setdefault("normal", []).append(run(constant(n, r), seed))
        rows.setdefault("overhead", []).append(run(constant(1, r), seed))
    out = {"r": float(r)}
    for name, runs in rows.items():
        for key in runs[0]:
            out[f"{name}_{key}"] = statistics.median(x[key] for x in runs)
    return out | parts(H, g0, y)


def markdown(results: dict[int, dict[str, float]], facts: dict, command: str) -> str:
    out = [
        "# Where the MCMC engine's sampling time goes",
        "",
        "The engine's default model (EP-whitened eigenbasis of K, the compiled density, "
        "nutpie; `benchmarks/bench_mcmc_floor.py`) against NUTS on an exact standard "
        "normal of the same dimension r through the same density and sampler settings, "
        "nutpie's own cost per step (n = 1), and the density's parts timed alone. "
        f"{CHAINS} chains x ({TUNE} tuning + {DRAWS} draws), {CORES} at a time; medians "
        "over repetitions. Microseconds per gradient are per thread (wall seconds x "
        f"{CORES} / gradients, tuning included).",
        "",
        "| n | r | model | target_accept | tree size | step size | us / gradient "
        "| bulk ESS/s | tail ESS/s | sd ESS/s | divergences |",
        "|---:|---:|:---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, x in results.items():
        r = int(x["r"])
        labels = [(f"ours_{ta:g}", "ours (EP-whitened, probit)", ta) for ta in TARGET_ACCEPTS]
        labels += [("normal", "standard normal N(0, I_r)", 0.8),
                   ("overhead", "one observation (nutpie's own cost)", 0.8)]  # fmt: skip
        for key, label, ta in labels:
            ess = (
                " | ".join(f"{x[f'{key}_ess_{m}_per_s']:.0f}" for m in ("bulk", "tail", "sd"))
                if key.startswith("ours")
                else "- | - | -"
            )
            out.append(
                f"| {n} | {r} | {label} | {ta:g} | {x[f'{key}_tree_size']:.2f} "
                f"| {x[f'{key}_step_size']:.3f} | {x[f'{key}_us_per_gradient']:.1f} | {ess} "
                f"| {int(x[f'{key}_divergences'])} |"
            )
    out += ["", "The density's parts, one thread, timed alone (microseconds per call):", ""]
    out += ["| n | r | two n x r products | n likelihood terms | whole density |",
            "|---:|---:|---:|---:|---:|"]  # fmt: skip
    for n, x in results.items():
        out.append(f"| {n} | {int(x['r'])} | {x['us_products']:.1f} | "
                   f"{x['us_likelihood']:.1f} | {x['us_density']:.1f} |")  # fmt: skip
    out += ["", "Read together, at the default target_accept 0.8:", ""]
    for n, x in results.items():
        out.append(
            f"- n = {n}: trajectories {x['ours_0.8_tree_size']:.2f} steps a draw against "
            f"{x['normal_tree_size']:.2f} for the exact standard normal "
            f"({x['ours_0.8_tree_size'] / x['normal_tree_size']:.2f}x NUTS's floor); a "
            f"gradient {x['ours_0.8_us_per_gradient']:.1f} us in the sampler: the density "
            f"{x['us_density']:.1f} alone (its products {x['us_products']:.1f}, likelihood "
            f"{x['us_likelihood']:.1f}), nutpie's step {x['overhead_us_per_gradient']:.1f}, "
            "the rest two threads sharing the machine."
        )
    return "\n".join(out + markdown_tail({"Machine": facts}, command))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", type=Path, default=Path("results/benchmarks"))
    args = parser.parse_args()
    threadpool_limits(1)
    command = shlex.join(["python", *sys.argv])
    run(constant(1, 2), SEED)  # (first calls: nutpie, the compiled density's load)
    results = {n: bench(n, args.repeats) for n in args.sizes}
    for n, x in results.items():
        print(f"n = {n}, r = {int(x['r'])}: " + ", ".join(
            f"{k} {v:.3g}" for k, v in x.items() if "tree" in k or k.startswith("us")))  # fmt: skip
    args.output.mkdir(parents=True, exist_ok=True)
    write_csv(results, args.output / "mcmc_floor.csv")
    facts = machine_facts(nutpie=nutpie.__version__, arviz=az.__version__)
    (args.output / "mcmc_floor.md").write_text(markdown(results, facts, command))
    print(f"wrote {args.output / 'mcmc_floor.md'}")


if __name__ == "__main__":
    main()
