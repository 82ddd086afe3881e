"""``gc.fit``: one entry point for every engine."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validation import (
    check_class_labels,
    check_count,
    check_random_seed,
    check_X,
    check_Xy,
)
from .engines import engines_with, get_engine
from .engines._inducing import choose_inducing
from .hyperparameters import N_RESTARTS, maximize
from .kernels import Kernel, SquaredExponential
from .likelihoods import Likelihood, get_likelihood
from .posterior import Posterior

__all__ = ["fit"]


def fit(
    X: np.ndarray,
    y: np.ndarray,
    method: str = "laplace",
    kernel: Kernel | None = None,
    likelihood: str | Likelihood = "probit",
    mean: float | None = None,
    optimize: bool = False,
    *,
    n_restarts: int = N_RESTARTS,
    random_seed: int | np.random.Generator | None = None,
    mean_bounds: tuple[float, float] = (-10.0, 10.0),
    objective: str = "evidence",
    **options,
) -> Posterior:
    """Approximate the posterior of a GP classifier (binary, or C classes with softmax), or
    of GP regression with the Gaussian likelihood.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Training inputs (finite; a 1-D array is refused: reshape it to one column).
    y : array_like, shape (n,)
        Binary likelihoods: labels in {0, 1}, {-1, +1} or booleans, both classes present.
        Softmax: any C >= 2 distinct values; sorted, they become ``posterior.classes_``.
        Gaussian: real values (finite); no label checks.
    method : {"laplace", "ep", "kl", "vb", "mcmc", "fitc_laplace", "fitc_ep", "svgp"}
        The engine (see :mod:`gpc_compare.engines`; ``gpc-compare list engines`` shows
        what each can do). "kl" and "vb" are variational: their evidence is a lower
        bound; "vb" takes the logistic likelihood only. "fitc_laplace", "fitc_ep" (FITC)
        and "svgp" (the sparse variational bound) are sparse, on M inducing inputs
        (``inducing=M`` or an (M, d) array, ``optimize_inducing``, ``jitter``): O(n M^2)
        time, O(n M) memory. C classes: ``gpc-compare list engines`` (capability
        ``multiclass``) says which engine takes which multi-class likelihood.
    kernel : Kernel, optional
        Covariance function; ``SquaredExponential(lengthscale=1, variance=1)`` by default.
        With softmax, the C latent functions share it (and its hyperparameters).
    likelihood : str or Likelihood
        "probit", "logistic", "softmax", "multinomial_probit", "robustmax" or "gaussian".
        The multi-class ones give a :class:`~gpc_compare.posterior.MulticlassPosterior`
        with one latent GP per class (R&W section 3.5; :mod:`gpc_compare.likelihoods`).
        ``Gaussian(variance=s2)`` (or "gaussian", s2 = 1) is GP regression: exact with
        Laplace and EP; ``predict_proba`` is then refused (use ``predict_latent`` or
        ``log_predictive``).
    mean : float or None
        Constant prior mean. A number makes it a hyperparameter (named ``"mean"``, last in
        ``hyperparameter_names``, fitted when ``optimize``); None is a fixed zero mean.
        Softmax takes None only: a constant shared by the classes cancels in the softmax.
    optimize : bool
        Fit the hyperparameters by maximising this engine's log marginal likelihood
        (L-BFGS-B in log space within the kernel's bounds, with restarts); the outcome is
        on ``posterior.optimization``.
    n_restarts : int
        Extra optimiser starts, drawn uniformly in log space within the bounds (default
        :data:`~gpc_compare.hyperparameters.N_RESTARTS` = 2, as a study's).
    random_seed : int or Generator, optional
        Seeds the restarts, and the engine's own randomness (EP's sequential order).
    mean_bounds : (float, float)
        Bounds of the prior mean during optimisation.
    objective : {"evidence", "loo", "loo_fixed_sites"}
        What ``optimize`` maximises: the engine's log marginal likelihood, or (engines
        with the "loo" capability: EP) the leave-one-out predictive log-likelihood (Opper
        and Winther 2000; Vehtari et al. 2016), followed with its total gradient
        (``"loo"``, the sites re-converging) or with the gradient at fixed sites
        (``"loo_fixed_sites"``, which is not the objective's gradient: for studying where
        that leads the optimiser).
    **options
        Engine options, e.g. ``tol``, ``max_iter``, ``warm_start`` for Laplace.

    Returns
    -------
    Posterior
        See :mod:`gpc_compare.posterior` for the contract.
    """
    lik = get_likelihood(likelihood)
    engine = get_engine(method)
    X, y, classes = _check_data(X, y, lik)
    _check_engine_takes(engine, lik)
    can = engine.capabilities(lik)
    # each engine's own check (unknown names, bad values), then the options as given under
    # their current names (an old name warns here, once: canonical keeps the order)
    options = dict(zip(engine.check_options(options), options.values(), strict=True))
    random_seed = check_random_seed(random_seed)
    kernel = SquaredExponential() if kernel is None else kernel
    if not isinstance(kernel, Kernel):
        raise ValueError(f"kernel must be a gpc_compare Kernel, got {type(kernel).__name__}")
    kernel.check_input_dim(X.shape[1])
    mean = _check_mean(mean, lik)
    n_restarts = check_count(n_restarts, "n_restarts", minimum=0)
    if np.shape(mean_bounds) != (2,):
        raise ValueError(f"mean_bounds must be a pair (low, high), got {mean_bounds!r}")
    objectives = _objective(objective, engine, lik, optimize)
    _check_memory(engine, X.shape[0], options, optimize, kernel, classes)
    if "sparse" in can:
        # the inducing inputs chosen once (k-means++ seeded here), so every evaluation of
        # an optimisation and the final posterior share them
        options["inducing"] = choose_inducing(X, options.get("inducing"), random_seed)
        if optimize and not kernel.has_cross_gradients:
            raise ValueError(
                f"optimize=True with method={method!r} needs the kernel's derivatives with "
                f"respect to inducing inputs, which {type(kernel).__name__} does not give: "
                "use a stationary, linear or constant kernel (or sums and products of them)"
            )
    if optimize and "evidence_gradient" not in can:
        raise ValueError(
            f"optimize=True needs an evidence gradient, which the {engine.label} engine does "
            f"not give: fit the hyperparameters with {_methods_with('evidence_gradient')} and "
            "pass the kernel"
        )
    if optimize:
        post = maximize(
            engine,
            X,
            y,
            kernel,
            lik,
            mean,
            n_restarts=n_restarts,
            random_seed=random_seed,
            mean_bounds=mean_bounds,
            objective=objective,
            **objectives,
            **options,
        )
    else:
        post = engine.run(X, y, kernel, lik, mean, **engine.with_seed(options, random_seed))
    if classes is not None:
        post.classes_ = classes
    return post


def _check_memory(engine, n: int, options, optimize: bool, kernel: Kernel, classes) -> None:
    """Refuse a fit whose estimated peak memory (the engine's n x n matrices with this
    kernel, and what its options store: MCMC's draws) exceeds the memory available, before
    anything large is formed, once per fit (:meth:`Engine.memory_problem`)."""
    too_large = engine.memory_problem(
        n,
        engine.options(options),
        optimize,
        kernel=kernel,
        classes=None if classes is None else len(classes),
    )
    if too_large is not None:
        raise ValueError(too_large)


def _check_data(X: object, y: object, lik: Likelihood) -> tuple[np.ndarray, np.ndarray, Any]:
    """The training set checked for ``lik``: X, y (labels in {-1, +1}, class indices, or
    real targets) and the classes (softmax), else None."""
    if lik.latent_dim == 1:
        X, y = check_Xy(X, y, regression=lik.regression)
        return X, y, None
    X = check_X(X)
    y, classes = check_class_labels(y)
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} samples but y has {y.shape[0]} labels")
    return X, y, classes


def _check_engine_takes(engine, lik: Likelihood) -> None:
    """A ValueError where the engine does not take the likelihood, naming those that do
    for a multi-class one."""
    if lik.latent_dim != 1 and not engine.takes(lik):
        takers = " or ".join(repr(m) for m in engines_with("multiclass", lik.name))
        raise ValueError(
            f"{engine.label} does not take the {lik.name!r} likelihood (C classes): use "
            f"method={takers} with it"
        )
    engine.check_likelihood(lik)


def _check_mean(mean: object, lik: Likelihood) -> float | None:
    """The constant prior mean as a finite float, or None."""
    if mean is None:
        return None
    if lik.latent_dim != 1:
        raise ValueError(
            f"the {lik.name} likelihood takes no prior mean (mean=None): a constant shared "
            "by the C latent functions cancels in it"
        )
    if np.ndim(mean) != 0:
        raise ValueError(f"mean must be a single number (a constant prior mean), got {mean!r}")
    try:
        value = float(mean)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"mean must be a number, got {mean!r}") from None
    if not np.isfinite(value):
        raise ValueError(f"mean must be finite, got {value}")
    return value


def _objective(objective: str, engine, lik: Likelihood, optimize: bool) -> dict[str, Any]:
    """What ``optimize`` maximises, as :func:`maximize`'s ``value_and_gradient`` and
    ``value`` (empty: the evidence)."""
    if objective not in ("evidence", "loo", "loo_fixed_sites"):
        raise ValueError(
            f"objective must be 'evidence', 'loo' or 'loo_fixed_sites', got {objective!r}"
        )
    if objective == "evidence":
        return {}
    if "loo" not in engine.capabilities(lik):
        takes = [name for name, can in engine.likelihoods.items() if "loo" in can]
        if takes:  # the engine gives it with another likelihood (EP: probit)
            raise ValueError(
                f"objective={objective!r} needs the {' or '.join(takes)} likelihood with the "
                f"{engine.label} engine (its leave-one-out gradient is implemented for it), "
                f"not {lik.name!r}"
            )
        raise ValueError(
            f"objective={objective!r} needs {_methods_with('loo')} (the cavity leave-one-out "
            f"predictive and its gradient), which the {engine.label} engine does not give"
        )
    if not optimize:
        raise ValueError(f"objective={objective!r} applies to optimize=True")
    total = objective == "loo"  # "loo_fixed_sites": the gradient with the sites held fixed

    def value_and_gradient(post):
        return post.loo_log_predictive, post.loo_log_predictive_gradient(total=total)

    def value(post):
        return post.loo_log_predictive

    return {"value_and_gradient": value_and_gradient, "value": value}


def _methods_with(capability: str) -> str:
    """The engines declaring ``capability``, for messages: "method='laplace' or 'ep'"."""
    return "method=" + " or ".join(repr(name) for name in engines_with(capability))
