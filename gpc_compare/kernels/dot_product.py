"""Kernels of inner products: linear, constant, and the neural-network (arc-sine) kernel."""

from __future__ import annotations

import numpy as np

from .base import (
    DEFAULT_LENGTHSCALE_BOUNDS,
    DEFAULT_VARIANCE_BOUNDS,
    Bounds,
    Kernel,
    _check_bounds,
    _Param,
    _positive,
)

__all__ = ["Constant", "Linear", "NeuralNetwork"]


class _VarianceOnly(Kernel):
    """A kernel sigma^2 k0(x, x') with a single hyperparameter, the variance sigma^2."""

    extra_dense_matrices = (0.0, 1.0)  # (its only dK is K itself)

    def __init__(
        self, variance: float = 1.0, *, variance_bounds: Bounds = DEFAULT_VARIANCE_BOUNDS
    ) -> None:
        if np.size(variance) != 1:
            raise ValueError("variance must be a single positive number")
        self._variance = _Param(
            "variance", _positive(variance, "variance"), _check_bounds(variance_bounds, "variance")
        )

    def _params(self) -> list[_Param]:
        return [self._variance]

    @property
    def variance(self) -> float:
        return float(self._variance.value[0])

    def gradient(self, X: np.ndarray) -> np.ndarray:
        if self._variance.fixed:
            return np.zeros((0, X.shape[0], X.shape[0]))
        return self(X)[None]  # dK/d log sigma^2 = K

    def diag_gradient(self, X: np.ndarray) -> np.ndarray:
        if self._variance.fixed:
            return np.zeros((0, X.shape[0]))
        return self.diag(X)[None]  # d k(x, x) / d log sigma^2 = k(x, x)

    def _cross_variance_trace(self, X: np.ndarray, Z: np.ndarray, C: np.ndarray) -> np.ndarray:
        if self._variance.fixed:
            return np.zeros(0)
        return np.array([float(np.vdot(C, self(X, Z)))])  # dK/d log sigma^2 = K


class Linear(_VarianceOnly):
    """Linear (dot-product) kernel sigma^2 x . x'.

    GPC with this kernel is Bayesian logistic (or probit) regression with the prior
    w ~ N(0, sigma^2 I) (Bishop 2006, section 4.5); add a :class:`Constant` for a bias term.

    Parameters
    ----------
    variance : float
        The prior variance sigma^2 of each weight.
    variance_bounds : (float, float) or "fixed"
    """

    def __call__(self, X: np.ndarray, X2: np.ndarray | None = None) -> np.ndarray:
        return self.variance * (X @ (X if X2 is None else X2).T)

    def diag(self, X: np.ndarray) -> np.ndarray:
        return self.variance * np.einsum("ij,ij->i", X, X)

    def symbolic(self, X: np.ndarray, theta):
        (variance,) = self._symbolic_params(theta)
        return variance[0] * (X @ X.T)

    def cross_gradient_terms(
        self, X: np.ndarray, Z: np.ndarray, C: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        # d (sigma^2 x_i . z_j) / d z_j = sigma^2 x_i
        return self._cross_variance_trace(X, Z, C), self.variance * (C.T @ X)


class Constant(_VarianceOnly):
    """Constant kernel sigma^2 (a random offset shared by all inputs).

    Parameters
    ----------
    variance : float
    variance_bounds : (float, float) or "fixed"
    """

    def __call__(self, X: np.ndarray, X2: np.ndarray | None = None) -> np.ndarray:
        m = X.shape[0] if X2 is None else X2.shape[0]
        return np.full((X.shape[0], m), self.variance)

    def diag(self, X: np.ndarray) -> np.ndarray:
        return np.full(X.shape[0], self.variance)

    def symbolic(self, X: np.ndarray, theta):
        (variance,) = self._symbolic_params(theta)
        return variance[0] * np.ones((X.shape[0], X.shape[0]))

    def cross_gradient_terms(
        self, X: np.ndarray, Z: np.ndarray, C: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        return self._cross_variance_trace(X, Z, C), np.zeros_like(Z, dtype=float)


class NeuralNetwork(Kernel):
    """The neural-network (arc-sine) kernel of Williams (1998), R&W eq. 4.29, as GPML's
    ``covNNone``.

    k(x, x') = sigma_f^2 asin(s x~.x~' / sqrt((1 + s x~.x~) (1 + s x~'.x~'))), s = ell^-2,

    with the augmented input x~ = (1, x) (a bias entry), so x~.x~' = 1 + x.x'. It is R&W eq.
    4.29 with Sigma = s I / 2 scaled by sigma_f^2 pi / 2: the covariance of the output of
    one hidden unit erf(u . x~) with input weights u ~ N(0, I / (2 ell^2)), the limit of a
    network with infinitely many such units (Williams 1998; R&W section 4.2.3). It is not
    stationary: ell is the prior scale of the input weights (small ell, a steep sigmoid;
    large ell, almost the linear kernel sigma_f^2 s (1 + x.x')), and ``|k| <= sigma_f^2 pi / 2``.
    The hyperparameters are ``log_lengthscale`` and ``log_variance`` (GPML's are log ell
    and log sigma_f).

    Parameters
    ----------
    lengthscale : float
        ell, one for every input (as ``covNNone``; no ARD).
    variance : float
        The signal variance sigma_f^2.
    lengthscale_bounds, variance_bounds : (float, float) or "fixed"
        Bounds on the natural scale; ``"fixed"`` holds the value and drops it from ``theta``.
    """

    extra_dense_matrices = (0.0, None)  # (its gradient is the default's: 2 p + 4)

    def __init__(
        self,
        lengthscale: float = 1.0,
        variance: float = 1.0,
        *,
        lengthscale_bounds: Bounds = DEFAULT_LENGTHSCALE_BOUNDS,
        variance_bounds: Bounds = DEFAULT_VARIANCE_BOUNDS,
    ) -> None:
        for value, name in ((lengthscale, "lengthscale"), (variance, "variance")):
            if np.size(value) != 1:
                raise ValueError(
                    f"{name} must be a single positive number (the neural-network kernel, as "
                    "GPML's covNNone, has one length-scale for every input)"
                )
        self._lengthscale = _Param(
            "lengthscale",
            _positive(lengthscale, "lengthscale"),
            _check_bounds(lengthscale_bounds, "lengthscale"),
        )
        self._variance = _Param(
            "variance", _positive(variance, "variance"), _check_bounds(variance_bounds, "variance")
        )

    def _params(self) -> list[_Param]:
        return [self._lengthscale, self._variance]

    @property
    def lengthscale(self) -> float:
        """The length-scale ell, the prior scale of the input weights (s = ell^-2), positive."""
        return float(self._lengthscale.value[0])

    @property
    def variance(self) -> float:
        """The signal variance sigma_f^2 that scales the kernel, positive."""
        return float(self._variance.value[0])

    def _parts(
        self, X: np.ndarray, X2: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """z = s x~.x~' / sqrt(b b'), the asin's argument, with b = 1 + s x~.x~ for X and X2."""
        s = self.lengthscale**-2
        b = 1.0 + s * (1.0 + np.einsum("ij,ij->i", X, X))
        if X2 is None:
            a = s * (1.0 + X @ X.T)
            a = 0.5 * (a + a.T)
            np.fill_diagonal(a, b - 1.0)  # the same rounding as diag()
            b2 = b
        else:
            a = s * (1.0 + X @ X2.T)
            b2 = 1.0 + s * (1.0 + np.einsum("ij,ij->i", X2, X2))
        return a / np.sqrt(np.outer(b, b2)), b, b2

    def __call__(self, X: np.ndarray, X2: np.ndarray | None = None) -> np.ndarray:
        return self.variance * np.arcsin(self._parts(X, X2)[0])

    def diag(self, X: np.ndarray) -> np.ndarray:
        b = 1.0 + self.lengthscale**-2 * (1.0 + np.einsum("ij,ij->i", X, X))
        return self.variance * np.arcsin((b - 1.0) / b)

    def gradient(self, X: np.ndarray) -> np.ndarray:
        z, b, _ = self._parts(X)
        grads = []
        if not self._lengthscale.fixed:
            # d log z / d log ell = -2 + (b_i - 1)/b_i + (b_j - 1)/b_j = -(1/b_i + 1/b_j)
            # (ds/d log ell = -2 s), and d asin(z) = dz / sqrt(1 - z^2), with |z| < 1
            dz = -z * (1.0 / b[:, None] + 1.0 / b[None, :])
            grads.append(self.variance * dz / np.sqrt((1.0 - z) * (1.0 + z)))
        if not self._variance.fixed:
            grads.append(self.variance * np.arcsin(z))  # dK/d log sigma_f^2 = K
        return np.array(grads).reshape(len(grads), X.shape[0], X.shape[0])

    def symbolic(self, X: np.ndarray, theta):
        import pytensor.tensor as pt

        ell, variance = self._symbolic_params(theta)
        s = ell[0] ** -2
        a = s * (1.0 + pt.as_tensor_variable(X @ X.T))
        b = 1.0 + s * (1.0 + pt.as_tensor_variable(np.einsum("ij,ij->i", X, X)))
        return variance[0] * pt.arcsin(a / pt.sqrt(b[:, None] * b[None, :]))
