"""The engines' declarations (issue 28): one options class per engine, capabilities per
likelihood, one vocabulary (``max_iter``, the old names warned), and ``warm_start`` taking
the previous posterior of the same engine."""

from __future__ import annotations

import warnings
from dataclasses import fields

import numpy as np
import pytest

import gpc_compare as gc
from gpc_compare.engines import get_engine
from gpc_compare.engines._inducing import SparseOptions
from gpc_compare.kernels import SquaredExponential
from gpc_compare.likelihoods import Probit

from ..helpers import toy_data

#: The engines that start from a previous fit, with the likelihood each is fitted with.
WARM = {
    "laplace": "probit",
    "ep": "probit",
    "kl": "probit",
    "vb": "logistic",
    "fitc_laplace": "probit",
    "fitc_ep": "probit",
    "svgp": "probit",
}


@pytest.mark.parametrize("method", sorted(WARM))
def test_warm_start_takes_the_previous_posterior(method: str) -> None:
    """``gc.fit(..., warm_start=previous)`` is the fit from ``previous.warm_start``'s arrays,
    and from a fit at nearby hyperparameters it converges in no more iterations than a
    cold start; a posterior of another engine is refused, naming both."""
    X, y = toy_data(n=40, d=2, seed=4)
    lik = WARM[method]
    options = get_engine(method).quick_options
    previous = gc.fit(X, y, method, SquaredExponential(1.0, 2.0), lik, 0.1, **options)
    kernel = SquaredExponential(1.1, 2.2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (every fit here converges)
        cold = gc.fit(X, y, method, kernel, lik, 0.1, **options)
        warm = gc.fit(X, y, method, kernel, lik, 0.1, warm_start=previous, **options)
        arrays = gc.fit(X, y, method, kernel, lik, 0.1, warm_start=previous.warm_start, **options)
    assert warm.log_marginal_likelihood == arrays.log_marginal_likelihood
    np.testing.assert_array_equal(warm.latent_mean, arrays.latent_mean)
    np.testing.assert_array_equal(warm.latent_var, arrays.latent_var)
    assert warm.convergence == arrays.convergence
    assert warm.convergence.converged and cold.convergence.converged
    assert warm.convergence.iterations <= cold.convergence.iterations
    assert warm.log_marginal_likelihood == pytest.approx(cold.log_marginal_likelihood, abs=1e-8)
    # at the same hyperparameters the previous fit is (nearly) the answer
    same = SquaredExponential(1.0, 2.0)
    again = gc.fit(X, y, method, same, lik, 0.1, warm_start=previous, **options)
    assert again.convergence.iterations <= previous.convergence.iterations
    other = "laplace" if method != "laplace" else "ep"
    if get_engine(other).takes(lik):
        stranger = gc.fit(X, y, other, kernel, lik, 0.1)
        with pytest.raises(ValueError, match=f"warm_start is a posterior of method '{other}'"):
            gc.fit(X, y, method, kernel, lik, 0.1, warm_start=stranger, **options)


@pytest.mark.filterwarnings("ignore:.*not converged after 4 sweeps:RuntimeWarning")
@pytest.mark.parametrize("method", ["ep", "fitc_ep"])
def test_max_sweeps_is_now_max_iter(method: str) -> None:
    """EP's and FITC-EP's ``max_sweeps`` and ``min_sweeps`` are ``max_iter`` and
    ``min_iter``: the old names still work for one release, with a DeprecationWarning, and
    give the same fit; both names at once are refused."""
    X, y = toy_data(n=30, d=2, seed=1)
    options = get_engine(method).quick_options
    new = gc.fit(X, y, method, min_iter=3, max_iter=4, **options)
    with pytest.warns(DeprecationWarning, match="'m(ax|in)_sweeps' is now 'm(ax|in)_iter'"):
        old = gc.fit(X, y, method, min_sweeps=3, max_sweeps=4, **options)
    assert old.log_marginal_likelihood == new.log_marginal_likelihood
    assert old.convergence == new.convergence
    with pytest.raises(ValueError, match="give 'max_iter' or its old name 'max_sweeps'"):
        with pytest.warns(DeprecationWarning):
            gc.fit(X, y, method, max_iter=4, max_sweeps=4, **options)
    with pytest.raises(ValueError, match=r"min_iter \(5\) exceeds max_iter \(4\)"):
        gc.fit(X, y, method, min_iter=5, max_iter=4, **options)
    module = getattr(gc.engines, method)  # (the module's infer, as the tests call it)
    y_pm = np.where(y > 0, 1.0, -1.0)
    with pytest.warns(DeprecationWarning, match="_sweeps' is now"):
        direct = module.infer(
            X, y_pm, SquaredExponential(), Probit(), None, min_sweeps=3, max_sweeps=4, **options
        )
    assert direct.log_marginal_likelihood == new.log_marginal_likelihood


def test_every_iterative_engine_says_max_iter() -> None:
    """One vocabulary: every engine with an iteration cap calls it ``max_iter``."""
    for name in ("laplace", "ep", "kl", "vb", "fitc_laplace", "fitc_ep", "svgp"):
        names = get_engine(name).Options.names()
        assert "max_iter" in names and not {"max_sweeps", "min_sweeps"} & set(names), name


def test_capabilities_are_per_likelihood() -> None:
    """EP's leave-one-out capability is the probit's (its gradient is implemented for it);
    VB takes the logistic likelihood only, and says what to use instead."""
    caps = gc.engines.capabilities
    assert "loo" in caps("ep", "probit")
    assert "loo" not in caps("ep", "logistic") and "loo" not in caps("ep", "gaussian")
    assert caps("ep", "logistic") == {"evidence", "evidence_gradient"}
    assert gc.engines.engines_with("loo", "logistic") == []
    assert get_engine("vb").likelihoods.keys() == {"logistic"}
    assert caps("vb", "logistic") == {"evidence", "evidence_gradient", "bound"}
    for name in ("kl", "svgp"):
        assert all("bound" in caps(name, lik) for lik in ("probit", "logistic", "gaussian"))
    for name in ("fitc_laplace", "fitc_ep", "svgp"):
        assert all("sparse" in caps(name, lik) for lik in ("probit", "logistic", "gaussian"))
    X, y = toy_data(n=10)
    with pytest.raises(ValueError, match=r"does not take the 'probit'.*method='kl'"):
        gc.engines.vb.infer(X, np.where(y > 0, 1.0, -1.0), SquaredExponential(), Probit())


def test_sparse_options_share_one_base() -> None:
    """The sparse engines' options subclass SparseOptions: its four fields first, in its
    order, each with the base's default and check."""
    base = [f.name for f in fields(SparseOptions)]
    assert base == ["inducing", "optimize_inducing", "jitter", "random_seed"]
    for name in ("fitc_laplace", "fitc_ep", "svgp"):
        Options = get_engine(name).Options
        assert issubclass(Options, SparseOptions)
        assert Options.names()[:4] == base
        assert {k: Options.defaults()[k] for k in base} == SparseOptions.defaults()
        with pytest.raises(ValueError, match="jitter must be a positive number"):
            Options(jitter=0.0)
        with pytest.raises(ValueError, match=r"inducing must be an \(M, d\) array"):
            Options(inducing=np.zeros(3))


def test_options_document_every_field() -> None:
    """Each option's doc is on its field, and the options class's docstring lists them."""
    for name in ("ep", "kl", "vb", "fitc_laplace", "fitc_ep", "svgp"):
        Options = get_engine(name).Options
        for option, default, doc in Options.describe():
            assert len(doc) > 20, (name, option)
            assert f"{option} : default {default!r}" in Options.__doc__
