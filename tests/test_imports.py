"""``import gpc_compare`` and ``gpc-compare --help`` load no heavy library (issue 34).

Each check runs in a fresh interpreter, so what it sees in ``sys.modules`` is what the
import itself loaded; the names are imported on first use (``gpc_compare.__getattr__``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Libraries that take seconds to import and that neither the import nor --help needs.
HEAVY = ("pymc", "pytensor", "arviz", "matplotlib", "dask", "distributed", "numba", "xarray")
HEAVY += ("sklearn", "pandas", "scipy")

_LOADED = (
    f"import json, sys; heavy = set({HEAVY!r}); "
    "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & heavy)))"
)


def _loaded(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\n" + _LOADED],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_loads_no_heavy_library() -> None:
    assert _loaded("import gpc_compare") == []


def test_help_loads_no_heavy_library() -> None:
    code = (
        "import contextlib, io\n"
        "from gpc_compare.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    try:\n"
        "        main(['--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "assert 'compare' in out.getvalue()"
    )
    assert _loaded(code) == []


def test_names_are_imported_on_first_use() -> None:
    import gpc_compare as gc
    from gpc_compare._fit import fit
    from gpc_compare.comparison import compare

    assert gc.fit is fit and gc.compare is compare
    assert gc.kernels.__name__ == "gpc_compare.kernels"
    assert set(gc.__all__) <= set(dir(gc))
    try:
        gc.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


def test_the_help_choices_are_the_librarys() -> None:
    from gpc_compare import cli_compare
    from gpc_compare.datasets.files import CATEGORICAL, MISSING
    from gpc_compare.study.config import LIKELIHOODS
    from gpc_compare.study.problem import KERNELS

    assert cli_compare.CATEGORICAL_CHOICES == tuple(CATEGORICAL)
    assert cli_compare.MISSING_CHOICES == tuple(MISSING)
    assert cli_compare.LIKELIHOOD_CHOICES == tuple(LIKELIHOODS)
    assert cli_compare.KERNEL_CHOICES == tuple(KERNELS)


def test_no_submodule_shadows_a_public_name() -> None:
    """Importing a submodule binds it on the package: one named like a public function
    (a module ``gpc_compare/loo.py`` beside the function ``gc.loo``) would replace the
    function for everyone once anything imported the module. With every submodule
    imported, no public name of ``_LAZY`` is a module."""
    code = (
        "import importlib, pkgutil, types, gpc_compare as gc\n"
        "for m in pkgutil.walk_packages(gc.__path__, 'gpc_compare.'):\n"
        "    if not m.name.endswith('__main__'):\n"
        "        importlib.import_module(m.name)\n"
        "print([n for n in gc._LAZY if isinstance(getattr(gc, n), types.ModuleType)])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "[]"
