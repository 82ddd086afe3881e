"""Posteriors held as draws of the latent f at the training inputs (the MCMC engine's).

Prediction conditions every draw of f on the GP: f* | f ~ N(m + K*^T K^-1 (f - m),
k** - K*^T K^-1 K*) (R&W eq. 2.19 with the draw as noise-free observations), integrates
the link against that Gaussian per draw (closed form for probit and Gaussian) and
averages over draws.
:class:`SamplePosterior` is the binary form, :class:`SoftmaxSamplePosterior` the form for
C classes; :class:`_Draws` holds what they share: the draws, the sampler's InferenceData,
K and its factor, the convergence diagnostics.
"""

from __future__ import annotations

import dataclasses
import warnings
from functools import cached_property
from typing import Any

import numpy as np
import xarray as xr

from ..kernels import Kernel
from ..likelihoods import SOFTMAX_MC_SAMPLES, Gaussian, Likelihood, Probit, Softmax
from ..numerics import JITTER, cho_solve, cholesky, log_mean_exp
from .base import Convergence, Posterior
from .multiclass import MulticlassPosterior

__all__ = ["SamplePosterior", "SoftmaxSamplePosterior"]

# Predictions integrate the link per draw; without a closed form (logistic) at most this
# many evenly spaced draws are used; in full Bayes, where every draw has its own kernel
# matrix to factorise, at most _MAX_FULL_BAYES_DRAWS.
_MAX_QUADRATURE_DRAWS = 500
_MAX_FULL_BAYES_DRAWS = 200


def _with_log_likelihood(idata: Any, likelihood: Likelihood, y: np.ndarray) -> Any:
    """``idata`` with a ``log_likelihood`` group (variable ``y``: log p(y_i | f_i) for every
    draw of ``posterior.f``, dims chain, draw, obs), which ``arviz.loo`` and
    ``arviz.compare`` read; one already there is kept."""
    if "log_likelihood" in idata.groups():
        return idata
    f = idata.posterior["f"]
    values = f.values
    labels = np.broadcast_to(y, values.shape[: 2 + y.ndim])  # (softmax: F has a class axis)
    ll = likelihood.log_prob(labels, values)
    coords = {name: f[name].values for name in ("chain", "draw", "obs")}
    idata.add_groups(
        log_likelihood=xr.Dataset({"y": (("chain", "draw", "obs"), ll)}, coords=coords)
    )
    return idata


class _Draws:
    """What a posterior held as draws carries, set once by :meth:`_set_draws`.

    Attributes
    ----------
    f_draws : ndarray
        (draws * chains, n), or (draws * chains, n, C) for C classes.
    idata : arviz.InferenceData
        The sampler's output.
    K, L : ndarray, shape (n, n)
        The kernel matrix and its Cholesky factor.
    diagnostics : gpc_compare.diagnostics.Diagnostics
        R-hat, ESS, divergences and the run: draws, tuning iterations, chains (typed
        loosely here: that record lives a layer up).
    convergence : Convergence
    """

    f_draws: np.ndarray
    idata: Any
    K: np.ndarray
    L: np.ndarray
    diagnostics: Any
    convergence: Convergence

    def _set_draws(
        self,
        f_draws: np.ndarray,
        idata: Any,
        K: np.ndarray,
        L: np.ndarray,
        diagnostics: Any,
        convergence: Convergence,
    ) -> None:
        self.f_draws = f_draws
        self.idata = idata
        self.K = K
        self.L = L
        self.diagnostics = diagnostics
        self.convergence = convergence

    def _diagnostics_record(self) -> dict[str, Any]:
        return {"diagnostics": dataclasses.asdict(self.diagnostics)}

    @cached_property
    def latent_mean(self) -> np.ndarray:
        """Posterior mean of f at the training inputs (over the draws)."""
        return self.f_draws.mean(axis=0)

    @cached_property
    def latent_var(self) -> np.ndarray:
        """Posterior variance of f at the training inputs (over the draws)."""
        return self.f_draws.var(axis=0)

    def _by_chain(self, values: np.ndarray) -> np.ndarray:
        """Per-draw values (S', m) of the draws prediction uses as (chains, k, m): the
        draws all of them (S' = chains * draws) or the evenly spaced subset that
        :meth:`_conditional` (full Bayes), :meth:`_draws_for_integration` or the
        multi-class ``_integration_moments`` took, grouped by the chain each came from
        (each cut to the shortest share, at most one draw)."""
        post = self.idata.posterior
        chains, per_chain = post.sizes["chain"], post.sizes["draw"]
        S = chains * per_chain
        if values.shape[0] == S:
            return values.reshape(chains, per_chain, -1)
        # the subset: np.linspace(0, S - 1, S').round(), as both take it
        idx = np.linspace(0, S - 1, values.shape[0]).round().astype(int)
        groups = [values[idx // per_chain == c] for c in range(chains)]
        k = min(g.shape[0] for g in groups)
        return np.stack([g[:k] for g in groups])


class SamplePosterior(_Draws, Posterior):
    """A posterior held as draws of f at the training inputs: the Posterior contract.

    ``log_marginal_likelihood`` is the gold-standard estimate (fit with ``evidence=True``:
    :func:`gpc_compare.evidence.estimate`'s, held whole as ``evidence_estimate``), with
    ``log_marginal_likelihood_se``; it gives no gradient (see
    :attr:`log_marginal_likelihood_gradient`).

    Parameters
    ----------
    X : ndarray, shape (n, d)
        The training inputs.
    y : ndarray, shape (n,)
        The training targets, checked: binary labels as {-1, +1}, class indices 0..C-1, or
        real values with the Gaussian likelihood.
    kernel : Kernel
        The covariance function, at the hyperparameters of the fit.
    likelihood : Likelihood
    mean : float or None
        The constant prior mean m; None for a zero mean that is not a hyperparameter.
    f_draws : ndarray, shape (draws * chains, n)
        The draws of f at the training inputs.
    idata : arviz.InferenceData
        The sampler's whole output (posterior, sample statistics).
    K : ndarray, shape (n, n)
        The prior covariance at the training inputs (with the sampler's jitter).
    L : ndarray, shape (n, n)
        Its lower Cholesky factor.
    diagnostics : Diagnostics
        The sampler's convergence diagnostics (:func:`gpc_compare.diagnostics.diagnose`).
    evidence : EvidenceEstimate or None
        The gold-standard evidence estimate, or None (fit without ``evidence``).
    convergence : Convergence
        How the engine's iteration ended.
    theta_draws : ndarray, shape (draws * chains, p), optional
        The hyperparameters' draws in full Bayes (log scale, as ``hyperparameter_names``);
        None at fixed hyperparameters.
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
        diagnostics: Any,
        evidence: Any | None,
        convergence: Convergence,
        theta_draws: np.ndarray | None = None,
    ) -> None:
        super().__init__(X, y, kernel, likelihood, mean)
        self._set_draws(f_draws, idata, K, L, diagnostics, convergence)  # f: (draws * chains, n)
        self.theta_draws = theta_draws  # (draws * chains, p) in full Bayes, else None
        #: The evidence estimate (an :class:`~gpc_compare.evidence.EvidenceEstimate`:
        #: value, standard error, method, start and health), or None
        self.evidence_estimate = evidence

    @property
    def log_marginal_likelihood(self) -> float:
        if self.evidence_estimate is None:
            raise ValueError(
                "the MCMC evidence was not computed: fit with evidence=True for the "
                "gold-standard estimate (gc.evidence.estimate's)"
            )
        return self.evidence_estimate.log_evidence

    @property
    def log_marginal_likelihood_se(self) -> float:
        """Standard error of the estimate of the log evidence."""
        self.log_marginal_likelihood  # noqa: B018 (raises if not computed)
        return self.evidence_estimate.standard_error

    @property
    def log_marginal_likelihood_gradient(self) -> np.ndarray:
        """Not available: the Monte Carlo estimate of Fisher's identity,
        E[1/2 r^T dK r] - 1/2 tr(K^-1 dK) with r = K^-1 (f - m), is dominated by noise
        along the near-null directions of a smooth kernel matrix (tried: -0.0007 against
        EP's -0.78 on an easy 30-point problem). Use the approximations' gradients, or
        compare evidences across a grid of hyperparameters."""
        raise NotImplementedError(
            "the MCMC engine gives no evidence gradient: its Monte Carlo estimate is too "
            "noisy for smooth kernels; compare gc.evidence.estimate over a hyperparameter grid"
        )

    def record(self) -> dict[str, Any]:
        """:meth:`Posterior.record`, plus the evidence's standard error and record
        (``reference_evidence``: method, start, health) and ``diagnostics``.

        Returns
        -------
        dict
            JSON-ready.
        """
        out = super().record()
        if out["log_evidence"] is not None:
            out["log_evidence_se"] = float(self.log_marginal_likelihood_se)
            out["reference_evidence"] = self.evidence_estimate.record()
        out.update(self._diagnostics_record())
        return out

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
        closed_form = isinstance(self.likelihood, Probit | Gaussian)
        if closed_form or means.shape[0] <= _MAX_QUADRATURE_DRAWS:
            return means, var
        idx = np.linspace(0, means.shape[0] - 1, _MAX_QUADRATURE_DRAWS).round().astype(int)
        return means[idx], (var if var.shape[0] == 1 else var[idx])

    def predict_proba(self, Xs: np.ndarray, *, integration: str = "exact") -> np.ndarray:
        """P(y* = +1 | x*, data): the link integrated against f* | f per draw, averaged.

        Parameters
        ----------
        Xs : array_like, shape (m, d)
            Test inputs.
        integration : {"exact", "probit_approximation"}
            As for :meth:`Posterior.predict_proba`.

        Returns
        -------
        ndarray, shape (m,)
        """
        means, var = self._draws_for_integration(*self._conditional(self._check_Xs(Xs)))
        return self.likelihood.predict_proba(means, var, integration=integration).mean(axis=0)

    def log_predictive(
        self, Xs: np.ndarray, ys: np.ndarray, *, integration: str = "exact"
    ) -> np.ndarray:
        """log p(y* | x*, data) = log mean_s p(y* | f_s), by log-sum-exp over draws.

        Parameters
        ----------
        Xs : array_like, shape (m, d)
            Test inputs.
        ys : array_like, shape (m,)
            Their labels (one class allowed), or real targets with the Gaussian likelihood.
        integration : {"exact", "probit_approximation"}
            As for :meth:`Posterior.predict_proba`.

        Returns
        -------
        ndarray, shape (m,)
        """
        Xs, ys = self._check_test_set(Xs, ys)
        means, var = self._draws_for_integration(*self._conditional(Xs))
        lp = self.likelihood.log_predictive(ys[None, :], means, var, integration=integration)
        return log_mean_exp(lp, axis=0)

    def log_predictive_draws(
        self, Xs: np.ndarray, ys: np.ndarray, *, integration: str = "exact"
    ) -> np.ndarray:
        """log p(y* | x*, f_s) for every draw s that prediction uses, by chain.

        :meth:`log_predictive` is the log of the mean of their exponentials; the
        functions of :mod:`gpc_compare.metrics.mcse` take them for its Monte Carlo error.

        Parameters
        ----------
        Xs : array_like, shape (m, d)
            Test inputs.
        ys : array_like, shape (m,)
            Their labels (one class allowed), or real targets with the Gaussian likelihood.
        integration : {"exact", "probit_approximation"}
            As for :meth:`Posterior.predict_proba`.

        Returns
        -------
        ndarray, shape (chains, k, m)
            k = draws per chain, or where prediction uses an evenly spaced subset of the
            draws (full Bayes; logistic beyond 500 draws), each chain's share of it, cut
            to the shortest share (at most one draw less).
        """
        Xs, ys = self._check_test_set(Xs, ys)
        means, var = self._draws_for_integration(*self._conditional(Xs))
        lp = self.likelihood.log_predictive(ys[None, :], means, var, integration=integration)
        return self._by_chain(lp)

    def log_predictive_mcse(
        self, Xs: np.ndarray, ys: np.ndarray, *, integration: str = "exact"
    ) -> np.ndarray:
        """The Monte Carlo standard error of :meth:`log_predictive`, per test case.

        log p(y* | x*, D) is the log of a mean over the draws of p(y* | x*, f_s); its MCSE
        is sd_s(p_s / p) / sqrt(ESS), the ESS that of p_s over the chains (ArviZ's, for
        the mean), by the delta method (:func:`gpc_compare.metrics.log_predictive_mcse` on
        :meth:`log_predictive_draws`). :func:`gpc_compare.metrics.mean_log_predictive_mcse`
        combines the cases into the MCSE of a mean log predictive (as independent);
        :func:`gpc_compare.metrics.joint_mean_log_predictive_mcse` takes
        :meth:`log_predictive_draws` instead and keeps their correlation through the
        shared draws.

        Parameters
        ----------
        Xs : array_like, shape (m, d)
            Test inputs.
        ys : array_like, shape (m,)
            Their labels (one class allowed), or real targets with the Gaussian likelihood.
        integration : {"exact", "probit_approximation"}
            As for :meth:`Posterior.predict_proba`.

        Returns
        -------
        ndarray, shape (m,)
        """
        from ..metrics.mcse import log_predictive_mcse

        return log_predictive_mcse(self.log_predictive_draws(Xs, ys, integration=integration))[1]

    def to_inference_data(self, random_seed=None, *, Xs: np.ndarray | None = None):
        """The sampler's InferenceData (posterior, sample_stats, observed_data) with a
        ``log_likelihood`` group (``y``: log p(y_i | f_i) per draw, for ``arviz.loo`` and
        ``arviz.compare``); with ``Xs``, a ``predictions`` group holding a draw of f* | f
        for every posterior draw, seeded by ``random_seed``. (``Xs`` given first, by
        position, is the old form: it warns.)

        Parameters
        ----------
        random_seed : int or Generator, optional
            Seeds the draws of f* (only with ``Xs``).
        Xs : array_like, shape (m, d), optional
            Test inputs for the ``predictions`` group.

        Returns
        -------
        arviz.InferenceData
            A copy of the sampler's, with the groups added.
        """
        if Xs is None and np.ndim(random_seed) == 2:  # to_inference_data(Xs), the old order
            warnings.warn(
                "to_inference_data(Xs) is now to_inference_data(Xs=Xs) (the first argument "
                "of every posterior's to_inference_data is random_seed); the old form will "
                "be removed",
                DeprecationWarning,
                stacklevel=2,
            )
            Xs, random_seed = random_seed, None
        idata = _with_log_likelihood(self.idata.copy(), self.likelihood, self.y)
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


class SoftmaxSamplePosterior(_Draws, MulticlassPosterior):
    """Draws of the C latent functions at the training inputs: the multi-class contract.

    ``f_draws`` has shape (draws * chains, n, C); ``latent_mean`` and ``latent_var`` have
    shape (n, C). No evidence and no gradient (see :class:`SamplePosterior`).

    Parameters
    ----------
    X : ndarray, shape (n, d)
        The training inputs.
    y : ndarray, shape (n,)
        The training targets, checked: binary labels as {-1, +1}, class indices 0..C-1, or
        real values with the Gaussian likelihood.
    kernel : Kernel
        The covariance function, at the hyperparameters of the fit.
    likelihood : Softmax
    f_draws : ndarray, shape (draws * chains, n, C)
        The draws of the C latent functions at the training inputs.
    idata : arviz.InferenceData
        The sampler's whole output (posterior, sample statistics).
    K : ndarray, shape (n, n)
        The prior covariance at the training inputs (with the sampler's jitter).
    L : ndarray, shape (n, n)
        Its lower Cholesky factor.
    diagnostics : Diagnostics
        The sampler's convergence diagnostics (:func:`gpc_compare.diagnostics.diagnose`).
    convergence : Convergence
        How the engine's iteration ended.
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
        diagnostics: Any,
        convergence: Convergence,
    ) -> None:
        super().__init__(X, y, kernel, likelihood, None, n_classes=f_draws.shape[2])
        self._set_draws(f_draws, idata, K, L, diagnostics, convergence)

    @property
    def log_marginal_likelihood(self) -> float:
        raise ValueError("the MCMC engine gives no evidence with the softmax likelihood")

    def record(self) -> dict[str, Any]:
        """:meth:`Posterior.record`, plus ``diagnostics``.

        Returns
        -------
        dict
            JSON-ready.
        """
        return {**super().record(), **self._diagnostics_record()}

    @property
    def log_marginal_likelihood_gradient(self) -> np.ndarray:
        raise NotImplementedError("the MCMC engine gives no evidence gradient")

    def _conditional(self, Xs: np.ndarray, draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """f*_c | f_c ~ N(k*^T K^-1 f_c, k** - k*^T K^-1 k*) per draw and class: means
        (S, m, C) and the shared variance (m,)."""
        Ks = self.kernel(self.X, Xs)
        A = cho_solve(self.L, Ks)  # K^-1 K*
        means = np.einsum("snc,nm->smc", draws, A)
        var = np.maximum(self.kernel.diag(Xs) - np.einsum("ij,ij->j", Ks, A), 0.0)
        return means, var

    def log_predictive_draws(
        self,
        Xs: np.ndarray,
        ys: np.ndarray,
        *,
        integration: str | None = None,
        n_samples: int = SOFTMAX_MC_SAMPLES,
        random_seed: int | np.random.Generator | None = 0,
    ) -> np.ndarray:
        """log p(y* | x*, f_s) for every draw s that prediction uses, by chain.

        :meth:`log_predictive` (with the same options) is the log of the mean of their
        exponentials; the functions of :mod:`gpc_compare.metrics.mcse` take them for its
        Monte Carlo error. With Monte Carlo integration over f* | f_s (C > 3 by default)
        each value carries that integration's noise too, so the error covers both.

        Parameters
        ----------
        Xs : array_like, shape (m, d)
            Test inputs.
        ys : array_like, shape (m,)
            Their labels, class indices 0..C-1 (one class allowed).
        integration, n_samples, random_seed
            As for :meth:`~gpc_compare.posterior.MulticlassPosterior.predict_log_proba`.

        Returns
        -------
        ndarray, shape (chains, k, m)
            k = draws per chain, or where prediction uses an evenly spaced subset of the
            draws (quadrature beyond 500 draws), each chain's share of it, cut to the
            shortest share (at most one draw less).
        """
        Xs = self._check_Xs(Xs)
        codes = self._test_codes(Xs, ys)
        lp = self._log_proba_draws(Xs, integration, n_samples, random_seed)
        return self._by_chain(lp[:, np.arange(codes.size), codes])

    def log_predictive_mcse(self, Xs: np.ndarray, ys: np.ndarray, **kwargs) -> np.ndarray:
        """The Monte Carlo standard error of :meth:`log_predictive`, per test case, as
        :meth:`SamplePosterior.log_predictive_mcse` (options as for
        :meth:`log_predictive_draws`).

        Parameters
        ----------
        Xs : array_like, shape (m, d)
            Test inputs.
        ys : array_like, shape (m,)
            Their labels, class indices 0..C-1.
        **kwargs
            ``integration``, ``n_samples``, ``random_seed``.

        Returns
        -------
        ndarray, shape (m,)
        """
        from ..metrics.mcse import log_predictive_mcse

        return log_predictive_mcse(self.log_predictive_draws(Xs, ys, **kwargs))[1]

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

    def to_inference_data(self, random_seed=None):
        """The sampler's InferenceData (f with dims ``obs``, ``class``) with a
        ``log_likelihood`` group (``y``: log p(y_i | f_i) per draw, dims ``obs``);
        ``random_seed`` (the shared signature) is not used: nothing is drawn.

        Parameters
        ----------
        random_seed : object, optional
            Not used.

        Returns
        -------
        arviz.InferenceData
            A copy of the sampler's, with the ``log_likelihood`` group.
        """
        return _with_log_likelihood(self.idata.copy(), self.likelihood, self.y)
