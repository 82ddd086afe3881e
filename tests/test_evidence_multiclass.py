"""The gold-standard evidence with C latent functions (softmax, multinomial probit), checked
against brute force on problems of two cases, and nested EP's log Z against it."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import multivariate_normal

import gpc_compare as gc
from gpc_compare.kernels import SquaredExponential
from gpc_compare.likelihoods import MultinomialProbit, Softmax

X2 = np.array([[0.0], [0.7]])
KERNEL = SquaredExponential(1.0, 2.0)
SMC = {"particles": 64, "runs": 8}


def _importance(likelihood, y: np.ndarray, C: int, draws: int = 100_000) -> tuple[float, float]:
    """log p(y | X) = log E_prior[p(y | F)] by simple Monte Carlo from the prior (C n = 6
    dimensions), and its delta-method standard error."""
    L = np.linalg.cholesky(KERNEL(X2) + 1e-10 * np.eye(2))
    F = np.einsum("ij,sjc->sic", L, np.random.default_rng(0).standard_normal((draws, 2, C)))
    w = np.exp(likelihood.log_prob(np.broadcast_to(y, (draws, 2)), F).sum(axis=1))
    return float(np.log(w.mean())), float(w.std() / np.sqrt(draws) / w.mean())


@pytest.mark.parametrize("y", [np.array([0, 2]), np.array([1, 1])])
def test_softmax_smc_matches_importance_sampling_with_three_classes(y):
    """Two cases, three classes (a 6-dimensional integral): SMC from the prior against
    1e5 prior draws (standard error about 0.003), within three combined standard errors."""
    ref, ref_se = _importance(Softmax(3), y, 3)
    est = gc.evidence.estimate(
        X2, y, kernel=KERNEL, likelihood=Softmax(3), start="prior", random_seed=1, **SMC
    )
    assert est.start_log_evidence is None and est.health["sweeps"] == 0
    assert abs(est.log_evidence - ref) < 3 * np.hypot(est.standard_error, ref_se)
    assert est.standard_error < 0.05  # (informative: 0.02-0.035 measured with these runs)


@pytest.mark.parametrize("y", [np.array([0, 1]), np.array([1, 1])])
def test_multinomial_probit_evidence_with_two_classes_is_an_orthant_probability(y):
    """With C = 2, p(y = 1 | f) = Phi((f_1 - f_0) / sqrt(2)) and f_1 - f_0 ~ N(0, 2K): the
    evidence is P(s_i (h_i + eps_i) > 0), h ~ N(0, K), eps ~ N(0, I), s_i = +-1, a
    bivariate normal orthant probability (exact up to scipy's 1e-8). SMC within three
    standard errors; nested EP's log Z within the estimate's error (0.015 here) of it."""
    s = np.where(y == 1, 1.0, -1.0)
    cov = (KERNEL(X2) + np.eye(2)) * np.outer(s, s)
    exact = float(np.log(multivariate_normal(np.zeros(2), cov).cdf(np.zeros(2))))
    lik = MultinomialProbit(2)
    est = gc.evidence.estimate(
        X2, y, kernel=KERNEL, likelihood=lik, start="prior", random_seed=1, **SMC
    )
    assert abs(est.log_evidence - exact) < 3 * est.standard_error
    if np.unique(y).size == 2:  # (nested EP takes labels with every class present)
        ep = gc.fit(X2, y, method="ep", likelihood="multinomial_probit", kernel=KERNEL)
        assert est.start_log_evidence == pytest.approx(ep.log_marginal_likelihood)
        assert abs(ep.log_marginal_likelihood - exact) < est.standard_error
        assert abs(ep.log_marginal_likelihood - est.log_evidence) < 2 * est.standard_error


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"start": "ep"}, "starts at the prior .* pass start='prior'"),
        ({"start": "prior", "mean": 0.5}, "takes no prior mean"),
        ({"start": "prior", "y": np.array([0.5, 1.0])}, "class indices 0..C-1"),
        ({"start": "prior", "likelihood": Softmax(2), "y": np.array([0, 2])}, "has 2 classes"),
    ],
)
def test_multiclass_evidence_input_is_checked(kwargs, message):
    args = {"y": np.array([0, 1]), "likelihood": "softmax", **kwargs}
    with pytest.raises(ValueError, match=message):
        gc.evidence.estimate(X2, kernel=KERNEL, **args)
