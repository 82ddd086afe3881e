"""The kernel contract (:class:`Kernel`), its hyperparameter blocks, and sums and products."""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

__all__ = [
    "DEFAULT_LENGTHSCALE_BOUNDS",
    "DEFAULT_VARIANCE_BOUNDS",
    "Bounds",
    "Kernel",
    "Product",
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
        """The number of hyperparameters, the length of ``theta``."""
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
        """A copy of this kernel with the free hyperparameters set to ``exp(theta)``.

        Parameters
        ----------
        theta : array_like, shape (p,)
            The free log hyperparameters, in ``hyperparameter_names`` order.

        Returns
        -------
        Kernel
            A new kernel; this one is unchanged.

        Raises
        ------
        ValueError
            If ``theta`` has the wrong shape or is not finite.
        """
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
        """The diagonal k(x_i, x_i), shape (n,).

        Parameters
        ----------
        X : ndarray, shape (n, d)
            Inputs.

        Returns
        -------
        ndarray, shape (n,)
        """

    @abstractmethod
    def gradient(self, X: np.ndarray) -> np.ndarray:
        """dK(X, X)/d theta_j for the free log hyperparameters, shape (p, n, n).

        Parameters
        ----------
        X : ndarray, shape (n, d)
            Inputs.

        Returns
        -------
        ndarray, shape (p, n, n)
        """

    def gradient_terms(
        self,
        X: np.ndarray,
        M: np.ndarray,
        V: np.ndarray | None = None,
        *,
        K: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """The contractions of each dK/d theta_j that evidence gradients need.

        An evidence gradient needs dK_j only through sum_ik M_ik [dK_j]_ik (R&W eq. 5.9:
        1/2 alpha^T dK_j alpha - 1/2 tr(R dK_j) is <M, dK_j> with
        M = (alpha alpha^T - R) / 2) and, for Laplace's implicit term (eq. 5.24), the
        products dK_j V. Kernels with structure (the stationary ones) compute both
        without forming any dK_j; this default forms one at a time from :meth:`gradient`.

        Parameters
        ----------
        X : ndarray, shape (n, d)
        M : ndarray, shape (n, n)
            Symmetric.
        V : ndarray, shape (n, k), optional
        K : ndarray, shape (n, n), optional
            This kernel's K(X, X) when the caller has it (a kernel may use it to save
            work; it is not modified).

        Returns
        -------
        traces : ndarray, shape (p,)
            <M, dK_j> for the free hyperparameters, in ``hyperparameter_names`` order.
        products : ndarray, shape (p, n, k), or None
            dK_j V when ``V`` is given.
        """
        traces, products = [], []
        for dK in self.gradient(X):
            traces.append(float(np.vdot(M, dK)))
            if V is not None:
                products.append(dK @ V)
        if V is None:
            return np.asarray(traces, dtype=float), None
        return np.asarray(traces, dtype=float), np.asarray(products).reshape(
            len(traces), X.shape[0], V.shape[1]
        )

    def cross_gradient_terms(
        self, X: np.ndarray, Z: np.ndarray, C: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The contractions of the cross-covariance K(X, Z)'s derivatives that sparse
        evidence gradients need (the inducing inputs Z as well as the hyperparameters).

        Parameters
        ----------
        X : ndarray, shape (n, d)
        Z : ndarray, shape (M, d)
        C : ndarray, shape (n, M)

        Returns
        -------
        traces : ndarray, shape (p,)
            sum_ij C_ij d k(x_i, z_j) / d theta_j for the free hyperparameters, in
            ``hyperparameter_names`` order.
        inputs : ndarray, shape (M, d)
            sum_i C_ij d k(x_i, z_j) / d z_jk: the derivative with respect to the second
            argument only (for K(Z, Z) with a symmetric C, the total is twice this).

        Raises
        ------
        NotImplementedError
            For a kernel without these derivatives (the sparse engines then refuse it).
        """
        raise NotImplementedError(
            f"{type(self).__name__} has no derivatives with respect to inducing inputs"
        )

    def diag_gradient(self, X: np.ndarray) -> np.ndarray:
        """d k(x_i, x_i) / d theta_j for the free hyperparameters, shape (p, n).

        Parameters
        ----------
        X : ndarray, shape (n, d)
            Inputs.

        Returns
        -------
        ndarray, shape (p, n)
        """
        columns = [self.gradient(X[i : i + 1])[:, 0, 0] for i in range(X.shape[0])]
        return np.array(columns, dtype=float).T.reshape(self.n_hyperparameters, X.shape[0])

    @property
    def has_cross_gradients(self) -> bool:
        """Whether :meth:`cross_gradient_terms` is implemented (the sparse engines need it)."""
        return type(self).cross_gradient_terms is not Kernel.cross_gradient_terms

    #: n x n float64 matrices beyond the squared exponential's that (evaluating K(X, X),
    #: contracting an evidence gradient with :meth:`gradient_terms`) holds at once, as
    #: measured (tests/engines/test_memory.py): the engines' ``dense_matrices`` are
    #: measured with the squared exponential, and a fit with this kernel needs these more.
    #: None for the default: 2 temporaries in an evaluation, and in a gradient every dK_j
    #: formed by :meth:`gradient` and copied once (2 p + 4 with p hyperparameters).
    extra_dense_matrices: tuple[float | None, float | None] = (None, None)

    def extra_matrices(self, optimize: bool = False) -> float:
        """n x n matrices beyond the squared exponential's that a fit with this kernel
        holds at its peak (``optimize``: one that takes evidence gradients too).

        Parameters
        ----------
        optimize : bool
            Whether the fit takes evidence gradients.

        Returns
        -------
        float
            The declared ``extra_dense_matrices`` entry, or 2 p + 4 (gradients) and 2.
        """
        declared = self.extra_dense_matrices[bool(optimize)]
        if declared is not None:
            return float(declared)
        return 2.0 * self.n_hyperparameters + 4.0 if optimize else 2.0

    def symbolic(self, X: np.ndarray, theta):
        """K(X, X) as a PyTensor expression of ``theta``, the free log hyperparameters in
        ``hyperparameter_names`` order (used to sample hyperparameters with PyMC).

        Parameters
        ----------
        X : ndarray, shape (n, d)
            Inputs.
        theta : pytensor.tensor.TensorVariable, shape (p,)
            The free log hyperparameters.

        Returns
        -------
        pytensor.tensor.TensorVariable, shape (n, n)

        Raises
        ------
        NotImplementedError
            For a kernel without a symbolic form.
        """
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
        """Raise ValueError if the kernel cannot take inputs with ``d`` columns.

        Parameters
        ----------
        d : int
            The number of input columns.

        Raises
        ------
        ValueError
            If the kernel cannot take them.
        """
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

    def extra_matrices(self, optimize: bool = False) -> float:
        """One part's result is held while the other's is formed: the larger part's
        temporaries and one matrix more (a product's gradient is the default's: it
        contracts through :meth:`gradient`)."""
        if optimize and isinstance(self, Product):
            return super().extra_matrices(optimize)
        return max(self.k1.extra_matrices(optimize), self.k2.extra_matrices(optimize)) + 1.0

    def __repr__(self) -> str:
        op = " + " if isinstance(self, Sum) else " * "
        return f"({self.k1!r}{op}{self.k2!r})"


class Sum(_Combination):
    """k1 + k2.

    Parameters
    ----------
    k1, k2 : Kernel
        The two kernels; ``theta`` is k1's hyperparameters, then k2's.
    """

    def __call__(self, X: np.ndarray, X2: np.ndarray | None = None) -> np.ndarray:
        return self.k1(X, X2) + self.k2(X, X2)

    def diag(self, X: np.ndarray) -> np.ndarray:
        return self.k1.diag(X) + self.k2.diag(X)

    def symbolic(self, X: np.ndarray, theta):
        p1 = self.k1.n_hyperparameters
        return self.k1.symbolic(X, theta[:p1]) + self.k2.symbolic(X, theta[p1:])

    def gradient(self, X: np.ndarray) -> np.ndarray:
        return np.concatenate([self.k1.gradient(X), self.k2.gradient(X)])

    def gradient_terms(
        self,
        X: np.ndarray,
        M: np.ndarray,
        V: np.ndarray | None = None,
        *,
        K: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        t1, p1 = self.k1.gradient_terms(X, M, V)  # (K is the sum's: no use to the parts)
        t2, p2 = self.k2.gradient_terms(X, M, V)
        products = None if V is None else np.concatenate([p1, p2])
        return np.concatenate([t1, t2]), products

    def cross_gradient_terms(
        self, X: np.ndarray, Z: np.ndarray, C: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        t1, z1 = self.k1.cross_gradient_terms(X, Z, C)
        t2, z2 = self.k2.cross_gradient_terms(X, Z, C)
        return np.concatenate([t1, t2]), z1 + z2

    def diag_gradient(self, X: np.ndarray) -> np.ndarray:
        return np.concatenate([self.k1.diag_gradient(X), self.k2.diag_gradient(X)])

    @property
    def has_cross_gradients(self) -> bool:
        return self.k1.has_cross_gradients and self.k2.has_cross_gradients


class Product(_Combination):
    """k1 * k2 (elementwise).

    Parameters
    ----------
    k1, k2 : Kernel
        The two kernels; ``theta`` is k1's hyperparameters, then k2's.
    """

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

    def cross_gradient_terms(
        self, X: np.ndarray, Z: np.ndarray, C: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        # d(k1 k2) = k2 dk1 + k1 dk2: each part contracted with C o (the other's K)
        t1, z1 = self.k1.cross_gradient_terms(X, Z, C * self.k2(X, Z))
        t2, z2 = self.k2.cross_gradient_terms(X, Z, C * self.k1(X, Z))
        return np.concatenate([t1, t2]), z1 + z2

    def diag_gradient(self, X: np.ndarray) -> np.ndarray:
        d1, d2 = self.k1.diag(X), self.k2.diag(X)
        return np.concatenate([self.k1.diag_gradient(X) * d2, d1 * self.k2.diag_gradient(X)])

    @property
    def has_cross_gradients(self) -> bool:
        return self.k1.has_cross_gradients and self.k2.has_cross_gradients
