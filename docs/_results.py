"""Write the results pages (``docs/results/*.md``) from the committed studies' READMEs.

Run by ``conf.py`` at every build, so the site shows each study's finding and figures as
``results/`` holds them (whose numbers ``tests/findings/`` recomputes from the tables):
a figure's path is rewritten to point into ``results/``, and a link to a file there (a
table, another page) becomes its repository path, since the site holds no copy of it.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"


def _page(readme: Path, out: Path) -> str:
    """The text of one study's page: its README with paths made to work from ``out``."""
    text = readme.read_text(encoding="utf-8")
    folder = readme.parent
    up = Path("..") / ".." / folder.relative_to(ROOT)  # (docs/results/NAME.md -> repo root)

    def image(match: re.Match) -> str:
        target = match.group(2)
        if re.match(r"https?://", target):
            return match.group(0)
        return f"![{match.group(1)}]({(up / target).as_posix()})"

    def link(match: re.Match) -> str:
        label, target = match.group(1), match.group(2)
        if re.match(r"https?://", target) or target.startswith("#"):
            return match.group(0)
        path = (folder / target.split("#")[0]).resolve()
        try:
            shown = path.relative_to(ROOT).as_posix()
        except ValueError:
            shown = target
        return label if label.startswith("`") else f"{label} (`{shown}`)"

    text = re.sub(r"!\[([^\]]*)\]\(([^)]+)\)", image, text)
    text = re.sub(r"(?<!!)\[([^\]]+)\]\(([^)]+)\)", link, text)
    source = readme.relative_to(ROOT).as_posix()
    lines = text.splitlines()
    title = next((i for i, line in enumerate(lines) if line.startswith("# ")), None)
    note = f"*From `{source}` in the repository.*"
    if title is None:
        return f"# {folder.name}\n\n{note}\n\n{text}"
    lines.insert(title + 1, f"\n{note}")
    return "\n".join(lines) + "\n"


def write_results_pages(out: Path) -> list[str]:
    """One page per committed study README under ``results/``; the index; their names."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    names = []
    for readme in sorted(RESULTS.glob("**/README.md")):
        if readme.parent == RESULTS:
            continue  # (the overview becomes the index below)
        name = "__".join(readme.parent.relative_to(RESULTS).parts)
        (out / f"{name}.md").write_text(_page(readme, out), encoding="utf-8")
        names.append(name)
    overview = _page(RESULTS / "README.md", out)
    overview = overview.replace("# Results\n", "# Results: what the studies found\n", 1)
    toc = "\n\n```{toctree}\n:maxdepth: 1\n:hidden:\n\n" + "\n".join(names) + "\n```\n"
    (out / "index.md").write_text(overview + toc, encoding="utf-8")
    return names
