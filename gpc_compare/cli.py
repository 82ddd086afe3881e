"""The ``gpc-compare`` command line.

- ``gpc-compare run studies/NAME.toml`` runs a study (every engine on the same splits of
  the same data sets), resumable, and writes ``results/NAME/`` with its report;
- ``gpc-compare report results/NAME`` (re)writes the figures and ``report.md``;
- ``gpc-compare list [datasets|engines|studies]`` shows what there is;
- ``gpc-compare demo`` fits a Laplace GP classifier to the Wisconsin breast cancer data.

Exit codes: 0 on success; 2 for a usage error (argparse's own message) or an invalid
value, such as a malformed study file (``gpc-compare: error: <message>`` on stderr,
naming the field); 1 when jobs of a study failed (they are recorded, the rest ran) or
the output cannot be written; 130 when interrupted (finished jobs are kept: rerun the
same command to resume).
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
            "Approximate inference for Gaussian-process classification (Laplace, EP and the "
            "MCMC reference), compared: run studies, write their reports, list what there is."
        ),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    run = sub.add_parser(
        "run",
        help="run a study (resumable) and write its report",
        description=(
            "Expand a study file into jobs (data set x split x engine), run them on local "
            "worker processes or a Dask cluster, write each job's result as it finishes, "
            "skip finished jobs when rerun, and write results/NAME/results.csv (one row per "
            "data set, split, engine and metric) and the report."
        ),
    )
    run.add_argument(
        "studies",
        nargs="+",
        metavar="STUDY",
        help=(
            "study files, run in order: a TOML study (e.g. studies/quick.toml) or a figure "
            "study script (studies/NAME.py, whose run(output) writes DIR/NAME); "
            "`gpc-compare run studies/*` regenerates every result"
        ),
    )
    run.add_argument(
        "--output",
        default="results",
        metavar="DIR",
        help="results go to DIR/NAME (default: %(default)s)",
    )
    run.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        help="local worker processes (default: the number of CPUs; 1 runs in this process)",
    )
    run.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="run on the Dask distributed cluster at ADDRESS (e.g. tcp://host:8786)",
    )
    run.add_argument(
        "--no-retry-failed",
        dest="retry_failed",
        action="store_false",
        help="keep earlier failures instead of rerunning them",
    )
    run.add_argument("--no-report", dest="report", action="store_false", help="skip the report")
    run.set_defaults(func=_run_command)

    report = sub.add_parser(
        "report",
        help="write the figures and report.md of a study's results",
        description="Write results/NAME/report.md and results/NAME/figures/*.png.",
    )
    report.add_argument("results", metavar="RESULTS_DIR", help="e.g. results/quick")
    report.set_defaults(func=_report_command)

    lister = sub.add_parser(
        "list",
        help="list the data sets, engines and studies",
        description="List the bundled data sets, the engines and the study files.",
    )
    lister.add_argument(
        "what",
        nargs="?",
        choices=("datasets", "engines", "studies", "all"),
        default="all",
        help="what to list (default: %(default)s)",
    )
    lister.add_argument(
        "--studies-dir", default="studies", metavar="DIR", help="(default: %(default)s)"
    )
    lister.set_defaults(func=_list_command)

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


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _run_command(args: argparse.Namespace) -> int:
    from .study import load_study, load_study_script

    # check every file before running any, so a typo in the last does not waste an hour
    plans = []
    for path in args.studies:
        if str(path).endswith(".py"):
            plans.append(("script", path, load_study_script(path)))
        else:
            plans.append(("toml", path, load_study(path)))
    codes = []
    for kind, path, study in plans:
        if kind == "script":
            codes.append(_run_script(path, study, args))
        else:
            codes.append(_run_toml(path, study, args))
        if codes[-1] == 130:
            return 130
    return max(codes)


def _run_script(path: str, module, args: argparse.Namespace) -> int:
    name = Path(path).stem
    target = Path(args.output) / name
    print(f"{PROG} run: study script {path} -> {target}", flush=True)
    start = time.perf_counter()
    try:
        module.run(target)
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted", file=sys.stderr)
        return 130
    print(f"  done in {time.perf_counter() - start:.1f} s; see {target / 'README.md'}")
    return 0


def _run_toml(path: str, config, args: argparse.Namespace) -> int:
    from .study import run_study

    out = sys.stdout
    print(f"{PROG} run: study {config.name!r} from {path}", file=out)
    where = (
        f"the Dask cluster at {args.scheduler}"
        if args.scheduler
        else (f"{args.workers or os.cpu_count()} local worker process(es)")
    )
    print(
        f"  {len(config.datasets)} data set(s) x engines {list(config.engines)}; on {where}",
        file=out,
        flush=True,
    )
    try:
        summary = run_study(
            config,
            args.output,
            workers=args.workers,
            scheduler=args.scheduler,
            retry_failed=args.retry_failed,
            progress=sys.stderr,
        )
    except KeyboardInterrupt:
        print(
            f"\n{PROG}: interrupted; finished jobs are saved under {args.output}/{config.name}: "
            "rerun the same command to resume",
            file=sys.stderr,
        )
        return 130
    print(
        f"  jobs: {summary.total} ({summary.skipped} done earlier, {summary.done} run now, "
        f"{summary.failed} failed) in {summary.seconds:.1f} s",
        file=out,
    )
    print(f"  wrote {summary.result_dir / 'results.csv'} ({len(summary.table)} rows)", file=out)
    for failure in summary.failures:
        print(f"  FAILED {failure}", file=out)
    for failure in summary.failed_earlier:
        print(f"  FAILED (earlier run, not retried) {failure}", file=out)
    if args.report and not summary.table.empty:
        from .report import write_report

        path = write_report(summary.result_dir)
        print(f"  wrote {path} and {path.parent / 'figures'}/", file=out)
    n_failed = summary.failed + len(summary.failed_earlier)
    if n_failed:
        print(
            f"{PROG}: {n_failed} job(s) failed (tracebacks in "
            f"{summary.result_dir / 'jobs'}); rerun to retry them",
            file=sys.stderr,
        )
        return 1
    return 0


def _report_command(args: argparse.Namespace) -> int:
    from .report import write_report

    path = write_report(args.results)
    print(f"wrote {path} and {path.parent / 'figures'}/")
    return 0


def _list_command(args: argparse.Namespace) -> int:
    from . import datasets
    from .engines import ENGINES
    from .study import list_studies

    if args.what in ("datasets", "all"):
        print("Data sets (gpc_compare.datasets.load(NAME)):")
        for row in datasets.list_datasets():
            print(
                f"  {row['name']:<16} n={row['n']:<5} d={row['d']:<3} "
                f"classes={row['classes']:<2} {row['kind']:<9} {row['description']}"
            )
    if args.what in ("engines", "all"):
        print("Engines (method=NAME):")
        for name, module in ENGINES.items():
            doc = (module.__doc__ or "").strip().splitlines()[0]
            print(f"  {name:<8} {doc}")
    if args.what in ("studies", "all"):
        print(f"Studies ({args.studies_dir}/*.toml and *.py; run with gpc-compare run FILE):")
        studies = list_studies(args.studies_dir)
        if not studies:
            print("  (none found)")
        for row in studies:
            text = " ".join(row["description"].split())
            text = text if len(text) <= 100 else text[:97] + "..."
            jobs = "script" if row["path"].endswith(".py") else f"{row['jobs']} jobs"
            text = text.removeprefix("(script) ")
            print(f"  {row['name']:<18} {jobs:>8}  {text}")
    return 0


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
