"""Write each engine's options (``docs/engines/_options/NAME.md``) from its options class.

Run by ``conf.py`` at every build, so the engine pages list exactly the options the
registry checks (``gc.engines.get_engine(name).Options.describe()``): a renamed option or a
changed default cannot leave a page stale. Sphinx-free: plain MyST markdown, included by
the engine pages with ``{include}``.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import gpc_compare as gc

# CommonMark lets a backslash escape any ASCII punctuation; these would otherwise start
# emphasis, code, links, HTML, table cells or (with dollarmath) math
_SPECIAL = re.compile(r"([\\`*_\[\]<>|$])")


def _escape(text: str) -> str:
    return _SPECIAL.sub(r"\\\1", text)


def options_markdown(name: str) -> str:
    """The options of the registered engine ``name`` as a MyST bullet list."""
    engine = gc.engines.get_engine(name)
    capabilities = ", ".join(f"`{c}`" for c in sorted(gc.engines.capabilities(name)))
    likelihoods = ", ".join(f"`{lik}`" for lik in sorted(engine.likelihoods))
    lines = [
        f"Likelihoods: {likelihoods}. Capabilities: {capabilities}.",
        "",
    ]
    for option, default, doc in engine.Options.describe():
        lines.append(f"- `{option}` (default `{default!r}`): {_escape(doc)}")
    return "\n".join(lines) + "\n"


def write_option_pages(folder: Path) -> None:
    """Write ``folder/NAME.md`` for every registered engine, replacing the folder."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name in gc.engines.registered():
        (folder / f"{name}.md").write_text(options_markdown(name), encoding="utf-8")
