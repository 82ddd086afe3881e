"""The run plan (issue 34): the cost model, its refusal and ``compare``'s use of it."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpc_compare as gc
from gpc_compare.cli import main
from gpc_compare.comparison import study_fields
from gpc_compare.study import StudyConfig
from gpc_compare.study import plan as gp

ROOT = Path(__file__).resolve().parents[2]


def _config(tmp_path: Path, n: int, engines=("laplace", "ep", "mcmc"), d: int = 3):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(n, d)), columns=[f"x{i}" for i in range(d)])
    frame["y"] = np.arange(n) % 2
    frame.to_csv(tmp_path / "data.csv", index=False)
    fields = study_fields("data.csv", "y", name="c", engines=engines)
    return StudyConfig.from_dict(fields, tmp_path / "study.toml"), frame


def test_dense_cost_grows_as_n_cubed_at_large_n() -> None:
    small, large = gp.fit_seconds("laplace", [8000, 16000], 2)
    assert 6.0 < large / small <= 8.0  # O(n^3) Cholesky, with an O(n^2) part
    sparse_small, sparse_large = gp.fit_seconds("svgp", [50000, 100000], 2)
    assert sparse_large / sparse_small < 2.01  # O(n M^2)


def test_the_model_reproduces_the_scale_studys_dense_fits_within_2x() -> None:
    scale = pd.read_csv(ROOT / "results" / "scale" / "summary.csv")
    big = scale[scale["n_train"].eq(8000) & scale["method"].isin(["laplace", "ep", "kl"])]
    assert len(big) == 6
    for row in big.itertuples():
        est = float(gp.job_seconds(row.method, "probit", 8000, row.d, optimize=False))
        assert 0.5 < est / row.fit_seconds < 2.0, (row.method, est, row.fit_seconds)


def test_plan_is_printed_and_kept_under_the_limit(tmp_path) -> None:
    config, _ = _config(tmp_path, 60)
    plan = gp.plan_study(config, workers=2)
    assert [r.engine for r in plan.rows] == ["laplace", "ep", "mcmc"]
    assert all(r.jobs == 10 and r.n_train == 48 for r in plan.rows)  # 5 folds, 2 repeats
    assert plan.seconds < 60  # 60 cases: seconds
    out = io.StringIO()
    gp.check_plan(plan, 30.0, config, out)
    text = out.getvalue()
    assert "laplace" in text and "estimated wall time" in text and len(text.splitlines()) < 25


def test_a_plan_over_the_limit_is_refused_with_a_subsample_that_fits(tmp_path) -> None:
    config, _ = _config(tmp_path, 6000)
    plan = gp.plan_study(config, workers=2)
    assert plan.seconds > 30 * 60  # (issue 34: dense engines at n = 6,366 ran for hours)
    assert "sparse engines" in plan.text()
    with pytest.raises(ValueError, match=r"--subsample (\d+).*fitc_ep,svgp") as info:
        gp.check_plan(plan, 30.0, config)
    fits = int(info.value.args[0].split("--subsample ")[1].split()[0])
    assert 500 <= fits < 6000
    rows = [
        gp.estimate_job(r.method, "probit", fits * 4 // 5, r.d, r.optimize, 2) for r in plan.rows
    ]
    assert max(sum(5 * s for s in rows) / 2, max(rows)) <= 30 * 60
    (tmp_path / "sparse").mkdir()
    sparse, _ = _config(tmp_path / "sparse", 6000, ("fitc_ep", "svgp"))
    gp.check_plan(gp.plan_study(sparse, workers=2), 30.0, sparse)  # the way out fits


def test_compare_refuses_before_writing_anything(tmp_path) -> None:
    X = np.random.default_rng(1).normal(size=(40, 2))
    y = np.arange(40) % 2
    out = io.StringIO()
    with pytest.raises(ValueError, match="exceeds the limit of 1e-06 min"):
        gc.compare(X, y, output=tmp_path / "out", max_minutes=1e-6, progress=out)
    assert "estimated wall time" in out.getvalue()
    assert not (tmp_path / "out").exists()


def test_cli_compare_prints_the_plan_and_exits_2(tmp_path, capsys) -> None:
    _config(tmp_path, 40)
    code = main(
        ["compare", str(tmp_path / "data.csv"), "--target", "y", "--output",
         str(tmp_path / "out"), "--max-minutes", "0.000001"]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 2
    assert "estimated wall time" in captured.out
    assert "--subsample" in captured.err and "--max-minutes" in captured.err
    assert not (tmp_path / "out").exists()


def test_a_job_beyond_the_memory_is_said(tmp_path) -> None:
    config, _ = _config(tmp_path, 60, ("laplace", "svgp"))
    plan = gp.plan_study(config, workers=2)
    laplace, svgp = plan.rows
    assert laplace.memory_bytes == 8 * 48**2 * 10  # n x n matrices, with the gradient's
    assert svgp.memory_bytes == 6 * 8 * 48 * 128  # n x M ones
    small = gp.Plan(plan.rows, 2, plan.n_cases, available=laplace.memory_bytes - 1)
    assert "laplace: more memory than this machine has available" in small.text()
    assert "svgp" not in small.text().splitlines()[-1]  # (sparse: never skipped)
