"""results/trust/README.md: its findings are :func:`studies/trust.py`'s ``findings`` and
``grid_findings`` of the committed trust.csv and grid.csv, word for word, and grid.csv is
the probit grid of results/approximations_grid, point for point."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..helpers import study_script

ROOT = Path(__file__).resolve().parents[2]
TRUST = ROOT / "results" / "trust"


def test_the_trust_findings_are_computed_from_the_committed_table() -> None:
    trust = study_script("trust")
    df = pd.read_csv(TRUST / "trust.csv")
    readme = (TRUST / "README.md").read_text()
    assert len(df) == 90  # six data sets x 5 splits x (Laplace, EP, KL)
    for line in trust.findings(df):
        assert line in readme, line
    # the reference's held-out score beside each check is the committed MCMC record's
    src = pd.read_csv(ROOT / "results" / "approximations" / "results.csv")
    mcmc = src[(src.engine == "mcmc") & (src.metric == "mean_log_predictive")]
    both = df.merge(mcmc, on=["dataset", "split"], validate="many_to_one")
    assert len(both) == 90
    np.testing.assert_allclose(both.mcmc_mean_log_predictive, both.value, rtol=1e-12)


def test_the_grid_findings_are_computed_from_the_committed_grid() -> None:
    """Every Laplace, EP and KL point of the probit grid checked once; the evidence beside
    each check is the committed grid's at that point (engine and SMC); the findings and
    the contingency table are the README's."""
    trust = study_script("trust")
    grid = pd.read_csv(TRUST / "grid.csv")
    source = pd.read_csv(ROOT / "results" / "approximations_grid" / "probit" / "grid.csv")
    assert len(grid) == 6 * 49 * 3
    assert not grid.duplicated(["dataset", "point", "engine"]).any()
    key = ["dataset", "log_lengthscale", "log_sf"]
    smc = source[source.method == "smc"]
    both = grid.merge(smc, on=key, suffixes=("", "_src"), validate="many_to_one")
    np.testing.assert_array_equal(both.smc_log_evidence, both.log_evidence_src)
    own = grid.merge(source, left_on=[*key, "engine"], right_on=[*key, "method"])
    assert len(own) == len(grid)
    np.testing.assert_allclose(own.log_evidence_x, own.log_evidence_y, atol=1e-5)
    readme = (TRUST / "README.md").read_text()
    for line in [*trust.grid_findings(grid), *trust.grid_table_lines(grid)]:
        assert line in readme, line
    # the claim for Laplace, counted here directly
    laplace = grid[grid.engine == "laplace"]
    low = laplace.smc_log_evidence - laplace.log_evidence > trust.GAP_NATS
    table = trust.grid_tables(grid)["laplace"]
    assert table.loc[True].sum() == low.sum()
    assert table.loc[True, True] == (low & ~(laplace.pareto_k <= 0.7)).sum()


def test_the_sonar_findings_are_computed_from_the_committed_table() -> None:
    """results/trust/sonar: its first check is results/trust's (EP on sonar's first split,
    the same seed), and the README's findings are ``findings`` of sonar.csv."""
    sonar = study_script("trust_sonar")
    df = pd.read_csv(TRUST / "sonar" / "sonar.csv")
    assert len(df) == len(sonar.SUBSETS) + len(sonar.LOG_VARIANCES) + 4
    trust = pd.read_csv(TRUST / "trust.csv")
    first = trust[(trust.dataset == "sonar") & (trust.split == 0) & (trust.engine == "ep")]
    assert df.pareto_k.iloc[0] == first.pareto_k.iloc[0]
    assert df.is_log_evidence.iloc[0] == first.is_log_evidence.iloc[0]
    readme = (TRUST / "sonar" / "README.md").read_text()
    for line in sonar.findings(df):
        assert line in readme, line
