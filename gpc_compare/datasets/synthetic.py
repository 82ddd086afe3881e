"""Synthetic problems with a known truth: Gaussian mixtures, a logistic model, near-separable data.

- The mixture problems (:class:`GaussianMixtureProblem`; :data:`RIPLEY_MIXTURE`,
  :data:`BISHOP_MIXTURE`) carry their exact Bayes posterior p(y = k | x), computed in log
  space, and their Bayes error; :func:`make_mixture` draws from any of them,
  :func:`make_ripley_mixture` and :func:`make_bishop_mixture` from the two named ones.
- Breiman's (1996) 20-D problems with a known model: :func:`make_twonorm` (two unit normals
  with means +-a (1, ..., 1)) and :func:`make_ringnorm` (N(0, 4 I) against N(a 1, I)), with
  their exact posteriors and Bayes errors (:data:`TWONORM_BAYES_ERROR`,
  :data:`RINGNORM_BAYES_ERROR`).
- :func:`make_logistic_1d`: the 1-D Bayesian logistic regression example (Bishop 2006,
  secs. 4.4-4.5), x ~ N(0, 10^2), y ~ Bernoulli(sigma(w x)), with its true p(y | x).
- :func:`make_near_separable`: two classes split by a hyperplane with a margin, where the
  maximum-likelihood logistic fit diverges.

Every generator is deterministic in ``random_seed`` (``np.random.default_rng``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.linalg
from scipy import special, stats

from .._validation import check_count, check_X
from ..numerics import LOG_2PI, log_sigmoid
from ._dataset import Dataset

__all__ = [
    "BISHOP_MIXTURE",
    "RINGNORM_A",
    "RINGNORM_BAYES_ERROR",
    "RIPLEY_MIXTURE",
    "TWONORM_A",
    "TWONORM_BAYES_ERROR",
    "GaussianMixtureProblem",
    "MixtureComponent",
    "make_bishop_mixture",
    "make_logistic_1d",
    "make_mixture",
    "make_near_separable",
    "make_ringnorm",
    "make_ripley_mixture",
    "make_twonorm",
    "ringnorm_log_proba",
    "twonorm_log_proba",
]


# --------------------------------------------------------------------------- mixtures
class MixtureComponent(NamedTuple):
    """One bivariate normal of a class-conditional mixture.

    Parameters
    ----------
    weight : float
        The component's weight within its class's mixture.
    mean : (float, float)
        The mean.
    cov : ((float, float), (float, float))
        The covariance matrix.
    """

    weight: float
    mean: tuple[float, float]
    cov: tuple[tuple[float, float], tuple[float, float]]


@dataclass(frozen=True, eq=False)
class GaussianMixtureProblem:
    """Two classes whose class-conditional densities p(x | y = k) are Gaussian mixtures.

    Everything the Bayes-optimal classifier needs is exact: the posterior (Bishop eq.
    1.82 / 4.57) p(y = 1 | x) = sigma(a), a = log pi_1 p(x | 1) - log pi_0 p(x | 0),
    computed from log densities (log-sum-exp over components), so it stays accurate
    where one class's density underflows.

    Parameters
    ----------
    name : str
    components : tuple of two tuples of MixtureComponent
        The mixture of class 0, then of class 1 (weights summing to one within a class).
    prior : float
        p(y = 1).
    bayes_error : float
        The Bayes error, integral of min(pi_0 p(x | 0), pi_1 p(x | 1)) dx, computed once
        by quadrature on a fine grid (documented where the constant is defined).
    """

    name: str
    components: tuple[tuple[MixtureComponent, ...], tuple[MixtureComponent, ...]]
    prior: float
    bayes_error: float

    def class_log_density(self, X: np.ndarray) -> np.ndarray:
        """log p(x | y = k) for k = 0, 1, shape (m, 2)."""
        X = check_X(X, n_features=2)
        out = np.empty((X.shape[0], 2))
        for k, comps in enumerate(self.components):
            terms = [np.log(c.weight) + _mvn_logpdf(X, c.mean, c.cov) for c in comps]
            out[:, k] = np.logaddexp.reduce(np.stack(terms), axis=0)
        return out

    def log_proba(self, X: np.ndarray) -> np.ndarray:
        """log p(y = k | x) for k = 0, 1, shape (m, 2) (Bayes' rule in log space)."""
        a = self.class_log_density(X) + np.log([1.0 - self.prior, self.prior])
        return a - np.logaddexp(a[:, :1], a[:, 1:])

    def proba(self, X: np.ndarray) -> np.ndarray:
        """The Bayes posterior p(y = 1 | x), shape (m,); the optimal boundary is p = 0.5."""
        return np.exp(self.log_proba(X)[:, 1])

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """n i.i.d. draws (x, y): y ~ Bernoulli(prior), a component by its weight, then x."""
        y = (rng.random(n) < self.prior).astype(int)
        X = np.empty((n, 2))
        for k, comps in enumerate(self.components):
            idx = np.flatnonzero(y == k)
            which = rng.choice(len(comps), size=idx.size, p=[c.weight for c in comps])
            for j, c in enumerate(comps):
                rows = idx[which == j]
                L = np.linalg.cholesky(np.asarray(c.cov))
                X[rows] = np.asarray(c.mean) + rng.standard_normal((rows.size, 2)) @ L.T
        return X, y

    def bayes_error_monte_carlo(
        self, n: int = 100_000, random_seed: int = 0
    ) -> tuple[float, float]:
        """Monte Carlo estimate of the Bayes error and its standard error.

        Averages min(p(y=1|x), p(y=0|x)) over x drawn from the model (the conditional
        error of the Bayes rule at x), which has a far smaller variance than counting
        its mistakes on sampled labels.
        """
        X, _ = self.sample(check_count(n, "n", minimum=2), np.random.default_rng(random_seed))
        e = np.exp(np.min(self.log_proba(X), axis=1))
        return float(e.mean()), float(e.std(ddof=1) / np.sqrt(e.size))


def _mvn_logpdf(X: np.ndarray, mean: Sequence[float], cov: Sequence[Sequence[float]]) -> np.ndarray:
    """log N(x | mean, cov) row by row, through the Cholesky factor of cov."""
    L = np.linalg.cholesky(np.asarray(cov, dtype=float))
    z = scipy.linalg.solve_triangular(L, (X - np.asarray(mean)).T, lower=True)
    d = X.shape[1]
    return -0.5 * np.sum(z * z, axis=0) - np.sum(np.log(np.diag(L))) - 0.5 * d * LOG_2PI


_RIPLEY_COV = ((0.03, 0.0), (0.0, 0.03))

#: Ripley's (1994; 1996, sec. 1.2) synthetic two-class problem, the model behind MASS's
#: ``synth.tr``/``synth.te``: equal priors; each class an equal mixture of two bivariate
#: normals with covariance 0.03 I, centred at (-0.7, 0.3) and (0.3, 0.3) for class 0 and
#: at (-0.3, 0.7) and (0.4, 0.7) for class 1. (Checked against the shipped data: a
#: two-component fit per class to the 1250 points recovers these centres to 0.02 and
#: variances 0.029-0.033; the Bayes rule makes 80 errors on the 1000 points of synth.te,
#: the 8.0% usually quoted, e.g. "the Bayes error is around 8%", Tipping 2001.) The
#: Bayes error of the model itself is 0.0893265 (midpoint-grid quadrature on
#: [-2.5, 2.5]^2: 0.0893282, 0.0893270, 0.0893266 at steps 0.004, 0.002, 0.001, converging
#: as step^2, extrapolated), i.e. 8.93%.
RIPLEY_MIXTURE = GaussianMixtureProblem(
    name="ripley_mixture",
    components=(
        (
            MixtureComponent(0.5, (-0.7, 0.3), _RIPLEY_COV),
            MixtureComponent(0.5, (0.3, 0.3), _RIPLEY_COV),
        ),
        (
            MixtureComponent(0.5, (-0.3, 0.7), _RIPLEY_COV),
            MixtureComponent(0.5, (0.4, 0.7), _RIPLEY_COV),
        ),
    ),
    prior=0.5,
    bayes_error=0.0893265,
)

#: A problem with the structure of Bishop's synthetic classification data (PRML App. A,
#: Fig. A.7; the data of Fig. 6.12's GP classifier): equal priors, class 0 ("blue") a
#: single Gaussian, class 1 ("red") an equal mixture of two. Bishop does not publish the
#: parameters, so these are ours, chosen to give a curved Bayes boundary and a similar
#: overlap: class 0 ~ N((0, -0.5), diag(1, 0.3)); class 1 ~ 0.5 N((-1.2, 0.8),
#: [[0.4, 0.2], [0.2, 0.4]]) + 0.5 N((1.2, 0.8), [[0.4, -0.2], [-0.2, 0.4]]). Bayes error
#: 0.0992874 (grid quadrature on [-6, 6]^2; steps 0.004 and 0.002 agree to 1e-8).
BISHOP_MIXTURE = GaussianMixtureProblem(
    name="bishop_mixture",
    components=(
        (MixtureComponent(1.0, (0.0, -0.5), ((1.0, 0.0), (0.0, 0.3))),),
        (
            MixtureComponent(0.5, (-1.2, 0.8), ((0.4, 0.2), (0.2, 0.4))),
            MixtureComponent(0.5, (1.2, 0.8), ((0.4, -0.2), (-0.2, 0.4))),
        ),
    ),
    prior=0.5,
    bayes_error=0.0992874,
)


def make_mixture(problem: GaussianMixtureProblem, n: int, random_seed: int = 0) -> Dataset:
    """n i.i.d. draws from a two-class Gaussian-mixture problem, with its Bayes posterior.

    The labels come first, y ~ Bernoulli(``problem.prior``), then each case's mixture
    component by its weight and x from that bivariate normal
    (:meth:`GaussianMixtureProblem.sample`); the same ``random_seed`` gives the same draws.
    ``true_log_proba`` is the problem's exact log p(y = k | x), so the Bayes-optimal
    boundary (p = 0.5) and error are known.

    Parameters
    ----------
    problem : GaussianMixtureProblem
        The model, e.g. :data:`RIPLEY_MIXTURE` or :data:`BISHOP_MIXTURE`.
    n : int
        Number of cases (at least 1).
    random_seed : int
        Seed of ``np.random.default_rng``.

    Returns
    -------
    Dataset
        ``name=problem.name``, ``kind="synthetic"``, d = 2 (``x1``, ``x2``), classes
        ``"class 0"`` and ``"class 1"``; ``info`` holds ``problem`` and ``random_seed``.
    """
    n = check_count(n, "n", minimum=1)
    X, y = problem.sample(n, np.random.default_rng(random_seed))
    n1 = int(y.sum())
    return Dataset(
        name=problem.name,
        X=X,
        y=y,
        feature_names=["x1", "x2"],
        description=(
            f"{problem.name} (synthetic, random_seed={random_seed}): n={n}, d=2, {n1} class 1 "
            f"(y=1) / {n - n1} class 0 (y=0), drawn i.i.d. from the model; "
            f"Bayes error {problem.bayes_error:.4f}."
        ),
        class_names=("class 0", "class 1"),
        kind="synthetic",
        true_log_proba=problem.log_proba,
        bayes_error=problem.bayes_error,
        info={"problem": problem, "random_seed": random_seed},
    )


def make_ripley_mixture(n: int = 250, random_seed: int = 0) -> Dataset:
    """Ripley's synthetic two-class mixture, freshly drawn, with its Bayes posterior.

    n i.i.d. draws from :data:`RIPLEY_MIXTURE` by :func:`make_mixture` (d = 2; equal
    priors, so the class counts are Binomial(n, 1/2)); the Bayes error is 8.93%. The
    default n = 250 is the size of MASS's ``synth.tr``; :func:`load_ripley_synth` loads the
    published draws themselves.

    Parameters
    ----------
    n, random_seed : int
        The sample size and the seed of ``np.random.default_rng``, as in
        :func:`make_mixture`.

    Returns
    -------
    Dataset
        ``name="ripley_mixture"``, ``kind="synthetic"``.
    """
    return make_mixture(RIPLEY_MIXTURE, n, random_seed)


def make_bishop_mixture(n: int = 200, random_seed: int = 0) -> Dataset:
    """A two-class mixture shaped like Bishop's Fig. 6.12 data, with its Bayes posterior.

    n i.i.d. draws from :data:`BISHOP_MIXTURE` by :func:`make_mixture` (d = 2; equal
    priors): class 0 a single Gaussian, class 1 an equal mixture of two, as Bishop (2006,
    App. A) describes his synthetic classification data; the parameters are ours (Bishop
    does not publish his). The exact posterior gives the Bayes-optimal boundary (Fig.
    6.12's green curve) and error (9.93%). For Ripley's published model use
    :func:`make_ripley_mixture`.

    Parameters
    ----------
    n, random_seed : int
        The sample size (default 200) and the seed of ``np.random.default_rng``, as in
        :func:`make_mixture`.

    Returns
    -------
    Dataset
        ``name="bishop_mixture"``, ``kind="synthetic"``.
    """
    return make_mixture(BISHOP_MIXTURE, n, random_seed)


# --------------------------------------------------------------------------- Breiman 1996
#: Breiman's twonorm: the classes are N(+a 1, I) and N(-a 1, I) in 20 dimensions, a = 2/sqrt(20).
TWONORM_A = 2.0 / np.sqrt(20.0)
#: Breiman's ringnorm: class 1 is N(a 1, I) and class 0 N(0, 4 I) in 20 dimensions, a = 2/sqrt(20).
RINGNORM_A = TWONORM_A
#: twonorm's Bayes error, Phi(-2) = 0.0227501 exactly: sum(x) / sqrt(20) is N(+-2, 1).
TWONORM_BAYES_ERROR = float(stats.norm.cdf(-2.0))
#: ringnorm's Bayes error, 1.24%, computed, not estimated. The log odds (equal priors) is
#: t(x) = -(3/8)|x|^2 + a sum(x) - 2 + 20 log 2, a function of z = sum(x)/sqrt(20) (N(2, 1)
#: in class 1, N(0, 4) in class 0) and r^2 = |x|^2 - z^2 (chi^2_19, resp. 4 chi^2_19,
#: independent of z). t > 0 iff r^2 < c(z) = -z^2 + 16 z/3 + (8/3)(20 log 2 - 2), so the
#: error is the 1-D integral 1/2 int N(z | 0, 4) F_19(c(z)/4) + N(z | 2, 1) (1 - F_19(c(z)))
#: dz (F_19 the chi^2_19 cdf, zero below 0): 0.0123966081031727 by scipy's quad (relative
#: tolerance 1e-13), and the same to 1e-16 integrating over r^2 instead in 30-digit mpmath.
#: The Bayes rule errs on 96 of DELVE's 7400 draws (1.30%).
RINGNORM_BAYES_ERROR = 0.0123966081031727
_BREIMAN_D = 20
_RINGNORM_T0 = _BREIMAN_D * np.log(2.0) - 0.5 * _BREIMAN_D * RINGNORM_A**2  # 20 log 2 - 2


def _breiman_X(X: np.ndarray, name: str) -> np.ndarray:
    X = check_X(X)
    if X.shape[1] != _BREIMAN_D:
        raise ValueError(f"{name} has 20 features, got X of shape {X.shape}")
    return X


def _log_proba_from_log_odds(t: np.ndarray) -> np.ndarray:
    """[log p(y = 0 | x), log p(y = 1 | x)] from t = log p(y = 1 | x) - log p(y = 0 | x)."""
    return np.column_stack([special.log_expit(-t), special.log_expit(t)])


def twonorm_log_proba(X: np.ndarray) -> np.ndarray:
    """twonorm's exact log p(y = k | x), k = 0, 1, shape (m, 2): log odds -2 a sum(x).

    Class 0 has mean +a (1, ..., 1) and class 1 mean -a (1, ..., 1), DELVE's coding.

    Parameters
    ----------
    X : array_like, shape (m, 20)
        Inputs, on twonorm's own (unscaled) coordinates.

    Returns
    -------
    ndarray, shape (m, 2)
        log p(y = 0 | x) and log p(y = 1 | x) for each row.

    Raises
    ------
    ValueError
        If ``X`` is not a finite 2-D array with 20 columns.
    """
    return _log_proba_from_log_odds(-2.0 * TWONORM_A * _breiman_X(X, "twonorm").sum(axis=1))


def ringnorm_log_proba(X: np.ndarray) -> np.ndarray:
    """ringnorm's exact log p(y = k | x), k = 0, 1, shape (m, 2), in log space.

    Log odds ``t(x) = -(3/8)|x|^2 + a sum(x) + 20 log 2 - 2`` (class 1 N(a 1, I) against class 0
    N(0, 4 I), equal priors), turned into log probabilities by ``log_expit``: finite
    wherever ``|x|^2`` is, however far out x lies.

    Parameters
    ----------
    X : array_like, shape (m, 20)
        Inputs, on ringnorm's own (unscaled) coordinates.

    Returns
    -------
    ndarray, shape (m, 2)
        log p(y = 0 | x) and log p(y = 1 | x) for each row.

    Raises
    ------
    ValueError
        If ``X`` is not a finite 2-D array with 20 columns.
    """
    X = _breiman_X(X, "ringnorm")
    t = -0.375 * np.einsum("ij,ij->i", X, X) + RINGNORM_A * X.sum(axis=1) + _RINGNORM_T0
    return _log_proba_from_log_odds(t)


def _make_breiman(name: str, n: int, random_seed: int, ring: bool, what: str) -> Dataset:
    n = check_count(n, "n", minimum=1)
    rng = np.random.default_rng(random_seed)
    y = (rng.random(n) < 0.5).astype(int)  # a fair coin
    X = rng.standard_normal((n, _BREIMAN_D))
    if ring:  # class 0 N(0, 4 I), class 1 N(a 1, I)
        X *= np.where(y == 1, 1.0, 2.0)[:, None]
        X += np.where(y == 1, RINGNORM_A, 0.0)[:, None]
        log_proba, bayes_error = ringnorm_log_proba, RINGNORM_BAYES_ERROR
    else:  # class 0 N(a 1, I), class 1 N(-a 1, I)
        X += np.where(y == 1, -TWONORM_A, TWONORM_A)[:, None]
        log_proba, bayes_error = twonorm_log_proba, TWONORM_BAYES_ERROR
    n1 = int(y.sum())
    return Dataset(
        name=name,
        X=X,
        y=y,
        feature_names=[f"I{i}" for i in range(1, _BREIMAN_D + 1)],
        description=(
            f"{what} (Breiman 1996; synthetic, random_seed={random_seed}): n={n}, d=20, {n1} "
            f"class 1 (y=1) / {n - n1} class 0 (y=0), drawn i.i.d. from the model; "
            f"Bayes error {bayes_error:.4f}."
        ),
        class_names=("class 0", "class 1"),
        kind="synthetic",
        true_log_proba=log_proba,
        bayes_error=bayes_error,
        info={"a": TWONORM_A, "random_seed": random_seed},
    )


def make_ringnorm(n: int = 7400, random_seed: int = 0) -> Dataset:
    """Breiman's ringnorm: N(0, 4 I) against N(a 1, I) in 20-D, drawn from the model.

    Breiman (1996, "Bias, variance and arcing classifiers", Tech. Rep. 460, UC Berkeley):
    y is a fair coin; class 0 (``y = 0``) is N(0, 4 I) and class 1 (``y = 1``, the
    positive class) N((a, ..., a), I) in 20 dimensions, a = 2/sqrt(20) (:data:`RINGNORM_A`),
    the coding of DELVE's file. The default n = 7400 is the size of DELVE's set, which is
    not shipped: KEEL's copy of it is damaged (``gpc_compare/data/README.md``).
    ``true_log_proba`` is the exact log p(y | x) (:func:`ringnorm_log_proba`) and
    ``bayes_error`` :data:`RINGNORM_BAYES_ERROR` = 0.012397, from a 1-D integral (the
    constant's documentation).

    Parameters
    ----------
    n : int
        Number of cases (at least 1).
    random_seed : int
        Seed of ``np.random.default_rng``: the labels are drawn first, then x.

    Returns
    -------
    Dataset
        ``name="ringnorm"``, ``kind="synthetic"``, d = 20 (``I1``..``I20``, DELVE's
        names), ``positive_class="class 1"``; ``info`` holds ``a`` and ``random_seed``.
    """
    return _make_breiman("ringnorm", n, random_seed, True, "Ringnorm")


def make_twonorm(n: int = 7400, random_seed: int = 0) -> Dataset:
    """Breiman's twonorm drawn afresh: two unit normals in 20-D with means +-a (1, ..., 1).

    Breiman (1996, as for :func:`make_ringnorm`): y is a fair coin; class 0 (``y = 0``) is
    N((a, ..., a), I) and class 1 (``y = 1``, the positive class) N((-a, ..., -a), I),
    a = 2/sqrt(20) (:data:`TWONORM_A`), the coding of DELVE's draws that
    :func:`load_twonorm` ships, so that draws and file are interchangeable (registered as
    ``twonorm_model``; ``twonorm`` is the file). ``true_log_proba`` is the exact log
    p(y | x) (:func:`twonorm_log_proba`, log odds -2 a sum(x)) and ``bayes_error``
    :data:`TWONORM_BAYES_ERROR` = Phi(-2) = 0.02275.

    Parameters
    ----------
    n : int
        Number of cases (at least 1; default 7400, DELVE's size).
    random_seed : int
        Seed of ``np.random.default_rng``: the labels are drawn first, then x.

    Returns
    -------
    Dataset
        ``name="twonorm_model"``, ``kind="synthetic"``, d = 20 (``I1``..``I20``),
        ``positive_class="class 1"``; ``info`` holds ``a`` and ``random_seed``.
    """
    return _make_breiman("twonorm_model", n, random_seed, False, "Twonorm")


# --------------------------------------------------------------------------- other generators
def make_logistic_1d(
    n: int = 500, w: float = 1.0, x_scale: float = 10.0, random_seed: int = 0
) -> Dataset:
    """Bishop's (2006, secs. 4.4-4.5) 1-D Bayesian logistic regression: no bias, x ~ N(0, 10^2).

    x_i ~ N(0, x_scale^2) and y_i ~ Bernoulli(sigma(w x_i)), i = 1..n (Bishop eq. 4.87
    with phi(x) = x). With w = 1 and x_scale = 10 most ``|w x|`` are large, so the labels are
    nearly deterministic away from 0 and the likelihood of w is sharply peaked: the
    example of a posterior for which the Laplace approximation is good.
    ``true_log_proba`` gives log sigma(-w x) and log sigma(w x) exactly.

    Parameters
    ----------
    n : int
        Number of cases (500 in studies/bayesian_logistic.py).
    w : float
        The true weight.
    x_scale : float
        Standard deviation of x (positive).
    random_seed : int
        Seed of ``np.random.default_rng``; x is drawn first, then the labels.

    Returns
    -------
    Dataset
        ``name="logistic_1d"``, ``kind="synthetic"``, X of shape (n, 1).
    """
    n = check_count(n, "n", minimum=1)
    w = float(w)
    if not np.isfinite(w):
        raise ValueError(f"w must be a finite number, got {w!r}")
    if not (np.isfinite(x_scale) and x_scale > 0):
        raise ValueError(f"x_scale must be a positive number, got {x_scale!r}")
    rng = np.random.default_rng(random_seed)
    x = rng.normal(0.0, x_scale, size=n)
    # y = 1 with probability sigma(w x), decided in log space: log u < log sigma(w x)
    y = (np.log(rng.random(n)) < log_sigmoid(w * x)).astype(int)

    def true_log_proba(X: np.ndarray) -> np.ndarray:
        f = w * check_X(X, n_features=1)[:, 0]
        return np.column_stack([log_sigmoid(-f), log_sigmoid(f)])

    n1 = int(y.sum())
    return Dataset(
        name="logistic_1d",
        X=x[:, None],
        y=y,
        feature_names=["x"],
        description=(
            f"Logistic model (Bishop 2006 sec. 4.5; random_seed={random_seed}): n={n}, d=1, "
            f"x ~ N(0, {x_scale:g}^2), y ~ Bernoulli(sigma({w:g} x)); {n1} y=1 / {n - n1} y=0."
        ),
        kind="synthetic",
        true_log_proba=true_log_proba,
        info={"w": w, "x_scale": float(x_scale), "random_seed": random_seed},
    )


def make_near_separable(
    n: int = 100, d: int = 2, margin: float = 0.25, flip: int = 0, random_seed: int = 0
) -> Dataset:
    """Two classes split by a hyperplane with a margin, and optionally a few flipped labels.

    Construction: a unit normal vector w (a random direction); x_i ~ N(0, I_d); the
    first n - n // 2 cases are put in class 1 and the rest in class 0, a case on the
    wrong side of the hyperplane w.x = 0 being reflected across it (which keeps x's
    distribution); then every case is pushed margin / 2 away from the hyperplane along w.
    So the classes are balanced and, with ``flip = 0``, linearly separable with a gap of
    width ``margin``: the maximum-likelihood logistic regression does not exist (the
    likelihood keeps growing as ``|w|`` -> infinity), and for GP classification the Laplace
    and EP evidence want an ever larger signal variance. ``flip`` labels, chosen at
    random, are then swapped (their indices are in ``info["flipped"]``), making the set
    non-separable but only just.

    Parameters
    ----------
    n : int
        Number of cases (at least 2).
    d : int
        Input dimension.
    margin : float
        Width of the empty band around the hyperplane (>= 0).
    flip : int
        Number of labels to flip (0 <= flip <= n).
    random_seed : int
        Seed of ``np.random.default_rng``.

    Returns
    -------
    Dataset
        ``name="near_separable"``, ``kind="synthetic"``; ``info`` holds ``w`` (the unit
        normal), ``margin`` and ``flipped``.
    """
    n = check_count(n, "n", minimum=2)
    d = check_count(d, "d", minimum=1)
    flip = check_count(flip, "flip", minimum=0)
    if flip > n:
        raise ValueError(f"flip must be at most n = {n}, got {flip}")
    if not (np.isfinite(margin) and margin >= 0):
        raise ValueError(f"margin must be a non-negative number, got {margin!r}")
    rng = np.random.default_rng(random_seed)
    w = rng.standard_normal(d)
    w /= np.linalg.norm(w)
    X = rng.standard_normal((n, d))
    y = (np.arange(n) < n - n // 2).astype(int)
    side = np.where(y == 1, 1.0, -1.0)
    s = X @ w
    wrong = s * side < 0
    X[wrong] -= 2.0 * np.outer(s[wrong], w)  # reflect across w.x = 0
    X += np.outer(side * margin / 2.0, w)  # open the gap
    flipped = np.sort(rng.choice(n, size=flip, replace=False))
    y[flipped] = 1 - y[flipped]
    return Dataset(
        name="near_separable",
        X=X,
        y=y,
        feature_names=[f"x{i + 1}" for i in range(d)],
        description=(
            f"Near-separable (synthetic, random_seed={random_seed}): n={n}, d={d}, classes "
            f"split by a hyperplane with a gap of {margin:g}, {flip} label(s) flipped."
        ),
        kind="synthetic",
        info={"w": w, "margin": float(margin), "flipped": flipped, "random_seed": random_seed},
    )
