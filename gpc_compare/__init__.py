"""gpc_compare: approximate inference for Gaussian-process classification, compared.

>>> import gpc_compare as gc
>>> k = gc.kernels.SquaredExponential(lengthscale=1.0, variance=1.0)
>>> post = gc.fit(X, y, method="laplace", kernel=k, likelihood="probit")  # doctest: +SKIP
>>> post.log_marginal_likelihood, post.predict_proba(Xs)                  # doctest: +SKIP
>>> gc.loo(post, "cavity").elpd                                           # doctest: +SKIP

See :mod:`gpc_compare.posterior` for the ``Posterior`` contract every engine honours.

The names below are imported on first use (PEP 562's module ``__getattr__``), so that
``import gpc_compare`` and ``gpc-compare --help`` do not load SciPy, scikit-learn,
pandas, xarray, Numba, PyMC, ArviZ, matplotlib or Dask before anything needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .provenance import __version__ as __version__

if TYPE_CHECKING:  # (what the names are, for type checkers and readers)
    from . import annealing, datasets, engines, evidence, kernels, likelihoods, metrics, numerics
    from ._fit import fit
    from ._loo import LOOResult, loo, loo_refits
    from .comparison import Comparison, compare
    from .estimator import GPClassifier
    from .hyperparameters import OptimizationResult
    from .posterior import Convergence, GaussianPosterior, Posterior
    from .trust import PSISDiagnosis, psis

#: Each public name and the module it comes from (a submodule where the two are one).
_LAZY = {
    "Comparison": "comparison",
    "Convergence": "posterior",
    "GPClassifier": "estimator",
    "GaussianPosterior": "posterior",
    "LOOResult": "_loo",
    "OptimizationResult": "hyperparameters",
    "PSISDiagnosis": "trust",
    "Posterior": "posterior",
    "compare": "comparison",
    "fit": "_fit",
    "loo": "_loo",
    "loo_refits": "_loo",
    "psis": "trust",
}
_SUBMODULES = (
    "annealing",
    "datasets",
    "engines",
    "evidence",
    "kernels",
    "likelihoods",
    "metrics",
    "numerics",
)

__all__ = [
    "Comparison",
    "Convergence",
    "GPClassifier",
    "GaussianPosterior",
    "LOOResult",
    "OptimizationResult",
    "PSISDiagnosis",
    "Posterior",
    "annealing",
    "compare",
    "datasets",
    "engines",
    "evidence",
    "fit",
    "kernels",
    "likelihoods",
    "loo",
    "loo_refits",
    "metrics",
    "numerics",
    "psis",
]


def __getattr__(name: str) -> Any:
    """Import a public name on first use and keep it (PEP 562)."""
    if name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    elif name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
