"""The evidence estimators (AIS, SMC: gpc_compare.evidence) against closed forms, exact GP
regression and brute-force integration."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.special import ndtr

import gpc_compare as gc
from gpc_compare.evidence import AISResult, ais, ais_log_evidence, ais_log_evidence_from_sites
from gpc_compare.likelihoods import Probit

from .helpers import two_point_log_evidence


def test_ais_one_point_closed_form_and_reproducible():
    L = np.array([[np.sqrt(3.0)]])
    lz, se = ais_log_evidence(L, 0.7, np.array([-1.0]), Probit(), random_seed=0)
    exact = stats.norm.logcdf(-0.7 / 2.0)
    assert abs(lz - exact) < 4 * se and se < 0.02
    assert ais_log_evidence(L, 0.7, np.array([-1.0]), Probit(), random_seed=0) == (lz, se)


def test_ais_annealed_from_ep_matches_brute_force() -> None:
    """AIS from EP's approximation is unbiased in Z: two points against dblquad."""
    from gpc_compare.engines import ep

    X = np.array([[0.0], [0.7]])
    y = np.array([1.0, -1.0])
    k = gc.kernels.SquaredExponential(lengthscale=0.5, variance=9.0)
    K = k(X) + 1e-10 * np.eye(2)
    L = np.linalg.cholesky(K)
    log_z = two_point_log_evidence(K, 0.3, lambda a: ndtr(y[0] * a), lambda b: ndtr(y[1] * b), 30)
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


# ----------------------------------------------------------------- SMC and gc.evidence.estimate
def _gaussian_problem(n: int, log_variance: float, noise: float, seed: int = 0):
    """Inputs, targets drawn from GP regression, and the exact log evidence (R&W eq. 2.30)
    under the prior the estimators use (K with the jitter of its Cholesky factor)."""
    from gpc_compare.numerics import JITTER, cholesky

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    kernel = gc.kernels.SquaredExponential(1.0, float(np.exp(log_variance)))
    L = cholesky(kernel(X), jitter=JITTER, what="K")
    y = L @ rng.normal(size=n) + np.sqrt(noise) * rng.normal(size=n)
    exact = stats.multivariate_normal(np.zeros(n), L @ L.T + noise * np.eye(n)).logpdf(y)
    return X, y, kernel, gc.likelihoods.Gaussian(noise), float(exact)


@pytest.mark.parametrize(("log_variance", "noise"), [(0.0, 1.0), (4.0, 0.01), (8.0, 0.01)])
def test_smc_from_the_prior_recovers_the_exact_gaussian_evidence(log_variance, noise) -> None:
    """The stress test: the path from the prior to a posterior hundreds of times narrower
    (sigma_f^2 = e^8, s^2 = 0.01) is long, and the adaptive schedule finds it."""
    X, y, kernel, lik, exact = _gaussian_problem(40, log_variance, noise)
    # a quarter of the default population (64 particles x 8 runs) for the suite's time:
    # its standard error is about twice the default's (<= 0.1, studies/gold_standard.py)
    r = gc.evidence.estimate(X, y, kernel=kernel, likelihood=lik, start="prior", random_seed=3,
                             particles=64, runs=8)  # fmt: skip
    assert r.method == "smc" and r.start == "prior" and not r.health["capped"]
    assert 0 < r.standard_error <= 0.25
    assert abs(r.log_evidence - exact) <= 3 * r.standard_error, (r.log_evidence, exact)
    assert r.health["steps"] > (5 if log_variance > 0 else 0)  # (a longer path when harder)


def test_smc_resampling_moves_each_particle_with_its_likelihood() -> None:
    """Resampling permutes the particles, their log likelihoods and their log ratios
    together, once each. On the prior's path the log ratio is the log likelihood itself;
    the two once shared one array, which was permuted twice, so a resampled particle
    carried another's likelihood into its weights and its slice threshold (SMC from the
    prior was 0.1-0.6 nats low in the Gaussian stress test, with stuck moves)."""
    from gpc_compare.annealing.paths import make_path
    from gpc_compare.annealing.smc import _Population
    from gpc_compare.numerics import JITTER, cholesky

    X, y, kernel, lik, _ = _gaussian_problem(30, 0.0, 0.01)
    L = cholesky(kernel(X), jitter=JITTER, what="K")
    sites = (np.full(30, 100.0), y / 0.01)  # (EP's, exact here)
    for start in (None, sites):
        rng = np.random.default_rng(0)
        _, path, loglik = make_path(L, 0.0, y, lik, None, start, rng, sites)
        pop = _Population(path, loglik, 2, 64, rng, (y, 0.0, lik, 1))
        beta = 0.0
        for b in (0.01, 0.1, 0.5, 1.0):  # big steps: the weights degenerate, resampling
            pop.step(beta, b, 1)
            beta = b
            np.testing.assert_allclose(pop.ll, loglik(pop.g), rtol=1e-12)
            np.testing.assert_allclose(pop.log_r.ravel(), path.log_ratio(pop.g, pop.ll))
        assert pop.stuck == 0 and (pop.resamples >= 4 or start is not None)  # (EP: exact)


def test_from_eps_exact_start_the_gaussian_evidence_is_exact() -> None:
    """With the Gaussian likelihood EP's sites are exact, every weight is equal: one step,
    standard error 0, both estimators on the exact value."""
    X, y, kernel, lik, exact = _gaussian_problem(60, 8.0, 0.01)
    for method in ("smc", "ais"):
        r = gc.evidence.estimate(X, y, kernel=kernel, likelihood=lik, method=method)
        # 1e-5 relative: log Z_0 = -1/2 log|B| + 1/2 b^T Sigma b (the start's normaliser)
        # cancels terms of order 1e7 here (sigma_f^2 = e^8, s^2 = 0.01): 4.6e-4 nats of
        # rounding, against standard errors of 0.1 where it is used
        assert abs(r.log_evidence - exact) < 1e-5 * abs(exact) and r.standard_error < 1e-6
        assert abs(r.start_log_evidence - exact) < 1e-5 * abs(exact)


def test_smc_matches_brute_force_on_two_points_at_a_large_signal_variance() -> None:
    """Classification: two points at sigma_f^2 = 25, against dblquad, from either start."""
    from gpc_compare.numerics import JITTER, cholesky

    X = np.array([[0.0], [0.4]])
    y = np.array([1, 0])
    k = gc.kernels.SquaredExponential(lengthscale=0.5, variance=25.0)
    L = cholesky(k(X), jitter=JITTER, what="K")
    log_z = two_point_log_evidence(L @ L.T, 0.3, ndtr, lambda b: ndtr(-b), 40)
    for start in ("ep", "prior"):
        r = gc.evidence.estimate(X, y, kernel=k, mean=0.3, start=start, random_seed=0)
        assert 0 < r.standard_error < 0.05
        assert abs(r.log_evidence - log_z) < 3 * r.standard_error, (start, r, log_z)


def test_the_smc_record_of_its_health() -> None:
    data = gc.datasets.load("crabs")
    X = gc.datasets.standardize(data.X, data.X)[0][:80]
    y = data.y[:80]
    k = gc.kernels.SquaredExponential(1.0, float(np.exp(6.0)))
    r = gc.evidence.estimate(X, y, kernel=k, random_seed=0, particles=32, runs=4)
    h = r.health
    assert (h["particles"], h["runs"], h["moves"], h["sweeps"]) == (32, 4, 2, 2)
    assert h["steps"] >= 2 and 0 < h["ess_min"] <= 1 and 0 <= h["stuck"] < 0.05
    assert len(h["run_log_evidence"]) == 4 and not h["capped"]
    spread = np.std(h["run_log_evidence"], ddof=1) / 2  # (the se of a mean of 4)
    assert r.standard_error == pytest.approx(spread, rel=0.5)  # delta method ~ log-space sd
    again = gc.evidence.estimate(X, y, kernel=k, random_seed=0, particles=32, runs=4)
    assert again.log_evidence == r.log_evidence  # reproducible
    assert r.record()["health"]["steps"] == h["steps"]


def test_the_next_temperature_keeps_the_conditional_ess() -> None:
    from gpc_compare.annealing.smc import _next_beta

    rng = np.random.default_rng(0)
    log_r = 50.0 * rng.normal(size=200)
    log_W = np.log(rng.dirichlet(np.ones(200)))
    beta = _next_beta(log_W, log_r, 0.2, 0.9)
    inc = (beta - 0.2) * log_r
    w = np.exp(log_W)
    u = np.exp(inc - inc.max())
    assert 0.2 < beta < 1.0 and (w @ u) ** 2 / (w @ u**2) == pytest.approx(0.9, abs=1e-6)
    assert _next_beta(log_W, 1e-6 * log_r, 0.2, 0.9) == 1.0  # an easy step goes all the way


def test_the_coordinate_sweep_leaves_its_target_invariant() -> None:
    """Target N(mu, Q^-1) x N(y; g, s^2 I) (Gaussian likelihood, beta = 1): start from
    exact draws of the posterior; after sweeps the draws still have its moments."""
    from gpc_compare.annealing.paths import coordinate_sweep

    rng = np.random.default_rng(1)
    n, k = 4, 40_000
    A = rng.normal(size=(n, n))
    C = A @ A.T + n * np.eye(n)  # the Gaussian part's covariance
    mu = rng.normal(size=n)
    Q = np.linalg.inv(C)
    s2, y = 0.5, rng.normal(size=n)
    post_cov = np.linalg.inv(Q + np.eye(n) / s2)
    post_mean = post_cov @ (Q @ mu + y / s2)
    g = post_mean[:, None] + np.linalg.cholesky(post_cov) @ rng.normal(size=(n, k))
    for _ in range(3):
        g = coordinate_sweep(g, 1.0, Q, Q @ mu, y, 0.0, gc.likelihoods.Gaussian(s2), rng)
    se = np.sqrt(np.diag(post_cov) / k)
    assert np.all(np.abs(g.mean(axis=1) - post_mean) < 4 * se)
    assert np.allclose(np.cov(g), post_cov, atol=0.03 * np.abs(post_cov).max())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "nested"}, "method must be one of"),
        ({"start": "laplace"}, "start must be 'ep' or 'prior'"),
        ({"particles_per_run": 3}, r"unknown option\(s\) \['particles_per_run'\]"),
        ({"method": "ais", "particles": 3}, r"unknown option\(s\) \['particles'\]"),
        ({"cess": 1.5}, r"cess must be in \(0, 1\)"),  # (it would never reach beta = 1)
        ({"particles": 1}, "particles must be a whole number >= 2"),
        ({"method": "ais", "temperatures": 0}, "temperatures must be a whole number >= 1"),
        ({"likelihood": "softmax"}, "multi-class likelihood the path starts at the prior"),
        ({"random_seed": "x"}, "random_seed must be None, an integer"),
    ],
)
def test_estimate_refuses_bad_arguments(kwargs, message) -> None:
    X = np.array([[0.0], [1.0], [2.0]])
    with pytest.raises(ValueError, match=message):
        gc.evidence.estimate(X, np.array([0, 1, 1]), **kwargs)
