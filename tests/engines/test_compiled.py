"""The MCMC engine's compiled density (gpc_compare/engines/_compiled.py): its log Phi
against SciPy, mpmath and gpc_compare.numerics, the density against the same formula in
NumPy and SciPy, its gradient against finite differences, and the sampler it feeds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

import gpc_compare as gc
from gpc_compare.engines import _compiled, mcmc
from gpc_compare.likelihoods import Gaussian, Logistic, Probit
from gpc_compare.numerics import log_phi_d2

from ..helpers import central_difference, toy_data

Z = np.concatenate(
    [-np.logspace(-4, 6, 300), [0.0], np.logspace(-4, 1.6, 150), np.linspace(-21, 9, 601)]
)


def test_log_phi_and_its_ratio_match_the_numerics_module_everywhere() -> None:
    """From z = -1e6 (log Phi ~ -5e11) to z = 40 (log Phi ~ -4e-350 underflows to 0),
    across the switch at z = -20, against SciPy's log_ndtr too."""
    ours = np.array([_compiled.log_phi_ratio(z) for z in Z])
    g, r, _ = log_phi_d2(Z)
    np.testing.assert_allclose(ours[:, 0], g, rtol=1e-12, atol=0)
    np.testing.assert_allclose(ours[:, 0], special.log_ndtr(Z), rtol=1e-11, atol=0)
    np.testing.assert_allclose(ours[:, 1], r, rtol=1e-12, atol=0)
    assert np.all(np.isfinite(ours)) and np.all(ours[:, 1] >= 0)  # (phi(40) underflows)


def test_log_phi_and_its_ratio_against_mpmath() -> None:
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    for z in [-1e4, -300.0, -20.5, -20.0, -19.5, -8.0, -1.0, -1e-3, 0.0, 0.7, 3.0, 6.0]:
        cdf = mpmath.ncdf(mpmath.mpf(z))
        log_cdf, ratio = _compiled.log_phi_ratio(z)
        assert log_cdf == pytest.approx(float(mpmath.log(cdf)), rel=1e-13)
        assert ratio == pytest.approx(float(mpmath.npdf(z) / cdf), rel=1e-13)


def _problem(likelihood, scale: float = 1.0, seed: int = 0, shape: tuple = (12, 7)):
    rng = np.random.default_rng(seed)
    n, r = shape
    H = np.tril(scale * rng.standard_normal((n, r)))  # (lower trapezoidal, as pack needs)
    g0 = scale * rng.standard_normal(n)
    y = rng.standard_normal(n) if isinstance(likelihood, Gaussian) else rng.choice([-1.0, 1.0], n)
    T, b = rng.uniform(0.0, 2.0, n), rng.standard_normal(n)
    m = 0.4
    return (H, g0, m, y, T, b), _compiled.pack(H, g0, m, y, T, b, likelihood)


def _reference(z, H, g0, m, y, T, b, likelihood) -> float:
    """N(z; 0, I) p(y | m + g) / t(g), g = g0 + H z, up to constants, in NumPy and SciPy."""
    g = g0 + H @ z
    f = m + g
    if isinstance(likelihood, Probit):
        ll = special.log_ndtr(y * f)
    elif isinstance(likelihood, Logistic):
        ll = -np.logaddexp(0.0, -y * f)
    else:
        ll = -0.5 * (y - f) ** 2 / likelihood.variance
    return float(-0.5 * z @ z + ll.sum() + 0.5 * T @ g**2 - b @ g)


LIKELIHOODS = [Probit(), Logistic(), Gaussian(0.3)]


@pytest.mark.parametrize("likelihood", LIKELIHOODS, ids=lambda lik: lik.name)
@pytest.mark.parametrize("scale", [1.0, 1e3])
@pytest.mark.parametrize("shape", [(12, 7), (4, 7)])
def test_the_density_and_its_gradient(likelihood, scale, shape) -> None:
    """The value is the formula's; the gradient is the finite differences' (at scale 1e3,
    f ~ 1e3 to 1e4: the likelihoods' tails), H lower trapezoidal with r < n or r > n."""
    args, data = _problem(likelihood, scale, shape=shape)
    rng = np.random.default_rng(1)
    for _ in range(3):
        z = rng.standard_normal(args[0].shape[1])
        value, grad = _compiled.log_density(z, data)
        reference = _reference(z, *args, likelihood)
        assert value == pytest.approx(reference, rel=1e-12, abs=1e-9)
        fd = central_difference(lambda v: _reference(v, *args, likelihood), z, h=1e-6 / scale)
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6 * np.abs(fd).max())
        assert np.all(np.isfinite(grad))


def _slope(y, f, likelihood) -> np.ndarray:
    """d log p(y | f) / df in float64, in SciPy."""
    if isinstance(likelihood, Probit):  # y phi(f) / Phi(y f)
        return y * np.exp(-0.5 * f**2 - 0.5 * np.log(2 * np.pi) - special.log_ndtr(y * f))
    if isinstance(likelihood, Logistic):
        return y * special.expit(-y * f)
    return (y - f) / likelihood.variance


@pytest.mark.parametrize("likelihood", LIKELIHOODS, ids=lambda lik: lik.name)
@pytest.mark.parametrize("scale", [1.0, 1e3])
def test_the_gradient_is_the_exact_one_within_single_precision_rounding(likelihood, scale) -> None:
    """The gradient's H^T d is taken in float32 (the module note says why the sampler stays
    exact): every component within the rounding bound of a length-n dot product in single
    precision, (n + 2) u sum_i |H_ij| |d_i| with u = 2^-24 (d and H rounded, then n
    products and sums), of the float64 gradient H^T d - z, d = d log p / df + T g - b."""
    (H, g0, m, y, T, b), data = _problem(likelihood, scale)
    n = H.shape[0]
    for z in np.random.default_rng(2).standard_normal((3, H.shape[1])):
        _, grad = _compiled.log_density(z, data)
        g = g0 + H @ z
        d = _slope(y, m + g, likelihood) + T * g - b
        exact = H.T @ d - z
        bound = (n + 2) * 2.0**-24 * (np.abs(H).T @ np.abs(d)) + 1e-15 * np.abs(exact)
        assert np.all(np.abs(grad - exact) <= bound)
        assert np.max(np.abs(grad - exact) / bound) > 1e-4  # (the float32 path: not exact)


def test_pack_refuses_an_H_that_is_not_lower_trapezoidal() -> None:
    """Its entries above the diagonal would be dropped silently."""
    (H, *rest), _ = _problem(Probit())
    H[2, 5] = 1e-300
    with pytest.raises(ValueError, match="lower trapezoidal"):
        _compiled.pack(H, *rest, Probit())


def test_pack_refuses_a_likelihood_it_has_no_density_for() -> None:
    with pytest.raises(ValueError, match="no compiled density"):
        _compiled.pack(np.eye(2), np.zeros(2), 0.0, np.ones(2), np.ones(2), np.ones(2), None)


def test_nutpie_samples_the_compiled_density_and_pymc_the_same_model() -> None:
    """The default route (nutpie, the compiled density) and PyMC's sampler on the PyMC
    model draw the same posterior: means within 5 combined Monte Carlo standard errors."""
    X, y = toy_data(n=30, d=2, seed=2)
    kernel = gc.kernels.SquaredExponential(1.0, 4.0)
    fits = {
        s: mcmc.infer(X, y, kernel, Probit(), None, draws=1000, tune=500, chains=2,
                      random_seed=5, nuts_sampler=s)
        for s in ("nutpie", "pymc")
    }  # fmt: skip
    se = [np.sqrt(p.latent_var / p.diagnostics.ess_bulk_min) for p in fits.values()]
    gap = np.abs(fits["nutpie"].latent_mean - fits["pymc"].latent_mean)
    assert np.all(gap < 5 * np.hypot(*se))
    assert fits["nutpie"].diagnostics.sampler == "nutpie"
    assert "z" not in fits["nutpie"].idata.posterior  # (the compiled model records f only)
    assert fits["nutpie"].idata.posterior.attrs["sampling_time"] > 0


@pytest.mark.filterwarnings("ignore:MCMC diagnostics")  # (short chains: the route is tested)
def test_where_the_compiled_density_is_unavailable_nutpie_compiles_the_model(
    monkeypatch,
) -> None:
    """E.g. numba cannot write its cache (a read-only install and home): a warning, and
    nutpie samples the PyMC model instead (the same posterior, compiled per fit)."""

    def unavailable(*args, **kwargs):
        raise RuntimeError("cannot cache function 'log_phi_ratio': no locator available")

    monkeypatch.setattr(_compiled, "whitened_model", unavailable)
    X, y = toy_data(n=20, d=2, seed=1)
    with pytest.warns(RuntimeWarning, match="compiled density is unavailable.*no locator"):
        post = mcmc.infer(X, y, gc.kernels.SquaredExponential(1.0, 1.0), Probit(), None,
                          draws=500, tune=500, chains=2, random_seed=0)  # fmt: skip
    assert post.diagnostics.sampler == "nutpie" and post.diagnostics.fallback == ""
    assert "z" in post.idata.posterior  # (the PyMC model's variables)


def test_the_buffer_is_checked() -> None:
    args, data = _problem(Probit())
    with pytest.raises(ValueError, match="the buffer pack"):
        _compiled.whitened_model(data[:-1])
    assert not data.flags.writeable
