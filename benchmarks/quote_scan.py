"""Where the documentation quotes a time: the scan behind ``benchmarks/quoted_times.py``.

The files a user reads are scanned for times ("about 3 minutes", "2m53s", "0.05 s a fit",
"about five minutes"): the README, ``docs/`` (its pages, and the strings of its build
scripts), ``results/README.md`` (the studies' index, with each one's time), the strings of
every module of ``gpc_compare`` (docstrings, option documentation, command-line help,
messages: read with :mod:`ast`, so comments are not scanned), the study scripts' strings and
the study files (comments included: they describe the study).
``tests/docs/test_quoted_times.py`` holds every match to an entry of the registry
(``benchmarks/quote_registry.py``), which says how the time is measured.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40,
    "fifty": 50, "sixty": 60,
}  # fmt: skip
_VAGUE = (
    r"\b(?:a few|a couple of|several) (?:seconds|minutes|min|hours)\b"
    r"|\b(?:in|under|within|about|takes?|took) (?:a|one) (?:second|minute|hour)\b"
    r"|\ba minute\b|\ban hour\b"
)
_UNITS = {
    "microseconds": 1e-6, "microsecond": 1e-6, "ms": 1e-3, "s": 1.0, "second": 1.0,
    "seconds": 1.0, "min": 60.0, "mins": 60.0, "minute": 60.0,
    "minutes": 60.0, "hour": 3600.0, "hours": 3600.0,
}  # fmt: skip
_NUMBER = r"\d+(?:,\d{3})*(?:\.\d+)?|" + "|".join(_WORDS)
_UNIT = r"microseconds?|ms|s(?!\.e\.)|seconds?|min(?!\()|mins|minutes?|hours?"
#: A time: a number (digits or a word) and a unit ("40 s", "five minutes", "14-minute"),
#: "2m53s" / "1h40m", or a vague amount ("a few minutes", "in a second").
TIME = re.compile(
    rf"(?<![\w.])(?:~\s?)?(?:{_NUMBER})[ -](?:CPU[ -])?(?:{_UNIT})\b"
    r"|\b\d+m\d+s\b|\b\d+h\d+m\b"
    rf"|{_VAGUE}",
    re.IGNORECASE,
)


#: What a string must hold to hold a time (a cheap filter before the scan).
_MAYBE = re.compile(r"\d|second|minute|hour", re.IGNORECASE)


@dataclass(frozen=True)
class Match:
    """One quoted time: the file (relative to the root), the text it was found in
    (whitespace collapsed) and the match's span there."""

    file: str
    text: str
    start: int
    end: int

    @property
    def quote(self) -> str:
        return self.text[self.start : self.end]

    def context(self, width: int = 50) -> str:
        return self.text[max(0, self.start - width) : self.end + width]


def normalise(text: str) -> str:
    """Whitespace collapsed, and a comment's continuation marker (``#`` opening a line, as
    in the README's shell block and a TOML file's comments) dropped, so a phrase broken
    across lines reads as one."""
    text = re.sub(r"\n[ \t]*#+[ \t]*", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def _strings(path: Path) -> list[str]:
    """Every string constant of a Python file (docstrings, help, messages; f-strings'
    literal parts), not its comments."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


#: Folders of docs/ that the build writes (docs/.gitignore): generated from the pages, the
#: docstrings and results/ scanned here, and absent from a fresh clone.
_GENERATED_DOCS = ("_build", "api", "jupyter_execute", "engines/_options", "results")


def _generated(relative: Path) -> bool:
    return any(relative.as_posix().startswith(f"{folder}/") for folder in _GENERATED_DOCS)


def scanned_files(root: Path = ROOT) -> list[Path]:
    """The files a user reads, in a fixed order."""
    files = [root / "README.md"]
    files += sorted(
        p
        for p in (root / "docs").rglob("*")
        if p.suffix in {".md", ".py", ".ipynb"} and not _generated(p.relative_to(root / "docs"))
    )
    files += sorted((root / "gpc_compare").rglob("*.py"))
    files += sorted((root / "gpc_compare").rglob("*.md"))
    files += sorted((root / "studies").glob("*.py")) + sorted((root / "studies").glob("*.toml"))
    files += sorted((root / "examples").glob("*.md"))
    files += [root / "results" / "README.md"]  # (the index, written by hand; the studies'
    # own pages are written by their code from the runs they record)
    return [p for p in files if "_build" not in p.parts and ".ipynb_checkpoints" not in p.parts]


@functools.cache
def texts(path: Path) -> tuple[str, ...]:
    """The scanned texts of one file, normalised: a Python file's strings, a notebook's
    cells, any other file whole."""
    if path.suffix == ".py":
        raw = re.sub(r"[\"']\s*[rbfuRBFU]{0,2}[\"']", "", path.read_text())  # ("a" "b": "ab")
        if not TIME.search(normalise(raw)):  # (no time anywhere: not parsed)
            return ()
        return tuple(normalise(s) for s in _strings(path) if _MAYBE.search(s))
    if path.suffix == ".ipynb":
        import json

        cells = json.loads(path.read_text())["cells"]
        return tuple(normalise("".join(c["source"])) for c in cells)
    return (normalise(path.read_text()),)


def scan(root: Path = ROOT) -> list[Match]:
    """Every quoted time in the scanned files."""
    out = []
    for path in scanned_files(root):
        rel = path.relative_to(root).as_posix()
        for text in texts(path):
            out += [Match(rel, text, m.start(), m.end()) for m in TIME.finditer(text)]
    return out


def phrase_seconds(phrase: str) -> list[float]:
    """The times a phrase may state, in seconds: "2m53s" / "1h40m" forms, then each number
    with the first unit after it, or else the last before it ("45 and 57 minutes": 2700
    and 3420; "10 minutes for the splits, 15 for the grid": 600 and 900). A superset (the
    "2" of "on 2 cores" becomes a time too): a quote's seconds must be among them."""
    out = []
    for m in re.finditer(r"\b(\d+)m(\d+)s\b", phrase):
        out.append(60.0 * int(m[1]) + int(m[2]))
    for m in re.finditer(r"\b(\d+)h(\d+)m\b", phrase):
        out.append(3600.0 * int(m[1]) + 60.0 * int(m[2]))
    unit = rf"(?<![\w'])({_UNIT})\b"
    numbers = re.finditer(rf"(?<![\w.])({_NUMBER})\b(?![\w.]*\d)", phrase, re.IGNORECASE)
    for m in numbers:
        after = re.search(unit, phrase[m.end() :], re.IGNORECASE)
        before = re.findall(unit, phrase[: m.start()], re.IGNORECASE)
        if after is None and not before:
            continue
        word = m[1].lower()
        value = _WORDS[word] if word in _WORDS else float(word.replace(",", ""))
        out.append(value * _UNITS[(after[1] if after else before[-1]).lower()])
    return out
