"""The report's text (``report.md``): a list of section functions, and the committed
studies' reports written again from their committed records, word for word."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from gpc_compare.report import _load, run_command
from gpc_compare.report.markdown import SECTIONS, Study, report_markdown
from gpc_compare.study import load_study

ROOT = Path(__file__).resolve().parents[2]


def _rebuilt(name: str, tmp_path: Path) -> tuple[str, str, Study]:
    """A committed study's report.md and the text written again from its records (the
    figures as the committed report lists them)."""
    src = ROOT / "results" / name
    copy = tmp_path / src.name
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns("*.nc", "figures"))
    config = load_study(copy / "study.toml")
    loaded = _load(copy, config)
    committed = (src / "report.md").read_text()
    made = [(f, c) for c, f in re.findall(r"!\[(.*?)\]\(figures/(.*?)\)", committed)]
    where = Path("results") / name  # (as run: from the root)
    command = run_command(where, config.name)
    args = (config, loaded.table, loaded.jobs, loaded.summary, loaded.records,
            loaded.datasets, list(config.engines), made, command, where)  # fmt: skip
    study = Study(*args, loaded.paired)
    return committed, report_markdown(*args, loaded.paired), study


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory):
    """:func:`_rebuilt` once per committed study for the module's tests."""
    cache: dict[str, tuple[str, str, Study]] = {}

    def get(name: str) -> tuple[str, str, Study]:
        if name not in cache:
            cache[name] = _rebuilt(name, tmp_path_factory.mktemp(name))
        return cache[name]

    return get


def _without_date(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("- Report written")]


@pytest.mark.parametrize("name", ["ep_loo", "approximations_logistic"])
def test_a_committed_report_is_written_again_word_for_word(name, rebuilt, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)  # (the report names the command and folder as run, relative)
    if not (ROOT / "results" / name / "jobs").is_dir():
        pytest.skip(f"results/{name} has no committed job records")
    committed, text, study = rebuilt(name)
    assert _without_date(text) == _without_date(committed)
    # the report is its sections, in order, each a list of lines
    parts = [section(study) for section in SECTIONS]
    assert all(isinstance(p, list) and all(isinstance(s, str) for s in p) for p in parts)
    joined = "\n".join(line for p in parts for line in p).rstrip() + "\n"
    assert _without_date(joined) == _without_date(text)  # (the clock may tick between)
    titles = [line for line in text.splitlines() if line.startswith("## ")]
    assert titles[0] == "## Findings" and titles[-1] == "## Figures"
    assert "## Timings" in titles and "## Hyperparameters used" in titles


def test_sections_with_nothing_to_say_say_nothing(rebuilt, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    if not (ROOT / "results" / "ep_loo" / "jobs").is_dir():
        pytest.skip("results/ep_loo has no committed job records")
    _, _, study = rebuilt("ep_loo")
    from dataclasses import replace

    from gpc_compare.report import markdown

    bare = replace(study, records=[], made=[])
    assert markdown._mcmc_diagnostics(bare) == []
    assert markdown._evidence_section(bare) == []  # (no [evidence.*] estimators)
    assert markdown._skipped(bare) == [] and markdown._unfinished(bare) == []
    assert markdown.monte_carlo_bounds(bare) == []
    assert markdown._figures(bare) == ["## Figures", ""]
    header = markdown._header(study)
    assert header[0] == "# Study `ep_loo`" and header[-1] == ""
    assert any(line.startswith("- Hyperparameters: policy") for line in header)


def test_the_report_says_how_many_repeats_of_the_folds() -> None:
    from gpc_compare.report.markdown import _split_text

    assert _split_text({"kind": "kfold", "n_splits": 5}) == "5-fold stratified cross-validation"
    assert _split_text({"kind": "kfold", "n_splits": 5, "n_repeats": 2}) == (
        "5-fold stratified cross-validation, 2 repeats (each a new shuffle)"
    )


def test_the_monte_carlo_bounds_section_sets_each_bound_against_its_re_estimate(
    rebuilt, monkeypatch
) -> None:
    """``## Monte Carlo bounds``: per data set and engine, the bound on the fit's own draws
    less its re-estimate on independent draws (mean and largest, in nats; the largest in
    combined standard errors), the fits above the engine's threshold, and the data sets
    whose jobs were written before the check."""
    from dataclasses import replace

    from gpc_compare.engines import kl_softmax
    from gpc_compare.report.notices import monte_carlo_bounds

    monkeypatch.chdir(ROOT)
    if not (ROOT / "results" / "approximations_multiclass" / "jobs").is_dir():
        pytest.skip("results/approximations_multiclass has no committed job records")
    _, _, study = rebuilt("approximations_multiclass")
    held_out = ("log_evidence_held_out", "log_evidence_held_out_se")
    kl = [
        replace(r, extra={k: v for k, v in r.extra.items() if k not in held_out})
        for r in sorted(study.records, key=lambda r: (r.dataset, r.split))
        if r.engine == "kl" and r.dataset in ("iris", "wine") and r.split < 4
    ]
    iris, wine = kl[:4], kl[4:]
    assert all(r.log_evidence_se > 0 for r in kl)  # (Monte Carlo bounds)
    assert monte_carlo_bounds(replace(study, records=kl)) == []  # (no re-estimate: nothing)
    # the iris fits' excesses: 0.1 and 0.2 nats at se 0.05 of the re-estimate, 1.0 nat at
    # se 0.5, and 2.0 at an se of zero on both sides (its multiple infinite)
    excess, se_out = [0.1, 0.2, 1.0, 2.0], [0.05, 0.05, 0.5, 0.0]
    broken = f"RuntimeWarning: {kl_softmax.BROKEN_DOWN}: its expected log likelihood ..."
    search = f"RuntimeWarning: hyperparameter search: 1 of 30 fits ...: 1 x {broken}"
    checked = [
        replace(
            r,
            log_evidence_se=r.log_evidence_se if e < 2 else 0.0,
            extra={held_out[0]: r.log_evidence - e, held_out[1]: s},
            warnings=(broken,) if e == 2 else (search,),  # (the search's: not this fit's)
        )
        for r, e, s in zip(iris, excess, se_out, strict=True)
    ]
    lines = monte_carlo_bounds(replace(study, records=[*wine, *checked[::-1]]))
    assert lines[0] == "## Monte Carlo bounds"
    (row,) = [line for line in lines if line.startswith("| iris")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    in_se = [
        e / float(np.hypot(r.log_evidence_se, s))
        for r, e, s in zip(iris[:3], excess[:3], se_out[:3], strict=True)
    ]
    above = 1 + sum(v > 3 for v in in_se)  # (the infinite multiple is above too)
    assert cells == ["iris", "KL", "4", "0.825", "2.000", "inf", str(above), "1"]
    assert "Jobs of these engines on wine were written before the check" in " ".join(lines)
    # an unknown standard error gives no multiple, and hides no other
    unknown = [replace(checked[2], log_evidence_se=None), checked[0]]
    (row,) = [x for x in monte_carlo_bounds(replace(study, records=unknown)) if "| iris" in x]
    assert row.split("|")[6].strip() == f"{in_se[0]:.1f}"
