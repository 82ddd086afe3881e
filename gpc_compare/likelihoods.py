"""Likelihoods p(y | f), answering each engine in its own terms.

Every likelihood is a :class:`Likelihood`, whose ``latent_dim`` says how many latent values
it takes per input. Binary likelihoods (probit, logistic; ``latent_dim = 1``) take y in
{-1, +1} and one latent value per input; the softmax likelihood (:class:`Softmax`) takes
class indices 0..C-1 and C latent values per input (R&W section 3.5); its part is at the
end of this module.

- Laplace asks for ``log_prob`` and its first three derivatives in f
  (:meth:`Likelihood.derivatives`; the third enters the evidence gradient, R&W eq. 5.23).
- EP asks for the moments of the tilted distribution p(y | f) N(f | mu, s2)
  (:meth:`Likelihood.tilted_moments`; R&W eqs. 3.56-3.58).
- Prediction asks for the integral log int p(y | f) N(f | m, v) df
  (:meth:`Likelihood.log_predictive`; R&W eq. 3.25, Bishop 4.145).

The probit likelihood answers the last two in closed form. Everything else falls back
to quadrature: a trapezoid rule centred on the mode of the tilted integrand and
spanning twelve prior standard deviations either side, accurate for any mean and
variance, with the sum taken in log space, so that log p(y* | x*) is exact even where
p is 1e-300. Probabilities are never clipped.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod

import numpy as np
from scipy.special import logsumexp

from .numerics import LOG_2PI, log_phi, log_sigmoid, probit_ratio, sigmoid

__all__ = ["Likelihood", "Logistic", "Probit", "Softmax", "get_likelihood"]

# Most trapezoid nodes on either side of the mode in the quadrature fallback.
_MAX_HALF_NODES = 4096

_INTEGRATIONS = ("exact", "probit_approximation")

#: Default Monte Carlo sample size of the multi-class predictive integral (R&W Alg. 3.4).
SOFTMAX_MC_SAMPLES = 2000
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


class Likelihood(ABC):
    """A likelihood p(y | f): by default a binary one, with y in {-1, +1}.

    Subclasses provide :meth:`log_prob` and :meth:`derivatives`; the predictive integral
    and EP's tilted moments then come from quadrature unless a closed form overrides them.
    The likelihood must be log-concave in f (probit and logistic are), which makes the
    tilted integrand unimodal. :class:`Softmax` (several latent values per input) is a
    subclass too, overriding the binary parts.

    Attributes
    ----------
    name : str
    latent_dim : int or None
        Latent values per input: 1 for a binary likelihood; for :class:`Softmax` the number
        of classes C, or None while C is not yet known (it comes from the labels at fit
        time). Test ``likelihood.latent_dim != 1`` for "one latent function per class".
    """

    name: str = "likelihood"
    latent_dim: int | None = 1

    @abstractmethod
    def log_prob(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        """log p(y_i | f_i), elementwise."""

    @abstractmethod
    def derivatives(
        self, y: np.ndarray, f: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """log p(y | f) and its first three derivatives with respect to f, elementwise."""

    # ------------------------------------------------------------ integrals against N
    def log_predictive(
        self,
        y: np.ndarray | float,
        mean: np.ndarray,
        var: np.ndarray,
        *,
        integration: str = "exact",
    ) -> np.ndarray:
        """log int p(y | f) N(f | mean, var) df, elementwise.

        Parameters
        ----------
        y : array_like
            Labels in {-1, +1} (broadcast against ``mean``).
        mean, var : array_like
            Moments of the Gaussian latent.
        integration : {"exact", "probit_approximation"}
            "exact" evaluates the integral in closed form where one exists, else by
            quadrature (:meth:`quadrature`) accurate to about 1e-13 relative.
            "probit_approximation" uses sigma(kappa(var) mean) with
            kappa = (1 + pi var / 8)^(-1/2) (Bishop 4.153); exact for probit.
        """
        y, mean, var = _broadcast(y, mean, var)
        if integration not in _INTEGRATIONS:
            raise ValueError(f"integration must be one of {_INTEGRATIONS}, got {integration!r}")
        if integration == "probit_approximation":
            return self._log_predictive_probit_approximation(y, mean, var)
        return self._log_predictive(y, mean, var)

    def predict_proba(
        self, mean: np.ndarray, var: np.ndarray, *, integration: str = "exact"
    ) -> np.ndarray:
        """P(y = +1) = int p(y = +1 | f) N(f | mean, var) df."""
        return np.exp(self.log_predictive(1.0, mean, var, integration=integration))

    def tilted_moments(
        self, y: np.ndarray, mean: np.ndarray, var: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """log Z, mean and variance of the tilted distribution p(y | f) N(f | mean, var).

        Used by EP (R&W eqs. 3.56-3.58); ``var`` must be positive.
        """
        y, mean, var = _broadcast(y, mean, var)
        return self._tilted_moments(y, mean, var)

    # --------------------------------------------------------------- implementations
    def _log_predictive(self, y: np.ndarray, mean: np.ndarray, var: np.ndarray) -> np.ndarray:
        return self.quadrature(y, mean, var)[0]

    def _tilted_moments(
        self, y: np.ndarray, mean: np.ndarray, var: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.quadrature(y, mean, var)

    def _log_predictive_probit_approximation(
        self, y: np.ndarray, mean: np.ndarray, var: np.ndarray
    ) -> np.ndarray:
        raise ValueError(
            f"the probit approximation applies to the logistic link only, not to {self.name}"
        )

    def quadrature(
        self, y: np.ndarray, mean: np.ndarray, var: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """log Z, mean and variance of p(y | f) N(f | mean, var) by quadrature.

        The tilted log density h(f) = log p(y | f) - (f - mean)^2 / (2 var) is strongly
        concave (h'' <= -1/var), so it lies below a Gaussian of variance ``var`` about its
        mode f^: the mass beyond f^ +- 12 sqrt(var) is below 1e-30 of Z. That interval is
        covered by the trapezoid rule with step h = 0.5 min(1, sqrt(var)), which for an
        integrand analytic in a strip (the logistic link has its poles at +-i pi)
        converges geometrically: the error is below 1e-13 relative for var up to
        about 1e4 (the node count is capped at 2 * 4096 + 1 per point; beyond that the
        step widens and accuracy degrades gracefully). Sums are taken in log space.
        Where var is zero the distribution is a point mass and Z = p(y | mean).
        """
        y, mean, var = _broadcast(y, mean, var)
        shape = mean.shape
        y, mean, var = y.ravel(), mean.ravel(), var.ravel()
        log_z = np.empty(mean.shape)
        t_mean = mean.copy()
        t_var = np.zeros(mean.shape)
        point = var <= 0.0
        log_z[point] = self.log_prob(y[point], mean[point])
        idx = np.flatnonzero(~point)
        if idx.size:
            fhat = self._tilted_mode(y[idx], mean[idx], var[idx])
            sd = np.sqrt(var[idx])
            # half-width in nodes: 24 max(1, sd), grouped in powers of two
            half = 24 * 2 ** np.ceil(np.log2(np.maximum(sd, 1.0))).astype(int)
            half = np.minimum(half, _MAX_HALF_NODES)
            for K in np.unique(half):
                sel = half == K
                for chunk in np.array_split(
                    np.flatnonzero(sel), max(1, int(sel.sum() * (2 * K + 1) // 2_000_000))
                ):
                    j = idx[chunk]
                    step = 12.0 * sd[chunk] / K
                    fk = fhat[chunk, None] + step[:, None] * np.arange(-K, K + 1)[None, :]
                    terms = (
                        self.log_prob(np.broadcast_to(y[j, None], fk.shape), fk)
                        - 0.5 * (fk - mean[j, None]) ** 2 / var[j, None]
                    )
                    lse = logsumexp(terms, axis=1)
                    log_z[j] = lse + np.log(step) - 0.5 * (LOG_2PI + np.log(var[j]))
                    omega = np.exp(terms - lse[:, None])
                    d = fk - fhat[chunk, None]  # moments about the mode: no cancellation
                    m1 = np.sum(omega * d, axis=1)
                    t_mean[j] = fhat[chunk] + m1
                    t_var[j] = np.sum(omega * (d - m1[:, None]) ** 2, axis=1)
        return log_z.reshape(shape), t_mean.reshape(shape), t_var.reshape(shape)

    def _tilted_mode(
        self, y: np.ndarray, m: np.ndarray, v: np.ndarray, max_iter: int = 200
    ) -> np.ndarray:
        """Mode of h(f) = log p(y | f) - (f - m)^2 / (2 v).

        h is strictly concave. h'(m) = d1(m), and since d1 is non-increasing the root of
        h' lies between m and m + v d1(m): a bracket for safeguarded Newton.
        """
        _, d1m, _, _ = self.derivatives(y, m)
        end = m + v * d1m
        lo, hi = np.minimum(m, end), np.maximum(m, end)
        f = m.copy()
        for _ in range(max_iter):
            _, d1, d2, _ = self.derivatives(y, f)
            grad = d1 - (f - m) / v
            curv = d2 - 1.0 / v  # < 0
            lo = np.where(grad > 0, np.maximum(lo, f), lo)
            hi = np.where(grad < 0, np.minimum(hi, f), hi)
            step = -grad / curv
            new = f + step
            outside = (new <= lo) | (new >= hi)
            new = np.where(outside & (hi > lo), 0.5 * (lo + hi), new)
            done = np.abs(new - f) <= 1e-13 * (1.0 + np.abs(f))
            f = new
            if np.all(done):
                break
        return f

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Probit(Likelihood):
    """p(y | f) = Phi(y f), the cumulative Gaussian (R&W section 3.1; Bishop 4.3.5)."""

    name = "probit"

    def log_prob(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        return log_phi(np.asarray(y) * np.asarray(f))

    def derivatives(self, y, f):
        # z = y f; with r = N(z)/Phi(z): d1 = y r, d2 = -r (z + r), d3 = y r ((z+r)(z+2r) - 1)
        y = np.asarray(y, dtype=float)
        z = y * np.asarray(f, dtype=float)
        r, gap, curvature_gap = probit_ratio(z)
        return log_phi(z), y * r, -r * gap, y * r * curvature_gap

    def _log_predictive(self, y, mean, var):
        # int Phi(y f) N(f | m, v) df = Phi(y m / sqrt(1 + v))  (R&W eq. 3.82)
        return log_phi(y * mean / np.sqrt(1.0 + var))

    def _log_predictive_probit_approximation(self, y, mean, var):
        return self._log_predictive(y, mean, var)

    def _tilted_moments(self, y, mean, var):
        # R&W eq. 3.58: z = y mu / sqrt(1 + s2), Z = Phi(z),
        # mu^ = mu + y s2 N(z) / (Phi(z) sqrt(1 + s2)),
        # s2^ = s2 - s2^2 N(z) / ((1 + s2) Phi(z)) (z + N(z)/Phi(z))
        denom = np.sqrt(1.0 + var)
        z = y * mean / denom
        r, gap, _ = probit_ratio(z)
        return log_phi(z), mean + y * var * r / denom, var - var**2 * r * gap / (1.0 + var)


class Logistic(Likelihood):
    """p(y | f) = sigma(y f) = 1 / (1 + exp(-y f)) (Bishop 4.59, R&W eq. 3.3).

    The predictive integral has no closed form: it is evaluated by adaptive quadrature,
    or by Bishop's probit approximation (4.153) with ``integration="probit_approximation"``.
    """

    name = "logistic"

    def log_prob(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        return log_sigmoid(np.asarray(y) * np.asarray(f))

    def derivatives(self, y, f):
        # with t = (y + 1)/2 and pi = sigma(f): d1 = t - pi (Bishop 6.81) = y sigma(-y f),
        # d2 = -pi (1 - pi) (Bishop 6.82), d3 = -pi (1 - pi) (1 - 2 pi)
        y = np.asarray(y, dtype=float)
        f = np.asarray(f, dtype=float)
        p, q = sigmoid(f), sigmoid(-f)
        W = p * q
        return log_sigmoid(y * f), y * sigmoid(-y * f), -W, -W * (q - p)

    def _log_predictive_probit_approximation(self, y, mean, var):
        kappa = 1.0 / np.sqrt(1.0 + np.pi * var / 8.0)  # Bishop 4.154
        return log_sigmoid(y * kappa * mean)


class Softmax(Likelihood):
    """p(y = c | f) = exp(f_c) / sum_c' exp(f_c') with C latent values per input (R&W eq. 3.34).

    A :class:`Likelihood` with ``latent_dim = C``: ``Softmax(n_classes=C)`` fixes C (the
    engines then refuse labels with another number of classes); ``Softmax()`` leaves it to
    the labels (``latent_dim`` None until then). The binary parts of the base class
    (:meth:`derivatives`, :meth:`tilted_moments`, :meth:`quadrature`) do not apply: the
    multi-class Laplace engine works with the softmax's full Hessian itself (R&W Alg. 3.3),
    and EP here is binary only.

    Labels are class indices 0, ..., C - 1 (``gc.fit`` maps any C distinct labels to these,
    in sorted order); latent values are arrays of shape (..., C). Everything is computed in
    log space by log-sum-exp, so no probability is ever rounded to 0 or 1 and clipped.

    The predictive integral
    ---------------------------
    p(y* = c | data) = int softmax_c(f*) N(f* | mu, Sigma) df* (R&W eq. 3.46 and Alg. 3.4)
    has no closed form. It is computed one of two ways (``integration``):

    ``"quadrature"`` (the default for two classes, and for three where s <= 4)
        The softmax depends on f only through the C - 1 differences g_c = f_c - f_C, so
        the integral is over a (C - 1)-dimensional Gaussian (one dimension for two
        classes, two for three). With g = mu_g + A z, A A^T = Cov(g) (eigen-decomposition,
        so a singular covariance is fine), a tensor-product trapezoid rule in z covers
        |z_k| <= 9 with step h = 0.5 / max(1, s), s the largest standard deviation of
        g: the Gaussian mass left out is below 1e-18 and the trapezoid rule converges
        geometrically for this analytic integrand: the log probabilities agree with a rule
        four times finer to 2e-15 for s from 0.1 to 8 (C = 3), and with the binary
        logistic quadrature to 3e-15 for C = 2 (tests/test_softmax.py); the node count is
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
        """Refuse labels with C classes when this likelihood was built for another number."""
        if self.n_classes is not None and C != self.n_classes:
            raise ValueError(f"the labels have {C} classes but the likelihood is {self!r}")

    def log_prob(self, y: np.ndarray, F: np.ndarray) -> np.ndarray:
        """log p(y_i | f_i) = f_i,y_i - log sum_c exp f_i,c, for indices y (n,) and F (n, C)."""
        F = np.asarray(F, dtype=float)
        y = np.asarray(y, dtype=int)
        return np.take_along_axis(F, y[..., None], axis=-1)[..., 0] - logsumexp(F, axis=-1)

    def log_proba(self, F: np.ndarray) -> np.ndarray:
        """log softmax(F) along the last axis."""
        F = np.asarray(F, dtype=float)
        return F - logsumexp(F, axis=-1, keepdims=True)

    def proba(self, F: np.ndarray) -> np.ndarray:
        """softmax(F) along the last axis (R&W eq. 3.34)."""
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
        """int softmax(f) N(f | mean, cov) df, shape (..., C) (see :meth:`log_predictive_all`)."""
        return np.exp(self.log_predictive_all(mean, cov, **kwargs))

    def log_predictive(
        self, y: np.ndarray, mean: np.ndarray, cov: np.ndarray, **kwargs
    ) -> np.ndarray:
        """log p(y | data) for class indices ``y`` (...,), in log space."""
        lp = self.log_predictive_all(mean, cov, **kwargs)
        y = np.broadcast_to(np.asarray(y, dtype=int), lp.shape[:-1])
        return np.take_along_axis(lp, y[..., None], axis=-1)[..., 0]

    # ------------------------------------------------- the binary parts do not apply
    def derivatives(self, y, f):
        raise NotImplementedError(
            "the softmax likelihood's Hessian is not diagonal: the multi-class Laplace engine "
            "(R&W Alg. 3.3) works with it directly"
        )

    def tilted_moments(self, y, mean, var):
        raise NotImplementedError("EP's tilted moments are binary only here")

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


def _lse(x: np.ndarray, axis: int) -> np.ndarray:
    """log sum exp along ``axis`` for finite x (a lean scipy.special.logsumexp)."""
    mx = x.max(axis=axis, keepdims=True)
    return np.squeeze(mx, axis=axis) + np.log(np.sum(np.exp(x - mx), axis=axis))


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


def _softmax_quadrature(mu_g: np.ndarray, A: np.ndarray, s: np.ndarray) -> np.ndarray:
    N, d = mu_g.shape
    C = d + 1
    out = np.empty((N, C))
    # half-width in nodes: _QUAD_HALF * 2^j with 2^j >= s, so that the step in g stays
    # below _QUAD_STEP; capped so that the tensor grid has at most _QUAD_MAX_NODES nodes
    cap = int(np.floor((_QUAD_MAX_NODES ** (1.0 / d) - 1) / 2))
    half = _QUAD_HALF * 2 ** np.ceil(np.log2(np.maximum(s, 1.0))).astype(int)
    half = np.minimum(half, max(cap, _QUAD_HALF))
    for K in np.unique(half):
        h = _QUAD_SPAN / K
        z1 = h * np.arange(-K, K + 1)
        Z = np.stack(np.meshgrid(*([z1] * d), indexing="ij")).reshape(d, 1, -1)
        log_w = -0.5 * np.sum(Z[:, 0, :] ** 2, axis=0)
        log_w -= logsumexp(log_w)  # the trapezoid weights of N(0, I), normalised
        idx = np.flatnonzero(half == K)
        chunk = max(1, _CHUNK_ELEMENTS // (Z.shape[2] * C))
        for start in range(0, idx.size, chunk):
            j = idx[start : start + chunk]
            for c, lp in enumerate(_log_softmax_nodes(mu_g[j], A[j], Z)):
                out[j, c] = _lse(lp + log_w, axis=1)
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
            out[j, c] = _lse(lp, axis=1) - np.log(n_samples)
            sd = np.exp(lp).std(axis=1, ddof=1) if n_samples > 1 else np.inf
            se[j, c] = sd / np.sqrt(n_samples)
    return out, se


_LIKELIHOODS: dict[str, type[Likelihood]] = {
    "probit": Probit,
    "logistic": Logistic,
    "softmax": Softmax,
}


def get_likelihood(likelihood: str | Likelihood) -> Likelihood:
    """A likelihood object from its name ("probit", "logistic", "softmax") or the object."""
    if isinstance(likelihood, Likelihood):
        return likelihood
    if isinstance(likelihood, str) and likelihood.lower() in _LIKELIHOODS:
        return _LIKELIHOODS[likelihood.lower()]()
    raise ValueError(
        f"likelihood must be one of {sorted(_LIKELIHOODS)} or a Likelihood object, "
        f"got {likelihood!r}"
    )


def _broadcast(y, mean, var) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y, mean, var = np.broadcast_arrays(
        np.asarray(y, dtype=float), np.asarray(mean, dtype=float), np.asarray(var, dtype=float)
    )
    if np.any(var < 0):
        raise ValueError("the latent variance must be non-negative")
    return y.astype(float), mean.astype(float), var.astype(float)
