"""``GPClassifier``: the engines as a scikit-learn estimator (binary classification)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._fit import fit as _fit
from .kernels import Kernel, SquaredExponential
from .likelihoods import Likelihood

__all__ = ["GPClassifier"]


class GPClassifier(ClassifierMixin, BaseEstimator):
    """Binary Gaussian-process classification with any gpc_compare engine.

    Parameters
    ----------
    method : {"laplace", "ep", "mcmc"}
        The posterior engine.
    kernel : Kernel, optional
        Covariance function; its values are the optimiser's first start.
        Default ``SquaredExponential(1.0, 1.0)``.
    likelihood : {"probit", "logistic"} or Likelihood
    mean : float or None
        Constant prior mean (a hyperparameter when a number), as in :func:`gpc_compare.fit`.
    optimizer : {"fmin_l_bfgs_b"} or None
        Fit the hyperparameters by maximising the engine's evidence (L-BFGS-B with
        restarts), or keep the kernel's. The MCMC engine has no evidence gradient: with it,
        the hyperparameters are fitted by EP's evidence and then held fixed for sampling.
    n_restarts_optimizer : int
        Extra optimiser starts, drawn uniformly in log space within the kernel's bounds.
    random_state : int, optional
        Seeds the restarts and the engine's own randomness.
    engine_options : dict, optional
        Passed to the engine (e.g. ``{"draws": 500}`` for MCMC, ``{"schedule": "parallel"}``
        for EP).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two labels; the second is the positive class (y = +1 inside).
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
        """Fit the posterior (and, with ``optimizer``, the hyperparameters) to (X, y)."""
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        if self.classes_.size != 2:
            raise ValueError(
                "Only binary classification is supported: y has "
                f"{self.classes_.size} class{'es' if self.classes_.size != 1 else ''} "
                f"({self.classes_.tolist()[:10]})"
            )
        if self.optimizer not in ("fmin_l_bfgs_b", None):
            raise ValueError(f"optimizer must be 'fmin_l_bfgs_b' or None, got {self.optimizer!r}")
        t = np.where(y == self.classes_[1], 1.0, -1.0)
        kernel = SquaredExponential(1.0, 1.0) if self.kernel is None else self.kernel
        options = dict(self.engine_options or {})
        common = {
            "likelihood": self.likelihood,
            "mean": self.mean,
            "random_seed": self.random_state,
        }
        optimize = self.optimizer is not None
        if optimize and self.method == "mcmc":
            # MCMC gives no evidence gradient: fit the hyperparameters by EP, then sample
            ep = _fit(X, t, "ep", kernel, optimize=True,
                      n_restarts=self.n_restarts_optimizer, **common)  # fmt: skip
            kernel, common["mean"], optimize = ep.kernel, ep.mean, False
        self.posterior_ = _fit(
            X, t, self.method, kernel, optimize=optimize,
            n_restarts=self.n_restarts_optimizer, **common, **options,
        )  # fmt: skip
        self.kernel_ = self.posterior_.kernel
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, shape (n, 2), columns in the order of ``classes_``."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        p1 = self.posterior_.predict_proba(X)
        return np.column_stack([1.0 - p1, p1])

    def predict_log_proba(self, X) -> np.ndarray:
        """log class probabilities, shape (n, 2), computed in log space (never log(0))."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        ones = np.ones(X.shape[0])
        return np.column_stack(
            [self.posterior_.log_predictive(X, -ones), self.posterior_.log_predictive(X, ones)]
        )

    def predict(self, X) -> np.ndarray:
        """The more probable class of each input."""
        p1 = self.predict_proba(X)[:, 1]
        return self.classes_[(p1 > 0.5).astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
