"""The binary likelihoods: probit (closed forms) and logistic (quadrature), y in {-1, +1}."""

from __future__ import annotations

import numpy as np

from ..numerics import log_phi, log_phi_d2, log_sigmoid, log_sigmoid_d2, probit_ratio, sigmoid
from .base import Likelihood

__all__ = ["Logistic", "Probit"]


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

    def _log_prob_d2(self, y, f):
        g, r, curvature = log_phi_d2(y * f)
        return g, y * r, curvature

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

    def _log_prob_d2(self, y, f):
        g, d1, d2 = log_sigmoid_d2(y * f)
        return g, y * d1, d2

    def _log_predictive_probit_approximation(self, y, mean, var):
        kappa = 1.0 / np.sqrt(1.0 + np.pi * var / 8.0)  # Bishop 4.154
        return log_sigmoid(y * kappa * mean)
