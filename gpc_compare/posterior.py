"""The ``Posterior`` contract, and the Gaussian posterior shared by Laplace and EP.

The contract
------------
Every engine (``gc.fit(X, y, method=...)``) returns a :class:`Posterior`:

``hyperparameter_names``
    The kernel's log hyperparameters, then ``"mean"`` when the prior has a constant
    mean hyperparameter (``mean=`` a number; ``mean=None`` is a fixed zero mean).
``log_marginal_likelihood``
    log p(y | X, theta) as this engine estimates it (float).
``log_marginal_likelihood_gradient``
    Its gradient, in the order of ``hyperparameter_names`` (ndarray).
``latent_mean``, ``latent_var``
    Posterior moments of the latent f at the training inputs.
``predict_latent(Xs)``
    Mean and variance of the latent f* at new inputs.
``predict_proba(Xs)``
    P(y = +1 | x, data), shape (n,).
``log_predictive(Xs, ys)``
    log p(y* | x*, data), computed in log space (never from a clipped probability).
``to_inference_data()``
    An :class:`arviz.InferenceData` with the posterior of f at the training inputs.
``convergence``
    A :class:`Convergence` record of the engine's iteration.
``optimization``
    The :class:`~gpc_compare.hyperparameters.OptimizationResult` when the
    hyperparameters were fitted, else ``None``.

Several classes
---------------
With the softmax likelihood (C >= 2 classes, one latent GP per class, R&W section 3.5) an
engine returns a :class:`MulticlassPosterior`: the same contract, with C columns.
``classes_`` holds the labels (sorted) and ``n_classes`` their number; ``latent_mean`` and
``latent_var`` have shape (n, C); ``predict_latent(Xs)`` gives means (m, C) and, per
point, the C x C covariance of f* (m, C, C); ``predict_proba(Xs)`` and
``predict_log_proba(Xs)`` give (m, C), columns in the order of ``classes_``, rows summing
to one; ``log_predictive(Xs, ys)`` takes labels from ``classes_``.

The Gaussian form
-----------------
Laplace and EP both approximate p(f | X, y) by N(f | m + K alpha, (K^-1 + W)^-1), held
as (alpha, sW = W^1/2, L = chol(B)), B = I + sW K sW (R&W Alg. 3.1-3.2 and 3.5-3.6;
for EP, W is the site precision diag(tau~)). :class:`GaussianPosterior` writes
prediction, sampling and export once for both.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from scipy.special import logsumexp

from ._validation import check_class_labels, check_labels, check_X
from .kernels import Kernel
from .likelihoods import SOFTMAX_MC_SAMPLES, Likelihood, Softmax
from .numerics import JITTER, cholesky, solve_lower

if TYPE_CHECKING:
    import arviz

    from .hyperparameters import OptimizationResult

__all__ = ["Convergence", "GaussianPosterior", "MulticlassPosterior", "Posterior"]


class Convergence(NamedTuple):
    """How an engine's iteration ended.

    Attributes
    ----------
    converged : bool
        Whether the stopping criterion was met.
    iterations : int
        Newton iterations (Laplace) or sweeps (EP) performed.
    last_change : float
        The last change in the monitored objective.
    message : str
        A human-readable account.
    """

    converged: bool
    iterations: int
    last_change: float
    message: str


class Posterior(ABC):
    """An approximate (or sampled) posterior over the latent function: the contract above."""

    method: str = "posterior"

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        kernel: Kernel,
        likelihood: Likelihood,
        mean: float | None,
    ) -> None:
        self.X = X
        self.y = y
        self.kernel = kernel
        self.likelihood = likelihood
        self.mean = mean
        self.optimization: OptimizationResult | None = None

    # ------------------------------------------------------------- hyperparameters
    @property
    def hyperparameter_names(self) -> list[str]:
        """Kernel log hyperparameters, then ``"mean"`` if the prior mean is one."""
        return self.kernel.hyperparameter_names + ([] if self.mean is None else ["mean"])

    @property
    def hyperparameters(self) -> np.ndarray:
        """Values in the order of ``hyperparameter_names`` (log scale for the kernel)."""
        extra = [] if self.mean is None else [self.mean]
        return np.concatenate([self.kernel.theta, extra])

    @property
    def prior_mean(self) -> float:
        """The constant prior mean m (0 when ``mean`` is None)."""
        return 0.0 if self.mean is None else float(self.mean)

    # ------------------------------------------------------------------ contract
    @property
    @abstractmethod
    def log_marginal_likelihood(self) -> float:
        """log p(y | X, theta) as this engine estimates it."""

    @property
    @abstractmethod
    def log_marginal_likelihood_gradient(self) -> np.ndarray:
        """d log p(y | X, theta) / d theta, in the order of ``hyperparameter_names``."""

    @property
    @abstractmethod
    def latent_mean(self) -> np.ndarray:
        """Posterior mean of f at the training inputs."""

    @property
    @abstractmethod
    def latent_var(self) -> np.ndarray:
        """Posterior variance of f at the training inputs."""

    @abstractmethod
    def _predict_latent(self, Xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    def predict_latent(self, Xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of the latent f* at new inputs ``Xs`` (n, d)."""
        return self._predict_latent(self._check_Xs(Xs))

    def predict_proba(self, Xs: np.ndarray, *, integration: str = "exact") -> np.ndarray:
        """P(y* = +1 | x*, data) at new inputs, shape (n,).

        Parameters
        ----------
        Xs : array_like, shape (n, d)
        integration : {"exact", "probit_approximation"}
            How the link is integrated against the Gaussian latent: exactly (closed form
            for probit, quadrature for logistic) or by Bishop's probit approximation
            sigma(kappa(v) m) (4.153, logistic only).
        """
        mean, var = self.predict_latent(Xs)
        return self.likelihood.predict_proba(mean, var, integration=integration)

    def log_predictive(
        self, Xs: np.ndarray, ys: np.ndarray, *, integration: str = "exact"
    ) -> np.ndarray:
        """log p(y* | x*, data) for test inputs and their labels, computed in log space."""
        Xs, ys = self._check_test_set(Xs, ys)
        mean, var = self._predict_latent(Xs)
        return self.likelihood.log_predictive(ys, mean, var, integration=integration)

    @abstractmethod
    def to_inference_data(self, *args, **kwargs) -> arviz.InferenceData:
        """The posterior of f at the training inputs as an ArviZ InferenceData."""

    def record(self) -> dict[str, Any]:
        """The facts a study stores about this fit, JSON-ready.

        ``convergence`` (``converged``, ``iterations``), ``log_evidence`` (None where the
        engine did not estimate it) and ``log_evidence_se`` (None for a deterministic
        approximation); engines add what only they give (EP's ``loo_log_predictive``,
        MCMC's ``diagnostics``).
        """
        conv = self.convergence
        try:
            log_evidence: float | None = float(self.log_marginal_likelihood)
        except ValueError:  # e.g. MCMC without evidence=True
            log_evidence = None
        return {
            "convergence": {"converged": bool(conv.converged), "iterations": int(conv.iterations)},
            "log_evidence": log_evidence,
            "log_evidence_se": None,
        }

    # ------------------------------------------------------------------ helpers
    def _check_Xs(self, Xs: np.ndarray) -> np.ndarray:
        return check_X(Xs, name="Xs", n_features=self.X.shape[1])

    def _check_test_set(self, Xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Test inputs and labels (one class allowed), or a ValueError naming the problem."""
        Xs = self._check_Xs(Xs)
        ys = check_labels(ys, name="ys", both_classes=False)
        if ys.shape[0] != Xs.shape[0]:
            raise ValueError(f"Xs has {Xs.shape[0]} samples but ys has {ys.shape[0]} labels")
        return Xs, ys

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} method={self.method!r} n={self.X.shape[0]} "
            f"kernel={self.kernel!r} likelihood={self.likelihood.name!r} "
            f"log_marginal_likelihood={self.log_marginal_likelihood:.6g}>"
        )


class GaussianPosterior(Posterior):
    """N(f | m + K alpha, (K^-1 + W)^-1), held as (alpha, sW, L), L = chol(I + sW K sW).

    The common form of the Laplace (W = -grad grad log p(y | f^)) and EP (W = diag(tau~))
    approximations. Prediction follows R&W Alg. 3.2 / 3.6:
    mean* = m + k*^T alpha, var* = k** - |L^-1 (sW k*)|^2.
    """

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        kernel: Kernel,
        likelihood: Likelihood,
        mean: float | None,
        *,
        K: np.ndarray,
        alpha: np.ndarray,
        sW: np.ndarray,
        L: np.ndarray,
        log_marginal_likelihood: float,
        convergence: Convergence,
    ) -> None:
        super().__init__(X, y, kernel, likelihood, mean)
        self.K = K
        self.alpha = alpha
        self.sW = sW
        self.L = L
        self._log_marginal_likelihood = float(log_marginal_likelihood)
        self.convergence = convergence

    @property
    def log_marginal_likelihood(self) -> float:
        return self._log_marginal_likelihood

    @property
    def latent_mean(self) -> np.ndarray:
        """m + K alpha (the mode f^ for Laplace, the EP posterior mean mu for EP)."""
        return self._latent_mean

    @cached_property
    def _latent_mean(self) -> np.ndarray:
        return self.prior_mean + self.K @ self.alpha

    @cached_property
    def _V(self) -> np.ndarray:
        """V = L^-1 (sW K), so that Sigma = K - V^T V (R&W Alg. 3.2 line 5)."""
        return solve_lower(self.L, self.sW[:, None] * self.K)

    @cached_property
    def latent_var(self) -> np.ndarray:
        """diag Sigma = diag K - sum_i V_i^2 (non-negative up to rounding, floored at 0)."""
        return np.maximum(np.diag(self.K) - np.einsum("ij,ij->j", self._V, self._V), 0.0)

    @cached_property
    def latent_cov(self) -> np.ndarray:
        """Sigma = (K^-1 + W)^-1 = K - K sW B^-1 sW K, shape (n, n)."""
        return self.K - self._V.T @ self._V

    def _predict_latent(self, Xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Ks = self.kernel(self.X, Xs)
        mean = self.prior_mean + Ks.T @ self.alpha  # R&W Alg. 3.2 line 4
        v = solve_lower(self.L, self.sW[:, None] * Ks)  # line 5
        var = self.kernel.diag(Xs) - np.einsum("ij,ij->j", v, v)  # line 6
        return mean, np.maximum(var, 0.0)

    def sample_latent(self, draws: int, random_seed: int | np.random.Generator | None = None):
        """Draws of f at the training inputs from the Gaussian posterior, shape (draws, n)."""
        rng = np.random.default_rng(random_seed)
        Lc = cholesky(self.latent_cov, jitter=JITTER, what="posterior covariance")
        z = rng.standard_normal((draws, self.X.shape[0]))
        return self.latent_mean[None, :] + z @ Lc.T

    def to_inference_data(
        self, draws: int = 1000, random_seed: int | np.random.Generator | None = None
    ) -> arviz.InferenceData:
        """Draws from the Gaussian posterior of f as an InferenceData.

        Groups: ``posterior`` (variable ``f``, one chain, dimension ``obs``),
        ``observed_data`` (``y`` in {-1, +1}); ``attrs`` name the method, kernel and
        likelihood and give the log marginal likelihood.
        """
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # arviz's refactor notice
            import arviz as az

        f = self.sample_latent(draws, random_seed)
        n = self.X.shape[0]
        return az.from_dict(
            posterior={"f": f[None]},
            observed_data={"y": self.y},
            coords={"obs": np.arange(n)},
            dims={"f": ["obs"], "y": ["obs"]},
            attrs={
                "method": self.method,
                "kernel": repr(self.kernel),
                "likelihood": self.likelihood.name,
                "log_marginal_likelihood": self.log_marginal_likelihood,
            },
        )


class MulticlassPosterior(Posterior):
    """A posterior over C latent functions with the softmax likelihood: the contract for
    several classes (see the module notes).

    Subclasses provide :meth:`_integration_moments`, the Gaussian(s) of f* that the
    softmax is integrated against: one (Laplace) or one per posterior draw (MCMC), whose
    predictive probabilities are averaged.

    Attributes
    ----------
    classes_ : ndarray, shape (C,)
        The labels, sorted; ``y`` holds their indices.
    n_classes : int
    """

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        kernel: Kernel,
        likelihood: Softmax,
        mean: None = None,
        *,
        n_classes: int,
    ) -> None:
        super().__init__(X, y, kernel, likelihood, mean)
        self.n_classes = int(n_classes)
        self.classes_ = np.arange(self.n_classes)

    @abstractmethod
    def _integration_moments(
        self, Xs: np.ndarray, integration: str | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Means (S, m, C) and covariances (S or 1, m, C, C) of f*: p(y* | data) is the
        average over S of int softmax(f*) N(f* | mean_s, cov_s) df*."""

    def predict_log_proba(
        self,
        Xs: np.ndarray,
        *,
        integration: str | None = None,
        n_samples: int = SOFTMAX_MC_SAMPLES,
        random_seed: int | np.random.Generator | None = 0,
    ) -> np.ndarray:
        """log p(y* = c | x*, data), shape (m, C), columns in the order of ``classes_``.

        Parameters
        ----------
        Xs : array_like, shape (m, d)
        integration : {"quadrature", "mc"}, optional
            How the softmax is integrated against the Gaussian f* (see
            :class:`~gpc_compare.likelihoods.Softmax`): by default quadrature for C <= 3
            (error about 1e-12) and Monte Carlo with ``n_samples`` draws otherwise
            (standard error at most 0.5 / sqrt(n_samples)).
        n_samples : int
            Monte Carlo draws in all (split evenly over the posterior draws for MCMC).
        random_seed : int or Generator, optional
            Seeds the Monte Carlo draws; the default 0 makes predictions repeatable.
        """
        Xs = self._check_Xs(Xs)
        means, covs = self._integration_moments(Xs, integration)
        S = means.shape[0]
        lp = self.likelihood.log_predictive_all(
            means,
            covs,
            integration=integration,
            n_samples=max(1, -(-int(n_samples) // S)),
            random_seed=random_seed,
        )
        return logsumexp(lp, axis=0) - np.log(S)

    def predict_proba(self, Xs: np.ndarray, **kwargs) -> np.ndarray:
        """p(y* = c | x*, data), shape (m, C), rows summing to one (options as for
        :meth:`predict_log_proba`)."""
        return np.exp(self.predict_log_proba(Xs, **kwargs))

    def log_predictive(self, Xs: np.ndarray, ys: np.ndarray, **kwargs) -> np.ndarray:
        """log p(y* | x*, data) of the observed labels ``ys`` (values from ``classes_``)."""
        Xs = self._check_Xs(Xs)
        codes, _ = check_class_labels(ys, name="ys", classes=self.classes_)
        if codes.shape[0] != Xs.shape[0]:
            raise ValueError(f"Xs has {Xs.shape[0]} samples but ys has {codes.shape[0]} labels")
        lp = self.predict_log_proba(Xs, **kwargs)
        return lp[np.arange(codes.size), codes]

    def predict(self, Xs: np.ndarray, **kwargs) -> np.ndarray:
        """The most probable class of each input (a label from ``classes_``)."""
        return self.classes_[np.argmax(self.predict_log_proba(Xs, **kwargs), axis=1)]

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f" n_classes={self.n_classes}>"
