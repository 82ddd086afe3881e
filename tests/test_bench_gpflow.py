"""benchmarks/bench_gpflow_multiclass.py's own parts, without GPflow: the numpy copy of
GPflow's robust-max expectation, our bound at any q, and the exit when GPflow is missing
(the comparison itself needs GPflow's virtual environment; its committed numbers are
checked by tests/findings/test_findings_gpflow.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import gpc_compare as gc
from gpc_compare.likelihoods._diagonal import prob_largest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
try:
    import bench_gpflow_multiclass as bench
finally:
    sys.path.pop(0)


def test_gpflow_formula_unclipped_is_our_probability_of_the_largest() -> None:
    """Without GPflow's shrinking of Phi and with 200 Gauss-Hermite nodes, the copy of
    ``RobustMax.prob_is_largest`` is P_y = Pr(f_y is the largest), our trapezoid rule's
    (:func:`prob_largest`, error below 1e-12) to 1e-10; with the shrinking (1e-6) it is
    lower by at most (C - 1) 1e-6."""
    rng = np.random.default_rng(3)
    n, C = 40, 5
    mean, var = rng.normal(0, 2, (n, C)), rng.uniform(0.2, 3.0, (n, C))
    y = rng.integers(0, C, n)
    ours = prob_largest(y, mean, var)[0]
    np.testing.assert_allclose(
        bench.gpflow_prob_largest(y, mean, var, 200, clip=False), ours, rtol=0, atol=1e-10
    )
    clipped = bench.gpflow_prob_largest(y, mean, var, 200)
    assert np.all(np.abs(clipped - ours) <= (C - 1) * 1e-6)


def test_bound_at_our_q_is_our_bound() -> None:
    """bound_at (the bound from q alone, used to score GPflow's q) gives our fit's bound at
    our q, and its KL term is E - bound."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((30, 2))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    Z = X[::3]
    kernel = gc.kernels.SquaredExponential(1.2, 2.0)
    lik = gc.likelihoods.RobustMax(epsilon=bench.EPSILON)
    post = gc.fit(X, y, "svgp", kernel, lik, inducing=Z)
    prob = {"X": X, "y": y, "Z": Z, "lengthscale": 1.2, "variance": 2.0}
    bound, e, kl, se = bench.bound_at(prob, post.likelihood, *bench.q_for_gpflow(post))
    assert se is None
    assert bound == pytest.approx(post.log_marginal_likelihood, rel=1e-10, abs=1e-10)
    assert kl > 0 and e - kl == pytest.approx(bound, abs=1e-12)


@pytest.mark.parametrize("python", ["/nonexistent/python", sys.executable])
def test_missing_gpflow_exits_with_code_2(python: str, capsys) -> None:
    """No interpreter, or one without GPflow (this one): exit 2, saying what is needed."""
    if python == sys.executable and importlib.util.find_spec("gpflow") is not None:
        pytest.skip("GPflow is importable here")  # pragma: no cover
    with pytest.raises(SystemExit) as stop:
        bench.main(["--gpflow-python", python])
    assert stop.value.code == 2
    assert "--gpflow-python PATH" in capsys.readouterr().err
