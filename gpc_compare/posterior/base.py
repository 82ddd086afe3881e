"""The :class:`Posterior` contract (see :mod:`gpc_compare.posterior`) and its records:
:class:`Convergence` (how an engine's iteration ended) and :class:`OptimizationResult`
with its :class:`Restart` runs (how the hyperparameters were fitted, written by
:func:`gpc_compare.hyperparameters.maximize`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .._validation import check_labels, check_targets, check_X
from ..kernels import Kernel
from ..likelihoods import Likelihood

if TYPE_CHECKING:
    import arviz

__all__ = ["Convergence", "OptimizationResult", "Posterior", "Restart"]


class Convergence(NamedTuple):
    """How an engine's iteration ended; each field means the same for every engine.

    Parameters
    ----------
    converged : bool
        Whether the engine's stopping criterion was met.
    iterations : int
        The iterations the engine performed (per chain, for a sampler).
    last_change : float
        The change of the engine's objective at its last iteration (the evidence, a bound,
        or Psi: see below); NaN where the engine monitors no change.
    message : str
        A human-readable account.
    schedule : str or None
        The schedule that ran, where an engine has several (EP: "parallel", "sequential",
        or "parallel (...), then sequential" when its default fell back); else None.
    factorizations : int or None
        The O(n^3) (sparse: O(n M^2)) factorisations done, where an engine counts them
        (binary Laplace: one per Newton step, none per chord step, and one at the mode);
        else None.

    Notes
    -----
    What each engine puts in ``iterations`` and ``last_change``:

    - Laplace (binary and softmax), FITC-Laplace: Newton iterations (binary: chord steps
      among them); the decrease of Psi = -log p(y | f) - log p(f) at the last one.
    - EP, FITC-EP: sweeps over the sites; the change of the log evidence in the last one.
    - KL, SVGP: fixed-point iterations on the sites; the change of the bound (ELBO).
    - VB: EM iterations on xi (extrapolated where that helps); the change of the bound.
    - MCMC: the NUTS iterations each chain ran, tuning included (``tune + draws``);
      ``last_change`` NaN (a sampler runs its iterations, it monitors no change);
      ``converged`` is ``diagnostics.passed`` and ``message`` its message. R-hat, the
      effective sample sizes, the divergences, the draws, tuning iterations and chains
      are the posterior's ``diagnostics`` (:class:`gpc_compare.diagnostics.Diagnostics`).
    """

    converged: bool
    iterations: int
    last_change: float
    message: str
    schedule: str | None = None
    factorizations: int | None = None


@dataclass(frozen=True)
class Restart:
    """One L-BFGS-B run: where it started, where it ended and how.

    Parameters
    ----------
    start : ndarray, shape (p,)
        The starting hyperparameters (as ``hyperparameter_names``, log scale for the kernel).
    theta : ndarray, shape (p,)
        Where the run ended.
    value : float
        The negative objective there (minus the log marginal likelihood, or the engine's
        bound), which L-BFGS-B minimises.
    converged : bool
        Whether L-BFGS-B reported success (True too where the run stopped on reaching
        where an earlier one ended).
    n_evaluations : int
        The objective's evaluations.
    message : str
        L-BFGS-B's message.
    """

    start: np.ndarray
    theta: np.ndarray
    value: float
    converged: bool
    n_evaluations: int
    message: str


@dataclass(frozen=True)
class OptimizationResult:
    """The outcome of hyperparameter fitting.

    Parameters
    ----------
    objective : str
        What was maximised (``"evidence"`` for the log marginal likelihood).
    names : list of str
        Hyperparameter names, in the order of ``theta``.
    theta : ndarray
        The best hyperparameters found (log scale for the kernel's; the search ranks a fit
        whose bound its engine found optimistic or broken down below its value:
        :func:`gpc_compare.hyperparameters.maximize`).
    best_value : float
        The objective there.
    converged : bool
        Whether L-BFGS-B reported convergence for the run that ended there (or, where the
        ranking returned other values than a run's end, nearest them).
    n_evaluations : int
        Objective evaluations over all runs.
    restarts : list of Restart
        Every run, the given starting point first.
    fit_seconds : float
        Wall-clock time of the engine's fit at ``theta`` during the search (warm-started
        from the previous evaluation; the search took the rest of the time); NaN when not
        measured.
    """

    objective: str
    names: list[str]
    theta: np.ndarray
    best_value: float
    converged: bool
    n_evaluations: int
    restarts: list[Restart] = field(default_factory=list)
    fit_seconds: float = float("nan")


class Posterior(ABC):
    """An approximate (or sampled) posterior over the latent function: the contract above.

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
    """

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
        self.optimization: OptimizationResult | None = None  # set by hyperparameter fitting

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
        """Mean and variance of the latent f* at new inputs ``Xs`` (n, d).

        Parameters
        ----------
        Xs : array_like, shape (n, d)
            Test inputs.

        Returns
        -------
        mean, var : ndarray, shape (n,)
            The latent predictive mean and variance (R&W eqs. 3.21 and 3.24 for Laplace).
        """
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

        Returns
        -------
        ndarray, shape (n,)
            The probability of the positive class at each input.
        """
        mean, var = self.predict_latent(Xs)
        return self.likelihood.predict_proba(mean, var, integration=integration)

    def log_predictive(
        self, Xs: np.ndarray, ys: np.ndarray, *, integration: str = "exact"
    ) -> np.ndarray:
        """log p(y* | x*, data) for test inputs and their labels, computed in log space.

        Parameters
        ----------
        Xs : array_like, shape (n, d)
            Test inputs.
        ys : array_like, shape (n,)
            Their labels (one class allowed), or real targets with the Gaussian likelihood.
        integration : {"exact", "probit_approximation"}
            As for :meth:`predict_proba`.

        Returns
        -------
        ndarray, shape (n,)
            log p(y*_i | x*_i, data) per test case.
        """
        Xs, ys = self._check_test_set(Xs, ys)
        mean, var = self._predict_latent(Xs)
        return self.likelihood.log_predictive(ys, mean, var, integration=integration)

    @abstractmethod
    def to_inference_data(
        self, random_seed: int | np.random.Generator | None = None
    ) -> arviz.InferenceData:
        """The posterior of f at the training inputs as an ArviZ InferenceData.

        Every posterior takes this signature: ``random_seed`` seeds whatever the export
        draws (a Gaussian posterior's draws of f; a sampled posterior returns its sampler's
        draws and seeds only its ``Xs`` predictions). An engine may add keyword-only
        options: ``draws=`` (how many draws a Gaussian posterior makes, 1000 by default),
        ``Xs=`` (a sampled posterior's predictions at new inputs).

        Parameters
        ----------
        random_seed : int or Generator, optional
            Seeds what the export draws.

        Returns
        -------
        arviz.InferenceData
            Groups ``posterior`` (``f``), ``observed_data`` and ``log_likelihood``.
        """

    def _draws_inference_data(self, f: np.ndarray, **attrs: Any) -> arviz.InferenceData:
        """Draws ``f`` (draws, n) of f at the training inputs as an InferenceData: groups
        ``posterior`` (``f``, one chain, dimension ``obs``), ``observed_data`` (``y``) and
        ``log_likelihood`` (``y``: log p(y_i | f_i) per draw, for ``arviz.loo`` and
        ``arviz.compare``); ``attrs`` name the method, kernel and likelihood, give the log
        marginal likelihood, and add ``attrs``."""
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # arviz's refactor notice
            import arviz as az

        lml = self._evidence_or_none()
        evidence = {} if lml is None else {"log_marginal_likelihood": lml}
        return az.from_dict(
            posterior={"f": f[None]},
            observed_data={"y": self.y},
            log_likelihood={"y": self.likelihood.log_prob(self.y, f)[None]},
            coords={"obs": np.arange(self.X.shape[0])},
            dims={"f": ["obs"], "y": ["obs"]},
            attrs={
                "method": self.method,
                "kernel": repr(self.kernel),
                "likelihood": self.likelihood.name,
                **evidence,
                **attrs,
            },
        )

    def record(self) -> dict[str, Any]:
        """The facts a study stores about this fit, JSON-ready.

        ``convergence`` (``converged``, ``iterations``, and ``factorizations`` where the
        engine counts them), ``log_evidence`` (None where the
        engine did not estimate it) and ``log_evidence_se`` (None for a deterministic
        approximation); engines add what only they give (EP's ``loo_log_predictive``,
        MCMC's ``diagnostics``).

        Returns
        -------
        dict
            ``convergence``, ``log_evidence`` and ``log_evidence_se``, and the engine's own
            entries.
        """
        conv = self.convergence
        log_evidence = self._evidence_or_none()
        convergence = {"converged": bool(conv.converged), "iterations": int(conv.iterations)}
        if conv.factorizations is not None:
            convergence["factorizations"] = int(conv.factorizations)
        return {
            "convergence": convergence,
            "log_evidence": log_evidence,
            "log_evidence_se": None,
        }

    # ------------------------------------------------------------------ helpers
    def _evidence_or_none(self) -> float | None:
        """The log marginal likelihood, or None where the engine estimated none (MCMC
        without ``evidence=True``: its ``log_marginal_likelihood`` raises a ValueError)."""
        try:
            return float(self.log_marginal_likelihood)
        except ValueError:
            return None

    def _check_Xs(self, Xs: np.ndarray) -> np.ndarray:
        return check_X(Xs, name="Xs", n_features=self.X.shape[1])

    def _check_test_set(self, Xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Test inputs and labels (one class allowed), or real-valued targets for the
        Gaussian likelihood, or a ValueError naming the problem."""
        Xs = self._check_Xs(Xs)
        if self.likelihood.regression:
            ys = check_targets(ys, name="ys")
        else:
            ys = check_labels(ys, name="ys", both_classes=False)
        if ys.shape[0] != Xs.shape[0]:
            raise ValueError(f"Xs has {Xs.shape[0]} samples but ys has {ys.shape[0]} labels")
        return Xs, ys

    def __repr__(self) -> str:
        """Engine, size, kernel and likelihood, and the log marginal likelihood where
        there is one (MCMC fitted without ``evidence=True`` has none)."""
        lml = self._evidence_or_none()
        evidence = "" if lml is None else f" log_marginal_likelihood={lml:.6g}"
        return (
            f"<{type(self).__name__} method={self.method!r} n={self.X.shape[0]} "
            f"kernel={self.kernel!r} likelihood={self.likelihood.name!r}{evidence}>"
        )
