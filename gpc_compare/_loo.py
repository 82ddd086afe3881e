"""Leave-one-out predictive performance of a fitted posterior: ``gc.loo(post, method)``.

The quantity is elpd_loo = sum_i log p(y_i | x_i, D_-i), the log predictive density of
each training case under the posterior fitted without it, at the same hyperparameters.
Three ways to get it:

``"cavity"``
    From the Gaussian approximation itself, with case i's site removed (Opper and Winther
    2000; Vehtari, Mononen, Tolvanen, Sivula and Winther 2016, "Bayesian leave-one-out
    cross-validation approximations for Gaussian latent variable models", JMLR 17(103),
    section 3). The approximation is the prior times one Gaussian site per case; taking
    site i out of the marginal N(mu_i, s_i^2) leaves the cavity N(mu_-i, v_-i), and
    log p(y_i | cavity) = log int p(y_i | f) N(f | mu_-i, v_-i) df. For EP these are the
    log normalisers of its tilted distributions (``EPPosterior.loo_log_predictive``). For
    Laplace the site is the pseudo-site of precision W_i = -d^2 log p(y_i | f^_i) / df^2
    that reproduces the approximation N(f^, (K^-1 + W)^-1): with alpha = K^-1 (f^ - m)
    (= grad log p(y | f^) at the mode, R&W eq. 3.17) the site's natural parameter is
    W_i f^_i + alpha_i, and

        v_-i = s_i^2 / (1 - W_i s_i^2),     mu_-i = f^_i - v_-i alpha_i

    (Vehtari et al. 2016, section 3; 1 - W_i s_i^2 = [B^-1]_ii, B = I + sW K sW, which
    does not cancel). One O(n^3) factorisation for all n cases; no refit.
``"psis"``
    Pareto-smoothed importance sampling (Vehtari, Gelman and Gabry 2017, "Practical
    Bayesian model evaluation using leave-one-out cross-validation and WAIC", Statistics
    and Computing 27; Vehtari, Simpson, Gelman, Yao and Gabry 2024, JMLR 25(72)): the
    draws of f weighted by 1 / p(y_i | f_i), the largest weights smoothed by a fitted
    generalised Pareto distribution whose shape k says how far to trust each case
    (k > 0.7: not at all). Computed by ``arviz.loo`` on the posterior's InferenceData
    (its ``log_likelihood`` group); for an MCMC posterior from its draws, for a Gaussian
    one from draws of the approximation q, which then stands in for the posterior. q holds
    a Gaussian site where the posterior has p(y_i | f_i), so dividing p(y_i | f_i) out of
    q does not remove case i: on a 40-point problem this landed 0.2 (EP) to 0.9 (Laplace)
    nats below the cavity and the refits (tests/test_loo.py).
``"exact"``
    n refits on D_-i with the same engine, kernel (at its hyperparameters), likelihood,
    mean and options, each warm-started from the full fit with case i's entries dropped,
    and log p(y_i | x_i, D_-i) from each refit's own prediction: the ground truth the
    other two approximate (up to the engine's own approximation: "exact" LOO of EP is
    EP refitted, and of MCMC a Monte Carlo estimate).

``se`` is sqrt(n) times the standard deviation of the pointwise values (``ddof=0``), as
``arviz.loo`` computes it: the standard error of elpd_loo as an estimate of the expected
log predictive density of n new cases (Vehtari, Gelman and Gabry 2017, section 2).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._fit import fit
from .engines import get_engine
from .engines.ep import EPPosterior
from .engines.laplace import LaplacePosterior
from .numerics import cho_inverse, log_mean_exp
from .posterior import GaussianPosterior, Posterior

__all__ = ["LOO_METHODS", "LOOResult", "gaussian_cavity", "loo", "loo_refits"]

#: The methods :func:`loo` takes.
LOO_METHODS = ("cavity", "psis", "exact")
#: Draws of q for PSIS from a Gaussian approximation (as four chains of 1000).
DEFAULT_DRAWS = 4000


@dataclass(frozen=True, eq=False)
class LOOResult:
    """Leave-one-out predictive performance (:func:`loo`).

    Parameters
    ----------
    method : {"cavity", "psis", "exact"}
        How it was computed.
    engine : str
        The posterior's method ("ep", "laplace", ...).
    elpd : float
        ``sum_i log p(y_i | x_i, D_-i)``.
    pointwise : ndarray, shape (n,)
        ``log p(y_i | x_i, D_-i)`` per case.
    se : float
        sqrt(n) * sd(pointwise) (``ddof=0``), as ``arviz.loo`` gives it.
    pareto_k : ndarray, shape (n,), or None
        PSIS: the Pareto shape estimate per case (k > 0.7: the case's estimate is
        unreliable; Vehtari et al. 2024). None otherwise.
    n_refits : int or None
        Exact: the refits run (n). None otherwise.
    converged : ndarray of bool, shape (n,), or None
        Exact: whether each refit's engine reported convergence. None otherwise.
    """

    method: str
    engine: str
    elpd: float
    pointwise: np.ndarray
    se: float
    pareto_k: np.ndarray | None = None
    n_refits: int | None = None
    converged: np.ndarray | None = None

    @property
    def n(self) -> int:
        """The number of cases."""
        return int(self.pointwise.size)

    def __repr__(self) -> str:
        extra = ""
        if self.pareto_k is not None:
            extra = f" k>0.7: {int(np.sum(self.pareto_k > 0.7))}"
        if self.converged is not None:
            extra = f" refits converged: {int(self.converged.sum())}/{self.n_refits}"
        return (
            f"<LOOResult method={self.method!r} engine={self.engine!r} n={self.n} "
            f"elpd={self.elpd:.6g} se={self.se:.3g}{extra}>"
        )


def loo(
    posterior: Posterior,
    method: str = "cavity",
    *,
    draws: int = DEFAULT_DRAWS,
    random_seed: int | np.random.Generator | None = None,
    **options: Any,
) -> LOOResult:
    """Leave-one-out predictive performance of a fitted posterior (see the module note).

    Parameters
    ----------
    posterior : Posterior
        A fit from ``gc.fit`` (binary likelihoods and the Gaussian one; "psis" also takes
        an MCMC fit with the softmax likelihood).
    method : {"cavity", "psis", "exact"}
        "cavity": EP's and Laplace's site-removed marginals (Opper and Winther 2000;
        Vehtari et al. 2016, JMLR 17(103), section 3); a ValueError for other engines and
        for the softmax likelihood. "psis": Pareto-smoothed importance sampling through
        ``arviz.loo`` (Vehtari, Gelman and Gabry 2017). "exact": n refits.
    draws : int
        "psis" with a Gaussian posterior: the draws of q (``to_inference_data(draws=)``).
    random_seed : int or Generator, optional
        "psis": seeds the draws of q. "exact": ``gc.fit``'s ``random_seed`` for every
        refit (the engine's own randomness: EP's sequential order, MCMC's chains).
    **options
        "exact": the engine options of the refits, as given to ``gc.fit`` for the full
        fit (a posterior does not record them); ``warm_start`` is the full fit's, with
        case i dropped, unless given; a sparse engine's ``inducing`` is the full fit's.

    Returns
    -------
    LOOResult

    Examples
    --------
    >>> post = gc.fit(X, y, method="ep", kernel=k)                        # doctest: +SKIP
    >>> gc.loo(post).elpd, gc.loo(post, "exact").elpd                     # doctest: +SKIP
    """
    if not isinstance(posterior, Posterior):
        raise ValueError(f"loo takes a fitted Posterior, got {type(posterior).__name__}")
    if method not in LOO_METHODS:
        raise ValueError(f"method must be one of {LOO_METHODS}, got {method!r}")
    if options and method != "exact":
        raise ValueError(
            f"engine options ({', '.join(sorted(options))}) apply to method='exact' only"
        )
    if method == "cavity":
        return _result("cavity", posterior, _cavity(posterior))
    if method == "psis":
        return _psis(posterior, draws, random_seed)
    return _exact(posterior, random_seed, options)


def _result(method: str, posterior: Posterior, pointwise: np.ndarray, **extra) -> LOOResult:
    pointwise = np.asarray(pointwise, dtype=float)
    se = float(np.sqrt(pointwise.size * np.var(pointwise)))
    return LOOResult(method, posterior.method, float(pointwise.sum()), pointwise, se, **extra)


# ---------------------------------------------------------------------------- cavity
def _cavity(post: Posterior) -> np.ndarray:
    """log p(y_i | cavity_i) per case, or a ValueError for a posterior without a cavity
    form here."""
    if isinstance(post, EPPosterior):
        return post.loo_log_predictive_pointwise
    if isinstance(post, LaplacePosterior):
        mu, v = gaussian_cavity(post, post.W)
        return post.likelihood.log_predictive(post.y, mu, v)
    likelihood = getattr(post.likelihood, "name", "")
    if post.method in ("ep", "laplace") and likelihood == "softmax":
        raise ValueError(
            "the cavity leave-one-out form is binary here (one latent value per case): with "
            "the softmax likelihood use method='exact', or 'psis' on an MCMC fit"
        )
    raise ValueError(
        f"the {post.method!r} posterior has no cavity leave-one-out form here (EP's and "
        "Laplace's have, Vehtari et al. 2016): use method='psis' (Pareto-smoothed "
        "importance sampling from its draws) or 'exact' (n refits)"
    )


def gaussian_cavity(post: GaussianPosterior, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cavity N(mu_-i, v_-i) of every case of a Gaussian approximation
    N(m + K alpha, (K^-1 + W)^-1): its marginal with case i's site (precision W_i) removed.

    v_-i = s_i^2 / [B^-1]_ii, B = I + sW K sW (since 1 - W_i s_i^2 = [B^-1]_ii by
    Woodbury: no cancellation where a strong site makes W_i s_i^2 close to 1), and
    mu_-i = mu_i - v_-i alpha_i (the site's natural parameter is W_i mu_i + alpha_i).
    Vehtari et al. (2016), JMLR 17(103), section 3; for EP's sites (W = tau~) these are
    R&W eq. 3.56's cavities.

    Parameters
    ----------
    post : GaussianPosterior
    W : ndarray, shape (n,)
        The site precisions (``post.sW ** 2``; Laplace's W, EP's tau~).

    Returns
    -------
    mu, v : ndarray, shape (n,)
    """
    s2 = post._diag_sigma  # (careful for strong and weak sites: GaussianPosterior)
    binv = np.diag(cho_inverse(post.L))
    v = s2 / binv
    return post.latent_mean - v * post.alpha, v


# ------------------------------------------------------------------------------ psis
def _psis(post: Posterior, draws: int, random_seed) -> LOOResult:
    """PSIS-LOO through ``arviz.loo`` on the posterior's InferenceData."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # arviz's refactor notice
        import arviz as az

    if hasattr(post, "f_draws"):  # a posterior held as draws: its own
        idata = post.to_inference_data()
    else:
        idata = post.to_inference_data(draws=draws, random_seed=random_seed)
    if "log_likelihood" not in idata.groups():
        raise ValueError(
            f"the {post.method!r} posterior's InferenceData has no log_likelihood group, "
            "which PSIS needs: use method='exact'"
        )
    elpd = az.loo(idata, pointwise=True)
    pointwise = np.asarray(elpd["loo_i"].values, dtype=float)
    pareto_k = np.asarray(elpd["pareto_k"].values, dtype=float)
    if not np.all(np.isfinite(pointwise)):
        pointwise = _raw_importance_where_smoothing_fails(idata, pointwise)
    return _result("psis", post, pointwise, pareto_k=pareto_k)


def _raw_importance_where_smoothing_fails(idata: Any, pointwise: np.ndarray) -> np.ndarray:
    """The plain importance-sampling estimate -log mean_s exp(-log p(y_i | f_s)) where
    ``arviz.loo`` returned NaN.

    ArviZ's Pareto smoothing returns NaN for a case whose ratios 1 / p(y_i | f_s) are
    all equal to a few digits (a case every draw classifies with certainty: the fit of the
    tail has nothing to fit). The smoothed weights lie between the smallest and the largest
    raw weight, so both estimates lie in [min_s log p(y_i | f_s), max_s log p(y_i | f_s)]:
    the warning states that range, the most the two can differ by.
    """
    ll = idata.log_likelihood
    name = next(iter(ll.data_vars))
    values = np.asarray(ll[name].values, dtype=float)  # (chain, draw, *obs)
    values = values.reshape(-1, pointwise.size).T  # (case, draw)
    bad = np.flatnonzero(~np.isfinite(pointwise))
    raw = -log_mean_exp(-values[bad], axis=1)
    spread = float(np.max(values[bad].max(axis=1) - values[bad].min(axis=1)))
    if not np.all(np.isfinite(raw)):
        raise ValueError(
            "PSIS-LOO is undefined here: the log-likelihood of some draws is not finite"
        )
    warnings.warn(
        f"arviz.loo's Pareto smoothing failed (NaN) on {bad.size} case(s) whose draws "
        f"agree to within {spread:.2g} nats in log p(y_i | f): the plain importance "
        "estimate is used there (it differs from the smoothed one by at most that)",
        RuntimeWarning,
        stacklevel=4,
    )
    out = pointwise.copy()
    out[bad] = raw
    return out


# ----------------------------------------------------------------------------- exact
def _exact(post: Posterior, random_seed, options: dict[str, Any]) -> LOOResult:
    """n refits without case i, warm-started from the full fit; log p(y_i | x_i, D_-i)."""
    n = post.X.shape[0]
    pointwise, converged = loo_refits(post, np.arange(n), random_seed=random_seed, **options)
    if not converged.all():
        bad = np.flatnonzero(~converged)
        warnings.warn(
            f"{bad.size} of {n} leave-one-out refits did not converge (cases "
            f"{', '.join(map(str, bad[:10]))}{', ...' if bad.size > 10 else ''})",
            RuntimeWarning,
            stacklevel=3,
        )
    return _result("exact", post, pointwise, n_refits=n, converged=converged)


def loo_refits(
    posterior: Posterior,
    cases: Any,
    *,
    random_seed: int | np.random.Generator | None = None,
    **options: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """``log p(y_i | x_i, D_-i)`` by refitting without case i, for the given cases only.

    ``loo(posterior, "exact")`` is this for every case. For a subsample of the cases it
    gives the exact terms of the difference estimator of elpd_loo (Magnusson, Andersen,
    Jonasson and Vehtari 2019, "Bayesian leave-one-out cross-validation for large data",
    ICML): the cheap form (e.g. the cavity) for every case, corrected by the mean of
    exact - cheap over a random subsample.

    Parameters
    ----------
    posterior : Posterior
        The full fit, as for ``loo``.
    cases : array of int
        The cases to leave out, one refit each (distinct, in 0..n-1).
    random_seed : int or Generator, optional
        ``gc.fit``'s ``random_seed`` of every refit.
    **options
        The refits' engine options, as for ``loo(..., "exact")`` (warm start from the full
        fit with case i dropped unless ``warm_start`` is given). EP's fixed point does not
        depend on the schedule: ``schedule="auto"`` (Anderson-accelerated parallel EP)
        reaches it from the warm start in 8-11 sweeps where plain parallel EP took 75-95
        (crabs, n = 160, sigma_f^2 = 1e5; results/loo).

    Returns
    -------
    values : ndarray, shape (len(cases),)
        ``log p(y_i | x_i, D_-i)`` per case, in the order of ``cases``.
    converged : ndarray of bool, shape (len(cases),)
        Whether each refit's engine reported convergence.
    """
    if not isinstance(posterior, Posterior):
        raise ValueError(f"loo_refits takes a fitted Posterior, got {type(posterior).__name__}")
    n = posterior.X.shape[0]
    cases = np.asarray(cases)
    if cases.ndim != 1 or not np.issubdtype(cases.dtype, np.integer):
        raise ValueError(f"cases must be a 1-d array of case indices, got {cases!r}")
    if np.any((cases < 0) | (cases >= n)) or np.unique(cases).size != cases.size:
        raise ValueError(f"cases must be distinct indices in 0..{n - 1}")
    engine = get_engine(posterior.method)
    warm = getattr(posterior, "warm_start", None)
    warm_it = warm is not None and engine.takes_option("warm_start") and "warm_start" not in options
    if engine.takes_option("inducing") and "inducing" not in options:
        options = {**options, "inducing": posterior.inducing}  # the same sparse prior
    y = getattr(posterior, "classes_", None)
    labels = posterior.y if y is None or posterior.likelihood.latent_dim == 1 else y[posterior.y]
    values, converged = np.empty(cases.size), np.zeros(cases.size, dtype=bool)
    for j, i in enumerate(cases):
        keep = np.arange(n) != i
        opts = {**options, "warm_start": _drop_case(warm, i, n)} if warm_it else options
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # recorded: converged
            try:
                refit = fit(
                    posterior.X[keep],
                    labels[keep],
                    method=posterior.method,
                    kernel=posterior.kernel,
                    likelihood=posterior.likelihood,
                    mean=posterior.mean,
                    random_seed=random_seed,
                    **opts,
                )
            except ValueError as exc:
                raise ValueError(f"leaving out case {i}: {exc}") from exc
        values[j] = refit.log_predictive(posterior.X[i : i + 1], labels[i : i + 1])[0]
        converged[j] = bool(refit.convergence.converged)
    return values, converged


def _drop_case(warm: Any, i: int, n: int) -> Any:
    """A full fit's ``warm_start`` without case i: every array whose first axis has
    length n loses row i (alpha, or the sites (ttau, tnu) / (W, b)); others are kept."""
    if isinstance(warm, tuple | list):
        return type(warm)(_drop_case(w, i, n) for w in warm)
    a = np.asarray(warm)
    return np.delete(a, i, axis=0) if a.ndim >= 1 and a.shape[0] == n else a
