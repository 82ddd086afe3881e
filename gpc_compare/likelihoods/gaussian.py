"""The Gaussian likelihood p(y | f) = N(y | f, s2): real-valued y, GP regression.

Everything an engine asks of a likelihood has a closed form here (R&W section 2.2):
the derivatives in f (W = 1/s2 constant, the third zero), the tilted distribution
N(y | f, s2) N(f | m, v) (itself Gaussian), the predictive integral and the expected
log-likelihood under a Gaussian. With it Laplace and EP are exact GP regression: Laplace's
Newton iteration converges in one step and EP's sites are exact after one sweep, so both
evidences equal the GP-regression log marginal likelihood (R&W eq. 2.30).

The closed forms replace the base class's quadrature, whose node spacing assumes the
curvature of a binary likelihood (-d2 <= 1); with s2 < 1 it would be too coarse.
"""

from __future__ import annotations

import numpy as np

from ..numerics import LOG_2PI
from .base import Likelihood, _broadcast

__all__ = ["Gaussian"]


class Gaussian(Likelihood):
    """p(y | f) = N(y | f, s2), with y real-valued (regression).

    Parameters
    ----------
    variance : float
        The noise variance s2 > 0 (finite).
    """

    name = "gaussian"
    latent_dim = 1
    regression = True

    def __init__(self, variance: float = 1.0) -> None:
        try:
            v = float(variance)
        except (TypeError, ValueError):
            raise ValueError(
                f"variance must be a positive finite number, got {variance!r}"
            ) from None
        if not (np.isfinite(v) and v > 0.0):
            raise ValueError(f"variance must be a positive finite number, got {variance!r}")
        self.variance = v

    def log_prob(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        r = np.asarray(y, dtype=float) - np.asarray(f, dtype=float)
        return -0.5 * (LOG_2PI + np.log(self.variance) + r**2 / self.variance)

    def derivatives(self, y, f):
        # d1 = (y - f) / s2, d2 = -1 / s2, d3 = 0
        y = np.asarray(y, dtype=float)
        f = np.asarray(f, dtype=float)
        s2 = self.variance
        r = y - f
        lp = -0.5 * (LOG_2PI + np.log(s2) + r**2 / s2)
        return lp, r / s2, np.full(r.shape, -1.0 / s2), np.zeros(r.shape)

    def _log_predictive(self, y, mean, var):
        # int N(y | f, s2) N(f | m, v) df = N(y | m, v + s2)  (R&W eq. 2.30 for one point)
        total = var + self.variance
        return -0.5 * (LOG_2PI + np.log(total) + (y - mean) ** 2 / total)

    def _log_predictive_probit_approximation(self, y, mean, var):
        raise ValueError(
            "the probit approximation applies to the logistic link only; the Gaussian "
            "likelihood's predictive is exact in closed form (integration='exact')"
        )

    def _tilted_moments(self, y, mean, var):
        # N(y | f, s2) N(f | m, v) = N(y | m, v + s2) N(f | m^, v^) with
        # m^ = m + v (y - m) / (v + s2), v^ = v s2 / (v + s2)  (R&W eq. A.7)
        total = var + self.variance
        log_z = -0.5 * (LOG_2PI + np.log(total) + (y - mean) ** 2 / total)
        return log_z, mean + var * (y - mean) / total, var * self.variance / total

    def predict_proba(self, mean, var, *, integration: str = "exact"):
        """Not defined: there are no classes. Use ``predict_latent`` (the latent mean and
        variance; add ``variance`` for y*) or ``log_predictive``.

        Parameters
        ----------
        mean, var : array_like
            Unused.
        integration : str
            Unused.

        Raises
        ------
        ValueError
            Always.
        """
        raise ValueError(
            "the Gaussian likelihood is for regression: there is no class probability; "
            "use predict_latent (add the noise variance for y*) or log_predictive"
        )

    def expected_log_prob(
        self, y: np.ndarray, mean: np.ndarray, var: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """E = int log N(y | f, s2) N(f | mean, var) df and its derivatives, elementwise.

        E = log N(y | mean, s2) - var / (2 s2), dE/dmean = (y - mean) / s2,
        dE/dvar = -1 / (2 s2).

        Parameters
        ----------
        y : array_like
            Real targets.
        mean, var : array_like
            Moments of the Gaussian q(f), broadcast against ``y``.

        Returns
        -------
        E, dE_dmean, dE_dvar : ndarray
        """
        y, mean, var = _broadcast(y, mean, var)
        s2 = self.variance
        r = y - mean
        E = -0.5 * (LOG_2PI + np.log(s2) + r**2 / s2) - 0.5 * var / s2
        return E, r / s2, np.full(r.shape, -0.5 / s2)

    def __repr__(self) -> str:
        return f"Gaussian(variance={self.variance!r})"
