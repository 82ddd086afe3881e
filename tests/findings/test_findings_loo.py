"""results/loo/README.md and results/ep_loo/README.md's accuracy section: their numbers are
``studies/loo.py``'s findings of the committed tables, word for word; the tables are the
problems the studies ran (EP's refitted held-out score equals the committed record's)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..helpers import study_script
from .tables import RESULTS, page_text

LOO = RESULTS / "loo"


def _tables():
    return (
        pd.read_csv(LOO / "pointwise.csv"),
        pd.read_csv(LOO / "folds.csv"),
        pd.read_csv(LOO / "ep_loo.csv"),
    )


def test_the_loo_tables_are_the_studies_problems() -> None:
    pointwise, folds, ep_loo = _tables()
    loo = study_script("loo")
    expected = {(d, f) for d in loo.DATASETS for f in loo.FOLDS}
    assert set(zip(folds.dataset, folds.fold, strict=True)) == expected and len(folds) == 30
    # the same folds as results/approximations: EP and Laplace refitted at the committed
    # hyperparameters give the committed held-out scores
    for engine in ("ep", "laplace"):
        np.testing.assert_allclose(
            folds[f"test_{engine}"], folds[f"record_test_{engine}"], atol=1e-6
        )
    # and the same problems as results/ep_loo: its records' LOO values reproduced
    np.testing.assert_allclose(ep_loo.cavity_loo, ep_loo.record_loo, atol=1e-4)
    # every case has a cavity and a PSIS value; exact at every case up to FULL_N
    counts = pointwise.groupby(["dataset", "fold", "engine", "method"]).size().unstack()
    n = folds.set_index(["dataset", "fold"]).n
    assert len(counts) == 90  # 30 folds x 3 engines
    for (dataset, fold, _), row in counts.iterrows():
        m = n[(dataset, fold)]
        assert row.cavity == row.psis == m
        assert row.exact == (m if m <= loo.FULL_N else loo.SUBSAMPLE)
    assert (folds.filter(like="unconverged").to_numpy() == 0).all()
    assert (ep_loo.unconverged == 0).all()


def test_the_loo_findings_are_computed_from_the_committed_tables() -> None:
    pointwise, folds, ep_loo = _tables()
    loo = study_script("loo")
    readme = page_text("loo/README.md")
    lines = [*loo.findings(pointwise, folds), *loo.ep_loo_findings(ep_loo)]
    for line in lines:
        assert " ".join(line.split()) in readme, line
    for row in loo.table_rows(pointwise, folds):
        assert row in readme, row
    top = page_text("README.md")
    assert " ".join(loo.top_finding(pointwise, folds, ep_loo).split()) in top
    ep_page = page_text("ep_loo/README.md")
    for line in loo.ep_loo_findings(ep_loo):
        assert " ".join(line.split()) in ep_page, line


def test_the_sum_error_of_a_subsample_is_the_difference_estimator() -> None:
    """The error of the sum from a subsample: n times the mean error there, with the
    finite-population standard error (Magnusson et al. 2019); the full sum otherwise."""
    loo = study_script("loo")
    rows = []
    for case, cavity, exact in (
        (0, -1.0, -1.5),
        (1, -2.0, -2.0),
        (2, -0.5, None),
        (3, -1.0, -0.75),
    ):
        rows.append(("a", 0, "ep", "cavity", case, cavity))
        if exact is not None:
            rows.append(("a", 0, "ep", "exact", case, exact))
    p = pd.DataFrame(rows, columns=["dataset", "fold", "engine", "method", "case", "value"])
    p["pareto_k"] = np.nan
    e = loo.errors(p, pd.DataFrame({"dataset": ["a"], "fold": [0], "n": [4]})).iloc[0]
    err = np.array([0.5, 0.0, -0.25])
    assert e.sum_error == 4 * err.mean()
    assert np.isclose(e.sum_error_se, 4 * err.std(ddof=1) / np.sqrt(3) * np.sqrt(1 / 4))
    assert e.max_abs_error == 0.5 and e.exact_cases == 3
    # the se of elpd_loo: the cavity's values with the exact ones put in where computed
    assert np.isclose(e.elpd_se, 2 * np.std([-1.5, -2.0, -0.5, -0.75]))
