"""A study: the same problems through every engine, scored the same way.

A study is a TOML file (see ``studies/`` and :func:`load_study`) naming the data sets,
the engines with their options, the likelihood, the kernel, the hyperparameter policy,
the splits and the seed. :func:`expand` turns it into jobs, one per data set, split and
engine; :func:`run_study` runs them on local worker processes (or a Dask cluster), writes
each job's result atomically as it finishes, skips finished jobs when rerun, records a
job that raises (with its traceback) and goes on, and finally assembles one tidy table,
``results/NAME/results.csv``: one row per data set, split, engine and metric.

Hyperparameter policies (``[hyperparameters] policy``):

``"fixed"``
    Every engine at the kernel's given values.
``"optimize"``
    Engines with an evidence gradient (Laplace, EP) each maximise their own evidence
    (type-II maximum likelihood, or EP's LOO objective with the engine option
    ``objective = "loo"``). An engine without one (MCMC) runs at the values the
    ``source`` engine (default EP) selected.
``"shared"``
    The ``source`` engine maximises its evidence; every engine then runs at those values,
    so the approximations are compared with the MCMC reference at the same
    hyperparameters.
``"full_bayes"``
    As ``"optimize"``, except that an engine that can sample the hyperparameters (MCMC)
    does, with normal priors on their logs centred on the kernel's given values (sd 1).
``"grid"``
    Every engine at every point of ``[hyperparameters.grid]`` (one axis per hyperparameter,
    a list of values or ``{start, stop, num}``): evidence surfaces, as in Kuss & Rasmussen
    (2005, Fig. 4).

Splits (``[splits] kind``): ``"kfold"``, ``"holdout"``, or ``"none"`` (every case trains,
nothing is held out: evidence studies). Gold-standard evidence estimators
(``[evidence.NAME]``, SMC or AIS) run as jobs of their own beside the engines, at the
hyperparameters an engine without an evidence gradient would use.

Comparisons with the reference engine (default: the first engine that declares the
``"reference"`` capability, MCMC): latent means and variances at the training inputs, the
mean KL divergence between the Gaussian marginals, and the evidence gap (when the
reference computed its gold-standard evidence), for every engine that ran at the same
hyperparameters as the reference on that split.

The modules, in the order they import one another: ``output`` (every file written in an
output folder, never through a link), ``problem`` (a job's data, split and kernel),
``kernels_config`` (a study's kernel or kernel axis), ``limits`` (what a study may ask for,
refused at load beyond it), ``studyfile`` (reading and writing a study file's TOML),
``config`` (study files), ``jobs`` (expansion), ``record`` (the typed job record and its
schema), ``records`` (job records on disk), ``worker`` (one job), ``executors`` (where jobs
run), ``lock`` (one run per output directory), ``table`` (the tidy table), ``runner``
(:func:`run_study`), ``scripts`` (figure-study scripts and the study list).
"""

from .config import DatasetSpec, StudyConfig, StudyError, load_study
from .executors import SchedulerLost, Terminated, WorkerDied, raise_terminated
from .jobs import Job, expand
from .lock import OutputBusy
from .record import JobRecord, RecordError
from .records import load_records, read_records
from .runner import RunSummary, run_study
from .scripts import check_study_script, list_studies, load_study_script
from .table import TABLE_COLUMNS, TIMING_COLUMNS, assemble
from .worker import run_job

__all__ = [
    "TABLE_COLUMNS",
    "TIMING_COLUMNS",
    "DatasetSpec",
    "Job",
    "JobRecord",
    "OutputBusy",
    "RecordError",
    "RunSummary",
    "SchedulerLost",
    "StudyConfig",
    "StudyError",
    "Terminated",
    "WorkerDied",
    "assemble",
    "check_study_script",
    "expand",
    "list_studies",
    "load_records",
    "load_study",
    "load_study_script",
    "raise_terminated",
    "read_records",
    "run_job",
    "run_study",
]
