"""The :class:`Likelihood` base: what every likelihood answers, and the quadrature fallback."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import NamedTuple

import numpy as np

from ..numerics import LOG_2PI, logsumexp_finite
from ._expectation import gaussian_expectations

__all__ = ["DiagonalExpectation", "Likelihood"]

# Most trapezoid nodes on either side of the mode in the quadrature fallback.
_MAX_HALF_NODES = 4096

_INTEGRATIONS = ("exact", "probit_approximation")


class DiagonalExpectation(NamedTuple):
    """E_q[log p(y_i | f_i)] for C classes under independent Gaussian latents
    q(f_i) = N(mean_i, diag(var_i)) (the multi-class SVGP's), for each input: what a
    multi-class likelihood's ``expected_log_prob_diag`` returns.

    Attributes
    ----------
    value : ndarray, shape (n,)
        E_i.
    d_mean, d_var : ndarray, shape (n, C)
        dE_i / d mean_ic and dE_i / d var_ic.
    variance : ndarray, shape (n,), or None
        The variance of each E_i's Monte Carlo estimate (None for a quadrature).
    """

    value: np.ndarray
    d_mean: np.ndarray
    d_var: np.ndarray
    variance: np.ndarray | None


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
    regression : bool
        True when y is real-valued (:class:`Gaussian`): no labels, no class probability.
        The label checks ({-1, +1}, both classes) apply only where it is False.
    log_concave : bool
        Whether log p(y | f) is concave in f (so E_q[log p] has d/d var <= 0, and the
        variational sites' precisions are >= 0): all but :class:`RobustMax`.
    """

    name: str = "likelihood"
    latent_dim: int | None = 1
    regression: bool = False
    log_concave: bool = True

    @abstractmethod
    def log_prob(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        """log p(y_i | f_i), elementwise.

        Parameters
        ----------
        y : array_like
            Labels in {-1, +1} (real targets for the Gaussian likelihood).
        f : array_like
            Latent values, broadcast against ``y``.

        Returns
        -------
        ndarray
        """

    @abstractmethod
    def derivatives(
        self, y: np.ndarray, f: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """log p(y | f) and its first three derivatives with respect to f, elementwise.

        Parameters
        ----------
        y : array_like
            Labels in {-1, +1} (real targets for the Gaussian likelihood).
        f : array_like
            Latent values, broadcast against ``y``.

        Returns
        -------
        log_p, d1, d2, d3 : ndarray
            log p(y | f) and d^k/df^k log p(y | f), k = 1, 2, 3.
        """

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

        Returns
        -------
        ndarray
            The log predictive probability (density, for real targets), elementwise.
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
        """P(y = +1) = int p(y = +1 | f) N(f | mean, var) df.

        Parameters
        ----------
        mean, var : array_like
            Moments of the Gaussian latent.
        integration : {"exact", "probit_approximation"}
            As for :meth:`log_predictive`.

        Returns
        -------
        ndarray
        """
        return np.exp(self.log_predictive(1.0, mean, var, integration=integration))

    def tilted_moments(
        self, y: np.ndarray, mean: np.ndarray, var: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """log Z, mean and variance of the tilted distribution p(y | f) N(f | mean, var).

        Used by EP (R&W eqs. 3.56-3.58); ``var`` must be positive.

        Parameters
        ----------
        y : array_like
            Labels in {-1, +1}.
        mean, var : array_like
            Moments of the Gaussian (the cavity, for EP).

        Returns
        -------
        log_z, mean, var : ndarray
            log Z and the tilted distribution's mean and variance, elementwise.
        """
        y, mean, var = _broadcast(y, mean, var)
        return self._tilted_moments(y, mean, var)

    def expected_log_prob(
        self, y: np.ndarray | float, mean: np.ndarray, var: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """E_q[log p(y | f)] for q(f) = N(mean, var), elementwise, with its derivatives.

        The expected log likelihood of a Gaussian variational posterior (the KL method:
        Opper and Archambeau 2009; Nickisch and Rasmussen 2008, section 4.4). Its
        gradients are Gaussian expectations too (Opper and Archambeau 2009, eqs. 9-10;
        Bonnet's and Price's theorems):

            dE/dmean = E_q[d log p / df],   dE/dvar = 1/2 E_q[d^2 log p / df^2].

        All three are computed by one quadrature rule (:mod:`._expectation`): Gauss-Hermite
        where sqrt(var) <= 1, else composite Gauss-Legendre over mean +- 10 sqrt(var) with
        panels geometric about f = 0, where the log likelihood bends (100 to 240 nodes a
        site, fixed per group of sites, no loop over sites). Accurate to about 1e-13
        relative (absolute where the value is below one) for |mean| up to 1e3 and var up to
        1e6, against 30-digit integration (tests/test_expectation.py).

        Parameters
        ----------
        y : array_like
            Labels in {-1, +1}, broadcast against ``mean`` and ``var``.
        mean, var : array_like
            Moments of q; ``var`` must be non-negative (var = 0 gives log p(y | mean) and
            its derivatives, exactly) and, like ``mean``, finite.

        Returns
        -------
        E, dE_dmean, dE_dvar : ndarray
            Of the broadcast shape.

        Raises
        ------
        ValueError
            If a variance is negative or a moment is not finite.
        """
        y, mean, var = _broadcast(y, mean, var)
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(var))):
            raise ValueError("the latent mean and variance must be finite")
        shape = mean.shape
        y_flat = y.ravel()

        def nodes(idx: np.ndarray, f: np.ndarray):
            return self._log_prob_d2(np.broadcast_to(y_flat[idx, None], f.shape), f)

        e0, e1, e2 = gaussian_expectations(nodes, mean.ravel(), var.ravel())
        return e0.reshape(shape), e1.reshape(shape), 0.5 * e2.reshape(shape)

    def _log_prob_d2(
        self, y: np.ndarray, f: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """log p(y | f) and its first two derivatives in f (the quadrature's integrands)."""
        return self.derivatives(y, f)[:3]

    # --------------------------------------------------------------- implementations
    def _log_predictive(self, y: np.ndarray, mean: np.ndarray, var: np.ndarray) -> np.ndarray:
        """log Z(y) by :meth:`quadrature`. For a binary likelihood p(y | f) + p(-y | f) = 1,
        so where Z(y) > 1/2 the sum cannot resolve 1 - Z(y) below rounding (it came out as
        log Z = +4e-16 at mean 48, var 19): there log Z(y) = log1p(-Z(-y)), exact to the
        last bit and never above 0."""
        log_z = self.quadrature(y, mean, var)[0]
        if self.regression:
            return log_z
        big = log_z > -np.log(2.0)
        if np.any(big):
            log_z = np.array(log_z, dtype=float)  # (a 0-d result becomes writable)
            other = self.quadrature(-y[big], mean[big], var[big])[0]
            log_z[big] = np.log1p(-np.exp(other))
        return log_z

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

        Parameters
        ----------
        y : array_like
            Labels in {-1, +1}.
        mean, var : array_like
            Moments of the Gaussian (the cavity, for EP).

        Returns
        -------
        log_z, mean, var : ndarray
            log Z and the tilted distribution's mean and variance, elementwise.
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
                    lse = logsumexp_finite(terms, axis=1)  # (the mode is a node)
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


def _broadcast(y, mean, var) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y, mean, var = np.broadcast_arrays(
        np.asarray(y, dtype=float), np.asarray(mean, dtype=float), np.asarray(var, dtype=float)
    )
    if np.any(var < 0):
        raise ValueError("the latent variance must be non-negative")
    return y.astype(float), mean.astype(float), var.astype(float)
