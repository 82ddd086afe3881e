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
binary model's density is compiled once for every problem (:mod:`._compiled`, the same
density as the PyMC model's, which PyMC's sampler runs), the other models through PyMC;
where nutpie cannot start, PyMC's sampler runs instead and the diagnostics say so
(``fallback``; :mod:`._sampling`).

The draws are returned as a :class:`~gpc_compare.posterior.SamplePosterior`, which
predicts by conditioning every draw on the GP; their convergence is judged by
:func:`gpc_compare.diagnostics.diagnose`. The gold-standard log marginal likelihood
(``evidence=True``) is :func:`gpc_compare.evidence.estimate`'s: sequential Monte Carlo with
an adaptive schedule (``evidence="smc"``, the default) or annealed importance sampling
(``"ais"``; Neal 2001, Kuss and Rasmussen 2005), from EP's approximation or from the prior,
run by the same function (:func:`gpc_compare.annealing.estimate.estimate`) with the same seed.

With the softmax likelihood (C classes) the model has C latent GPs sharing the kernel,
F = G U or F = L V column by column, and a categorical likelihood with ``logit_p = F``;
prediction conditions every draw's C functions on the GP (independent given the draw,
with the same conditional variance) and integrates the softmax against that Gaussian
(:class:`~gpc_compare.posterior.SoftmaxSamplePosterior`). Fixed hyperparameters only:
full Bayes and the evidence are binary only.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._validation import (
    OptionError,
    check_flag,
    check_fraction,
    check_kernel_matrix,
    check_random_seed,
    choice,
    count,
    option_checker,
    optional,
)
from ..annealing.estimate import METHODS, STARTS, EvidenceOptions, Prepared
from ..annealing.estimate import estimate as estimate_evidence
from ..diagnostics import Diagnostics
from ..kernels import Kernel
from ..likelihoods import Gaussian, Likelihood, Logistic, Probit, Softmax
from ..numerics import JITTER, cholesky
from ..posterior import Convergence, SamplePosterior, SoftmaxSamplePosterior
from . import ep, laplace
from ._sampling import default_sampler, run_nuts
from ._whitening import laplace_sites, prior_factor, site_whitening, softmax_laplace_whitening
from .laplace_softmax import check_codes, infer_softmax

__all__ = ["Diagnostics", "SamplePosterior", "SoftmaxSamplePosterior", "check_options", "infer"]
#: How this engine is named in messages.
LABEL = "MCMC"
#: Options ``gc.fit(method="mcmc", ...)`` accepts, with their defaults (PyMC's names).
OPTIONS = {
    "draws": 1000,
    "tune": 1000,
    "chains": 4,
    "random_seed": None,
    "target_accept": None,
    "nuts_sampler": None,
    "parameterization": None,
    "full_bayes": False,
    "priors": None,
    "evidence": False,
    "evidence_start": "ep",
    "evidence_options": None,
    "rhat_max": 1.01,
    "ess_min": 400.0,
    "progressbar": False,
}
#: What this engine can do (see :data:`gpc_compare.engines.CAPABILITY_NAMES`); its
#: evidence (SMC or AIS) is optional (``evidence=True``), so "evidence" is not among them.
CAPABILITIES = frozenset({"draws", "multiclass", "hyperparameter_sampling", "reference"})
#: The likelihoods it takes (by name).
LIKELIHOODS = frozenset({"probit", "logistic", "gaussian", "softmax"})

#: Prior standard deviation of each log hyperparameter (and the mean) in full Bayes.
DEFAULT_PRIOR_SD = 1.0


def _check_priors(value: Any, name: str) -> dict[str, tuple[float, float]]:
    """``{hyperparameter: (mu, sigma)}`` with finite mu and sigma > 0 (the names are
    checked against the kernel's by :func:`infer`)."""
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


def _at_least(minimum: float, why: str):
    """The check of a threshold >= ``minimum`` (infinity allowed: no threshold)."""

    def check(value: Any, name: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float | np.number):
            raise ValueError(f"{name} must be a number >= {minimum} ({why}), got {value!r}")
        if not float(value) >= minimum:  # (NaN fails)
            raise ValueError(f"{name} must be a number >= {minimum} ({why}), got {value!r}")
        return float(value)

    return check


#: How each option is checked (:func:`check_options`).
OPTION_CHECKS = {
    "draws": count(1),
    "tune": count(0),
    "chains": count(1),
    "random_seed": check_random_seed,
    "target_accept": optional(lambda v, name: check_fraction(v, name, closed=False)),
    "nuts_sampler": optional(choice("nutpie", "pymc")),
    "parameterization": optional(choice("ep", "laplace", "prior")),
    "full_bayes": check_flag,
    "priors": optional(_check_priors),
    "evidence": lambda v, name: v if isinstance(v, str) else check_flag(v, name),
    "evidence_start": choice(*STARTS),
    "evidence_options": optional(_check_mapping),
    "rhat_max": _at_least(1.0, "R-hat is 1 at convergence"),
    "ess_min": _at_least(0.0, "an effective sample size"),
    "progressbar": check_flag,
}


def _ep_for_whitening(X, y, kernel, likelihood, mean):
    """EP's approximation to whiten NUTS's coordinates (parallel schedule, as
    :func:`gpc_compare.evidence.estimate` fits it), or None where EP fails (any Gaussian
    whitens: Laplace's is used instead, and a RuntimeWarning says why). An EP that stopped
    short of its tolerance still whitens: its warning is not the sampler's."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ep.infer(X, y, kernel, likelihood, mean, schedule="parallel")
    except (FloatingPointError, ValueError, np.linalg.LinAlgError) as exc:
        warnings.warn(f"EP failed ({exc}); NUTS's coordinates are whitened by the Laplace "
                      "approximation instead", RuntimeWarning, stacklevel=3)  # fmt: skip
        return None


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


#: The options checked before any sampling, as ``gc.fit`` and a study's ``[engines.mcmc]``
#: are (``priors``' names are :func:`infer`'s: it knows the kernel).
check_options = option_checker(OPTION_CHECKS, "method 'mcmc'", OPTIONS, _fixed_for_evidence)


def infer(
    X: np.ndarray,
    y: np.ndarray,
    kernel: Kernel,
    likelihood: Likelihood,
    mean: float | None = None,
    *,
    draws: int = OPTIONS["draws"],
    tune: int = OPTIONS["tune"],
    chains: int = OPTIONS["chains"],
    random_seed: int | None = OPTIONS["random_seed"],
    target_accept: float | None = OPTIONS["target_accept"],
    nuts_sampler: str | None = OPTIONS["nuts_sampler"],
    parameterization: str | None = OPTIONS["parameterization"],
    full_bayes: bool = OPTIONS["full_bayes"],
    priors: dict[str, tuple[float, float]] | None = OPTIONS["priors"],
    evidence: bool | str = OPTIONS["evidence"],
    evidence_start: str = OPTIONS["evidence_start"],
    evidence_options: Mapping[str, Any] | None = OPTIONS["evidence_options"],
    rhat_max: float = OPTIONS["rhat_max"],
    ess_min: float = OPTIONS["ess_min"],
    progressbar: bool = OPTIONS["progressbar"],
) -> SamplePosterior:
    """Sample the latent posterior with NUTS at fixed hyperparameters.

    Parameters
    ----------
    X, y, kernel, likelihood, mean
        As for the other engines.
    draws, tune, chains, random_seed, target_accept
        As in :func:`pymc.sample`; a given ``random_seed`` makes the run reproducible.
        ``target_accept`` defaults to 0.8 (PyMC's) at fixed hyperparameters and 0.95 in
        full Bayes, whose hyperparameter geometry needs smaller steps.
    nuts_sampler : {"nutpie", "pymc"}, optional
        Default: nutpie when it is installed (compiled, faster), else PyMC's sampler.
    parameterization : {"ep", "laplace", "prior"}, optional
        Fixed hyperparameters: "prior" is the non-centred f = m + L v, v ~ N(0, I),
        L = chol(K). "ep" and "laplace" write f = m + G u with K ~= G G^T from the
        eigenvectors of K above 1e-8 of the mean prior variance (for smooth kernels a
        fraction of n: 165 of 300 in the benchmark), and whiten u by a Gaussian
        approximation of the posterior, u = a + B z, so that z is close to N(0, I) a
        posteriori: EP's, B B^T = (I + G^T diag(ttau) G)^-1, or Laplace's,
        B B^T = (I + G^T W G)^-1. A linear change of variables with a constant Jacobian:
        all three sample the same posterior (up to the prior variance of the directions
        left out, recorded as ``idata.attrs["dropped_prior_variance"]``: 5.4e-8 in the
        benchmark, whose total prior variance is 300). Default: "ep" ("laplace"
        for the softmax, which has no EP here). Laplace's covariance is far too narrow at
        large sigma_f (R&W section 3.4; Kuss and Rasmussen 2005), and NUTS then takes
        tiny steps in z: on digits 3 vs 5 (n = 292, sigma_f^2 = 1e5) "laplace" gave step
        size 0.03, R-hat 1.022 and bulk ESS 201 in 82 s, "ep" R-hat 1.007 and bulk ESS
        1062 in 65 s.
    full_bayes : bool
        Sample the hyperparameters jointly with f (f = m + chol(K(theta)) v inside the
        graph) instead of holding them at the kernel's values.
    priors : dict, optional
        Full Bayes: ``{name: (mu, sigma)}``, a normal prior on each log hyperparameter
        (and on ``"mean"``), by ``hyperparameter_names``. Default: centred on the given
        kernel's values (and the given mean), standard deviation 1 (a factor of e
        either way on the natural scale).
    evidence : bool or {"auto", "smc", "ais"}
        Also estimate log p(y | X, theta) (fixed hyperparameters only), exactly as
        :func:`gpc_compare.evidence.estimate` does with the same ``random_seed``: True or
        "auto" is its default, sequential Monte Carlo with an adaptive schedule; "ais" is
        annealed importance sampling on a fixed schedule (Neal 2001; Kuss and Rasmussen
        2005). The estimate and its health are ``post.evidence_estimate``.
    evidence_start : {"ep", "prior"}
        Where the path starts: at EP's approximation at the same hyperparameters
        (default) or at the prior (longer paths; from the prior AIS is biased low in
        log p(y) unless the schedule is very long).
    evidence_options : dict, optional
        The estimator's options (:data:`gpc_compare.evidence.OPTIONS`): for SMC
        ``particles``, ``runs``, ``moves``, ``sweeps``, ``cess``, ``max_steps``; for AIS
        ``temperatures``, ``runs``.
    rhat_max, ess_min : float
        Thresholds of ``post.diagnostics.passed`` (no divergences is the third).
    progressbar : bool
        Show PyMC's progress bar.
    """
    if not isinstance(likelihood, Probit | Logistic | Softmax | Gaussian):
        raise ValueError(
            "the MCMC engine supports the probit, logistic, softmax and Gaussian likelihoods, "
            f"not {likelihood!r}"
        )
    checked = check_options(
        {"draws": draws, "tune": tune, "chains": chains, "random_seed": random_seed,
         "target_accept": target_accept, "nuts_sampler": nuts_sampler,
         "parameterization": parameterization, "full_bayes": full_bayes, "priors": priors,
         "evidence": evidence, "evidence_start": evidence_start,
         "evidence_options": evidence_options, "rhat_max": rhat_max, "ess_min": ess_min,
         "progressbar": progressbar}
    )  # fmt: skip
    draws, tune, chains = checked["draws"], checked["tune"], checked["chains"]
    evidence, full_bayes = checked["evidence"], checked["full_bayes"]
    sampler = nuts_sampler or default_sampler()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import pymc as pm
        import pytensor.tensor as pt
        from pymc.distributions.dist_math import normal_lcdf

    if target_accept is None:
        target_accept = 0.95 if full_bayes else 0.8
    if isinstance(likelihood, Softmax):
        if parameterization == "ep":
            raise ValueError(
                "parameterization='ep' needs EP, which is binary here: with the softmax "
                "likelihood use 'laplace' (the default) or 'prior'"
            )
        parameterization = parameterization or "laplace"
        if full_bayes or evidence:
            raise ValueError(
                "with the softmax likelihood the MCMC engine samples f at fixed "
                "hyperparameters only: full_bayes=True and evidence=True are binary only"
            )
        if mean is not None:
            raise ValueError("the softmax likelihood takes no prior mean (mean=None)")
        return _infer_softmax(
            X,
            y,
            kernel,
            likelihood,
            draws=int(draws),
            tune=int(tune),
            chains=int(chains),
            random_seed=random_seed,
            target_accept=target_accept,
            nuts_sampler=sampler,
            parameterization=parameterization,
            rhat_max=rhat_max,
            ess_min=ess_min,
            progressbar=progressbar,
        )
    parameterization = parameterization or "ep"
    n = X.shape[0]
    m = 0.0 if mean is None else float(mean)
    K = check_kernel_matrix(kernel, X)
    L = cholesky(K, jitter=JITTER, what="kernel matrix K")
    names = kernel.hyperparameter_names + ([] if mean is None else ["mean"])
    whitened = not full_bayes and parameterization != "prior"
    compiled = dropped = None
    if whitened:
        G, dropped = prior_factor(K)
        if parameterization == "ep":
            approx = _ep_for_whitening(X, y, kernel, likelihood, mean)
            parameterization = "ep" if approx is not None else "laplace"
        if parameterization == "laplace":
            T, b = laplace_sites(laplace.infer(X, y, kernel, likelihood, mean))
        else:
            T, b = approx.ttau, approx.tnu - approx.ttau * m
        a, B = site_whitening(T, b, G)
        g0, H = G @ a, G @ B
        if sampler == "nutpie":  # the compiled density: nothing to compile per model
            compiled = _compiled_model(H, g0, m, y, T, b, likelihood)

    def build_model() -> pm.Model:
        with pm.Model(coords={"obs": np.arange(n), "hyperparameter": names}) as model:
            if full_bayes:
                v = pm.Normal("v", 0.0, 1.0, dims="obs")
                mu, sd = _prior_moments(kernel, mean, names, priors)
                theta = pm.Normal("theta", mu, sd, dims="hyperparameter")
                p = kernel.n_hyperparameters
                Kt = kernel.symbolic(X, theta[:p])
                Kt = Kt + JITTER * max(float(np.mean(np.diag(K))), 1.0) * np.eye(n)
                m_t = theta[p] if mean is not None else m
                # (K(theta) is finite by construction: no finiteness scan in every gradient)
                L_t = pt.linalg.cholesky(Kt, check_finite=False)
                f = pm.Deterministic("f", m_t + pt.dot(L_t, v), dims="obs")
            elif whitened:
                # With u = a + B z, N(u; 0, I) t(G u) is N(z; 0, I) (up to a constant): the
                # prior is that Gaussian over the sites t(g) = exp(-1/2 g^T T g + b^T g), so
                # the density of z is N(z; 0, I) p(y | f) / t(g), one n x r product per
                # gradient (H = G B) where -|u|^2 / 2 would add an r x r one
                model.add_coord("basis", np.arange(H.shape[1]))
                z = pm.Normal("z", 0.0, 1.0, dims="basis")
                g = pt.as_tensor(g0) + pt.dot(H, z)
                pm.Potential("sites", 0.5 * pt.sum(T * g**2) - pt.dot(b, g))  # -log t(g)
                f = pm.Deterministic("f", m + g, dims="obs")
            else:  # non-centred, L fixed
                v = pm.Normal("v", 0.0, 1.0, dims="obs")
                f = pm.Deterministic("f", m + pt.dot(L, v), dims="obs")
            if isinstance(likelihood, Probit):
                # log Phi(y f) through PyMC's stable log normal CDF (exact in the tails)
                pm.Potential("log_likelihood", normal_lcdf(0.0, 1.0, y * f).sum())
            elif isinstance(likelihood, Gaussian):
                sigma = np.sqrt(likelihood.variance)
                pm.Normal("y", mu=f, sigma=sigma, observed=y, dims="obs")
            else:  # log sigma(y f) = -log(1 + exp(-y f)) (R&W eq. 3.4): softplus's gradient
                # is finite for any f, where PyMC's Bernoulli(logit_p)'s is NaN at |f| ~ 1e4
                pm.Potential("log_likelihood", -pt.softplus(-y * f).sum())
        return model

    idata, diagnostics = run_nuts(
        build_model, y, compiled=compiled, draws=draws, tune=tune, chains=chains,
        random_seed=random_seed, target_accept=target_accept, nuts_sampler=sampler,
        progressbar=progressbar, dropped=dropped,
        parameterization="full_bayes" if full_bayes else parameterization,
        rhat_max=rhat_max, ess_min=ess_min, var_names=["f", "theta"] if full_bayes else ["f"],
        stacklevel=2,
    )  # fmt: skip
    f_draws = idata.posterior["f"].values.reshape(-1, n)
    theta_draws = (
        idata.posterior["theta"].values.reshape(f_draws.shape[0], -1) if full_bayes else None
    )
    estimate = None
    if _estimator(evidence) is not None:  # gc.evidence.estimate's run, seeded as the sampler is
        whitening = approx if parameterization == "ep" else None  # (the same EP fit)
        estimate = _evidence(X, y, kernel, likelihood, mean, L, whitening, random_seed, checked)
    return SamplePosterior(
        X,
        y,
        kernel,
        likelihood,
        mean,
        f_draws=f_draws,
        idata=idata,
        K=K,
        L=L,
        diagnostics=diagnostics,
        evidence=estimate,
        convergence=Convergence(
            diagnostics.passed, int(draws) + int(tune), diagnostics.r_hat_max, diagnostics.message
        ),
        theta_draws=theta_draws,
    )


def _evidence(X, y, kernel, likelihood, mean, L, approx, random_seed, options):
    """The gold-standard evidence ``options["evidence"]`` asks for, as
    :func:`gpc_compare.evidence.estimate` makes it: on K's Cholesky factor ``L`` and EP's
    fit (``approx``, the whitening's; fitted here where None), seeded ``random_seed``."""
    t0 = time.perf_counter()
    record = EvidenceOptions.from_arguments(
        _estimator(options["evidence"]),
        options["evidence_start"],
        options["evidence_options"] or {},
    )
    if approx is None:
        approx = ep.infer(X, y, kernel, likelihood, mean, schedule="parallel")
    m = 0.0 if mean is None else float(mean)
    problem = Prepared.from_ep(L, m, y, likelihood, approx, time.perf_counter() - t0)
    return estimate_evidence(problem, record, random_seed)


def _compiled_model(H, g0, m, y, T, b, likelihood):
    """nutpie's model with the compiled density, or None (warned) where numba cannot
    compile or cache it here: nutpie then compiles the PyMC model, as for other models."""
    try:
        from . import _compiled

        return _compiled.whitened_model(_compiled.pack(H, g0, m, y, T, b, likelihood))
    except Exception as exc:  # noqa: BLE001 - e.g. numba's "cannot cache function": say so
        warnings.warn(
            f"the compiled density is unavailable ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:200]}); nutpie compiles the PyMC model instead",
            RuntimeWarning,
            stacklevel=3,
        )
        return None


def _prior_moments(kernel, mean, names, priors):
    """Normal prior means and sds of the log hyperparameters (and the mean) by name."""
    centre = np.append(kernel.theta, [] if mean is None else [float(mean)])
    mu, sd = centre.copy(), np.full(centre.size, DEFAULT_PRIOR_SD)
    for name, value in (priors or {}).items():
        if name not in names:
            raise ValueError(f"priors names unknown hyperparameter {name!r}; expected {names}")
        try:
            mu_i, sd_i = (float(v) for v in value)
        except (TypeError, ValueError):
            raise ValueError(f"the prior of {name!r} must be a pair (mu, sigma)") from None
        if not (np.isfinite(mu_i) and sd_i > 0):
            raise ValueError(f"the prior of {name!r} needs a finite mu and sigma > 0")
        mu[names.index(name)], sd[names.index(name)] = mu_i, sd_i
    return mu, sd


def _infer_softmax(
    X,
    y,
    kernel,
    likelihood,
    *,
    draws,
    tune,
    chains,
    random_seed,
    target_accept,
    nuts_sampler,
    parameterization,
    rhat_max,
    ess_min,
    progressbar,
) -> SoftmaxSamplePosterior:
    """C latent GPs and a categorical likelihood, sampled with NUTS (see :func:`infer`).

    "prior": F = L V, V ~ N(0, I) (n, C). "laplace": per class f_c = G u_c with K ~= G G^T
    as for the binary model, and u = (u_1, ..., u_C) = a + B z whitened by the multi-class
    Laplace approximation, B B^T = (I + G_blk^T W G_blk)^-1, whose (c, c') block is
    G^T (delta_cc' D_c - D_c D_c') G since W = D - Pi Pi^T (:mod:`._whitening`).
    """
    codes, C = check_codes(y, likelihood)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import pymc as pm
        import pytensor.tensor as pt

    n = X.shape[0]
    K = check_kernel_matrix(kernel, X)
    L = cholesky(K, jitter=JITTER, what="kernel matrix K")
    with pm.Model(coords={"obs": np.arange(n), "class": np.arange(C)}) as model:
        if parameterization == "prior":
            v = pm.Normal("v", 0.0, 1.0, dims=("obs", "class"))
            F = pm.Deterministic("f", pt.dot(L, v), dims=("obs", "class"))
        else:
            G, dropped = prior_factor(K)
            r = G.shape[1]
            a, B = softmax_laplace_whitening(infer_softmax(X, codes, kernel, likelihood), G)
            model.add_coord("basis", np.arange(C * r))
            z = pm.Flat("z", dims="basis")
            u = a + pt.dot(B, z)
            pm.Potential("prior", -0.5 * pt.sum(u**2))
            F = pm.Deterministic("f", pt.dot(G, u.reshape((C, r)).T), dims=("obs", "class"))
        pm.Categorical("y", logit_p=F, observed=codes, dims="obs")
    idata, diagnostics = run_nuts(
        lambda: model, codes, draws=draws, tune=tune, chains=chains, random_seed=random_seed,
        target_accept=target_accept, nuts_sampler=nuts_sampler, progressbar=progressbar,
        dropped=dropped if parameterization == "laplace" else None,
        parameterization=parameterization, rhat_max=rhat_max,
        ess_min=ess_min, var_names=["f"], stacklevel=3,
    )  # fmt: skip
    f_draws = idata.posterior["f"].values.reshape(-1, n, C)
    return SoftmaxSamplePosterior(
        X,
        codes,
        kernel,
        likelihood,
        f_draws=f_draws,
        idata=idata,
        K=K,
        L=L,
        diagnostics=diagnostics,
        convergence=Convergence(
            diagnostics.passed, draws + tune, diagnostics.r_hat_max, diagnostics.message
        ),
    )
