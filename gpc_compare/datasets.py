"""The classic GP-classification benchmarks, offline, and synthetic problems with a known truth.

Real data sets (all read from files inside the package or inside scikit-learn; nothing is
downloaded):

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
===============  =====  ==  ==========================  =====================================

Synthetic generators (``load(name, n=..., random_seed=...)``; deterministic in the seed,
``np.random.default_rng(random_seed)``); the first three carry their true p(y = 1 | x):

- ``ripley_mixture``: Ripley's (1994, 1996) two-class problem, each class an equal mixture
  of two bivariate normals (:data:`RIPLEY_MIXTURE`); Bayes error 8.93%.
- ``bishop_mixture``: the structure of Bishop's (2006, App. A, Figs. A.7 and 6.12)
  synthetic classification data, one class a single Gaussian and the other a mixture of
  two (:data:`BISHOP_MIXTURE`); Bayes error 9.93%. Bishop does not publish his
  parameters: these are ours (see the constant's documentation).
- ``logistic_1d``: seed 003's Example 2, x ~ N(0, 10^2), y ~ Bernoulli(sigma(w x)), w = 1.
- ``near_separable``: two classes split by a hyperplane with a margin, and optionally a
  few flipped labels, where the maximum-likelihood logistic fit diverges.

Conventions. Every loader returns a :class:`Dataset` with the inputs **exactly as
published** (no scaling, no column dropped unless asked) and integer labels ``y``: for a
binary set ``y`` in {0, 1} with ``y = 1`` the ``positive_class``; for Iris ``y`` in
{0, 1, 2} indexing ``class_names``. Standardise inside each training fold with
:func:`standardize`, so that nothing about a test fold leaks into the fit.

:func:`load` and :data:`DATASETS` reach every set by name; :func:`list_datasets` tabulates
them. Provenance, licences and checksums of the bundled CSV files are in
``gpc_compare/data/README.md``; ``scripts/extract_datasets.py`` regenerates them.
"""

from __future__ import annotations

import csv
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg
import sklearn.datasets
from sklearn.preprocessing import StandardScaler

from ._validation import check_count, check_X
from .numerics import LOG_2PI, log_sigmoid

__all__ = [
    "BISHOP_MIXTURE",
    "DATASETS",
    "RIPLEY_MIXTURE",
    "Dataset",
    "GaussianMixtureProblem",
    "MixtureComponent",
    "list_datasets",
    "load",
    "load_breast_cancer",
    "load_crabs",
    "load_digits_3v5",
    "load_ionosphere",
    "load_iris",
    "load_pima",
    "load_ripley_synth",
    "load_sonar",
    "make_bishop_mixture",
    "make_logistic_1d",
    "make_near_separable",
    "make_ripley_mixture",
    "standardize",
]


# --------------------------------------------------------------------------- Dataset
@dataclass(frozen=True, eq=False)
class Dataset:
    """A classification data set.

    Attributes
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

        Raises
        ------
        ValueError
            If the set has no known generating model (``true_log_proba is None``).
        """
        if self.true_log_proba is None:
            raise ValueError(f"data set {self.name!r} has no known true class probabilities")
        return np.exp(self.true_log_proba(X)[:, 1])


# --------------------------------------------------------------------------- files
def _read_csv(filename: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a CSV bundled in ``gpc_compare/data`` (works from a wheel)."""
    text = _read_text(filename)
    rows = list(csv.reader(text.splitlines()))
    return rows[0], rows[1:]


@cache
def _read_text(filename: str) -> str:
    return resources.files("gpc_compare").joinpath("data", filename).read_text(encoding="ascii")


def _columns(filename: str) -> dict[str, list[str]]:
    header, rows = _read_csv(filename)
    return {h: [r[j] for r in rows] for j, h in enumerate(header)}


def _floats(cols: Mapping[str, list[str]], names: Sequence[str]) -> np.ndarray:
    return np.array([[float(v) for v in cols[c]] for c in names], dtype=float).T


def _subset_mask(cols: Mapping[str, list[str]], subset: str, what: str) -> np.ndarray:
    sets = np.array(cols["set"])
    if subset == "all":
        return np.ones(sets.size, dtype=bool)
    if subset in ("train", "test"):
        return sets == subset
    raise ValueError(f"{what}: subset must be 'all', 'train' or 'test', got {subset!r}")


def _drop_constant(X: np.ndarray, names: list[str]) -> tuple[np.ndarray, list[str]]:
    keep = np.ptp(X, axis=0) > 0
    return X[:, keep], [n for n, k in zip(names, keep, strict=True) if k]


# --------------------------------------------------------------------------- real data
def load_breast_cancer() -> Dataset:
    """Wisconsin diagnostic breast cancer, malignant vs benign (scikit-learn's copy).

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


def load_ionosphere(drop_constant: bool = False) -> Dataset:
    """Johns Hopkins ionosphere radar returns, good vs bad (UCI; bundled CSV).

    n = 351 radar returns, d = 34: 17 pulse numbers, each a complex autocorrelation
    value given as two reals in [-1, 1] (Sigillito et al. 1989). Class balance:
    225 good / 126 bad. The positive class is **good** (UCI label ``g``, ``y = 1``);
    bad (``b``) is ``y = 0``.

    Columns ``V1``..``V34`` as published. ``V1`` is binary (0 or 1) and ``V2`` is zero in
    every row: it is kept by default, so that d = 34 as the GP literature counts it
    (e.g. Kuss and Rasmussen 2005); :func:`standardize` centres a constant column and
    leaves it at zero, where it adds nothing to a stationary kernel's distances.
    ``drop_constant=True`` removes it (d = 33). No missing values.

    Source: UCI Machine Learning Repository (CC BY 4.0), the file as shipped in Orange3
    3.40.0, identical to R mlbench 2.1-3's ``Ionosphere`` (see ``data/README.md``).

    Parameters
    ----------
    drop_constant : bool
        Drop the all-zero column ``V2``.

    Returns
    -------
    Dataset
        ``name="ionosphere"``, ``positive_class="good"``.
    """
    cols = _columns("ionosphere.csv")
    names = [f"V{i}" for i in range(1, 35)]
    X = _floats(cols, names)
    if drop_constant:
        X, names = _drop_constant(X, names)
    y = (np.array(cols["class"]) == "g").astype(int)
    return Dataset(
        name="ionosphere",
        X=X,
        y=y,
        feature_names=names,
        description=(
            f"Ionosphere radar returns (UCI): n=351, d={X.shape[1]}, 225 good (y=1) / 126 bad "
            "(y=0); values in [-1, 1], V1 binary, V2 constant zero"
            + (" (dropped)" if drop_constant else " (kept)")
            + "; standardise per training fold."
        ),
        class_names=("bad", "good"),
    )


def load_sonar() -> Dataset:
    """Gorman and Sejnowski's sonar returns, mine vs rock (UCI; bundled CSV).

    n = 208 sonar returns, d = 60: the energy in 60 frequency bands of a chirp bounced
    off a metal cylinder or a rock, each in [0, 1] (Gorman and Sejnowski 1988). Class
    balance: 111 mine / 97 rock. The positive class is **mine** (UCI label ``M``,
    ``y = 1``); rock (``R``) is ``y = 0``. Columns ``V1``..``V60`` as published (the
    first row begins 0.0200, 0.0371, 0.0428); no missing values, no preprocessing.

    Source: UCI Machine Learning Repository (CC BY 4.0), as shipped in R mlbench 2.1-3
    (see ``data/README.md``).

    Returns
    -------
    Dataset
        ``name="sonar"``, ``positive_class="mine"``.
    """
    cols = _columns("sonar.csv")
    names = [f"V{i}" for i in range(1, 61)]
    return Dataset(
        name="sonar",
        X=_floats(cols, names),
        y=(np.array(cols["class"]) == "M").astype(int),
        feature_names=names,
        description=(
            "Sonar, mines vs rocks (UCI): n=208, d=60 band energies in [0, 1], "
            "111 mine (y=1) / 97 rock (y=0); standardise per training fold."
        ),
        class_names=("rock", "mine"),
    )


_PIMA_FEATURES = ["npreg", "glu", "bp", "skin", "bmi", "ped", "age"]


def load_pima(subset: str = "all") -> Dataset:
    """Diabetes in Pima Indian women, diabetic vs not (R MASS Pima.tr + Pima.te; bundled CSV).

    The version of the GP literature (Ripley 1996; Williams and Barber 1998): the 532
    complete records of the NIDDK study, after Ripley dropped serum insulin (mainly
    missing) and the cases missing any other value. ``Pima.tr`` holds 200 of them (68
    diabetic), ``Pima.te`` the other 332 (109 diabetic): 177 diabetic / 355 not in all.
    The positive class is **diabetic** (MASS ``type == "Yes"``, ``y = 1``).

    d = 7: ``npreg`` (pregnancies), ``glu`` (plasma glucose, 2 h oral glucose tolerance
    test), ``bp`` (diastolic blood pressure, mm Hg), ``skin`` (triceps skin fold, mm),
    ``bmi``, ``ped`` (diabetes pedigree function), ``age`` (years). No missing values:
    none of the zeros that code "missing" in the 768-case UCI file is in this version
    (that version is not shipped).

    Parameters
    ----------
    subset : {"all", "train", "test"}
        All 532 cases (``Pima.tr`` first), or Ripley's split: 200 training, 332 test.

    Returns
    -------
    Dataset
        ``name="pima"``, ``positive_class="diabetic"``.
    """
    cols = _columns("pima.csv")
    mask = _subset_mask(cols, subset, "load_pima")
    X = _floats(cols, _PIMA_FEATURES)[mask]
    y = (np.array(cols["type"]) == "Yes").astype(int)[mask]
    n, n_pos = int(mask.sum()), int(y.sum())
    return Dataset(
        name="pima",
        X=X,
        y=y,
        feature_names=list(_PIMA_FEATURES),
        description=(
            f"Pima Indian diabetes (R MASS Pima.tr + Pima.te, subset {subset!r}): n={n}, d=7, "
            f"{n_pos} diabetic (y=1) / {n - n_pos} not (y=0); complete cases, serum insulin "
            "dropped; standardise per training fold."
        ),
        class_names=("not diabetic", "diabetic"),
    )


_CRABS_FEATURES = ["FL", "RW", "CL", "CW", "BD"]


def load_crabs(target: str = "sex") -> Dataset:
    """Leptograpsus crabs, male vs female from five measurements (R MASS crabs; bundled CSV).

    n = 200 crabs of the species *Leptograpsus variegatus* (Campbell and Mahon 1974),
    50 of each sex in each of two colour forms. d = 5 measurements in mm: ``FL`` frontal
    lobe, ``RW`` rear width, ``CL`` carapace length, ``CW`` carapace width, ``BD`` body
    depth. The colour form is not an input.

    The task is the one of the GP-classification literature (Williams and Barber 1998):
    **sex**, 100 male (``y = 1``, the positive class) / 100 female (``y = 0``).
    ``target="species"`` predicts the colour form instead: 100 orange (``O``, ``y = 1``)
    / 100 blue (``B``, ``y = 0``). No missing values; the measurements are unscaled and
    strongly correlated through the crab's size (standardise per training fold).

    Parameters
    ----------
    target : {"sex", "species"}
        What ``y`` codes.

    Returns
    -------
    Dataset
        ``name="crabs"``, ``positive_class="male"`` (or ``"orange"``).
    """
    cols = _columns("crabs.csv")
    if target == "sex":
        y = (np.array(cols["sex"]) == "M").astype(int)
        names, what = ("female", "male"), "100 male (y=1) / 100 female (y=0)"
    elif target == "species":
        y = (np.array(cols["sp"]) == "O").astype(int)
        names, what = ("blue", "orange"), "100 orange (y=1) / 100 blue (y=0)"
    else:
        raise ValueError(f"load_crabs: target must be 'sex' or 'species', got {target!r}")
    return Dataset(
        name="crabs",
        X=_floats(cols, _CRABS_FEATURES),
        y=y,
        feature_names=list(_CRABS_FEATURES),
        description=(
            f"Leptograpsus crabs (R MASS), task {target}: n=200, d=5 measurements (mm), "
            f"{what}; standardise per training fold."
        ),
        class_names=names,
        info={"target": target},
    )


def load_digits_3v5(drop_constant: bool = False) -> Dataset:
    """Handwritten 3s vs 5s, 8x8 pixels: the small stand-in for USPS 3 vs 5 (scikit-learn).

    The 3s and 5s of :func:`sklearn.datasets.load_digits` (UCI optdigits test set: 8x8
    blocks of counts 0-16 of a 32x32 bitmap). n = 365: 183 threes / 182 fives. The
    positive class is **3** (``y = 1``), as in R&W's USPS 3s-vs-5s experiment (sec.
    3.7.3; GPML's ``loadBinaryUSPS(3, 5)`` makes the 3s +1); 5 is ``y = 0``.

    d = 64 pixel counts ``pixel_0_0``..``pixel_7_7``, as published. Ten pixels are zero in
    every 3 and every 5 (the left edge at rows 0 and 3-7, the right edge at rows 2-5:
    ``pixel_0_0``, ``pixel_3_0``..``pixel_7_0``, ``pixel_2_7``..``pixel_5_7``); they are
    kept by default and :func:`standardize` centres them and leaves them at zero.
    ``drop_constant=True`` removes them (d = 54).

    Parameters
    ----------
    drop_constant : bool
        Drop the pixels that are constant over the 365 images.

    Returns
    -------
    Dataset
        ``name="digits_3v5"``, ``positive_class="3"``.
    """
    raw = sklearn.datasets.load_digits()
    keep = np.isin(raw.target, (3, 5))
    X = np.asarray(raw.data, dtype=float)[keep]
    y = (np.asarray(raw.target)[keep] == 3).astype(int)
    names = [str(f) for f in raw.feature_names]
    if drop_constant:
        X, names = _drop_constant(X, names)
    return Dataset(
        name="digits_3v5",
        X=X,
        y=y,
        feature_names=names,
        description=(
            f"Digits 3 vs 5 (scikit-learn 8x8 digits): n=365, d={X.shape[1]} pixel counts "
            "0-16, 183 threes (y=1) / 182 fives (y=0); 10 pixels constant zero"
            + (" (dropped)" if drop_constant else " (kept)")
            + "; standardise per training fold."
        ),
        class_names=("5", "3"),
    )


_IRIS_CLASSES = ("setosa", "versicolor", "virginica")


def _iris_key(name: str) -> str:
    """'petal length (cm)', 'Petal.Length' and 'petal_length' are the same feature."""
    key = str(name).lower().replace("(cm)", "")
    for sep in "._-":
        key = key.replace(sep, " ")
    return " ".join(key.split())


def load_iris(
    features: Sequence[str | int] | None = None,
    classes: Sequence[str] | None = None,
    positive: str | None = None,
) -> Dataset:
    """Fisher's (Anderson's) iris flowers, three species (scikit-learn's copy).

    n = 150 flowers, 50 each of setosa / versicolor / virginica (``y`` = 0, 1, 2 in that
    order). d = 4: sepal length, sepal width, petal length, petal width (cm). No
    preprocessing. (scikit-learn's copy follows Fisher's paper, which differs from the
    UCI file in two values.)

    Parameters
    ----------
    features : sequence of str or int, optional
        Columns to keep, by index or by name. Names may be scikit-learn's
        (``"petal length (cm)"``), R's (``"Petal.Length"``) or ``"petal_length"``. Seed
        002's demo uses ``("Petal.Length", "Petal.Width")``. Default: all four.
    classes : sequence of str, optional
        Keep only these species, coded 0, 1, ... in the order given: two names give a
        binary set whose positive class is the second, e.g.
        ``classes=("versicolor", "virginica")`` (50 / 50).
    positive : str, optional
        One species against the other two: a binary set with ``y = 1`` for this species
        (50 / 100), as in per-class probability maps. Not together with ``classes``.

    Returns
    -------
    Dataset
        ``name="iris"``; three classes unless ``classes`` or ``positive`` makes it binary.
    """
    raw = sklearn.datasets.load_iris()
    X = np.asarray(raw.data, dtype=float)
    y = np.asarray(raw.target, dtype=int)
    all_names = [str(f) for f in raw.feature_names]
    if features is not None:
        if isinstance(features, str):
            features = [features]
        keys = [_iris_key(n) for n in all_names]
        idx = []
        for f in features:
            if isinstance(f, int | np.integer) and not isinstance(f, bool):
                if not 0 <= f < len(all_names):
                    raise ValueError(f"load_iris: feature index {f} is not in 0..3")
                idx.append(int(f))
            elif _iris_key(f) in keys:
                idx.append(keys.index(_iris_key(f)))
            else:
                raise ValueError(f"load_iris: unknown feature {f!r}; the features are {all_names}")
        if not idx or len(set(idx)) != len(idx):
            raise ValueError(f"load_iris: features must be distinct and non-empty, got {features}")
        X, all_names = X[:, idx], [all_names[i] for i in idx]
    if classes is not None and positive is not None:
        raise ValueError("load_iris: give classes or positive, not both")
    names: tuple[str, ...] = _IRIS_CLASSES
    if classes is not None:
        classes = [classes] if isinstance(classes, str) else list(classes)
        unknown = [c for c in classes if c not in _IRIS_CLASSES]
        if unknown or len(set(classes)) != len(classes) or len(classes) < 2:
            raise ValueError(
                f"load_iris: classes must be two or three distinct species of "
                f"{list(_IRIS_CLASSES)}, got {classes}"
            )
        codes = [_IRIS_CLASSES.index(c) for c in classes]
        keep = np.isin(y, codes)
        X, y = X[keep], np.array([codes.index(v) for v in y[keep]], dtype=int)
        names = tuple(classes)
    elif positive is not None:
        if positive not in _IRIS_CLASSES:
            raise ValueError(f"load_iris: positive must be one of {list(_IRIS_CLASSES)}")
        y = (y == _IRIS_CLASSES.index(positive)).astype(int)
        names = (f"not {positive}", positive)
    counts = " / ".join(
        f"{k} {c}" for c, k in zip(names, np.bincount(y, minlength=len(names)), strict=True)
    )
    return Dataset(
        name="iris",
        X=X,
        y=y,
        feature_names=all_names,
        description=f"Iris (scikit-learn): n={y.size}, d={X.shape[1]}, {counts}; unscaled (cm).",
        class_names=names,
    )


# --------------------------------------------------------------------------- mixtures
class MixtureComponent(NamedTuple):
    """One bivariate normal of a class-conditional mixture."""

    weight: float
    mean: tuple[float, float]
    cov: tuple[tuple[float, float], tuple[float, float]]


@dataclass(frozen=True, eq=False)
class GaussianMixtureProblem:
    """Two classes whose class-conditional densities p(x | y = k) are Gaussian mixtures.

    Everything the Bayes-optimal classifier needs is exact: the posterior (Bishop eq.
    1.82 / 4.57) p(y = 1 | x) = sigma(a), a = log pi_1 p(x | 1) - log pi_0 p(x | 0),
    computed from log densities (log-sum-exp over components), so it stays accurate
    where one class's density underflows.

    Attributes
    ----------
    name : str
    components : tuple of two tuples of MixtureComponent
        The mixture of class 0, then of class 1 (weights summing to one within a class).
    prior : float
        p(y = 1).
    bayes_error : float
        The Bayes error, integral of min(pi_0 p(x | 0), pi_1 p(x | 1)) dx, computed once
        by quadrature on a fine grid (documented where the constant is defined).
    """

    name: str
    components: tuple[tuple[MixtureComponent, ...], tuple[MixtureComponent, ...]]
    prior: float
    bayes_error: float

    def class_log_density(self, X: np.ndarray) -> np.ndarray:
        """log p(x | y = k) for k = 0, 1, shape (m, 2)."""
        X = check_X(X, n_features=2)
        out = np.empty((X.shape[0], 2))
        for k, comps in enumerate(self.components):
            terms = [np.log(c.weight) + _mvn_logpdf(X, c.mean, c.cov) for c in comps]
            out[:, k] = np.logaddexp.reduce(np.stack(terms), axis=0)
        return out

    def log_proba(self, X: np.ndarray) -> np.ndarray:
        """log p(y = k | x) for k = 0, 1, shape (m, 2) (Bayes' rule in log space)."""
        a = self.class_log_density(X) + np.log([1.0 - self.prior, self.prior])
        return a - np.logaddexp(a[:, :1], a[:, 1:])

    def proba(self, X: np.ndarray) -> np.ndarray:
        """The Bayes posterior p(y = 1 | x), shape (m,); the optimal boundary is p = 0.5."""
        return np.exp(self.log_proba(X)[:, 1])

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """n i.i.d. draws (x, y): y ~ Bernoulli(prior), a component by its weight, then x."""
        y = (rng.random(n) < self.prior).astype(int)
        X = np.empty((n, 2))
        for k, comps in enumerate(self.components):
            idx = np.flatnonzero(y == k)
            which = rng.choice(len(comps), size=idx.size, p=[c.weight for c in comps])
            for j, c in enumerate(comps):
                rows = idx[which == j]
                L = np.linalg.cholesky(np.asarray(c.cov))
                X[rows] = np.asarray(c.mean) + rng.standard_normal((rows.size, 2)) @ L.T
        return X, y

    def bayes_error_monte_carlo(
        self, n: int = 100_000, random_seed: int = 0
    ) -> tuple[float, float]:
        """Monte Carlo estimate of the Bayes error and its standard error.

        Averages min(p(y=1|x), p(y=0|x)) over x drawn from the model (the conditional
        error of the Bayes rule at x), which has a far smaller variance than counting
        its mistakes on sampled labels.
        """
        X, _ = self.sample(check_count(n, "n", minimum=2), np.random.default_rng(random_seed))
        e = np.exp(np.min(self.log_proba(X), axis=1))
        return float(e.mean()), float(e.std(ddof=1) / np.sqrt(e.size))


def _mvn_logpdf(X: np.ndarray, mean: Sequence[float], cov: Sequence[Sequence[float]]) -> np.ndarray:
    """log N(x | mean, cov) row by row, through the Cholesky factor of cov."""
    L = np.linalg.cholesky(np.asarray(cov, dtype=float))
    z = scipy.linalg.solve_triangular(L, (X - np.asarray(mean)).T, lower=True)
    d = X.shape[1]
    return -0.5 * np.sum(z * z, axis=0) - np.sum(np.log(np.diag(L))) - 0.5 * d * LOG_2PI


_RIPLEY_COV = ((0.03, 0.0), (0.0, 0.03))

#: Ripley's (1994; 1996, sec. 1.2) synthetic two-class problem, the model behind MASS's
#: ``synth.tr``/``synth.te``: equal priors; each class an equal mixture of two bivariate
#: normals with covariance 0.03 I, centred at (-0.7, 0.3) and (0.3, 0.3) for class 0 and
#: at (-0.3, 0.7) and (0.4, 0.7) for class 1. (Checked against the shipped data: a
#: two-component fit per class to the 1250 points recovers these centres to 0.02 and
#: variances 0.029-0.033; the Bayes rule makes 80 errors on the 1000 points of synth.te,
#: the 8.0% usually quoted, e.g. "the Bayes error is around 8%", Tipping 2001.) The
#: Bayes error of the model itself is 0.0893265 (midpoint-grid quadrature on
#: [-2.5, 2.5]^2: 0.0893282, 0.0893270, 0.0893266 at steps 0.004, 0.002, 0.001, converging
#: as step^2, extrapolated), i.e. 8.93%.
RIPLEY_MIXTURE = GaussianMixtureProblem(
    name="ripley_mixture",
    components=(
        (
            MixtureComponent(0.5, (-0.7, 0.3), _RIPLEY_COV),
            MixtureComponent(0.5, (0.3, 0.3), _RIPLEY_COV),
        ),
        (
            MixtureComponent(0.5, (-0.3, 0.7), _RIPLEY_COV),
            MixtureComponent(0.5, (0.4, 0.7), _RIPLEY_COV),
        ),
    ),
    prior=0.5,
    bayes_error=0.0893265,
)

#: A problem with the structure of Bishop's synthetic classification data (PRML App. A,
#: Fig. A.7; the data of Fig. 6.12's GP classifier): equal priors, class 0 ("blue") a
#: single Gaussian, class 1 ("red") an equal mixture of two. Bishop does not publish the
#: parameters, so these are ours, chosen to give a curved Bayes boundary and a similar
#: overlap: class 0 ~ N((0, -0.5), diag(1, 0.3)); class 1 ~ 0.5 N((-1.2, 0.8),
#: [[0.4, 0.2], [0.2, 0.4]]) + 0.5 N((1.2, 0.8), [[0.4, -0.2], [-0.2, 0.4]]). Bayes error
#: 0.0992874 (grid quadrature on [-6, 6]^2; steps 0.004 and 0.002 agree to 1e-8).
BISHOP_MIXTURE = GaussianMixtureProblem(
    name="bishop_mixture",
    components=(
        (MixtureComponent(1.0, (0.0, -0.5), ((1.0, 0.0), (0.0, 0.3))),),
        (
            MixtureComponent(0.5, (-1.2, 0.8), ((0.4, 0.2), (0.2, 0.4))),
            MixtureComponent(0.5, (1.2, 0.8), ((0.4, -0.2), (-0.2, 0.4))),
        ),
    ),
    prior=0.5,
    bayes_error=0.0992874,
)


def _mixture_dataset(problem: GaussianMixtureProblem, n: int, random_seed: int) -> Dataset:
    n = check_count(n, "n", minimum=1)
    X, y = problem.sample(n, np.random.default_rng(random_seed))
    n1 = int(y.sum())
    return Dataset(
        name=problem.name,
        X=X,
        y=y,
        feature_names=["x1", "x2"],
        description=(
            f"{problem.name} (synthetic, random_seed={random_seed}): n={n}, d=2, {n1} class 1 "
            f"(y=1) / {n - n1} class 0 (y=0), drawn i.i.d. from the model; "
            f"Bayes error {problem.bayes_error:.4f}."
        ),
        class_names=("class 0", "class 1"),
        kind="synthetic",
        true_log_proba=problem.log_proba,
        bayes_error=problem.bayes_error,
        info={"problem": problem, "random_seed": random_seed},
    )


def make_ripley_mixture(n: int = 250, random_seed: int = 0) -> Dataset:
    """Ripley's synthetic two-class mixture, freshly drawn, with its Bayes posterior.

    n i.i.d. draws from :data:`RIPLEY_MIXTURE` (d = 2; equal priors, so the class counts
    are Binomial(n, 1/2)). ``true_log_proba`` is the exact log p(y = k | x), so the
    Bayes-optimal boundary (p = 0.5) and error (8.93%) are known. Default n = 250, the
    size of MASS's ``synth.tr``.

    Parameters
    ----------
    n : int
        Number of cases.
    random_seed : int
        Seed of ``np.random.default_rng``.

    Returns
    -------
    Dataset
        ``name="ripley_mixture"``, ``kind="synthetic"``.
    """
    return _mixture_dataset(RIPLEY_MIXTURE, n, random_seed)


def make_bishop_mixture(n: int = 200, random_seed: int = 0) -> Dataset:
    """A two-class mixture shaped like Bishop's Fig. 6.12 data, with its Bayes posterior.

    n i.i.d. draws from :data:`BISHOP_MIXTURE` (d = 2; equal priors): class 0 a single
    Gaussian, class 1 an equal mixture of two, as Bishop (2006, App. A) describes his
    synthetic classification data; the parameters are ours (Bishop does not publish
    his). ``true_log_proba`` gives the exact log p(y = k | x), hence the Bayes-optimal
    boundary (Fig. 6.12's green curve) and error (9.93%). For Ripley's published model
    use :func:`make_ripley_mixture`.

    Parameters
    ----------
    n : int
        Number of cases.
    random_seed : int
        Seed of ``np.random.default_rng``.

    Returns
    -------
    Dataset
        ``name="bishop_mixture"``, ``kind="synthetic"``.
    """
    return _mixture_dataset(BISHOP_MIXTURE, n, random_seed)


def load_ripley_synth(subset: str = "all") -> Dataset:
    """Ripley's synthetic data as published (R MASS synth.tr + synth.te; bundled CSV).

    The fixed draws from :data:`RIPLEY_MIXTURE` used throughout the literature: 250
    training cases (125 per class) and 1000 test cases (500 per class), d = 2 (``xs``,
    ``ys``), class ``yc`` in {0, 1} (``y = yc``). The generating model is known, so
    ``true_log_proba`` and ``bayes_error`` (0.0893) are attached; the Bayes rule makes 33
    errors on synth.tr and 80 (8.0%) on synth.te.

    Parameters
    ----------
    subset : {"all", "train", "test"}
        All 1250 cases (synth.tr first), or synth.tr (250) or synth.te (1000).

    Returns
    -------
    Dataset
        ``name="ripley_synth"``, ``kind="synthetic"``.
    """
    cols = _columns("synth.csv")
    mask = _subset_mask(cols, subset, "load_ripley_synth")
    y = np.array([int(v) for v in cols["yc"]])[mask]
    n, n1 = int(mask.sum()), int(y.sum())
    return Dataset(
        name="ripley_synth",
        X=_floats(cols, ["xs", "ys"])[mask],
        y=y,
        feature_names=["xs", "ys"],
        description=(
            f"Ripley's synthetic data (R MASS synth.tr + synth.te, subset {subset!r}): n={n}, "
            f"d=2, {n1} class 1 (y=1) / {n - n1} class 0 (y=0); Bayes error of the model "
            f"{RIPLEY_MIXTURE.bayes_error:.4f}."
        ),
        class_names=("class 0", "class 1"),
        kind="synthetic",
        true_log_proba=RIPLEY_MIXTURE.log_proba,
        bayes_error=RIPLEY_MIXTURE.bayes_error,
        info={"problem": RIPLEY_MIXTURE, "subset": subset},
    )


# --------------------------------------------------------------------------- other generators
def make_logistic_1d(
    n: int = 500, w: float = 1.0, x_scale: float = 10.0, random_seed: int = 0
) -> Dataset:
    """Seed 003's Example 2: labels from a logistic model without bias, x ~ N(0, 10^2).

    x_i ~ N(0, x_scale^2) and y_i ~ Bernoulli(sigma(w x_i)), i = 1..n (Bishop eq. 4.87
    with phi(x) = x). With w = 1 and x_scale = 10 most |w x| are large, so the labels are
    nearly deterministic away from 0 and the likelihood of w is sharply peaked: the
    example of a posterior for which the Laplace approximation is good.
    ``true_log_proba`` gives log sigma(-w x) and log sigma(w x) exactly.

    Parameters
    ----------
    n : int
        Number of cases (500 in the seed).
    w : float
        The true weight.
    x_scale : float
        Standard deviation of x (positive).
    random_seed : int
        Seed of ``np.random.default_rng``; x is drawn first, then the labels.

    Returns
    -------
    Dataset
        ``name="logistic_1d"``, ``kind="synthetic"``, X of shape (n, 1).
    """
    n = check_count(n, "n", minimum=1)
    w = float(w)
    if not np.isfinite(w):
        raise ValueError(f"w must be a finite number, got {w!r}")
    if not (np.isfinite(x_scale) and x_scale > 0):
        raise ValueError(f"x_scale must be a positive number, got {x_scale!r}")
    rng = np.random.default_rng(random_seed)
    x = rng.normal(0.0, x_scale, size=n)
    # y = 1 with probability sigma(w x), decided in log space: log u < log sigma(w x)
    y = (np.log(rng.random(n)) < log_sigmoid(w * x)).astype(int)

    def true_log_proba(X: np.ndarray) -> np.ndarray:
        f = w * check_X(X, n_features=1)[:, 0]
        return np.column_stack([log_sigmoid(-f), log_sigmoid(f)])

    n1 = int(y.sum())
    return Dataset(
        name="logistic_1d",
        X=x[:, None],
        y=y,
        feature_names=["x"],
        description=(
            f"Logistic model (seed 003, Example 2; random_seed={random_seed}): n={n}, d=1, "
            f"x ~ N(0, {x_scale:g}^2), y ~ Bernoulli(sigma({w:g} x)); {n1} y=1 / {n - n1} y=0."
        ),
        kind="synthetic",
        true_log_proba=true_log_proba,
        info={"w": w, "x_scale": float(x_scale), "random_seed": random_seed},
    )


def make_near_separable(
    n: int = 100, d: int = 2, margin: float = 0.25, flip: int = 0, random_seed: int = 0
) -> Dataset:
    """Two classes split by a hyperplane with a margin, and optionally a few flipped labels.

    Construction: a unit normal vector w (a random direction); x_i ~ N(0, I_d); the
    first n - n // 2 cases are put in class 1 and the rest in class 0, a case on the
    wrong side of the hyperplane w.x = 0 being reflected across it (which keeps x's
    distribution); then every case is pushed margin / 2 away from the hyperplane along w.
    So the classes are balanced and, with ``flip = 0``, linearly separable with a gap of
    width ``margin``: the maximum-likelihood logistic regression does not exist (the
    likelihood keeps growing as |w| -> infinity), and for GP classification the Laplace
    and EP evidence want an ever larger signal variance. ``flip`` labels, chosen at
    random, are then swapped (their indices are in ``info["flipped"]``), making the set
    non-separable but only just.

    Parameters
    ----------
    n : int
        Number of cases (at least 2).
    d : int
        Input dimension.
    margin : float
        Width of the empty band around the hyperplane (>= 0).
    flip : int
        Number of labels to flip (0 <= flip <= n).
    random_seed : int
        Seed of ``np.random.default_rng``.

    Returns
    -------
    Dataset
        ``name="near_separable"``, ``kind="synthetic"``; ``info`` holds ``w`` (the unit
        normal), ``margin`` and ``flipped``.
    """
    n = check_count(n, "n", minimum=2)
    d = check_count(d, "d", minimum=1)
    flip = check_count(flip, "flip", minimum=0)
    if flip > n:
        raise ValueError(f"flip must be at most n = {n}, got {flip}")
    if not (np.isfinite(margin) and margin >= 0):
        raise ValueError(f"margin must be a non-negative number, got {margin!r}")
    rng = np.random.default_rng(random_seed)
    w = rng.standard_normal(d)
    w /= np.linalg.norm(w)
    X = rng.standard_normal((n, d))
    y = (np.arange(n) < n - n // 2).astype(int)
    side = np.where(y == 1, 1.0, -1.0)
    s = X @ w
    wrong = s * side < 0
    X[wrong] -= 2.0 * np.outer(s[wrong], w)  # reflect across w.x = 0
    X += np.outer(side * margin / 2.0, w)  # open the gap
    flipped = np.sort(rng.choice(n, size=flip, replace=False))
    y[flipped] = 1 - y[flipped]
    return Dataset(
        name="near_separable",
        X=X,
        y=y,
        feature_names=[f"x{i + 1}" for i in range(d)],
        description=(
            f"Near-separable (synthetic, random_seed={random_seed}): n={n}, d={d}, classes "
            f"split by a hyperplane with a gap of {margin:g}, {flip} label(s) flipped."
        ),
        kind="synthetic",
        info={"w": w, "margin": float(margin), "flipped": flipped, "random_seed": random_seed},
    )


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
    "ripley_mixture": make_ripley_mixture,
    "bishop_mixture": make_bishop_mixture,
    "logistic_1d": make_logistic_1d,
    "near_separable": make_near_separable,
}

_GENERATORS = frozenset({"ripley_mixture", "bishop_mixture", "logistic_1d", "near_separable"})


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
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), scaler.transform(X_test)
