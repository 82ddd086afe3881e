"""Your own data through the study runner, without writing a study file: :func:`compare`.

``gc.compare(X, y)`` writes the data (``data.csv``) into the results folder, builds the
study of that file (:func:`study_fields`, :meth:`gpc_compare.study.StudyConfig.from_dict`)
and keeps its text beside it (``study.toml``), then runs it with
:func:`gpc_compare.study.run_study`: the same jobs,
resuming, worker processes or Dask cluster, tidy table and report as
``gpc-compare run``. ``gpc-compare compare data.csv --target COLUMN`` does the same from
the shell (:func:`prepare_file_study`), with the study's ``file`` pointing at the CSV.
Either way the study file kept with the results repeats the run
(``gpc-compare run DIR/NAME/study.toml``) and can be edited.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from .study import RunSummary, StudyConfig, run_study
from .study.datafiles import check_label, check_same_data
from .study.fields import plain
from .study.frames import check_labels_survive, xy_frame
from .study.lock import Held, output_lock
from .study.output import atomic_write, copy_results
from .study.plan import DEFAULT_MAX_MINUTES, plan_data_study
from .study.studyfile import toml_text

__all__ = [
    "Comparison",
    "PreparedStudy",
    "compare",
    "prepare_file_study",
    "study_fields",
    "study_text",
]

#: Fields of a file data set that :func:`compare` and :func:`prepare_file_study` pass on.
DATA_OPTIONS = ("features", "positive", "categorical", "missing", "subsample")


class Comparison:
    """What :func:`compare` ran: the tidy table, its summary, and the report on request.

    Parameters
    ----------
    table : pandas.DataFrame
        The tidy table (``results.csv``): one row per data set, split, engine and metric.
    result_dir : Path
        Where the results are (``OUTPUT/NAME``, or a temporary folder that lives as long
        as this object when ``output=None``): ``study.toml``, ``data.csv``, ``jobs/``.
    study : StudyConfig
        The study that ran.
    run : RunSummary
        Jobs run, skipped (done earlier) and failed, with the failures' messages.
    keep : object, optional
        Kept as long as this object: the TemporaryDirectory of ``output=None``'s results.
    plan : Plan or None
        The plan made before the run (:mod:`gpc_compare.study.plan`): each engine's jobs,
        estimated time and memory; ``print(result.plan.text())`` shows it.
    """

    def __init__(
        self,
        table: pd.DataFrame,
        result_dir: Path,
        study: StudyConfig,
        run: RunSummary,
        keep: Any = None,
        plan: Any = None,
    ) -> None:
        self.table = table
        self.result_dir = Path(result_dir)
        self.study = study
        self.run = run
        self._keep = keep  # a TemporaryDirectory, removed with this object
        self.plan = plan

    def summary(self) -> pd.DataFrame:
        """Each metric's mean over splits and its 95% interval, per data set and engine, as
        the report gives them.

        Returns
        -------
        pandas.DataFrame
            :func:`gpc_compare.report.study_summary`: the held-out scores with a
            bias-corrected bootstrap interval over the test cases, the other metrics with a
            t-interval across splits clipped to the metric's range; ``interval`` names which.
        """
        from .report import study_summary

        return study_summary(self.result_dir)

    def differences(self) -> pd.DataFrame:
        """Every pair of engines compared on every held-out score, as the report's findings
        compare them: a win only where the 95% interval of the difference excludes zero.

        Returns
        -------
        pandas.DataFrame
            :func:`gpc_compare.report.study_differences`: per data set, engine pair and
            score, the mean difference over the splits with the corrected resampled
            t-interval (Nadeau and Bengio 2003), the number of splits and the verdict.
        """
        from .report import study_differences

        return study_differences(self.result_dir)

    def report(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Write ``report.md`` and ``figures/`` (as ``gpc-compare report``).

        Parameters
        ----------
        path : path, optional
            A folder: the results are copied there (study, data, job records) and the
            report written beside them. Default: the results folder itself.

        Returns
        -------
        Path
            The path of ``report.md``.
        """
        from .report import write_report

        target = self.result_dir if path is None else Path(path)
        if target.resolve() != self.result_dir.resolve():  # (never written through a link)
            copy_results(self.result_dir, target)
        return write_report(target)

    def __repr__(self) -> str:
        return (
            f"Comparison({self.study.name!r}: engines {list(self.study.engines)}, "
            f"{len(self.table)} rows, {self.run.failed} failed, in {self.result_dir})"
        )


def compare(
    X: Any,
    y: Any,
    engines: Sequence[str] = ("laplace", "ep", "mcmc"),
    likelihood: str = "probit",
    folds: int = 5,
    policy: str = "optimize",
    random_seed: int = 0,
    output: str | os.PathLike[str] | None = None,
    *,
    name: str = "compare",
    workers: int | None = None,
    scheduler: str | None = None,
    progress: TextIO | None = None,
    kernel: Mapping[str, Any] | None = None,
    engine_options: Mapping[str, Mapping[str, Any]] | None = None,
    n_restarts: int | None = None,
    psis: bool = True,
    seed: int | None = None,
    max_minutes: float | None = DEFAULT_MAX_MINUTES,
    n_repeats: int | None = None,
    **data_options: Any,
) -> Comparison:
    """Compare the engines on your data ``(X, y)`` through the study runner.

    Parameters
    ----------
    X : array_like of shape (n, d), or pandas.DataFrame
        Inputs (unscaled: they are standardised on each training fold). A DataFrame's
        column names are kept; non-numeric columns need ``categorical="onehot"`` or
        ``"drop"``.
    y : array_like of shape (n,), or pandas.Series
        Class labels: any two or more distinct values (two: the larger sorted one is +1
        unless ``positive=`` says otherwise; more need a multi-class ``likelihood``).
        They are compared as a data file's are
        (:func:`~gpc_compare.datasets.files.load_table`): as text with surrounding
        whitespace stripped (``" yes"`` and ``"yes"`` are one class), numbers by value
        (``1`` and ``1.0`` are one). Different values that the CSV written for the study
        cannot keep apart (the integer ``1`` and the text ``"1"``) are refused.
    engines : sequence of str
        Engines, each with its default options (``engine_options`` adds some).
    likelihood : {"probit", "logistic", "softmax", "multinomial_probit", "robustmax"}
        Two classes: probit or logistic; several: softmax (engines laplace, kl, mcmc,
        svgp), multinomial_probit (ep) or robustmax (svgp).
    folds : int
        Stratified cross-validation folds (>= 2).
    policy : {"optimize", "fixed", "shared", "full_bayes"}
        The hyperparameter policy (see :mod:`gpc_compare.study`).
    n_repeats : int, optional
        Repeats of the ``folds``-fold split (the study's ``[splits] n_repeats``); default
        ceil(10 / folds), so that every comparison has at least 10 paired splits for its
        corrected resampled t-interval (Nadeau and Bengio 2003): 2 repeats of 5 folds.
    random_seed : int
        The study seed (splits, restarts, samplers): the study file's ``seed``.
    output : path, optional
        Results go to ``output/NAME`` (kept, and resumed when called again with the same
        data and settings); default: a temporary folder.
    name : str
        The study's name, which is also the data set's label (letters, digits, ``_.-``).
    workers : int, optional
        Local worker processes (default: one per CPU; 1 runs in this process). A script
        calling this needs no ``if __name__ == "__main__":`` guard: the workers do not run
        it again.
    scheduler : str, optional
        A Dask scheduler's address (``tcp://host:8786``): the jobs run there.
    progress : text stream, optional
        Where the progress line goes (e.g. ``sys.stderr``); none by default.
    kernel : mapping, optional
        The study's ``[kernel]`` table, e.g. ``{"name": "matern52", "ard": True}``.
    engine_options : mapping, optional
        Options per engine, e.g. ``{"mcmc": {"draws": 500, "chains": 2}}``.
    n_restarts : int, optional
        Optimiser restarts (the study default when omitted).
    psis : bool
        Check every Gaussian approximation by Pareto-smoothed importance sampling
        (:func:`gpc_compare.psis`; cheap beside the fits): the report then starts each
        data set's findings with a recommendation, the cheapest engine whose k-hat is
        below the threshold on every split.
    seed : int, optional
        The old name of ``random_seed`` (accepted with a DeprecationWarning).
    max_minutes : float or None
        Refuse (ValueError, before anything is written) a study whose plan
        (:mod:`gpc_compare.study.plan`: each engine's time and memory, estimated from n,
        d and the engine; printed to ``progress``) exceeds this many minutes of wall
        time; None: never.
    **data_options
        Of the file data set: ``positive``, ``categorical``, ``missing``, ``features``,
        ``subsample`` (see :func:`gpc_compare.study.datafiles.file_dataset`). Each
        option here is a flag of ``gpc-compare compare`` too (``random_seed`` is
        ``--seed``, ``engine_options`` ``--engine-option ENGINE.NAME=VALUE``, ``kernel``
        ``--kernel NAME --ard``).

    Returns
    -------
    Comparison
        ``.table`` (the tidy DataFrame), ``.summary()``, ``.report(path)``.

    Raises
    ------
    ValueError
        For data or settings the study runner refuses (the message says which and what
        to do), e.g. a target with one class or a column with missing values; or
        :class:`~gpc_compare.study.OutputBusy` when another run is writing to
        ``output/NAME``. Nothing is written to ``output`` then: the data are checked
        first, and the folder's lock is taken before its first file is written.
    """
    unknown = sorted(set(data_options) - set(DATA_OPTIONS))
    if unknown:
        raise TypeError(f"compare() got unexpected keyword argument(s) {unknown}")
    if seed is not None:  # (one vocabulary: random_seed in Python, as gc.fit's)
        warnings.warn(
            "compare(seed=...) is now compare(random_seed=...); the old name will be removed",
            DeprecationWarning,
            stacklevel=2,
        )
        random_seed = seed
    check_label(name, "name")
    frame, target = xy_frame(X, y)
    text = frame.to_csv(index=False)
    check_labels_survive(frame[target].to_numpy(), text, target)
    fields = study_fields(
        "data.csv",
        target,
        name=name,
        label=name,
        engines=engines,
        likelihood=likelihood,
        folds=folds,
        n_repeats=n_repeats,
        policy=policy,
        seed=random_seed,
        kernel=kernel,
        engine_options=engine_options,
        n_restarts=n_restarts,
        psis=psis,
        **data_options,
    )
    result_dir = None if output is None else Path(output) / name
    plan = plan_data_study(fields, text, workers, result_dir, max_minutes, progress)
    keep = None
    if output is None:
        keep = tempfile.TemporaryDirectory(prefix="gpc_compare_")
        output = keep.name
    result_dir = Path(output) / name
    result_dir.mkdir(parents=True, exist_ok=True)  # (for its lock: nothing is written yet)
    with output_lock(result_dir) as lock:  # before anything is written there
        study_file = result_dir / "study.toml"
        _write(result_dir / "data.csv", text)  # (resume: an unchanged file is left alone)
        config = StudyConfig.from_dict(fields, study_file)  # (its data file relative to it)
        _write(study_file, toml_text(fields))  # kept with the results: the report reads it
        _run_info(config, study_file, workers, scheduler)
        summary = run_study(
            config, output, workers=workers, scheduler=scheduler, progress=progress, lock=lock
        )
    failures = summary.failures + summary.failed_earlier
    if failures:
        warnings.warn(
            f"{len(failures)} job(s) failed (records in {result_dir / 'jobs'}): "
            + "; ".join(failures[:3]),
            RuntimeWarning,
            stacklevel=2,
        )
    return Comparison(summary.table, result_dir, config, summary, keep, plan)


@dataclass(frozen=True)
class PreparedStudy:
    """The study of a data file, checked and not yet written (:func:`prepare_file_study`):
    :meth:`claim` takes its folder's lock, then writes it there.

    Attributes
    ----------
    study_file : Path
        Where the study goes: ``OUTPUT/NAME/study.toml``.
    config : StudyConfig
        The study, loaded (every check has run).
    text : str
        The study file's text.
    workers, scheduler : optional
        How the run will go (recorded in ``run.json`` beside the study).
    """

    study_file: Path
    config: StudyConfig
    text: str
    workers: int | None = None
    scheduler: str | None = None

    @property
    def result_dir(self) -> Path:
        """The study's folder, ``OUTPUT/NAME``."""
        return self.study_file.parent

    @contextmanager
    def claim(self, *, wait: bool = False, stream: TextIO | None = None) -> Iterator[Held]:
        """Take the folder's lock, then write ``study.toml`` and ``run.json`` there; the
        lock (for :func:`~gpc_compare.study.run_study`'s ``lock=``) is held for the
        ``with`` block.

        Raises
        ------
        ValueError
            Another run holds the folder (:class:`~gpc_compare.study.OutputBusy`), or the
            folder holds the study of another data file
            (:func:`~gpc_compare.study.datafiles.check_same_data`):
            nothing is written then.
        """
        self.result_dir.mkdir(parents=True, exist_ok=True)  # (for its lock)
        with output_lock(self.result_dir, wait=wait, stream=stream) as lock:
            check_same_data(self.result_dir, self.config.datasets)
            _write(self.study_file, self.text)
            _run_info(self.config, self.study_file, self.workers, self.scheduler)
            yield lock


def prepare_file_study(
    data: str | os.PathLike[str],
    target: str,
    output: str | os.PathLike[str],
    *,
    name: str | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    **settings: Any,
) -> PreparedStudy:
    """Check the study of a data file (to go to ``output/NAME/study.toml``); nothing is
    written until :meth:`PreparedStudy.claim`.

    Parameters
    ----------
    data : path
        The CSV, gzip CSV or Parquet file; the study names it relative to itself.
    target : str
        The column of class labels.
    output : path
        The results folder; the study goes to ``output/NAME/study.toml``.
    name : str, optional
        The study name and data set label (default: the file name without its endings,
        with characters other than letters, digits and ``_.-`` made ``_``).
    workers, scheduler : optional
        How the run will go (recorded in ``run.json`` beside the study).
    **settings
        ``engines``, ``likelihood``, ``folds``, ``policy``, ``seed`` and the data options
        of :func:`study_text`.

    Returns
    -------
    PreparedStudy
        The study file, the study (loaded, so every check has run) and its text.

    Raises
    ------
    ValueError
        (a :class:`~gpc_compare.study.StudyError`) for data or settings the study runner
        refuses, the file named: nothing is written.
    """
    data = Path(data)
    if name is None:
        stem = data.name.split(".")[0]
        name = "".join(c if c.isascii() and (c.isalnum() or c in "_.-") else "_" for c in stem)
        name = name.strip(".") or "data"
    check_label(name, "--name")
    result_dir = Path(output) / name
    study_file = result_dir / "study.toml"
    try:  # relative to the study's folder: the results and data move together
        relative = Path(os.path.relpath(data.resolve(), result_dir.resolve())).as_posix()
    except ValueError:  # (another drive, on Windows: no relative path)
        relative = str(data.resolve())
    fields = study_fields(relative, target, name=name, label=name, **settings)
    config = StudyConfig.from_dict(fields, study_file)  # (the folder need not exist)
    return PreparedStudy(study_file, config, toml_text(fields), workers, scheduler)


def study_fields(
    file: str,
    target: str,
    *,
    name: str,
    label: str | None = None,
    engines: Sequence[str] = ("laplace", "ep", "mcmc"),
    likelihood: str = "probit",
    folds: int = 5,
    policy: str = "optimize",
    seed: int = 0,
    n_repeats: int | None = None,
    kernel: Mapping[str, Any] | None = None,
    engine_options: Mapping[str, Mapping[str, Any]] | None = None,
    n_restarts: int | None = None,
    psis: bool = True,
    **data_options: Any,
) -> dict[str, Any]:
    """The fields of a study of one data file, as a study file holds them (what
    :meth:`~gpc_compare.study.StudyConfig.from_dict` takes and :func:`toml_text` writes).

    Parameters
    ----------
    file : str
        The data file, as the study names it (relative to the study file's folder).
    target, name, label, engines, likelihood, folds, policy, seed, n_repeats
        As :func:`compare`; ``label`` names the data set (default: the file's stem).
        ``n_repeats`` None leaves it out (the study's default, ceil(10 / folds)).
    kernel, engine_options, n_restarts
        The ``[kernel]`` table, per-engine options, optimiser restarts.
    psis : bool
        Run the Pareto-k check of every Gaussian approximation (the study's ``psis``).
    **data_options
        ``features``, ``positive``, ``categorical``, ``missing``, ``subsample``.

    Returns
    -------
    dict
    """
    if isinstance(engines, str) or not engines:
        raise ValueError(f"engines: give a sequence of engine names, got {engines!r}")
    options = dict(engine_options or {})
    unknown = sorted(set(options) - set(engines))
    if unknown:
        raise ValueError(f"engine_options: {unknown} are not among the engines {list(engines)}")
    dataset = {"file": file, "target": target}
    if label is not None:
        dataset["label"] = label
    dataset.update((k, v) for k, v in data_options.items() if v is not None)
    hyperparameters = {"policy": policy}
    if n_restarts is not None:
        hyperparameters["n_restarts"] = n_restarts
    description = f"Your own data: {file}, target {target!r}."
    if not any("reference" in _capabilities(e) for e in engines):
        description += (
            " No reference engine among the engines (mcmc): nothing is compared with one, "
            "so the report has no section 'Against the reference'."
        )
    fields = {
        "name": name,
        "description": description,
        "seed": seed,
        "likelihood": likelihood,
        "datasets": [dataset],
        "splits": {"kind": "kfold", "n_splits": folds}
        | ({} if n_repeats is None else {"n_repeats": n_repeats}),
        "hyperparameters": hyperparameters,
        "psis": bool(psis),
        "evidence_profiles": False,  # (the report refits nothing: issue 34)
    }
    if kernel:
        fields["kernel"] = dict(kernel)
    fields["engines"] = {engine: dict(options.get(engine, {})) for engine in engines}
    return plain(fields)


def _capabilities(engine: str) -> frozenset[str]:
    """An engine's capabilities; none for a name that is no engine (the study refuses it,
    naming it)."""
    from .engines import capabilities

    try:
        return capabilities(engine)
    except ValueError:
        return frozenset()


def study_text(file: str, target: str, **settings: Any) -> str:
    """The TOML text of a study of one data file (what :func:`compare` keeps with its
    results): :func:`toml_text` of :func:`study_fields` (same arguments)."""
    return toml_text(study_fields(file, target, **settings))


def _write(path: Path, text: str) -> None:
    """Write ``path`` unless it already holds ``text`` (a rerun leaves the file as it was);
    a link there is replaced, never written through (:func:`.study.output.atomic_write`)."""
    if path.is_symlink() or not path.is_file() or path.read_text() != text:
        atomic_write(path, text.encode())


def _run_info(config: StudyConfig, study_file: Path, workers, scheduler) -> None:
    """``run.json``: the study file the report's command line names, and each data file
    with its SHA-256 (:func:`~gpc_compare.study.datafiles.check_same_data` reads them)."""
    try:
        shown = str(study_file.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        shown = str(study_file)
    info = {
        "study_file": shown,
        "output": str(study_file.parent.parent),
        "scheduler": scheduler,
        "workers": workers,
        "data": {
            spec.label: {"file": spec.file, "sha256": spec.data.info.get("sha256")}
            for spec in config.datasets
            if spec.file is not None and spec.data is not None
        },
    }
    atomic_write(study_file.parent / "run.json", json.dumps(info, indent=1).encode())
