"""The softmax likelihood for C classes (Williams and Barber 1998; R&W section 3.5)."""

from __future__ import annotations

import functools

import numpy as np
from scipy.special import logsumexp

from ..numerics import logsumexp_finite
from ._softmax_gumbel import gumbel_diagonal_expectation
from .base import DiagonalExpectation, Likelihood

__all__ = ["SOFTMAX_ELBO_SAMPLES", "SOFTMAX_MC_SAMPLES", "Softmax"]

#: Default Monte Carlo sample size of the multi-class predictive integral (R&W Alg. 3.4).
SOFTMAX_MC_SAMPLES = 2000
#: Default Monte Carlo draws per input (antithetic pairs) of E_q[log softmax] under
#: independent latents (:meth:`Softmax.expected_log_prob_diag`, C >= 4).
SOFTMAX_ELBO_SAMPLES = 64
# The softmax quadrature: nodes cover |z| <= _QUAD_SPAN in each whitened dimension with
# _QUAD_HALF * 2^j nodes either side (2^j >= the largest sd), at most _QUAD_MAX_NODES in all.
_QUAD_SPAN = 9.0
_QUAD_HALF = 18
_QUAD_MAX_NODES = 2**20
# By default three classes use the quadrature where the largest sd of the latent
# differences is at most this (a grid of at most 145^2 nodes), Monte Carlo elsewhere.
_AUTO_QUADRATURE_SD = 4.0
# Elements per block of work in the softmax integrals (bounds their memory).
_CHUNK_ELEMENTS = 2_000_000


class Softmax(Likelihood):
    """p(y = c | f) = exp(f_c) / sum_c' exp(f_c') with C latent values per input (R&W eq. 3.34).

    A :class:`Likelihood` with ``latent_dim = C``: ``Softmax(n_classes=C)`` fixes C (the
    engines then refuse labels with another number of classes); ``Softmax()`` leaves it to
    the labels (``latent_dim`` None until then). The binary parts of the base class
    (:meth:`derivatives`, :meth:`tilted_moments`, :meth:`quadrature`,
    :meth:`expected_log_prob`) do not apply: the
    multi-class Laplace engine works with the softmax's full Hessian itself (R&W Alg. 3.3),
    and EP here is binary only.

    Labels are class indices 0, ..., C - 1 (``gc.fit`` maps any C distinct labels to these,
    in sorted order); latent values are arrays of shape (..., C). Everything is computed in
    log space by log-sum-exp, so no probability is ever rounded to 0 or 1 and clipped.

    The predictive integral, p(y* = c | data) = int softmax_c(f*) N(f* | mu, Sigma) df*
    (R&W eq. 3.46 and Alg. 3.4), has no closed form. It is computed one of two ways
    (``integration``):

    ``"quadrature"`` (the default for two classes, and for three where s <= 4)
        The softmax depends on f only through the C - 1 differences g_c = f_c - f_C, so
        the integral is over a (C - 1)-dimensional Gaussian (one dimension for two
        classes, two for three). With g = mu_g + A z, A A^T = Cov(g) (eigen-decomposition,
        so a singular covariance is fine), a tensor-product trapezoid rule in z covers
        ``|z_k| <= 9`` with step h = 0.5 / max(1, s), s the largest standard deviation of
        g: the Gaussian mass left out is below 1e-18 and the trapezoid rule converges
        geometrically for this analytic integrand: the log probabilities agree with a rule
        four times finer to 2e-15 for s from 0.1 to 8 (C = 3), and with the binary
        logistic quadrature to 3e-15 for C = 2 (tests/engines/test_softmax.py); the node count is
        capped at 2^20 per point (for C = 3, s above 16), beyond which the step widens.
        Sums are taken in log space, so log p stays accurate where p is tiny.
    ``"mc"``
        R&W Alg. 3.4: ``n_samples`` draws f* ~ N(mu, Sigma) (seeded by ``random_seed``,
        so repeatable; the same standard normal draws serve every point, so a point's
        estimate does not depend on the others in the batch and probability maps are
        smooth), averaging softmax(f*) (log-mean-exp of log softmax in log space).
        The standard error of each probability is sd(softmax_c(f*)) / sqrt(n_samples),
        at most 0.5 / sqrt(n_samples) (0.011 at the default 2000); ``return_se=True``
        gives the estimate. The default for C >= 4, where a tensor grid grows as
        nodes^(C - 1), and for three classes where s > 4, where it grows as s^2.

    Both give rows that sum to one (to rounding): the softmax sums to one at every node
    or sample.

    Parameters
    ----------
    n_classes : int, optional
        The number of classes C (at least 2); None takes it from the labels.
    """

    name = "softmax"

    def __init__(self, n_classes: int | None = None) -> None:
        if n_classes is not None and (int(n_classes) != n_classes or n_classes < 2):
            raise ValueError(f"n_classes must be an integer >= 2, got {n_classes!r}")
        self.n_classes = None if n_classes is None else int(n_classes)

    @property
    def latent_dim(self) -> int | None:  # type: ignore[override]
        """The number of classes C (latent values per input), None until it is known."""
        return self.n_classes

    def check_n_classes(self, C: int) -> None:
        """Refuse labels with C classes when this likelihood was built for another number.

        Parameters
        ----------
        C : int
            The labels' number of classes.

        Raises
        ------
        ValueError
            If the likelihood was built for another number of classes.
        """
        if self.n_classes is not None and C != self.n_classes:
            raise ValueError(f"the labels have {C} classes but the likelihood is {self!r}")

    def log_prob(self, y: np.ndarray, F: np.ndarray) -> np.ndarray:
        """log p(y_i | f_i) = f_i,y_i - log sum_c exp f_i,c, for indices y (n,) and F (n, C).

        Parameters
        ----------
        y : array_like of int, shape (n,)
            Class indices 0..C-1.
        F : array_like, shape (n, C)
            Latent values.

        Returns
        -------
        ndarray, shape (n,)
        """
        F = np.asarray(F, dtype=float)
        y = np.asarray(y, dtype=int)
        return np.take_along_axis(F, y[..., None], axis=-1)[..., 0] - logsumexp(F, axis=-1)

    def log_proba(self, F: np.ndarray) -> np.ndarray:
        """log softmax(F) along the last axis.

        Parameters
        ----------
        F : array_like, shape (..., C)
            Latent values.

        Returns
        -------
        ndarray, shape (..., C)
        """
        F = np.asarray(F, dtype=float)
        return F - logsumexp(F, axis=-1, keepdims=True)

    def proba(self, F: np.ndarray) -> np.ndarray:
        """softmax(F) along the last axis (R&W eq. 3.34).

        Parameters
        ----------
        F : array_like, shape (..., C)
            Latent values.

        Returns
        -------
        ndarray, shape (..., C)
        """
        return np.exp(self.log_proba(F))

    # ------------------------------------------------------- the predictive integral
    def log_predictive_all(
        self,
        mean: np.ndarray,
        cov: np.ndarray,
        *,
        integration: str | None = None,
        n_samples: int = SOFTMAX_MC_SAMPLES,
        random_seed: int | np.random.Generator | None = 0,
        return_se: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """log int softmax_c(f) N(f | mean, cov) df for every class c.

        Parameters
        ----------
        mean : array_like, shape (..., C)
        cov : array_like, shape (..., C, C)
            Broadcast against ``mean``; symmetric positive semi-definite.
        integration : {"quadrature", "mc"}, optional
            See the class notes. By default: quadrature for two classes; for three,
            quadrature at the points where the largest standard deviation of the latent
            differences is at most 4 (a grid of at most 145^2 nodes) and Monte Carlo at
            the others (far from the data under a large signal variance); Monte Carlo
            for four or more.
        n_samples : int
            Monte Carlo sample size ("mc" only).
        random_seed : int or Generator, optional
            Seeds the Monte Carlo draws ("mc" only); the default 0 makes predictions
            repeatable.
        return_se : bool
            Also return the standard error of each probability (zero where the
            quadrature was used: its error is below 1e-12).

        Returns
        -------
        ndarray, shape (..., C)
            The log probabilities (and their standard errors if ``return_se``).
        """
        mean = np.asarray(mean, dtype=float)
        cov = np.asarray(cov, dtype=float)
        if mean.ndim < 1 or mean.shape[-1] < 2:
            raise ValueError(f"mean must have shape (..., C) with C >= 2, got {mean.shape}")
        C = mean.shape[-1]
        if cov.shape[-2:] != (C, C):
            raise ValueError(f"cov must have shape (..., {C}, {C}), got {cov.shape}")
        shape = np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
        mean = np.broadcast_to(mean, (*shape, C)).reshape(-1, C)
        cov = np.broadcast_to(cov, (*shape, C, C)).reshape(-1, C, C)
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(cov))):
            raise ValueError("the latent mean and covariance must be finite")
        if integration not in (None, "quadrature", "mc"):
            raise ValueError(f"integration must be 'quadrature' or 'mc', got {integration!r}")
        n_samples = int(n_samples)
        if n_samples < 1:
            raise ValueError(f"n_samples must be a positive integer, got {n_samples}")
        mu_g, A, sd = _difference_factor(mean, cov)
        if integration is None:  # quadrature where its grid is small, else Monte Carlo
            quad = sd <= _AUTO_QUADRATURE_SD if C == 3 else np.full(sd.shape, C == 2)
        else:
            quad = np.full(sd.shape, integration == "quadrature")
        out, se = np.empty(mean.shape), np.zeros(mean.shape)
        if quad.any():
            out[quad] = _softmax_quadrature(mu_g[quad], A[quad], sd[quad])
        if not quad.all():
            rng = np.random.default_rng(random_seed)
            out[~quad], se[~quad] = _softmax_mc(mu_g[~quad], A[~quad], n_samples, rng)
        out, se = out.reshape(*shape, C), se.reshape(*shape, C)
        return (out, se) if return_se else out

    def predict_proba(self, mean: np.ndarray, cov: np.ndarray, **kwargs) -> np.ndarray:
        """int softmax(f) N(f | mean, cov) df, shape (..., C) (see :meth:`log_predictive_all`).

        Parameters
        ----------
        mean : array_like, shape (..., C)
            The Gaussian latent's mean.
        cov : array_like, shape (..., C, C)
            Its covariance.
        **kwargs
            The integration options of :meth:`log_predictive_all`.

        Returns
        -------
        ndarray, shape (..., C)
        """
        return np.exp(self.log_predictive_all(mean, cov, **kwargs))

    def log_predictive(
        self, y: np.ndarray, mean: np.ndarray, cov: np.ndarray, **kwargs
    ) -> np.ndarray:
        """log p(y | data) for class indices ``y`` (...,), in log space.

        Parameters
        ----------
        y : array_like of int
            Class indices, broadcast against ``mean``'s leading shape.
        mean : array_like, shape (..., C)
            The Gaussian latent's mean.
        cov : array_like, shape (..., C, C)
            Its covariance.
        **kwargs
            The integration options of :meth:`log_predictive_all`.

        Returns
        -------
        ndarray, shape (...)
        """
        lp = self.log_predictive_all(mean, cov, **kwargs)
        y = np.broadcast_to(np.asarray(y, dtype=int), lp.shape[:-1])
        return np.take_along_axis(lp, y[..., None], axis=-1)[..., 0]

    def expected_log_prob_diag(
        self,
        y: np.ndarray,
        mean: np.ndarray,
        var: np.ndarray,
        *,
        integration: str | None = None,
        n_samples: int = SOFTMAX_ELBO_SAMPLES,
        random_seed: int = 0,
    ):
        """E_q[log p(y_i | f_i)] under independent latents q(f_i) = N(mean_i, diag(var_i))
        (the multi-class SVGP's), with its derivatives in mean and var (n, C): a
        :class:`~gpc_compare.likelihoods._diagonal.DiagonalExpectation`.

        ``integration``: "quadrature" (the trapezoid grid over the C - 1 differences, or
        at large variances one-dimensional Gumbel-max integrals; error below 1e-11; the
        default for C <= 3) or "mc" (``n_samples`` antithetic draws per
        input seeded by the integer ``random_seed``, with the estimate's variance; the
        default for C >= 4). See the section "E_q[log softmax] under independent latents"
        below.

        Parameters
        ----------
        y : array_like of int, shape (n,)
            Class indices 0..C-1.
        mean, var : ndarray, shape (n, C)
            The independent latents' means and variances.
        integration : {"quadrature", "mc"}, optional
            As above.
        n_samples : int
            Antithetic Monte Carlo draws per input ("mc" only).
        random_seed : int
            Seeds them.

        Returns
        -------
        DiagonalExpectation
        """
        if integration is None:
            integration = "quadrature" if mean.shape[1] <= 3 else "mc"
        if integration == "quadrature":
            return _diagonal_quadrature(y, mean, var)
        return _diagonal_mc(y, mean, var, n_samples, random_seed)

    # ------------------------------------------------- the binary parts do not apply
    def derivatives(self, y, f):
        raise NotImplementedError(
            "the softmax likelihood's Hessian is not diagonal: the multi-class Laplace engine "
            "(R&W Alg. 3.3) works with it directly"
        )

    def tilted_moments(self, y, mean, var):
        raise NotImplementedError("EP's tilted moments are binary only here")

    def expected_log_prob(self, y, mean, var):
        raise NotImplementedError(
            "the expected log likelihood under one Gaussian latent value is binary only"
        )

    def quadrature(self, y, mean, var):
        raise NotImplementedError(
            "the one-dimensional quadrature is binary only: see log_predictive_all"
        )

    def __repr__(self) -> str:
        return "Softmax()" if self.n_classes is None else f"Softmax(n_classes={self.n_classes})"


def _difference_factor(mean: np.ndarray, cov: np.ndarray):
    """Moments of g = f_{1..C-1} - f_C: mean (N, C-1) and A (N, C-1, C-1), A A^T = Cov(g),
    from the eigen-decomposition (a singular covariance is fine); and sd_max (N,)."""
    mu_g = mean[:, :-1] - mean[:, -1:]
    S = cov[:, :-1, :-1] - cov[:, :-1, -1:] - cov[:, -1:, :-1] + cov[:, -1:, -1:]
    lam, U = np.linalg.eigh(0.5 * (S + np.swapaxes(S, 1, 2)))
    lam = np.maximum(lam, 0.0)
    return mu_g, U * np.sqrt(lam)[:, None, :], np.sqrt(lam.max(axis=1))


def _log_softmax_nodes(mu_g: np.ndarray, A: np.ndarray, Z: np.ndarray) -> list[np.ndarray]:
    """log softmax_c of (g_1, ..., g_{C-1}, 0) at g = mu_g + A z for every point and node.

    mu_g (N, d), A (N, d, d), Z (d, N or 1, P): returns C arrays (N, P), one per class.
    Written as loops over the d = C - 1 dimensions so that every array operation runs
    over the long (points x nodes) axes.
    """
    d = mu_g.shape[1]
    G = [mu_g[:, k, None] + sum(A[:, k, l, None] * Z[l] for l in range(d)) for k in range(d)]
    mx = np.maximum(functools.reduce(np.maximum, G), 0.0)
    total = np.exp(-mx)
    for g in G:
        total += np.exp(g - mx)
    lse = mx + np.log(total)
    return [g - lse for g in G] + [-lse]


def quadrature_half_nodes(s: np.ndarray, d: int) -> np.ndarray:
    """Nodes either side of 0 per dimension of the trapezoid grid, for features on the
    scale of one at standard deviations ``s`` (N,): _QUAD_HALF * 2^j with 2^j >= s, so that
    the step stays below 0.5 / max(1, s); capped so that the d-dimensional grid has at
    most _QUAD_MAX_NODES nodes."""
    cap = int(np.floor((_QUAD_MAX_NODES ** (1.0 / d) - 1) / 2))
    half = _QUAD_HALF * 2 ** np.ceil(np.log2(np.maximum(s, 1.0))).astype(int)
    return np.minimum(half, max(cap, _QUAD_HALF))


def quadrature_grid(K: int, d: int, span: float = _QUAD_SPAN) -> tuple[np.ndarray, np.ndarray]:
    """The tensor-product trapezoid grid of N(0, I_d) on |z_k| <= span with K nodes either
    side of 0: nodes Z (d, 1, (2K + 1)^d) and log weights, normalised."""
    h = span / K
    z1 = h * np.arange(-K, K + 1)
    Z = np.stack(np.meshgrid(*([z1] * d), indexing="ij")).reshape(d, 1, -1)
    log_w = -0.5 * np.sum(Z[:, 0, :] ** 2, axis=0)
    log_w -= logsumexp(log_w)  # the trapezoid weights of N(0, I), normalised
    return Z, log_w


def _softmax_quadrature(mu_g: np.ndarray, A: np.ndarray, s: np.ndarray) -> np.ndarray:
    N, d = mu_g.shape
    C = d + 1
    out = np.empty((N, C))
    half = quadrature_half_nodes(s, d)
    for K in np.unique(half):
        Z, log_w = quadrature_grid(int(K), d)
        idx = np.flatnonzero(half == K)
        chunk = max(1, _CHUNK_ELEMENTS // (Z.shape[2] * C))
        for start in range(0, idx.size, chunk):
            j = idx[start : start + chunk]
            for c, lp in enumerate(_log_softmax_nodes(mu_g[j], A[j], Z)):
                out[j, c] = logsumexp_finite(lp + log_w, axis=1)
    return out


def _softmax_mc(
    mu_g: np.ndarray, A: np.ndarray, n_samples: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    N, d = mu_g.shape
    C = d + 1
    out, se = np.empty((N, C)), np.empty((N, C))
    # the same standard normal draws for every point (common random numbers): each
    # point's estimate depends on its own moments and the seed only, not on the batch
    z = rng.standard_normal((C - 1, 1, n_samples))
    chunk = max(1, _CHUNK_ELEMENTS // (n_samples * C))
    for start in range(0, N, chunk):
        j = np.arange(start, min(N, start + chunk))
        for c, lp in enumerate(_log_softmax_nodes(mu_g[j], A[j], z)):
            out[j, c] = logsumexp_finite(lp, axis=1) - np.log(n_samples)
            sd = np.exp(lp).std(axis=1, ddof=1) if n_samples > 1 else np.inf
            se[j, c] = sd / np.sqrt(n_samples)
    return out, se


# ------------------------------------------ E_q[log softmax] under independent latents
# The multi-class SVGP (one q(u_c) per class; Hensman, Matthews and Ghahramani 2015) gives
# each input C independent Gaussian latents, q(f_i) = N(mean_i, diag(var_i)), and its bound
# needs E_i = E_q[log softmax_y(f_i)] with dE_i / d mean and dE_i / d var. Two ways:
#
# "quadrature": log softmax_y(f) depends on f only through the C - 1 differences, a
#   Gaussian of covariance D diag(var) D^T: a trapezoid grid over them as the predictive
#   integral's (in its eigenvectors) gives E[log p_y], E[p_c] and E[p_c (1 - p_c)], so by
#   the heat equation of the
#   Gaussian (Price 1958; Opper and Archambeau 2009, eq. 9) dE/d mean_c = [c = y] - E[p_c]
#   and dE/d var_c = 1/2 E[d^2 log p_y / d f_c^2] = -1/2 E[p_c (1 - p_c)], each to the
#   grid's accuracy (below 1e-12). The grid has (2K + 1)^(C - 1) nodes, K growing as
#   the differences' largest sd: it serves C <= 3 where that sd is at most _ELBO_GRID_SD.
#   Elsewhere (large variances, or C >= 4) the same three expectations come from
#   one-dimensional integrals over the Gumbel-max representation of the softmax
#   (gpc_compare/likelihoods/_softmax_gumbel.py; cost linear in sd): at sd 24 and 120
#   inputs 0.2 s against the grid's 22 s, agreeing with it to 1e-11.
# "mc": n_samples draws per input in antithetic pairs (z, -z), f = mean + sd z, the draws
#   of input i from a generator seeded by (seed, i // _MC_BLOCK): each input's estimate
#   depends on its moments and the seed only, not on the batch it is computed in, and is a
#   fixed smooth function of them, so the optimiser sees a deterministic objective. Its
#   derivatives are those of the estimate itself (the reparameterisation f = mean + sd z;
#   Kingma and Welling 2014), so the site iteration's fixed point is a stationary point of
#   the estimated bound and the hyperparameter gradient is exact for it. The pairs cancel
#   the estimate's first-order term in sd, so d/d var stays finite as var -> 0 while the
#   other classes' variances are comparable. The variance of an input's estimate is the
#   sample variance of its pair means over the number of pairs; the inputs' draws are
#   independent, so a sum's standard error is the square root of the summed variances.

#: Inputs per seeded block of Monte Carlo draws.
_MC_BLOCK = 64
# The quadrature's grid: |z| <= _ELBO_SPAN (the Gaussian mass beyond, 1e-15, times
# |log p| <= a few tens), steps of at most _ELBO_STEP both in z and in the differences
# g (the trapezoid rule's error, about exp(-2 pi^2 / h) for log(1 + e^g), whose nearest
# singularity is at g = i pi, is then 1e-14), node counts rounded up to multiples of
# _ELBO_NODES_ROUND (fewer distinct grids).
_ELBO_SPAN = 8.0
_ELBO_STEP = 0.6
_ELBO_NODES_ROUND = 4
# The grid serves three or fewer classes whose differences' largest sd is at most this
# (33^2 nodes); the Gumbel-max integrals, whose cost grows as sd rather than sd^2, serve
# the others (measured, 120 inputs, C = 3, every latent's sd s: at s = 1 they take
# 0.007 s, the grid 0.021 s; at s = 5, 0.02 s against 1 s; at s = 0.3, where their
# latents below sd 0.5 take a slower rule, 0.15 s against the grid's 0.011 s).
_ELBO_GRID_SD = 1.0
# Variances below this are raised to it before dividing by sd (a point mass, to rounding).
_VAR_FLOOR = 1e-300


def _one_hot(y: np.ndarray, C: int) -> np.ndarray:
    Y = np.zeros((y.size, C))
    Y[np.arange(y.size), y] = 1.0
    return Y


def _diagonal_quadrature(y: np.ndarray, mean: np.ndarray, var: np.ndarray) -> DiagonalExpectation:
    """E[log softmax_y(f)] and its derivatives (section note): the trapezoid grid over the
    C - 1 latent differences for C <= 3 where their largest sd is at most _ELBO_GRID_SD,
    the one-dimensional Gumbel-max integrals elsewhere; ``y`` (n,) class indices,
    ``mean``, ``var`` (n, C)."""
    n, C = mean.shape
    cov = np.zeros((n, C, C))
    idx_c = np.arange(C)
    cov[:, idx_c, idx_c] = var
    mu_g, A, sd = _difference_factor(mean, cov)
    grid = sd <= _ELBO_GRID_SD if C <= 3 else np.zeros(n, dtype=bool)
    value, d_mean, d_var = np.empty(n), np.empty((n, C)), np.empty((n, C))
    if not grid.all():
        e = gumbel_diagonal_expectation(y[~grid], mean[~grid], var[~grid])
        value[~grid], d_mean[~grid], d_var[~grid] = e.value, e.d_mean, e.d_var
    if grid.any():
        value[grid], Ep, Epq = _grid_sums(y[grid], mu_g[grid], A[grid], sd[grid])
        d_mean[grid], d_var[grid] = _one_hot(y[grid], C) - Ep, -0.5 * Epq
    return DiagonalExpectation(value, d_mean, d_var, None)


def _grid_sums(y: np.ndarray, mu_g: np.ndarray, A: np.ndarray, sd: np.ndarray):
    """E[log p_y], E[p_c] and E[p_c (1 - p_c)] on the trapezoid grid of the section note,
    for differences g = mu_g + A z (n, C - 1), sd their largest sd."""
    n, d = mu_g.shape
    C = d + 1
    # K nodes either side of 0 in each whitened dimension, on |z| <= _ELBO_SPAN: steps
    # below _ELBO_STEP in z and in the differences (the grid of the section note)
    half = _ELBO_NODES_ROUND * np.ceil(
        _ELBO_SPAN * np.maximum(sd, 1.0) / (_ELBO_STEP * _ELBO_NODES_ROUND)
    ).astype(int)
    value, Ep, Epq = np.zeros(n), np.empty((n, C)), np.empty((n, C))
    for K in np.unique(half):
        Z, log_w = quadrature_grid(int(K), d, _ELBO_SPAN)
        w = np.exp(log_w)
        idx = np.flatnonzero(half == K)
        chunk = max(1, _CHUNK_ELEMENTS // (Z.shape[2] * C))
        for start in range(0, idx.size, chunk):
            j = idx[start : start + chunk]
            for c, lp in enumerate(_log_softmax_nodes(mu_g[j], A[j], Z)):
                mine = y[j] == c
                value[j[mine]] = lp[mine] @ w
                p = np.exp(lp)
                Ep[j, c] = p @ w
                Epq[j, c] = (p - p * p) @ w  # p (1 - p), to 1e-16 absolute
    return value, Ep, Epq


def _diagonal_mc(
    y: np.ndarray, mean: np.ndarray, var: np.ndarray, n_samples: int, seed: int
) -> DiagonalExpectation:
    """The antithetic Monte Carlo estimate of E[log softmax_y(f)], its exact derivatives
    and its variance (section note); ``n_samples`` even, ``seed`` an integer."""
    n, C = mean.shape
    pairs = n_samples // 2
    sd = np.sqrt(np.maximum(var, _VAR_FLOOR))
    value, variance = np.empty(n), np.empty(n)
    d_mean, d_sd = np.empty((n, C)), np.empty((n, C))
    Y = _one_hot(y, C)
    for block, start in enumerate(range(0, n, _MC_BLOCK)):
        i = slice(start, min(start + _MC_BLOCK, n))
        k = i.stop - start
        z = np.random.default_rng([seed, block]).standard_normal((k, pairs, C))
        lp_pair, g_sum, gz_sum = np.zeros((k, pairs)), np.zeros((k, C)), np.zeros((k, C))
        for sign in (1.0, -1.0):
            F = mean[i, None, :] + sign * sd[i, None, :] * z  # (k, pairs, C)
            top = F.max(axis=2, keepdims=True)
            e = np.exp(F - top)
            total = e.sum(axis=2, keepdims=True)  # log sum exp F = top + log total
            F_y = np.take_along_axis(F - top, y[i, None, None], axis=2)[..., 0]
            lp_pair += 0.5 * (F_y - np.log(total[..., 0]))
            g = Y[i, None, :] - e / total  # d log p_y / d f = [c = y] - softmax_c(f)
            g_sum += g.sum(axis=1)
            gz_sum += sign * np.einsum("kpc,kpc->kc", g, z)
        value[i] = lp_pair.mean(axis=1)
        variance[i] = lp_pair.var(axis=1, ddof=1) / pairs
        d_mean[i] = g_sum / (2 * pairs)
        d_sd[i] = gz_sum / (2 * pairs)
    return DiagonalExpectation(value, d_mean, d_sd / (2.0 * sd), variance)
