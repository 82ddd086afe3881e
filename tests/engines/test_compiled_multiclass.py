"""The multi-class MCMC model's compiled density (gpc_compare/engines/_compiled_multiclass.py):
its value and gradient against the PyMC model's own compiled ones and the likelihood
modules, its gradient against finite differences, the multinomial probit's rule at C = 2
against its closed form, and the sampler it feeds against importance sampling."""

from __future__ import annotations

import warnings

import numpy as np
import pytensor
import pytest
from pytensor.compile.mode import Mode
from scipy import special

from gpc_compare.engines import _compiled_multiclass, mcmc
from gpc_compare.engines._engine import Problem
from gpc_compare.engines._mcmc_multiclass import (
    _NEWTON_STEPS,
    GH_NODES,
    block_whiten,
    multiclass_model,
)
from gpc_compare.kernels import SquaredExponential
from gpc_compare.likelihoods import MultinomialProbit, Softmax

from ..helpers import central_difference

LIKELIHOODS = [Softmax(), MultinomialProbit()]
RULE = (GH_NODES, _NEWTON_STEPS)  # (the engine's)
#: pytensor's Python linker, no graph rewrites: the model's graph as written, without a C
#: compilation (FAST_COMPILE's rewrites merge the probit gradient's sums into an Add of 36
#: inputs, beyond NumPy's 32 operands).
_PYTHON = Mode(linker="py", optimizer=None)


def _whitened(likelihood, C: int, n: int = 9, variance: float = 4.0, seed: int = 0):
    """A small problem whitened as the engine whitens it (KL's sites for the softmax,
    nested EP's for the multinomial probit), and the compiled density's buffer."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    codes = np.arange(n) % C
    problem = Problem(X, codes, SquaredExponential(1.0, variance), likelihood, None)
    K = problem.kernel(X)
    parameterization = "kl" if isinstance(likelihood, Softmax) else "ep"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = block_whiten(problem, codes, C, K, parameterization)
    data = _compiled_multiclass.pack(w.G, w.a, w.H, w.T, w.b, codes, likelihood, *RULE)
    return problem, codes, K, parameterization, w, data


@pytest.mark.parametrize("likelihood", LIKELIHOODS, ids=lambda lik: lik.name)
@pytest.mark.parametrize("C", [3, 4])
def test_the_density_and_its_gradient_are_the_pymc_models(likelihood, C) -> None:
    """At random z (f up to about 5) the value, constant included, equals the PyMC
    model's compiled log density (the prior as -|a + B z|^2 / 2, the same likelihood) and
    -|u|^2 / 2 + sum_i log p(y_i | f_i) with the likelihood module's log p (the
    multinomial probit's by a 1e-13 trapezoid rule: the Gauss-Hermite rule's error, below
    3e-9 a case, is the difference); the gradient equals the gradient of the model's graph.

    PyMC's own dlogp (and nutpie's) first rewrites the graph ("canonicalize"), which
    removes the probit rule's disconnected_grad: its gradient also follows the rule's
    centre and scale through the Newton steps, the derivative of the rule's error, 2.3e-9
    of the gradient's size here (measured; checked at C = 3). Sampling is exact with either
    (the value is the same; :mod:`gpc_compare.engines._compiled`'s note)."""
    problem, codes, K, parameterization, w, data = _whitened(likelihood, C)
    L = np.linalg.cholesky(K + 1e-10 * np.eye(problem.n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, _ = multiclass_model(problem, codes, C, K, L, parameterization, w)
        z_value = model.rvs_to_values[model["z"]]
        logp = model.logp()  # (the graphs compile_logp and compile_dlogp compile, in one)
        outputs = [logp, pytensor.grad(logp, z_value)]
        outputs += [model.dlogp()] if C == 3 else []  # (its rewrite takes 1.5 s: once)
        pymc_model = pytensor.function([z_value], outputs, mode=_PYTHON)
    r = w.G.shape[1]
    exact_rule = isinstance(likelihood, Softmax)
    for z in np.random.default_rng(C).standard_normal((3, C * r)):
        value, grad = _compiled_multiclass.log_density(z, data)
        pymc_value, pymc_grad, *rewritten = pymc_model(z)
        assert value == pytest.approx(pymc_value, rel=1e-10)
        u = w.a + w.B @ z
        F = w.G @ u.reshape(C, r).T
        assert value == pytest.approx(-0.5 * u @ u + likelihood.log_prob(codes, F).sum(), abs=1e-8)
        size = np.abs(grad).max()
        np.testing.assert_allclose(grad, pymc_grad, rtol=1e-10, atol=1e-10 * size)
        for other in rewritten:
            gap = np.abs(grad - other).max() / size
            assert gap < (1e-10 if exact_rule else 1e-8)


@pytest.mark.parametrize("likelihood", LIKELIHOODS, ids=lambda lik: lik.name)
def test_the_gradient_is_the_finite_differences(likelihood) -> None:
    """Including the tails: sigma_f^2 = 400 and z of size 3 put f in the hundreds."""
    *_, w, data = _whitened(likelihood, 3, n=6, variance=400.0)
    rng = np.random.default_rng(1)
    for z in 3.0 * rng.standard_normal((2, 3 * w.G.shape[1])):
        _, grad = _compiled_multiclass.log_density(z, data)
        fd = central_difference(lambda v: _compiled_multiclass.log_density(v, data)[0], z, h=1e-5)
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6 * np.abs(fd).max())
        assert np.all(np.isfinite(grad))


def test_the_probit_rule_at_two_classes_is_the_closed_form() -> None:
    """With two classes log int N(v) Phi(v + d) dv = log Phi(d / sqrt 2), d = f_c - f_j,
    and its derivative in d is r(d / sqrt 2) / sqrt 2 (r = phi / Phi), from d = -40
    (log p = -404) to 40: the rule's value within 1e-11 (2e-12 measured), its derivative
    within 3e-11 absolute (1.8e-11 at d = 3) and 5e-9 relative (2.7e-9 at d = 4.7). (The
    derivative is a quadrature of another integrand, not as well placed: where it is
    below 1e-8, d > 8, only its absolute error is small.)"""
    x, w0 = _compiled_multiclass.rule(GH_NODES)
    grad = np.empty(2)
    for d in np.concatenate([np.linspace(-40, 40, 161), [-7.3, 0.01, 2.9]]):
        for c in (0, 1):  # (the label first or second)
            f = np.array([d, 0.0]) if c == 0 else np.array([0.0, d])
            value = _compiled_multiclass._probit(f, c, x, w0, _NEWTON_STEPS, grad)
            t = d / np.sqrt(2.0)
            exact = special.log_ndtr(t)
            slope = np.exp(-0.5 * t * t - 0.5 * np.log(2 * np.pi) - exact) / np.sqrt(2.0)
            assert value == pytest.approx(exact, rel=1e-11, abs=1e-11)
            assert grad[c] == pytest.approx(slope, rel=5e-9, abs=3e-11)
            assert grad[1 - c] == -grad[c]


@pytest.mark.parametrize("likelihood", LIKELIHOODS, ids=lambda lik: lik.name)
def test_nutpie_on_the_compiled_density_draws_the_posterior(likelihood) -> None:
    """The engine's default route (nutpie, the compiled density) against self-normalised
    importance sampling from the whitening's Gaussian (z ~ N(0, I)), weighted by the
    model's density written with the likelihood module: the posterior means of every
    f_ic within 5 combined Monte Carlo standard errors (a misplaced class or case in
    F = F0 + H z would be far off)."""
    problem, codes, K, _, w, data = _whitened(likelihood, 3, n=6, variance=9.0)
    post = mcmc.infer(problem.X, codes, problem.kernel, likelihood, None, draws=1000, tune=500,
                      chains=2, random_seed=5, rhat_max=np.inf, ess_min=0.0)  # fmt: skip
    assert post.diagnostics.sampler == "nutpie" and "z" not in post.idata.posterior
    r, S = w.G.shape[1], 4000
    Z = np.random.default_rng(6).standard_normal((S, 3 * r))
    U = w.a + Z @ w.B.T
    F = np.einsum("ik,sck->sic", w.G, U.reshape(S, 3, r))
    log_lik = likelihood.log_prob(np.tile(codes, S), F.reshape(-1, 3)).reshape(S, -1).sum(axis=1)
    log_w = -0.5 * np.sum(U**2, axis=1) + log_lik + 0.5 * np.sum(Z**2, axis=1)
    p = np.exp(log_w - log_w.max())
    p /= p.sum()
    mean = np.einsum("s,sic->ic", p, F)
    se_is = np.sqrt(np.einsum("s,sic->ic", p**2, (F - mean) ** 2))
    se_mcmc = np.sqrt(post.latent_var / post.diagnostics.ess_bulk_min)
    assert 1.0 / np.sum(p**2) > 1000  # (the whitening's Gaussian is close: IS is efficient)
    assert np.all(np.abs(post.latent_mean - mean) < 5 * np.hypot(se_is, se_mcmc))


class _Stop(Exception):
    pass


def test_where_the_compiled_density_is_unavailable_nutpie_compiles_the_model(
    monkeypatch,
) -> None:
    """E.g. numba cannot write its cache: a warning, and nutpie is handed no compiled
    model, so pm.sample compiles the PyMC model (the run itself, as the binary engine's,
    is tests/engines/test_compiled.py's: here a stand-in run_nuts records its arguments)."""

    def unavailable(*args, **kwargs):
        raise RuntimeError("cannot cache function '_softmax': no locator available")

    seen = {}

    def run_nuts(build, observed, settings, *, compiled, **kwargs):
        seen.update(compiled=compiled, model=build(), sampler=settings.nuts_sampler)
        raise _Stop

    monkeypatch.setattr(_compiled_multiclass, "whitened_model", unavailable)
    monkeypatch.setattr(mcmc, "run_nuts", run_nuts)
    problem, codes, *_ = _whitened(Softmax(), 3, n=6)
    with (
        pytest.warns(RuntimeWarning, match="compiled density is unavailable.*no locator"),
        pytest.raises(_Stop),
    ):
        mcmc.infer(problem.X, codes, problem.kernel, Softmax(), None, draws=10, tune=10)
    assert seen["compiled"] is None and seen["sampler"] == "nutpie"
    assert "z" in seen["model"].named_vars  # (the PyMC model, for pm.sample)


def test_the_turned_whitening_is_the_same_gaussian_and_lower_trapezoidal() -> None:
    """B Q has B's covariance B B^T; the H returned with it is the case-major G_blk B Q
    (to rounding) with exact zeros above its diagonal, as is the engine's; pack refuses
    the H of a B that was not turned (its upper part would be dropped)."""
    from gpc_compare.engines._whitening import case_major, turned_block

    *_, w, _ = _whitened(Softmax(), 3, n=6)
    B = np.random.default_rng(4).standard_normal(w.B.shape)
    BQ, HQ = turned_block(w.G, B)
    np.testing.assert_allclose(BQ @ BQ.T, B @ B.T, atol=1e-12)
    np.testing.assert_allclose(HQ, case_major(w.G, BQ), atol=1e-12)
    H = case_major(w.G, B)
    np.testing.assert_allclose(HQ @ HQ.T, H @ H.T, atol=1e-12)
    for turned in (HQ, w.H):
        assert np.all(np.triu(turned, 1) == 0.0)
    np.testing.assert_allclose(w.H, case_major(w.G, w.B), atol=1e-12)
    codes = np.arange(6) % 3
    with pytest.raises(ValueError, match="lower trapezoidal"):
        _compiled_multiclass.pack(w.G, w.a, H, w.T, w.b, codes, Softmax(), *RULE)


def test_the_buffer_is_checked() -> None:
    *_, w, data = _whitened(Softmax(), 3, n=6)
    codes = np.arange(6) % 3
    with pytest.raises(ValueError, match="the buffer pack"):
        _compiled_multiclass.whitened_model(data[:-1])
    with pytest.raises(ValueError, match="no compiled multi-class density"):
        _compiled_multiclass.pack(w.G, w.a, w.H, w.T, w.b, codes, None, *RULE)
    with pytest.raises(ValueError, match="H must have shape"):
        _compiled_multiclass.pack(w.G, w.a, w.H[:-1], w.T, w.b, codes, Softmax(), *RULE)
    with pytest.raises(ValueError, match="class indices 0..2"):
        _compiled_multiclass.pack(w.G, w.a, w.H, w.T, w.b, codes + 1, Softmax(), *RULE)
    assert not data.flags.writeable
