"""Benchmark: the MCMC convergence diagnostics, ArviZ's loop against the vectorised route.

What it measures
----------------
``gpc_compare.diagnostics.diagnose`` needs the rank-normalised split R-hat and the bulk
and tail ESS of every entry of f (Vehtari et al. 2021). ArviZ (``az.rhat``,
``az.ess(method="bulk")``, ``az.ess(method="tail")``) computes them one entry at a time in
Python; ``gpc_compare._convergence.rank_diagnostics`` computes the same numbers for all
entries at once. Both are timed here, in one process (and ``diagnose`` itself, which
takes them from an InferenceData), on standard normal draws of the shape
of an MCMC fit (default 4 chains x 1000 draws x 755 entries: anes96's n), with the largest
relative difference between them. Times are the best of ``--repeats`` runs.

How to run, from the repository root::

    python benchmarks/bench_convergence.py
    python benchmarks/bench_convergence.py --shape 4 1000 200 --repeats 5
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from gpc_compare._convergence import rank_diagnostics
from gpc_compare.diagnostics import diagnose


def _best(fn, repeats: int) -> tuple[float, object]:
    best, out = np.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", type=int, nargs=3, default=[4, 1000, 755])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import arviz as az

        x = np.random.default_rng(20240601).standard_normal(args.shape)
        ds = az.convert_to_dataset({"f": x})
        az.rhat(ds.isel(f_dim_0=[0]))  # ArviZ's numba compilation, outside the timing
        routes = {
            "az.rhat": lambda: az.rhat(ds)["f"].to_numpy(),
            "az.ess bulk": lambda: az.ess(ds, method="bulk")["f"].to_numpy(),
            "az.ess tail": lambda: az.ess(ds, method="tail")["f"].to_numpy(),
        }
        times = {name: _best(fn, args.repeats) for name, fn in routes.items()}
        diverging = np.zeros(x.shape[:2], dtype=bool)
        idata = az.from_dict(posterior={"f": x}, sample_stats={"diverging": diverging})
    ours_time, ours = _best(lambda: rank_diagnostics(x), args.repeats)
    diagnose_time, _ = _best(lambda: diagnose(idata, 1.01, 400.0, ["f"]), args.repeats)
    arviz_total = sum(t for t, _ in times.values())
    print(f"draws {tuple(args.shape)} (chains, draws, entries), best of {args.repeats}")
    for name, (t, _) in times.items():
        print(f"  {name:12s} {t:7.3f} s")
    print(f"  {'ArviZ total':12s} {arviz_total:7.3f} s")
    print(f"  {'vectorised':12s} {ours_time:7.3f} s  ({arviz_total / ours_time:.1f}x faster)")
    print(f"  {'diagnose':12s} {diagnose_time:7.3f} s  (the vectorised route, from InferenceData)")
    for (name, (_, theirs)), mine in zip(times.items(), ours, strict=True):
        rel = np.max(np.abs(mine - theirs) / np.abs(theirs))
        print(f"  {name:12s} largest relative difference {rel:.1e}")


if __name__ == "__main__":
    main()
