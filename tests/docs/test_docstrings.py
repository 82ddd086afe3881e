"""Every public name of the API reference has a docstring numpydoc can read.

The reference's pages are generated from the modules' ``__all__`` (docs/_api.py), so a
public name always gets a page; these tests make sure the page says something. An override
may inherit its base class's docstring (``inspect.getdoc``), as Python's ``help`` shows it;
numpydoc's own GL08 would not let it.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import warnings
from pathlib import Path

import pytest
from numpydoc.docscrape import ClassDoc, FunctionDoc
from numpydoc.validate import validate

ROOT = Path(__file__).resolve().parents[2]


def _api():
    spec = importlib.util.spec_from_file_location("_docs_api", ROOT / "docs" / "_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


API = _api()


def _public_objects() -> list[tuple[str, object]]:
    seen: dict[int, str] = {}
    out = []
    for module_name, _ in API.MODULES:
        names, _ = API.public_names(module_name, seen)
        module = importlib.import_module(module_name)
        out += [(f"{module_name}.{name}", getattr(module, name)) for name in names]
    return out


PUBLIC = _public_objects()
# every public function and class documents each of its parameters (numpydoc PR01), no
# parameter it does not take (PR02) and, a function, what it returns (RT01); a class's
# parameters are its constructor's (a dataclass's fields)
CALLABLES = [(name, obj) for name, obj in PUBLIC if inspect.isclass(obj) or callable(obj)]


def _methods(cls: type) -> list[tuple[str, object]]:
    """The public methods and properties a class defines itself."""
    out = []
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if callable(value) or isinstance(value, property | classmethod | staticmethod):
            out.append((name, getattr(cls, name)))
    return out


def test_the_reference_lists_the_package_s_public_names() -> None:
    names = {name for name, _ in PUBLIC}
    assert len(PUBLIC) > 150
    for expected in ["gpc_compare.fit", "gpc_compare.GPClassifier", "gpc_compare.kernels.Matern52"]:
        assert expected in names
    assert len(names) == len(PUBLIC), "one object, one page"


@pytest.mark.parametrize("name, obj", PUBLIC, ids=[name for name, _ in PUBLIC])
def test_every_public_name_and_method_has_a_docstring_numpydoc_reads(name, obj) -> None:
    if not (inspect.isclass(obj) or callable(obj)):
        return  # a constant: documented in its module's docstring
    assert inspect.getdoc(obj), f"{name} has no docstring"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpydoc warns on an unknown or malformed section
        if inspect.isclass(obj):
            ClassDoc(obj)
            for method, value in _methods(obj):
                assert inspect.getdoc(value), f"{name}.{method} has no docstring"
        else:
            FunctionDoc(obj)


def test_every_entry_point_is_checked_for_its_parameters() -> None:
    names = {name for name, _ in CALLABLES}
    assert len(CALLABLES) > 150
    for entry in ["fit", "compare", "loo", "psis", "GPClassifier"]:
        assert f"gpc_compare.{entry}" in names


@pytest.mark.parametrize("name, obj", CALLABLES, ids=[name for name, _ in CALLABLES])
def test_every_public_function_and_class_documents_its_parameters_and_return(name, obj) -> None:
    report = validate(f"{obj.__module__}.{obj.__qualname__}")
    codes = {"PR01", "PR02", "RT01"} - ({"RT01"} if inspect.isclass(obj) else set())
    problems = [f"{code}: {message}" for code, message in report["errors"] if code in codes]
    assert not problems, f"{name}: " + "; ".join(problems)


# the classes whose public methods are held to the same: what a fit, a diagnosis, an
# evidence estimate, a loader or a study returns, the kernels' and likelihoods' bases and
# the non-binary likelihoods
METHOD_CLASSES = [
    "gpc_compare.PSISDiagnosis",
    "gpc_compare.datasets.Dataset",
    "gpc_compare.evidence.EvidenceEstimate",
    "gpc_compare.kernels.Kernel",
    "gpc_compare.likelihoods.Likelihood",
    "gpc_compare.likelihoods.Softmax",
    "gpc_compare.likelihoods.MultinomialProbit",
    "gpc_compare.likelihoods.RobustMax",
    "gpc_compare.likelihoods.Gaussian",
    "gpc_compare.study.Job",
    "gpc_compare.study.JobRecord",
    "gpc_compare.GPClassifier",
    "gpc_compare.Posterior",
    "gpc_compare.GaussianPosterior",
    "gpc_compare.posterior.MulticlassPosterior",
    "gpc_compare.posterior.SamplePosterior",
    "gpc_compare.posterior.SoftmaxSamplePosterior",
    "gpc_compare.posterior.SparsePosterior",
]
METHODS = [
    (f"{name}.{method}", value)
    for name, obj in PUBLIC
    if name in METHOD_CLASSES
    for method, value in _methods(obj)
    if inspect.isfunction(value) or inspect.ismethod(value)  # (a classmethod: bound)
]


def test_every_class_named_for_its_methods_has_some() -> None:
    assert {name.rsplit(".", 1)[0] for name, _ in METHODS} == set(METHOD_CLASSES)


@pytest.mark.parametrize("name, obj", METHODS, ids=[name for name, _ in METHODS])
def test_their_public_methods_document_their_parameters_and_return(name, obj) -> None:
    report = validate(f"{obj.__module__}.{obj.__qualname__}")
    problems = [f"{c}: {m}" for c, m in report["errors"] if c in {"PR01", "PR02", "RT01"}]
    assert not problems, f"{name}: " + "; ".join(problems)


def test_the_docstring_check_sees_a_missing_parameter() -> None:
    report = validate(f"{__name__}._undocumented_parameter")
    assert "PR01" in {code for code, _ in report["errors"]}


def _undocumented_parameter(x: int, y: int) -> int:
    """Add two numbers.

    Parameters
    ----------
    x : int
        A number.

    Returns
    -------
    int
        The sum.
    """
    return x + y
