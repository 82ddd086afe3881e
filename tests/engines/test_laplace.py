"""The Laplace engine against GPML, scikit-learn, finite differences and closed forms."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.optimize
from scipy import integrate, special, stats
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

import gpc_compare as gc
from gpc_compare.engines import _newton, laplace
from gpc_compare.kernels import Constant, Matern52, SquaredExponential
from gpc_compare.likelihoods import Logistic, Probit

from ..helpers import GPML_CASES, central_difference, load_gpml, toy_data


# --------------------------------------------------------------------------- GPML oracle
@pytest.mark.parametrize("case_name", GPML_CASES)
@pytest.mark.parametrize("likelihood", ["probit", "logistic"])
def test_matches_gpml_toolbox(case_name, likelihood):
    case = load_gpml(case_name)
    ref = case["results"][f"laplace_{likelihood}"]
    kernel = SquaredExponential(case["lengthscale"], case["variance"])
    mean = case["mean"] if "mean" in ref["gradient"] else None
    post = gc.fit(case["X"], case["y"], kernel=kernel, likelihood=likelihood, mean=mean, tol=1e-14)
    assert post.convergence.converged
    assert post.log_marginal_likelihood == pytest.approx(ref["log_marginal_likelihood"], rel=1e-6)
    expected = [ref["gradient"][name] for name in post.hyperparameter_names]
    np.testing.assert_allclose(post.log_marginal_likelihood_gradient, expected, rtol=1e-4)
    mu, var = post.predict_latent(case["X_test"])
    np.testing.assert_allclose(mu, ref["test_latent_mean"], atol=1e-6)
    np.testing.assert_allclose(var, ref["test_latent_var"], atol=1e-6)
    p = post.predict_proba(case["X_test"])
    if likelihood == "probit":
        np.testing.assert_allclose(p, ref["test_p1"], atol=1e-6)
    else:
        # GPML integrates the logistic link by an erf mixture (about 1e-4 accurate); the
        # reference is an adaptive integral of the logistic against GPML's own moments
        accurate = [
            integrate.quad(
                lambda f, m=m, v=v: stats.norm.pdf(f, m, np.sqrt(v)) * special.expit(f),
                -np.inf,
                np.inf,
                epsabs=1e-13,
            )[0]
            for m, v in zip(ref["test_latent_mean"], ref["test_latent_var"], strict=True)
        ]
        np.testing.assert_allclose(p, accurate, atol=1e-6)
        np.testing.assert_allclose(p, ref["test_p1"], atol=5e-4)


# --------------------------------------------------------------------- scikit-learn peer
@pytest.mark.parametrize(("ell", "sf2"), [(0.5, 1.0), (1.0, 4.0), (3.0, 30.0)])
def test_logistic_evidence_and_gradient_match_scikit_learn(ell, sf2):
    X, y = toy_data(n=40, d=3, seed=3)
    post = gc.fit(X, y, kernel=SquaredExponential(ell, sf2), likelihood="logistic", tol=1e-14)
    sk_kernel = ConstantKernel(sf2, "fixed") * RBF(ell, "fixed")
    sk = GaussianProcessClassifier(kernel=sk_kernel, optimizer=None).fit(X, y)
    assert post.log_marginal_likelihood == pytest.approx(
        sk.log_marginal_likelihood_value_, rel=1e-6
    )
    # scikit-learn's gradient is with respect to (log sigma_f^2, log ell): ours reversed
    free = ConstantKernel(sf2) * RBF(ell)
    sk_free = GaussianProcessClassifier(kernel=free, optimizer=None).fit(X, y)
    lml, grad = sk_free.log_marginal_likelihood(np.log([sf2, ell]), eval_gradient=True)
    assert lml == pytest.approx(post.log_marginal_likelihood, rel=1e-6)
    np.testing.assert_allclose(post.log_marginal_likelihood_gradient, grad[::-1], rtol=1e-5)


# ------------------------------------------------------------------ finite differences
def _lml(X, y, kernel, likelihood, mean):
    has_mean = mean is not None
    p = kernel.n_hyperparameters

    def fun(theta):
        m = theta[p] if has_mean else None
        post = gc.fit(
            X, y, kernel=kernel.with_theta(theta[:p]), likelihood=likelihood, mean=m, tol=1e-15
        )
        return post.log_marginal_likelihood

    theta = np.append(kernel.theta, [mean] if has_mean else [])
    return fun, theta


@pytest.mark.parametrize("ell", [1e-2, 1e-1, 1.0, 10.0, 1e2])
@pytest.mark.parametrize("likelihood", ["probit", "logistic"])
@pytest.mark.parametrize("ard", [False, True], ids=["iso", "ard"])
@pytest.mark.parametrize("mean", [None, 0.7], ids=["zero_mean", "mean"])
def test_gradient_matches_finite_differences(ell, likelihood, ard, mean):
    X, y = toy_data(n=18, d=2, seed=5)
    lengthscale = np.array([ell, 2.0 * ell]) if ard else ell
    kernel = SquaredExponential(lengthscale, 2.5)
    post = gc.fit(X, y, kernel=kernel, likelihood=likelihood, mean=mean, tol=1e-15)
    fun, theta = _lml(X, y, kernel, likelihood, mean)
    numeric = central_difference(fun, theta, h=1e-5)
    np.testing.assert_allclose(post.log_marginal_likelihood_gradient, numeric, rtol=1e-5, atol=1e-6)


def test_gradient_with_composite_kernel_matches_finite_differences():
    X, y = toy_data(n=25, d=2, seed=7)
    kernel = Matern52([0.8, 1.5], 2.0) + Constant(0.5)
    post = gc.fit(X, y, kernel=kernel, likelihood="logistic", mean=-0.3, tol=1e-15)
    fun, theta = _lml(X, y, kernel, "logistic", -0.3)
    np.testing.assert_allclose(
        post.log_marginal_likelihood_gradient, central_difference(fun, theta), rtol=1e-5, atol=1e-6
    )


# -------------------------------------------------------------------------- the mode
@pytest.mark.parametrize("likelihood", ["probit", "logistic"])
def test_mode_satisfies_the_stationarity_equation(likelihood):
    X, y = toy_data(n=60, d=2, seed=11)
    post = gc.fit(X, y, kernel=SquaredExponential(0.8, 3.0), likelihood=likelihood, mean=0.4)
    _, d1, _, _ = post.likelihood.derivatives(post.y, post.f_hat)
    # Bishop 6.84 (with a prior mean): f^ - m = K grad log p(y | f^); for the logistic
    # likelihood grad log p = t - sigma(f^), t = (y + 1)/2
    np.testing.assert_allclose(post.f_hat - 0.4, post.K @ d1, atol=1e-8)
    if likelihood == "logistic":
        t = (post.y + 1) / 2
        sigma = 1 / (1 + np.exp(-post.f_hat))
        np.testing.assert_allclose(post.f_hat - 0.4, post.K @ (t - sigma), atol=1e-8)


def test_seed_003_one_dimensional_example():
    """p(z) ~ exp(-z^2/2) sigma(20 z + 4) (Bishop Figure 4.14) as a one-point GP:
    f = 20 z + 4 has prior N(4, 400), i.e. a constant kernel of variance 400 and mean 4."""
    # gc.fit refuses a training set of one class, so call the engine itself
    post = laplace.infer(np.zeros((1, 1)), np.ones(1), Constant(400.0), Logistic(), 4.0, tol=1e-15)
    z_mode = (post.f_hat[0] - 4.0) / 20.0
    var_z = post.latent_var[0] / 400.0

    def neg_log_p(z):
        return 0.5 * z**2 + np.logaddexp(0.0, -(20.0 * z + 4.0))

    res = scipy.optimize.minimize_scalar(neg_log_p, bracket=(-1, 0, 1), tol=1e-12)
    assert z_mode == pytest.approx(res.x, abs=1e-8)
    h = 1e-4
    curvature = (neg_log_p(res.x + h) - 2 * neg_log_p(res.x) + neg_log_p(res.x - h)) / h**2
    assert 1.0 / var_z == pytest.approx(curvature, rel=1e-6)


# ------------------------------------------------------------- iteration and warm starts
def test_convergence_is_reported_and_warm_start_helps(data):
    X, y = data
    k = SquaredExponential(1.0, 2.0)
    post = gc.fit(X, y, kernel=k, likelihood="logistic")
    assert post.convergence.converged and post.convergence.iterations >= 2
    assert post.convergence.last_change < 1e-10
    near = k.with_theta(k.theta + 0.01)
    cold = gc.fit(X, y, kernel=near, likelihood="logistic")
    warm = gc.fit(X, y, kernel=near, likelihood="logistic", warm_start=post.warm_start)
    assert warm.convergence.iterations < cold.convergence.iterations
    assert warm.log_marginal_likelihood == pytest.approx(cold.log_marginal_likelihood, abs=1e-9)
    with pytest.raises(ValueError, match="warm_start must have shape"):
        gc.fit(X, y, kernel=near, warm_start=np.zeros(3))


def test_not_converged_warns_and_says_so(data):
    X, y = data
    with pytest.warns(RuntimeWarning, match="not converged after 1 Newton"):
        post = gc.fit(X, y, kernel=SquaredExponential(1.0, 50.0), likelihood="logistic", max_iter=1)
    assert not post.convergence.converged
    msg = post.convergence.message
    assert "not converged" in msg and "Newton step in f" in msg and "raise max_iter" in msg
    assert np.isfinite(post.log_marginal_likelihood)


@pytest.mark.parametrize("chord", [True, False])
def test_mode_at_a_huge_signal_variance_stops_at_the_limit_of_rounding(chord, monkeypatch):
    # seen inside scikit-learn's cross-validation on breast cancer (fold 2 of 5): at the
    # optimiser's sigma_f^2 = 4140 the Newton direction carries rounding error of ~2e-5
    # in f, above sqrt(tol); Newton used to halve its step for 100 iterations and warn.
    # Newton steps alone stop at the limit of rounding; with chord steps (one factor reused)
    # the steps shrink below sqrt(tol) and the iteration converges as usual: same mode.
    if not chord:
        newton = _newton.newton
        monkeypatch.setattr(
            _newton, "newton", lambda *a, chord=None, **k: newton(*a, chord=None, **k)
        )
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    train = list(StratifiedKFold(5).split(X, y))[1][0]
    X, y = StandardScaler().fit_transform(X[train]), 2.0 * y[train] - 1.0
    kernel = SquaredExponential(55.50048365230234, 4140.185334649946)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        post = laplace.infer(X, y, kernel, Probit(), None)
    assert post.convergence.converged and post.convergence.factorizations < 20
    if not chord:
        assert "limit of rounding" in post.convergence.message
    # the mode: alpha = d log p(y|f) / df (R&W eq. 3.17) to the rounding K's scale allows
    f = kernel(X) @ post.alpha
    d1 = Probit().derivatives(y, f)[1]
    assert np.max(np.abs(post.alpha - d1)) < 1e-6 * np.max(np.abs(post.alpha))


@pytest.mark.parametrize("likelihood", ["probit", "logistic"])
@pytest.mark.parametrize(
    ("ell", "sf2"), [(1e-3, 1.0), (1e3, 1.0), (1.0, np.exp(6.0)), (1e3, np.exp(10.0))]
)
def test_extreme_hyperparameters_and_separable_data_stay_finite(likelihood, ell, sf2):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 2))
    y = np.where(X[:, 0] > 0, 1, -1)  # perfectly separable
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow, no non-convergence
        post = gc.fit(X, y, kernel=SquaredExponential(ell, sf2), likelihood=likelihood)
        grad = post.log_marginal_likelihood_gradient
        p = post.predict_proba(X)
    assert post.convergence.converged
    assert np.isfinite(post.log_marginal_likelihood) and post.log_marginal_likelihood < 0
    assert np.all(np.isfinite(grad)) and np.all(np.isfinite(post.latent_var))
    assert np.all((p > 0) & (p < 1) | np.isclose(p, np.round(p)))
    assert np.all(np.isfinite(post.log_predictive(X, y)))


def test_laplace_evidence_is_below_the_truth_for_one_probit_point():
    """One probit observation: the exact evidence is Phi(m / sqrt(1 + k)); Laplace
    underestimates it, as the literature reports for its evidence."""
    post = laplace.infer(np.zeros((1, 1)), np.ones(1), Constant(4.0), Probit(), -1.0)
    exact = stats.norm.logcdf(-1.0 / np.sqrt(5.0))
    assert post.log_marginal_likelihood < exact
    assert post.log_marginal_likelihood == pytest.approx(exact, abs=0.2)


@pytest.mark.parametrize(("ell", "sf2"), [(1.0, 2.0), (0.1, 1e5), (1.0, 1e4)])
def test_default_tolerance_gives_the_evidence_to_1e8(ell, sf2):
    """Where Psi is nearly flat (large sf2) a small decrease in Psi alone does not mean
    the mode has settled; the stopping rule also asks for a small Newton step in f."""
    X, y = toy_data(n=60, d=2, seed=3)
    k = SquaredExponential(ell, sf2)
    default = gc.fit(X, y, kernel=k)
    tight = gc.fit(X, y, kernel=k, tol=1e-15)
    assert default.convergence.converged
    assert default.log_marginal_likelihood == pytest.approx(tight.log_marginal_likelihood, abs=1e-8)
    np.testing.assert_allclose(
        default.log_marginal_likelihood_gradient,
        tight.log_marginal_likelihood_gradient,
        rtol=1e-6,
        atol=1e-8,
    )


# ------------------------------------------------------- diag(Sigma) from R (the gradient)
@pytest.mark.parametrize(
    ("ell", "sf2", "weak"), [(0.7, 1.0, "none"), (0.7, 400.0, "some"), (2.0, 1e3, "most")]
)
def test_diag_sigma_from_R_equals_the_direct_form(ell, sf2, weak):
    """The gradient's diag(Sigma) = (1 - R_ii / W_i) / W_i, with the weak-site fallback
    K_ii - (K R K)_ii where W_i Sigma_ii < 1e-4 (probit far in its tails: tiny W) and the
    V fallback where most sites are weak, equals K_ii - |V e_i|^2 computed directly."""
    X, y = toy_data(n=60, d=2, seed=4)
    if weak == "most":
        y = np.where(X[:, 0] > 0, 1, -1)  # separable: most sites far in the tails
    post = laplace.infer(X, y, SquaredExponential(ell, sf2), Probit())
    ts = post.W * np.diag(post.latent_cov)  # W_i Sigma_ii
    n_weak = int(np.sum(ts < 1e-4))
    assert {"none": n_weak == 0, "some": 0 < n_weak <= 30, "most": n_weak > 30}[weak]
    direct = np.diag(post.K) - np.einsum("ij,ij->j", post._V, post._V)
    np.testing.assert_allclose(post._diag_sigma, direct, rtol=1e-9, atol=1e-12 * sf2)
    B = np.eye(60) + post.sW[:, None] * post.K * post.sW
    R = post.sW[:, None] * np.linalg.inv(B) * post.sW
    np.testing.assert_allclose(post._R, R, rtol=1e-9, atol=1e-14)


def test_warm_start_at_moves_the_mode_to_first_order():
    """warm_start_at(theta) is alpha moved by d alpha = -W (I + K W)^-1 dK d1 dtheta: its
    error at a nearby theta is second order (a tenth of the step gives ~ a hundredth),
    where alpha itself is first-order off; Newton from it takes fewer iterations."""
    X, y = toy_data(n=50, d=2, seed=3)
    k = SquaredExponential(0.8, 4.0)
    post = laplace.infer(X, y, k, Probit(), 0.3, tol=1e-14)
    assert post.warm_start_at(post.hyperparameters).shape == (1, 50)  # no gradient yet
    assert np.all(np.isfinite(post.log_marginal_likelihood_gradient))  # computes the b_j
    errors = []
    for h in (0.1, 0.01):
        theta = post.hyperparameters + h * np.array([1.0, -1.0, 0.5])
        there = laplace.infer(X, y, k.with_theta(theta[:2]), Probit(), theta[2], tol=1e-14)
        start = post.warm_start_at(theta)
        np.testing.assert_array_equal(start[0], post.alpha)
        errors.append([np.max(np.abs(a - there.alpha)) for a in start])
        cold = laplace.infer(X, y, k.with_theta(theta[:2]), Probit(), theta[2], warm_start=start[0])
        warm = laplace.infer(X, y, k.with_theta(theta[:2]), Probit(), theta[2], warm_start=start)
        # less work: fewer factorisations, or as few (one at the start and one at the mode
        # is the least there is) and fewer (chord) iterations
        w, c = warm.convergence, cold.convergence
        assert (w.factorizations, w.iterations) < (c.factorizations, c.iterations)
        assert warm.log_marginal_likelihood == pytest.approx(
            there.log_marginal_likelihood, abs=1e-9
        )
    (plain_1, moved_1), (plain_2, moved_2) = errors
    assert 5 < plain_1 / plain_2 < 20  # first order
    assert moved_1 / moved_2 > 50 and moved_2 < 0.05 * plain_2  # second order


@pytest.mark.parametrize("sf2", [1.0, 100.0, 1e4])
@pytest.mark.parametrize("lik", [Probit(), Logistic()])
def test_chord_steps_reach_the_newton_mode(sf2, lik, monkeypatch):
    """Chord steps (the last Cholesky factor reused while it contracts) reach the mode
    Newton's steps alone reach, to the evidence's tolerance, with no more factorisations."""
    X, y = toy_data(n=80, d=3, seed=11)
    k = SquaredExponential(0.7, sf2)
    chord = laplace.infer(X, y, k, lik, 0.2)
    newton = _newton.newton
    monkeypatch.setattr(_newton, "newton", lambda *a, chord=None, **kw: newton(*a, **kw))
    plain = laplace.infer(X, y, k, lik, 0.2)
    assert chord.convergence.converged and plain.convergence.converged
    assert chord.log_marginal_likelihood == pytest.approx(plain.log_marginal_likelihood, abs=1e-9)
    np.testing.assert_allclose(chord.latent_mean, plain.latent_mean, rtol=0,
                               atol=1e-6 * np.abs(plain.latent_mean).max())  # fmt: skip
    np.testing.assert_allclose(
        chord.log_marginal_likelihood_gradient,
        plain.log_marginal_likelihood_gradient,
        rtol=1e-6,
        atol=1e-8,
    )
    assert chord.convergence.factorizations <= plain.convergence.factorizations
    assert plain.convergence.factorizations == plain.convergence.iterations + 1


@pytest.mark.parametrize("ell", [3.0, 0.5])
def test_chord_steps_settle_the_mode_at_a_large_signal_variance(ell, monkeypatch):
    """At sigma_f^2 = 1e4 Psi's rounding halves small chord steps and an error in f moves
    the evidence by up to max K_ii times it (R&W eq. 5.23): found by review, a damped chord
    step counted as converged left the evidence 1e-7 off, and an unscaled test 5e-9. Cold,
    warm and Newton-only fits now agree to 2e-10."""
    X, y = toy_data(n=120, d=3, seed=3)
    k = SquaredExponential(ell, 1e4)
    cold = laplace.infer(X, y, k, Probit(), None)
    near = laplace.infer(X, y, k.with_theta(k.theta + 0.05), Probit(), None)
    warm = laplace.infer(X, y, k, Probit(), None, warm_start=near.warm_start)
    newton = _newton.newton
    monkeypatch.setattr(_newton, "newton", lambda *a, chord=None, **kw: newton(*a, **kw))
    plain = laplace.infer(X, y, k, Probit(), None)
    for post in (cold, warm):
        assert post.convergence.converged
        assert post.log_marginal_likelihood == pytest.approx(
            plain.log_marginal_likelihood, abs=2e-10
        )
