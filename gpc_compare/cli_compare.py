"""``gpc-compare compare``: its flags, and its errors in the words of those flags.

Every option of :func:`gpc_compare.compare` is a flag here (``--engines``,
``--likelihood``, ``--folds``, ``--policy``, ``--seed``, ``--output``, ``--name``,
``--workers``, ``--scheduler``, ``--kernel``/``--ard``, ``--engine-option``,
``--n-restarts``, ``--no-psis``, ``--features``, ``--positive``, ``--categorical``,
``--missing``, ``--subsample``), with the data file's own: ``--sep`` and ``--decimal``.
The study the command builds is checked before anything is written; a refusal speaks of
the flag to change (:func:`flag_message`), never of the study file's fields, and names
no study file (it was not written).
"""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path
from typing import Any

__all__ = ["add_compare", "flag_message", "positive_int", "prepare"]

#: The default results folder of ``compare`` (``results/`` holds the committed results).
OUTPUT = "out"
#: Hyperparameter policies a command line can ask for ("grid" needs a grid table: edit
#: the study file the command writes, and ``gpc-compare run`` it).
POLICY_CHOICES = ("optimize", "fixed", "shared", "full_bayes")
#: The choices of --categorical, --missing, --likelihood and --kernel, named here so that
#: `gpc-compare --help` imports no data or study machinery (issue 34: it took 15-25 s);
#: tests/test_imports.py checks them against gpc_compare.datasets.files' CATEGORICAL and
#: MISSING, gpc_compare.study.config's LIKELIHOODS and gpc_compare.study.problem's KERNELS.
CATEGORICAL_CHOICES = ("onehot", "drop")
MISSING_CHOICES = ("error", "drop")
LIKELIHOOD_CHOICES = ("probit", "logistic", "softmax", "multinomial_probit", "robustmax")
KERNEL_CHOICES = ("squared_exponential", "matern32", "matern52", "linear", "neural_network")


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _at_least(minimum: int):
    def check(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {value}")
        return value

    return check


def _engine_list(text: str) -> list[str]:
    """argparse type of ``--engines``: comma-separated names, each a registered engine."""
    from .engines import registered

    names = [e.strip() for e in text.split(",") if e.strip()]
    known = list(registered())
    unknown = [e for e in names if e not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown engine(s) {unknown or text!r}; choose among {', '.join(known)} "
            "(comma-separated, e.g. --engines laplace,ep,mcmc; `gpc-compare list engines` "
            "describes them)"
        )
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"an engine is named twice in {text!r}")
    return names


def _single_char(name: str):
    def check(text: str) -> str:
        text = {"\\t": "\t", "tab": "\t"}.get(text, text)
        if len(text) != 1:
            raise argparse.ArgumentTypeError(
                f"must be one character (e.g. ';' or ',', '\\t' for a tab), got {text!r}"
            )
        return text

    check.__name__ = name
    return check


def _engine_option(text: str) -> tuple[str, str, Any]:
    """argparse type of ``--engine-option ENGINE.NAME=VALUE`` (VALUE read as a TOML value,
    e.g. ``500``, ``true``, ``"parallel"``; a bare word is text)."""
    match = re.fullmatch(r"\s*([A-Za-z0-9_]+)\.([A-Za-z0-9_]+)\s*=\s*(.+)", text)
    if match is None:
        raise argparse.ArgumentTypeError(
            f"must be ENGINE.NAME=VALUE (e.g. mcmc.draws=500), got {text!r}"
        )
    engine, name, raw = match.groups()
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return engine, name, value


def _minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of minutes, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0 (0: no limit), got {value}")
    return value


def add_compare(sub) -> argparse.ArgumentParser:
    """Add the ``compare`` subcommand (its ``func`` is the caller's to set)."""
    cmp = sub.add_parser(
        "compare",
        help="compare the engines on your own data file (CSV, .csv.gz, Parquet)",
        description=(
            "Run your data through the engines by stratified cross-validation: writes "
            "DIR/NAME/study.toml (the study it ran: edit it and rerun with `gpc-compare "
            "run`), the results and the report. Rerunning the same command resumes. "
            "The options are those of gc.compare in Python."
        ),
    )
    cmp.add_argument("data", metavar="DATA", help="a CSV, gzip CSV (.csv.gz) or Parquet file")
    _data_flags(cmp)
    _model_flags(cmp)
    _run_flags(cmp)
    cmp.set_defaults(retry_failed=True, wait=False, limits=True)
    return cmp


def _data_flags(cmp: argparse.ArgumentParser) -> None:
    """The data file's flags: which columns, which rows, how the file is written."""
    cmp.add_argument("--target", required=True, help="the column of class labels (required)")
    cmp.add_argument(
        "--features",
        default=None,
        metavar="A,B,...",
        help="comma-separated input columns (default: every column but the target; an "
        "unnamed row-index column, as pandas' to_csv writes, is dropped and the report says so)",
    )
    cmp.add_argument(
        "--positive",
        default=None,
        metavar="LABEL",
        help="the label of the +1 class of two (default: the larger of the sorted labels)",
    )
    cmp.add_argument(
        "--categorical",
        choices=CATEGORICAL_CHOICES,
        default=None,
        help="non-numeric input columns: one 0/1 column per level (onehot) or dropped "
        "(drop); default: refused, naming the column",
    )
    cmp.add_argument(
        "--missing",
        choices=MISSING_CHOICES,
        default=None,
        help="rows with a missing value: refused, naming the column and row (error), or "
        "dropped and counted in the report (drop); default: error",
    )
    cmp.add_argument(
        "--subsample",
        type=_at_least(10),
        default=None,
        metavar="N",
        help="use a stratified random subsample of N rows (>= 10; default: every row)",
    )
    cmp.add_argument(
        "--sep",
        type=_single_char("sep"),
        default=None,
        metavar="CHAR",
        help="a CSV file's field separator, e.g. ';' or '\\t' (default: ',')",
    )
    cmp.add_argument(
        "--decimal",
        type=_single_char("decimal"),
        default=None,
        metavar="CHAR",
        help="a CSV file's decimal mark, e.g. ',' for 0,5 (default: '.')",
    )


def _model_flags(cmp: argparse.ArgumentParser) -> None:
    """The model's flags: engines, likelihood, kernel, hyperparameters, splits."""
    cmp.add_argument(
        "--engines",
        default="laplace,ep,mcmc",
        type=_engine_list,
        metavar="E1,E2,...",
        help="comma-separated engines, each with its default options (`gpc-compare list "
        "engines`; default: %(default)s; mcmc is the reference the others are compared with)",
    )
    cmp.add_argument(
        "--engine-option",
        action="append",
        type=_engine_option,
        metavar="ENGINE.NAME=VALUE",
        help="an engine's option, e.g. mcmc.draws=500 or svgp.max_iter=5000 (repeatable; "
        "`gpc-compare list engines` lists each engine's options)",
    )
    cmp.add_argument(
        "--likelihood",
        choices=LIKELIHOOD_CHOICES,
        default="probit",
        help="probit or logistic take two classes; softmax, multinomial_probit and "
        "robustmax several (default: %(default)s)",
    )
    cmp.add_argument(
        "--kernel",
        choices=KERNEL_CHOICES,
        default=None,
        help="the covariance function (default: squared_exponential, length-scale sqrt(d), "
        "variance 1, the starting point of the hyperparameter search)",
    )
    cmp.add_argument(
        "--ard", action="store_true", help="one length-scale per input (default: one in all)"
    )
    cmp.add_argument(
        "--policy",
        choices=POLICY_CHOICES,
        default="optimize",
        help="hyperparameters: each engine maximises its own evidence and MCMC runs at EP's "
        "(optimize); every engine at the kernel's values (fixed); every engine at EP's "
        "(shared: the approximations compared with MCMC at the same values); as optimize "
        "with MCMC sampling them too (full_bayes). Default: %(default)s",
    )
    cmp.add_argument(
        "--n-restarts",
        type=_at_least(0),
        default=None,
        metavar="N",
        help="random restarts of the hyperparameter search beyond its first start (default: 2)",
    )
    cmp.add_argument(
        "--folds",
        type=_at_least(2),
        default=5,
        metavar="K",
        help="stratified cross-validation folds (>= 2; default: %(default)s)",
    )
    cmp.add_argument(
        "--n-repeats",
        "--repeats",
        dest="repeats",
        type=_at_least(1),
        default=None,
        metavar="R",
        help="repeats of the folds, each a new split (default: ceil(10 / folds), so that the "
        "comparison has at least 10 paired splits)",
    )
    cmp.add_argument(
        "--seed",
        "--random-seed",
        dest="seed",
        type=int,
        default=0,
        help="the seed of the splits, restarts and samplers (default: %(default)s)",
    )


def _run_flags(cmp: argparse.ArgumentParser) -> None:
    """Where the results go and where the jobs run."""
    cmp.add_argument(
        "--output",
        default=OUTPUT,
        metavar="DIR",
        help="results go to DIR/NAME (default: %(default)s; results/ holds the "
        "repository's committed studies)",
    )
    cmp.add_argument(
        "--name",
        default=None,
        help="the study's name, and its folder in DIR (default: the data file's name)",
    )
    cmp.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="local worker processes (default: the number of CPUs; 1 runs in this process)",
    )
    cmp.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="run on the Dask distributed cluster at ADDRESS (e.g. tcp://host:8786)",
    )
    cmp.add_argument(
        "--no-psis",
        dest="psis",
        action="store_false",
        help="skip the Pareto-k check of each Gaussian approximation (and so the report's "
        "recommendation)",
    )
    cmp.add_argument("--no-report", dest="report", action="store_false", help="skip the report")
    cmp.add_argument(
        "--max-minutes",
        type=_minutes,
        default=30.0,
        metavar="M",
        help="print the plan (each engine's jobs, estimated time and memory) and refuse, "
        "exit 2, a study estimated to take longer than M minutes (default: %(default)g; "
        "0: no limit)",
    )


def prepare(args: argparse.Namespace):
    """The checked study of ``args`` (:func:`gpc_compare.comparison.prepare_file_study`),
    nothing written; a refusal as a ValueError in the words of the flags."""
    from .comparison import prepare_file_study

    features = None if args.features is None else [f.strip() for f in args.features.split(",")]
    options: dict[str, dict[str, Any]] = {}
    for engine, name, value in args.engine_option or []:
        if engine not in args.engines:
            raise ValueError(
                f"--engine-option {engine}.{name}: {engine!r} is not among --engines "
                f"{','.join(args.engines)}"
            )
        options.setdefault(engine, {})[name] = value
    kernel = None
    if args.kernel is not None or args.ard:
        kernel = {"name": args.kernel or "squared_exponential", "ard": bool(args.ard)}
    try:  # checked, nothing written yet
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
            kernel=kernel,
            engine_options=options,
            n_restarts=args.n_restarts,
            positive=args.positive,
            features=features,
            categorical=args.categorical,
            missing=args.missing,
            subsample=args.subsample,
            sep=args.sep,
            decimal=args.decimal,
            workers=args.workers,
            scheduler=args.scheduler,
        )
    except ValueError as exc:
        study_file = Path(args.output) / (args.name or "") / "study.toml"
        raise ValueError(flag_message(str(exc), study_file)) from None


#: Study-file wording -> the flag that sets it, applied in order by :func:`flag_message`.
_FLAG_WORDS = (
    (r"^datasets\[0\]: ", ""),
    (r"^(features|positive|categorical|missing|subsample|sep|decimal): ", r"--\1: "),
    (r"^likelihood: ", "--likelihood: "),
    (r"^hyperparameters\.policy: ", "--policy: "),
    (r"^hyperparameters\.n_restarts: ", "--n-restarts: "),
    (r"^splits\.n_splits: ", "--folds: "),
    (r"^kernel[\w.]*: ", "--kernel: "),
    (r"^engines\.(\w+)\.(\w+): ", r"--engine-option \1.\2: "),
    (r"^engines\.(\w+): unknown option", r"--engine-option \1.NAME: unknown option"),
    (r"^engines\.(\w+): ", r"--engines (\1): "),
    (r"^engines: ", "--engines: "),
    (r"^seed: ", "--seed: "),
    (r" \(a table named otherwise needs method = ENGINE\)", ""),
    (r"categorical = [\"'](onehot|drop)[\"']", r"--categorical \1"),
    (r"missing = [\"']drop[\"']", "--missing drop"),
    (r"features = \[\.\.\.\]", "--features A,B,..."),
    (r"likelihood = [\"'](\w+)[\"']", r"--likelihood \1"),
    (r"fewer splits \(n_splits\)", "fewer folds (--folds K)"),
    (r"positive = ", "--positive "),
    (r"use method='(\w+)'", r"use --engines \1"),
    (r" \(method='\w+'\)", ""),
    (r"sep = [\"'](.)[\"']", r"--sep '\1'"),
    (r"decimal = [\"'](.)[\"']", r"--decimal '\1'"),
)


def flag_message(text: str, study_file: str | Path | None = None) -> str:
    """A refusal of the study ``compare`` built, in the words of its flags.

    The study file's name is left out (it was not written), and each field of the study
    becomes the flag that sets it (``categorical = "onehot"`` -> ``--categorical
    onehot``, ``hyperparameters.policy`` -> ``--policy``, ``engines.NAME`` ->
    ``--engines``).

    Parameters
    ----------
    text : str
        The message of the :class:`~gpc_compare.study.StudyError` (or ValueError).
    study_file : path, optional
        The study file the message may start with.

    Returns
    -------
    str
    """
    if study_file is not None:
        text = text.removeprefix(f"{study_file}: ")
    text = re.sub(r"^\S*study\.toml: ", "", text)
    for pattern, replacement in _FLAG_WORDS:
        text = re.sub(pattern, replacement, text)
    return text
