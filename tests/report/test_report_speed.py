"""The report refits nothing at its own pace (issue 34): ``gc.compare``'s studies draw no
evidence profiles, other studies' profiles are kept in ``profiles.json`` and a rerun of
the report refits nothing; report writing says what it does."""

from __future__ import annotations

import io

import numpy as np
import pytest

import gpc_compare as gc
from gpc_compare import report, study
from gpc_compare.report import profiles, write_report
from gpc_compare.study.plan import plan_study

STUDY = """
name = "prof"
[[datasets]]
name = "crabs"
subsample = 40
[splits]
n_splits = 2
n_repeats = 1
[hyperparameters]
n_restarts = 0
[engines.laplace]
"""


@pytest.fixture
def drawn(monkeypatch) -> dict[str, tuple]:
    """The figures' arguments, by name, in place of drawing them (for speed: what is
    tested here is what the report computes, not how it draws)."""
    out: dict[str, tuple] = {}
    for name in ("metrics", "reliability", "latent", "evidence", "timings", "mcmc"):
        attribute = "rank_plots" if name == "mcmc" else f"plot_{name}"

        def record(*args, _name=name, **kwargs):
            out[_name] = args
            return "MCMC rank plots (ArviZ)" if _name == "mcmc" else True

        monkeypatch.setattr(report, attribute, record)
    return out


@pytest.fixture
def fits(monkeypatch) -> list[int]:
    """Counts the profiles' engine fits."""
    calls: list[int] = []
    real = profiles.fit

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(profiles, "fit", counted)
    return calls


def test_a_compare_studys_report_performs_no_fit(tmp_path, fits, drawn) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = (X[:, 0] > 0).astype(int)
    result = gc.compare(X, y, engines=["laplace"], folds=2, n_repeats=1, output=tmp_path,
                        workers=1, psis=False)  # fmt: skip
    assert not result.study.evidence_profiles
    assert [(r.engine, r.jobs, r.n_train) for r in result.plan.rows] == [("laplace", 2, 15)]
    resumed = plan_study(result.study, 1, result.result_dir)  # (a rerun: nothing left to run)
    assert (resumed.done, resumed.rows) == (2, ())
    out = io.StringIO()
    write_report(result.result_dir, progress=out)
    assert fits == []
    assert "report compare: 2 finished job(s) read" in out.getvalue()
    assert "writing report.md" in out.getvalue()
    assert len(drawn["evidence"][0]) == 2 and drawn["evidence"][1] == []  # (records only)


def test_profiles_are_cached_and_a_rerun_refits_nothing(tmp_path, fits, drawn) -> None:
    path = tmp_path / "prof.toml"
    path.write_text(STUDY)
    study.run_study(path, tmp_path / "out", workers=1)
    result_dir = tmp_path / "out" / "prof"
    out = io.StringIO()
    write_report(result_dir, progress=out)
    first = len(fits)
    assert first == 2 * 11  # two hyperparameters, 11 points (the value used among them)
    assert len(drawn["evidence"][1]) == 2
    assert "evidence profiles: laplace on crabs" in out.getvalue()
    assert (result_dir / "profiles.json").exists()
    config = study.load_study(result_dir / "study.toml")
    records = list(study.load_records(result_dir).values())
    cached = profiles.evidence_profiles(
        config, records, ["crabs"], ["laplace"], cache=result_dir / "profiles.json"
    )
    fresh = profiles.evidence_profiles(config, records, ["crabs"], ["laplace"])
    assert len(fits) == first + 2 * 11  # the cached call refitted nothing
    for a, b in zip(cached, fresh, strict=True):
        np.testing.assert_array_equal(a.grid, b.grid)
        np.testing.assert_allclose(a.log_evidence, b.log_evidence, rtol=0, atol=0)
    write_report(result_dir)
    assert len(fits) == first + 2 * 11


def test_evidence_profiles_is_a_boolean_field() -> None:
    fields = {"name": "p", "datasets": ["crabs"], "engines": {"laplace": {}}}
    assert study.StudyConfig.from_dict(fields).evidence_profiles is True
    off = study.StudyConfig.from_dict({**fields, "evidence_profiles": False})
    assert off.evidence_profiles is False
    with pytest.raises(study.StudyError, match="evidence_profiles: must be true or false"):
        study.StudyConfig.from_dict({**fields, "evidence_profiles": "no"})
