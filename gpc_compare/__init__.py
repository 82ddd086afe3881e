"""gpc_compare: approximate inference for Gaussian-process classification, compared.

>>> import gpc_compare as gc
>>> k = gc.kernels.SquaredExponential(lengthscale=1.0, variance=1.0)
>>> post = gc.fit(X, y, method="laplace", kernel=k, likelihood="probit")  # doctest: +SKIP
>>> post.log_marginal_likelihood, post.predict_proba(Xs)                  # doctest: +SKIP
>>> gc.loo(post, "cavity").elpd                                           # doctest: +SKIP

See :mod:`gpc_compare.posterior` for the ``Posterior`` contract every engine honours.
"""

from . import annealing, datasets, engines, evidence, kernels, likelihoods, metrics, numerics
from ._fit import fit
from .comparison import Comparison, compare
from .estimator import GPClassifier
from .hyperparameters import OptimizationResult
from .loo import LOOResult, loo
from .posterior import Convergence, GaussianPosterior, Posterior
from .provenance import __version__ as __version__
from .trust import PSISDiagnosis, psis

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
    "datasets",
    "compare",
    "engines",
    "evidence",
    "fit",
    "kernels",
    "likelihoods",
    "loo",
    "metrics",
    "numerics",
    "psis",
]
