"""Adding an engine is one module: a toy engine (the prior as the "posterior") registered
through the public extension point appears in ``gpc-compare list engines``, runs in a
study and keeps the contract."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

import gpc_compare as gc
from gpc_compare import study
from gpc_compare._validation import any_value
from gpc_compare.cli import main
from gpc_compare.engines import Engine, EngineOptions, engine_options, option
from gpc_compare.posterior import Convergence, GaussianPosterior

from .contract import check_contract


class PriorPosterior(GaussianPosterior):
    """N(m, K): a Gaussian posterior with no site information (sW = 0, L = I)."""

    method = "prior"

    @property
    def log_marginal_likelihood(self) -> float:
        raise ValueError("the prior engine estimates no evidence")

    @property
    def log_marginal_likelihood_gradient(self) -> np.ndarray:
        raise ValueError("the prior engine gives no evidence gradient")

    @property
    def warm_start(self) -> None:
        return None


@engine_options
class PriorOptions(EngineOptions):
    """Options of the prior engine."""

    warm_start: Any = option(None, any_value, "Ignored: the prior needs no start.")


class PriorEngine(Engine):
    name = "prior"
    label = "Prior"
    summary = "the GP prior itself, ignoring the labels (a toy)"
    Options = PriorOptions
    likelihoods = {"probit": frozenset(), "logistic": frozenset()}

    def infer(self, problem, options) -> PriorPosterior:
        n = problem.n
        nothing = np.zeros(n)  # no site information: alpha = 0, sW = 0, L = chol(I) = I
        return PriorPosterior(
            *(problem.X, problem.y, problem.kernel, problem.likelihood, problem.mean),
            K=problem.kernel(problem.X),
            alpha=nothing,
            sW=nothing,
            L=np.eye(n),
            log_marginal_likelihood=np.nan,
            convergence=Convergence(True, 0, 0.0, "the prior: nothing to iterate"),
        )


@pytest.fixture
def prior_engine():
    engine = gc.engines.register(PriorEngine)
    yield engine
    gc.engines.unregister("prior")


def test_a_registered_engine_keeps_the_contract(prior_engine) -> None:
    for likelihood in prior_engine.likelihoods:
        check_contract(prior_engine, likelihood)
    with pytest.raises(ValueError, match=r"the Prior engine \(method='prior'\) does not take"):
        gc.fit(np.eye(3), [0, 1, 1], method="prior", likelihood="gaussian")
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['tol'\] for method 'prior'"):
        gc.fit(np.eye(3), [0, 1, 1], method="prior", tol=1e-3)


def test_a_registered_engine_is_listed(prior_engine, capsys) -> None:
    assert main(["list", "engines"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(k for k, line in enumerate(lines) if line.strip().startswith("prior"))
    assert "the GP prior itself" in lines[at]
    assert lines[at + 1].strip() == "probit:"  # (no capabilities)
    assert lines[at + 3].strip() == "options: warm_start=None"


STUDY = """
name = "toy"
likelihood = "probit"
datasets = [{name = "breast_cancer", subsample = 60}]

[hyperparameters]
policy = "fixed"

[splits]
kind = "kfold"
n_splits = 2
n_repeats = 1

[engines.prior]
[engines.laplace]
"""


def test_a_registered_engine_runs_in_a_study(prior_engine, tmp_path) -> None:
    path = tmp_path / "toy.toml"
    path.write_text(STUDY)
    config = study.load_study(path)
    study.run_study(config, tmp_path / "out", workers=1)
    table = pd.read_csv(tmp_path / "out" / "toy" / "results.csv")
    prior = table[(table.engine == "prior") & (table.metric == "mean_log_predictive")]
    laplace = table[(table.engine == "laplace") & (table.metric == "mean_log_predictive")]
    assert len(prior) == len(laplace) == 2
    # the prior predicts 1/2 everywhere (zero mean): log(1/2) per case
    np.testing.assert_allclose(prior.value, np.log(0.5), rtol=1e-12)
    assert np.all(laplace.value.to_numpy() > np.log(0.5))
