"""The ``gpc-compare`` command line.

- ``gpc-compare run studies/NAME.toml`` runs a study (every engine on the same splits of
  the same data sets), resumable, and writes ``results/NAME/`` with its report;
- ``gpc-compare compare data.csv --target COLUMN`` runs your own data (a CSV, gzip CSV or
  Parquet file) through the engines, writing the study it ran next to its results;
- ``gpc-compare report results/NAME`` (re)writes the figures and ``report.md``;
- ``gpc-compare list [datasets|engines|studies]`` shows what there is.

A study's work lives in :mod:`gpc_compare.study` and its report in
:mod:`gpc_compare.report`; this module only parses arguments and prints.

Exit codes: 0 on success; 2 for a usage error (argparse's own message) or an invalid
value, such as a malformed study file (``gpc-compare: error: <message>`` on stderr,
naming the field, or another run writing to the same output); 1 when jobs of a study
failed (they are recorded, the rest ran) or the output cannot be written; 130 when
interrupted by Ctrl-C and 143 by SIGTERM (``timeout``, batch schedulers): finished jobs
are kept, rerun the same command to resume; 2 too when the Dask scheduler stops answering
mid-run (finished jobs kept, the command that resumes printed).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

PROG = "gpc-compare"

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``gpc-compare`` and its subcommands.

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Approximate inference for Gaussian-process classification (every engine of "
            "`gpc-compare list engines` against the MCMC reference), compared: run studies, "
            "write their reports, list what there is."
        ),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_run(sub)
    _add_report(sub)
    _add_compare(sub)
    _add_list(sub)
    return parser


def _add_run(sub) -> None:
    """``gpc-compare run``."""
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
            "study script (studies/NAME.py, whose run(output) writes DIR/NAME: a .py study "
            "is Python that runs with your permissions, so run only scripts you trust); "
            "every TOML file is checked before any script runs; "
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
    run.add_argument(
        "--wait",
        action="store_true",
        help="if another run is writing to the same output, wait for it (default: exit 2)",
    )
    run.add_argument(
        "--no-limits",
        dest="limits",
        action="store_false",
        help=(
            "accept a study beyond its limits (more than 20,000 jobs, 10,000 grid points, "
            "100 restarts or 1,000 repeats unless its [limits] table raises them; an "
            "engine's options beyond this machine's memory): by default such a study is "
            "refused when it loads, with the estimate and the limit"
        ),
    )
    run.set_defaults(func=_run_command)


def _add_report(sub) -> None:
    """``gpc-compare report``."""
    report = sub.add_parser(
        "report",
        help="write the figures and report.md of a study's results",
        description="Write results/NAME/report.md and results/NAME/figures/*.png.",
    )
    report.add_argument("results", metavar="RESULTS_DIR", help="e.g. results/quick")
    report.set_defaults(func=_report_command)


def _add_list(sub) -> None:
    """``gpc-compare list``."""
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
    import signal
    import threading

    from .study import raise_terminated

    parser = build_parser()
    args = parser.parse_args(None if argv is None else [os.fspath(a) for a in argv])
    previous = None
    if threading.current_thread() is threading.main_thread():  # SIGTERM as Ctrl-C
        previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        return int(args.func(args))
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{PROG}: error: cannot write the output: {exc}", file=sys.stderr)
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _run_command(args: argparse.Namespace) -> int:
    from .study import check_study_script, load_study, load_study_script

    # check every file before running any, so a typo in the last does not waste an hour:
    # TOML studies are read; scripts are parsed, not run (a .py study is Python, run with
    # your permissions, and only once every file has passed)
    for path in args.studies:
        if str(path).endswith(".py"):
            check_study_script(path)
    configs = {
        p: load_study(p, limits=args.limits) for p in args.studies if not str(p).endswith(".py")
    }
    _check_outputs(configs, args.output)
    codes = []
    for path in args.studies:
        if path in configs:
            codes.append(_run_toml(path, configs[path], args))
        else:
            codes.append(_run_script(path, load_study_script(path), args))
        if codes[-1] in (130, 143):
            return codes[-1]
    return max(codes)


def _check_outputs(configs: dict, output: str) -> None:
    """Refuse two study files (not one file given twice) of one name: they would write to
    one folder, ``OUTPUT/NAME``, the second replacing the first's study, table and report
    (e.g. the studies ``gpc-compare compare`` wrote for ``a/data.csv`` and ``b/data.csv``)."""
    first: dict[str, str] = {}
    for path, config in configs.items():
        other = first.setdefault(config.name, path)
        if Path(other).resolve() != Path(path).resolve():
            raise ValueError(
                f"{other} and {path} are both study {config.name!r}: both would write to "
                f"{Path(output) / config.name}, the second replacing the first's study, "
                "table and report; give one another name (name = ...) or run them one at a "
                "time with different --output folders"
            )


def _run_script(path: str, module, args: argparse.Namespace) -> int:
    name = Path(path).stem
    target = Path(args.output) / name
    print(f"{PROG} run: study script {path} -> {target}", flush=True)
    start = time.perf_counter()
    try:
        module.run(target)
    except KeyboardInterrupt as exc:
        print(f"\n{PROG}: interrupted", file=sys.stderr)
        return _interrupted_code(exc)
    print(f"  done in {time.perf_counter() - start:.1f} s; see {target / 'README.md'}")
    return 0


def _run_toml(path: str, config, args: argparse.Namespace, lock=None) -> int:
    """Run one TOML study (``lock``: its output's, when the caller holds it)."""
    from .study import SchedulerLost, run_study

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
            wait=args.wait,
            lock=lock,
        )
    except KeyboardInterrupt as exc:
        print(
            f"\n{PROG}: interrupted; finished jobs are saved under {args.output}/{config.name}: "
            "rerun the same command to resume",
            file=sys.stderr,
        )
        return _interrupted_code(exc)
    except SchedulerLost as exc:  # (the records of the finished jobs are kept)
        print(f"\n{PROG}: error: {exc}; to resume, rerun: {_rerun(path, args)}", file=sys.stderr)
        return 2
    print(
        f"  jobs: {summary.total} ({summary.skipped} done earlier, {summary.done} run now, "
        f"{summary.failed} failed) in {summary.seconds:.1f} s",
        file=out,
    )
    print(f"  wrote {summary.result_dir / 'results.csv'} ({len(summary.table)} rows)", file=out)
    for note in summary.set_aside:
        print(f"  damaged record {note}", file=out)
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


def _rerun(path: str, args: argparse.Namespace) -> str:
    """The command that resumes the run of study ``path`` (finished jobs are skipped)."""
    import shlex

    words = [PROG, "run", path, "--output", str(args.output)]
    if args.scheduler:
        words += ["--scheduler", args.scheduler]
    return " ".join(shlex.quote(w) for w in words)


def _interrupted_code(exc: KeyboardInterrupt) -> int:
    """130 for Ctrl-C, 143 for SIGTERM (128 + the signal's number, as a shell reports)."""
    from .study import Terminated

    return 143 if isinstance(exc, Terminated) else 130


def _add_compare(sub) -> None:
    """The ``compare`` subcommand: a data file through the engines, no study file to write."""
    cmp = sub.add_parser(
        "compare",
        help="compare the engines on your own data file (CSV, .csv.gz, Parquet)",
        description=(
            "Run your data through the engines by cross-validation: writes DIR/NAME/study.toml "
            "(the study it ran: edit it and rerun with `gpc-compare run`), the results and "
            "the report. Rerunning the same command resumes."
        ),
    )
    cmp.add_argument("data", metavar="DATA", help="a CSV, gzip CSV or Parquet file")
    cmp.add_argument("--target", required=True, help="the column of class labels")
    cmp.add_argument(
        "--engines",
        default="laplace,ep,mcmc",
        type=lambda s: [e.strip() for e in s.split(",") if e.strip()],
        help="comma-separated engines (default: %(default)s)",
    )
    cmp.add_argument("--likelihood", default="probit", help="(default: %(default)s)")
    cmp.add_argument("--folds", type=int, default=5, help="(default: %(default)s)")
    cmp.add_argument(
        "--repeats",
        type=_positive_int,
        default=None,
        help="repeats of the folds (default: ceil(10 / folds), >= 10 paired splits)",
    )
    cmp.add_argument("--policy", default="optimize", help="(default: %(default)s)")
    cmp.add_argument("--seed", type=int, default=0, help="(default: %(default)s)")
    cmp.add_argument("--output", default="results", metavar="DIR", help="(default: %(default)s)")
    cmp.add_argument("--name", default=None, help="study name (default: the file's name)")
    cmp.add_argument("--positive", default=None, help="the label of the +1 class")
    cmp.add_argument("--features", default=None, help="comma-separated input columns")
    cmp.add_argument("--categorical", choices=("onehot", "drop"), default=None)
    cmp.add_argument("--missing", choices=("error", "drop"), default=None)
    cmp.add_argument("--workers", type=_positive_int, default=None)
    cmp.add_argument("--scheduler", default=None, metavar="ADDRESS")
    cmp.add_argument(
        "--no-psis",
        dest="psis",
        action="store_false",
        help="skip the Pareto-k check of each Gaussian approximation (and so the report's "
        "recommendation)",
    )
    cmp.add_argument("--no-report", dest="report", action="store_false", help="skip the report")
    cmp.set_defaults(func=_compare_command, retry_failed=True, wait=False, limits=True)


def _compare_command(args: argparse.Namespace) -> int:
    from .comparison import prepare_file_study
    from .study import StudyError

    features = None if args.features is None else [f.strip() for f in args.features.split(",")]
    try:  # checked, nothing written yet
        prepared = _prepare(prepare_file_study, args, features)
    except StudyError as exc:  # the fields of the study are options here
        raise ValueError(
            f"{exc} (on the command line: --categorical onehot|drop, --missing drop, "
            "--features A,B, --positive LABEL, --folds K, --likelihood NAME)"
        ) from None
    path = prepared.study_file
    with prepared.claim(wait=args.wait, stream=sys.stderr) as lock:  # the lock, then writes
        print(f"{PROG} compare: wrote {path} (rerun or edit it: gpc-compare run {path})")
        return _run_toml(str(path), prepared.config, args, lock=lock)


def _prepare(prepare_file_study, args: argparse.Namespace, features):
    return prepare_file_study(
        args.data,
        args.target,
        args.output,
        name=args.name,
        engines=args.engines,
        likelihood=args.likelihood,
        folds=args.folds,
        n_repeats=args.repeats,
        policy=args.policy,
        seed=args.seed,
        psis=args.psis,
        positive=args.positive,
        features=features,
        categorical=args.categorical,
        missing=args.missing,
        workers=args.workers,
        scheduler=args.scheduler,
    )


def _report_command(args: argparse.Namespace) -> int:
    from .report import write_report
    from .study import read_records

    path = write_report(args.results)
    print(f"wrote {path} and {path.parent / 'figures'}/")
    damaged = read_records(args.results)[1]
    for bad in damaged:
        print(f"{PROG}: could not read {bad}", file=sys.stderr)
    if damaged:
        print(
            f"{PROG}: {len(damaged)} job record(s) left out of the report (listed at its "
            "end): rerun the study to recompute them",
            file=sys.stderr,
        )
    return 0


def _list_command(args: argparse.Namespace) -> int:
    from . import datasets
    from .engines import capabilities, registered
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
        for name, engine in registered().items():
            print(f"  {name:<8} {engine.label}: {engine.summary}")
            for lik in engine.likelihoods:
                print(f"  {'':<8} {lik}: {', '.join(sorted(capabilities(name, lik)))}")
            options = ", ".join(f"{k}={v!r}" for k, v in engine.Options.defaults().items())
            print(f"  {'':<8} options: {options}")
    if args.what in ("studies", "all"):
        print(f"Studies ({args.studies_dir}/*.toml and *.py; run with gpc-compare run FILE):")
        studies = list_studies(args.studies_dir)

        def kind(row) -> str:  # a script and a study file may share a name
            return " (.py)" if row["path"].endswith(".py") else " (.toml)"

        if not studies:
            print("  (none found)")
        for row in studies:
            text = " ".join(row["description"].split())
            text = text if len(text) <= 100 else text[:97] + "..."
            jobs = "script" if row["path"].endswith(".py") else f"{row['jobs']} jobs"
            text = text.removeprefix("(script) ")
            print(f"  {row['name'] + kind(row):<37} {jobs:>9}  {text}")
    return 0
