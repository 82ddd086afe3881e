"""Bundled real data sets for binary GP classification, and fold-wise standardisation.

Every loader returns a :class:`Dataset` with labels ``y`` in {0, 1} (the class named in
``positive_class`` is 1) and the inputs exactly as published: no preprocessing is
applied here. Standardise inside each training fold with :func:`standardize`, so no
information from a test fold leaks into the fit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sklearn.datasets
from sklearn.preprocessing import StandardScaler

__all__ = ["Dataset", "load_breast_cancer", "standardize"]


@dataclass(frozen=True)
class Dataset:
    """A binary classification data set.

    Attributes
    ----------
    name : str
        Short name, e.g. ``"breast_cancer"``.
    X : ndarray, shape (n, d)
        Inputs, unscaled.
    y : ndarray of int, shape (n,)
        Labels in {0, 1}; 1 is ``positive_class``.
    feature_names : list of str
        One name per column of ``X``.
    description : str
        Provenance, size, class balance and the preprocessing expected.
    positive_class : str
        The class coded 1 (the +1 class of the classifier).
    negative_class : str
        The class coded 0 (the -1 class of the classifier).
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    feature_names: list[str]
    description: str
    positive_class: str = "positive"
    negative_class: str = "negative"

    @property
    def n_samples(self) -> int:
        """Number of cases n."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of inputs d."""
        return int(self.X.shape[1])


def load_breast_cancer() -> Dataset:
    """The Wisconsin diagnostic breast cancer data (shipped inside scikit-learn).

    n = 569 fine-needle aspirates, d = 30 real-valued features (mean, standard error
    and worst value of ten nucleus measurements such as radius, texture and
    concavity), from :func:`sklearn.datasets.load_breast_cancer` (no download).

    Class balance: 212 malignant / 357 benign. The positive class is **malignant**:
    ``y = 1`` is malignant and ``y = 0`` benign. (scikit-learn codes it the other way
    round, 0 = malignant; it is recoded here.)

    Preprocessing: none. The features span very different scales (areas in the
    hundreds, smoothness near 0.1), so standardise them per training fold with
    :func:`standardize` before fitting an isotropic kernel.

    Returns
    -------
    Dataset
        ``name="breast_cancer"``, ``positive_class="malignant"``.
    """
    raw = sklearn.datasets.load_breast_cancer()
    target_names = [str(t) for t in raw.target_names]  # ['malignant', 'benign']
    malignant = target_names.index("malignant")
    y = (np.asarray(raw.target) == malignant).astype(int)
    return Dataset(
        name="breast_cancer",
        X=np.asarray(raw.data, dtype=float),
        y=y,
        feature_names=[str(f) for f in raw.feature_names],
        description=(
            "Wisconsin diagnostic breast cancer (scikit-learn): n=569, d=30, "
            "212 malignant (y=1) / 357 benign (y=0); unscaled, standardise per training fold."
        ),
        positive_class="malignant",
        negative_class="benign",
    )


def standardize(X_train: np.ndarray, X_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scale both folds to zero mean and unit variance using the training fold's statistics.

    Parameters
    ----------
    X_train : array_like, shape (n, d)
        Training inputs; their column means and standard deviations define the scaling.
    X_test : array_like, shape (m, d)
        Test inputs, transformed with the training statistics (never refitted).

    Returns
    -------
    X_train_scaled, X_test_scaled : ndarray
        The scaled arrays. A constant training column is centred but left unscaled.
    """
    X_train = np.asarray(X_train, dtype=float)
    X_test = np.asarray(X_test, dtype=float)
    if X_train.ndim != 2 or X_test.ndim != 2 or X_train.shape[1] != X_test.shape[1]:
        raise ValueError(
            "X_train and X_test must be 2-D with the same number of columns, got shapes "
            f"{X_train.shape} and {X_test.shape}"
        )
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), scaler.transform(X_test)
