"""The MCMC reference: the same GP classifier sampled with PyMC, and a gold-standard evidence.

At fixed hyperparameters the model is written non-centred, f = m + L v with v ~ N(0, I)
and L = chol(K) computed once outside the graph, or by default (``parameterization``) in
the eigenbasis of K above the jitter level, whitened by the Laplace approximation: fewer
dimensions, cheaper gradients and shorter NUTS trajectories; the likelihood is log Phi(y f) through
PyMC's stable log normal CDF (probit) or a Bernoulli with ``logit_p = f`` (logistic).
NUTS runs on nutpie's compiled backend when nutpie is installed, otherwise on PyMC's
own sampler (``nuts_sampler`` chooses).

Prediction conditions every draw of f on the GP: f* | f ~ N(m + K*^T K^-1 (f - m),
k** - K*^T K^-1 K*), integrates the link against that Gaussian per draw (closed form for
probit) and averages over draws.

The gold-standard log marginal likelihood (``evidence=True``) is annealed importance
sampling (Neal 2001; Kuss and Rasmussen 2005): independent runs start from the prior and
move through the tempered posteriors p(f) p(y | f)^beta, beta = (t / T)^4, with one
elliptical slice sampling step (Murray, Adams and MacKay 2010) per temperature; the
estimate is log mean_r w_r with a delta-method standard error across runs.

With the softmax likelihood (C classes) the model has C latent GPs sharing the kernel,
F = G U or F = L V column by column, and a categorical likelihood with ``logit_p = F``;
prediction conditions every draw's C functions on the GP (independent given the draw,
with the same conditional variance) and integrates the softmax against that Gaussian.
Fixed hyperparameters only: full Bayes and the AIS evidence are binary only.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import scipy.linalg
import xarray as xr
from scipy.special import logsumexp

from .._validation import check_kernel_matrix
from ..kernels import Kernel
from ..likelihoods import Likelihood, Logistic, Probit, Softmax
from ..numerics import JITTER, cho_solve, chol_B, cholesky
from ..posterior import Convergence, MulticlassPosterior, Posterior

__all__ = [
    "Diagnostics",
    "SamplePosterior",
    "SoftmaxSamplePosterior",
    "ais_log_evidence",
    "ais_log_evidence_from_sites",
    "infer",
]

#: Options ``gc.fit(method="mcmc", ...)`` accepts, with their defaults (PyMC's names).
OPTIONS = {
    "draws": 1000,
    "tune": 1000,
    "chains": 4,
    "random_seed": None,
    "target_accept": None,
    "nuts_sampler": None,
    "parameterization": "laplace",
    "full_bayes": False,
    "priors": None,
    "evidence": False,
    "ais_start": "ep",
    "ais_temperatures": None,
    "ais_runs": 32,
    "rhat_max": 1.01,
    "ess_min": 400.0,
    "progressbar": False,
}
#: What this engine can do (see :data:`gpc_compare.engines.CAPABILITY_NAMES`); its
#: evidence (AIS) is optional (``evidence=True``), so "evidence" is not among them.
CAPABILITIES = frozenset({"draws", "multiclass", "hyperparameter_sampling", "reference"})

# Predictions integrate the link per draw; without a closed form (logistic) at most this
# many evenly spaced draws are used; in full Bayes, where every draw has its own kernel
# matrix to factorise, at most _MAX_FULL_BAYES_DRAWS.
_MAX_QUADRATURE_DRAWS = 500
_MAX_FULL_BAYES_DRAWS = 200
#: Prior standard deviation of each log hyperparameter (and the mean) in full Bayes.
DEFAULT_PRIOR_SD = 1.0


@dataclass(frozen=True)
class Diagnostics:
    """Convergence diagnostics of an MCMC fit, over f (and theta in full Bayes).

    Attributes
    ----------
    r_hat_max : float
        Largest rank-normalised split R-hat.
    ess_bulk_min, ess_tail_min : float
        Smallest bulk and tail effective sample sizes.
    divergences : int
        Divergent transitions after tuning.
    passed : bool
        R-hat <= ``rhat_max``, bulk ESS >= ``ess_min`` and no divergences.
    message : str
        What failed, or that all passed.
    """

    r_hat_max: float
    ess_bulk_min: float
    ess_tail_min: float
    divergences: int
    passed: bool
    message: str


class SamplePosterior(Posterior):
    """A posterior held as draws of f at the training inputs: the Posterior contract.

    ``log_marginal_likelihood`` is the AIS estimate (fit with ``evidence=True``), with
    ``log_marginal_likelihood_se``; it gives no gradient (see
    :attr:`log_marginal_likelihood_gradient`).
    """

    method = "mcmc"

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        kernel: Kernel,
        likelihood: Likelihood,
        mean: float | None,
        *,
        f_draws: np.ndarray,
        idata,
        K: np.ndarray,
        L: np.ndarray,
        diagnostics: Diagnostics,
        evidence: tuple[float, float] | None,
        convergence: Convergence,
        theta_draws: np.ndarray | None = None,
    ) -> None:
        super().__init__(X, y, kernel, likelihood, mean)
        self.f_draws = f_draws  # (draws * chains, n)
        self.theta_draws = theta_draws  # (draws * chains, p) in full Bayes, else None
        self.idata = idata
        self.K = K
        self.L = L
        self.diagnostics = diagnostics
        self.convergence = convergence
        self._evidence = evidence

    @property
    def log_marginal_likelihood(self) -> float:
        if self._evidence is None:
            raise ValueError(
                "the MCMC evidence was not computed: fit with evidence=True for the "
                "annealed importance sampling estimate"
            )
        return self._evidence[0]

    @property
    def log_marginal_likelihood_se(self) -> float:
        """Standard error of the AIS estimate of the log evidence."""
        self.log_marginal_likelihood  # noqa: B018 (raises if not computed)
        return self._evidence[1]

    @property
    def log_marginal_likelihood_gradient(self) -> np.ndarray:
        """Not available: the Monte Carlo estimate of Fisher's identity,
        E[1/2 r^T dK r] - 1/2 tr(K^-1 dK) with r = K^-1 (f - m), is dominated by noise
        along the near-null directions of a smooth kernel matrix (tried: -0.0007 against
        EP's -0.78 on an easy 30-point problem). Use the approximations' gradients, or
        compare evidences across a grid of hyperparameters."""
        raise NotImplementedError(
            "the MCMC engine gives no evidence gradient: its Monte Carlo estimate is too "
            "noisy for smooth kernels; compare AIS evidences over a hyperparameter grid"
        )

    def record(self) -> dict[str, Any]:
        """:meth:`Posterior.record`, plus the AIS standard error and ``diagnostics``."""
        out = super().record()
        if out["log_evidence"] is not None:
            out["log_evidence_se"] = float(self.log_marginal_likelihood_se)
        out["diagnostics"] = dataclasses.asdict(self.diagnostics)
        return out

    @cached_property
    def latent_mean(self) -> np.ndarray:
        return self.f_draws.mean(axis=0)

    @cached_property
    def latent_var(self) -> np.ndarray:
        return self.f_draws.var(axis=0)

    def _conditional(self, Xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-draw conditional moments of f* | f: means (S, ns) and variances (S or 1, ns)."""
        if self.theta_draws is None:
            Ks = self.kernel(self.X, Xs)
            A = cho_solve(self.L, Ks)  # K^-1 K*
            means = self.prior_mean + (self.f_draws - self.prior_mean) @ A
            var = np.maximum(self.kernel.diag(Xs) - np.einsum("ij,ij->j", Ks, A), 0.0)
            return means, var[None, :]
        # full Bayes: each draw has its own hyperparameters, so its own K
        S = self.f_draws.shape[0]
        idx = np.linspace(0, S - 1, min(S, _MAX_FULL_BAYES_DRAWS)).round().astype(int)
        p = self.kernel.n_hyperparameters
        means, variances = [], []
        for s in idx:
            k = self.kernel.with_theta(self.theta_draws[s, :p])
            m = self.theta_draws[s, p] if self.mean is not None else self.prior_mean
            L = cholesky(k(self.X), jitter=JITTER, what="kernel matrix K")
            Ks = k(self.X, Xs)
            A = cho_solve(L, Ks)
            means.append(m + (self.f_draws[s] - m) @ A)
            variances.append(np.maximum(k.diag(Xs) - np.einsum("ij,ij->j", Ks, A), 0.0))
        return np.array(means), np.array(variances)

    def _predict_latent(self, Xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        means, var = self._conditional(Xs)
        # law of total variance over the draws
        return means.mean(axis=0), var.mean(axis=0) + means.var(axis=0)

    def _draws_for_integration(self, means: np.ndarray, var: np.ndarray):
        if isinstance(self.likelihood, Probit) or means.shape[0] <= _MAX_QUADRATURE_DRAWS:
            return means, var
        idx = np.linspace(0, means.shape[0] - 1, _MAX_QUADRATURE_DRAWS).round().astype(int)
        return means[idx], (var if var.shape[0] == 1 else var[idx])

    def predict_proba(self, Xs: np.ndarray, *, integration: str = "exact") -> np.ndarray:
        """P(y* = +1 | x*, data): the link integrated against f* | f per draw, averaged."""
        means, var = self._draws_for_integration(*self._conditional(self._check_Xs(Xs)))
        return self.likelihood.predict_proba(means, var, integration=integration).mean(axis=0)

    def log_predictive(
        self, Xs: np.ndarray, ys: np.ndarray, *, integration: str = "exact"
    ) -> np.ndarray:
        """log p(y* | x*, data) = log mean_s p(y* | f_s), by log-sum-exp over draws."""
        Xs, ys = self._check_test_set(Xs, ys)
        means, var = self._draws_for_integration(*self._conditional(Xs))
        lp = self.likelihood.log_predictive(ys[None, :], means, var, integration=integration)
        return logsumexp(lp, axis=0) - np.log(lp.shape[0])

    def to_inference_data(self, Xs: np.ndarray | None = None, random_seed=None):
        """The sampler's InferenceData (posterior, sample_stats, observed_data); with ``Xs``,
        a ``predictions`` group holding a draw of f* | f for every posterior draw."""
        idata = self.idata.copy()
        if Xs is not None:
            if self.theta_draws is not None:
                raise ValueError("predictions in to_inference_data need fixed hyperparameters")
            means, var = self._conditional(self._check_Xs(Xs))
            rng = np.random.default_rng(random_seed)
            fs = means + np.sqrt(var) * rng.standard_normal(means.shape)
            post = idata.posterior
            fs = fs.reshape(post.sizes["chain"], post.sizes["draw"], -1)
            idata.add_groups(
                predictions=xr.Dataset(
                    {"f_star": (("chain", "draw", "test"), fs)},
                    coords={
                        "chain": post["chain"].values,
                        "draw": post["draw"].values,
                        "test": np.arange(fs.shape[-1]),
                    },
                )
            )
        return idata


# ------------------------------------------------------------------------------ AIS
def ais_log_evidence(
    L: np.ndarray,
    m: float,
    y: np.ndarray,
    likelihood: Likelihood,
    *,
    temperatures: int = 2000,
    runs: int = 32,
    random_seed: int | np.random.Generator | None = None,
) -> tuple[float, float]:
    """log p(y) by annealed importance sampling, with its standard error.

    Parameters
    ----------
    L : ndarray, shape (n, n)
        Cholesky factor of the prior covariance K.
    m : float
        Constant prior mean.
    y : ndarray
        Labels in {-1, +1}.
    likelihood : Likelihood
    temperatures : int
        Number of annealing steps T; beta_t = (t / T)^4 (Kuss and Rasmussen 2005).
    runs : int
        Independent AIS runs (vectorised).
    random_seed : int or Generator, optional

    Returns
    -------
    log_z, se : float
        log mean_r w_r and its delta-method standard error,
        sd(w) / (sqrt(R) mean(w)) computed in log space.
    """
    rng = np.random.default_rng(random_seed)
    n = L.shape[0]
    yy = y[:, None]

    def loglik(g: np.ndarray) -> np.ndarray:
        return likelihood.log_prob(yy, m + g).sum(axis=0)

    g = L @ rng.standard_normal((n, runs))  # g = f - m ~ N(0, K)
    ll = loglik(g)
    log_w = np.zeros(runs)
    betas = (np.arange(temperatures + 1) / temperatures) ** 4
    for b_prev, b in zip(betas[:-1], betas[1:], strict=True):
        log_w += (b - b_prev) * ll
        g, ll = _elliptical_slice(g, ll, b, L, loglik, rng)
    log_z = logsumexp(log_w) - np.log(runs)
    w = np.exp(log_w - log_w.max())
    se = float(np.std(w, ddof=1) / (np.sqrt(runs) * np.mean(w)))
    return float(log_z), se


def ais_log_evidence_from_sites(
    K: np.ndarray,
    L: np.ndarray,
    m: float,
    y: np.ndarray,
    likelihood: Likelihood,
    ttau: np.ndarray,
    tnu: np.ndarray,
    *,
    temperatures: int = 300,
    runs: int = 32,
    random_seed: int | np.random.Generator | None = None,
) -> tuple[float, float]:
    """log p(y) by AIS annealed from a Gaussian approximation (EP's) instead of the prior.

    With the site terms t(g) = exp(-1/2 g^T Lambda g + b^T g) (Lambda = diag(ttau),
    b = tnu - ttau m, g = f - m), the intermediate targets are

        pi_beta(g) ∝ N(g; 0, K) t(g)^(1 - beta) p(y | m + g)^beta,   beta: 0 -> 1,

    so pi_0 is the approximation itself, with the closed-form normaliser
    Z_0 = |B|^(-1/2) exp(1/2 b^T Sigma b) (B = I + Lambda^1/2 K Lambda^1/2, Sigma =
    (K^-1 + Lambda)^-1), and pi_1 the posterior. The importance weights multiply
    pi_beta_t / pi_beta_(t-1) = [p(y|g) / t(g)]^(beta_t - beta_(t-1)); log p(y) =
    log Z_0 + log mean w, unbiased in Z for any start (Neal 2001). Because EP is close to
    the posterior, the path is short: a few hundred temperatures do better than thousands
    from the prior. Each transition is an elliptical slice step for the Gaussian part
    N(mu_beta, Sigma_beta) (one Cholesky of B_beta per temperature; samples by Matheron's
    rule) and the likelihood p(y | m + g)^beta.

    Parameters
    ----------
    K, L : ndarray, shape (n, n)
        Prior covariance and its lower Cholesky factor.
    m : float
        Constant prior mean.
    y : ndarray
        Labels in {-1, +1}.
    likelihood : Likelihood
    ttau, tnu : ndarray, shape (n,)
        Site precisions (>= 0) and natural means of the approximation (EP's ``ttau``, ``tnu``).
    temperatures : int
        Annealing steps, beta_t = t / T.
    runs : int
        Independent AIS runs (vectorised).
    random_seed : int or Generator, optional

    Returns
    -------
    log_z, se : float
        As :func:`ais_log_evidence`.
    """
    rng = np.random.default_rng(random_seed)
    n = K.shape[0]
    yy = y[:, None]
    b = tnu - ttau * m

    def loglik(g: np.ndarray) -> np.ndarray:
        return likelihood.log_prob(yy, m + g).sum(axis=0)

    def log_sites(g: np.ndarray) -> np.ndarray:
        return -0.5 * np.einsum("i,ij,ij->j", ttau, g, g) + b @ g

    def gaussian(beta: float):
        """Mean and a sampler of N(mu, Sigma) ∝ N(0, K) t(g)^(1 - beta), and log|B|."""
        s = (1.0 - beta) * ttau
        sW = np.sqrt(s)
        LB = chol_B(K, sW)

        def sigma_times(v):  # Sigma v = K v - K S^1/2 B^-1 S^1/2 K v
            Kv = K @ v
            return Kv - K @ (sW[:, None] * cho_solve(LB, sW[:, None] * Kv))

        mu = sigma_times(((1.0 - beta) * b)[:, None])[:, 0]

        def sample(k: int) -> np.ndarray:  # Matheron: f0 - K S^1/2 B^-1 (S^1/2 f0 + z)
            f0 = L @ rng.standard_normal((n, k))
            z = rng.standard_normal((n, k))
            return f0 - K @ (sW[:, None] * cho_solve(LB, sW[:, None] * f0 + z))

        return mu, sample, 2.0 * np.sum(np.log(np.diag(LB)))

    mu, sample, logdet_B = gaussian(0.0)
    log_z0 = -0.5 * logdet_B + 0.5 * float(b @ mu)  # mu = Sigma b at beta = 0
    g = mu[:, None] + sample(runs)
    ll, ls = loglik(g), log_sites(g)
    log_w = np.zeros(runs)
    betas = np.arange(temperatures + 1) / temperatures
    for b_prev, beta in zip(betas[:-1], betas[1:], strict=True):
        log_w += (beta - b_prev) * (ll - ls)
        mu, sample, _ = gaussian(beta)
        h, ll = _elliptical_slice(g - mu[:, None], ll, beta, None, None, rng, nu=sample(runs),
                                  loglik_at=lambda h, mu=mu: loglik(mu[:, None] + h))  # fmt: skip
        g = mu[:, None] + h
        ls = log_sites(g)
    log_z = log_z0 + logsumexp(log_w) - np.log(runs)
    w = np.exp(log_w - log_w.max())
    se = float(np.std(w, ddof=1) / (np.sqrt(runs) * np.mean(w)))
    return float(log_z), se


def _elliptical_slice(
    g, ll, beta, L, loglik, rng, max_shrinks: int = 200, *, nu=None, loglik_at=None
):
    """One elliptical slice sampling step per column, invariant for N(0, C) p(y|f)^beta.

    ``nu`` is a draw from N(0, C) (default: L z, C = L L^T); ``loglik_at`` maps the
    state to log p(y | f) (default ``loglik``).
    """
    n, runs = g.shape
    if nu is None:
        nu = L @ rng.standard_normal((n, runs))
    if loglik_at is not None:
        loglik = loglik_at
    log_u = beta * ll + np.log(rng.random(runs))
    theta = rng.uniform(0.0, 2.0 * np.pi, runs)
    lo, hi = theta - 2.0 * np.pi, theta.copy()
    new_g, new_ll = g.copy(), ll.copy()
    active = np.ones(runs, dtype=bool)
    for _ in range(max_shrinks):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        c, s = np.cos(theta[idx]), np.sin(theta[idx])
        prop = g[:, idx] * c + nu[:, idx] * s
        prop_ll = loglik(prop)
        ok = beta * prop_ll > log_u[idx]
        acc = idx[ok]
        new_g[:, acc], new_ll[acc] = prop[:, ok], prop_ll[ok]
        active[acc] = False
        rej = idx[~ok]
        neg = theta[rej] < 0
        lo[rej] = np.where(neg, theta[rej], lo[rej])
        hi[rej] = np.where(neg, hi[rej], theta[rej])
        theta[rej] = rng.uniform(lo[rej], hi[rej])
    return new_g, new_ll  # a column that never accepted keeps its state (theta -> 0)


# ---------------------------------------------------------------------------- sampling
def _check_complete(idata, draws: int, chains: int) -> None:
    """PyMC and nutpie return the draws so far when interrupted: refuse a partial trace."""
    post = idata.posterior
    got = (post.sizes.get("chain", 0), post.sizes.get("draw", 0))
    if got != (chains, draws):
        raise RuntimeError(
            f"sampling stopped early (interrupted?): {got[0]} chains x {got[1]} draws of "
            f"{chains} x {draws}"
        )


def _default_sampler() -> str:
    try:
        import nutpie  # noqa: F401
    except ImportError:
        return "pymc"
    return "nutpie"


def _diagnose(idata, rhat_max: float, ess_min: float, var_names: list[str]) -> Diagnostics:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import arviz as az

        def extreme(ds, how):
            return float(how([float(getattr(ds[v], how.__name__)()) for v in var_names]))

        rhat = extreme(az.rhat(idata, var_names=var_names), max)
        bulk = extreme(az.ess(idata, var_names=var_names, method="bulk"), min)
        tail = extreme(az.ess(idata, var_names=var_names, method="tail"), min)
    div = int(idata.sample_stats["diverging"].sum()) if "diverging" in idata.sample_stats else 0
    problems = []
    if np.isnan(rhat):
        problems.append("R-hat undefined (it needs at least two chains)")
    elif not rhat <= rhat_max:
        problems.append(f"R-hat {rhat:.3f} > {rhat_max}")
    if not bulk >= ess_min:
        problems.append(f"bulk ESS {bulk:.0f} < {ess_min:.0f}")
    if div:
        problems.append(f"{div} divergences")
    message = "passed" if not problems else "not passed: " + "; ".join(problems)
    return Diagnostics(rhat, bulk, tail, div, not problems, message)


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
    parameterization: str = OPTIONS["parameterization"],
    full_bayes: bool = OPTIONS["full_bayes"],
    priors: dict[str, tuple[float, float]] | None = OPTIONS["priors"],
    evidence: bool = OPTIONS["evidence"],
    ais_start: str = OPTIONS["ais_start"],
    ais_temperatures: int | None = OPTIONS["ais_temperatures"],
    ais_runs: int = OPTIONS["ais_runs"],
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
    parameterization : {"laplace", "prior"}
        Fixed hyperparameters: "prior" is the non-centred f = m + L v, v ~ N(0, I),
        L = chol(K). "laplace" (default) writes f = m + G u with K ~= G G^T from the
        eigenvectors of K above the jitter the model already adds (for smooth kernels a
        fraction of n: 191 of 300 in the benchmark), and whitens u by the Laplace
        approximation, u = a + B z, B B^T = (I + G^T W G)^-1, so that z is close to
        N(0, I) a posteriori. A linear change of variables with a constant Jacobian:
        both sample the same posterior (up to prior variance at the jitter's level,
        recorded as ``idata.attrs["dropped_prior_variance"]``); "laplace" is faster.
    full_bayes : bool
        Sample the hyperparameters jointly with f (f = m + chol(K(theta)) v inside the
        graph) instead of holding them at the kernel's values.
    priors : dict, optional
        Full Bayes: ``{name: (mu, sigma)}``, a normal prior on each log hyperparameter
        (and on ``"mean"``), by ``hyperparameter_names``. Default: centred on the given
        kernel's values (and the given mean), standard deviation 1 (a factor of e
        either way on the natural scale).
    evidence : bool
        Also estimate log p(y | X, theta) by annealed importance sampling (fixed
        hyperparameters only).
    ais_start : {"ep", "prior"}
        Where the annealing starts: at EP's approximation of the posterior at the same
        hyperparameters (default; :func:`ais_log_evidence_from_sites`), or at the prior
        (:func:`ais_log_evidence`, Kuss & Rasmussen 2005). Both are unbiased in p(y) and
        biased low in log p(y) when the path is too short; from the prior it is long: on
        200 ionosphere cases at sigma_f^2 = e^4, 2000 temperatures from the prior gave
        -90.1 and 8000 gave -85.0, against -82.48 +- 0.12 from EP with 1000 (EP's own
        evidence -82.58).
    ais_temperatures : int, optional
        The AIS schedule length (default 1000 from EP, 2000 from the prior).
    ais_runs : int
        Independent AIS runs.
    rhat_max, ess_min : float
        Thresholds of ``post.diagnostics.passed`` (no divergences is the third).
    progressbar : bool
        Show PyMC's progress bar.
    """
    if not isinstance(likelihood, Probit | Logistic | Softmax):
        raise ValueError(
            "the MCMC engine supports the probit, logistic and softmax likelihoods, "
            f"not {likelihood!r}"
        )
    sampler = nuts_sampler or _default_sampler()
    if sampler not in ("nutpie", "pymc"):
        raise ValueError(f"nuts_sampler must be 'nutpie' or 'pymc', got {nuts_sampler!r}")
    for name, value in (("draws", draws), ("tune", tune), ("chains", chains)):
        if int(value) != value or value < (1 if name != "tune" else 0):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import pymc as pm
        import pytensor.tensor as pt
        from pymc.distributions.dist_math import normal_lcdf

    if target_accept is None:
        target_accept = 0.95 if full_bayes else 0.8
    if parameterization not in ("laplace", "prior"):
        raise ValueError(f"parameterization must be 'laplace' or 'prior', got {parameterization!r}")
    if isinstance(likelihood, Softmax):
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
    if ais_start not in ("ep", "prior"):
        raise ValueError(f"ais_start must be 'ep' or 'prior', got {ais_start!r}")
    if full_bayes and evidence:
        raise ValueError(
            "evidence=True estimates p(y | X, theta) at fixed hyperparameters; "
            "it does not combine with full_bayes=True"
        )
    n = X.shape[0]
    m = 0.0 if mean is None else float(mean)
    K = check_kernel_matrix(kernel, X)
    L = cholesky(K, jitter=JITTER, what="kernel matrix K")
    names = kernel.hyperparameter_names + ([] if mean is None else ["mean"])
    with pm.Model(coords={"obs": np.arange(n), "hyperparameter": names}) as model:
        if full_bayes or parameterization == "prior":
            v = pm.Normal("v", 0.0, 1.0, dims="obs")
        if full_bayes:
            mu, sd = _prior_moments(kernel, mean, names, priors)
            theta = pm.Normal("theta", mu, sd, dims="hyperparameter")
            p = kernel.n_hyperparameters
            Kt = kernel.symbolic(X, theta[:p])
            Kt = Kt + JITTER * max(float(np.mean(np.diag(K))), 1.0) * np.eye(n)
            m_t = theta[p] if mean is not None else m
            f = pm.Deterministic("f", m_t + pt.dot(pt.linalg.cholesky(Kt), v), dims="obs")
        elif parameterization == "laplace":
            G, dropped = _prior_factor(K)
            a, B = _laplace_whitening(X, y, kernel, likelihood, mean, G)
            model.add_coord("basis", np.arange(G.shape[1]))
            # z has the flat base measure; the GP prior enters as -|u|^2 / 2, f = m + G u
            z = pm.Flat("z", dims="basis")
            u = a + pt.dot(B, z)
            pm.Potential("prior", -0.5 * pt.sum(u**2))
            f = pm.Deterministic("f", m + pt.dot(G, u), dims="obs")
        else:
            f = pm.Deterministic("f", m + pt.dot(L, v), dims="obs")  # non-centred, L fixed
        if isinstance(likelihood, Probit):
            # log Phi(y f) through PyMC's stable log normal CDF (exact in the tails)
            pm.Potential("log_likelihood", normal_lcdf(0.0, 1.0, y * f).sum())
        else:
            pm.Bernoulli("y", logit_p=f, observed=(y > 0).astype(int), dims="obs")
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pm.sample(
            draws=int(draws),
            tune=int(tune),
            chains=int(chains),
            random_seed=random_seed,
            target_accept=target_accept,
            nuts_sampler=sampler,
            progressbar=progressbar,
            compute_convergence_checks=False,
        )
    if parameterization == "laplace" and not full_bayes:
        idata.attrs["dropped_prior_variance"] = dropped
    if "observed_data" not in idata.groups():
        idata.add_groups(observed_data=xr.Dataset({"y": ("obs", y)}, coords={"obs": np.arange(n)}))
    _check_complete(idata, draws, chains)
    f_draws = idata.posterior["f"].values.reshape(-1, n)
    theta_draws = (
        idata.posterior["theta"].values.reshape(f_draws.shape[0], -1) if full_bayes else None
    )
    diagnostics = _diagnose(idata, rhat_max, ess_min, ["f", "theta"] if full_bayes else ["f"])
    if not diagnostics.passed:
        warnings.warn(f"MCMC diagnostics {diagnostics.message}", RuntimeWarning, stacklevel=2)
    ev = None
    if evidence:
        seed = np.random.default_rng(random_seed).integers(2**32)
        if ais_start == "ep":
            from . import ep as ep_engine

            approx = ep_engine.infer(X, y, kernel, likelihood, mean)
            ev = ais_log_evidence_from_sites(
                L @ L.T, L, m, y, likelihood, approx.ttau, approx.tnu,  # K with its jitter
                temperatures=ais_temperatures or 1000, runs=ais_runs, random_seed=seed,
            )  # fmt: skip
        else:
            ev = ais_log_evidence(
                L, m, y, likelihood, temperatures=ais_temperatures or 2000, runs=ais_runs,
                random_seed=seed,
            )  # fmt: skip
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
        evidence=ev,
        convergence=Convergence(
            diagnostics.passed, int(draws) + int(tune), diagnostics.r_hat_max, diagnostics.message
        ),
        theta_draws=theta_draws,
    )


def _prior_factor(K: np.ndarray) -> tuple[np.ndarray, float]:
    """G with K ~= G G^T from the eigenvectors of K whose eigenvalues exceed the jitter
    the model already adds (JITTER times the mean prior variance): directions below it
    carry prior variance at the jitter's level. Returns G (n, r) and the prior variance
    dropped (the sum of the discarded eigenvalues)."""
    w, U = np.linalg.eigh(K)
    keep = w > JITTER * max(float(np.mean(np.diag(K))), 1.0)
    return U[:, keep] * np.sqrt(w[keep]), float(np.clip(w[~keep], 0.0, None).sum())


def _laplace_whitening(X, y, kernel, likelihood, mean, G):
    """a and B such that f = m + G (a + B z) has, for z ~ N(0, I), the Laplace posterior:
    a = G^+ (f^ - m), B = chol(I + G^T W G)^-T."""
    from . import laplace

    lap = laplace.infer(X, y, kernel, likelihood, mean)
    r = G.shape[1]
    M = np.eye(r) + G.T @ (lap.W[:, None] * G)
    LM = cholesky(M, what="matrix I + G^T W G")
    B = scipy.linalg.solve_triangular(LM.T, np.eye(r), lower=False, check_finite=False)
    a = np.linalg.lstsq(G, lap.f_hat - lap.prior_mean, rcond=None)[0]
    return a, B


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


# ----------------------------------------------------------------------------- softmax
class SoftmaxSamplePosterior(MulticlassPosterior):
    """Draws of the C latent functions at the training inputs: the multi-class contract.

    ``f_draws`` has shape (draws * chains, n, C). No evidence and no gradient (see
    :class:`SamplePosterior`).
    """

    method = "mcmc"

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        kernel: Kernel,
        likelihood: Softmax,
        *,
        f_draws: np.ndarray,
        idata,
        K: np.ndarray,
        L: np.ndarray,
        diagnostics: Diagnostics,
        convergence: Convergence,
    ) -> None:
        super().__init__(X, y, kernel, likelihood, None, n_classes=f_draws.shape[2])
        self.f_draws = f_draws
        self.idata = idata
        self.K = K
        self.L = L
        self.diagnostics = diagnostics
        self.convergence = convergence

    @property
    def log_marginal_likelihood(self) -> float:
        raise ValueError("the MCMC engine gives no evidence with the softmax likelihood")

    def record(self) -> dict[str, Any]:
        """:meth:`Posterior.record`, plus ``diagnostics``."""
        return {**super().record(), "diagnostics": dataclasses.asdict(self.diagnostics)}

    @property
    def log_marginal_likelihood_gradient(self) -> np.ndarray:
        raise NotImplementedError("the MCMC engine gives no evidence gradient")

    @cached_property
    def latent_mean(self) -> np.ndarray:
        """Posterior mean of f, shape (n, C)."""
        return self.f_draws.mean(axis=0)

    @cached_property
    def latent_var(self) -> np.ndarray:
        """Posterior variance of f, shape (n, C)."""
        return self.f_draws.var(axis=0)

    def _conditional(self, Xs: np.ndarray, draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """f*_c | f_c ~ N(k*^T K^-1 f_c, k** - k*^T K^-1 k*) per draw and class: means
        (S, m, C) and the shared variance (m,)."""
        Ks = self.kernel(self.X, Xs)
        A = cho_solve(self.L, Ks)  # K^-1 K*
        means = np.einsum("snc,nm->smc", draws, A)
        var = np.maximum(self.kernel.diag(Xs) - np.einsum("ij,ij->j", Ks, A), 0.0)
        return means, var

    def _predict_latent(self, Xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean (m, C) and covariance (m, C, C) of f* (law of total covariance)."""
        means, var = self._conditional(Xs, self.f_draws)
        mu = means.mean(axis=0)
        d = means - mu
        cov = np.einsum("smc,smd->mcd", d, d) / means.shape[0]
        idx = np.arange(self.n_classes)
        cov[:, idx, idx] += var[:, None]
        return mu, cov

    def _integration_moments(
        self, Xs: np.ndarray, integration: str | None
    ) -> tuple[np.ndarray, np.ndarray]:
        draws = self.f_draws
        if integration != "mc" and (integration == "quadrature" or self.n_classes <= 3):
            # quadrature per draw: at most _MAX_QUADRATURE_DRAWS evenly spaced draws
            S = draws.shape[0]
            if S > _MAX_QUADRATURE_DRAWS:
                draws = draws[np.linspace(0, S - 1, _MAX_QUADRATURE_DRAWS).round().astype(int)]
        means, var = self._conditional(Xs, draws)
        cov = var[:, None, None] * np.eye(self.n_classes)
        return means, cov[None]

    def to_inference_data(self):
        """The sampler's InferenceData (f with dims ``obs``, ``class``)."""
        return self.idata.copy()


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
    G^T (delta_cc' D_c - D_c D_c') G since W = D - Pi Pi^T.
    """
    from ._laplace_softmax import check_codes, infer_softmax

    codes, C = check_codes(y)
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
            G, dropped = _prior_factor(K)
            r = G.shape[1]
            lap = infer_softmax(X, codes, kernel, likelihood)
            pi = lap.pi
            GD = [G.T * pi[:, c] for c in range(C)]  # G^T D_c
            P = np.eye(C * r)
            for c in range(C):
                for d in range(C):
                    P[c * r : (c + 1) * r, d * r : (d + 1) * r] += (
                        GD[c] @ G if c == d else 0.0
                    ) - GD[c] @ (pi[:, d, None] * G)
            LP = cholesky(P, what="matrix I + G^T W G")
            B = scipy.linalg.solve_triangular(LP.T, np.eye(C * r), lower=False, check_finite=False)
            a = np.linalg.lstsq(G, lap.f_hat, rcond=None)[0].T.ravel()  # class-major
            model.add_coord("basis", np.arange(C * r))
            z = pm.Flat("z", dims="basis")
            u = a + pt.dot(B, z)
            pm.Potential("prior", -0.5 * pt.sum(u**2))
            F = pm.Deterministic("f", pt.dot(G, u.reshape((C, r)).T), dims=("obs", "class"))
        pm.Categorical("y", logit_p=F, observed=codes, dims="obs")
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            random_seed=random_seed,
            target_accept=target_accept,
            nuts_sampler=nuts_sampler,
            progressbar=progressbar,
            compute_convergence_checks=False,
        )
    if parameterization == "laplace":
        idata.attrs["dropped_prior_variance"] = dropped
    if "observed_data" not in idata.groups():
        idata.add_groups(
            observed_data=xr.Dataset({"y": ("obs", codes)}, coords={"obs": np.arange(n)})
        )
    _check_complete(idata, draws, chains)
    f_draws = idata.posterior["f"].values.reshape(-1, n, C)
    diagnostics = _diagnose(idata, rhat_max, ess_min, ["f"])
    if not diagnostics.passed:
        warnings.warn(f"MCMC diagnostics {diagnostics.message}", RuntimeWarning, stacklevel=3)
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
