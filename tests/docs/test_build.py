"""The documentation builds with no warning, and its tutorials run.

``sphinx-build -W`` turns every warning into an error: a broken cross-reference, a
docstring numpydoc cannot read, a page outside the table of contents, a tutorial cell that
raises (myst-nb executes every tutorial at every build). External links are not checked
here (no network at test time); internal ones are, by the build.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = ["first_fit", "own_data", "iris", "reading_a_report"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs") / "html"
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONWARNINGS": "ignore::FutureWarning"}
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q"]
    done = subprocess.run(
        [*command, "-b", "html", str(ROOT / "docs"), str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    return out


def test_every_public_name_has_an_api_page(site: Path) -> None:
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        api = importlib.import_module("_api")
    finally:
        sys.path.remove(str(ROOT / "docs"))
    seen: dict[int, str] = {}
    missing = []
    for module_name, _ in api.MODULES:
        names, _ = api.public_names(module_name, seen)
        for name in names:
            if not (site / "api" / "generated" / f"{module_name}.{name}.html").exists():
                missing.append(f"{module_name}.{name}")
    assert not missing


@pytest.mark.parametrize("tutorial", TUTORIALS)
def test_the_tutorials_ran_and_show_their_output(site: Path, tutorial: str) -> None:
    html = (site / "tutorials" / f"{tutorial}.html").read_text()
    assert "cell_output" in html  # myst-nb's container for what a cell printed
    assert "Traceback" not in html


# the explanation page of each registered engine (docs/engines/)
ENGINE_PAGES = {
    "laplace": "laplace",
    "ep": "ep",
    "kl": "variational",
    "vb": "variational",
    "fitc_laplace": "sparse",
    "fitc_ep": "sparse",
    "svgp": "sparse",
    "mcmc": "mcmc",
}


def test_every_engine_page_lists_its_options(site: Path) -> None:
    import gpc_compare as gc

    assert set(ENGINE_PAGES) == set(gc.engines.registered())
    missing = []
    for name, page in ENGINE_PAGES.items():
        html = (site / "engines" / f"{page}.html").read_text()
        for option, _, _ in gc.engines.get_engine(name).Options.describe():
            if f'<span class="pre">{option}</span>' not in html:
                missing.append(f"{name}.{option}")
    assert not missing


def test_every_study_s_finding_has_a_results_page_with_its_figures(site: Path) -> None:
    readmes = sorted((ROOT / "results").glob("*/**/README.md"))
    assert len(readmes) >= 10
    for readme in readmes:
        name = "__".join(readme.parent.relative_to(ROOT / "results").parts)
        html = (site / "results" / f"{name}.html").read_text()
        figures = readme.read_text().count("![")
        assert html.count("<img") >= figures, name


def test_the_readme_s_ten_lines_are_the_executed_first_fit(site: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    code = readme.split("## Ten lines\n\n```python\n")[1].split("```")[0]
    page = (ROOT / "docs" / "getting_started.md").read_text()
    assert "```{code-cell} python\n" + code + "```" in page  # (executed by the build)
    html = (site / "getting_started.html").read_text()
    assert "cell_output" in html and "Traceback" not in html
