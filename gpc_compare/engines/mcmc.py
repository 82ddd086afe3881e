"""The MCMC reference: the same GP classifier sampled with PyMC, and a gold-standard evidence.

At fixed hyperparameters the model is written non-centred, f = m + L v with v ~ N(0, I)
and L = chol(K) computed once outside the graph, or by default (``parameterization``) in
the eigenbasis of K (the directions above 1e-8 of its mean prior variance), whitened by
EP's approximation (or Laplace's; :mod:`._whitening`): fewer dimensions, cheaper
gradients and shorter NUTS trajectories;
the likelihood is log Phi(y f) through PyMC's stable log normal CDF (probit),
-softplus(-y f) (logistic), or a Normal with mean f and the noise variance (Gaussian: GP
regression, sampled for checking against its closed form). NUTS runs on nutpie when it
is installed, otherwise on PyMC's own sampler (``nuts_sampler`` chooses): the whitened
binary and multi-class models' densities are compiled once for every problem
(:mod:`._compiled`, :mod:`._compiled_multiclass`: the same densities as the PyMC models',
which PyMC's sampler runs), the other models (full Bayes, "prior") through PyMC;
where nutpie cannot start, PyMC's sampler runs instead and the diagnostics say so
(``fallback``; :mod:`._sampling`).

The draws are returned as a :class:`~gpc_compare.posterior.SamplePosterior`, which
predicts by conditioning every draw on the GP; their convergence is judged by
:func:`gpc_compare.diagnostics.diagnose`. The gold-standard log marginal likelihood
(``evidence=True``) is :func:`gpc_compare.evidence.estimate`'s: sequential Monte Carlo with
an adaptive schedule (``evidence="smc"``, the default) or annealed importance sampling
(``"ais"``; Neal 2001, Kuss and Rasmussen 2005), from EP's approximation or from the prior,
run by the same function (:func:`gpc_compare.annealing.estimate.estimate`) with the same seed.

With the softmax or multinomial probit likelihood (C classes) the model has C latent GPs
sharing the kernel, F = G U or F = L V column by column (:mod:`._mcmc_multiclass`: U
whitened by the multi-class KL approximation, Laplace's or nested EP's C x C sites), and a
categorical likelihood with ``logit_p = F`` or the multinomial probit by an adaptive
Gauss-Hermite rule; prediction conditions every draw's C functions on the GP (independent
given the draw, with the same conditional variance) and integrates the likelihood against
that Gaussian (:class:`~gpc_compare.posterior.SoftmaxSamplePosterior`). Fixed
hyperparameters only: full Bayes and the engine's ``evidence`` are binary only (the
multi-class evidence is :func:`gpc_compare.evidence.estimate`'s).

Here: the options (:class:`MCMCOptions`), the engine (:class:`MCMCEngine`) and the fit,
which builds the model (:mod:`._mcmc_models`), runs NUTS (:func:`._sampling.run_nuts`)
and the evidence estimator, and makes the posterior.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np

from .._convergence import peak_bytes
from .._validation import (
    OptionError,
    check_flag,
    check_fraction,
    check_kernel_matrix,
    check_random_seed,
    choice,
    count,
    optional,
)
from ..annealing.estimate import METHODS, STARTS, EvidenceOptions, Prepared
from ..annealing.estimate import estimate as estimate_evidence
from ..diagnostics import Diagnostics
from ..kernels import Kernel
from ..likelihoods import MultinomialProbit, Softmax
from ..numerics import JITTER, cholesky
from ..posterior import Convergence, SamplePosterior, SoftmaxSamplePosterior
from . import ep
from ._engine import Engine, EngineOptions, Problem, engine_options, option
from ._mcmc_models import (
    compiled_model,
    fixed_model,
    full_bayes_model,
    prior_moments,
    whiten,
)
from ._mcmc_multiclass import (
    block_whiten,
    check_parameterization,
    compiled_multiclass_model,
    multiclass_model,
)
from ._sampling import NutsSettings, default_sampler, run_nuts
from .laplace_softmax import check_codes

__all__ = [
    "ENGINE",
    "Diagnostics",
    "MCMCEngine",
    "MCMCOptions",
    "SamplePosterior",
    "SoftmaxSamplePosterior",
    "infer",
]


def _check_priors(value: Any, name: str) -> dict[str, tuple[float, float]]:
    """``{hyperparameter: (mu, sigma)}`` with finite mu and sigma > 0 (the names are
    checked against the kernel's when the model is built: it knows the kernel)."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must map hyperparameter names to (mu, sigma), got {value!r}")
    out = {}
    for key, pair in value.items():
        try:
            mu, sd = (float(v) for v in pair)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must give a pair (mu, sigma) for {key!r}") from None
        if not (np.isfinite(mu) and np.isfinite(sd) and sd > 0):
            raise ValueError(f"{name} must give a finite mu and sigma > 0 for {key!r}")
        out[str(key)] = (mu, sd)
    return out


def _check_mapping(value: object, name: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be a dict of the estimator's options, got {value!r}")
    return dict(value)


def _check_evidence(value: object, name: str) -> bool | str:
    """True, False or an estimator's name (checked with the other evidence options)."""
    return value if isinstance(value, str) else check_flag(value, name)


def _check_target_accept(value: object, name: str) -> float:
    return check_fraction(value, name, closed=False)


def _at_least(minimum: float, why: str):
    """The check of a threshold >= ``minimum`` (infinity allowed: no threshold)."""

    def check(value: Any, name: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float | np.number):
            raise ValueError(f"{name} must be a number >= {minimum} ({why}), got {value!r}")
        if not float(value) >= minimum:  # (NaN fails)
            raise ValueError(f"{name} must be a number >= {minimum} ({why}), got {value!r}")
        return float(value)

    return check


@engine_options
class MCMCOptions(EngineOptions):
    """Options of the MCMC engine (``gc.fit(method="mcmc", ...)``), by PyMC's names."""

    draws: int = option(1000, count(1), "Draws kept per chain, after tuning (as in pymc.sample).")
    tune: int = option(
        1000,
        count(0),
        "Tuning iterations per chain, discarded: NUTS adapts its step size and mass matrix "
        "(as in pymc.sample).",
    )
    chains: int = option(
        4, count(1), "Independent chains (as in pymc.sample; R-hat needs at least two)."
    )
    cores: int | None = option(
        None,
        optional(count(1)),
        "Chains run at once, each on its own thread (as in pymc.sample); default: as many "
        "as the machine has CPUs. The draws do not depend on it (each chain has its own "
        "seed); a study runs every job at cores = 1, its workers being the parallelism.",
    )
    random_seed: Any = option(
        None,
        check_random_seed,
        "Seeds the sampler (and the evidence estimate, seeded as gc.evidence.estimate is): a "
        "given seed makes the run reproducible.",
    )
    target_accept: float | None = option(
        None,
        optional(_check_target_accept),
        "NUTS's target acceptance rate, in (0, 1); default 0.8 (PyMC's) at fixed "
        "hyperparameters and 0.95 in full Bayes, whose hyperparameter geometry needs "
        "smaller steps.",
    )
    nuts_sampler: str | None = option(
        None,
        optional(choice("nutpie", "pymc")),
        '"nutpie" or "pymc"; default nutpie when it is installed (compiled, faster), else '
        "PyMC's sampler.",
    )
    parameterization: str | None = option(
        None,
        optional(choice("ep", "kl", "laplace", "prior")),
        'The coordinates NUTS moves in at fixed hyperparameters. "prior" is the non-centred '
        'f = m + L v, v ~ N(0, I), L = chol(K). "ep" and "laplace" write f = m + G u with '
        "K ~= G G^T from the eigenvectors of K above 1e-8 of the mean prior variance (for "
        "smooth kernels a fraction of n: 165 of 300 in the benchmark), and whiten u by a "
        "Gaussian approximation of the posterior, u = a + B z, so that z is close to "
        "N(0, I) a posteriori: EP's, B B^T = (I + G^T diag(ttau) G)^-1, or Laplace's, "
        "B B^T = (I + G^T W G)^-1. A linear change of variables with a constant Jacobian: "
        "all three sample the same posterior (up to the prior variance of the directions "
        'left out, recorded as idata.attrs["dropped_prior_variance"]: 5.4e-8 in the '
        'benchmark, whose total prior variance is 300). Default: "ep". With C classes '
        "(f_c = G u_c, u whitened by the approximation's C x C site blocks) the softmax "
        'takes "kl" (the default: the multi-class KL approximation) or "laplace", the '
        'multinomial probit "ep" (nested EP, the default); "kl" is multi-class only. '
        "Laplace's covariance is far too narrow at large "
        "sigma_f (R&W section 3.4; Kuss and Rasmussen 2005), and NUTS then takes tiny "
        'steps in z: on digits 3 vs 5 (n = 292, sigma_f^2 = 1e5) "laplace" gave step size '
        '0.03, R-hat 1.022 and bulk ESS 201 in 82 s, "ep" R-hat 1.007 and bulk ESS 1062 '
        "in 65 s.",
    )
    full_bayes: bool = option(
        False,
        check_flag,
        "Sample the hyperparameters jointly with f (f = m + chol(K(theta)) v inside the "
        "graph) instead of holding them at the kernel's values (binary likelihoods only).",
    )
    priors: dict[str, tuple[float, float]] | None = option(
        None,
        optional(_check_priors),
        "Full Bayes: {name: (mu, sigma)}, a normal prior on each log hyperparameter (and on "
        '"mean"), by hyperparameter_names. Default: centred on the given kernel\'s values '
        "(and the given mean), standard deviation 1 (a factor of e either way on the "
        "natural scale). The names are checked against the kernel's when the model is built.",
    )
    evidence: bool | str = option(
        False,
        _check_evidence,
        "Also estimate log p(y | X, theta) (fixed hyperparameters, binary likelihoods "
        "only), exactly as gpc_compare.evidence.estimate does with the same random_seed: "
        'True or "auto" is its default, sequential Monte Carlo with an adaptive schedule; '
        '"smc" that; "ais" annealed importance sampling on a fixed schedule (Neal 2001; '
        "Kuss and Rasmussen 2005). The estimate and its health are "
        "post.evidence_estimate.",
    )
    evidence_start: str = option(
        "ep",
        choice(*STARTS),
        "Where the evidence's path starts: \"ep\", at EP's approximation at the same "
        'hyperparameters, or "prior" (longer paths; from the prior AIS is biased low in '
        "log p(y) unless the schedule is very long).",
    )
    evidence_options: dict[str, Any] | None = option(
        None,
        optional(_check_mapping),
        "The evidence estimator's options (gpc_compare.evidence.OPTIONS): for SMC "
        "particles, runs, moves, sweeps, cess, max_steps; for AIS temperatures, runs.",
    )
    rhat_max: float = option(
        1.01,
        _at_least(1.0, "R-hat is 1 at convergence"),
        "post.diagnostics.passed needs the largest R-hat at most this (inf: no threshold).",
    )
    ess_min: float = option(
        400.0,
        _at_least(0.0, "an effective sample size"),
        "post.diagnostics.passed needs the smallest bulk ESS at least this (no divergences "
        "is its third condition).",
    )
    progressbar: bool = option(False, check_flag, "Show the sampler's progress bar.")

    def check_together(self) -> None:
        """The evidence options together, and with ``full_bayes``."""
        _fixed_for_evidence(self.to_dict())


_BINARY = frozenset({"draws", "hyperparameter_sampling", "reference"})


class MCMCEngine(Engine):
    """NUTS on the latent posterior, with PyMC and nutpie: the reference (see the module
    note). Its evidence (SMC or AIS) is optional (``evidence=True``, binary likelihoods
    at fixed hyperparameters), so "evidence" is not among its capabilities; full Bayes
    (``full_bayes=True``) is binary only."""

    name = "mcmc"
    label = "MCMC"
    summary = "NUTS draws of the latent posterior (PyMC, nutpie): the reference"
    Options = MCMCOptions
    likelihoods = {
        "probit": _BINARY,
        "logistic": _BINARY,
        "gaussian": _BINARY,
        "softmax": frozenset({"draws", "multiclass", "reference"}),
        "multinomial_probit": frozenset({"draws", "multiclass", "reference"}),
    }
    quick_options = {
        "draws": 100,
        "tune": 100,
        "chains": 2,
        "rhat_max": float("inf"),
        "ess_min": 0.0,
    }
    #: The n x n matrices (measured, n = 300 and 600: 8.9-9.2 at fixed hyperparameters in
    #: EP's whitened coordinates: K, L, EP's fit and K's eigendecomposition); the draws
    #: come on top (:meth:`memory_bytes`).
    dense_matrices = (9.5, 9.5)
    #: The softmax's: its whitening B is (C r) x (C r), r <= n (measured, beyond the PyMC
    #: model's compilation: about 2.5 C^2 at C = 3, n = 400 and C = 4, n = 600; the
    #: compilation itself took 20-30 MB, and 150-190 MB in a process's first softmax fit).
    dense_matrices_softmax = ((10.0, 0.0, 3.0), (10.0, 0.0, 3.0))
    #: Bytes per latent value per draw (8 per float64), measured (VmHWM, n = 100 and 200,
    #: 2 chains, 1,000 to 8,000 draws, 100 to 4,000 tuning iterations): NUTS's draws and
    #: warmup as nutpie returns them and their conversion peak at 3.9 copies of
    #: (draws + tune) x chains values; after the fit one copy is held, and predicting
    #: n* = n test inputs and writing the NetCDF record add 8.2 copies of draws x chains.
    draw_copies = {"fit": 4.5, "held": 1.0, "predict": 9.0}

    def memory_bytes(
        self,
        n: int,
        options: EngineOptions,
        optimize: bool = False,
        *,
        kernel: Kernel | None = None,
        classes: int | None = None,
    ) -> int:
        """The n x n matrices and the draws: n latent values (n C with the softmax) per
        draw of every chain, the tuning iterations' kept too (nutpie keeps its warmup),
        through the fit (with the convergence diagnostics' temporaries,
        :func:`gpc_compare._convergence.peak_bytes`) and the predictions at as many test
        inputs (:attr:`draw_copies`)."""
        dense = self.dense_bytes(n, optimize, kernel=kernel, classes=classes)
        values = 8 * n * (classes or 1) * options.chains
        kept = options.draws + options.tune
        copies = self.draw_copies
        fit = values * copies["fit"] * kept + peak_bytes(values // 8 * options.draws)
        predict = values * (copies["held"] * kept + copies["predict"] * options.draws)
        return int(dense + max(fit, predict))

    def storage_hint(self, options: EngineOptions) -> str:
        return (
            f": draws = {options.draws:,} and tune = {options.tune:,} per chain, "
            f"{options.chains} chain(s): use fewer draws or chains"
        )

    def infer(
        self, problem: Problem, options: MCMCOptions
    ) -> SamplePosterior | SoftmaxSamplePosterior:
        """Sample the latent posterior with NUTS (see :class:`Engine`): at fixed
        hyperparameters, or jointly with them (``full_bayes``).

        With the softmax or multinomial probit likelihood ``y`` holds class indices
        0..C-1, ``mean`` must be None, and neither ``full_bayes`` nor ``evidence`` is taken.
        """
        if isinstance(problem.likelihood, Softmax | MultinomialProbit):
            return _infer_multiclass(problem, options)
        return _infer_binary(problem, options)


#: The engine (registered by :mod:`gpc_compare.engines`).
ENGINE = MCMCEngine()


def infer(
    X, y, kernel, likelihood, mean=None, **options
) -> SamplePosterior | SoftmaxSamplePosterior:
    """The MCMC engine on checked arrays, options as keywords (:class:`MCMCOptions`):
    ``ENGINE.run``."""
    return ENGINE.run(X, y, kernel, likelihood, mean, **options)


def _estimator(evidence: bool | str) -> str | None:
    """The evidence estimator ``evidence`` asks for (True: ``gc.evidence.estimate``'s
    default), or None."""
    return None if evidence is False else "auto" if evidence is True else evidence


def _fixed_for_evidence(options: dict[str, Any]) -> None:
    method = _estimator(options["evidence"])
    if method is None:
        return
    if method not in METHODS:
        raise OptionError(
            "evidence", f"evidence must be True, False or one of {list(METHODS)}, got {method!r}"
        )
    if options["full_bayes"]:
        raise ValueError(
            "evidence=True estimates p(y | X, theta) at fixed hyperparameters; "
            "it does not combine with full_bayes=True"
        )
    try:  # the estimator's own check (gc.evidence.estimate's)
        start, given = options["evidence_start"], options["evidence_options"] or {}
        EvidenceOptions.from_arguments(method, start, given)
    except ValueError as exc:
        raise OptionError("evidence_options", f"evidence_options: {exc}") from None


def _nuts(options: MCMCOptions) -> NutsSettings:
    """The sampler's settings, ``target_accept`` and ``nuts_sampler`` defaults resolved."""
    target_accept = options.target_accept
    if target_accept is None:
        target_accept = 0.95 if options.full_bayes else 0.8
    return NutsSettings(
        draws=options.draws,
        tune=options.tune,
        chains=options.chains,
        cores=options.cores,
        random_seed=options.random_seed,
        target_accept=target_accept,
        nuts_sampler=options.nuts_sampler or default_sampler(),
        progressbar=options.progressbar,
        rhat_max=options.rhat_max,
        ess_min=options.ess_min,
    )


def _convergence(diagnostics: Diagnostics) -> Convergence:
    """The shared record (see :class:`Convergence`): the NUTS iterations each chain ran
    (tuning included), passed as the diagnostics pass; no change is monitored."""
    iterations = diagnostics.tune + diagnostics.draws
    return Convergence(diagnostics.passed, iterations, float("nan"), diagnostics.message)


def _infer_binary(problem: Problem, options: MCMCOptions) -> SamplePosterior:
    """The binary (or Gaussian) latent posterior: at fixed hyperparameters, whitened
    (:func:`._mcmc_models.whiten`) or non-centred, or in full Bayes; with the evidence
    where ``options.evidence`` asks for it."""
    X, y, lik, n = problem.X, problem.y, problem.likelihood, problem.n
    m = 0.0 if problem.mean is None else float(problem.mean)
    K = check_kernel_matrix(problem.kernel, X)
    L = cholesky(K, jitter=JITTER, what="kernel matrix K")
    settings = _nuts(options)
    parameterization = options.parameterization or "ep"
    if parameterization == "kl":
        raise ValueError(
            "parameterization='kl' whitens the multi-class models (softmax); binary "
            "likelihoods take 'ep' (the default), 'laplace' or 'prior'"
        )
    whitened = compiled = None
    if options.full_bayes:
        parameterization = "full_bayes"
        build = partial(full_bayes_model, problem, K, prior_moments(problem, options.priors))
    else:
        if parameterization != "prior":
            whitened = whiten(problem, K, parameterization)
            parameterization = whitened.parameterization
            if settings.nuts_sampler == "nutpie":  # the compiled density: nothing per model
                compiled = compiled_model(whitened, m, y, lik)
        build = partial(fixed_model, problem, L, whitened)
    idata, diagnostics = run_nuts(
        build,
        y,
        settings,
        compiled=compiled,
        dropped=None if whitened is None else whitened.dropped,
        parameterization=parameterization,
        var_names=["f", "theta"] if options.full_bayes else ["f"],
        stacklevel=4,
    )
    f_draws = idata.posterior["f"].values.reshape(-1, n)
    theta_draws = None
    if options.full_bayes:
        theta_draws = idata.posterior["theta"].values.reshape(f_draws.shape[0], -1)
    approx = None if whitened is None else whitened.approx
    return SamplePosterior(
        X,
        y,
        problem.kernel,
        lik,
        problem.mean,
        f_draws=f_draws,
        idata=idata,
        K=K,
        L=L,
        diagnostics=diagnostics,
        evidence=_evidence(problem, L, m, parameterization, approx, options),
        convergence=_convergence(diagnostics),
        theta_draws=theta_draws,
    )


def _evidence(
    problem: Problem,
    L: np.ndarray,
    m: float,
    parameterization: str,
    approx: Any,
    options: MCMCOptions,
) -> Any:
    """gc.evidence.estimate's run, seeded as the sampler is, where ``options.evidence``
    asks for it (else None): from the whitening's EP fit (``approx``, where EP whitened)
    or a new one, timed from here."""
    method = _estimator(options.evidence)
    if method is None:
        return None
    t0 = time.perf_counter()
    record = EvidenceOptions.from_arguments(
        method, options.evidence_start, options.evidence_options or {}
    )
    if parameterization != "ep":  # (else the whitening's EP, the same fit)
        approx = ep.infer(
            problem.X,
            problem.y,
            problem.kernel,
            problem.likelihood,
            problem.mean,
        )
    prepared = Prepared.from_ep(
        L, m, problem.y, problem.likelihood, approx, time.perf_counter() - t0
    )
    return estimate_evidence(prepared, record, options.random_seed)


def _infer_multiclass(problem: Problem, options: MCMCOptions) -> SoftmaxSamplePosterior:
    """C latent GPs and a softmax or multinomial probit likelihood, sampled with NUTS at
    fixed hyperparameters (:func:`._mcmc_multiclass.multiclass_model`; on nutpie, whitened,
    its density compiled once: :mod:`._compiled_multiclass`)."""
    lik = problem.likelihood
    parameterization = check_parameterization(lik, options.parameterization)
    if options.full_bayes or options.evidence:
        raise ValueError(
            f"with the {lik.name} likelihood the MCMC engine samples f at fixed "
            "hyperparameters only: full_bayes=True and evidence=True are binary only "
            "(the multi-class evidence is gc.evidence.estimate's)"
        )
    if problem.mean is not None:
        raise ValueError(f"the {lik.name} likelihood takes no prior mean (mean=None)")
    X, kernel, n = problem.X, problem.kernel, problem.n
    codes, C = check_codes(problem.y, lik)
    K = check_kernel_matrix(kernel, X)
    L = cholesky(K, jitter=JITTER, what="kernel matrix K")
    settings = _nuts(options)
    whitened = compiled = None
    if parameterization != "prior":
        whitened = block_whiten(problem, codes, C, K, parameterization)
        if settings.nuts_sampler == "nutpie":  # the compiled density: nothing per model
            compiled = compiled_multiclass_model(whitened, codes, lik)
    idata, diagnostics = run_nuts(
        lambda: multiclass_model(problem, codes, C, K, L, parameterization, whitened)[0],
        codes,
        settings,
        compiled=compiled,
        dropped=None if whitened is None else whitened.dropped,
        parameterization=parameterization,
        var_names=["f"],
        stacklevel=4,
    )
    return SoftmaxSamplePosterior(
        X,
        codes,
        kernel,
        lik,
        f_draws=idata.posterior["f"].values.reshape(-1, n, C),
        idata=idata,
        K=K,
        L=L,
        diagnostics=diagnostics,
        convergence=_convergence(diagnostics),
    )
