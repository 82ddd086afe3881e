"""The delicate numerics against 50-digit arithmetic (mpmath)."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import scipy.linalg

from gpc_compare.numerics import (
    add_outer,
    cho_inverse,
    cholesky,
    inverse_from_triangular_inverse,
    log_mean_exp,
    log_phi,
    log_sigmoid,
    newton_1d,
    probit_ratio,
)

mpmath.mp.dps = 60

Z_GRID = [-1e4, -1e3, -150.0, -100.5, -99.5, -40.0, -12.0, -5.0, -1.0, 0.0, 0.5, 3.0, 8.0, 30.0]


def _mp_log_phi(z: float) -> float:
    # log1p(-Phi(-z)) in the upper tail, where Phi(z) rounds to 1 even at 50 digits
    return float(mpmath.log1p(-mpmath.ncdf(-z)) if z > 0 else mpmath.log(mpmath.ncdf(z)))


@pytest.mark.parametrize("z", Z_GRID)
def test_log_phi_matches_high_precision(z):
    ref = _mp_log_phi(z)
    assert np.isfinite(log_phi(z))
    assert log_phi(z) == pytest.approx(ref, rel=1e-13, abs=1e-300)


def test_log_phi_far_tail_is_exact():
    # log Phi(-40) = -804.608442013754 (not -inf): the tail is computed, not underflowed
    assert log_phi(-40.0) == pytest.approx(-804.6084420137538, rel=1e-14)


@pytest.mark.parametrize("z", Z_GRID)
def test_probit_ratio_and_gap(z):
    r, gap, cgap = probit_ratio(np.array([z]))
    r_ref = mpmath.npdf(z) / mpmath.ncdf(z)
    assert r[0] == pytest.approx(float(r_ref), rel=1e-13, abs=1e-300)
    # z + r and (z + r)(z + 2r) - 1 are differences of nearly equal numbers in the tail
    assert gap[0] == pytest.approx(float(z + r_ref), rel=1e-13, abs=1e-300)
    cgap_ref = (z + r_ref) * (z + 2 * r_ref) - 1
    assert cgap[0] == pytest.approx(float(cgap_ref), rel=1e-11, abs=1e-300)


@pytest.mark.parametrize("f", [-800.0, -40.0, -1.0, 0.0, 2.0, 40.0, 800.0])
def test_log_sigmoid_matches_high_precision(f):
    ref = float(-mpmath.log1p(mpmath.exp(-f)))
    assert log_sigmoid(f) == pytest.approx(ref, rel=1e-14, abs=1e-320)


def test_log_sigmoid_tails_are_exact():
    assert log_sigmoid(-800.0) == -800.0
    assert log_sigmoid(800.0) == pytest.approx(-np.exp(-800.0), abs=1e-320)
    assert log_sigmoid(800.0) <= 0.0


def test_cholesky_names_the_matrix():
    with pytest.raises(np.linalg.LinAlgError, match="the kernel matrix is not positive definite"):
        cholesky(np.array([[1.0, 2.0], [2.0, 1.0]]), what="kernel matrix")
    L = cholesky(np.array([[4.0, 2.0], [2.0, 3.0]]))
    np.testing.assert_allclose(L @ L.T, [[4.0, 2.0], [2.0, 3.0]], rtol=1e-14)


def test_newton_1d_finds_the_root_where_plain_newton_fails() -> None:
    # g = -arctan(x - 0.3): plain Newton from |x - 0.3| > 1.39 diverges; the bracket holds it
    def grad_hess(x: float) -> tuple[float, float]:
        return -np.arctan(x - 0.3), -1.0 / (1.0 + (x - 0.3) ** 2)

    for x0 in (None, -9.0, 9.5):
        assert newton_1d(grad_hess, -10.0, 10.0, x0=x0) == pytest.approx(0.3, abs=1e-12)

    # the mode of N(0, 1) x sigma(20 z + 4) (Bishop Fig. 4.14) against 50-digit arithmetic
    def d_log_f(z: float) -> tuple[float, float]:
        a = 20.0 * z + 4.0
        s = 1.0 / (1.0 + np.exp(-a))
        return -z + 20.0 * (1.0 - s), -1.0 - 400.0 * s * (1.0 - s)

    z_mp = mpmath.findroot(lambda z: -z + 20 / (1 + mpmath.exp(20 * z + 4)), 0.08)
    assert newton_1d(d_log_f, -1.0, 21.0, x0=0.0) == pytest.approx(float(z_mp), abs=1e-12)
    # max_iter bounds the work: one step from the midpoint 0 of [-10, 10] is x - g / h with
    # g = arctan(0.3), h = -1 / 1.09
    one = newton_1d(grad_hess, -10.0, 10.0, max_iter=1)
    assert one == pytest.approx(np.arctan(0.3) * 1.09, abs=1e-15)


@pytest.mark.parametrize("n", [1, 7, 127, 128, 129, 300])
def test_inverses_from_the_factor_are_symmetric_and_exact(n):
    """cho_inverse (dpotri) and inverse_from_triangular_inverse (dlauum) mirror LAPACK's
    lower triangle in place by blocks of 128 columns: sizes about the block."""
    rng = np.random.default_rng(n)
    G = rng.normal(size=(n, n))
    A = G @ G.T + n * np.eye(n)
    L = scipy.linalg.cholesky(A, lower=True)
    exact = np.linalg.inv(A)
    Linv = scipy.linalg.lapack.dtrtri(L, lower=1)[0]
    for inv in (cho_inverse(L), inverse_from_triangular_inverse(Linv)):
        np.testing.assert_array_equal(inv, inv.T)
        np.testing.assert_allclose(inv, exact, rtol=0, atol=1e-13 * np.abs(exact).max())


@pytest.mark.parametrize("order", ["C", "F"])
def test_add_outer_updates_in_place(order):
    rng = np.random.default_rng(1)
    A = np.asarray(rng.normal(size=(5, 4)), order=order)
    x, y = rng.normal(size=5), rng.normal(size=4)
    expected = A + 0.3 * np.outer(x, y)
    out = add_outer(A, 0.3, x, y)
    assert out is A
    np.testing.assert_allclose(A, expected, rtol=1e-15, atol=1e-15)
    with pytest.raises(ValueError, match="contiguous"):
        add_outer(np.zeros((6, 6))[::2], 1.0, np.ones(3), np.ones(6))


def test_log_mean_exp_matches_high_precision_and_never_exceeds_the_largest_term():
    rng = np.random.default_rng(3)
    x = rng.normal(scale=30.0, size=(7, 50))
    x[0, :10] = -np.inf
    out = log_mean_exp(x, axis=1)
    for row, value in zip(x, out, strict=True):
        exact = mpmath.log(mpmath.fsum(mpmath.exp(v) for v in row) / len(row))
        assert value == pytest.approx(float(exact), rel=1e-14)
    assert log_mean_exp(x[:, :3], axis=(0, 1)) == pytest.approx(
        float(mpmath.log(mpmath.fsum(mpmath.exp(v) for v in x[:, :3].ravel()) / 21)), rel=1e-14
    )
    assert log_mean_exp(np.full(4, -np.inf)) == -np.inf
    # The predictive of an MCMC fit that is certain in every draw: 399 draws with
    # log p = 0 and one with -6.2e-15 (Iris at sigma_f^2 = 1e5, multinomial probit). The
    # exact mean is -1.6e-17; log-sum-exp minus log S can round above 0 (p > 1).
    certain = np.zeros(400)
    certain[17] = -6.21724894e-15
    assert -1e-16 <= log_mean_exp(certain) <= 0.0
    many = -np.abs(rng.normal(size=(1000, 64))) * 10.0 ** rng.integers(-17, -13, size=(1000, 64))
    assert np.all(log_mean_exp(many, axis=1) <= 0.0)
