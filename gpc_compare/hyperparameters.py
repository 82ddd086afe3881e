"""Hyperparameter fitting: maximise any engine's objective over the log hyperparameters.

L-BFGS-B on theta = (log kernel hyperparameters, then the constant prior mean), inside
the kernel's log bounds (and ``mean_bounds``), from the given values and from
``n_restarts`` further starts drawn uniformly in log space within the bounds. The fit
returned is the best the search evaluated, ranked by :func:`_standing` (its value, unless
its engine found its bound optimistic or its estimate broken down); every run's outcome is
kept in :class:`OptimizationResult`.

Warm starts between objective evaluations are passed explicitly (the previous
posterior's ``warm_start``), never kept in hidden state.

Warnings: the fit returned raises its own again, as they were; the other fits of the search
that warned (a search passes through extreme values, where a fit may not converge) are
counted in one RuntimeWarning that quotes the first message of each kind and how many
there were, so a record's warnings tell the fit it keeps from the search that led there
(and still say that a fit of the job did not converge, as a study's table counts it).
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.optimize

from .engines import Engine
from .kernels import Kernel
from .likelihoods import Likelihood
from .posterior import OptimizationResult, Posterior, Restart
from .posterior.sparse import inducing_names

__all__ = ["MEAN_BOUNDS", "OptimizationResult", "Restart", "at_bounds", "maximize"]

#: Default bounds on the constant prior mean, when it is a hyperparameter.
MEAN_BOUNDS = (-10.0, 10.0)
#: Extra optimiser starts when none are asked for: the one default of ``gc.fit``,
#: :func:`maximize`, a study's ``[hyperparameters] n_restarts`` and ``gc.compare`` (the
#: scikit-learn estimator keeps scikit-learn's ``n_restarts_optimizer=0``, as its
#: ``GaussianProcessClassifier`` does).
N_RESTARTS = 2
#: How close (in log units) a selected hyperparameter may come to a bound and be "at" it.
AT_BOUND_TOL = 0.01


#: L-BFGS-B stops when an iteration lowers -objective by less than FTOL relative
#: (scipy's default is 2.2e-9: at an evidence of -400 a run then stops up to ~1e-6 short).
FTOL = 2.220446049250313e-09

#: After a run, hyperparameters this close (log units) to a bound that the objective's
#: gradient points to are tried at the bound (:func:`_to_the_bounds`).
SNAP_DISTANCE = 0.5

#: A run stops once it comes within this distance (max norm, in log space) of where an
#: earlier run ended: from there it would only retrace that run's last steps.
JOIN_TOL = 1e-3


class _Joined(Exception):
    """Raised inside a run that reached an earlier run's optimum (``run`` its index)."""

    def __init__(self, run: int) -> None:
        super().__init__(run)
        self.run = run


#: A number in a warning: messages that differ only in these are of one kind.
_NUMBER = re.compile(r"[-+]?\d[\d.,]*(?:e[-+]?\d+)?")


@dataclass
class _Evaluations:
    """What every run of one fit shares: the objective at each point evaluated so far
    (L-BFGS-B and later runs revisit points; each is computed once), the engine calls
    made, and the posterior at the best point (returned at the end, with no refit) with the
    warnings its engine call raised; of the other calls, how many warned and what."""

    cache: dict[bytes, tuple[float, np.ndarray]] = field(default_factory=dict)
    calls: int = 0
    best_value: float = -np.inf
    best_theta: np.ndarray | None = None
    best_posterior: Posterior | None = None
    best_seconds: float = float("nan")  # the engine call that gave it
    ends: list[tuple[np.ndarray, float]] = field(default_factory=list)  # earlier runs' ends
    best_warnings: list[warnings.WarningMessage] = field(default_factory=list)
    best_standing: tuple[bool, float] = (False, -np.inf)  # how the best ranks (_standing)
    # of the fits ranked below their value (_standing), the one with the highest value:
    # (value, theta, standing)
    demoted_top: tuple[float, np.ndarray, tuple[bool, float]] | None = None
    others_warned: int = 0  # engine calls away from the best point that warned
    # what they said: per kind of message (its numbers aside), the first and how many
    other_messages: dict[str, list] = field(default_factory=dict)

    def set_aside(self, caught: list[warnings.WarningMessage]) -> None:
        """Count an engine call's warnings that are not the returned posterior's."""
        if caught:
            self.others_warned += 1
            for w in caught:
                message = f"{w.category.__name__}: {w.message}"
                kind = _NUMBER.sub("#", message)
                self.other_messages.setdefault(kind, [message, 0])[1] += 1

    def passed_over(self) -> bool:
        """Whether a fit with a higher value than the one returned ranked below it
        (:func:`_standing`)."""
        top = self.demoted_top
        return top is not None and top[0] > self.best_value

    def say(self) -> None:
        """Raise again the returned posterior's warnings, as they were, one for a fit with
        a higher value passed over (its bound unreliable or optimistic), and one for the
        other engine calls that warned (a search passes through extreme values: a fit there
        that warns says nothing of the one returned)."""
        for w in self.best_warnings:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if self.passed_over():
            value, theta, (reliable, rank) = self.demoted_top
            shown, best = _apart(value, self.best_value)
            returned = f"{best} at {np.round(self.best_theta, 4).tolist()}"
            its_rank, best_rank = _apart(rank, self.best_standing[1])
            if self.best_standing[1] != self.best_value:  # (ranked by its re-estimate too)
                returned += f", re-estimated {best_rank}"
            if not reliable:
                why = "unreliable (its warning is counted below); returned the best of the others"
            else:
                why = (
                    "optimistic (its warning is counted below); ranked by its bound "
                    f"re-estimated on independent draws, {its_rank}, it came below the fit "
                    "returned"
                )
            warnings.warn(
                f"hyperparameter search: the highest value, {shown} at theta "
                f"{np.round(theta, 4).tolist()}, came from a fit whose bound its engine found "
                f"{why}, {returned}",
                RuntimeWarning,
                stacklevel=3,
            )
        if self.others_warned:
            said = "; ".join(f"{n} x {first}" for first, n in self.other_messages.values())
            warnings.warn(
                f"hyperparameter search: {self.others_warned} of {self.calls} fits away from "
                f"the values returned warned: {said}",
                RuntimeWarning,
                stacklevel=3,
            )


def _apart(a: float, b: float) -> tuple[str, str]:
    """a and b to six significant figures, or to as many more (up to 12) as tell them apart."""
    for digits in range(6, 13):
        shown = f"{a:.{digits}g}", f"{b:.{digits}g}"
        if shown[0] != shown[1]:
            break
    return shown


def _standing(value: float, post: Posterior) -> tuple[bool, float]:
    """How a search ranks a fit of value ``value`` against the others (higher is better).

    A fit whose bound its engine found unreliable (``post.bound_unreliable``: the softmax KL
    engine's Monte Carlo estimate broken down) ranks below every other, so it is returned
    only if every fit was one. A fit whose bound its engine found optimistic
    (``post.bound_optimistic``: the Monte Carlo bound on the fit's own draws above its
    re-estimate on independent ones, ``post.held_out_bound``) ranks by its value with the
    re-estimate in place of the bound, the unbiased of the two. Any other ranks by its value.

    The substitution takes the objective to be the bound plus terms that do not depend on
    the engine's draws, as the evidence objective is; only the softmax KL engine sets
    either flag, and it takes no other objective. The ranking decides which fit is returned,
    not where L-BFGS-B goes: that follows the values.
    """
    if getattr(post, "bound_unreliable", False):
        return False, value
    held_out = getattr(post, "held_out_bound", None)
    if getattr(post, "bound_optimistic", False) and held_out is not None:
        return True, value - (post.log_marginal_likelihood - held_out)
    return True, value


@dataclass
class _NegativeObjective:
    """-objective and its gradient for L-BFGS-B in the scaled variables x = c theta; one per
    run, carrying its warm start.

    The warm start (from the posterior at the previous evaluation of this run) is an
    explicit field, fresh for every run, so one run's result does not depend on another.
    L-BFGS-B's first trial step (all variables bounded) is the whole negative gradient,
    clipped to the bounds: at a start where the gradient is large this sends
    log sigma_f^2 and log ell to their bounds at once, and the line search wanders back.
    With c^2 the largest gradient component at the start (at least 1), that first step
    is at most one unit in log space. (Scaling the variables rather than the objective
    leaves L-BFGS-B's test on the relative decrease of the objective as it was.)
    """

    engine: Engine
    X: np.ndarray
    y: np.ndarray
    kernel: Kernel
    likelihood: Likelihood
    has_mean: bool
    names: list[str]
    objective: str
    value_and_gradient: Callable[[Posterior], tuple[float, np.ndarray]]
    options: dict
    uses_warm_start: bool
    shared: _Evaluations
    inducing_shape: tuple[int, int] | None = None  # (M, d) when the inducing inputs are fitted
    previous: Posterior | None = None
    c: float = 1.0
    calls: int = 0

    def evaluate(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """(objective, gradient) at theta, from the shared cache when already computed."""
        key = np.asarray(theta, dtype=float).tobytes()
        if key in self.shared.cache:
            return self.shared.cache[key]
        k, m, Z = _split(theta, self.kernel, self.has_mean, self.inducing_shape)
        extra = {} if Z is None else {"inducing": Z}
        if self.uses_warm_start and self.previous is not None:
            # the previous posterior's state, moved to first order toward theta where the
            # engine can (Laplace's mode: warm_start_at)
            move = getattr(self.previous, "warm_start_at", None)
            extra["warm_start"] = self.previous.warm_start if move is None else move(theta)
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:  # (said once, by _Evaluations.say)
            warnings.simplefilter("always")
            try:
                post = self.engine.run(
                    self.X, self.y, k, self.likelihood, m, **{**self.options, **extra}
                )
                seconds = time.perf_counter() - t0
                value, grad = self.value_and_gradient(post)
            except BaseException:
                self.shared.set_aside(caught)
                raise
        grad = np.asarray(grad, dtype=float)
        self.calls += 1
        self.shared.calls += 1
        if self.uses_warm_start:
            self.previous = post
        if not (np.isfinite(value) and np.all(np.isfinite(grad))):
            self.shared.set_aside(caught)
            point = dict(zip(self.names, np.round(theta, 4), strict=True))
            raise FloatingPointError(f"the {self.objective} is not finite at {point}")
        value = float(value)
        self.shared.cache[key] = (value, grad)
        shared = self.shared
        standing = _standing(value, post)
        demoted = standing != (True, value)  # (ranked below its value)
        if demoted and (shared.demoted_top is None or value > shared.demoted_top[0]):
            shared.demoted_top = (value, np.array(theta, dtype=float), standing)
        if standing > shared.best_standing:
            shared.set_aside(shared.best_warnings)
            shared.best_warnings = caught
            shared.best_standing = standing
            shared.best_value, shared.best_posterior = value, post
            shared.best_seconds = seconds
            shared.best_theta = np.array(theta, dtype=float)
        else:
            shared.set_aside(caught)
        return value, grad

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        theta = x / self.c
        value, grad = self.evaluate(theta)
        for run, (end, _) in enumerate(self.shared.ends):
            if np.max(np.abs(theta - end)) <= JOIN_TOL:
                raise _Joined(run)
        return -value, -grad / self.c


def _split(
    theta: np.ndarray, kernel: Kernel, has_mean: bool, inducing_shape: tuple[int, int] | None
) -> tuple[Kernel, float | None, np.ndarray | None]:
    """theta as (kernel, prior mean or None, inducing inputs or None), in that order."""
    p = kernel.n_hyperparameters
    q = p + int(has_mean)
    Z = None if inducing_shape is None else theta[q:].reshape(inducing_shape).copy()
    return kernel.with_theta(theta[:p]), (float(theta[p]) if has_mean else None), Z


def maximize(
    engine: Engine,
    X: np.ndarray,
    y: np.ndarray,
    kernel: Kernel,
    likelihood: Likelihood,
    mean: float | None,
    *,
    n_restarts: int = N_RESTARTS,
    random_seed: int | np.random.Generator | None = None,
    mean_bounds: tuple[float, float] = MEAN_BOUNDS,
    objective: str = "evidence",
    value_and_gradient: Callable[[Posterior], tuple[float, np.ndarray]] | None = None,
    value: Callable[[Posterior], float] | None = None,
    **options,
) -> Posterior:
    """Fit the hyperparameters by maximising an engine's objective; return the posterior there.

    Parameters
    ----------
    engine : module
        The engine (:class:`gpc_compare.engines.Engine`).
    X, y, kernel, likelihood, mean
        As for :func:`gpc_compare.fit`; ``kernel`` and ``mean`` give the first start.
    n_restarts : int
        Further starts, drawn uniformly in log space within the bounds.
    random_seed : int or Generator, optional
        Seeds the restarts.
    mean_bounds : (float, float)
        Bounds on the constant prior mean, when it is a hyperparameter.
    objective : str
        Name of the objective, recorded in the result.
    value_and_gradient : callable, optional
        Maps a posterior to (objective, gradient); by default its log marginal
        likelihood and that's gradient.
    value : callable, optional
        Maps a posterior to the objective alone (no gradient), for the final record.
    **options
        The engine's options (:meth:`Engine.run`).

    Returns
    -------
    Posterior
        The posterior at the best values the search evaluated (module note: ranked by
        :func:`_standing`), with no refit, its ``optimization`` the
        :class:`OptimizationResult`: ``best_value`` is that fit's objective (its bound as
        estimated, even where an optimistic bound ranked it by its re-estimate), and
        ``converged`` the convergence of the run that ended nearest it.
    """
    if n_restarts < 0:
        raise ValueError(f"n_restarts must be a whole number >= 0, got {n_restarts}")
    has_mean = mean is not None
    names, bounds, theta0, inducing_shape = _search_space(kernel, mean, mean_bounds, X, options)
    if value is None:

        def value(post: Posterior) -> float:
            return post.log_marginal_likelihood

    if value_and_gradient is None:

        def value_and_gradient(post: Posterior) -> tuple[float, np.ndarray]:
            return post.log_marginal_likelihood, post.log_marginal_likelihood_gradient

    rng = np.random.default_rng(random_seed)
    if engine.seeded and options.get("random_seed") is None:
        # one fixed seed for the engine's own randomness, so that the objective is a
        # deterministic function of theta (a shared Generator would make it drift)
        options = engine.with_seed(options, int(rng.integers(2**32)))
    if theta0.size == 0:  # nothing to fit
        post = engine.run(X, y, kernel, likelihood, mean, **options)
        post.optimization = OptimizationResult(objective, names, theta0, value(post), True, 1, [])
        return post

    starts = _starts(theta0, bounds, n_restarts, rng)
    uses_warm_start = engine.takes_option("warm_start") and "warm_start" not in options

    runs, shared = _search(
        starts,
        bounds,
        engine=engine,
        X=X,
        y=y,
        kernel=kernel,
        likelihood=likelihood,
        has_mean=has_mean,
        names=names,
        objective=objective,
        value_and_gradient=value_and_gradient,
        options=options,
        uses_warm_start=uses_warm_start,
        inducing_shape=inducing_shape,
    )

    # the posterior at the best point evaluated (a run's end, or better): no refit; where
    # a fit of higher value was passed over (_standing), the run that ended nearest the point
    best = max(runs, key=lambda r: r.value)
    if shared.passed_over():
        best = min(runs, key=lambda r: float(np.max(np.abs(r.theta - shared.best_theta))))
    post = shared.best_posterior
    fit_seconds = shared.best_seconds  # (its engine call, warm-started)
    post.optimization = OptimizationResult(
        objective=objective,
        names=names,
        theta=shared.best_theta,
        best_value=value(post),
        converged=best.converged,
        n_evaluations=shared.calls,
        restarts=runs,
        fit_seconds=fit_seconds,
    )
    return post


def _search(
    starts: Sequence[np.ndarray], bounds: np.ndarray, **objective: Any
) -> tuple[list[Restart], _Evaluations]:
    """One L-BFGS-B run from each start (:func:`_run`; ``objective``: the fields of
    :class:`_NegativeObjective`), sharing their evaluations; the warnings of the engine's
    fits are said once, at the end (:meth:`_Evaluations.say`)."""
    runs: list[Restart] = []
    shared = _Evaluations()
    try:
        for start in starts:
            negative = _NegativeObjective(shared=shared, **objective)
            runs.append(_run(negative, start, bounds))
            shared.ends.append((runs[-1].theta, runs[-1].value))
    finally:
        shared.say()
    return runs, shared


def _search_space(
    kernel: Kernel, mean: float | None, mean_bounds, X: np.ndarray, options: dict[str, Any]
) -> tuple[list[str], np.ndarray, np.ndarray, tuple[int, int] | None]:
    """What is fitted: names, bounds (p, 2) and start of the kernel's log hyperparameters,
    the mean's (if one) and a sparse engine's inducing inputs (``optimize_inducing``:
    unbounded), and the inducing inputs' shape (None when they are held)."""
    names = kernel.hyperparameter_names + ([] if mean is None else ["mean"])
    bounds = kernel.bounds
    theta0 = kernel.theta
    if mean is not None:
        lo, hi = (float(b) for b in mean_bounds)
        if not lo < hi:
            raise ValueError(f"mean_bounds must be (low, high) with low < high, got {mean_bounds}")
        bounds = np.vstack([bounds, [[lo, hi]]])
        theta0 = np.append(theta0, float(mean))
    if not options.get("optimize_inducing"):
        return names, bounds, theta0, None
    # a sparse engine's inducing inputs (chosen by gc.fit) join theta, unbounded; the
    # restarts draw the kernel's and the mean's values and start every input from Z
    Z0 = np.asarray(options.get("inducing"), dtype=float)
    if Z0.ndim != 2 or Z0.shape[1] != X.shape[1]:
        raise ValueError(
            "optimize_inducing=True needs the inducing inputs as an (M, d) array (gc.fit "
            f"chooses them from a count); got {options.get('inducing')!r}"
        )
    names = names + inducing_names(*Z0.shape)
    bounds = np.vstack([bounds, np.full((Z0.size, 2), [-np.inf, np.inf])])
    return names, bounds, np.append(theta0, Z0.ravel()), Z0.shape


def _starts(
    theta0: np.ndarray, bounds: np.ndarray, n_restarts: int, rng: np.random.Generator
) -> Iterator[np.ndarray]:
    """The optimiser's starts: theta0 within the bounds, then ``n_restarts`` drawn
    uniformly (in log space) within the finite bounds, one at a time (so a large
    ``n_restarts`` costs time, which Ctrl-C stops, and never memory up front)."""
    first = np.clip(theta0, bounds[:, 0], bounds[:, 1])
    yield first
    finite = np.all(np.isfinite(bounds), axis=1)
    for _ in range(n_restarts):
        start = first.copy()
        start[finite] = rng.uniform(bounds[finite, 0], bounds[finite, 1])
        yield start


def at_bounds(
    names: Sequence[str],
    theta: Sequence[float],
    bounds: np.ndarray | Sequence[Sequence[float]],
    *,
    tol: float = AT_BOUND_TOL,
) -> list[tuple[str, str, float]]:
    """The hyperparameters that sit at (within ``tol`` of) one of the optimiser's bounds.

    A selection at a bound is the bound's, not the objective's: the objective was still
    rising there (e.g. EP's evidence with the signal variance on a nearly separable set).

    Parameters
    ----------
    names : sequence of str
        Hyperparameter names, in the order of ``theta``.
    theta : sequence of float
        The selected values (log scale for the kernel's, as the optimiser sees them).
    bounds : array_like, shape (len(theta), 2)
        Lower and upper bound of each (``kernel.bounds``, then the mean's).
    tol : float
        Distance within which a value is at its bound.

    Returns
    -------
    list of (name, side, bound)
        ``side`` is ``"lower"`` or ``"upper"``; empty when every value is inside.
    """
    b = np.asarray(bounds, dtype=float).reshape(-1, 2)
    t = np.asarray(theta, dtype=float).ravel()
    if b.shape[0] != t.size or len(names) != t.size:
        raise ValueError(
            f"{len(names)} names, {t.size} values and {b.shape[0]} bounds do not match"
        )
    out = []
    for name, v, (lo, hi) in zip(names, t, b, strict=True):
        if np.isfinite(lo) and v <= lo + tol:
            out.append((str(name), "lower", float(lo)))
        elif np.isfinite(hi) and v >= hi - tol:
            out.append((str(name), "upper", float(hi)))
    return out


def _run(negative: _NegativeObjective, start: np.ndarray, bounds: np.ndarray) -> Restart:
    """One L-BFGS-B run from ``start``, in variables scaled by the gradient there, stopped
    early if it reaches where an earlier run ended."""
    try:
        value, grad = negative.evaluate(start)
        c = negative.c = np.sqrt(max(float(np.max(np.abs(grad), initial=0.0)), 1.0))
        for run, (end, _) in enumerate(negative.shared.ends):
            if np.max(np.abs(start - end)) <= JOIN_TOL:
                raise _Joined(run)
        # L-BFGS-B's first call, at x0 / c, is the start up to rounding: the same point
        negative.shared.cache.setdefault(((c * start) / c).tobytes(), (value, grad))
        # pgtol divided by c: the test on the projected gradient is the same as unscaled
        res = scipy.optimize.minimize(
            negative,
            c * start,
            jac=True,
            method="L-BFGS-B",
            bounds=c * bounds,
            options={"gtol": 1e-5 / c, "ftol": FTOL},
        )
    except _Joined as joined:
        theta, value = negative.shared.ends[joined.run]
        message = f"stopped on reaching where run {joined.run} ended"
        return Restart(start, theta.copy(), value, True, negative.calls, message)
    theta = np.asarray(res.x, dtype=float) / c
    theta, message = _to_the_bounds(negative, theta, bounds, str(res.message))
    return Restart(
        start,
        theta,
        negative.evaluate(theta)[0],
        bool(res.success),
        negative.calls,
        message,
    )


def _to_the_bounds(
    negative: _NegativeObjective, theta: np.ndarray, bounds: np.ndarray, message: str
) -> tuple[np.ndarray, str]:
    """Where L-BFGS-B stopped with a hyperparameter near a bound and the objective still
    rising towards it, the point with those hyperparameters at the bound, if it is better.

    An irrelevant input's ARD length-scale drifts towards its upper bound along a nearly
    flat direction, and L-BFGS-B's relative-decrease test stops it short (e.g. 0.09 log
    units short, leaving 5e-6 of evidence); at a bound-constrained maximum the KKT
    conditions put every coordinate whose gradient points out of the box at its bound.
    One more evaluation, kept only when it raises the objective.
    """
    value, grad = negative.evaluate(theta)  # the objective and its gradient (cached)
    lo, hi = bounds[:, 0], bounds[:, 1]
    up = (grad > 0.0) & (hi - theta <= SNAP_DISTANCE) & (theta < hi)
    down = (grad < 0.0) & (theta - lo <= SNAP_DISTANCE) & (theta > lo)
    if not (up.any() or down.any()):
        return theta, message
    moved = np.where(up, hi, np.where(down, lo, theta))
    try:
        better = negative.evaluate(moved)[0] > value
    except (FloatingPointError, ValueError, np.linalg.LinAlgError):
        better = False  # (a trial point only: where it fails the run's end stands)
    if better:
        names = [negative.names[i] for i in np.flatnonzero(up | down)]
        return moved, f"{message}; then {', '.join(names)} moved to the bound(s)"
    return theta, message
