"""Benchmark: the sparse engines (SVGP, FITC-EP, FITC-Laplace) against the O(n M^2) floor.

What it measures
----------------
On synthetic 10-D data (a smooth decision function of the first inputs, 10% label noise;
fixed seed), M = 256 inducing inputs (a fixed random subset of the training inputs), the
squared exponential kernel at fixed hyperparameters (length-scale sqrt(d), variance 1),
all in one process, interleaved within every repetition:

* ``floor``          -- one n x M^2 matrix product, A^T A with A of shape (n, M): the least
  work any O(n M^2) method does;
* ``<engine>_fit``   -- ``infer`` at fixed hyperparameters (SVGP: logistic, its q to
  convergence; FITC-EP: probit, parallel EP to convergence; FITC-Laplace: logistic);
* ``<engine>_grad``  -- the evidence's gradient at the fitted posterior (hyperparameters and
  all 256 x 10 inducing coordinates), i.e. one evidence-and-gradient on top of the fit.

Reported as medians and as ratios to the floor's median, at n = 10^5 (``--n``), and the cost
growth exponent in n: the slope of log fit seconds against log n over ``--growth-sizes``
(10^4 .. 10^5; target <= 1.1). Then one full hyperparameter fit of SVGP at n = 10^5
(``gc.fit(method="svgp", optimize=True, n_restarts=0)``: L-BFGS-B on the length-scale and
variance, q re-optimised warm at each point; target < 3 minutes on 2 cores) and, as a peer,
GPy's sparse EP classifier (``GPy.models.SparseGPClassification``, EP with the DTC
approximation, M fixed) at the same data, fixed hyperparameters, where it finishes.
BLAS uses the machine's threads (2 here) for every task alike. ``--profile`` adds a
cProfile summary of one SVGP fit and gradient (where the time goes).

Outputs: a table on stdout, ``<output>/sparse.csv`` (tidy: n, what, value) and
``<output>/sparse.md``.

How to run, from the repository root::

    python benchmarks/bench_sparse.py                      # about 10 minutes
    python benchmarks/bench_sparse.py --n 20000 --growth-sizes 5000 10000 20000 --repeats 1
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_facts, markdown_tail, timed, verdict, write_csv  # noqa: E402

import gpc_compare as gc  # noqa: E402
from gpc_compare.engines import fitc_ep, fitc_laplace, svgp  # noqa: E402
from gpc_compare.likelihoods import get_likelihood  # noqa: E402

D, M, SEED = 10, 256, 7
ENGINES = {
    "svgp": (svgp, "logistic"),
    "fitc_ep": (fitc_ep, "probit"),
    "fitc_laplace": (fitc_laplace, "logistic"),
}
GROWTH_TARGET = 1.1
FULL_FIT_TARGET = 180.0  # seconds
PEER_TIMEOUT = 600.0  # seconds


def make_data(n: int, seed: int = SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n cases in 10-D, their labels (sign of a smooth function, 10% flipped) and M inducing
    inputs drawn from them."""
    rng = np.random.default_rng(seed + n)
    X = rng.standard_normal((n, D))
    g = np.sin(1.5 * X[:, 0]) + 0.5 * X[:, 1] ** 2 - 0.5 + 0.3 * X[:, 2] * X[:, 3]
    y = (g > 0).astype(int)
    flip = rng.random(n) < 0.1
    y[flip] = 1 - y[flip]
    Z = X[rng.choice(n, M, replace=False)]
    return X, np.where(y == 1, 1, -1), Z


def kernel() -> gc.kernels.SquaredExponential:
    return gc.kernels.SquaredExponential(float(np.sqrt(D)), 1.0)


def floor_seconds(n: int) -> float:
    A = np.random.default_rng(0).standard_normal((n, M))
    return timed(lambda: A.T @ A)[0]


def one_round(n: int) -> dict[str, float]:
    """Every task once at n, interleaved."""
    X, y, Z = make_data(n)
    out = {"floor": floor_seconds(n)}
    for name, (engine, lik) in ENGINES.items():
        lk = get_likelihood(lik)
        t, post = timed(lambda e=engine, lk=lk: e.infer(X, y, kernel(), lk, None, inducing=Z,
                                                        optimize_inducing=True))  # fmt: skip
        out[f"{name}_fit"] = t
        out[f"{name}_grad"] = timed(lambda p=post: p.log_marginal_likelihood_gradient)[0]
        out[f"{name}_iterations"] = float(post.convergence.iterations)
    return out


def growth(sizes: list[int]) -> dict[str, float]:
    """The slope of log fit seconds on log n, per engine (one fit each size)."""
    times: dict[str, list[float]] = {name: [] for name in ENGINES}
    for n in sizes:
        r = one_round(n)
        for name in ENGINES:
            times[name].append(r[f"{name}_fit"] + r[f"{name}_grad"])
        print(f"  growth n = {n}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()))
    return {name: float(np.polyfit(np.log(sizes), np.log(t), 1)[0]) for name, t in times.items()}


def full_fit(n: int) -> dict[str, float]:
    X, y, Z = make_data(n)
    t, post = timed(lambda: gc.fit(X, y, method="svgp", likelihood="logistic", kernel=kernel(),
                                   inducing=Z, optimize=True, n_restarts=0))  # fmt: skip
    return {
        "svgp_full_fit_seconds": t,
        "svgp_full_fit_evaluations": post.optimization.n_evaluations,
        "svgp_full_fit_bound": post.log_marginal_likelihood,
    }


def gpy_peer(n: int) -> float:
    """GPy's sparse EP classifier at fixed hyperparameters: seconds for its inference (its
    sites updated one at a time in Python), in a subprocess stopped after
    ``PEER_TIMEOUT`` seconds (NaN then)."""
    code = (
        "import sys, time, numpy as np; sys.path.insert(0, 'benchmarks'); import GPy; "
        "from bench_sparse import make_data, D; "
        f"X, y, Z = make_data({n}); "
        "k = GPy.kern.RBF(D, variance=1.0, lengthscale=float(np.sqrt(D))); "
        "t = time.perf_counter(); "
        "GPy.models.SparseGPClassification(X, (y[:, None] + 1) // 2, kernel=k, Z=Z.copy()); "
        "print(time.perf_counter() - t)"
    )
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=PEER_TIMEOUT, check=True)  # fmt: skip
    except subprocess.TimeoutExpired:
        return float("nan")
    return float(out.stdout.strip().splitlines()[-1])


def profile_summary(n: int) -> str:
    X, y, Z = make_data(n)
    prof = cProfile.Profile()
    prof.enable()
    post = svgp.infer(X, y, kernel(), get_likelihood("logistic"), None, inducing=Z,
                      optimize_inducing=True)  # fmt: skip
    _ = post.log_marginal_likelihood_gradient
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(8)
    return buf.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--growth-sizes", type=int, nargs="+",
                        default=[10_000, 20_000, 50_000, 100_000])  # fmt: skip
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--peer-n", type=int, default=2000)
    parser.add_argument("--no-full-fit", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--output", type=Path, default=Path("results/benchmarks"))
    args = parser.parse_args()
    rounds = [one_round(args.n) for _ in range(args.repeats)]
    med = {k: float(np.median([r[k] for r in rounds])) for k in rounds[0]}
    ratios = {k: med[k] / med["floor"] for k in med if k.endswith(("_fit", "_grad"))}
    print(f"n = {args.n}, M = {M}, d = {D}: floor {med['floor']:.3f} s")
    for k, v in ratios.items():
        print(f"  {k:18s} {med[k]:8.2f} s  {v:7.1f} floors")
    slopes = growth(args.growth_sizes)
    full = {} if args.no_full_fit else full_fit(args.n)
    if full:
        print(f"  SVGP full fit: {full['svgp_full_fit_seconds']:.1f} s, "
              f"{full['svgp_full_fit_evaluations']:.0f} evaluations")  # fmt: skip
    peer = {"gpy_sparse_ep_seconds": gpy_peer(args.peer_n)}
    ours_at_peer = one_round(args.peer_n)
    peer["fitc_ep_seconds_at_peer_n"] = ours_at_peer["fitc_ep_fit"]
    rows = {args.n: {**med, **{f"{k}_ratio": v for k, v in ratios.items()}, **full}}
    rows[0] = {f"growth_exponent_{k}": v for k, v in slopes.items()}
    rows[args.peer_n] = peer
    args.output.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.output / "sparse.csv")
    lines = [
        "# Sparse engines: cost against the O(n M^2) floor", "",
        f"n = {args.n:,}, M = {M}, d = {D}, fixed hyperparameters, median of {args.repeats}; "
        f"the floor, one n x M^2 product, took {med['floor']:.3f} s.", "",
        "| task | seconds | floors | iterations |", "|---|---|---|---|",
    ]  # fmt: skip
    for name in ENGINES:
        its = med[f"{name}_iterations"]
        lines.append(f"| {name} fit | {med[f'{name}_fit']:.2f} | {ratios[f'{name}_fit']:.1f} | "
                     f"{its:.0f} |")  # fmt: skip
        lines.append(f"| {name} gradient | {med[f'{name}_grad']:.2f} | "
                     f"{ratios[f'{name}_grad']:.1f} | |")  # fmt: skip
    sizes = ", ".join(f"{s:,}" for s in args.growth_sizes)
    lines += ["", f"## Growth in n ({sizes}; fit and gradient)", "",
              "| engine | exponent | <= 1.1 |", "|---|---|---|"]  # fmt: skip
    lines += [f"| {k} | {v:.2f} | {verdict(v <= GROWTH_TARGET)} |" for k, v in slopes.items()]
    if full:
        lines += ["", "## Full hyperparameter fit of SVGP", "",
                  f"{full['svgp_full_fit_seconds']:.0f} s for "
                  f"{full['svgp_full_fit_evaluations']:.0f} evaluations at n = {args.n:,} "
                  f"(target < {FULL_FIT_TARGET:.0f} s: "
                  f"{verdict(full['svgp_full_fit_seconds'] < FULL_FIT_TARGET)})."]  # fmt: skip
    ours, gpy = peer["fitc_ep_seconds_at_peer_n"], peer["gpy_sparse_ep_seconds"]
    gpy_text = f"{gpy:.2f} s" if np.isfinite(gpy) else f"did not finish in {PEER_TIMEOUT:.0f} s"
    lines += ["", "## Peer", "",
              f"At n = {args.peer_n:,}, M = {M}, fixed hyperparameters: GPy's "
              f"SparseGPClassification (EP with the DTC approximation, its sites updated one "
              f"at a time in Python) {gpy_text}; FITC-EP here {ours:.2f} s"
              + (f" ({gpy / ours:.1f}x faster)." if np.isfinite(gpy) else ".")]  # fmt: skip
    if args.profile:
        lines += ["", "## Where the time goes (SVGP fit and gradient)", "", "```",
                  profile_summary(args.n).strip(), "```"]  # fmt: skip
    lines += markdown_tail({"Machine": machine_facts()}, " ".join(["python", *sys.argv]))
    (args.output / "sparse.md").write_text("\n".join(lines))
    print(f"wrote {args.output / 'sparse.md'}")


if __name__ == "__main__":
    main()
