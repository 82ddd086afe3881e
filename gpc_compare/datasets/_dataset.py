"""The :class:`Dataset` record every loader and generator of :mod:`gpc_compare.datasets` returns."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Dataset"]


@dataclass(frozen=True, eq=False)
class Dataset:
    """A classification data set.

    Parameters
    ----------
    name : str
        Short name, e.g. ``"breast_cancer"`` (the key in :data:`DATASETS`).
    X : ndarray, shape (n, d)
        Inputs, unscaled.
    y : ndarray of int, shape (n,)
        Labels: index into ``class_names``. For a binary set, ``y`` in {0, 1} and 1 is
        ``positive_class``.
    feature_names : list of str
        One name per column of ``X``.
    description : str
        Provenance, size, class balance and the preprocessing expected.
    positive_class, negative_class : str or None
        For a binary set, the classes coded 1 (the +1 class of the classifier) and 0
        (the -1 class). ``None`` for a set with more than two classes.
    class_names : tuple of str
        The name of class k at position k. Defaults to ``(negative_class,
        positive_class)`` for a binary set.
    kind : {"real", "synthetic"}
        Measured data, or data drawn from a known model.
    true_log_proba : callable or None
        For data drawn from a known model: ``X -> (m, 2)`` array of log p(y = k | x), the
        true (Bayes) posterior class probabilities, computed in log space.
    bayes_error : float or None
        The error rate of the Bayes-optimal rule (threshold p = 0.5) under that model.
    info : mapping
        Anything else a generator knows (its parameters, which labels it flipped).
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    feature_names: list[str]
    description: str
    positive_class: str | None = None
    negative_class: str | None = None
    class_names: tuple[str, ...] = ()
    kind: str = "real"
    true_log_proba: Callable[[np.ndarray], np.ndarray] | None = field(default=None, repr=False)
    bayes_error: float | None = None
    info: Mapping[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        X = np.asarray(self.X, dtype=float)
        y = np.asarray(self.y)
        if X.ndim != 2:
            raise ValueError(f"Dataset {self.name!r}: X must be 2-D, got shape {X.shape}")
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(
                f"Dataset {self.name!r}: y must be 1-D with one label per row of X, got "
                f"shapes {y.shape} and {X.shape}"
            )
        if not np.issubdtype(y.dtype, np.integer):
            if y.dtype.kind not in "bf" or not np.all(np.mod(y, 1) == 0):
                raise ValueError(f"Dataset {self.name!r}: y must hold integer class indices")
            y = y.astype(int)
        if len(self.feature_names) != X.shape[1]:
            raise ValueError(
                f"Dataset {self.name!r}: {len(self.feature_names)} feature names for "
                f"{X.shape[1]} columns"
            )
        names = tuple(str(c) for c in self.class_names)
        pos, neg = self.positive_class, self.negative_class
        if not names:
            names = (neg or "negative", pos or "positive")
        if len(names) == 2:
            if (pos is not None and pos != names[1]) or (neg is not None and neg != names[0]):
                raise ValueError(
                    f"Dataset {self.name!r}: class_names {names} disagree with "
                    f"negative_class={neg!r}, positive_class={pos!r}"
                )
            neg, pos = names
        elif pos is not None or neg is not None:
            raise ValueError(
                f"Dataset {self.name!r}: positive_class/negative_class only apply to a binary "
                f"set, this one has {len(names)} classes"
            )
        if y.size and (y.min() < 0 or y.max() >= len(names)):
            raise ValueError(
                f"Dataset {self.name!r}: labels must lie in 0..{len(names) - 1}, got "
                f"{np.unique(y)[:10].tolist()}"
            )
        if self.kind not in ("real", "synthetic"):
            raise ValueError(f"Dataset {self.name!r}: kind must be 'real' or 'synthetic'")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "feature_names", [str(f) for f in self.feature_names])
        object.__setattr__(self, "class_names", names)
        object.__setattr__(self, "positive_class", pos)
        object.__setattr__(self, "negative_class", neg)

    @property
    def n_samples(self) -> int:
        """Number of cases n."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of inputs d."""
        return int(self.X.shape[1])

    @property
    def n_classes(self) -> int:
        """Number of classes (2 for a binary set)."""
        return len(self.class_names)

    @property
    def class_counts(self) -> dict[str, int]:
        """Cases per class, in the order of ``class_names``."""
        counts = np.bincount(self.y, minlength=self.n_classes)
        return {c: int(k) for c, k in zip(self.class_names, counts, strict=True)}

    def true_proba(self, X: np.ndarray) -> np.ndarray:
        """The true p(y = 1 | x) of a synthetic binary set, shape (m,).

        Parameters
        ----------
        X : array_like, shape (m, d)
            Inputs, on the data set's own (unscaled) coordinates.

        Returns
        -------
        ndarray, shape (m,)

        Raises
        ------
        ValueError
            If the set has no known generating model (``true_log_proba is None``).
        """
        if self.true_log_proba is None:
            raise ValueError(f"data set {self.name!r} has no known true class probabilities")
        return np.exp(self.true_log_proba(X)[:, 1])
