"""Hardening: the files a run writes and the files it reads (issue 32, second part).

Each test reproduces one route an adversarial user took: a name in the output folder that
is a symbolic link to a file outside it (truncated or overwritten through the link), a
``compare`` refused by the lock that had already rewritten the running study's
``study.toml``, a ``report`` that replaced a table by its header, two data files of one
stem sharing one folder, and data or study files that gave a traceback (a damaged
``.csv.gz``, a folder or a FIFO, a header without rows, TOML nested 100,000 deep). Each
checks what happens now: nothing outside the output changes, nothing is written before the
lock, and a refusal exits 2 naming the file.
"""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

import gpc_compare as gc
from gpc_compare import study
from gpc_compare.cli import main
from gpc_compare.datasets.files import load_table
from gpc_compare.study.lock import output_lock
from gpc_compare.study.output import copy_results

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "crabs.csv"  # 50 crabs, 5 inputs, target "sex"
STUDY = """
name = "hard"
seed = 0
likelihood = "probit"
datasets = [{name = "crabs", subsample = 40}]

[hyperparameters]
policy = "fixed"

[splits]
kind = "kfold"
n_splits = 2
n_repeats = 1

[engines.laplace]
"""
PRECIOUS = b"precious: must not change\n"
COMPARE = ["--target", "sex", "--engines", "laplace", "--policy", "fixed", "--folds", "2"]
COMPARE += ["--repeats", "1"]


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry under ``root`` (not following links): a file's bytes, a link's target."""
    found: dict[str, bytes | str] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            key = str(path.relative_to(root))
            if path.is_symlink():
                found[key] = "-> " + os.readlink(path)
            elif path.is_file():
                found[key] = path.read_bytes()
    return found


def outside(tmp_path: Path) -> Path:
    """A folder outside the output: a file and a folder with a file, for links to aim at."""
    root = tmp_path / "outside"
    (root / "folder").mkdir(parents=True)
    (root / "file").write_bytes(PRECIOUS)
    (root / "folder" / "kept.txt").write_bytes(PRECIOUS)
    return root


def study_file(tmp_path: Path) -> Path:
    path = tmp_path / "studies" / "hard.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(STUDY)
    return path


def run(path: Path, out: Path, *extra: str) -> int:
    return main(["run", str(path), "--output", str(out), "--workers", "1", *extra])


# ------------------------------------------------- no write through a symbolic link
# (name in the study folder, what the link points at, the command's exit code)
LINKED_BY_RUN = [
    ("study.toml", "file", 0),
    ("run.json", "file", 0),
    ("results.csv", "file", 0),
    ("jobs.csv", "file", 0),
    ("jobs/RECORD.json", "file", 0),  # not JSON: set aside (the link renamed), recomputed
    (".lock", "file", 2),  # written in place: refused
    ("jobs", "folder", 2),  # files would land in it: refused
]


@pytest.mark.parametrize(("name", "target", "code"), LINKED_BY_RUN)
def test_a_run_never_writes_through_a_link_in_its_folder(tmp_path, capsys, name, target, code):
    """A `.lock`, `study.toml` or record that was a link to a file outside got that file
    truncated or overwritten. Now a file's name is replaced (a new file renamed over the
    link), and a link that would be written in place (the lock) or written into (`jobs/`)
    is refused, exit 2, naming it; the file outside never changes."""
    away = outside(tmp_path)
    before = snapshot(away)
    path = study_file(tmp_path)
    result_dir = tmp_path / "out" / "hard"
    record = study.expand(study.load_study(path))[0].id
    link = result_dir / name.replace("RECORD", record)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(away / target)
    assert run(path, tmp_path / "out", "--no-report") == code
    err = capsys.readouterr().err
    assert snapshot(away) == before
    if code == 2:
        assert f"{link}: it is a symbolic link (to {away / target})" in err
        assert "Traceback" not in err and link.is_symlink()
        assert not (result_dir / "results.csv").exists()
    else:
        assert not link.is_symlink() and link.is_file()  # the link itself was replaced
        assert len(pd.read_csv(result_dir / "results.csv")) == 14  # 2 splits x 7 metrics


def test_a_lock_file_that_is_a_hard_link_or_a_fifo_is_refused(tmp_path, capsys) -> None:
    """The lock is written in place (the pid of its holder): a `.lock` that is a second
    name of a file outside (a hard link) would change that file, and one that is not a
    regular file is no lock. Both are refused, exit 2, the file outside unchanged."""
    away = outside(tmp_path)
    before = snapshot(away)
    path = study_file(tmp_path)
    lock = tmp_path / "out" / "hard" / ".lock"
    lock.parent.mkdir(parents=True)
    os.link(away / "file", lock)
    assert run(path, tmp_path / "out", "--no-report") == 2
    assert f"{lock}: it is a hard link" in capsys.readouterr().err
    assert snapshot(away) == before
    lock.unlink()
    if hasattr(os, "mkfifo"):
        os.mkfifo(lock)
        assert run(path, tmp_path / "out", "--no-report") == 2
        assert f"{lock}: it is not a regular file" in capsys.readouterr().err


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished tiny study (2 Laplace jobs), for the report's files."""
    tmp = tmp_path_factory.mktemp("finished")
    assert run(study_file(tmp), tmp / "out", "--no-report") == 0
    return tmp / "out" / "hard"


@pytest.mark.parametrize(
    ("name", "target", "code"),
    [("report.md", "file", 0), ("figures/metrics.png", "file", 0), ("figures", "folder", 2)],
)
def test_the_report_never_writes_through_a_link(tmp_path, capsys, finished, name, target, code):
    """A `report.md` link got the file outside overwritten; a `figures/` link received the
    PNGs. Now the report's files replace their names, and a `figures/` link is refused."""
    away = outside(tmp_path)
    before = snapshot(away)
    result_dir = tmp_path / "hard"
    shutil.copytree(finished, result_dir)
    link = result_dir / name
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(away / target)
    assert main(["report", str(result_dir)]) == code
    assert snapshot(away) == before
    if code == 2:
        assert f"{link}: it is a symbolic link" in capsys.readouterr().err
    else:
        assert not link.is_symlink() and link.stat().st_size > 100


def test_an_inference_data_file_replaces_a_link(tmp_path, finished) -> None:
    """A sampler's InferenceData (``jobs/ID.nc``) is written before its record, by the same
    writer: a link at its name is replaced, the file outside untouched."""
    from gpc_compare.study.records import save_record

    away = outside(tmp_path)
    before = snapshot(away)
    record = next(iter(study.load_records(finished).values()))
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / f"{record.id}.nc").symlink_to(away / "file")
    saved = save_record(record.replace(netcdf=b"NetCDF bytes"), jobs)
    assert saved.idata == f"{record.id}.nc"
    assert (jobs / f"{record.id}.nc").read_bytes() == b"NetCDF bytes"
    assert not (jobs / f"{record.id}.nc").is_symlink()
    assert snapshot(away) == before


@pytest.mark.parametrize("name", ["study.toml", "run.json", "data.csv", "copy"])
def test_compare_never_writes_through_a_link(tmp_path, capsys, name) -> None:
    """`gpc-compare compare` writes `study.toml` and `run.json`, `gc.compare` also
    `data.csv`, and `Comparison.report(path)` copies the results to `path`: each replaces a
    link at a name, never writes through it."""
    away = outside(tmp_path)
    before = snapshot(away)
    df = pd.read_csv(EXAMPLE)
    crabs = (df.drop(columns="sex"), df["sex"])
    tiny = {"engines": ("laplace",), "policy": "fixed", "folds": 2, "n_repeats": 1, "workers": 1}
    if name == "data.csv":  # (gc.compare's folder: OUTPUT/NAME, name "compare")
        link = tmp_path / "out" / "compare" / name
        link.parent.mkdir(parents=True)
        link.symlink_to(away / "file")
        result = gc.compare(*crabs, output=tmp_path / "out", **tiny)
        assert result.run.failed == 0 and not link.is_symlink()
    elif name == "copy":
        result = gc.compare(*crabs, **tiny)
        link = tmp_path / "copy" / "study.toml"
        link.parent.mkdir()
        link.symlink_to(away / "file")
        (tmp_path / "copy" / "jobs").symlink_to(away / "folder")
        with pytest.raises(ValueError, match="jobs: it is a symbolic link"):
            result.report(tmp_path / "copy")
        (tmp_path / "copy" / "jobs").unlink()
        copy_results(result.result_dir, tmp_path / "copy")  # (the copy report() makes)
        assert (
            not link.is_symlink()
            and (result.result_dir / "study.toml").read_text() == link.read_text()
        )
    else:
        link = tmp_path / "out" / "crabs" / name
        link.parent.mkdir(parents=True)
        link.symlink_to(away / "file")
        args = ["compare", EXAMPLE, *COMPARE, "--output", tmp_path / "out", "--workers", "1"]
        assert main([*args, "--no-report"]) == 0, capsys.readouterr().err
        assert not link.is_symlink() and link.is_file()
    assert snapshot(away) == before


# ------------------------------------------------------------- the lock, then writes
def test_a_compare_or_run_refused_by_the_lock_writes_nothing(tmp_path, capsys) -> None:
    """A `compare` refused by the lock had already rewritten the running study's
    `study.toml` (and `run.json`). Now the lock is taken first: a refused `compare`, `run`
    or `gc.compare` leaves every file of the folder as it was."""
    out = tmp_path / "out"
    args = ["compare", EXAMPLE, *COMPARE, "--output", out, "--workers", "1", "--no-report"]
    assert main(args) == 0
    result_dir = out / "crabs"
    with output_lock(result_dir):  # a run holds the folder
        before = snapshot(result_dir)
        # another compare of the same file into the same folder, other settings
        other = [a if a != "laplace" else "laplace,ep" for a in args]
        assert main([*other, "--seed", "3"]) == 2
        assert "another run" in capsys.readouterr().err
        assert main(["run", str(result_dir / "study.toml"), "--output", str(out)]) == 2
        df = pd.read_csv(EXAMPLE)
        with pytest.raises(study.OutputBusy):
            gc.compare(df.drop(columns="sex"), df["sex"], engines=("laplace",), name="crabs",
                       output=out, workers=1)  # fmt: skip
        assert snapshot(result_dir) == before


def test_report_never_replaces_a_table_by_an_empty_one(tmp_path, capsys, finished) -> None:
    """`report` on a folder whose records could not be used exited 2 and rewrote
    `results.csv` to its header (38 rows lost in the issue). Now it exits 2 and leaves the
    table (and `jobs.csv`) as they were: records all damaged, or a `study.toml` none of
    whose jobs has finished."""
    for damage in ("records", "study"):
        result_dir = tmp_path / damage
        shutil.copytree(finished, result_dir)
        if damage == "records":
            for path in (result_dir / "jobs").glob("*.json"):
                path.write_text("{not json")
        else:  # another study's file in the folder (what the refused compare wrote)
            text = (result_dir / "study.toml").read_text()
            (result_dir / "study.toml").write_text(text.replace("n_splits = 2", "n_splits = 3"))
        before = snapshot(result_dir)
        assert main(["report", str(result_dir)]) == 2
        assert "nothing to report" in capsys.readouterr().err
        assert snapshot(result_dir) == before
        assert len(pd.read_csv(result_dir / "results.csv")) == 14


# ----------------------------------------------------- two data files, one folder
def test_two_data_files_of_one_stem_do_not_share_a_folder(tmp_path, capsys) -> None:
    """`compare a/data.csv` then `compare b/data.csv` into one --output shared `out/data`:
    the second replaced the first's study, table and report. Now the second exits 2 naming
    both files and the folder, leaving it as it was; --name gives it its own. The same data
    moved elsewhere (the same bytes) resumes, and an edited file at the same path is
    compared again."""
    df = pd.read_csv(EXAMPLE)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    df.to_csv(tmp_path / "a" / "data.csv", index=False)
    df.assign(FL=df.FL[::-1].to_numpy()).to_csv(tmp_path / "b" / "data.csv", index=False)
    out = tmp_path / "out"
    common = [*COMPARE, "--output", out, "--workers", "1", "--no-report"]
    assert main(["compare", tmp_path / "a" / "data.csv", *common]) == 0
    capsys.readouterr()
    before = snapshot(out)
    assert main(["compare", tmp_path / "b" / "data.csv", *common]) == 2
    err = capsys.readouterr().err
    assert f"{out / 'data'} holds the study of another data file, {tmp_path / 'a'}" in err
    assert str(tmp_path / "a" / "data.csv") in err and str(tmp_path / "b" / "data.csv") in err
    assert "--name" in err and "Traceback" not in err
    assert snapshot(out) == before
    with pytest.raises(SystemExit) as info:  # (compare takes one data file: a usage error)
        main(["compare", tmp_path / "a" / "data.csv", tmp_path / "b" / "data.csv", *common])
    assert info.value.code == 2 and snapshot(out) == before
    assert main(["compare", tmp_path / "b" / "data.csv", *common, "--name", "b_data"]) == 0
    # the same bytes at another path: the folder's own data, moved; every job found done
    shutil.copy(tmp_path / "a" / "data.csv", tmp_path / "moved.csv")
    os.replace(tmp_path / "moved.csv", tmp_path / "b" / "data.csv")
    (tmp_path / "a" / "data.csv").unlink()
    assert main(["compare", tmp_path / "b" / "data.csv", *common]) == 0
    assert "2 done earlier, 0 run now" in capsys.readouterr().out


def test_two_studies_of_one_name_in_one_run_are_refused(tmp_path, capsys) -> None:
    """One invocation: two study files of one name (the studies `compare` wrote for
    `a/data.csv` and `b/data.csv`, both `data`) would write to one folder. Refused before
    anything runs, naming both; one file given twice is one study. Two data files of one
    stem in one study are refused at load, naming both files."""
    paths = []
    for folder in ("a", "b"):
        path = tmp_path / folder / "data.toml"
        path.parent.mkdir()
        path.write_text(STUDY.replace('"hard"', '"data"'))
        paths.append(path)
    common = ["--output", str(tmp_path / "out"), "--workers", "1", "--no-report"]
    assert main(["run", paths[0], paths[1], *common]) == 2
    err = capsys.readouterr().err
    assert f"{paths[0]} and {paths[1]} are both study 'data'" in err
    assert not (tmp_path / "out").exists()
    assert main(["run", paths[0], paths[0], *common]) == 0
    for folder in ("a", "b"):
        shutil.copy(EXAMPLE, tmp_path / folder / "data.csv")
    both = tmp_path / "both.toml"
    both.write_text(
        'name = "both"\n[[datasets]]\nfile = "a/data.csv"\ntarget = "sex"\n[[datasets]]\n'
        'file = "b/data.csv"\ntarget = "sex"\n[engines.laplace]\n'
    )
    with pytest.raises(study.StudyError, match="names repeat") as info:
        study.load_study(both)
    assert f"{tmp_path / 'a' / 'data.csv'} as 'data'" in str(info.value)
    assert f"{tmp_path / 'b' / 'data.csv'} as 'data'" in str(info.value)


# ----------------------------------------------- a message, not a traceback, at load
def _gzip_damages(good: bytes) -> dict[str, bytes]:
    """A gzip CSV cut short (EOFError), damaged inside (zlib.error), with a wrong checksum
    and not gzip at all (gzip.BadGzipFile)."""
    inside = bytearray(good)
    inside[len(good) // 2 : len(good) // 2 + 16] = b"\xff" * 16
    checksum = bytearray(good)
    checksum[-6] ^= 0xFF
    return {
        "truncated": good[: len(good) // 2],
        "damaged": bytes(inside),
        "checksum": bytes(checksum),
        "not gzip": b"FL,sex\n1,M\n",
    }


def test_a_damaged_gzip_csv_is_refused_and_keeps_the_previous_study(tmp_path, capsys) -> None:
    """A truncated or damaged `.csv.gz` gave a traceback (EOFError, zlib.error) and had
    already rewritten the previous run's `study.toml`. Now: a ValueError naming the file
    (`load_table`, `load_study`), exit 2 on the command line, and the folder of the earlier
    run unchanged."""
    data = tmp_path / "crabs.csv.gz"
    data.write_bytes(gzip.compress(EXAMPLE.read_bytes()))
    out = tmp_path / "out"
    args = ["compare", data, *COMPARE, "--output", out, "--workers", "1", "--no-report"]
    assert main(args) == 0
    before = snapshot(out)
    for kind, damaged in _gzip_damages(data.read_bytes()).items():
        data.write_bytes(damaged)
        with pytest.raises(ValueError, match="cannot be read as a table") as info:
            load_table(data, "sex")
        assert str(info.value).startswith(f"{data}: "), kind
        with pytest.raises(study.StudyError, match="cannot be read as a table"):
            study.load_study(out / "crabs" / "study.toml")
        args2 = [*args[:5], "laplace,ep", *args[6:]]  # (other settings: a new study.toml)
        assert main(args2) == 2, kind
        err = capsys.readouterr().err
        assert f"{data}: cannot be read as a table" in err and "Traceback" not in err
        assert snapshot(out) == before, kind


def test_a_folder_a_fifo_or_a_header_without_rows_is_named_for_what_it_is(tmp_path, capsys):
    """A folder or a FIFO given as data said "no such file" (and reading a FIFO would wait
    forever); a CSV with a header and no rows said "non-numeric columns". Each is now
    refused for what it is, naming the file, before anything is read or written."""
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    header = tmp_path / "header.csv"
    header.write_text("FL,RW,CL,CW,BD,sex\n")
    cases = [(folder, "is a folder, not a data file"), (header, "has no rows, only a header")]
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo.csv"
        os.mkfifo(fifo)
        cases.append((fifo, "is not a regular file (a FIFO"))
    for path, message in cases:
        with pytest.raises(ValueError) as info:
            load_table(path, "sex")
        assert str(info.value).startswith(f"{path}: {message}")
        out = tmp_path / f"out_{path.stem}"
        assert main(["compare", path, *COMPARE, "--output", out]) == 2
        err = capsys.readouterr().err
        assert f"{path}: {message}" in err and "Traceback" not in err
        assert not out.exists()
    if hasattr(os, "mkfifo"):  # a study file that is a FIFO, too
        with pytest.raises(study.StudyError, match="not a regular file"):
            study.load_study(fifo)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a = " + "[" * 100_000 + "]" * 100_000, "nested too deep to read"),
        ("a = " + "{b = " * 100_000 + "1" + "}" * 100_000, "nested too deep to read"),
        ("[" + ".".join(["a"] * 100_000) + "]\nx = 1", "nested too deep for a study"),
        ("a" + ".a" * 100_000 + " = 1", "nested too deep for a study"),
    ],
    ids=["lists", "inline tables", "table header", "dotted key"],
)
def test_a_study_nested_100000_deep_is_refused(tmp_path, capsys, text, message) -> None:
    """A TOML file nested 100,000 deep gave a RecursionError; a table header or key of
    100,000 parts took Python's TOML reader 100 s (its time is quadratic in them), then
    the study's checks walked the fields by recursion. Each is a StudyError now, at once
    (exit 2), and so is such a mapping given in Python."""
    path = tmp_path / "deep.toml"
    path.write_text(text)
    with pytest.raises(study.StudyError, match=message):
        study.load_study(path)
    assert main(["run", str(path), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{path}: " in err and message in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()
    deep: dict = {"x": 1}
    for _ in range(100_000):
        deep = {"a": deep}
    with pytest.raises(study.StudyError, match="nested more than 32 deep"):
        study.StudyConfig.from_dict({"name": "deep", **deep})
