"""The AIS evidence (gpc_compare.evidence) against closed forms and brute-force integration."""

from __future__ import annotations

import numpy as np
from scipy import stats

import gpc_compare as gc
from gpc_compare.evidence import AISResult, ais, ais_log_evidence, ais_log_evidence_from_sites
from gpc_compare.likelihoods import Probit


def test_ais_one_point_closed_form_and_reproducible():
    L = np.array([[np.sqrt(3.0)]])
    lz, se = ais_log_evidence(L, 0.7, np.array([-1.0]), Probit(), random_seed=0)
    exact = stats.norm.logcdf(-0.7 / 2.0)
    assert abs(lz - exact) < 4 * se and se < 0.02
    assert ais_log_evidence(L, 0.7, np.array([-1.0]), Probit(), random_seed=0) == (lz, se)


def test_ais_annealed_from_ep_matches_brute_force() -> None:
    """AIS from EP's approximation is unbiased in Z: two points against dblquad."""
    from scipy import integrate

    from gpc_compare.engines import ep

    X = np.array([[0.0], [0.7]])
    y = np.array([1.0, -1.0])
    k = gc.kernels.SquaredExponential(lengthscale=0.5, variance=9.0)
    K = k(X) + 1e-10 * np.eye(2)
    L = np.linalg.cholesky(K)
    prior = stats.multivariate_normal(np.full(2, 0.3), K)

    def integrand(b, a):
        return prior.pdf([a, b]) * stats.norm.cdf(y[0] * a) * stats.norm.cdf(y[1] * b)

    log_z = np.log(integrate.dblquad(integrand, -30, 30, -30, 30, epsabs=1e-12)[0])
    approx = ep.infer(X, y, k, Probit(), 0.3)
    est, se = ais_log_evidence_from_sites(
        K, L, 0.3, y, Probit(), approx.ttau, approx.tnu, temperatures=300, runs=64, random_seed=0
    )
    assert 0 < se < 0.01
    assert abs(est - log_z) < 4 * se  # observed: -1.6420 +- 0.0031 against -1.6391


def test_ais_is_one_function_with_two_starts() -> None:
    """The pair-returning forms are :func:`ais` from the prior and from sites, exactly."""
    from gpc_compare.engines import ep

    X = np.array([[0.0], [0.7], [1.1]])
    y = np.array([1.0, -1.0, -1.0])
    k = gc.kernels.SquaredExponential(lengthscale=0.5, variance=4.0)
    L = np.linalg.cholesky(k(X) + 1e-10 * np.eye(3))
    prior = ais(L, 0.3, y, Probit(), temperatures=50, runs=4, random_seed=1)
    assert isinstance(prior, AISResult)
    assert (prior.start, prior.temperatures, prior.runs) == ("prior", 50, 4)
    assert ais_log_evidence(L, 0.3, y, Probit(), temperatures=50, runs=4, random_seed=1) == (
        prior.log_evidence,
        prior.standard_error,
    )
    approx = ep.infer(X, y, k, Probit(), 0.3)
    sites = ais(
        L, 0.3, y, Probit(), sites=(approx.ttau, approx.tnu), temperatures=20, runs=4,
        random_seed=1,
    )  # fmt: skip
    assert (sites.start, sites.temperatures) == ("sites", 20)
    pair = ais_log_evidence_from_sites(
        L @ L.T, L, 0.3, y, Probit(), approx.ttau, approx.tnu, temperatures=20, runs=4,
        random_seed=1,
    )  # fmt: skip
    assert pair == (sites.log_evidence, sites.standard_error)  # K defaults to L L^T
    assert ais(L, 0.3, y, Probit(), runs=2, random_seed=0).temperatures == 2000
