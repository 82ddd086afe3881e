"""Kernels: values against closed forms and scikit-learn, gradients against finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.gaussian_process import kernels as skk

from gpc_compare import kernels as gk

from .helpers import central_difference

LENGTHSCALES = [1e-2, 1e-1, 1.0, 10.0, 1e2]


def _kernels(ell: float) -> dict[str, gk.Kernel]:
    return {
        "se": gk.SquaredExponential(ell, 1.3),
        "se_ard": gk.SquaredExponential([ell, 2.0 * ell, 0.5 * ell], 0.7),
        "m32": gk.Matern32(ell, 2.0),
        "m32_ard": gk.Matern32([ell, 0.3 * ell, 3.0 * ell], 1.1),
        "m52": gk.Matern52(ell, 0.5),
        "m52_ard": gk.Matern52([0.4 * ell, ell, 2.0 * ell], 1.7),
        "linear": gk.Linear(0.8),
        "constant": gk.Constant(2.5),
        "sum": gk.SquaredExponential(ell, 1.2) + gk.Linear(0.3),
        "product": gk.Matern52(ell, 1.0) * gk.Constant(3.0),
        "fixed_variance": gk.SquaredExponential(ell, 1.0, variance_bounds="fixed"),
        "nn": gk.NeuralNetwork(ell, 1.3),
        "nn_fixed_variance": gk.NeuralNetwork(ell, 0.6, variance_bounds="fixed"),
        "nn_sum": gk.NeuralNetwork(ell, 0.9) + gk.SquaredExponential(2.0 * ell, 0.4),
    }


@pytest.fixture
def X() -> np.ndarray:
    return np.random.default_rng(1).normal(size=(12, 3))


@pytest.mark.parametrize("ell", LENGTHSCALES)
@pytest.mark.parametrize("name", list(_kernels(1.0)))
def test_gradient_matches_finite_differences(name, ell, X):
    kernel = _kernels(ell)[name]
    analytic = kernel.gradient(X)
    numeric = central_difference(lambda t: kernel.with_theta(t)(X), kernel.theta)
    assert analytic.shape == (kernel.n_hyperparameters, 12, 12)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", list(_kernels(1.0)))
def test_diag_cross_covariance_and_positive_definiteness(name, X):
    kernel = _kernels(0.7)[name]
    K = kernel(X)
    np.testing.assert_allclose(kernel.diag(X), np.diag(K), rtol=1e-14)
    np.testing.assert_allclose(kernel(X, X[:5]), K[:, :5], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(K, K.T, atol=1e-15)
    assert np.linalg.eigvalsh(K).min() > -1e-10 * np.abs(K).max()


def test_values_match_closed_forms():
    x, x2 = np.array([[0.0, 0.0]]), np.array([[1.0, 1.0]])  # |x - x'| = sqrt(2)
    ell, s2 = 2.0, 1.5
    r = np.sqrt(2.0) / ell
    se = s2 * np.exp(-0.5 * r**2)
    m32 = s2 * (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r)
    m52 = s2 * (1 + np.sqrt(5) * r + 5 * r**2 / 3) * np.exp(-np.sqrt(5) * r)
    assert gk.SquaredExponential(ell, s2)(x, x2)[0, 0] == pytest.approx(se, rel=1e-14)
    assert gk.Matern32(ell, s2)(x, x2)[0, 0] == pytest.approx(m32, rel=1e-14)
    assert gk.Matern52(ell, s2)(x, x2)[0, 0] == pytest.approx(m52, rel=1e-14)
    assert gk.Linear(s2)(np.array([[1.0, 2.0]]), np.array([[3.0, -1.0]]))[0, 0] == 1.5
    assert gk.Constant(s2)(x, x2)[0, 0] == s2
    # GPML's covNNone: augmented inputs (1, x), P = ell^-2 I
    xa, xb = np.array([1.0, 0.0, 0.0]), np.array([1.0, 1.0, 1.0])
    nn = s2 * np.arcsin(
        (xa @ xb / ell**2) / np.sqrt((1 + xa @ xa / ell**2) * (1 + xb @ xb / ell**2))
    )
    assert gk.NeuralNetwork(ell, s2)(x, x2)[0, 0] == pytest.approx(nn, rel=1e-14)


def _erf_unit_covariance_quad(x: np.ndarray, x2: np.ndarray, ell: float) -> float:
    """E[erf(u.x~) erf(u.x~')], u ~ N(0, I / (2 ell^2)), x~ = (1, x), by adaptive quadrature
    over a = u.x~ (given a, b = u.x~' is normal and E[erf(b) | a] is an erf in closed form)."""
    from scipy import integrate, special, stats

    xa, xb = np.concatenate([[1.0], x]), np.concatenate([[1.0], x2])
    v = 1.0 / (2.0 * ell**2)
    caa, cab, cbb = v * xa @ xa, v * xa @ xb, v * xb @ xb
    cond_var = cbb - cab**2 / caa

    def integrand(a: float) -> float:
        inner = special.erf(cab / caa * a / np.sqrt(1.0 + 2.0 * cond_var))
        return stats.norm.pdf(a, scale=np.sqrt(caa)) * special.erf(a) * inner

    sd = np.sqrt(caa)
    value, _ = integrate.quad(integrand, -12 * sd, 12 * sd, points=[0.0], epsabs=1e-13, limit=200)
    return value


@pytest.mark.parametrize("ell", [0.3, 1.0, 4.0])
def test_neural_network_is_the_covariance_of_erf_units(ell):
    """Williams (1998): k / (sigma_f^2 pi / 2) = E[erf(u.x~) erf(u.x~')] over the hidden
    unit's weights u ~ N(0, I / (2 ell^2)); checked by quadrature to 1e-9 and by Monte Carlo
    over the weights within 4 standard errors."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(4, 2))
    kernel = gk.NeuralNetwork(ell, 1.7)
    K = kernel(X)
    scale = 1.7 * np.pi / 2
    for i in range(4):
        for j in range(i, 4):
            quad = _erf_unit_covariance_quad(X[i], X[j], ell)
            assert K[i, j] == pytest.approx(scale * quad, rel=1e-9, abs=1e-12), (i, j)
    from scipy import special

    U = rng.normal(scale=1.0 / (np.sqrt(2.0) * ell), size=(400_000, 3))  # (bias, w1, w2)
    H = special.erf(U[:, :1] + U[:, 1:] @ X.T)  # each unit's output at the 4 inputs
    prod = H[:, :, None] * H[:, None, :]
    mc, se = prod.mean(axis=0), prod.std(axis=0) / np.sqrt(U.shape[0])
    assert np.all(np.abs(K / scale - mc) < 4 * se + 1e-12)


def test_neural_network_has_one_lengthscale_and_its_names():
    k = gk.NeuralNetwork(2.0, 3.0)
    assert k.hyperparameter_names == ["log_lengthscale", "log_variance"]
    np.testing.assert_allclose(k.theta, np.log([2.0, 3.0]))
    assert k.with_theta(np.log([0.5, 4.0])).lengthscale == pytest.approx(0.5)
    with pytest.raises(ValueError, match="one length-scale"):
        gk.NeuralNetwork([1.0, 2.0])
    X = np.random.default_rng(0).normal(size=(6, 2))
    assert np.all(np.abs(k(X)) <= 3.0 * np.pi / 2)  # |asin| <= pi / 2


def test_matches_scikit_learn(X):
    ell = np.array([0.5, 1.0, 2.0])
    ours = {
        "se": gk.SquaredExponential(ell, 2.0),
        "m32": gk.Matern32(ell, 2.0),
        "m52": gk.Matern52(ell, 2.0),
    }
    theirs = {
        "se": skk.ConstantKernel(2.0) * skk.RBF(ell),
        "m32": skk.ConstantKernel(2.0) * skk.Matern(ell, nu=1.5),
        "m52": skk.ConstantKernel(2.0) * skk.Matern(ell, nu=2.5),
    }
    for name in ours:
        np.testing.assert_allclose(ours[name](X), theirs[name](X), rtol=1e-12, err_msg=name)


def test_hyperparameters_names_bounds_and_copies():
    k = gk.SquaredExponential([1.0, 2.0], 3.0, lengthscale_bounds=(0.1, 10.0))
    assert k.hyperparameter_names == ["log_lengthscale[0]", "log_lengthscale[1]", "log_variance"]
    np.testing.assert_allclose(k.theta, np.log([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(k.bounds[0], np.log([0.1, 10.0]))
    k2 = k.with_theta(np.log([4.0, 5.0, 6.0]))
    np.testing.assert_allclose(k2.lengthscale, [4.0, 5.0])
    assert k2.variance == 6.0
    np.testing.assert_allclose(k.lengthscale, [1.0, 2.0])  # the original is untouched
    fixed = gk.SquaredExponential(1.0, 1.0, variance_bounds="fixed")
    assert fixed.hyperparameter_names == ["log_lengthscale"]
    assert fixed.with_theta(np.array([0.5])).variance == 1.0
    s = gk.SquaredExponential() + gk.Linear()
    assert s.hyperparameter_names == [
        "k1__log_lengthscale",
        "k1__log_variance",
        "k2__log_variance",
    ]
    assert s.with_theta(np.zeros(3)).bounds.shape == (3, 2)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: gk.SquaredExponential(-1.0), "positive"),
        (lambda: gk.SquaredExponential(np.nan), "positive"),
        (lambda: gk.Matern32(1.0, 0.0), "positive"),
        (lambda: gk.SquaredExponential(1.0, lengthscale_bounds=(2.0, 1.0)), "bounds"),
        (lambda: gk.Linear(variance_bounds="loose"), "fixed"),
        (lambda: gk.SquaredExponential().with_theta(np.zeros(3)), "shape"),
    ],
)
def test_bad_hyperparameters_raise(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize("name", list(_kernels(1.0)))
def test_symbolic_form_matches_values_and_gradients(name, X):
    """The PyTensor form (used to sample hyperparameters) equals K, and its autodiff
    gradient equals the analytic dK/d theta."""
    import pytensor
    import pytensor.tensor as pt

    kernel = _kernels(0.8)[name]
    theta = pt.dvector("theta")
    K = pytensor.function([theta], kernel.symbolic(X, theta))(kernel.theta)
    np.testing.assert_allclose(K, kernel(X), rtol=1e-10, atol=1e-11)
    w = np.random.default_rng(0).normal(size=(12, 12))
    grad = pytensor.function([theta], pytensor.grad((kernel.symbolic(X, theta) * w).sum(), theta))
    np.testing.assert_allclose(
        grad(kernel.theta), np.einsum("pij,ij->p", kernel.gradient(X), w), rtol=1e-8, atol=1e-9
    )


@pytest.mark.parametrize("ell", LENGTHSCALES)
@pytest.mark.parametrize("name", list(_kernels(1.0)))
def test_gradient_terms_are_the_contractions_of_the_gradient(name, ell):
    """<M, dK_j> and dK_j V, computed without forming dK_j (stationary kernels), equal the
    contractions of the dense derivatives; inputs far from the origin (the expansion of
    the squared differences is taken about the centred inputs)."""
    rng = np.random.default_rng(3)
    X = 50.0 + rng.normal(size=(40, 3))
    kernel = _kernels(ell)[name]
    B = rng.normal(size=(40, 40))
    M, V = B + B.T, rng.normal(size=(40, 2))
    dK = kernel.gradient(X)
    traces, products = kernel.gradient_terms(X, M, V)
    scale = np.einsum("jik,ik->j", np.abs(dK), np.abs(M))  # sum |M| |dK_j|: the rounding's
    np.testing.assert_allclose(
        traces, np.einsum("jik,ik->j", dK, M), rtol=0, atol=1e-12 * scale.max() + 1e-300
    )
    assert products.shape == (kernel.n_hyperparameters, 40, 2)
    expected = dK @ V
    np.testing.assert_allclose(
        products,
        expected,
        rtol=0,
        atol=1e-12 * np.abs(dK).sum(axis=2).max() * np.abs(V).max() + 1e-300,
    )
    alone, none = kernel.gradient_terms(X, M)
    assert none is None
    np.testing.assert_array_equal(alone, traces)
    K = kernel(X)
    given = kernel.gradient_terms(X, M, V, K=K.copy())  # the caller's K, as the engines pass it
    np.testing.assert_allclose(given[0], traces, rtol=1e-13, atol=1e-13 * scale.max())
    np.testing.assert_allclose(given[1], products, rtol=1e-13, atol=1e-13 * np.abs(products).max())
