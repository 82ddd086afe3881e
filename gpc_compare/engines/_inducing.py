"""What the sparse engines share: their options on the inducing inputs, and choosing them.

``inducing=M`` picks M training inputs by k-means++ seeding (Arthur and Vassilvitskii
2007; scikit-learn's ``kmeans_plusplus``), seeded by ``random_seed``: spread over the data,
each a training input. An (M, d) array gives them. ``optimize_inducing=True`` makes their
coordinates hyperparameters (``inducing[j,k]``), fitted with the kernel's by
``optimize=True``. ``jitter`` is relative: K_uu + jitter * mean(diag K_uu) I, the GPML
toolbox's convention (1e-6 there), held fixed when differentiating.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_flag, check_positive, check_random_seed

__all__ = ["DEFAULT_INDUCING", "SPARSE_OPTIONS", "SPARSE_OPTION_CHECKS", "choose_inducing"]

#: M when ``inducing`` is not given (or n, if smaller).
DEFAULT_INDUCING = 128

#: The options every sparse engine takes, with their defaults.
SPARSE_OPTIONS: dict[str, Any] = {
    "inducing": None,
    "optimize_inducing": False,
    "jitter": 1e-6,
    "random_seed": None,
}


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


#: How each sparse option is checked.
SPARSE_OPTION_CHECKS = {
    "inducing": _check_inducing,
    "optimize_inducing": check_flag,
    "jitter": check_positive,
    "random_seed": check_random_seed,
}


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
