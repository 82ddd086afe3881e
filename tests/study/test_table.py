"""The tidy table: the committed studies' tables rebuilt from their committed records
(``gpc-compare report`` rebuilds them so) equal the committed ``results.csv``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from gpc_compare import study

ROOT = Path(__file__).resolve().parents[2]

#: Committed studies with their job records, and whether the rebuilt table is the same
#: bytes (else equal to float round-off: the marginal KL's last digit depends on the BLAS).
COMMITTED = {
    "approximations": False,
    "approximations_logistic": True,
    "ep_loo": True,
    "iris": True,
    "kernels": True,
    "approximations_grid/probit": True,
}


@pytest.mark.parametrize("name", list(COMMITTED))
def test_a_committed_table_is_rebuilt_from_its_records(name, tmp_path) -> None:
    src = ROOT / "results" / name
    if not (src / "jobs").is_dir():
        pytest.skip(f"results/{name} has no committed job records")
    copy = tmp_path / src.name
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns("*.nc", "figures", "*.png"))
    table = study.assemble(copy)
    rebuilt, committed = (copy / "results.csv").read_bytes(), (src / "results.csv").read_bytes()
    if COMMITTED[name]:
        assert rebuilt == committed
    else:
        pd.testing.assert_frame_equal(
            pd.read_csv(copy / "results.csv"), pd.read_csv(src / "results.csv"),
            check_exact=False, rtol=1e-12, atol=0,
        )  # fmt: skip
    pd.testing.assert_frame_equal(table, pd.read_csv(src / "results.csv"), rtol=1e-12)
    if (src / "jobs.csv").exists():
        assert (copy / "jobs.csv").read_bytes() == (src / "jobs.csv").read_bytes()
    assert list(table.columns) == study.TABLE_COLUMNS


def test_same_hyperparameters() -> None:
    from gpc_compare.study.record import Hyperparameters
    from gpc_compare.study.table import same_hyperparameters

    def rec(names, values):
        return study.JobRecord("i", "s", "d", 0, "e", "probit", "fixed", 0, {}, "ok",
                               hyperparameters=Hyperparameters(names, values, "fixed"))  # fmt: skip

    a = rec(("a", "b"), (1.0, 2.0))
    assert same_hyperparameters(a, rec(("a", "b"), (1.0, 2.0 + 1e-9)))
    assert not same_hyperparameters(a, rec(("a", "b"), (1.0, 2.0 + 1e-9)), rtol=0, atol=1e-10)
    assert not same_hyperparameters(a, rec(("a", "c"), (1.0, 2.0)))
