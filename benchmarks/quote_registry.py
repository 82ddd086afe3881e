"""Every time the documentation quotes, with how ``benchmarks/quoted_times.py`` measures it.

One :class:`Quote` per quoted time: where it stands (a file and a phrase found once in it,
whitespace collapsed as :func:`quote_scan.normalise` does), the seconds quoted, and its
measurement: :class:`Code` (Python timed in a fresh interpreter), :class:`Command` (a
subprocess, timed whole or a time read from what it wrote), :class:`Table` (a benchmark
script's committed measurement), :class:`Records` (a study's time, computed from its
committed records by ``benchmarks/study_times.py``), or none, with the reason (``pending``:
not built yet; ``history``: a record of one past run or of code since changed, which no run
now repeats; ``estimate``: a prediction for a run never made).
Entries with ``quoted=None`` are quoted nowhere: the cases issue 34's newcomer timed, kept
so the table shows them. ``NOT_TIMES`` lists the scanner's matches that are not times.
``tests/docs/test_quoted_times.py`` holds the scan and this registry to each other.
"""

from __future__ import annotations

from quote_measures import (
    DATA_30,
    DATA_100,
    N5000,
    NUTPIE_SETUP,
    PY,
    TEN_LINES,
    TMP,
    WEAK,
    Code,
    Command,
    Quote,
    Records,
    Table,
    index_row,
)
from study_times import study_time

__all__ = ["NOT_TIMES", "QUOTES", "Code", "Command", "Quote", "Records", "Table", "by_key"]
__all__ += ["PY", "TMP"]


def _cli(*args: str) -> tuple[str, ...]:
    """``gpc-compare ARGS`` as ``python -m gpc_compare ARGS`` (the installed console script
    may run another checkout's code)."""
    return (PY, "-m", "gpc_compare", *args)


CRABS = "compare examples/crabs.csv --target sex"


def _study(script: str) -> Command:
    """``gpc-compare run studies/SCRIPT --output {tmp}``."""
    return Command(_cli("run", f"studies/{script}", "--output", TMP))


FULL_BAYES = "docs/guide/hyperparameters.md"
TOML_PHRASE = "quadratic in their number: 1.3 s of CPU for 10,000, 5.8 s for 20,000"
WEAK_PHRASE = "the two routes take about the same time (0.22 s and 0.23 s,"


def _computed(key: str, script: str, also: str = "") -> Quote:
    """The index's time cell of ``script`` (results/README.md): computed from the study's
    committed records by ``benchmarks/study_times.py``, so the registry follows them (a cell
    that differs is a place not found); ``also``: the rest of the row's command cell."""
    time = study_time(script)
    return Quote(
        key,
        f"gpc-compare run studies/{script}: its committed records' time",
        (index_row(script + also, time.cell),),
        time.seconds,
        Records(script),
        clock="records",
    )


QUOTES: tuple[Quote, ...] = (
    Quote(
        "quick_study",
        "the README's main job: gpc-compare run studies/quick.toml into a fresh folder",
        (
            ("README.md", "the run about 1.5 minutes on 2 cores, 91 s measured on a fresh clone"),
            ("studies/quick.toml", "(91 s on 2 cores, measured on a fresh clone"),
            index_row("quick.toml", "1.5 min (91 s measured on a fresh clone)"),
        ),
        91.0,
        _study("quick.toml"),
        long=True,
    ),
    Quote(
        "test_suite",
        "the README's second command: python -m pytest -n auto",
        (("README.md", "with the docs build, about 7 minutes on 2 cores"),),
        420.0,
        Command((PY, "-m", "pytest", "-n", "auto", "-q", "-p", "no:cacheprovider")),
        long=True,
    ),
    Quote(
        "svgp_fit_100k",
        "one SVGP fit at n = 100,000, M = 256 (benchmarks/bench_sparse.py)",
        (("README.md", "a fit in 5.97 s, 67.7 floors"),),
        5.97,
        Table(
            "bench_sparse.py",
            "results/benchmarks/sparse.csv",
            (("n", "100000"), ("what", "svgp_fit")),
        ),
    ),
    Quote(
        "svgp_full_fit_100k",
        "SVGP's full hyperparameter fit at n = 100,000 (benchmarks/bench_sparse.py)",
        (
            ("docs/benchmarks.md", "(150 s on 2 cores)"),
            ("docs/engines/sparse.md", "took 150 s on 2 cores"),
        ),
        150.0,
        Table(
            "bench_sparse.py",
            "results/benchmarks/sparse.csv",
            (("n", "100000"), ("what", "svgp_full_fit_seconds")),
        ),
    ),
    Quote(
        "svgp_letter",
        "the multi-class SVGP fit on letter (benchmarks/bench_svgp_multiclass.py)",
        (("docs/benchmarks.md", "624 s on one BLAS thread"),),
        624.0,
        Table(
            "bench_svgp_multiclass.py",
            "results/benchmarks/svgp_multiclass.csv",
            (("part", "letter"), ("what", "fit_seconds")),
        ),
    ),
    Quote(
        "crabs_report_fit",
        "the fit time a report names beside its recommendation: gpc-compare compare "
        "examples/crabs.csv --target sex (default engines), EP's mean fit seconds as the "
        "report prints them (two significant figures)",
        (("docs/guide/reading_a_report.md", "(0.003 s a fit)"),),
        0.003,
        Command(
            _cli(*CRABS.split(), "--output", TMP),
            parse=("crabs/report.md", r"cheapest approximation \(([0-9.]+) s a fit\)", 1.0),
        ),
        clock="parsed",
        long=True,
    ),
    _computed("approximations", "approximations.toml"),
    _computed("approximations_logistic", "approximations_logistic.toml"),
    _computed("approximations_grid", "approximations_grid.py"),
    _computed("kernels", "kernels.toml"),
    _computed("ep_loo", "ep_loo.toml"),
    _computed("gold_standard", "gold_standard.py"),
    _computed("trust_study", "trust.py", "`; `gpc-compare run studies/trust_sonar.py"),
    _computed(
        "trust_optima",
        "trust_at_laplace.toml",
        " studies/trust_at_kl.toml studies/trust_optima.py",
    ),
    _computed(
        "approximations_multiclass",
        "approximations_multiclass.toml",
        " studies/approximations_multiclass_probit.toml"
        " studies/approximations_multiclass_vowel.toml"
        " studies/approximations_multiclass_vehicle.toml"
        " studies/approximations_multiclass_robustmax.toml",
    ),
    _computed("multiclass_sparse", "multiclass_sparse.toml"),
    _computed("multiclass_sparse_large", "multiclass_sparse_large.toml"),
    _computed("loo_study", "loo.py"),
    _computed("synthetic_2d", "synthetic_2d.py"),
    _computed("iris", "iris.py"),
    _computed("scale", "scale.py"),
    Quote(
        "mcmc_multiclass_fit",
        "one Iris fold of the multi-class MCMC, compiled density against nutpie compiling PyMC",
        (
            (
                "gpc_compare/engines/_compiled_multiclass.py",
                "the softmax 8-10 s (sampling 5-7), where nutpie compiling the PyMC model took 22"
                " s (compilation 10, sampling 9) with PyTensor's kernel cache warm and 83 s (61 +"
                " 13) with it empty; the multinomial probit 53-70 s (sampling 51-67) against 127 s"
                " (36 + 87) and 228 s (96 + 127)",
            ),
            (
                "gpc_compare/engines/_compiled_multiclass.py",
                "empty numba cache takes 10 s, once; loading it from the cache 0.1 s",
            ),
        ),
        10.0,
        reason="history: benchmarks/bench_mcmc_multiclass.py at load 7-10, CPU seconds",
    ),
    Quote(
        "multiclass_gradient",
        "one gradient of the compiled softmax density at n = 677, C = 4 (synthetic), after the"
        " products skipped H's zeros",
        (
            (
                "gpc_compare/engines/_compiled_multiclass.py",
                "3.7 ms against 6.1 at n = 677, C = 4, r = 677",
            ),
        ),
        0.0037,
        reason="history: timed once beside the code before the change (one after the other,"
        " idle machine); no run repeats the old code",
    ),
    Quote(
        "softmax_gumbel_eval",
        "one evaluation of E_q[log softmax] (n = 120, C = 3, sd 24): the Gumbel-max integrals"
        " against the 2-D grid they replace",
        (
            (
                "gpc_compare/likelihoods/_softmax_gumbel.py",
                "0.07 s for 120 inputs at sd 24, against 22 s for the grid",
            ),
        ),
        0.07,
        reason="history: the grid is no longer used at sd 24 (measured at load 10-13, CPU)",
    ),
    Quote(
        "trust_sonar",
        "gpc-compare run studies/trust_sonar.py into a fresh folder",
        (),
        None,
        _study("trust_sonar.py"),
        long=True,
        reason="quoted as 'a few minutes' until measured; the docstring now names this table",
    ),
    Quote(
        "laplace_1d",
        "studies/laplace_1d.py into a fresh folder",
        (
            ("studies/laplace_1d.py", "(about 10 s, almost all of it MCMC"),
            ("studies/laplace_1d.py", "(from the repository root; about 10 s)"),
            index_row("laplace_1d.py", "about 10 s"),
        ),
        10.0,
        _study("laplace_1d.py"),
    ),
    Quote(
        "bayesian_logistic",
        "studies/bayesian_logistic.py into a fresh folder",
        (
            ("studies/bayesian_logistic.py", "(about 15 s: EP on 500 points"),
            ("studies/bayesian_logistic.py", "from the repository root (about 15 s)"),
            index_row("bayesian_logistic.py", "15 s"),
        ),
        15.0,
        _study("bayesian_logistic.py"),
        long=True,
    ),
    Quote(
        "bayesian_logistic_ep",
        "the study's EP fit on 500 points (example2_engine('ep'))",
        (("studies/bayesian_logistic.py", "EP on 500 points ~3 s"),),
        3.0,
        Code(
            "b.example2_engine('ep')",
            "import sys\nsys.path.insert(0, 'studies')\nimport bayesian_logistic as b",
            repeats=1,
        ),
    ),
    Quote(
        "keel_magic",
        "gc.datasets.keel.load_magic(): the 19020 rows read",
        (("gpc_compare/datasets/keel.py", "the 19020 rows of magic take about 60 ms"),),
        0.06,
        Code("keel.load_magic()", "from gpc_compare.datasets import keel", repeats=5),
    ),
    Quote(
        "weak_columns",
        "marginal_variances at n = 2000 with a quarter of the sites weak (W = 0)",
        (("gpc_compare/posterior/gaussian.py", WEAK_PHRASE),),
        0.22,
        Code("marginal_variances(K, W, sW, L)", WEAK),
    ),
    Quote(
        "weak_columns_by_V",
        "the same diagonal from V = L^-1 sW K (the route not taken at w = n / 4)",
        (("gpc_compare/posterior/gaussian.py", WEAK_PHRASE),),
        0.23,
        Code(
            "Linv = lapack.dtrtri(L, lower=1)[0]\nV = solve_lower(L, sW[:, None] * K)\n"
            "d = np.diag(K) - np.einsum('ij,ij->j', V, V)",
            WEAK,
        ),
    ),
    Quote(
        "psis_laplace_5000",
        "gc.psis of a Laplace fit at n = 5,000 (2-D synthetic, probit, SE(1, 1), 4000 draws): CPU",
        (("gpc_compare/trust/__init__.py", "Laplace 20.5 s of CPU over both BLAS threads"),),
        20.5,
        Code(
            "gc.psis(post, draws=4000, random_seed=0)",
            N5000 + "post = gc.fit(X, y, method='laplace', kernel=k, likelihood='probit')",
            repeats=1,
        ),
        clock="cpu",
        long=True,
    ),
    Quote(
        "psis_laplace_5000_loaded",
        "the same, wall, on the machine at a load of 13",
        (
            (
                "gpc_compare/trust/__init__.py",
                "(137 s wall on this machine, shared with a load of 13)",
            ),
        ),
        137.0,
        reason="history: a record of one run under a load of 13, as the docstring says",
    ),
    Quote(
        "psis_fitc_ep_5000",
        "gc.psis of a FITC-EP fit at n = 5,000, M = 128 (as psis_laplace_5000): CPU",
        (("gpc_compare/trust/__init__.py", "M = 128, 5.4 s and 4.2 s of CPU"),),
        5.4,
        Code(
            "gc.psis(post, draws=4000, random_seed=0)",
            N5000 + "post = gc.fit(X, y, method='fitc_ep', kernel=k, likelihood='probit', "
            "inducing=128, random_seed=0)",
            repeats=1,
        ),
        clock="cpu",
    ),
    Quote(
        "psis_svgp_5000",
        "gc.psis of an SVGP fit at n = 5,000, M = 128 (as psis_laplace_5000): CPU",
        (("gpc_compare/trust/__init__.py", "M = 128, 5.4 s and 4.2 s of CPU"),),
        4.2,
        Code(
            "gc.psis(post, draws=4000, random_seed=0)",
            N5000 + "post = gc.fit(X, y, method='svgp', kernel=k, likelihood='probit', "
            "inducing=128, random_seed=0)",
            repeats=1,
        ),
        clock="cpu",
    ),
    Quote(
        "psis_svgp_quadrature",
        "SVGP's logistic quadrature per case and draw in gc.psis",
        (("gpc_compare/trust/__init__.py", "about 15 microseconds each"),),
        15e-6,
        reason="pending: a time per case and draw needs the quadrature timed alone",
    ),
    Quote(
        "toml_depth",
        "tomllib reading one key of 10,000 dotted parts (what studyfile.MAX_DEPTH refuses): CPU",
        (("gpc_compare/study/studyfile.py", TOML_PHRASE),),
        1.3,
        Code("tomllib.loads(text)", "import tomllib\ntext = 'a' + '.a' * 9999 + ' = 1'", 1),
        clock="cpu",
    ),
    Quote(
        "toml_depth_20k",
        "the same with 20,000 dotted parts: CPU",
        (("gpc_compare/study/studyfile.py", TOML_PHRASE),),
        5.8,
        Code("tomllib.loads(text)", "import tomllib\ntext = 'a' + '.a' * 19999 + ' = 1'", 1),
        clock="cpu",
    ),
    Quote(
        "jobs_100k",
        "expanding a study of 100,000 jobs before the first ran (before [limits])",
        (("gpc_compare/study/limits.py", "100,000 jobs took 30 s before the first started"),),
        30.0,
        reason="history: the time before max_jobs refused such a study at load",
    ),
    Quote(
        "nutpie_compile",
        "nutpie.compile_pymc_model of the engine's whitened PyMC model at n = 300 (2-D "
        "synthetic, probit, SE(1, 1)): the route the MCMC engine avoids",
        (("gpc_compare/engines/_compiled.py", "about 10 s at n = 300"),),
        10.0,
        Code("nutpie.compile_pymc_model(model)", NUTPIE_SETUP, repeats=1),
    ),
    Quote(
        "mcmc_whiten_laplace",
        "MCMC with whiten='laplace' on digits 3 vs 5, sigma_f^2 = 1e5",
        (("gpc_compare/engines/mcmc.py", "bulk ESS 201 in 82 s"),),
        82.0,
        reason="pending: the run's length-scale and draws are not stated",
    ),
    Quote(
        "mcmc_whiten_ep",
        "MCMC with whiten='ep' on digits 3 vs 5, sigma_f^2 = 1e5",
        (("gpc_compare/engines/mcmc.py", "bulk ESS 1062 in 65 s"),),
        65.0,
        reason="pending: as mcmc_whiten_laplace",
    ),
    Quote(
        "time_left_bug",
        "the progress line's estimate in issue 34 (before the fix)",
        (("gpc_compare/study/runner.py", '"~1h40m left" at 1 of 15 jobs of a 14-minute run'),),
        6000.0,
        reason="history: issue 34's report of the estimate the fix removed",
    ),
    Quote(
        "time_left_run",
        "the run that estimate was made in (issue 34)",
        (("gpc_compare/study/runner.py", '"~1h40m left" at 1 of 15 jobs of a 14-minute run'),),
        840.0,
        reason="history: as time_left_bug",
    ),
    # issue 34's cases, quoted nowhere now: measured so the table shows them
    Quote(
        "import",
        "import gpc_compare in a fresh interpreter",
        (),
        None,
        Code("import gpc_compare", repeats=3, fresh=True),
    ),
    Quote(
        "help",
        "gpc-compare --help (as python -m gpc_compare --help)",
        (),
        None,
        Command(_cli("--help"), repeats=3),
    ),
    Quote(
        "ten_lines",
        "the README's ten lines, in a fresh interpreter",
        (),
        None,
        Code("exec(code, {})", TEN_LINES, repeats=1),
    ),
    Quote(
        "n_restarts",
        "gc.fit(X, y, kernel=k, optimize=True, n_restarts=3, random_seed=0), "
        "the README's 100 cases, a session's first call",
        (),
        None,
        Code(
            "gc.fit(X, y, kernel=k, optimize=True, n_restarts=3, random_seed=0)",
            DATA_100,
            fresh=True,
        ),
    ),
    Quote(
        "to_inference_data",
        "EP's to_inference_data(random_seed=0), the README's 100 cases, a session's first "
        "call (ArviZ imported in it)",
        (),
        None,
        Code(
            "post.to_inference_data(random_seed=0)",
            DATA_100 + "\npost = gc.fit(X, y, method='ep', kernel=k)",
            fresh=True,
        ),
    ),
    Quote(
        "ep_loo_objective",
        "gc.fit(..., method='ep', optimize=True, objective='loo'), the README's 100 cases",
        (),
        None,
        Code(
            "gc.fit(X, y, method='ep', kernel=k, optimize=True, objective='loo')",
            DATA_100,
            repeats=1,
        ),
    ),
    Quote(
        "full_bayes",
        "gc.fit(..., method='mcmc', full_bayes=True, random_seed=0), the README's 100 cases: "
        "CPU until stopped unfinished",
        ((FULL_BAYES, "had not finished after 637 s of CPU"),),
        637.0,
        reason="history: one run stopped unfinished at load 12 (a lower bound; an idle run "
        "would take over 10 minutes, too long for this table)",
    ),
    Quote(
        "full_bayes_30",
        "gc.fit(..., method='mcmc', full_bayes=True, random_seed=0) on 30 cases drawn as the "
        "README's: CPU",
        ((FULL_BAYES, "on 30 cases drawn the same way it took 45 s of CPU on an idle machine"),),
        45.0,
        Code(
            "gc.fit(X, y, method='mcmc', kernel=k, full_bayes=True, random_seed=0)",
            DATA_30,
            repeats=1,
        ),
        clock="cpu",
        long=True,
    ),
    Quote(
        "crabs_compare",
        "gpc-compare compare examples/crabs.csv --target sex --engines laplace,ep --folds 3 "
        "(the README's)",
        (),
        None,
        Command(_cli(*CRABS.split(), "--engines", "laplace,ep", "--folds", "3", "--output", TMP)),
    ),
)

_EXPECTATION = "gpc_compare/likelihoods/_expectation.py"
#: Matches of the scan that are not times: (file, phrase, why).
NOT_TIMES: tuple[tuple[str, str, str], ...] = (
    ("gpc_compare/kernels/dot_product.py", "sigma_f^2 s (1 + x.x')", "s: a symbol"),
    ("gpc_compare/study/plan.py", "< 1 s", "the plan's format for an estimate"),
    (_EXPECTATION, "m = 11 s", "s: a standard deviation"),
    (_EXPECTATION, "max(|f| - f*, 0) / (8 s)", "as above"),
    (_EXPECTATION, "f* = 8 s / b - 1", "as above"),
    (_EXPECTATION, "wider than 8 s, equal panels of width 8 s", "as above"),
    (_EXPECTATION, "u(m + 10 s) - u(m - 10 s)", "as above"),
    (_EXPECTATION, "|m| > 100 s", "as above"),
    (_EXPECTATION, "|m| / (8 s)", "as above"),
)


def by_key() -> dict[str, Quote]:
    """The registry by key (keys are unique: the test checks)."""
    return {q.key: q for q in QUOTES}
