"""The ``gpc-compare`` command line.

``gpc-compare demo`` fits a Laplace GP classifier to the Wisconsin breast cancer data
(bundled with scikit-learn) and reports the fitted hyperparameters, the optimiser's
outcome and held-out scores, with a probability plot and a CSV of the scores.

Exit codes: 0 on success; 2 for a usage error (argparse's own message) or an invalid
value refused by the library (``gpc-compare: error: <message>`` on stderr); 1 when the
output cannot be written.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

PROG = "gpc-compare"
PLOT_NAME = "demo_probabilities.png"
SCORES_NAME = "scores.csv"

__all__ = ["build_parser", "main", "run_demo"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``gpc-compare`` and its subcommands.

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Approximate inference for Gaussian-process classification (Laplace and EP), compared."
        ),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    demo = sub.add_parser(
        "demo",
        help="Laplace GP classification of the Wisconsin breast cancer data",
        description=(
            "Fit a Laplace GP classifier (squared-exponential kernel, hyperparameters by "
            "type-II maximum likelihood) to a stratified 75/25 split of the Wisconsin "
            "breast cancer data bundled with scikit-learn (positive class: malignant), "
            "print the fit and held-out scores, and save a probability plot "
            f"({PLOT_NAME}) and the scores ({SCORES_NAME}) to the output directory."
        ),
    )
    demo.add_argument(
        "--likelihood",
        choices=("probit", "logistic"),
        default="probit",
        help="link function (default: %(default)s)",
    )
    demo.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the train/test split and the optimiser restarts (default: %(default)s)",
    )
    demo.add_argument(
        "--output",
        default="demo_output",
        metavar="DIR",
        help="directory for the plot and scores.csv (default: %(default)s)",
    )
    demo.add_argument(
        "--restarts",
        type=int,
        default=3,
        help="optimiser restarts from random starts, besides the given one (default: %(default)s)",
    )
    demo.set_defaults(func=_demo_command)
    return parser


def main(argv: Sequence[str | os.PathLike[str]] | None = None) -> int:
    """Run ``gpc-compare``.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        The exit code: 0 on success, 2 when the library refuses a value (the message is
        printed to stderr), 1 when the output cannot be written. Usage errors exit with
        code 2 through argparse (``SystemExit``).
    """
    parser = build_parser()
    args = parser.parse_args(None if argv is None else [os.fspath(a) for a in argv])
    try:
        return int(args.func(args))
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{PROG}: error: cannot write the output: {exc}", file=sys.stderr)
        return 1


def _demo_command(args: argparse.Namespace) -> int:
    run_demo(
        likelihood=args.likelihood,
        seed=args.seed,
        output=args.output,
        restarts=args.restarts,
    )
    return 0


def run_demo(
    likelihood: str = "probit",
    seed: int = 0,
    output: str | os.PathLike[str] = "demo_output",
    restarts: int = 3,
    stream: TextIO | None = None,
) -> dict[str, float]:
    """The ``demo`` subcommand: Laplace GPC on the breast cancer data, scored on held-out cases.

    Parameters
    ----------
    likelihood : {"probit", "logistic"}
        The link function.
    seed : int
        ``random_state`` of the stratified split (test_size 0.25) and seed of the restarts.
    output : path
        Directory (created if needed) for ``demo_probabilities.png`` and ``scores.csv``.
    restarts : int
        Optimiser restarts besides the initial hyperparameters.
    stream : text stream, optional
        Where the report is printed (stdout by default).

    Returns
    -------
    dict
        The held-out scores, as :func:`gpc_compare.metrics.score` returns them.
    """
    from sklearn.model_selection import train_test_split
    from threadpoolctl import threadpool_limits

    import gpc_compare as gc

    from . import metrics
    from .datasets import load_breast_cancer, standardize

    out = sys.stdout if stream is None else stream
    start_time = time.perf_counter()

    data = load_breast_cancer()
    X_train, X_test, y_train, y_test = train_test_split(
        data.X, data.y, test_size=0.25, random_state=seed, stratify=data.y
    )
    X_train, X_test = standardize(X_train, X_test)
    n_train, n_test, d = X_train.shape[0], X_test.shape[0], X_train.shape[1]
    base_rate = float(np.mean(y_train == 1))

    ell0 = float(np.sqrt(d))
    kernel = gc.kernels.SquaredExponential(lengthscale=ell0, variance=1.0)
    # One BLAS thread: a 426 x 426 problem gains nothing from more, and OpenBLAS threads
    # spinning against another busy process slowed this demo from 3 s to 3 min on 2 cores.
    with threadpool_limits(limits=1, user_api="blas"):
        post = gc.fit(
            X_train,
            y_train,
            method="laplace",
            kernel=kernel,
            likelihood=likelihood,
            optimize=True,
            n_restarts=restarts,
            random_seed=seed,
        )
        p1 = post.predict_proba(X_test)
        log_p = post.log_predictive(X_test, y_test)
    scores = metrics.score(y_test, p1, log_p, base_rate)
    n_wrong = int(np.sum((p1 > 0.5) != (y_test == 1)))

    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    plot_path = output / PLOT_NAME
    scores_path = output / SCORES_NAME
    _write_scores(scores, scores_path)
    _plot(y_test, p1, data.positive_class, data.negative_class, likelihood, plot_path)
    elapsed = time.perf_counter() - start_time

    pos, neg = data.positive_class, data.negative_class
    opt = post.optimization
    runs = opt.restarts
    n_runs_converged = sum(r.converged for r in runs)
    at_bound = _at_bounds(post)
    newton = post.convergence

    def counts(y: np.ndarray) -> str:
        return f"{int(np.sum(y == 1)):3d} {pos} / {int(np.sum(y == 0)):3d} {neg}"

    h_bits = metrics.base_rate_entropy_bits(base_rate)

    def row(label: str, value: str) -> str:
        return f"  {label:<28} {value}"

    lines = [
        f"{PROG} demo: Laplace GP classification of the Wisconsin breast cancer data",
        "",
        f"Data: {data.name} (scikit-learn), d = {d} inputs, positive class (y = 1) = {pos}",
        row("train", f"{n_train} cases: {counts(y_train)}  (base rate {base_rate:.3f})"),
        row("test", f"{n_test} cases: {counts(y_test)}"),
        row("split", f"stratified, test_size 0.25, random_state {seed}"),
        row("inputs", "standardised with the training fold's mean and sd"),
        "",
        f"Model: squared-exponential kernel (isotropic), {likelihood} likelihood, zero mean",
        "Hyperparameters (type-II maximum likelihood, natural scale)",
        row("lengthscale ell", f"{post.kernel.lengthscale:.4g}  (start sqrt(d) = {ell0:.4g})"),
        row("signal variance sigma_f^2", f"{post.kernel.variance:.4g}  (start 1)"),
        row("on a bound", ", ".join(at_bound) if at_bound else "none"),
        row("log marginal likelihood", f"{post.log_marginal_likelihood:.4f}  (Laplace approx.)"),
        "Optimiser (L-BFGS-B on log hyperparameters)",
        row("best run converged", _yes(opt.converged)),
        row(
            "runs",
            f"{len(runs)} (initial start + {len(runs) - 1} random restarts), "
            f"{n_runs_converged} converged",
        ),
        row("objective evaluations", f"{opt.n_evaluations}"),
        "Laplace mode (Newton, at the fitted hyperparameters)",
        row("converged", f"{_yes(newton.converged)}, {newton.iterations} iterations"),
        "",
        f"Held-out scores ({n_test} test cases)",
        row("mean log predictive prob.", f"{scores['mean_log_predictive']:.4f} nats"),
        row(
            "information about targets",
            f"{scores['information_bits']:.4f} bits  "
            f"(= H(train base rate) {h_bits:.4f} + mean log2 p; GPML sec. 3.7.3)",
        ),
        row("error rate", f"{scores['error_rate']:.4f}  ({n_wrong} of {n_test} wrong at p = 0.5)"),
        row("Brier score", f"{scores['brier']:.4f}"),
        row("AUC", f"{scores['auc']:.4f}"),
        "",
        f"Wrote {plot_path}",
        f"Wrote {scores_path}",
        f"Done in {elapsed:.1f} s",
    ]
    print("\n".join(lines), file=out)
    return scores


def _yes(flag: bool) -> str:
    return "yes" if flag else "NO"


def _at_bounds(post) -> list[str]:
    """Names of the fitted kernel hyperparameters lying on their optimisation bounds."""
    theta, bounds = post.kernel.theta, post.kernel.bounds
    names = post.kernel.hyperparameter_names
    hit = np.isclose(theta, bounds[:, 0], atol=1e-6) | np.isclose(theta, bounds[:, 1], atol=1e-6)
    return [n.removeprefix("log_") for n, h in zip(names, hit, strict=True) if h]


def _write_scores(scores: dict[str, float], path: Path) -> None:
    import pandas as pd

    units = {"mean_log_predictive": "_nats", "information_bits": ""}
    rows = [(f"{k}{units.get(k, '')}", v) for k, v in scores.items()]
    pd.DataFrame(rows, columns=["metric", "value"]).to_csv(path, index=False)


def _plot(
    y: np.ndarray,
    p1: np.ndarray,
    positive: str,
    negative: str,
    likelihood: str,
    path: Path,
) -> None:
    """Two panels: sorted held-out P(positive) coloured by class; a reliability diagram."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from sklearn.calibration import calibration_curve

    fig = Figure(figsize=(12.5, 6.2), layout="constrained")
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(2, 2, height_ratios=(3, 1))
    left = fig.add_subplot(grid[:, 0])
    right = fig.add_subplot(grid[0, 1])
    hist = fig.add_subplot(grid[1, 1], sharex=right)
    classes = ((1, positive, "tab:red", "o"), (0, negative, "tab:blue", "s"))

    order = np.argsort(p1, kind="stable")
    rank = np.arange(1, p1.size + 1)
    ps, ys = p1[order], y[order]
    for cls, name, colour, marker in classes:
        m = ys == cls
        left.scatter(
            rank[m],
            ps[m],
            s=22,
            c=colour,
            marker=marker,
            alpha=0.8,
            edgecolors="none",
            label=f"truly {name} (n = {int(m.sum())})",
        )
    left.axhline(0.5, color="0.4", linestyle="--", linewidth=1, label="decision threshold 0.5")
    left.set_xlim(0, p1.size + 1)
    left.set_ylim(-0.03, 1.03)
    left.set_xlabel("held-out case (sorted by predicted probability)")
    left.set_ylabel(f"predicted P({positive} | x, data)")
    left.set_title(f"Predicted probability of {positive} (the +1 class)")
    left.legend(loc="upper left", frameon=True)
    left.grid(alpha=0.3)

    n_bins = 10
    y01 = (y == 1).astype(int)
    frac_pos, mean_pred = calibration_curve(y01, p1, n_bins=n_bins, strategy="uniform")
    right.plot(
        [0, 1], [0, 1], color="0.4", linestyle="--", linewidth=1, label="perfectly calibrated"
    )
    right.plot(mean_pred, frac_pos, marker="o", color="tab:purple", label="Laplace GPC")
    right.set_xlim(-0.02, 1.02)
    right.set_ylim(-0.02, 1.02)
    right.set_ylabel(f"observed fraction {positive}")
    right.set_title(f"Reliability diagram ({n_bins} equal-width bins)")
    right.legend(loc="upper left", frameon=True)
    right.grid(alpha=0.3)
    right.tick_params(labelbottom=False)

    # cases per bin, stacked by true class (same bins as calibration_curve)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    bottom = np.zeros(n_bins)
    for cls, name, colour, _marker in classes:
        n_cls, _ = np.histogram(p1[y == cls], bins=edges)
        hist.bar(
            edges[:-1],
            n_cls,
            width=0.1,
            align="edge",
            bottom=bottom,
            color=colour,
            alpha=0.8,
            edgecolor="white",
            label=f"truly {name}",
        )
        bottom += n_cls
    for left_edge, n in zip(edges[:-1], bottom, strict=True):
        if n > 0:
            hist.text(left_edge + 0.05, n, f"{int(n)}", ha="center", va="bottom", fontsize=8)
    hist.set_ylim(0, bottom.max() * 1.35)
    hist.set_xlabel(f"predicted P({positive}) (bin mean above, bin edges below)")
    hist.set_ylabel("cases per bin")
    hist.grid(alpha=0.3, axis="y")
    hist.legend(loc="upper center", ncol=2, fontsize=8, frameon=False)

    fig.suptitle(
        f"Laplace GP classifier ({likelihood} likelihood, squared-exponential kernel) on "
        f"Wisconsin breast cancer: {p1.size} held-out cases",
        fontsize=13,
    )
    fig.savefig(path, dpi=120)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
