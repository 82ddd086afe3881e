"""The real data sets: CSV files shipped in ``gpc_compare/data`` and scikit-learn's copies.

Every loader returns the inputs **exactly as published** (no scaling, no column dropped
unless asked); provenance, licences and checksums of the CSV files are in
``gpc_compare/data/README.md`` (``scripts/extract_datasets.py`` regenerates them). The
files are read with :mod:`importlib.resources`, so they are found inside a wheel too.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources

import numpy as np
import sklearn.datasets

from ._dataset import Dataset
from .synthetic import RIPLEY_MIXTURE

__all__ = [
    "load_breast_cancer",
    "load_crabs",
    "load_digits_3v5",
    "load_ionosphere",
    "load_iris",
    "load_pima",
    "load_ripley_synth",
    "load_sonar",
]


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
        (``"petal length (cm)"``), R's (``"Petal.Length"``) or ``"petal_length"``. The Iris
        GP-classification lecture demo uses ``("Petal.Length", "Petal.Width")``. Default: all four.
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
