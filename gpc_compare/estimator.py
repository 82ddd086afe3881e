"""``GPClassifier``: the engines as a scikit-learn estimator (two classes, or C with a
multi-class likelihood)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._fit import fit as _fit
from ._validation import check_random_seed
from .engines import get_engine
from .kernels import Kernel, SquaredExponential
from .likelihoods import Likelihood, get_likelihood

__all__ = ["GPClassifier"]


class GPClassifier(ClassifierMixin, BaseEstimator):
    """Gaussian-process classification with any gpc_compare engine.

    Every engine (``method``); two classes with the probit or logistic likelihood, C >= 2
    with a multi-class one, one latent GP per class sharing the kernel (R&W section 3.5):
    ``likelihood="softmax"`` (methods "laplace", "kl", "mcmc", "svgp"),
    ``"multinomial_probit"`` ("ep", "mcmc") or ``"robustmax"`` ("svgp"). scikit-learn's
    GaussianProcessClassifier handles several classes one-vs-rest; here more than two
    classes need a multi-class likelihood, and a binary likelihood refuses them.

    Parameters
    ----------
    method : {"laplace", "ep", "kl", "vb", "mcmc", "fitc_laplace", "fitc_ep", "svgp"}
        The posterior engine (``gpc-compare list engines``; "vb" takes the logistic
        likelihood only).
    kernel : Kernel, optional
        Covariance function; its values are the optimiser's first start.
        Default ``SquaredExponential(1.0, 1.0)``.
    likelihood : {"probit", "logistic", "softmax", "multinomial_probit", "robustmax"} or Likelihood
        Not the Gaussian likelihood (regression): use :func:`gpc_compare.fit` for that.
    mean : float or None
        Constant prior mean (a hyperparameter when a number), as in :func:`gpc_compare.fit`.
    optimizer : {"fmin_l_bfgs_b"} or None
        Fit the hyperparameters by maximising the engine's evidence (L-BFGS-B with
        restarts), or keep the kernel's. An engine without an evidence gradient (MCMC; see
        :func:`gpc_compare.engines.capabilities`) has its hyperparameters fitted by EP's
        evidence (Laplace's with softmax) and then held fixed for sampling.
    n_restarts_optimizer : int
        Extra optimiser starts, drawn uniformly in log space within the kernel's bounds.
    random_state : int, optional
        Seeds the restarts and the engine's own randomness.
    engine_options : dict, optional
        Passed to the engine (e.g. ``{"draws": 500}`` for MCMC, ``{"schedule": "parallel"}``
        for EP).

    Attributes
    ----------
    classes_ : ndarray of shape (C,)
        The labels, sorted; for a binary likelihood the second is the positive class
        (y = +1 inside).
    posterior_ : Posterior
        The fitted posterior (see :mod:`gpc_compare.posterior`).
    n_features_in_ : int
    """

    def __init__(
        self,
        method: str = "laplace",
        kernel: Kernel | None = None,
        likelihood: str | Likelihood = "probit",
        mean: float | None = None,
        optimizer: str | None = "fmin_l_bfgs_b",
        n_restarts_optimizer: int = 0,
        random_state: int | None = None,
        engine_options: dict | None = None,
    ) -> None:
        self.method = method
        self.kernel = kernel
        self.likelihood = likelihood
        self.mean = mean
        self.optimizer = optimizer
        self.n_restarts_optimizer = n_restarts_optimizer
        self.random_state = random_state
        self.engine_options = engine_options

    def fit(self, X, y) -> GPClassifier:
        """Fit the posterior (and, with ``optimizer``, the hyperparameters) to (X, y).

        Parameters
        ----------
        X : array_like, shape (n_samples, n_features)
            Training inputs.
        y : array_like, shape (n_samples,)
            Class labels: two classes, or more with a multi-class likelihood.

        Returns
        -------
        GPClassifier
            The estimator itself, fitted (``posterior_``, ``kernel_``, ``classes_``).

        Raises
        ------
        ValueError
            For a bad input, a regression likelihood, or more than two classes with a binary
            likelihood.
        """
        lik = get_likelihood(self.likelihood)
        engine = get_engine(self.method)
        engine.check_likelihood(lik)  # (the engine's declaration, as gc.fit's and a study's)
        engine.check_options(self.engine_options or {})
        if lik.regression:
            raise ValueError(
                "GPClassifier is a classifier: the Gaussian likelihood is for regression; "
                "use gpc_compare.fit(X, y, likelihood=Gaussian(variance=...)) instead"
            )
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        softmax = self._softmax()
        if self.classes_.size < 2 or (self.classes_.size > 2 and not softmax):
            raise ValueError(
                "Only binary classification is supported with the probit and logistic "
                f"likelihoods: y has {self.classes_.size} "
                f"class{'es' if self.classes_.size != 1 else ''} "
                f"({self.classes_.tolist()[:10]})"
                + (
                    "; for more than two use likelihood='softmax' or 'multinomial_probit'"
                    if self.classes_.size > 2
                    else ""
                )
            )
        check_random_seed(self.random_state, "random_state")
        if self.optimizer not in ("fmin_l_bfgs_b", None):
            raise ValueError(f"optimizer must be 'fmin_l_bfgs_b' or None, got {self.optimizer!r}")
        t = y if softmax else np.where(y == self.classes_[1], 1.0, -1.0)
        kernel = SquaredExponential(1.0, 1.0) if self.kernel is None else self.kernel
        options = dict(self.engine_options or {})
        common = {
            "likelihood": self.likelihood,
            "mean": self.mean,
            "random_seed": self.random_state,
        }
        optimize = self.optimizer is not None
        if optimize and "evidence_gradient" not in engine.capabilities(lik):
            # no evidence gradient (MCMC): fit the hyperparameters by EP, then sample
            ep = _fit(
                X,
                t,
                "laplace" if lik.name == "softmax" else "ep",
                kernel,
                optimize=True,
                n_restarts=self.n_restarts_optimizer,
                **common,
            )
            kernel, common["mean"], optimize = ep.kernel, ep.mean, False
        self.posterior_ = _fit(
            X,
            t,
            self.method,
            kernel,
            optimize=optimize,
            n_restarts=self.n_restarts_optimizer,
            **common,
            **options,
        )
        self.kernel_ = self.posterior_.kernel
        return self

    def _softmax(self) -> bool:
        return get_likelihood(self.likelihood).latent_dim != 1

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, shape (n, C), columns in the order of ``classes_``.

        Parameters
        ----------
        X : array_like, shape (n, n_features)
            Test inputs.

        Returns
        -------
        ndarray, shape (n, C)
            The rows sum to one.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if self._softmax():
            return self.posterior_.predict_proba(X)
        p1 = self.posterior_.predict_proba(X)
        return np.column_stack([1.0 - p1, p1])

    def predict_log_proba(self, X) -> np.ndarray:
        """log class probabilities, shape (n, C), computed in log space (never log(0)).

        Parameters
        ----------
        X : array_like, shape (n, n_features)
            Test inputs.

        Returns
        -------
        ndarray, shape (n, C)
            log p(y* = c | x*, data).
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if self._softmax():
            return self.posterior_.predict_log_proba(X)
        ones = np.ones(X.shape[0])
        return np.column_stack(
            [self.posterior_.log_predictive(X, -ones), self.posterior_.log_predictive(X, ones)]
        )

    def predict(self, X) -> np.ndarray:
        """The most probable class of each input.

        Parameters
        ----------
        X : array_like, shape (n, n_features)
            Test inputs.

        Returns
        -------
        ndarray, shape (n,)
            Labels from ``classes_`` (binary: the second class where its probability exceeds 0.5).
        """
        if self._softmax():
            best = np.argmax(self.predict_log_proba(X), axis=1)
            return self.classes_[best]
        p1 = self.predict_proba(X)[:, 1]
        return self.classes_[(p1 > 0.5).astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        try:
            tags.classifier_tags.multi_class = self._softmax()
        except ValueError:  # an unknown likelihood: fit will say so
            tags.classifier_tags.multi_class = False
        return tags
