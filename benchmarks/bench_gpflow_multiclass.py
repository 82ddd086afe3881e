"""Benchmark: the multi-class SVGP checked against GPflow's ``SVGP`` and timed beside it.

What it needs
-------------
A Python interpreter with GPflow 2.11 and TensorFlow (``--gpflow-python PATH``), in its own
virtual environment: GPflow 2.11 needs numpy < 2 and gpc_compare's environment has numpy 2,
so GPflow cannot be imported here. Made once, outside the repository, with::

    python -m venv /work/venvs/gpflow
    /work/venvs/gpflow/bin/pip install "gpflow==2.11.*" tensorflow-cpu "numpy<2" scipy pandas

The two sides run in separate processes and exchange npz files in a temporary directory
(``/tmp/gpflow-compare-*``): this script (gpc_compare's environment) writes the data, Z,
the kernel and q; ``gpflow_multiclass_companion.py`` (numpy, tensorflow and gpflow only)
runs under ``--gpflow-python`` and writes GPflow's numbers back. Without that interpreter
the script stops with exit code 2 and says so.

What it measures
----------------
``check`` -- the value check, on Iris (150 cases: 120 training, 30 test, seeded) and a
seeded subsample of letter (500 training, 200 test cases, C = 26), inputs standardised on
the training part, each with M inducing inputs by k-means++, for the robust-max and the
softmax likelihoods: our fit's q (whitened means q_mu = E[v_c], (M, C), and q_sqrt =
chol(S_c), (C, M, M)) handed to GPflow with the same kernel (our SE, sigma_f^2
exp(-r^2 / (2 ell^2)), is GPflow's ``SquaredExponential(variance, lengthscales)``), the
same Z and the same jitter (ours is relative: 1e-6 mean(diag K_uu), passed to GPflow as
its absolute ``default_jitter``); GPflow's ELBO, KL, q(f_i)'s marginals, expected log
likelihood and ``predict_y`` against ours. GPflow's ``RobustMax`` is the same likelihood
(epsilon 1e-3 on both sides) but its ``prob_is_largest`` uses 20 Gauss-Hermite nodes and
shrinks every Phi into [1e-6, 1 - 1e-6]; a numpy copy of that formula
(:func:`gpflow_prob_largest`) at GPflow's marginals shows the remaining difference is that.
GPflow's ``Softmax`` is Monte Carlo: its expectations are averaged over replicated calls,
with their standard errors.

``timing`` -- letter as in bench_svgp_multiclass.py's letter row (the seeded 80/20 split,
16,000 training and 4,000 test cases, SE ell = 5, sigma_f^2 = 10 given, M = 128 by
k-means++ on the 16,000, the same Z for both), fitted on a seeded subsample of
``--timing-n`` training cases (0: all), robust-max and softmax: our site iteration at its
default tolerances against GPflow's natural gradients on q (full batch, gamma warmed up
to ``--gamma``, at most ``--budget`` seconds), each in its own process, one after the
other, one thread each; the ELBO reached (each q also scored by the other side's bound),
held-out accuracy and mean log predictive, seconds.

Outputs: ``<output>/svgp_multiclass_gpflow.csv`` (tidy: part, what, value) and, rendered
from it (``gpflow_section.render``), the section "Against GPflow" at the end of
``<output>/svgp_multiclass.md`` (replaced if there).

How to run, from the repository root::

    python benchmarks/bench_gpflow_multiclass.py --gpflow-python /work/venvs/gpflow/bin/python
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.special import ndtr
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_facts  # noqa: E402
from gpflow_section import write_section  # noqa: E402

import gpc_compare as gc  # noqa: E402
from gpc_compare.engines import svgp_multiclass  # noqa: E402
from gpc_compare.engines._inducing import choose_inducing  # noqa: E402
from gpc_compare.posterior import FITCPrior  # noqa: E402

SEED = 31
COMPANION = Path(__file__).resolve().parent / "gpflow_multiclass_companion.py"
EPSILON = 1e-3  # the robust-max's label-noise rate, GPflow's default and ours
JITTER = 1e-6  # ours, relative to mean(diag K_uu)
PROBLEMS = {  # name: (kernel (ell, sigma_f^2), M)
    "iris": ((1.5, 4.0), 20),
    "letter500": ((5.0, 10.0), 64),
}


def _log(message: str) -> None:
    print(message, flush=True)


class Companion:
    """The GPflow side: ``gpflow_multiclass_companion.py`` under another interpreter."""

    def __init__(self, python: str, work: Path) -> None:
        self.python, self.work, self.calls = python, work, 0

    def __call__(self, mode: str, inputs: dict) -> dict:
        self.calls += 1
        src = self.work / f"in{self.calls}_{mode}.npz"
        dst = self.work / f"out{self.calls}_{mode}.npz"
        np.savez(src, **{k: np.asarray(v) for k, v in inputs.items()})
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
        env.pop("PYTHONPATH", None)
        run = subprocess.run(
            [self.python, str(COMPANION), mode, str(src), str(dst)], env=env, check=False
        )
        if run.returncode != 0:
            raise RuntimeError(f"the GPflow companion ({mode}) failed: exit {run.returncode}")
        return dict(np.load(dst))


def gpflow_python_or_exit(path: str | None) -> str:
    """The GPflow interpreter, checked by importing gpflow; exit 2 with a message if not."""
    need = (
        "this benchmark needs a Python with GPflow 2.11 and TensorFlow, passed as "
        "--gpflow-python PATH (e.g. /work/venvs/gpflow/bin/python, made as the module "
        "docstring says)"
    )
    if not path or not Path(path).is_file():
        print(f"error: {need}; {path!r} is not a file", file=sys.stderr)
        sys.exit(2)
    probe = subprocess.run(
        [path, "-c", "import gpflow, tensorflow"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        tail = probe.stderr.strip().splitlines()[-1:] or ["(no message)"]
        print(f"error: {need}; {path} cannot import gpflow: {tail[0]}", file=sys.stderr)
        sys.exit(2)
    return path


def problem(name: str) -> dict:
    """The value check's data: standardised inputs, labels 0..C-1, Z by k-means++."""
    (ell, sf2), M = PROBLEMS[name]
    rng = np.random.default_rng(SEED)
    data = gc.datasets.load("iris" if name == "iris" else "letter")
    perm = rng.permutation(data.X.shape[0])
    n_tr, n_te = (120, 30) if name == "iris" else (500, 200)
    tr, te = perm[:n_tr], perm[n_tr : n_tr + n_te]
    Xtr, Xte = gc.datasets.standardize(data.X[tr], data.X[te])
    C = int(data.y.max()) + 1
    Z = choose_inducing(Xtr, M, SEED)
    return {"X": Xtr, "y": data.y[tr], "Xte": Xte, "yte": data.y[te], "C": C, "Z": Z,
            "lengthscale": ell, "variance": sf2}  # fmt: skip


def q_for_gpflow(post) -> tuple[np.ndarray, np.ndarray]:
    """Our q in GPflow's whitened parameters: q_mu (M, C) and q_sqrt (C, M, M), lower."""
    return post.q_mean, np.linalg.cholesky(post.q_cov)


def bound_at(prob: dict, likelihood, q_mu: np.ndarray, q_sqrt: np.ndarray, **how) -> tuple:
    """Our bound at any whitened q (not only our optimum): sum_i E_q(f_i)[log p(y_i | f_i)]
    with mu_ic = a_i^T m_c, var_ic = k_ii - |a_i|^2 + |L_c^T a_i|^2, minus
    sum_c KL(N(m_c, L_c L_c^T) || N(0, I)) (R&W eq. A.23). Returns (bound, E, KL, se)."""
    kernel = gc.kernels.SquaredExponential(prob["lengthscale"], prob["variance"])
    prior = FITCPrior(kernel, prob["X"], prob["Z"], JITTER, batch_size=2000)
    n, C = prob["X"].shape[0], q_mu.shape[1]
    mu, var = np.empty((n, C)), np.empty((n, C))
    for i, V in prior.blocks():
        mu[i] = V.T @ q_mu
        for c in range(C):
            var[i, c] = prior.Lam[i] + np.sum((q_sqrt[c].T @ V) ** 2, axis=0)
    ex = likelihood.expected_log_prob_diag(prob["y"], mu, var, **how)
    M = q_mu.shape[0]
    log_det = 2.0 * sum(float(np.log(np.abs(np.diag(L))).sum()) for L in q_sqrt)
    kl = 0.5 * (float(np.sum(q_sqrt**2)) + float(np.sum(q_mu**2)) - C * M - log_det)
    e = float(ex.value.sum())
    se = None if ex.variance is None else float(np.sqrt(ex.variance.sum()))
    return e - kl, e, kl, se


def gpflow_prob_largest(y, mean, var, gh_points: int = 20, clip: bool = True) -> np.ndarray:
    """GPflow's ``RobustMax.prob_is_largest`` in numpy: Gauss-Hermite over f_y of
    prod_{k != y} Phi((f_y - mean_k) / sd_k), each Phi shrunk into [1e-6, 1 - 1e-6] if
    ``clip`` (as GPflow 2.11's ``RobustMax._squash`` does)."""
    x, w = np.polynomial.hermite.hermgauss(gh_points)
    rows = np.arange(y.size)
    f = mean[rows, y][:, None] + x * np.sqrt(np.clip(2.0 * var[rows, y], 1e-10, None))[:, None]
    t = (f[:, None, :] - mean[:, :, None]) / np.sqrt(np.clip(var, 1e-10, None))[:, :, None]
    cdf = ndtr(t)
    if clip:
        cdf = cdf * (1 - 2e-6) + 1e-6
    cdf[rows, y, :] = 1.0
    return np.prod(cdf, axis=1) @ (w / np.sqrt(np.pi))


def check_rows(name: str, likelihood: str, companion: Companion, args) -> list[tuple]:
    """One value check: our fit's q scored by GPflow (module note)."""
    prob = problem(name)
    kernel = gc.kernels.SquaredExponential(prob["lengthscale"], prob["variance"])
    lik = gc.likelihoods.RobustMax(epsilon=EPSILON) if likelihood == "robustmax" else likelihood
    post = gc.fit(prob["X"], prob["y"], "svgp", kernel, lik, inducing=prob["Z"],
                  random_seed=SEED)  # fmt: skip
    lik = post.likelihood
    q_mu, q_sqrt = q_for_gpflow(post)
    inputs = {**prob, "q_mu": q_mu, "q_sqrt": q_sqrt, "likelihood": likelihood,
              "epsilon": EPSILON, "jitter": JITTER * prob["variance"], "gh_points": 20,
              "mc_points": args.mc_points, "replicates": args.replicates, "seed": SEED}  # fmt: skip
    g = companion("check", inputs)
    mu, var = post.latent_mean, post.latent_var
    # E_q[log p] with the fit's own draws (softmax, C = 26: Monte Carlo seeded as the fit)
    how = {"random_seed": svgp_multiclass._mc_seed(SEED)}
    e_ours = lik.expected_log_prob_diag(prob["y"], mu, var, **how).value
    own = bound_at(prob, lik, q_mu, q_sqrt, **how)  # our bound recomputed from q alone
    kl_ours = own[2]  # (closed form in q: R&W eq. A.23)
    mc = likelihood == "softmax" and prob["C"] > 3  # (else exact: robust-max, quadrature)
    how = {"integration": "mc", "n_samples": args.predict_samples} if mc else {}
    P = post.predict_proba(prob["Xte"], **how)
    out = {
        "n": prob["X"].shape[0], "n_test": prob["Xte"].shape[0], "C": prob["C"],
        "M": prob["Z"].shape[0], "elbo_ours": post.log_marginal_likelihood,
        "elbo_ours_recomputed": own[0], "elbo_gpflow": float(g["elbo"]),
        "elbo_gpflow_se": float(g["elbo_se"]), "kl_ours": kl_ours, "kl_gpflow": float(g["kl"]),
        "ell_ours": float(e_ours.sum()), "ell_gpflow": float(g["var_exp"].sum()),
        "f_mean_max_abs_diff": float(np.abs(g["f_mean"] - mu).max()),
        "f_var_max_rel_diff": float(np.abs(g["f_var"] / var - 1).max()),
        "proba_max_abs_diff": float(np.abs(g["proba"] - P).max()),
    }  # fmt: skip
    if likelihood == "robustmax":
        out |= robustmax_extras(prob, lik, g, P)
    else:
        out |= softmax_extras(prob, lik, post, g, args)
    out["elbo_diff"] = out["elbo_gpflow"] - out["elbo_ours"]
    out["kl_diff"] = out["kl_gpflow"] - out["kl_ours"]
    out["ell_diff"] = out["ell_gpflow"] - out["ell_ours"]
    part = f"check_{name}_{likelihood}"
    _log(f"{part}: " + ", ".join(f"{k} {v:.6g}" for k, v in out.items()))
    return [(part, k, v) for k, v in out.items()]


def gpflow_predict(mean: np.ndarray, var: np.ndarray, gh_points: int = 20, clip: bool = True):
    """GPflow's ``MultiClass`` robust-max ``predict_y`` in numpy: eps / (C - 1) +
    (1 - eps - eps / (C - 1)) P_c for every class c, P_c by :func:`gpflow_prob_largest`."""
    m, C = mean.shape
    P = np.column_stack(
        [gpflow_prob_largest(np.full(m, c), mean, var, gh_points, clip) for c in range(C)]
    )
    return P * (1 - EPSILON) + (1 - P) * EPSILON / (C - 1)


def robustmax_extras(prob: dict, lik, g: dict, P_ours: np.ndarray) -> dict:
    """GPflow's expectation and predictive probabilities reproduced in numpy at GPflow's
    marginals (clipped and not, 20 and 200 nodes), and ours there: what the differences
    consist of."""
    y, C = prob["y"], prob["C"]
    off, on = np.log(EPSILON / (C - 1)), np.log1p(-EPSILON)
    mean, var = g["fte_mean"], g["fte_var"]
    copy20 = gpflow_predict(mean, var)
    plain20, plain200 = (gpflow_predict(mean, var, k, clip=False) for k in (20, 200))
    predictive = {
        "proba_copy_vs_gpflow": float(np.abs(copy20 - g["proba"]).max()),
        "proba_copy_squash_effect": float(np.abs(copy20 - plain20).max()),
        "proba_copy_gh20_vs_gh200": float(np.abs(plain20 - plain200).max()),
        "proba_copy_gh200_vs_ours": float(np.abs(plain200 - P_ours).max()),
    }

    def expect(P: np.ndarray) -> float:
        return float(np.sum(P * on + (1 - P) * off))

    ours_there = lik.expected_log_prob_diag(y, g["f_mean"], g["f_var"]).value.sum()
    return {
        "epsilon_gpflow": float(g["epsilon_gpflow"]),
        "eps_k1_gpflow": float(g["eps_k1_gpflow"]),
        "ell_numpy_gpflow_formula": expect(gpflow_prob_largest(y, g["f_mean"], g["f_var"])),
        "ell_numpy_unclipped_gh20": expect(
            gpflow_prob_largest(y, g["f_mean"], g["f_var"], clip=False)
        ),
        "ell_numpy_unclipped_gh200": expect(
            gpflow_prob_largest(y, g["f_mean"], g["f_var"], 200, clip=False)
        ),
        "ell_ours_at_gpflow_marginals": float(ours_there),
        **predictive,
    }


def softmax_extras(prob: dict, lik, post, g: dict, args) -> dict:
    """Our expectation by a large Monte Carlo estimate too, and the standard errors."""
    big = lik.expected_log_prob_diag(prob["y"], post.latent_mean, post.latent_var,
                                     integration="mc", n_samples=args.ours_samples,
                                     random_seed=SEED + 1)  # fmt: skip
    return {
        "ell_gpflow_se": float(np.sqrt(np.sum(g["var_exp_se"] ** 2))),
        "ell_ours_se": post.log_marginal_likelihood_se or 0.0,
        "ell_ours_large_mc": float(big.value.sum()),
        "ell_ours_large_mc_se": float(np.sqrt(big.variance.sum())),
        "proba_gpflow_se_max": float(g["proba_se"].max()),
    }


def letter_full() -> dict:
    """bench_svgp_multiclass.py's letter split: seeded 80/20, standardised, M = 128."""
    data = gc.datasets.load("letter")
    rng = np.random.default_rng(SEED)
    perm = rng.permutation(data.X.shape[0])
    n_train = int(0.8 * perm.size)
    tr, te = perm[:n_train], perm[n_train:]
    Xtr, Xte = gc.datasets.standardize(data.X[tr], data.X[te])
    return {"X": Xtr, "y": data.y[tr], "Xte": Xte, "yte": data.y[te],
            "C": int(data.y.max()) + 1, "Z": choose_inducing(Xtr, 128, SEED),
            "lengthscale": 5.0, "variance": 10.0}  # fmt: skip


def _scores(P: np.ndarray, yte: np.ndarray) -> tuple[float, float]:
    """Held-out accuracy and mean log predictive probability."""
    lp = np.log(P[np.arange(yte.size), yte])
    return float(np.mean(P.argmax(axis=1) == yte)), float(np.mean(lp))


def _within(seconds: np.ndarray, elbos: np.ndarray, final: float, gap: float) -> float:
    """The first time the running best ELBO is within ``gap`` nats of ``final``."""
    best = np.maximum.accumulate(elbos)
    return float(seconds[np.argmax(best >= final - gap)])


def _likelihood(name: str):
    return gc.likelihoods.RobustMax(epsilon=EPSILON) if name == "robustmax" else name


def ours_timed(prob: dict, likelihood: str) -> tuple[dict, object]:
    """Our fit at default tolerances, every bound evaluation timed."""
    trace: list[tuple[float, float]] = []
    original = svgp_multiclass._state

    def traced(*a, **kw):
        state = original(*a, **kw)
        trace.append((time.perf_counter(), state.elbo))
        return state

    kernel = gc.kernels.SquaredExponential(prob["lengthscale"], prob["variance"])
    svgp_multiclass._state = traced
    try:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            post = gc.fit(prob["X"], prob["y"], "svgp", kernel, _likelihood(likelihood),
                          inducing=prob["Z"], random_seed=SEED)  # fmt: skip
        t_fit = time.perf_counter() - t0
    finally:
        svgp_multiclass._state = original
    seconds = np.array([0.0] + [t - t0 for t, _ in trace])
    elbos = np.array([-np.inf] + [e for _, e in trace])
    t0 = time.perf_counter()
    P = post.predict_proba(prob["Xte"])
    t_pred = time.perf_counter() - t0
    acc, mlp = _scores(P, prob["yte"])
    final = post.log_marginal_likelihood
    out = {"fit_seconds": t_fit, "elbo": final, "converged": float(post.convergence.converged),
           "iterations": post.convergence.iterations, "evaluations": len(trace),
           "seconds_within_1": _within(seconds, elbos, final, 1.0),
           "seconds_within_10": _within(seconds, elbos, final, 10.0),
           "accuracy": acc, "mlp": mlp, "predict_seconds": t_pred}  # fmt: skip
    return out, post


def timing_rows(companion: Companion, likelihood: str, args) -> list[tuple]:
    """Letter (or ``--timing-n`` of its training cases): ours, then GPflow's natural
    gradients, each final q scored by our bound (for the softmax by ``--score-samples``
    antithetic draws a case, a common yardstick) and by GPflow's."""
    prob = letter_full()
    if args.timing_n:
        keep = np.random.default_rng(SEED).choice(prob["y"].size, args.timing_n, replace=False)
        prob["X"], prob["y"] = prob["X"][keep], prob["y"][keep]
    lik = _likelihood(likelihood)
    ours, post = ours_timed(prob, likelihood)
    lik = post.likelihood
    _log(f"timing {likelihood} ours: {ours}")
    settings = {"likelihood": likelihood, "epsilon": EPSILON, "gh_points": 20,
                "jitter": JITTER * prob["variance"], "mc_points": 100,
                "predict_points": args.predict_points, "gamma": args.gamma,
                "warmup": args.warmup, "window": args.window, "rtol": args.rtol,
                "budget": args.budget, "max_iter": args.max_iter, "seed": SEED}  # fmt: skip
    g = companion("fit", {**prob, **settings})
    g_acc, g_mlp = _scores(g["proba"], prob["yte"])
    seconds, elbos = g["seconds"], g["elbos"]
    final = float(elbos[-1])
    if likelihood == "softmax":  # Monte Carlo ELBOs: their moving mean over the window
        w = args.window
        elbos = np.concatenate([elbos[:w], np.convolve(elbos, np.ones(w) / w, "valid")[1:]])
        final = float(elbos[-1])
    gpflow = {"fit_seconds": float(g["fit_seconds"]), "elbo": final,
              "converged": float(g["converged"]), "iterations": elbos.size - 1,
              "failures": float(g["failures"]), "gamma_final": float(g["gamma_final"]),
              "seconds_within_1": _within(seconds, elbos, final, 1.0),
              "seconds_within_10": _within(seconds, elbos, final, 10.0),
              "accuracy": g_acc, "mlp": g_mlp,
              "predict_seconds": float(g["predict_seconds"])}  # fmt: skip
    how = {}
    if likelihood == "softmax":
        how = {"integration": "mc", "n_samples": args.score_samples, "random_seed": SEED + 2}
    q_mu, q_sqrt = q_for_gpflow(post)
    ours["elbo_by_ours"] = bound_at(prob, lik, q_mu, q_sqrt, **how)[0]
    gpflow["elbo_by_ours"] = bound_at(prob, lik, g["q_mu"], g["q_sqrt"], **how)[0]
    check = companion("check", {**prob, **settings, "q_mu": q_mu, "q_sqrt": q_sqrt,
                                "mc_points": 200, "replicates": 4})  # fmt: skip
    ours["elbo_by_gpflow"] = float(check["elbo"])
    gpflow["elbo_by_gpflow"] = final
    _log(f"timing {likelihood} gpflow: {gpflow}")
    shared = {"n": prob["y"].size, "n_test": prob["yte"].size, "C": prob["C"],
              "M": prob["Z"].shape[0], "lengthscale": prob["lengthscale"],
              "variance": prob["variance"], "gamma": args.gamma, "warmup": args.warmup,
              "window": args.window, "rtol": args.rtol, "budget": args.budget,
              "score_samples": args.score_samples}  # fmt: skip
    rows = [(f"timing_{likelihood}_settings", k, v) for k, v in shared.items()]
    rows += [(f"timing_{likelihood}_ours", k, v) for k, v in ours.items()]
    return rows + [(f"timing_{likelihood}_gpflow", k, v) for k, v in gpflow.items()]


def versions_rows(companion: Companion) -> list[tuple]:
    """Both environments' versions (strings, in the CSV's value column)."""
    theirs = companion("versions", {"_": 0})
    ours = machine_facts()
    rows = [("versions_gpflow_env", k, str(v)) for k, v in theirs.items()]
    keep = ("python", "numpy", "scipy", "gpc_compare", "BLAS/OpenMP threads", "platform",
            "date (UTC)")  # fmt: skip
    return rows + [("versions_ours_env", k, ours[k]) for k in keep]


def write(rows: list[tuple], out: Path, command: str) -> None:
    """The CSV, then the section rendered from it at the end of svgp_multiclass.md. Rows
    of parts this run did not compute are kept from the CSV there, with their commands."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "svgp_multiclass_gpflow.csv"
    kept: list[tuple] = []
    if path.exists():
        done = {part for part, _, _ in rows}
        with path.open(newline="") as fh:
            old = [(r["part"], r["what"], r["value"]) for r in csv.DictReader(fh)]
        kept = [r for r in old if r[0] not in done and r[0] != "command"]
        commands = [r[2] for r in old if r[0] == "command" and r[2] != command]
        if len(kept) > 0:
            rows = kept + rows
            command = " && ".join([*commands, command])
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["part", "what", "value"])
        for part, what, value in rows + [("command", "command", command)]:
            writer.writerow([part, what, value if isinstance(value, str) else repr(float(value))])
    write_section(path, out / "svgp_multiclass.md")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpflow-python", default=None, help="a Python with GPflow 2.11")
    parser.add_argument("--parts", nargs="+", default=["check", "timing"])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS), help="value checks")
    parser.add_argument("--likelihoods", nargs="+", default=["robustmax", "softmax"])
    parser.add_argument("--mc-points", type=int, default=2000, help="GPflow softmax draws")
    parser.add_argument("--replicates", type=int, default=20, help="GPflow softmax repeats")
    parser.add_argument("--ours-samples", type=int, default=4096, help="our large MC")
    parser.add_argument("--predict-samples", type=int, default=40000)
    parser.add_argument("--gamma", type=float, default=0.1, help="GPflow's natgrad step")
    parser.add_argument("--warmup", type=int, default=10, help="steps from gamma 1e-4")
    parser.add_argument("--predict-points", type=int, default=2000, help="GPflow softmax")
    parser.add_argument("--score-samples", type=int, default=1024, help="our bound's MC")
    parser.add_argument("--timing-likelihoods", nargs="+", default=["robustmax", "softmax"])
    parser.add_argument("--window", type=int, default=10)
    parser.add_argument("--rtol", type=float, default=1e-6)
    parser.add_argument("--budget", type=float, default=600.0, help="GPflow's seconds")
    parser.add_argument("--max-iter", type=int, default=5000)
    parser.add_argument("--timing-n", type=int, default=4000, help="a training subsample (0: all)")
    parser.add_argument("--output", default="results/benchmarks")
    args = parser.parse_args(argv)
    python = gpflow_python_or_exit(args.gpflow_python)
    threadpool_limits(1)
    rows: list[tuple] = []
    with tempfile.TemporaryDirectory(prefix="gpflow-compare-") as work:
        companion = Companion(python, Path(work))
        rows += versions_rows(companion)
        if "check" in args.parts:
            for name in args.problems:
                for likelihood in args.likelihoods:
                    rows += check_rows(name, likelihood, companion, args)
        if "timing" in args.parts:
            for likelihood in args.timing_likelihoods:
                rows += timing_rows(companion, likelihood, args)
    command = "python benchmarks/bench_gpflow_multiclass.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    write(rows, Path(args.output), command.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
