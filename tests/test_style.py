"""The code base is ruff-clean, and its imports run one way.

ruff is a test dependency (the ``test`` extra), so these tests never skip. The import
graph is read from the source with ``ast``: a module may import only modules of its own
layer or a lower one, and nothing imports in a circle.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gpc_compare"
LINTED = ["gpc_compare", "tests", "benchmarks", "studies", "scripts"]

#: The layers, lowest first: the model's parts, the posterior forms, what the engines use,
#: the engines, hyperparameter fitting, the entry points, the study runner, its report,
#: and the command line with the package root.
LAYERS = [
    {"numerics", "_validation", "provenance", "_convergence"},
    {"kernels", "likelihoods", "datasets", "metrics"},
    {"posterior"},
    {"diagnostics", "annealing"},
    {"engines"},
    {"hyperparameters", "evidence", "trust"},
    {"_fit", "estimator", "_loo"},
    {"study"},
    {"report"},
    {"cli", "cli_compare", "__main__", "__init__", "comparison"},
]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, *LINTED], cwd=ROOT, capture_output=True, text=True
    )


def test_ruff_check_is_clean() -> None:
    out = _ruff("check")
    assert out.returncode == 0, out.stdout + out.stderr


def test_ruff_format_is_clean() -> None:
    out = _ruff("format", "--check")
    assert out.returncode == 0, out.stdout + out.stderr


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path, root: Path = ROOT) -> set[str]:
    """The modules of ``path``'s own top-level package that it imports (absolute names),
    ``if TYPE_CHECKING:`` blocks included."""
    name = _module_name(path, root)
    top = name.split(".")[0]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == top)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != top:
                continue
            # ``from . import kernels`` imports the submodule kernels
            for alias in node.names:
                candidate = f"{module}.{alias.name}"
                out.add(candidate if _exists(candidate, root) else module)
    return out


def _exists(module: str, root: Path = ROOT) -> bool:
    path = root.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _graph(package: Path = PACKAGE, root: Path = ROOT) -> dict[str, set[str]]:
    graph = {_module_name(p, root): _imports(p, root) for p in sorted(package.rglob("*.py"))}
    return {m: {i for i in imps if i != m} for m, imps in graph.items()}


def _layer(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    for k, layer in enumerate(LAYERS):
        if top in layer:
            return k
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in tests/test_style.py")


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """An import cycle of ``graph`` (module -> modules it imports), or None.

    A package's ``__init__`` may re-export its own submodules: that is not a cycle.
    """
    edges = {
        m: {i for i in imps if not (m == i.rpartition(".")[0] and i.startswith(m + "."))}
        for m, imps in graph.items()
    }
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for i in sorted(edges.get(m, ())):
            if state.get(i) == 1:
                return stack[stack.index(i) :] + [i]
            if state.get(i) is None and i in edges:
                found = visit(i)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_every_module_has_a_layer() -> None:
    for module in _graph():
        _layer(module)


def test_imports_never_reach_a_higher_layer() -> None:
    wrong = [
        f"{m} (layer {_layer(m)}) imports {i} (layer {_layer(i)})"
        for m, imps in _graph().items()
        for i in sorted(imps)
        if _layer(i) > _layer(m)
    ]
    assert not wrong, "\n".join(wrong)


def test_nothing_below_the_root_imports_the_root() -> None:
    wrong = [m for m, imps in _graph().items() if "gpc_compare" in imps and _layer(m) < 9]
    assert not wrong, wrong


def test_imports_have_no_cycles() -> None:
    cycle = _find_cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_import_checks_see_a_cycle_and_a_re_export(tmp_path: Path) -> None:
    """The checker itself, on a package written here: a and b import each other (also under
    TYPE_CHECKING, and relatively), and __init__ re-exports both (not a cycle)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .a import f\nfrom .b import g\n")
    (pkg / "a.py").write_text("from . import b\n\ndef f():\n    return b.g\n")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from pkg.a import f\n"
    )
    graph = _graph(pkg, tmp_path)
    assert graph == {"pkg": {"pkg.a", "pkg.b"}, "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}}
    assert _find_cycle(graph) == ["pkg.a", "pkg.b", "pkg.a"]
    (pkg / "b.py").write_text("def g():\n    return 1\n")
    assert _find_cycle(_graph(pkg, tmp_path)) is None
    # and on the real package: a relative import resolves to the module it names
    assert "gpc_compare.study.config" in _imports(PACKAGE / "study" / "jobs.py")
    assert "gpc_compare.engines" in _imports(PACKAGE / "study" / "config.py")


def test_no_module_is_over_600_lines() -> None:
    """The README's promise (a module that grows past it is split, not excepted)."""
    long = {
        str(p.relative_to(ROOT)): n
        for d in LINTED
        for p in (ROOT / d).rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 600
    }
    assert not long, long


#: The longest a function in gpc_compare/ may be, docstring excluded (GPflow's longest in
#: models/vgp.py is 52 lines, scikit-learn's _gpc.py ~90 with half of it docstring).
MAX_FUNCTION_LINES = 80


def _long_functions(package: Path = PACKAGE, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``path:line name (N lines)`` of every function longer than ``limit`` lines, its
    docstring excluded."""
    out = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            n = node.end_lineno - node.lineno + 1
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    n -= first.end_lineno - first.lineno + 1
            if n > limit:
                out.append(f"{path.relative_to(package.parent)}:{node.lineno} {node.name} ({n})")
    return out


def test_no_function_is_over_80_lines() -> None:
    long = _long_functions()
    assert not long, "\n".join(long)


def test_the_function_check_sees_a_long_function(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(81))
    doc = '    """' + "\n".join(["A docstring"] * 30) + '"""\n'
    (pkg / "a.py").write_text(f"def long():\n{body}\n\n\ndef short():\n{doc}    return 1\n")
    assert _long_functions(pkg) == ["pkg/a.py:1 long (82)"]


def test_no_fmt_skip_in_the_package() -> None:
    """The module cap is met by readable code, not by lines ``ruff format`` may not split."""
    marked = [
        f"{p.relative_to(ROOT)}:{k}"
        for p in sorted(PACKAGE.rglob("*.py"))
        for k, line in enumerate(p.read_text().splitlines(), 1)
        if "fmt: skip" in line or "fmt: off" in line
    ]
    assert not marked, marked


def test_no_module_is_over_600_lines_as_ruff_format_leaves_it(tmp_path: Path) -> None:
    """The package formatted afresh (with every ``# fmt: skip`` and ``# fmt: off`` removed):
    no module over 600 lines."""
    import shutil

    copy = tmp_path / "gpc_compare"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for p in copy.rglob("*.py"):
        text = p.read_text().replace("  # fmt: skip", "").replace("# fmt: off", "")
        p.write_text(text)
    out = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--line-length", "100", str(copy)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    long = {
        str(p.relative_to(tmp_path)): n
        for p in copy.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 600
    }
    assert not long, long
