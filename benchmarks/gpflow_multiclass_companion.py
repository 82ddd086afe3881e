"""GPflow's side of benchmarks/bench_gpflow_multiclass.py: run with a Python that has GPflow.

This script imports only numpy, tensorflow and gpflow (and the standard library): it runs in
a separate virtual environment (GPflow 2.11 needs numpy < 2, gpc_compare's environment has
numpy 2), reads its inputs from an npz file the benchmark writes and writes its numbers to
another npz file. It is not meant to be run by hand; see bench_gpflow_multiclass.py.

Modes
-----
``check``  -- GPflow's ``SVGP`` (``num_latent_gps = C``, ``whiten=True``) at the given
kernel, inducing inputs and variational parameters (q_mu (M, C), q_sqrt (C, M, M)): the
ELBO, the KL term, the marginals of q(f_i) at the training inputs, the expected log
likelihood per case, and the predictive probabilities at the test inputs. For the softmax
(GPflow's Monte Carlo likelihood) the expectations are averaged over ``replicates`` calls of
``mc_points`` draws each, with their standard error.
``fit``    -- GPflow's usual recipe for a non-conjugate SVGP with fixed hyperparameters and Z:
natural-gradient steps on (q_mu, q_sqrt) (Salimbeni, Eleftheriadis and Hensman 2018), full
batch, from GPflow's default q (q_mu = 0, q_sqrt = I), until the mean ELBO of the last
``window`` steps differs from the mean of the ``window`` before by less than ``rtol`` |ELBO|
or ``budget`` seconds passed; the trace of (seconds, ELBO), the final q and predictions at
the test inputs.

Usage: ``python gpflow_multiclass_companion.py MODE INPUT.npz OUTPUT.npz``
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

import gpflow  # noqa: E402


def _model(inp: dict, q_mu: np.ndarray | None, q_sqrt: np.ndarray | None):
    """The SVGP at the inputs' kernel (SquaredExponential(variance, lengthscales)), Z fixed,
    the likelihood ``robustmax`` (MultiClass with RobustMax(C, epsilon)) or ``softmax``."""
    gpflow.config.set_default_float(np.float64)
    gpflow.config.set_default_jitter(float(inp["jitter"]))
    C = int(inp["C"])
    kernel = gpflow.kernels.SquaredExponential(
        variance=float(inp["variance"]), lengthscales=float(inp["lengthscale"])
    )
    if str(inp["likelihood"]) == "robustmax":
        invlink = gpflow.likelihoods.RobustMax(C, epsilon=float(inp["epsilon"]))
        likelihood = gpflow.likelihoods.MultiClass(C, invlink=invlink)
        likelihood.num_gauss_hermite_points = int(inp["gh_points"])
    else:
        likelihood = gpflow.likelihoods.Softmax(C)
        likelihood.num_monte_carlo_points = int(inp["mc_points"])
    model = gpflow.models.SVGP(
        kernel,
        likelihood,
        inducing_variable=np.array(inp["Z"]),
        num_latent_gps=C,
        q_mu=q_mu,
        q_sqrt=q_sqrt,
        whiten=True,
    )
    gpflow.set_trainable(model.kernel, False)
    gpflow.set_trainable(model.inducing_variable, False)
    if str(inp["likelihood"]) == "robustmax":
        gpflow.set_trainable(likelihood.invlink, False)
    return model


def _data(inp: dict) -> tuple[tf.Tensor, tf.Tensor]:
    X = tf.constant(np.asarray(inp["X"], dtype=np.float64))
    # Softmax's log_prob takes integer labels (sparse cross-entropy); MultiClass casts them
    dtype = np.int64 if str(inp["likelihood"]) == "softmax" else np.float64
    Y = tf.constant(np.asarray(inp["y"], dtype=dtype)[:, None])
    return X, Y


def _averaged(fn, replicates: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The mean over ``replicates`` calls of a Monte Carlo ``fn`` (seeded), and its
    standard error, element by element."""
    draws = []
    for r in range(replicates):
        tf.random.set_seed(seed + r)
        draws.append(np.asarray(fn()))
    draws = np.stack(draws)
    se = draws.std(axis=0, ddof=1) / np.sqrt(replicates) if replicates > 1 else 0 * draws[0]
    return draws.mean(axis=0), se


def check(inp: dict) -> dict:
    """ELBO, KL, marginals, expected log likelihood and predictions at the given q."""
    model = _model(inp, np.array(inp["q_mu"]), np.array(inp["q_sqrt"]))
    X, Y = _data(inp)
    Xte = tf.constant(np.asarray(inp["Xte"], dtype=np.float64))
    out: dict = {"kl": float(model.prior_kl())}
    f_mean, f_var = model.predict_f(X)
    out["f_mean"], out["f_var"] = np.asarray(f_mean), np.asarray(f_var)
    lik = model.likelihood
    reps, seed = int(inp["replicates"]), int(inp["seed"])
    if str(inp["likelihood"]) == "robustmax":
        reps = 1  # (deterministic: Gauss-Hermite quadrature)
    ve, ve_se = _averaged(lambda: lik.variational_expectations(X, f_mean, f_var, Y), reps, seed)
    out["var_exp"], out["var_exp_se"] = ve, ve_se
    sums = []
    for r in range(reps):  # the sum's standard error from the replicates' sums
        tf.random.set_seed(seed + 1000 + r)
        sums.append(float(model.elbo((X, Y))))
    out["elbo"] = float(np.mean(sums))
    out["elbo_se"] = float(np.std(sums, ddof=1) / np.sqrt(reps)) if reps > 1 else 0.0
    p, p_se = _averaged(lambda: model.predict_y(Xte)[0], reps, seed + 2000)
    out["proba"], out["proba_se"] = p, p_se
    fs_mean, fs_var = model.predict_f(Xte)
    out["fte_mean"], out["fte_var"] = np.asarray(fs_mean), np.asarray(fs_var)
    if str(inp["likelihood"]) == "robustmax":  # the invlink's probability of the largest
        eps = float(inp["epsilon"])
        out["epsilon_gpflow"] = float(lik.invlink.epsilon.numpy())
        out["eps_k1_gpflow"] = float(lik.invlink.eps_k1.numpy())
        out["epsilon_given"] = eps
    return out


def _gamma(k: int, gamma: float, warmup: int) -> float:
    """Step k's gamma: log-linear from 1e-4 up to ``gamma`` over the first ``warmup`` steps
    (Salimbeni, Eleftheriadis and Hensman 2018's schedule for non-conjugate likelihoods),
    then ``gamma``."""
    if k >= warmup:
        return gamma
    return float(np.exp(np.log(1e-4) + (np.log(gamma) - np.log(1e-4)) * k / warmup))


def fit(inp: dict) -> dict:
    """Natural gradients on q from GPflow's default q until converged or out of time: the
    gamma schedule of :func:`_gamma`; a step that makes q invalid (NaN: S_c not positive
    definite) is undone and gamma halved from there on (counted in ``failures``). The softmax's
    ELBO is GPflow's Monte Carlo estimate (``mc_points`` draws a case), so noisy."""
    model = _model(inp, None, None)
    X, Y = _data(inp)
    tf.random.set_seed(int(inp["seed"]))
    loss = model.training_loss_closure((X, Y), compile=True)
    gamma = tf.Variable(1e-4, dtype=tf.float64, trainable=False)
    natgrad = gpflow.optimizers.NaturalGradient(gamma=gamma)
    params = [(model.q_mu, model.q_sqrt)]

    @tf.function
    def step() -> tf.Tensor:
        natgrad.minimize(loss, var_list=params)
        return -loss()

    window, rtol, budget = int(inp["window"]), float(inp["rtol"]), float(inp["budget"])
    top, warmup, max_iter = float(inp["gamma"]), int(inp["warmup"]), int(inp["max_iter"])
    seconds, elbos, failures = [0.0], [float(-loss())], 0
    t0 = time.perf_counter()
    converged = False
    while len(elbos) <= max_iter and seconds[-1] <= budget:
        gamma.assign(_gamma(len(elbos) - 1, top, warmup))
        saved = model.q_mu.numpy(), model.q_sqrt.numpy()
        try:
            value = float(step())
        except tf.errors.InvalidArgumentError:
            value = np.nan
        if not np.isfinite(value):  # undo, and smaller steps from here on
            model.q_mu.assign(saved[0])
            model.q_sqrt.assign(saved[1])
            failures, top = failures + 1, min(top, float(gamma.numpy())) / 2.0
            if failures > 20:
                break
            continue
        elbos.append(value)
        seconds.append(time.perf_counter() - t0)
        print(f"gpflow step {len(elbos) - 1} (gamma {float(gamma.numpy()):.2g}): ELBO "
              f"{elbos[-1]:.4f} ({seconds[-1]:.1f} s)", flush=True)  # fmt: skip
        if len(elbos) > 2 * window:  # the last window's mean against the one before
            last, before = np.mean(elbos[-window:]), np.mean(elbos[-2 * window : -window])
            if abs(last - before) < rtol * abs(last):
                converged = True
                break
    t_fit = time.perf_counter() - t0
    Xte = tf.constant(np.asarray(inp["Xte"], dtype=np.float64))
    t0 = time.perf_counter()
    if str(inp["likelihood"]) == "softmax":  # Monte Carlo predictions: more draws, in blocks
        model.likelihood.num_monte_carlo_points = int(inp["predict_points"])
    P = np.concatenate([model.predict_y(Xte[i : i + 500])[0] for i in range(0, len(Xte), 500)])
    t_pred = time.perf_counter() - t0
    return {
        "seconds": np.array(seconds),
        "elbos": np.array(elbos),
        "fit_seconds": t_fit,
        "converged": converged,
        "failures": failures,
        "gamma_final": top,
        "q_mu": model.q_mu.numpy(),
        "q_sqrt": model.q_sqrt.numpy(),
        "proba": P,
        "predict_seconds": t_pred,
    }


def versions() -> dict:
    import platform

    import tensorflow_probability as tfp

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "tensorflow": tf.__version__,
        "tensorflow_probability": tfp.__version__,
        "gpflow": gpflow.__version__,
    }


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in ("check", "fit", "versions"):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    mode, src, dst = argv
    inp = dict(np.load(src, allow_pickle=False)) if mode != "versions" else {}
    out = {"check": check, "fit": fit, "versions": lambda _: versions()}[mode](inp)
    np.savez(dst, **{k: np.asarray(v) for k, v in out.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
