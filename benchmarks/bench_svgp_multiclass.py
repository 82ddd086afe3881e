"""Benchmark: the multi-class SVGP (C latent SVGPs sharing Z) on Iris against softmax
Laplace and MCMC, and at scale on letter (n = 20,000, C = 26) and satimage.

What it measures
----------------
``iris`` -- Iris (150 cases, 4 inputs standardised per fold, 3 classes), 5-fold stratified
cross-validation (seeded): the held-out mean log predictive probability and error rate of

* ``laplace``         -- softmax Laplace (R&W Alg. 3.3) at its own optimum (SE kernel, ell and
  sigma_f^2 fitted, no restarts);
* ``mcmc``            -- softmax MCMC (NUTS on the 3 n latent values) at Laplace's
  hyperparameters, the reference;
* ``svgp_at_laplace`` -- SVGP softmax (Z = every training input, E_q[log p] by quadrature)
  at Laplace's hyperparameters: the same model as MCMC, a different approximation;
* ``svgp``            -- SVGP softmax at its own optimum (the bound maximised);
* ``svgp_m16``        -- the same with M = 16 inducing inputs (k-means++);
* ``svgp_robustmax``  -- SVGP with the robust-max likelihood at its own optimum (Z = X);

and the largest class-probability difference from MCMC at the test inputs.

``letter`` / ``satimage`` -- the KEEL sets (``gc.datasets.load``), a seeded 80/20 split, inputs
standardised on the training part: the hyperparameters (SE, isotropic) fitted by the SVGP
bound on a seeded subsample (``--fit-n`` cases, M = 64), then one SVGP fit on every training
case at those values with M inducing inputs (``--m``), softmax E_q[log p] by Monte Carlo
(64 antithetic draws a case, the bound's standard error reported) and K_uf formed
``--batch-size`` cases at a time (the minibatched, O(M^2 + batch M) memory path): times of
each part, the bound and its standard error, held-out accuracy and mean log predictive.

Outputs: a table on stdout, ``<output>/svgp_multiclass.csv`` (tidy: part, what, value) and
``<output>/svgp_multiclass.md``.

How to run, from the repository root::

    python benchmarks/bench_svgp_multiclass.py                 # iris, satimage and letter
    python benchmarks/bench_svgp_multiclass.py --parts iris
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_facts, markdown_tail  # noqa: E402

import gpc_compare as gc  # noqa: E402
from gpc_compare.engines._inducing import choose_inducing  # noqa: E402

SEED = 31
MCMC = {"draws": 1000, "tune": 1000, "chains": 2, "random_seed": SEED}


def _log(message: str) -> None:
    print(message, flush=True)


def _scores(post, Xte: np.ndarray, yte: np.ndarray) -> tuple[float, float, np.ndarray]:
    """Held-out mean log predictive, error rate and the class probabilities (m, C)."""
    P = post.predict_proba(Xte)
    lp = post.log_predictive(Xte, post.classes_[yte])
    return float(np.mean(lp)), float(np.mean(P.argmax(axis=1) != yte)), P


def iris(rows: list[dict], args) -> list[str]:
    """5-fold CV on Iris: Laplace, MCMC and four SVGP variants (module note; ``--folds`` and
    ``--iris-engines`` choose a subset)."""
    data = gc.datasets.load("iris")
    folds = StratifiedKFold(5, shuffle=True, random_state=SEED).split(data.X, data.y)
    results: dict[str, list] = {}
    for fold, (tr, te) in enumerate(folds):
        if args.folds is not None and fold not in args.folds:
            continue
        Xtr, Xte = gc.datasets.standardize(data.X[tr], data.X[te])
        ytr, yte = data.y[tr], data.y[te]
        k0 = gc.kernels.SquaredExponential(1.0, 1.0)
        fits = {}
        t0 = time.perf_counter()
        lap = gc.fit(Xtr, ytr, "laplace", k0, "softmax", optimize=True, n_restarts=0)
        fits["laplace"] = (lap, time.perf_counter() - t0)
        opt = {"optimize": True, "n_restarts": 0}
        runs = {  # method, kernel, likelihood, options
            "mcmc": ("mcmc", lap.kernel, "softmax", MCMC),
            "svgp_at_laplace": ("svgp", lap.kernel, "softmax", {"inducing": Xtr}),
            "svgp": ("svgp", k0, "softmax", {**opt, "inducing": Xtr}),
            "svgp_m16": ("svgp", k0, "softmax", {**opt, "inducing": 16, "random_seed": SEED}),
            "svgp_robustmax": ("svgp", k0, "robustmax", {**opt, "inducing": Xtr}),
        }
        for name, (method, kernel, likelihood, options) in runs.items():
            if args.iris_engines is not None and name not in args.iris_engines + ["mcmc"]:
                continue
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                post = gc.fit(Xtr, ytr, method, kernel, likelihood, **options)
            fits[name] = (post, time.perf_counter() - t0)
        P_ref = _scores(fits["mcmc"][0], Xte, yte)[2]
        for name, (post, seconds) in fits.items():
            mlp, err, P = _scores(post, Xte, yte)
            diff = float(np.abs(P - P_ref).max())
            results.setdefault(name, []).append((mlp, err, diff, seconds, post.hyperparameters))
            _log(f"iris fold {fold} {name:16s} mlp {mlp:.4f} err {err:.3f} "
                 f"max|p - p_mcmc| {diff:.3f} ({seconds:.1f} s) at {post.kernel}")  # fmt: skip
    lines = [
        "## Iris, 5-fold CV (held-out scores averaged over the folds)",
        "",
        "| engine | mean log predictive | error rate | max abs p - p_MCMC | seconds per fit |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, res in results.items():
        mlp, err, diff, sec = (float(np.mean([r[k] for r in res])) for k in range(4))
        lines.append(f"| {name} | {mlp:.4f} | {err:.3f} | {diff:.3f} | {sec:.1f} |")
        for what, value in (("mlp", mlp), ("error_rate", err), ("max_diff_mcmc", diff),
                            ("seconds", sec)):  # fmt: skip
            rows.append({"part": "iris", "what": f"{name}_{what}", "value": value})
    return lines


def large(name: str, rows: list[dict], args) -> list[str]:
    """Hyperparameters on a subsample, then one minibatched fit on every training case."""
    data = gc.datasets.load(name)
    rng = np.random.default_rng(SEED)
    perm = rng.permutation(data.X.shape[0])
    n_train = int(0.8 * perm.size)
    tr, te = perm[:n_train], perm[n_train:]
    Xtr, Xte = gc.datasets.standardize(data.X[tr], data.X[te])
    ytr, yte = data.y[tr], data.y[te]
    C = int(data.y.max()) + 1
    sub = rng.choice(n_train, size=min(args.fit_n, n_train), replace=False)
    d = Xtr.shape[1]
    t0 = time.perf_counter()
    if args.kernel:  # given (ell, sigma_f^2): no fit
        kernel = gc.kernels.SquaredExponential(*args.kernel)
    else:
        k0 = gc.kernels.SquaredExponential(float(np.sqrt(d)), 1.0)
        kernel = gc.fit(Xtr[sub], ytr[sub], "svgp", k0, "softmax", optimize=True,
                        n_restarts=0, inducing=64, random_seed=SEED).kernel  # fmt: skip
    t_hyper = time.perf_counter() - t0
    _log(f"{name}: hyperparameters ({sub.size} cases) in {t_hyper:.1f} s: {kernel}")
    t0 = time.perf_counter()
    Z = choose_inducing(Xtr, args.m, SEED)
    t_z = time.perf_counter() - t0
    t0 = time.perf_counter()
    post = gc.fit(Xtr, ytr, "svgp", kernel, "softmax", inducing=Z, random_seed=SEED,
                  batch_size=args.batch_size, tol=args.tol, site_tol=args.site_tol)  # fmt: skip
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    mlp, err, _ = _scores(post, Xte, yte)
    t_pred = time.perf_counter() - t0
    _log(f"{name}: fit n = {n_train}, C = {C}, M = {args.m} in {t_fit:.1f} s "
         f"({post.convergence.message}); bound {post.log_marginal_likelihood:.1f} "
         f"+- {post.log_marginal_likelihood_se:.2f}; held-out accuracy {1 - err:.4f}, "
         f"mean log predictive {mlp:.4f} ({t_pred:.1f} s for {te.size} predictions)")  # fmt: skip
    values = {
        "n_train": n_train, "n_test": te.size, "classes": C, "M": args.m,
        "hyper_seconds": t_hyper, "kmeanspp_seconds": t_z, "fit_seconds": t_fit,
        "iterations": post.convergence.iterations, "predict_seconds": t_pred,
        "bound": post.log_marginal_likelihood, "bound_se": post.log_marginal_likelihood_se,
        "accuracy": 1 - err, "mlp": mlp,
    }  # fmt: skip
    rows.extend({"part": name, "what": k, "value": float(v)} for k, v in values.items())
    return [
        f"## {name}: n = {n_train} training, {te.size} test cases, C = {C}, M = {args.m}",
        "",
        f"- kernel {kernel}: "
        + ("given (--kernel)" if args.kernel else f"fitted on {sub.size} cases (M = 64)")
        + f", {t_hyper:.1f} s; tol {args.tol:g}, site_tol {args.site_tol:g}",
        f"- k-means++ for Z: {t_z:.1f} s; the fit (batch_size {args.batch_size}): "
        f"{t_fit:.1f} s, {post.convergence.iterations} iterations, converged "
        f"{post.convergence.converged}",
        f"- bound {post.log_marginal_likelihood:.2f} (Monte Carlo standard error "
        f"{post.log_marginal_likelihood_se:.3f})",
        f"- held-out accuracy {1 - err:.4f}, mean log predictive {mlp:.4f} "
        f"({t_pred:.1f} s for the predictions)",
        "",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=["iris", "satimage", "letter"])
    parser.add_argument("--m", type=int, default=200, help="inducing inputs at scale")
    parser.add_argument("--fit-n", type=int, default=2000, help="cases for the hyperparameters")
    parser.add_argument("--batch-size", type=int, default=2000)
    parser.add_argument("--kernel", type=float, nargs=2, metavar=("ELL", "SF2"),
                        help="fixed SE length-scale and variance at scale (no fit)")  # fmt: skip
    parser.add_argument("--tol", type=float, default=1e-10, help="the fit's tol at scale")
    parser.add_argument("--site-tol", type=float, default=1e-6)
    parser.add_argument("--iris-engines", nargs="+", default=None, help="a subset")
    parser.add_argument("--folds", type=int, nargs="+", default=None, help="a subset")
    parser.add_argument("--output", default="results/benchmarks")
    parser.add_argument(
        "--blas-threads",
        type=int,
        default=1,
        help="BLAS threads (1: on a shared, loaded machine two threads ran 10x slower)",
    )
    args = parser.parse_args(argv)
    threadpool_limits(args.blas_threads)
    rows: list[dict] = []
    lines = ["# The multi-class SVGP", ""]
    for part in args.parts:
        lines += iris(rows, args) if part == "iris" else large(part, rows, args)
        lines.append("")
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "svgp_multiclass.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["part", "what", "value"])
        writer.writerows([r["part"], r["what"], repr(float(r["value"]))] for r in rows)
    command = "python benchmarks/bench_svgp_multiclass.py " + " ".join(argv or sys.argv[1:])
    settings = {"seed": str(SEED), "MCMC": str(MCMC), "BLAS threads": str(args.blas_threads)}
    sections = {"Machine": machine_facts(), "Settings": settings}
    text = "\n".join(lines + markdown_tail(sections, command.strip()))
    (out / "svgp_multiclass.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
