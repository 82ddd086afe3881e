"""Benchmark: the multi-class MCMC engine with its compiled density against the PyMC model
that nutpie compiles for every fit.

What it measures
----------------
One Iris fold (StratifiedKFold(5, shuffle=True, random_state=0), the first: 120 training
cases, C = 3, inputs standardised on the fold), the SE kernel at ell = 4, sigma_f^2 = 400,
``gc.engines.mcmc.infer`` with 4 chains x (1000 tuning + 1000 draws), random_seed 1, for
the softmax and the multinomial probit likelihoods, by two routes:

* ``compiled`` -- the engine's default: nutpie samples the density written once in numba
  (``gpc_compare/engines/_compiled_multiclass.py``), loaded from numba's cache;
* ``pymc``     -- the same model through ``pm.sample(nuts_sampler="nutpie")``, which
  compiles the PyMC model for the fit (the route before the compiled density, forced
  here by giving the engine no compiled model).

Each run is a fresh process (``--one`` runs one inside this one), BLAS on one thread. CPU
seconds (``time.process_time``: the machine may be loaded, so wall time says little),
split into nutpie's model compilation (``nutpie.compile_pymc_model``), its sampling
(``nutpie.sample``) and the rest of the fit (the whitening approximation, the
conversion, the diagnostics); the import of the compiled density (numba's cache load) is
timed apart. Also the mean leapfrog steps per draw, the step size, R-hat and the bulk ESS.

PyTensor caches the numba kernels of a PyMC model's operations on disk (its
``base_compiledir``): the ``pymc`` route's compilation is cheaper after a first fit;
``--cold DIR`` points PyTensor (and numba, for the compiled density) at an empty
directory to time a first fit.

How to run, from the repository root::

    python benchmarks/bench_mcmc_multiclass.py
    python benchmarks/bench_mcmc_multiclass.py --routes pymc --cold /tmp/empty-cache
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings

LIKELIHOODS = ("softmax", "multinomial_probit")
ROUTES = ("compiled", "pymc")


def _timed(cpu: dict[str, float], key: str, fn):
    def wrapper(*args, **kwargs):
        t0 = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            cpu[key] = cpu.get(key, 0.0) + time.process_time() - t0

    return wrapper


def run_one(likelihood: str, route: str) -> dict:
    """One fit in this process: its CPU seconds, their split and the sampler's facts."""
    import numpy as np
    import nutpie
    from sklearn.model_selection import StratifiedKFold
    from threadpoolctl import threadpool_limits

    import gpc_compare as gc
    from gpc_compare.engines import mcmc
    from gpc_compare.likelihoods import MultinomialProbit, Softmax

    cpu: dict[str, float] = {}
    nutpie.compile_pymc_model = _timed(cpu, "compile", nutpie.compile_pymc_model)
    nutpie.sample = _timed(cpu, "sample", nutpie.sample)
    if route == "pymc":
        mcmc.compiled_multiclass_model = lambda *args: None
    else:
        t0 = time.process_time()
        from gpc_compare.engines import _compiled_multiclass  # noqa: F401 (numba's cache)

        cpu["load"] = time.process_time() - t0
    data = gc.datasets.load_iris()
    train, test = next(StratifiedKFold(5, shuffle=True, random_state=0).split(data.X, data.y))
    X, _ = gc.datasets.standardize(data.X[train], data.X[test])
    lik = Softmax() if likelihood == "softmax" else MultinomialProbit()
    kernel = gc.kernels.SquaredExponential(4.0, 400.0)
    with threadpool_limits(1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.process_time()
        post = mcmc.infer(X, data.y[train], kernel, lik, None, draws=1000, tune=1000, chains=4,
                          random_seed=1)  # fmt: skip
        cpu["fit"] = time.process_time() - t0
    stats, d = post.idata.sample_stats, post.diagnostics
    return {
        "likelihood": likelihood,
        "route": route,
        "cpu": {k: round(v, 2) for k, v in cpu.items()},
        "steps_per_draw": round(float(np.mean(stats["n_steps"])), 2),
        "step_size": round(float(np.mean(stats["step_size"])), 3),
        "r_hat_max": round(d.r_hat_max, 4),
        "ess_bulk_min": round(d.ess_bulk_min),
        "divergences": int(d.divergences),
        "variables": sorted(post.idata.posterior.data_vars),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--likelihoods", nargs="+", choices=LIKELIHOODS, default=LIKELIHOODS)
    parser.add_argument("--routes", nargs="+", choices=ROUTES, default=ROUTES)
    parser.add_argument("--cold", help="an empty directory for PyTensor's and numba's caches")
    parser.add_argument("--one", nargs=2, metavar=("LIKELIHOOD", "ROUTE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(*args.one)))
        return
    env = dict(os.environ)
    if args.cold:
        env["PYTENSOR_FLAGS"] = f"base_compiledir={args.cold}/pytensor"
        env["NUMBA_CACHE_DIR"] = f"{args.cold}/numba"
    print("likelihood          route     CPU s: fit  compile  sample  load   steps/draw  ESS")
    for likelihood in args.likelihoods:
        for route in args.routes:
            out = subprocess.run(
                [sys.executable, __file__, "--one", likelihood, route],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(out.stdout.strip().splitlines()[-1])
            c = r["cpu"]
            print(
                f"{likelihood:19s} {route:9s} {c['fit']:10.1f} {c.get('compile', 0):8.1f} "
                f"{c.get('sample', 0):7.1f} {c.get('load', 0):5.2f} {r['steps_per_draw']:12.1f} "
                f"{r['ess_bulk_min']:5d}"
            )
            print(json.dumps(r), file=sys.stderr)


if __name__ == "__main__":
    main()
