"""The core numbers of studies/synthetic_2d.py and studies/iris.py, on cheap configurations.

The scripts are imported from the repository's ``studies/`` directory (they are not part of
the package). No MCMC here: the studies' MCMC parts only call ``gc.fit(method="mcmc")``,
which tests/test_mcmc.py and tests/test_softmax.py cover.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.special import log_expit

import gpc_compare as gc
import gpc_compare.datasets  # noqa: F401
from gpc_compare.study import load_study_script

STUDIES = Path(__file__).resolve().parent.parent / "studies"


def _load(name: str):
    return load_study_script(STUDIES / f"{name}.py")


@pytest.fixture(scope="module")
def synth():
    return _load("synthetic_2d")


@pytest.fixture(scope="module")
def iris():
    return _load("iris")


def _rule(f: np.ndarray) -> np.ndarray:
    """(m, 2) log class probabilities of a logistic model with log-odds f."""
    return np.column_stack([log_expit(-f), log_expit(f)])


# --------------------------------------------------------------------------- synthetic_2d
def test_study_contract(synth, iris):
    for module in (synth, iris):
        assert callable(module.run)
        assert module.__doc__ and "Writes" in module.__doc__


def test_grid_cells_have_equal_area(synth):
    G1, G2, points = synth.grid((-1.0, 1.0, 0.0, 3.0), size=4)
    assert points.shape == (16, 2)
    # cell centres: -0.75, -0.25, 0.25, 0.75 and 0.375, 1.125, 1.875, 2.625
    np.testing.assert_allclose(np.unique(points[:, 0]), [-0.75, -0.25, 0.25, 0.75])
    np.testing.assert_allclose(np.unique(points[:, 1]), [0.375, 1.125, 1.875, 2.625])


def test_disagreement_area_of_two_half_planes(synth):
    # x1 > 0 against x2 > 0 on [-1, 1]^2: they disagree on two of the four quadrants
    _, _, pts = synth.grid((-1.0, 1.0, -1.0, 1.0), size=100)
    a, b = _rule(5.0 * pts[:, 0]), _rule(5.0 * pts[:, 1])
    assert synth.disagreement_fraction(a, b) == pytest.approx(0.5, abs=1e-12)
    # x1 > 0 against x1 > 0.5: the strip 0 < x1 < 0.5 is a quarter of the box (its edges
    # fall on cell edges, so the midpoint rule is exact)
    c = _rule(5.0 * (pts[:, 0] - 0.5))
    assert synth.disagreement_fraction(a, c) == pytest.approx(0.25, abs=1e-12)
    assert synth.disagreement_fraction(a, a) == 0.0


def test_disagreement_area_of_a_disc(synth):
    # inside the disc of radius 0.5 against nowhere: pi 0.25 / 4 of [-1, 1]^2, to the
    # midpoint rule's accuracy on a 400 x 400 grid (boundary cells: about 1e-3)
    _, _, pts = synth.grid((-1.0, 1.0, -1.0, 1.0), size=400)
    inside = _rule(50.0 * (0.25 - np.sum(pts**2, axis=1)))
    nowhere = _rule(-np.ones(pts.shape[0]))
    assert synth.disagreement_fraction(inside, nowhere) == pytest.approx(np.pi / 16, abs=1e-3)


def test_decide_tie_and_shape(synth):
    assert synth.decide(np.log([[0.5, 0.5], [0.4, 0.6], [0.6, 0.4]])).tolist() == [0, 1, 0]
    with pytest.raises(ValueError, match="shape"):
        synth.decide(np.zeros(3))


def test_expected_error_is_the_documented_bayes_error(synth):
    # the Bayes rule's mean conditional error over 200,000 draws from each model, against
    # the Bayes errors documented in gc.datasets (grid quadrature); 4 standard errors
    for name, documented in (("bishop_mixture", 0.0992874), ("ripley_mixture", 0.0893265)):
        data = gc.datasets.load(name, n=200_000, random_seed=7)
        assert data.bayes_error == documented
        lp = data.true_log_proba(data.X)
        est = synth.expected_error(lp, synth.decide(lp))
        e = np.exp(np.min(lp, axis=1))
        se = e.std(ddof=1) / np.sqrt(e.size)
        assert abs(est - documented) < 4 * se, (name, est, documented, se)
        # the excess error of any other rule is positive: here always deciding class 1
        assert synth.expected_error(lp, np.ones(e.size, dtype=int)) > est + 0.1


def test_bayes_rule_makes_80_errors_on_synth_te(synth):
    # documented in load_ripley_synth: the Bayes rule errs on 80 of synth.te's 1000 cases
    te = gc.datasets.load("ripley_synth", subset="test")
    wrong = synth.decide(te.true_log_proba(te.X)) != te.y
    assert int(wrong.sum()) == 80


def test_mean_kl_by_hand(synth):
    lt = np.log([[0.3, 0.7], [0.5, 0.5]])
    le = np.log([[0.5, 0.5], [0.5, 0.5]])
    by_hand = (0.3 * np.log(0.6) + 0.7 * np.log(1.4)) / 2
    assert synth.mean_kl(lt, le) == pytest.approx(by_hand, rel=1e-12)
    assert synth.mean_kl(lt, lt) == 0.0


def test_engines_against_bayes_on_a_small_problem(synth):
    """Laplace and EP (no MCMC) on 80 Bishop-mixture cases, scored on 2000 fresh draws.

    Checks what must hold whatever the fit: the Bayes rule has the least expected error
    on the same inputs (pointwise optimal), the KL is nonnegative, the engines' two class
    probabilities sum to one, and the mean KL equals the Bayes predictor's expected log
    score minus the engine's."""
    train = gc.datasets.load("bishop_mixture", n=80, random_seed=0)
    test = gc.datasets.load("bishop_mixture", n=2000, random_seed=1)
    posts, seconds = synth.fit_engines(train.X, train.y, mcmc_options=None)
    assert set(posts) == {"laplace", "ep"}
    prob = synth.Problem("bishop_mixture", "t", train, test, (-3.5, 3.5, -2.5, 3.0))
    rows, maps = synth.evaluate(prob, posts, seconds, size=20)
    v = {(r["engine"], r["quantity"]): r["value"] for r in rows}
    lt = test.true_log_proba(test.X)
    for engine, post in posts.items():
        lp = synth.log_proba(post, test.X)
        np.testing.assert_allclose(np.logaddexp(lp[:, 0], lp[:, 1]), 0.0, atol=1e-10)
        assert v[(engine, "excess_error_rate")] >= 0.0
        assert v[(engine, "mean_kl_true_to_engine")] > 0.0
        expected_log_score = np.mean(np.sum(np.exp(lt) * (lt - lp), axis=1))
        assert v[(engine, "mean_kl_true_to_engine")] == pytest.approx(expected_log_score)
        # the grid shortcut (log p0 from log p1) agrees with asking the engine
        _, _, pts = synth.grid(prob.box, 20)
        np.testing.assert_allclose(
            synth.log_proba(post, pts, both=False), synth.log_proba(post, pts), atol=1e-9
        )
        assert maps[engine].shape == (400,)
    assert v[("bayes", "expected_error_rate")] == pytest.approx(
        synth.expected_error(lt, synth.decide(lt))
    )


# --------------------------------------------------------------------------- iris
def test_kernlab_lengthscale_by_hand(iris):
    # squared distances 1, 9, 4 -> quantiles (linear) q0.9 = 8, q0.1 = 1.6;
    # sigma = (1/8 + 1/1.6) / 2 = 0.375; l = 1 / sqrt(2 sigma)
    X = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]])
    assert iris.kernlab_automatic_lengthscale(X) == pytest.approx(1 / np.sqrt(0.75), rel=1e-12)


def test_iris_softmax_laplace_fit(iris):
    data = iris.load_petals()
    assert data.X.shape == (150, 2)
    assert data.feature_names == ["petal length (cm)", "petal width (cm)"]
    X = iris.scaler(data.X)(data.X)
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)
    post = iris.fit_softmax_laplace(X, data.y)
    assert post.kernel.variance == 1.0  # sigma_f = 1 stays fixed
    error = np.mean(post.predict(X) != data.y)
    assert error < 0.06
    # the learned length-scale maximises the Laplace evidence: 10% either way is worse
    ell = float(post.kernel.lengthscale)
    for other in (ell / 1.1, ell * 1.1):
        worse = iris.fit_softmax_laplace(X, data.y, lengthscale=other)
        assert worse.log_marginal_likelihood < post.log_marginal_likelihood
