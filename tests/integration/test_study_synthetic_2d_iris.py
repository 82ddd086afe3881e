"""The core numbers of studies/synthetic_2d.py and studies/iris.py, on cheap configurations.

The scores against the Bayes rule the synthetic_2d study reports are gc.metrics functions,
tested in tests/metrics/test_metrics.py.

The scripts are imported from the repository's ``studies/`` directory (they are not part of
the package). No MCMC here: the studies' MCMC parts only call ``gc.fit(method="mcmc")``,
which tests/engines/test_mcmc.py and tests/engines/test_softmax.py cover.
"""

from __future__ import annotations

import numpy as np
import pytest

import gpc_compare as gc
from gpc_compare import metrics

from ..helpers import study_script


@pytest.fixture(scope="module")
def synth():
    return study_script("synthetic_2d")


@pytest.fixture(scope="module")
def iris():
    return study_script("iris")


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
        metrics.expected_error_rate(lt, metrics.decide(lt))
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
