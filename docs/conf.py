"""Sphinx configuration of the gpc_compare documentation (``sphinx-build -W docs docs/_build``).

Sphinx with numpydoc and myst-nb, as scikit-learn, PyMC and ArviZ build theirs: the API
reference is generated from the numpy-style docstrings (numpydoc validates them, and a
malformed or missing one is a warning, so an error under ``-W``), and the tutorials are MyST
markdown notebooks that myst-nb executes at every build, so an example that breaks fails the
build.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MPLBACKEND", "Agg")

import gpc_compare  # noqa: E402

project = "gpc_compare"
author = "the gpc_compare developers"
copyright = "2026, the gpc_compare developers"
release = gpc_compare.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_nb",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
# engines/_options: generated lists, included by the engine pages, not pages of their own
exclude_patterns = ["_build", "jupyter_execute", "**.ipynb_checkpoints", "engines/_options"]
root_doc = "index"

# API reference: one page per public name, generated from the docstrings
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
# a docstring numpydoc cannot parse is a warning (an error under -W); that every public
# name and method has one is checked by tests/docs/test_docstrings.py, which, unlike
# numpydoc's GL08, lets an override inherit its base class's docstring
templates_path = ["_templates"]

# tutorials: executed at every build, in order, failing the build on an error
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_timeout = 300
nb_execution_show_tb = True
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3

html_theme = "pydata_sphinx_theme"
html_title = "gpc_compare"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
html_static_path: list[str] = []

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _api import write_api_pages  # noqa: E402
from _options import write_option_pages  # noqa: E402

write_api_pages(Path(__file__).resolve().parent / "api")
write_option_pages(Path(__file__).resolve().parent / "engines" / "_options")

from _results import write_results_pages  # noqa: E402

write_results_pages(Path(__file__).resolve().parent / "results")
