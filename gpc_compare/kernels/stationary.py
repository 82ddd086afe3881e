"""Stationary kernels of r^2 = sum_d (x_d - x'_d)^2 / ell_d^2: squared exponential, Matern."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

import numpy as np
from scipy.spatial.distance import cdist

from .base import (
    DEFAULT_LENGTHSCALE_BOUNDS,
    DEFAULT_VARIANCE_BOUNDS,
    Bounds,
    Kernel,
    _check_bounds,
    _Param,
    _positive,
)

__all__ = ["Matern32", "Matern52", "SquaredExponential"]


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

    #: Whether g = kappa (the squared exponential), so that dK/d log ell_d = K o D_d.
    _g_is_kappa = False

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
        # the squared differences are constants: only their weights 1 / ell_d^2 are in the
        # graph (forming the (n, n, d) differences in it made each gradient ~3x dearer)
        D = (X[:, None, :] - X[None, :, :]) ** 2
        if self.ard:
            r2 = pt.tensordot(pt.as_tensor_variable(D), ell**-2, axes=[[2], [0]])
        else:
            r2 = pt.as_tensor_variable(D.sum(axis=-1)) / ell[0] ** 2
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

    def gradient_terms(
        self,
        X: np.ndarray,
        M: np.ndarray,
        V: np.ndarray | None = None,
        *,
        K: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """<M, dK_j> and dK_j V with no dK_j formed (see :meth:`Kernel.gradient_terms`).

        dK/d log ell_d = A o D_d with A = sigma_f^2 g(r^2) and D_d the squared scaled
        differences (s_id - s_jd)^2, s = x / ell (the class notes; an isotropic
        length-scale's derivative is the sum over d). Expanding the square, for symmetric
        G = M o A,
        <M, A o D_d> = 2 sum_i s_id^2 (G 1)_i - 2 s_d^T G s_d, and
        [(A o D_d) v]_i = s_id^2 (A v)_i - 2 s_id (A (s_d o v))_i + (A (s_d^2 o v))_i,
        so every length-scale's terms come from products of one n x n matrix with n x d
        blocks (the technique of GPy's ARD gradients). The inputs are centred first and
        A's diagonal zeroed (D_d vanishes there), which keeps the expansion's cancellation
        at the rounding of sum |M o dK_j| (tested). For the squared exponential A = K, so
        with ``K`` given no distance or exponential is computed at all.
        """
        n = X.shape[0]
        r2 = None
        if K is None and self._g_is_kappa and not self._lengthscale.fixed:
            K = self.variance * self._kappa(self._r2(X, None))  # (A = K: one exponential)
        if K is None or not self._g_is_kappa:
            r2 = self._r2(X, None)
        traces, products = [], []
        var_trace, var_product = None, None
        A = None
        # A with its diagonal zeroed. For the squared exponential A = K: with no V, K is
        # used as it is (G's diagonal zeroed instead); with V, A V must be exact (taking
        # diag(K) V off K V would lose it where K is nearly diagonal), so K is copied and
        # K V = A V + diag(K) V follows from it
        K_diag = None
        if not self._lengthscale.fixed:
            if r2 is None:  # the squared exponential: g = kappa, A = K
                K_diag = np.diag(K).copy()
                A = K if V is None else K.copy()
            else:
                A = self.variance * self._g(r2)
            if A is not K:
                np.fill_diagonal(A, 0.0)
        if not self._variance.fixed:  # dK/d log sigma_f^2 = K
            if K is None:
                K = self.variance * self._kappa(r2)
            var_trace = float(np.vdot(M, K))
            if V is not None and K_diag is None:  # (else from A V below)
                var_product = K @ V
        if A is not None:
            S = (X - X.mean(axis=0)) / self._lengthscale.value
            G = M * A
            if A is K:
                np.fill_diagonal(G, 0.0)
            GS = G @ S
            t = 2.0 * (S * S).T @ G.sum(axis=1) - 2.0 * np.sum(S * GS, axis=0)
            traces.extend(t if self.ard else [float(np.sum(t))])
            if V is not None:
                k, d = V.shape[1], S.shape[1]
                SV = (S[:, :, None] * V[:, None, :]).reshape(n, d * k)
                S2V = (S[:, :, None] ** 2 * V[:, None, :]).reshape(n, d * k)
                AV = A @ np.column_stack([V, SV, S2V])
                Av = AV[:, :k]
                if K_diag is not None and var_trace is not None:
                    var_product = Av + K_diag[:, None] * V
                ASV = AV[:, k : k + d * k].reshape(n, d, k)
                AS2V = AV[:, k + d * k :].reshape(n, d, k)
                P = (S * S)[:, :, None] * Av[:, None, :] - 2.0 * S[:, :, None] * ASV + AS2V
                products.extend(np.moveaxis(P, 1, 0) if self.ard else [P.sum(axis=1)])
        if var_trace is not None:
            traces.append(var_trace)
            if V is not None:
                products.append(var_product)
        traces = np.asarray(traces, dtype=float)
        if V is None:
            return traces, None
        return traces, np.asarray(products).reshape(traces.size, n, V.shape[1])

    def diag_gradient(self, X: np.ndarray) -> np.ndarray:
        rows = (
            []
            if self._lengthscale.fixed
            else [np.zeros(X.shape[0])] * (self._lengthscale.value.size if self.ard else 1)
        )  # k(x, x) = sigma_f^2 kappa(0) does not depend on ell
        if not self._variance.fixed:
            rows.append(self.diag(X))
        return np.array(rows, dtype=float).reshape(len(rows), X.shape[0])

    def cross_gradient_terms(
        self, X: np.ndarray, Z: np.ndarray, C: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """<C, dK(X, Z)/d theta_j> and the derivative of <C, K(X, Z)> with respect to Z,
        with no derivative matrix formed (see :meth:`Kernel.cross_gradient_terms`).

        With s = x / ell, t = z / ell and E = C o A, A = sigma_f^2 g(r^2):
        <C, dK/d log ell_d> = sum_ij E_ij (s_id - t_jd)^2
        = sum_i s_id^2 (E 1)_i - 2 s_d^T E t_d + sum_j t_jd^2 (E^T 1)_j, and, since
        d kappa / d r^2 = -g / 2, d k(x_i, z_j) / d z_jd = A_ij (s_id - t_jd) / ell_d, so
        the derivative with respect to z_jd is ((E^T s)_jd - (E^T 1)_j t_jd) / ell_d.
        Both sets of inputs are shifted by the mean of X first (the differences are
        unchanged; the expansion's cancellation is smaller).
        """
        ell = self._lengthscale.value
        shift = X.mean(axis=0)
        S, T = (X - shift) / ell, (Z - shift) / ell
        r2 = cdist(S, T, "sqeuclidean")
        A = self.variance * self._g(r2)
        E = C * A
        e_rows, e_cols = E.sum(axis=1), E.sum(axis=0)
        ET_S = E.T @ S
        traces = []
        if not self._lengthscale.fixed:
            t = (S * S).T @ e_rows - 2.0 * np.sum(T * ET_S, axis=0) + (T * T).T @ e_cols
            traces.extend(t if self.ard else [float(np.sum(t))])
        if not self._variance.fixed:  # dK/d log sigma_f^2 = K (= A for the squared exponential)
            K = A if self._g_is_kappa else self.variance * self._kappa(r2)
            traces.append(float(np.vdot(C, K)))
        inputs = (ET_S - e_cols[:, None] * T) / ell
        return np.asarray(traces, dtype=float), inputs


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

    _g_is_kappa = True
    extra_dense_matrices = (0.0, 0.0)  # (the engines' dense_matrices are measured with it)

    def _kappa(self, r2, xp=np, eps: float = 0.0):
        return xp.exp(-0.5 * r2)

    def _g(self, r2: np.ndarray) -> np.ndarray:
        return np.exp(-0.5 * r2)  # d/d log ell_d exp(-r^2/2) = exp(-r^2/2) D_d


class Matern32(_Stationary):
    """Matern nu = 3/2: sigma_f^2 (1 + u) exp(-u), u = sqrt(3) r (R&W eq. 4.17).

    Parameters as for :class:`SquaredExponential`.

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

    extra_dense_matrices = (2.0, 2.0)  # (r, u and exp(-u) beside K: measured)

    def _kappa(self, r2, xp=np, eps: float = 0.0):
        u = xp.sqrt(3.0 * r2 + eps)
        return (1.0 + u) * xp.exp(-u)

    def _g(self, r2: np.ndarray) -> np.ndarray:
        return 3.0 * np.exp(-np.sqrt(3.0 * r2))  # -u e^-u * du/dlog ell_d, du = -3 D_d / u


class Matern52(_Stationary):
    """Matern nu = 5/2: sigma_f^2 (1 + u + u^2/3) exp(-u), u = sqrt(5) r (R&W eq. 4.17).

    Parameters as for :class:`SquaredExponential`.

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

    extra_dense_matrices = (2.0, 4.0)  # (r, u and exp(-u) beside K: measured)

    def _kappa(self, r2, xp=np, eps: float = 0.0):
        u = xp.sqrt(5.0 * r2 + eps)
        return (1.0 + u + u * u / 3.0) * xp.exp(-u)

    def _g(self, r2: np.ndarray) -> np.ndarray:
        u = np.sqrt(5.0 * r2)
        return (5.0 / 3.0) * (1.0 + u) * np.exp(-u)
