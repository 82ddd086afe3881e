"""What the sparse engines share: their options on the inducing inputs, choosing them, and
the SVGP bound's gradient (binary and multi-class).

``inducing=M`` picks M training inputs by k-means++ seeding (Arthur and Vassilvitskii
2007; scikit-learn's ``kmeans_plusplus``), seeded by ``random_seed``: spread over the data,
each a training input. An (M, d) array gives them. ``optimize_inducing=True`` makes their
coordinates hyperparameters (``inducing[j,k]``), fitted with the kernel's by
``optimize=True``. ``jitter`` is relative: K_uu + jitter * mean(diag K_uu) I, the GPML
toolbox's convention (1e-6 there), held fixed when differentiating.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._validation import check_flag, check_positive, check_random_seed
from ..numerics import solve_lower_transpose
from ..posterior.sparse import InducingPosterior
from ._engine import EngineOptions, engine_options, option

__all__ = ["DEFAULT_INDUCING", "SparseOptions", "bound_gradient", "choose_inducing"]

#: M when ``inducing`` is not given (or n, if smaller).
DEFAULT_INDUCING = 128


def _check_inducing(value: object, name: str) -> Any:
    """An inducing-point count (int >= 1) or an (M, d) array of finite inputs."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(
            f"{name} must be a count of inducing inputs or an (M, d) array, got {value}"
        )
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = int(value)  # (a count written 128.0)
    if isinstance(value, (int, np.integer)):
        if value < 1:
            raise ValueError(f"{name} must be a count >= 1 or an (M, d) array, got {value}")
        return int(value)
    try:
        Z = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be a count of inducing inputs or an (M, d) array of them, "
            f"got {type(value).__name__}"
        ) from None
    if Z.ndim != 2 or Z.shape[0] < 1:
        raise ValueError(f"{name} must be an (M, d) array of inducing inputs, got shape {Z.shape}")
    if not np.all(np.isfinite(Z)):
        raise ValueError(f"{name} contains NaN or infinity")
    return Z


@engine_options
class SparseOptions(EngineOptions):
    """The options every sparse engine takes (its own options class subclasses this one,
    so these four come first, in this order)."""

    inducing: Any = option(
        None,
        _check_inducing,
        "The inducing inputs, an (M, d) array, or how many to choose: M training inputs by "
        f"k-means++ seeded by random_seed (None: min(n, {DEFAULT_INDUCING}); a count of n or "
        "more takes every training input).",
    )
    optimize_inducing: bool = option(
        False,
        check_flag,
        "Whether the inducing inputs' coordinates are hyperparameters (named inducing[j,k], "
        "differentiated, and fitted with the kernel's by optimize=True).",
    )
    jitter: float = option(
        1e-6,
        check_positive,
        "Relative jitter: K_uu + jitter * mean(diag K_uu) I (GPML's convention and value), "
        "held fixed when differentiating.",
    )
    random_seed: Any = option(
        None,
        check_random_seed,
        "Seeds the choice of inducing inputs (None: seed 0, so a fit is reproducible; "
        "gc.fit passes its own random_seed).",
    )


def choose_inducing(
    X: np.ndarray, inducing: int | np.ndarray | None, random_seed: Any = None
) -> np.ndarray:
    """The inducing inputs, shape (M, d): as given, or M training inputs by k-means++.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    inducing : int, ndarray of shape (M, d), or None
        None: min(n, :data:`DEFAULT_INDUCING`). A count of n or more takes every training
        input (a study's M = 512 on a data set of 500 cases: the sparse prior is then the
        full one up to the jitter).
    random_seed : int, Generator or None
        Seeds k-means++ (None: seed 0, so a fit is reproducible).
    """
    inducing = _check_inducing(inducing, "inducing")
    n, d = X.shape
    if isinstance(inducing, np.ndarray):
        if inducing.shape[1] != d:
            raise ValueError(
                f"inducing has {inducing.shape[1]} columns but X has {d}: inducing inputs "
                "live in the input space"
            )
        return inducing
    M = min(n, DEFAULT_INDUCING if inducing is None else inducing)
    if M == n:
        return X.copy()
    from sklearn.cluster import kmeans_plusplus

    rng = np.random.default_rng(0 if random_seed is None else random_seed)
    seed = int(rng.integers(2**31 - 1))
    _, index = kmeans_plusplus(X, M, random_state=seed)
    return X[np.sort(index)].copy()


def bound_gradient(
    post: InducingPosterior,
    gamma: Callable[[slice, np.ndarray], np.ndarray],
    g2: np.ndarray,
    mean_gradient: float | None,
) -> np.ndarray:
    """The SVGP bound's gradient in the hyperparameters at fixed q (binary and multi-class).

    With g1 = dE/dmu, g2 = dE/dvar and a_i the columns of V = L^-1 K_uf, the bound moves
    by dELBO = <dV, Gamma> + sum_i g2_i d k_ii, where ``gamma(rows, V)`` gives Gamma's
    columns for a block of V (a sum over the latent functions for C classes, ``g2`` their
    summed g2), and dV = L^-1 dK_uf - L^-1 dL V with dL = L Phi(L^-1 dK_uu L^-T) (Phi: the
    lower triangle, its diagonal halved), so <dV, Gamma> = <dK_uf, L^-T Gamma>
    - <dK_uu, L^-T sym(Phi(Gamma V^T)) L^-1>; the kernel contracts each
    (:meth:`Kernel.cross_gradient_terms`). ``mean_gradient`` (d/dm, or None) and the
    inducing inputs' part (``post.optimize_inducing``) follow the kernel's.
    """
    prior, kernel, X = post.prior, post.kernel, post.X
    L = prior.L_uu
    theta = kernel.diag_gradient(X) @ g2
    dZ = np.zeros_like(post.inducing, dtype=float)
    GVt = np.zeros_like(L)
    for i, V in prior.blocks():
        Gamma = gamma(i, V)
        GVt += Gamma @ V.T
        LGamma = solve_lower_transpose(L, Gamma).T
        t, z = kernel.cross_gradient_terms(X[i], post.inducing, LGamma)
        theta += t
        dZ += z
    Phi = np.tril(GVt)
    Phi[np.diag_indices_from(Phi)] *= 0.5
    Psi = 0.5 * (Phi + Phi.T)
    D = solve_lower_transpose(L, solve_lower_transpose(L, Psi).T)  # L^-T Psi L^-1
    t, z = kernel.cross_gradient_terms(post.inducing, post.inducing, -D)
    grads = [theta + t]
    if mean_gradient is not None:
        grads.append([mean_gradient])
    if post.optimize_inducing:
        grads.append((dZ + 2.0 * z).ravel())
    return np.concatenate(grads).astype(float)
