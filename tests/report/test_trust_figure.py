"""The report's trust figure (``figures/trust.png``,
:func:`gpc_compare.report.trust_figure.plot_trust`): k-hat per engine and data set with the
0.7 line, beside the measured marginal KL from the reference, drawn from the committed
checks of results/trust (the records built from its table, so that the test reads no job
files) and shown inside the trust section."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpc_compare.report import trust_figure
from gpc_compare.report.markdown import INLINE_FIGURES
from gpc_compare.report.trust import TRUST_CAPTION, trust_section
from gpc_compare.study import JobRecord

ROOT = Path(__file__).resolve().parents[2]


def _committed() -> tuple[list[JobRecord], pd.DataFrame, list[str]]:
    """results/trust/trust.csv as job records with their ``psis``, and the table's
    marginal KL rows (as results.csv holds them)."""
    df = pd.read_csv(ROOT / "results" / "trust" / "trust.csv")
    records = [
        JobRecord(
            id=f"{r.dataset}__s{r.split}__{r.engine}",
            study="trust",
            dataset=r.dataset,
            split=int(r.split),
            engine=r.engine,
            likelihood="probit",
            policy="fixed",
            seed=0,
            versions={},
            status="ok",
            psis={
                "pareto_k": r.pareto_k,
                "khat_threshold": r.khat_threshold,
                "seconds": r.psis_seconds,
            },
        )
        for r in df.itertuples()
    ]
    table = df.assign(metric="marginal_kl_mean", value=df.marginal_kl)
    return records, table, list(dict.fromkeys(df.dataset))


@pytest.fixture
def drawn(monkeypatch):
    """The figures ``plot_trust`` draws, kept instead of written."""
    kept = []
    monkeypatch.setattr(trust_figure, "save_figure", lambda fig, path, dpi: kept.append(fig))
    return kept


def test_the_figure_shows_every_check(drawn, tmp_path) -> None:
    records, table, datasets = _committed()
    engines = ["laplace", "ep", "kl"]
    # a NaN (how a job record stores an infinite k-hat): drawn as inf, the same verdict
    records[1] = JobRecord(
        **{**records[1].__dict__, "psis": {**records[1].psis, "pareto_k": np.nan}}
    )
    assert trust_figure.plot_trust(records, table, datasets, engines, "mcmc", tmp_path / "t.png")
    left, right = drawn[0].axes
    k = np.array([r.psis["pareto_k"] for r in records])
    k[np.isnan(k)] = np.inf
    finite = k[np.isfinite(k)]
    # left: every finite k-hat once, each infinite one as a marker above them all
    ys = np.sort(np.concatenate([c.get_offsets()[:, 1] for c in left.collections]))
    assert ys.size == k.size and np.isinf(k).sum() > 0
    np.testing.assert_allclose(ys[: finite.size], np.sort(finite))
    assert np.all(ys[finite.size :] > finite.max())
    assert 0.7 in [line.get_ydata()[0] for line in left.lines]  # the threshold
    assert [t.get_text() for t in left.get_xticklabels()] == datasets
    # right: k-hat against the marginal KL of the same split, the finite ones
    xy = np.concatenate([c.get_offsets() for c in right.collections])
    kl = table.set_index(["dataset", "split", "engine"]).marginal_kl
    expected = sorted(
        (kl[(r.dataset, r.split, r.engine)], r.psis["pareto_k"])
        for r in records
        if np.isfinite(r.psis["pareto_k"])
    )
    np.testing.assert_allclose(np.array(sorted(map(tuple, xy))), np.array(expected))
    assert right.get_xscale() == "log" and "marginal KL" in right.get_xlabel()


def test_no_check_no_figure_and_the_section_shows_it(drawn, tmp_path) -> None:
    records, table, datasets = _committed()
    bare = [JobRecord(**{**r.__dict__, "psis": {}}) for r in records]
    assert not trust_figure.plot_trust(bare, table, datasets, ["ep"], "mcmc", tmp_path / "t.png")
    assert not drawn and not (tmp_path / "t.png").exists()
    # without a reference's KL: k-hat alone, one panel
    assert trust_figure.plot_trust(records, table.iloc[:0], datasets, ["ep"], None, tmp_path / "t")
    assert len(drawn[0].axes) == 1
    summary = pd.DataFrame(columns=["dataset", "engine", "metric", "mean"])
    lines = trust_section(records, summary, datasets, ["ep"], "mcmc", figure="trust.png")
    assert f"![{TRUST_CAPTION}](figures/trust.png)" in lines
    assert lines[0] == "## Can this approximation be trusted here?"
    assert "trust.png" in INLINE_FIGURES  # (so not drawn again under ## Figures)
    assert not any(
        "figures/" in line for line in trust_section(records, summary, datasets, ["ep"], None)
    )
