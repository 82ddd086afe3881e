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
    # every check with k-hat <= 0.7 carries its importance estimate's Monte Carlo error,
    # NaN above (Vehtari et al. 2024: the error estimate is unreliable there too), and every
    # reference its own: the held-out finding compares the two combined
    _check_se(df)
    assert (df.mcmc_mean_log_predictive_mcse > 0).all()
    gap, se = trust.OPTIMA.combined_error(df)
    np.testing.assert_allclose(
        se**2, df.is_mean_log_predictive_se**2 + df.mcmc_mean_log_predictive_mcse**2
    )


def _check_se(df: pd.DataFrame) -> None:
    """The corrected score's se: positive and finite where k-hat <= 0.7, NaN elsewhere."""
    reliable = df.pareto_k <= 0.7
    assert reliable.sum() > 0 and (~reliable).sum() > 0
    assert (df[reliable].is_mean_log_predictive_se > 0).all()
    assert np.isfinite(df[reliable].is_mean_log_predictive_se).all()
    assert df[~reliable].is_mean_log_predictive_se.isna().all()


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


def test_the_optima_findings_are_computed_from_the_committed_tables() -> None:
    """results/trust_optima/optima.csv: Laplace's and KL's rows are their studies' tables
    (results/trust_at_laplace, results/trust_at_kl), the same jobs as results/approximations'
    repeat 0 (their own held-out score and evidence reproduce it), beside MCMC at their own
    hyperparameters; EP's are results/trust's. The README's section is ``section`` of it."""
    optima = study_script("trust_optima")
    df = pd.read_csv(ROOT / "results" / "trust_optima" / "optima.csv")
    at_ep = pd.read_csv(TRUST / "trust.csv")
    ep = df[df.engine == "ep"].reset_index(drop=True)
    pd.testing.assert_frame_equal(
        ep[optima.SHARED], at_ep[at_ep.engine == "ep"][optima.SHARED].reset_index(drop=True)
    )
    approximations = pd.read_csv(ROOT / "results" / "approximations" / "results.csv")
    for engine, path in optima.STUDIES.items():
        own = df[df.engine == engine]
        assert len(own) > 0
        res = pd.read_csv(path / "results.csv")
        for metric, column, engine_of in [
            ("mean_log_predictive", "mean_log_predictive", engine),
            ("log_evidence", "log_evidence", engine),
            ("pareto_k", "pareto_k", engine),
            ("is_mean_log_predictive", "is_mean_log_predictive", engine),
            ("is_mean_log_predictive_se", "is_mean_log_predictive_se", engine),
            ("marginal_kl_mean", "marginal_kl", engine),
            ("mean_log_predictive", "mcmc_mean_log_predictive", "mcmc"),
            ("log_evidence", "smc_log_evidence", "mcmc"),
        ]:
            values = res[(res.metric == metric) & (res.engine == engine_of)]
            both = own.merge(values, on=["dataset", "split"], validate="one_to_one")
            assert len(both) == len(own), (engine, metric)
            if column == "is_mean_log_predictive_se":  # (the record's, where k-hat <= 0.7)
                both = both[both.pareto_k <= 0.7]
            np.testing.assert_allclose(both[column], both.value, rtol=1e-12, err_msg=metric)
        _check_se(own)
        # the same jobs as results/approximations' repeat 0 (its engine label at its own optimum)
        for metric in ("mean_log_predictive", "log_evidence"):
            src = approximations[
                (approximations.engine == engine) & (approximations.metric == metric)
            ]
            both = own.merge(src, on=["dataset", "split"], validate="one_to_one")
            assert len(both) == len(own)
            np.testing.assert_allclose(both[metric], both.value, atol=1e-6)
    readme = (TRUST / "README.md").read_text()
    for line in [
        *optima.findings(optima.complete(df), at_ep),
        *optima.per_dataset_lines(optima.complete(df)),
    ]:
        assert line in readme, line
