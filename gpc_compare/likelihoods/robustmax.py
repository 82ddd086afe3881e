"""The robust-max likelihood for C classes (Girolami and Rogers 2006; Hernandez-Lobato,
Hernandez-Lobato and Dupont 2011; GPflow's ``MultiClass(RobustMax)``)."""

from __future__ import annotations

import numpy as np

from ._diagonal import prob_largest
from .base import DiagonalExpectation, Likelihood

__all__ = ["RobustMax"]

#: GPflow's default label-noise rate.
DEFAULT_EPSILON = 1e-3


class RobustMax(Likelihood):
    """p(y = c | f) = 1 - eps if c = argmax_k f_k, else eps / (C - 1).

    The latent functions choose a class by their largest value, and a fraction eps of the
    labels is flipped to one of the other classes at random (eps fixed, GPflow's 1e-3 by
    default). Under independent Gaussian latents f ~ N(mean, diag(var)), as the
    multi-class SVGP's q(f_i) and predictive f* are, everything reduces to
    P_c = Pr(f_c is the largest), a one-dimensional integral
    (:func:`~gpc_compare.likelihoods._diagonal.prob_largest`):

    - E_q[log p(y | f)] = log(eps / (C - 1)) + P_y log((1 - eps)(C - 1) / eps), with its
      derivatives (:meth:`expected_log_prob_diag`);
    - the predictive p(y* = c | data) = eps / (C - 1) + (1 - eps - eps / (C - 1)) P_c,
      which sums to one over c and is never below eps / (C - 1)
      (:meth:`log_predictive_all`).

    Labels are class indices 0..C-1; latent values arrays (..., C). ``RobustMax(n_classes=C)``
    fixes C; ``RobustMax()`` takes it from the labels. Only independent latents are
    integrated: a predictive covariance with off-diagonal entries is refused.

    Parameters
    ----------
    n_classes : int, optional
        The number of classes C (at least 2); None takes it from the labels.
    epsilon : float
        The flip probability eps, in (0, 1); GPflow's 1e-3 by default.
    """

    name = "robustmax"
    log_concave = False  # (piecewise constant in f)

    def __init__(self, n_classes: int | None = None, epsilon: float = DEFAULT_EPSILON) -> None:
        if n_classes is not None and (int(n_classes) != n_classes or n_classes < 2):
            raise ValueError(f"n_classes must be an integer >= 2, got {n_classes!r}")
        epsilon = float(epsilon)
        if not 0.0 < epsilon < 1.0:
            raise ValueError(f"epsilon must be in (0, 1), got {epsilon!r}")
        self.n_classes = None if n_classes is None else int(n_classes)
        self.epsilon = epsilon

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

    def _levels(self, C: int) -> tuple[float, float]:
        """log(eps / (C - 1)) and log(1 - eps): the log likelihood off and on the argmax."""
        return float(np.log(self.epsilon / (C - 1))), float(np.log1p(-self.epsilon))

    def log_prob(self, y: np.ndarray, F: np.ndarray) -> np.ndarray:
        """log p(y_i | f_i) for class indices y (n,) and latent values F (n, C).

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
        off, on = self._levels(F.shape[-1])
        hit = np.argmax(F, axis=-1) == np.asarray(y, dtype=int)
        return np.where(hit, on, off)

    def proba(self, F: np.ndarray) -> np.ndarray:
        """p(y = c | f) for every class, along the last axis.

        Parameters
        ----------
        F : array_like, shape (..., C)
            Latent values.

        Returns
        -------
        ndarray, shape (..., C)
        """
        F = np.asarray(F, dtype=float)
        off, on = self._levels(F.shape[-1])
        hit = np.arange(F.shape[-1]) == np.argmax(F, axis=-1)[..., None]
        return np.exp(np.where(hit, on, off))

    # ------------------------------------------------------------------ integrals
    def expected_log_prob_diag(
        self,
        y: np.ndarray,
        mean: np.ndarray,
        var: np.ndarray,
        *,
        integration: str | None = None,
        **_: object,
    ) -> DiagonalExpectation:
        """E_q[log p(y_i | f_i)] under q(f_i) = N(mean_i, diag(var_i)) with its derivatives
        in mean and var (n, C), by the one-dimensional quadrature (``integration`` None or
        "quadrature"; no Monte Carlo, so ``variance`` is None and its options are unused).

        Parameters
        ----------
        y : array_like of int, shape (n,)
            Class indices 0..C-1.
        mean, var : ndarray, shape (n, C)
            The independent latents' means and variances.
        integration : {"quadrature"}, optional
            As above.
        **_
            The Monte Carlo options other likelihoods take, unused.

        Returns
        -------
        DiagonalExpectation
        """
        if integration not in (None, "quadrature"):
            raise ValueError(
                f"the robust-max expectation is a one-dimensional quadrature: integration "
                f"must be 'quadrature' or None, got {integration!r}"
            )
        C = mean.shape[1]
        off, on = self._levels(C)
        P, dP_dm, dP_dv = prob_largest(np.asarray(y, dtype=int), mean, var)
        gain = on - off  # log((1 - eps)(C - 1) / eps)
        return DiagonalExpectation(off + gain * P, gain * dP_dm, gain * dP_dv, None)

    def log_predictive_all(
        self,
        mean: np.ndarray,
        cov: np.ndarray,
        *,
        integration: str | None = None,
        return_se: bool = False,
        **_: object,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """log p(y* = c | data) for every class c, shape (..., C), for f* ~ N(mean, cov)
        with a diagonal ``cov`` (..., C, C): by quadrature only (``integration`` None or
        "quadrature"; its error is below 1e-12, so ``return_se`` gives zeros).

        Parameters
        ----------
        mean : array_like, shape (..., C)
            The Gaussian latent's mean.
        cov : array_like, shape (..., C, C)
            Its covariance, diagonal.
        integration : {"quadrature"}, optional
            As above.
        return_se : bool
            Also return the standard errors (zeros).
        **_
            The Monte Carlo options other likelihoods take, unused.

        Returns
        -------
        log_p : ndarray, shape (..., C)
            The log predictive probability of each class.
        se : ndarray, shape (..., C)
            Zeros (``return_se`` only).
        """
        if integration not in (None, "quadrature"):
            raise ValueError(
                f"the robust-max predictive is a one-dimensional quadrature: integration must "
                f"be 'quadrature' or None, got {integration!r}"
            )
        mean = np.asarray(mean, dtype=float)
        cov = np.asarray(cov, dtype=float)
        C = mean.shape[-1]
        if C < 2 or cov.shape[-2:] != (C, C):
            raise ValueError(
                f"mean must have shape (..., C), C >= 2, and cov (..., C, C); got {mean.shape} "
                f"and {cov.shape}"
            )
        var = np.diagonal(cov, axis1=-2, axis2=-1)
        if np.any(cov - var[..., None] * np.eye(C) != 0.0):
            raise ValueError(
                "the robust-max predictive integrates independent latents: cov must be diagonal"
            )
        shape = np.broadcast_shapes(mean.shape[:-1], var.shape[:-1])
        m = np.broadcast_to(mean, (*shape, C)).reshape(-1, C)
        v = np.maximum(np.broadcast_to(var, (*shape, C)).reshape(-1, C), 0.0)
        if not (np.all(np.isfinite(m)) and np.all(np.isfinite(v))):
            raise ValueError("the latent mean and covariance must be finite")
        off, on = self._levels(C)
        P = np.empty_like(m)
        for c in range(C):
            P[:, c] = prob_largest(np.full(m.shape[0], c), m, v, derivatives=False)[0]
        # p = eps/(C-1) + (1 - eps - eps/(C-1)) P = exp(off) + (exp(on) - exp(off)) P
        lp = np.log(np.exp(off) + (np.exp(on) - np.exp(off)) * P).reshape(*shape, C)
        return (lp, np.zeros_like(lp)) if return_se else lp

    def predict_proba(self, mean: np.ndarray, cov: np.ndarray, **kwargs) -> np.ndarray:
        """p(y* = c | data), shape (..., C) (see :meth:`log_predictive_all`).

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
        """log p(y | data) for class indices ``y`` (...,).

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

    # ------------------------------------------------- the binary parts do not apply
    def derivatives(self, y, f):
        raise NotImplementedError("the robust-max likelihood is piecewise constant in f")

    def tilted_moments(self, y, mean, var):
        raise NotImplementedError("EP's tilted moments are binary only here")

    def expected_log_prob(self, y, mean, var):
        raise NotImplementedError("use expected_log_prob_diag (C independent latent values)")

    def quadrature(self, y, mean, var):
        raise NotImplementedError("see log_predictive_all")

    def __repr__(self) -> str:
        parts = [] if self.n_classes is None else [f"n_classes={self.n_classes}"]
        if self.epsilon != DEFAULT_EPSILON:
            parts.append(f"epsilon={self.epsilon!r}")
        return f"RobustMax({', '.join(parts)})"
