"""The multi-class contract: C latent functions with the softmax (R&W 3.5) or robust-max
likelihood."""

from __future__ import annotations

import warnings
from abc import abstractmethod

import numpy as np

from .._validation import check_class_labels
from ..kernels import Kernel
from ..likelihoods import SOFTMAX_MC_SAMPLES, RobustMax, Softmax
from ..numerics import log_mean_exp
from .base import Posterior

__all__ = ["MulticlassPosterior"]


class MulticlassPosterior(Posterior):
    """A posterior over C latent functions with a multi-class likelihood (softmax or
    robust-max): the contract for several classes (see the module notes).

    Subclasses provide :meth:`_integration_moments`, the Gaussian(s) of f* that the
    softmax is integrated against: one (Laplace) or one per posterior draw (MCMC), whose
    predictive probabilities are averaged.

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
    mean : None
        The multi-class engines take no prior mean.
    n_classes : int
        The number of classes C.

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
        likelihood: Softmax | RobustMax,
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

        Returns
        -------
        ndarray, shape (m, C)
            Computed in log space (log-mean-exp over the posterior draws, if any).
        """
        lp = self._log_proba_draws(self._check_Xs(Xs), integration, n_samples, random_seed)
        return log_mean_exp(lp, axis=0)

    def _log_proba_draws(
        self,
        Xs: np.ndarray,
        integration: str | None,
        n_samples: int,
        random_seed: int | np.random.Generator | None,
    ) -> np.ndarray:
        """log int p(y* = c | f*) N(f* | mean_s, cov_s) df* for each of the S moments of
        :meth:`_integration_moments` (S = 1 for a Gaussian q, the posterior draws that
        prediction uses for MCMC): shape (S, m, C)."""
        means, covs = self._integration_moments(Xs, integration)
        return self.likelihood.log_predictive_all(
            means,
            covs,
            integration=integration,
            n_samples=max(1, -(-int(n_samples) // means.shape[0])),
            random_seed=random_seed,
        )

    def _test_codes(self, Xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        """The class indices of test labels ``ys`` (values from ``classes_``), one per row
        of the checked ``Xs``, or a ValueError."""
        codes, _ = check_class_labels(ys, name="ys", classes=self.classes_)
        if codes.shape[0] != Xs.shape[0]:
            raise ValueError(f"Xs has {Xs.shape[0]} samples but ys has {codes.shape[0]} labels")
        return codes

    def predict_proba(self, Xs: np.ndarray, **kwargs) -> np.ndarray:
        """p(y* = c | x*, data), shape (m, C), rows summing to one (options as for
        :meth:`predict_log_proba`).

        Parameters
        ----------
        Xs : array_like, shape (m, d)
            Test inputs.
        **kwargs
            ``integration``, ``n_samples``, ``random_seed``, as for :meth:`predict_log_proba`.

        Returns
        -------
        ndarray, shape (m, C)
        """
        return np.exp(self.predict_log_proba(Xs, **kwargs))

    def log_predictive(self, Xs: np.ndarray, ys: np.ndarray, **kwargs) -> np.ndarray:
        """log p(y* | x*, data) of the observed labels ``ys`` (values from ``classes_``).

        Parameters
        ----------
        Xs : array_like, shape (m, d)
            Test inputs.
        ys : array_like, shape (m,)
            Their labels, class indices 0..C-1 (one class allowed).
        **kwargs
            ``integration``, ``n_samples``, ``random_seed``, as for :meth:`predict_log_proba`.

        Returns
        -------
        ndarray, shape (m,)
            log p(y*_i | x*_i, data) per test case.
        """
        Xs = self._check_Xs(Xs)
        codes = self._test_codes(Xs, ys)
        lp = self.predict_log_proba(Xs, **kwargs)
        return lp[np.arange(codes.size), codes]

    def predict(self, Xs: np.ndarray, **kwargs) -> np.ndarray:
        """The most probable class of each input (a label from ``classes_``).

        Parameters
        ----------
        Xs : array_like, shape (m, d)
            Test inputs.
        **kwargs
            ``integration``, ``n_samples``, ``random_seed``, as for :meth:`predict_log_proba`.

        Returns
        -------
        ndarray, shape (m,)
            Class indices (ties to the lowest).
        """
        return self.classes_[np.argmax(self.predict_log_proba(Xs, **kwargs), axis=1)]

    def sample_latent(
        self, draws: int, random_seed: int | np.random.Generator | None = None
    ) -> np.ndarray:  # pragma: no cover
        """Draws of f at the training inputs, shape (draws, n, C) (a Gaussian form gives
        them; one that holds draws exports its own).

        Parameters
        ----------
        draws : int
            The number of draws.
        random_seed : int or Generator, optional

        Returns
        -------
        ndarray, shape (draws, n, C)
        """
        raise NotImplementedError

    def to_inference_data(
        self, random_seed: int | np.random.Generator | None = None, *, draws: int = 1000
    ):
        """``draws`` draws of f at the training inputs (:meth:`sample_latent`; dims ``obs``,
        ``class``), seeded by ``random_seed``, as InferenceData.

        Parameters
        ----------
        random_seed : int or Generator, optional
            Seeds the draws.
        draws : int
            The number of draws.

        Returns
        -------
        arviz.InferenceData
        """
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # arviz's refactor notice
            import arviz as az

        f = self.sample_latent(draws, random_seed)
        return az.from_dict(
            posterior={"f": f[None]},
            observed_data={"y": self.y},
            coords={"obs": np.arange(self.X.shape[0]), "class": np.arange(self.n_classes)},
            dims={"f": ["obs", "class"], "y": ["obs"]},
            attrs={
                "method": self.method,
                "kernel": repr(self.kernel),
                "likelihood": self.likelihood.name,
                "log_marginal_likelihood": self.log_marginal_likelihood,
            },
        )

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f" n_classes={self.n_classes}>"
