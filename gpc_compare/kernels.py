"""Covariance functions with log-space hyperparameters, bounds and gradients.

Every kernel exposes the same small interface:

- ``kernel(X, X2=None)`` the covariance matrix K(X, X2);
- ``kernel.diag(X)`` its diagonal k(x, x);
- ``kernel.gradient(X)`` the derivatives dK/d theta_j, shape (p, n, n), with respect to
  the *log* of each free hyperparameter, in the order of ``hyperparameter_names``;
- ``kernel.theta`` / ``kernel.bounds`` / ``kernel.with_theta(theta)``: the free
  hyperparameters in log space, their log bounds, and a copy with new values.

A hyperparameter whose bounds are ``"fixed"`` keeps its value and is left out of
``theta`` (the Iris study fixes sigma_f = 1 this way). Kernels combine
with ``+`` and ``*``; the parts' names are prefixed ``k1__`` and ``k2__`` as in
scikit-learn.

Symbols: ``lengthscale`` is ell, ``variance`` is the signal variance sigma_f^2, so for
the squared exponential k(x, x') = sigma_f^2 exp(-|x - x'|^2 / (2 ell^2)) (R&W eq. 4.9).
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np
from scipy.spatial.distance import cdist

__all__ = [
    "Constant",
    "Kernel",
    "Linear",
    "Matern32",
    "Matern52",
    "Product",
    "SquaredExponential",
    "Sum",
]

Bounds = tuple[float, float] | str

DEFAULT_LENGTHSCALE_BOUNDS: tuple[float, float] = (1e-2, 1e3)
DEFAULT_VARIANCE_BOUNDS: tuple[float, float] = (1e-2, 1e5)


def _check_bounds(bounds: Bounds, name: str) -> Bounds:
    if isinstance(bounds, str):
        if bounds != "fixed":
            raise ValueError(f"{name} bounds must be a (low, high) pair or 'fixed', got {bounds!r}")
        return bounds
    low, high = (float(b) for b in bounds)
    if not (0 < low < high < np.inf):
        raise ValueError(f"{name} bounds must satisfy 0 < low < high < inf, got {bounds!r}")
    return (low, high)


def _positive(value: float | Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(value, dtype=float)).copy()
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a positive number or a 1-D array of them")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be positive and finite, got {value!r}")
    return arr


class _Param:
    """One named hyperparameter block (possibly a vector for ARD), stored by its natural value."""

    __slots__ = ("name", "value", "bounds")

    def __init__(self, name: str, value: np.ndarray, bounds: Bounds) -> None:
        self.name = name
        self.value = value
        self.bounds = bounds

    @property
    def fixed(self) -> bool:
        return isinstance(self.bounds, str)

    def names(self) -> list[str]:
        if self.value.size == 1 and not self.name.endswith("]"):
            return [f"log_{self.name}"]
        return [f"log_{self.name}[{i}]" for i in range(self.value.size)]


class Kernel(ABC):
    """Base class: a covariance function with log-space hyperparameters."""

    # ----------------------------------------------------------------- hyperparameters
    @abstractmethod
    def _params(self) -> list[_Param]:
        """The hyperparameter blocks, in order (fixed ones included)."""

    @property
    def hyperparameter_names(self) -> list[str]:
        """Names of the free hyperparameters, ``log_`` prefixed, in ``theta`` order."""
        return [n for p in self._params() if not p.fixed for n in p.names()]

    @property
    def n_hyperparameters(self) -> int:
        return len(self.hyperparameter_names)

    @property
    def theta(self) -> np.ndarray:
        """Log values of the free hyperparameters."""
        parts = [np.log(p.value) for p in self._params() if not p.fixed]
        return np.concatenate(parts) if parts else np.zeros(0)

    @property
    def bounds(self) -> np.ndarray:
        """Log bounds of the free hyperparameters, shape (p, 2)."""
        rows = [
            np.log(np.asarray(p.bounds, dtype=float))
            for p in self._params()
            if not p.fixed
            for _ in range(p.value.size)
        ]
        return np.array(rows).reshape(-1, 2)

    def with_theta(self, theta: np.ndarray) -> Kernel:
        """A copy of this kernel with the free hyperparameters set to ``exp(theta)``."""
        theta = np.asarray(theta, dtype=float)
        if theta.shape != (self.n_hyperparameters,):
            raise ValueError(
                f"theta must have shape ({self.n_hyperparameters},), got {theta.shape}"
            )
        if not np.all(np.isfinite(theta)):
            raise ValueError(f"theta must be finite, got {theta}")
        new = copy.deepcopy(self)
        i = 0
        for p in new._params():
            if p.fixed:
                continue
            p.value = np.exp(theta[i : i + p.value.size])
            i += p.value.size
        return new

    # ------------------------------------------------------------------- evaluation
    @abstractmethod
    def __call__(self, X: np.ndarray, X2: np.ndarray | None = None) -> np.ndarray:
        """The covariance matrix K(X, X2) (K(X, X) when X2 is None)."""

    @abstractmethod
    def diag(self, X: np.ndarray) -> np.ndarray:
        """The diagonal k(x_i, x_i), shape (n,)."""

    @abstractmethod
    def gradient(self, X: np.ndarray) -> np.ndarray:
        """dK(X, X)/d theta_j for the free log hyperparameters, shape (p, n, n)."""

    def symbolic(self, X: np.ndarray, theta):
        """K(X, X) as a PyTensor expression of ``theta``, the free log hyperparameters in
        ``hyperparameter_names`` order (used to sample hyperparameters with PyMC)."""
        raise NotImplementedError(f"{type(self).__name__} has no symbolic form")

    def _symbolic_params(self, theta) -> list:
        """Each hyperparameter block as a tensor: exp(theta) if free, a constant if fixed."""
        import pytensor.tensor as pt

        out, i = [], 0
        for p in self._params():
            if p.fixed:
                out.append(pt.as_tensor_variable(p.value))
            else:
                out.append(pt.exp(theta[i : i + p.value.size]))
                i += p.value.size
        return out

    def check_input_dim(self, d: int) -> None:
        """Raise ValueError if the kernel cannot take inputs with ``d`` columns."""
        if d < 1:
            raise ValueError(f"inputs need at least one column, got {d}")

    # ---------------------------------------------------------------- combinations
    def __add__(self, other: Kernel) -> Sum:
        return Sum(self, other)

    def __mul__(self, other: Kernel) -> Product:
        return Product(self, other)

    def __repr__(self) -> str:
        args = ", ".join(
            f"{p.name}={p.value[0]:.6g}"
            if p.value.size == 1
            else f"{p.name}={np.array2string(p.value, precision=4)}"
            for p in self._params()
        )
        return f"{type(self).__name__}({args})"


class _Stationary(Kernel):
    """k(x, x') = sigma_f^2 kappa(r^2), r^2 = sum_d (x_d - x'_d)^2 / ell_d^2.

    Subclasses give kappa(r^2) and g(r^2) with d kappa / d log ell_d = g(r^2) * D_d,
    D_d = (x_d - x'_d)^2 / ell_d^2, which holds for every isotropic profile
    (isotropic: d kappa / d log ell = g(r^2) r^2).
    """

    def __init__(
        self,
        lengthscale: float | Sequence[float] | np.ndarray = 1.0,
        variance: float = 1.0,
        *,
        lengthscale_bounds: Bounds = DEFAULT_LENGTHSCALE_BOUNDS,
        variance_bounds: Bounds = DEFAULT_VARIANCE_BOUNDS,
    ) -> None:
        self.ard = np.ndim(lengthscale) > 0
        self._lengthscale = _Param(
            "lengthscale",
            _positive(lengthscale, "lengthscale"),
            _check_bounds(lengthscale_bounds, "lengthscale"),
        )
        self._variance = _Param(
            "variance",
            _positive(variance, "variance")[:1],
            _check_bounds(variance_bounds, "variance"),
        )
        if np.size(variance) != 1:
            raise ValueError("variance must be a single positive number")

    def _params(self) -> list[_Param]:
        return [self._lengthscale, self._variance]

    @property
    def lengthscale(self) -> np.ndarray | float:
        v = self._lengthscale.value
        return v.copy() if self.ard else float(v[0])

    @property
    def variance(self) -> float:
        return float(self._variance.value[0])

    @property
    def hyperparameter_names(self) -> list[str]:
        names = []
        if not self._lengthscale.fixed:
            ell = self._lengthscale.value
            names += (
                [f"log_lengthscale[{i}]" for i in range(ell.size)]
                if self.ard
                else ["log_lengthscale"]
            )
        if not self._variance.fixed:
            names.append("log_variance")
        return names

    def check_input_dim(self, d: int) -> None:
        if self.ard and self._lengthscale.value.size != d:
            raise ValueError(
                f"the ARD kernel has {self._lengthscale.value.size} length-scales "
                f"but X has {d} columns"
            )

    @abstractmethod
    def _kappa(self, r2, xp=np, eps: float = 0.0):
        """The profile kappa(r^2); ``xp`` is numpy or pytensor.tensor, and ``eps`` keeps
        the square root differentiable at r = 0 in the symbolic form."""

    @abstractmethod
    def _g(self, r2: np.ndarray) -> np.ndarray: ...

    def _r2(self, X: np.ndarray, X2: np.ndarray | None) -> np.ndarray:
        ell = self._lengthscale.value
        S = X / ell
        if X2 is None:
            return cdist(S, S, "sqeuclidean")
        return cdist(S, X2 / ell, "sqeuclidean")

    def __call__(self, X: np.ndarray, X2: np.ndarray | None = None) -> np.ndarray:
        return self.variance * self._kappa(self._r2(X, X2))

    def diag(self, X: np.ndarray) -> np.ndarray:
        return np.full(X.shape[0], self.variance * float(self._kappa(np.zeros(1))[0]))

    def symbolic(self, X: np.ndarray, theta):
        import pytensor.tensor as pt

        ell, variance = self._symbolic_params(theta)
        S = pt.as_tensor_variable(X) / (ell if self.ard else ell[0])
        r2 = pt.sum((S[:, None, :] - S[None, :, :]) ** 2, axis=-1)
        return variance[0] * self._kappa(r2, xp=pt, eps=1e-12)

    def gradient(self, X: np.ndarray) -> np.ndarray:
        r2 = self._r2(X, None)
        grads = []
        if not self._lengthscale.fixed:
            g = self.variance * self._g(r2)
            if self.ard:
                ell = self._lengthscale.value
                for d in range(X.shape[1]):
                    col = X[:, d : d + 1] / ell[d]
                    grads.append(g * cdist(col, col, "sqeuclidean"))
            else:
                grads.append(g * r2)
        if not self._variance.fixed:
            grads.append(self.variance * self._kappa(r2))  # dK/d log sigma_f^2 = K
        return np.array(grads).reshape(len(grads), X.shape[0], X.shape[0])


class SquaredExponential(_Stationary):
    """Squared exponential: sigma_f^2 exp(-r^2 / 2) (R&W eq. 4.9); array lengthscale = ARD.

    Parameters
    ----------
    lengthscale : float or array_like
        ell; an array gives one length-scale per input dimension (ARD).
    variance : float
        The signal variance sigma_f^2.
    lengthscale_bounds, variance_bounds : (float, float) or "fixed"
        Bounds on the natural scale, used by hyperparameter optimisation; ``"fixed"``
        holds the value and drops it from ``theta``.
    """

    def _kappa(self, r2, xp=np, eps: float = 0.0):
        return xp.exp(-0.5 * r2)

    def _g(self, r2: np.ndarray) -> np.ndarray:
        return np.exp(-0.5 * r2)  # d/d log ell_d exp(-r^2/2) = exp(-r^2/2) D_d


class Matern32(_Stationary):
    """Matern nu = 3/2: sigma_f^2 (1 + u) exp(-u), u = sqrt(3) r (R&W eq. 4.17).

    Parameters as for :class:`SquaredExponential`.
    """

    def _kappa(self, r2, xp=np, eps: float = 0.0):
        u = xp.sqrt(3.0 * r2 + eps)
        return (1.0 + u) * xp.exp(-u)

    def _g(self, r2: np.ndarray) -> np.ndarray:
        return 3.0 * np.exp(-np.sqrt(3.0 * r2))  # -u e^-u * du/dlog ell_d, du = -3 D_d / u


class Matern52(_Stationary):
    """Matern nu = 5/2: sigma_f^2 (1 + u + u^2/3) exp(-u), u = sqrt(5) r (R&W eq. 4.17).

    Parameters as for :class:`SquaredExponential`.
    """

    def _kappa(self, r2, xp=np, eps: float = 0.0):
        u = xp.sqrt(5.0 * r2 + eps)
        return (1.0 + u + u * u / 3.0) * xp.exp(-u)

    def _g(self, r2: np.ndarray) -> np.ndarray:
        u = np.sqrt(5.0 * r2)
        return (5.0 / 3.0) * (1.0 + u) * np.exp(-u)


class _VarianceOnly(Kernel):
    """A kernel sigma^2 k0(x, x') with a single hyperparameter, the variance sigma^2."""

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


class _Combination(Kernel):
    def __init__(self, k1: Kernel, k2: Kernel) -> None:
        if not (isinstance(k1, Kernel) and isinstance(k2, Kernel)):
            raise TypeError("kernels combine only with other kernels")
        self.k1 = k1
        self.k2 = k2

    def _params(self) -> list[_Param]:
        return self.k1._params() + self.k2._params()

    @property
    def hyperparameter_names(self) -> list[str]:
        return [f"k1__{n}" for n in self.k1.hyperparameter_names] + [
            f"k2__{n}" for n in self.k2.hyperparameter_names
        ]

    @property
    def theta(self) -> np.ndarray:
        return np.concatenate([self.k1.theta, self.k2.theta])

    @property
    def bounds(self) -> np.ndarray:
        return np.vstack([self.k1.bounds, self.k2.bounds])

    def with_theta(self, theta: np.ndarray) -> Kernel:
        theta = np.asarray(theta, dtype=float)
        if theta.shape != (self.n_hyperparameters,):
            raise ValueError(
                f"theta must have shape ({self.n_hyperparameters},), got {theta.shape}"
            )
        p1 = self.k1.n_hyperparameters
        return type(self)(self.k1.with_theta(theta[:p1]), self.k2.with_theta(theta[p1:]))

    def check_input_dim(self, d: int) -> None:
        self.k1.check_input_dim(d)
        self.k2.check_input_dim(d)

    def __repr__(self) -> str:
        op = " + " if isinstance(self, Sum) else " * "
        return f"({self.k1!r}{op}{self.k2!r})"


class Sum(_Combination):
    """k1 + k2."""

    def __call__(self, X: np.ndarray, X2: np.ndarray | None = None) -> np.ndarray:
        return self.k1(X, X2) + self.k2(X, X2)

    def diag(self, X: np.ndarray) -> np.ndarray:
        return self.k1.diag(X) + self.k2.diag(X)

    def symbolic(self, X: np.ndarray, theta):
        p1 = self.k1.n_hyperparameters
        return self.k1.symbolic(X, theta[:p1]) + self.k2.symbolic(X, theta[p1:])

    def gradient(self, X: np.ndarray) -> np.ndarray:
        return np.concatenate([self.k1.gradient(X), self.k2.gradient(X)])


class Product(_Combination):
    """k1 * k2 (elementwise)."""

    def __call__(self, X: np.ndarray, X2: np.ndarray | None = None) -> np.ndarray:
        return self.k1(X, X2) * self.k2(X, X2)

    def diag(self, X: np.ndarray) -> np.ndarray:
        return self.k1.diag(X) * self.k2.diag(X)

    def symbolic(self, X: np.ndarray, theta):
        p1 = self.k1.n_hyperparameters
        return self.k1.symbolic(X, theta[:p1]) * self.k2.symbolic(X, theta[p1:])

    def gradient(self, X: np.ndarray) -> np.ndarray:
        K1, K2 = self.k1(X), self.k2(X)
        return np.concatenate([self.k1.gradient(X) * K2, K1 * self.k2.gradient(X)])
