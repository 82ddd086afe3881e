"""The record :func:`gpc_compare.trust.psis` returns, and the PSIS arithmetic behind it."""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from scipy.special import gammaln, logsumexp

from .._validation import check_class_labels
from ..numerics import LOG_2PI
from ._targets import Draws, Target, log_gaussian_integral

__all__ = [
    "EQUAL_SPREAD",
    "KHAT_BOUND",
    "PSISDiagnosis",
    "draw_blocks",
    "khat_threshold",
    "smooth",
    "verdict",
]

#: Above this k-hat no number of draws makes the estimates reliable in practice
#: (Vehtari et al. 2024, sec. 3.2.4): "not reliable"; their Monte Carlo errors are not
#: reliable either (:meth:`PSISDiagnosis.mean_log_predictive`'s se is NaN there).
KHAT_BOUND = 0.7
#: Raw log weights spanning less than this are equal (q is the target): there is no tail
#: to fit (loo's and ArviZ's fits give up there, k = inf), and pareto_k is -inf.
EQUAL_SPREAD = float(np.sqrt(np.finfo(float).eps))
#: The scalars of :meth:`PSISDiagnosis.record`.
RECORD_KEYS = (
    *("method", "diagnosed", "proposal", "df", "draws", "pareto_k", "khat_threshold"),
    *("verdict", "min_draws", "ess", "log_evidence", "log_evidence_se", "seconds"),
)
#: Elements of the (draws x test points) arrays of a block of predictions.
PREDICT_ELEMENTS = 2**20


def khat_threshold(draws: int) -> float:
    """min(1 - 1 / log10(S), 0.7): below it the PSIS estimates from S draws are reliable
    (Vehtari et al. 2024, eq. 13 and sec. 3.2.4)."""
    return min(1.0 - 1.0 / math.log10(draws), KHAT_BOUND)


def verdict(pareto_k: float, draws: int) -> str:
    """ "reliable" below :func:`khat_threshold`, "usable with care" from it up to 0.7 (more
    draws, at least :func:`min_draws`, would make it reliable), "not reliable" above 0.7
    (or where the tail could not be fitted: k = inf or NaN)."""
    if pareto_k < khat_threshold(draws):
        return "reliable"
    if pareto_k <= KHAT_BOUND:
        return "usable with care"
    return "not reliable"


def min_draws(pareto_k: float) -> float:
    """10^(1 / (1 - k)), the draws at which k is below the sample-size threshold
    (Vehtari et al. 2024, sec. 3.2.3); 10 for k <= 0, inf for k >= 1."""
    if not pareto_k < 1.0:
        return math.inf
    exponent = 1.0 / (1.0 - max(pareto_k, 0.0))
    return math.inf if exponent > 308.0 else 10.0**exponent  # (k > 0.9968: beyond floats)


def smooth(log_weights: np.ndarray) -> tuple[np.ndarray, float]:
    """PSIS-smoothed, normalised log weights and k-hat: ``arviz.psislw`` (r_eff = 1: the
    draws are independent), except for equal weights (spread below :data:`EQUAL_SPREAD`),
    which are returned equal, with k-hat -inf."""
    S = log_weights.size
    if float(np.ptp(log_weights)) < EQUAL_SPREAD:
        return np.full(S, -math.log(S)), -math.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # arviz's refactor notice
        import arviz as az

        smoothed, k = az.psislw(np.array(log_weights, dtype=float), reff=1.0)
    return np.asarray(smoothed), float(k)


def log_evidence(log_weights: np.ndarray) -> tuple[float, float]:
    """log Z^ = log mean exp of the raw log weights (unbiased Z^), and its standard error
    by the delta method: sd(w) / (sqrt(S) mean(w))."""
    S = log_weights.size
    w = np.exp(log_weights - log_weights.max())
    mean = float(w.mean())
    se = float(np.std(w, ddof=1) / math.sqrt(S) / mean)
    return float(logsumexp(log_weights) - math.log(S)), se


def t_correction(sq_dist: np.ndarray, dim: int, df: float) -> np.ndarray:
    """log N_D(x | 0, I) - log t_D,df(x | 0, I) at |x|^2 = ``sq_dist``: the Gaussian
    proposal's log weight plus this is the Student-t proposal's (same location and scale,
    so the log determinants cancel)."""
    log_t = (
        gammaln(0.5 * (df + dim))
        - gammaln(0.5 * df)
        - 0.5 * dim * math.log(df * math.pi)
        - 0.5 * (df + dim) * np.log1p(sq_dist / df)
    )
    return -0.5 * dim * LOG_2PI - 0.5 * sq_dist - log_t


def draw_blocks(
    target: Target, generators: list, sizes: list[int], df: float | None
) -> Iterator[tuple[np.ndarray, Draws]]:
    """(log weights, draws) block by block: each block from its own generator (copied, so
    that the same blocks can be drawn again), the standard normal vectors scaled by
    sqrt(df / chi2_df) for the Student-t proposal (``df`` not None)."""
    for gen, size in zip(generators, sizes, strict=True):
        rng = copy.deepcopy(gen)
        scale = np.ones(size) if df is None else np.sqrt(df / rng.chisquare(df, size))
        d = target.draw(rng, scale)
        lw = d.log_ratio
        if df is not None:
            lw = lw + t_correction(scale**2 * d.sq_norm, target.dim, df)
        yield lw, d


def _no_options(kwargs: dict[str, Any]) -> None:
    if kwargs:
        raise TypeError(
            f"unexpected keyword argument(s) {sorted(kwargs)}: the options are for the "
            "softmax's integral; a binary prediction is exact (closed form or quadrature)"
        )


@dataclass(frozen=True, repr=False)
class PSISDiagnosis:
    """The outcome of :func:`gpc_compare.trust.psis` (see there for the method).

    Parameters
    ----------
    method : str
        The engine diagnosed.
    diagnosed : str
        Which q is weighed against which target density.
    proposal : str
        "gaussian" (q) or "student_t" (q's location and scale, ``df`` degrees of freedom).
    df : float or None
    draws : int
    pareto_k : float
        k-hat of the raw weights' upper tail (``arviz.psislw``); -inf for equal weights.
    khat_threshold : float
        min(1 - 1 / log10(draws), 0.7).
    verdict : str
        "reliable", "usable with care" or "not reliable".
    min_draws : float
        10^(1 / (1 - k)): the draws that would bring k-hat below the threshold.
    ess : float
        1 / sum(w~^2) of the smoothed, normalised weights w~.
    log_evidence, log_evidence_se : float
        log mean exp of the raw log weights, and its delta-method standard error.
    seconds : float
        Wall-clock time of the diagnosis.
    log_weights : ndarray, shape (draws,)
        The raw log weights log p(y, x) - log proposal(x).
    smoothed_log_weights : ndarray, shape (draws,)
        PSIS-smoothed and normalised (log-sum-exp zero).

    Other Parameters
    ----------------
    _target : Target
        The posterior's proposal and model (internal, for the corrected predictions).
    _keep : ndarray
        What each draw is conditioned on (see the notes).
    _blocks : tuple
        The generators of the draws, their block sizes and the Student-t degrees of freedom
        (None: Gaussian), to draw them again.

    Notes
    -----
    For the corrected predictions the record keeps what each draw is conditioned on
    (dense: its whitened values, draws x n floats, and chol(K); sparse: its M inducing
    values), and the generators to draw them again (``latent_mean``).
    """

    method: str
    diagnosed: str
    proposal: str
    df: float | None
    draws: int
    pareto_k: float
    khat_threshold: float
    verdict: str
    min_draws: float
    ess: float
    log_evidence: float
    log_evidence_se: float
    seconds: float
    log_weights: np.ndarray
    smoothed_log_weights: np.ndarray
    _target: Target = field(compare=False)
    _keep: np.ndarray = field(compare=False)
    _blocks: tuple = field(compare=False)

    # ------------------------------------------------------------------ predictions
    def _draw_log_predictive(self, Xs: np.ndarray, log_pred) -> Iterator[tuple[slice, Any]]:
        """(draws, log p_s(x*)) block by block, ``log_pred(means, var)`` giving log p_s,
        (b, m) or (b, m, C), for the draws of each block."""
        step = max(1, PREDICT_ELEMENTS // max(1, Xs.shape[0]))
        for start in range(0, self.smoothed_log_weights.size, step):
            s = slice(start, start + step)
            yield s, log_pred(*self._target.conditional(Xs, self._keep[s]))

    def _weighted_log_predictive(self, Xs: np.ndarray, log_pred) -> np.ndarray:
        """log sum_s w~_s p_s(x*) over draws in blocks, ``log_pred(means, var)`` giving
        log p_s, (b, m) or (b, m, C)."""
        lw = self.smoothed_log_weights
        out = None
        for s, lp in self._draw_log_predictive(Xs, log_pred):
            w = lw[s].reshape((-1,) + (1,) * (lp.ndim - 1))
            part = logsumexp(w + lp, axis=0)
            out = part if out is None else np.logaddexp(out, part)
        return out

    def predict_proba(self, Xs: np.ndarray, **kwargs: Any) -> np.ndarray:
        """p(y* = +1 | x*, data) corrected by the weights, shape (m,), or
        p(y* = c | x*, data), shape (m, C), for the softmax (``kwargs`` as for its
        ``predict_log_proba``): sum_s w~_s int p(y* | f*) N(f* | conditional of draw s).
        Refused for the Gaussian likelihood (regression).

        Parameters
        ----------
        Xs : array_like, shape (m, d)
            Test inputs.
        **kwargs
            The softmax's integration options (``integration``, ``n_samples``,
            ``random_seed``); none for a binary likelihood.

        Returns
        -------
        ndarray, shape (m,) or (m, C)

        Raises
        ------
        ValueError
            For the Gaussian likelihood.
        TypeError
            For an option with a binary likelihood.
        """
        post = self._target.posterior
        Xs = post._check_Xs(Xs)
        if post.likelihood.regression:
            raise ValueError(
                "the Gaussian likelihood is for regression: there is no class probability; "
                "use log_predictive"
            )
        if post.likelihood.latent_dim != 1:
            return np.exp(self._softmax_log_proba(Xs, **kwargs))
        _no_options(kwargs)
        ones = np.ones(Xs.shape[0])

        def log_pred(means, var):
            return log_gaussian_integral(post.likelihood, ones, means, var[None, :])

        return np.exp(self._weighted_log_predictive(Xs, log_pred))

    def log_predictive(self, Xs: np.ndarray, ys: np.ndarray, **kwargs: Any) -> np.ndarray:
        """log p(y* | x*, data) corrected by the weights, in log space: log sum_s w~_s
        p(y* | draw s) (labels as for the posterior's ``log_predictive``; ``kwargs`` for
        the softmax's integral only).

        Parameters
        ----------
        Xs : array_like, shape (m, d)
            Test inputs.
        ys : array_like, shape (m,)
            Their labels (class indices for several classes), or real targets with the Gaussian
            likelihood.
        **kwargs
            The softmax's integration options; none for a binary likelihood.

        Returns
        -------
        ndarray, shape (m,)
            log p(y*_i | x*_i, data) per test case.
        """
        return self._weighted_log_predictive(*self._case_log_pred(Xs, ys, kwargs))

    def mean_log_predictive(
        self, Xs: np.ndarray, ys: np.ndarray, **kwargs: Any
    ) -> tuple[float, float]:
        """The corrected mean log predictive over the test cases, mean_i log p^_i with
        p^_i = sum_s w~_s p(y*_i | draw s) (as :meth:`log_predictive`), and its Monte Carlo
        standard error.

        The estimate is a smooth function F(p^) = mean_i log p^_i of self-normalised
        importance-sampling means; by the delta method for such an estimate (Owen 2013,
        sec. 9.2), its variance is about sum_s w~_s^2 (h_s - h^)^2, with h_s the draw's
        linearised contribution grad F . p_s = mean_i p(y*_i | draw s) / p^_i =: g_s and
        h^ = grad F . p^ = 1:

            se = sqrt(sum_s w~_s^2 (g_s - 1)^2),

        computed with the Pareto-smoothed weights, as Vehtari et al. (2024) estimate the
        Monte Carlo error of a PSIS estimate. It is the error of the S draws only, and as
        good as the weights: it is NaN where k-hat exceeds 0.7 (or could not be fitted),
        where Vehtari et al. (2024, sec. 3.2.4) find the error estimate itself unreliable (as
        the weights concentrate on one draw, ESS -> 1, the formula goes to 0). With equal
        weights (q the posterior) it is the plain Monte Carlo error sd(g) / sqrt(S) of
        averaging the draws' predictions.

        Parameters
        ----------
        Xs : array_like, shape (m, d)
            Test inputs.
        ys : array_like, shape (m,)
            Their labels, as for :meth:`log_predictive`.
        **kwargs
            The softmax's integration options; none for a binary likelihood.

        Returns
        -------
        mean_log_predictive : float
        se : float
            NaN where ``pareto_k`` exceeds 0.7 or is NaN.
        """
        Xs, log_pred = self._case_log_pred(Xs, ys, kwargs)
        log_p = self._weighted_log_predictive(Xs, log_pred)
        g = np.empty(self.draws)
        for s, lp in self._draw_log_predictive(Xs, log_pred):
            g[s] = np.mean(np.exp(lp - log_p), axis=1)
        if not self.pareto_k <= KHAT_BOUND:  # (also NaN: no tail fitted)
            return float(np.mean(log_p)), math.nan
        w = np.exp(self.smoothed_log_weights)
        return float(np.mean(log_p)), math.sqrt(float(np.sum(w**2 * (g - 1.0) ** 2)))

    def _case_log_pred(self, Xs: np.ndarray, ys: np.ndarray, kwargs: dict[str, Any]):
        """The test inputs, checked, and ``log_pred(means, var)``: log p(y*_i | draw), (b, m),
        of each case's own label."""
        post = self._target.posterior
        if post.likelihood.latent_dim != 1:
            Xs = post._check_Xs(Xs)
            codes, _ = check_class_labels(ys, name="ys", classes=post.classes_)
            if codes.shape[0] != Xs.shape[0]:
                raise ValueError(f"Xs has {Xs.shape[0]} samples but ys has {codes.shape[0]}")
            every_class, cases = self._softmax_log_pred(kwargs), np.arange(codes.size)
            return Xs, lambda means, var: every_class(means, var)[:, cases, codes]
        _no_options(kwargs)
        Xs, ys = post._check_test_set(Xs, ys)

        def log_pred(means, var):
            return log_gaussian_integral(post.likelihood, ys, means, var[None, :])

        return Xs, log_pred

    def _softmax_log_pred(self, kwargs: dict[str, Any]):
        """log p(y* = c | draw) for every class c, (b, m, C), of the draws' conditionals."""
        lik = self._target.posterior.likelihood
        C = lik.n_classes or self._keep.shape[1] // self._target.posterior.X.shape[0]

        def log_pred(means, var):
            cov = var[:, None, None] * np.eye(C)
            return lik.log_predictive_all(means, cov[None], **kwargs)

        return log_pred

    def _softmax_log_proba(self, Xs: np.ndarray, **kwargs: Any) -> np.ndarray:
        return self._weighted_log_predictive(Xs, self._softmax_log_pred(kwargs))

    @cached_property
    def latent_mean(self) -> np.ndarray:
        """The weighted mean of the latent values diagnosed: f at the training inputs ((n,)
        or (n, C)), or SVGP's whitened inducing values v (M,). The draws are made again
        (from the same generators), so this costs about what the diagnosis did."""
        w = np.exp(self.smoothed_log_weights)
        generators, sizes, df = self._blocks
        total, start = 0.0, 0
        for _, d in draw_blocks(self._target, generators, sizes, df):
            total = total + np.tensordot(w[start : start + d.latent.shape[0]], d.latent, 1)
            start += d.latent.shape[0]
        return total

    # ------------------------------------------------------------------- reporting
    def record(self) -> dict[str, Any]:
        """The scalars, JSON-ready (pareto_k may be -inf, min_draws inf).

        Returns
        -------
        dict
            The scalar fields, from ``method`` to ``seconds`` (not the weights).
        """
        return {key: getattr(self, key) for key in RECORD_KEYS}

    def __repr__(self) -> str:
        return (
            f"<PSISDiagnosis {self.method} ({self.proposal}, {self.draws} draws): "
            f"pareto_k={self.pareto_k:.3g} -> {self.verdict}; ess={self.ess:.4g}; "
            f"log_evidence={self.log_evidence:.6g} +- {self.log_evidence_se:.2g}>"
        )
