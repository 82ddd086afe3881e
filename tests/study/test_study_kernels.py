"""Several kernels in one study (``[kernels.LABEL]``): the axis, its table, report and labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpc_compare import study
from gpc_compare.cli import main
from gpc_compare.report import write_report

from .test_study import FAST, reproducible, write_study

SE = '[kernel]\nname = "squared_exponential"\nlengthscale = "sqrt_d"\n'
AXIS = (
    '[kernels.squared_exponential]\nlengthscale = "sqrt_d"\n\n'
    '[kernels.nn]\nname = "neural_network"\nvariance = 2.0\n'
)
NN_ONLY = '[kernels.nn]\nname = "neural_network"\nvariance = 2.0\n'


def _study(tmp_path: Path, name: str, kernels: str) -> Path:
    assert SE in FAST
    return write_study(tmp_path, name, text=FAST.replace(SE, kernels))


def test_two_kernel_study_equals_two_one_kernel_studies(tmp_path: Path) -> None:
    """Every row of a study with two kernels equals the row of the same data set, split and
    engine in the one-kernel study of that kernel (timings aside); the `[kernel]` form keeps
    its job ids, and the same kernel under the same label has the same job id."""
    out = tmp_path / "out"
    paths = {
        "both": _study(tmp_path, "both", AXIS),
        "se": _study(tmp_path, "se", SE),
        "nn": _study(tmp_path, "nn", NN_ONLY),
    }
    tables = {}
    for name, path in paths.items():
        summary = study.run_study(path, out, workers=1)
        assert summary.failed == 0
        tables[name] = pd.read_csv(out / name / "results.csv")
    both = tables["both"]
    assert list(both.columns) == study.TABLE_COLUMNS
    assert sorted(set(both.kernel)) == ["nn", "squared_exponential"]
    assert set(tables["se"].kernel) == {"squared_exponential"}  # [kernel]: the kernel's name
    n_metrics = len(tables["se"]) // 4  # 2 splits x 2 engines
    assert len(both) == 2 * len(tables["se"]) and n_metrics > 5
    se_part = reproducible(both[both.kernel == "squared_exponential"])
    pd.testing.assert_frame_equal(
        se_part.drop(columns="job_id"), reproducible(tables["se"]).drop(columns="job_id")
    )
    pd.testing.assert_frame_equal(
        reproducible(both[both.kernel == "nn"]), reproducible(tables["nn"])
    )
    # the kernels really differ: the NN kernel's hyperparameters and scores are its own
    lp = both[both.metric == "mean_log_predictive"].groupby("kernel")["value"].mean()
    assert abs(lp["nn"] - lp["squared_exponential"]) > 1e-4
    # job ids: [kernel] studies as before (no label in the id), the axis labels its jobs
    plain = study.expand(study.load_study(write_study(tmp_path, "plain")))
    assert [j.id.split("__")[1] for j in plain] == ["s0", "s0", "s1", "s1"]
    assert {i.split("__", 1)[0] for i in tables["se"].job_id} == {"breast_cancer"}
    assert set(tables["se"].job_id.str.split("__").str[1]) == {"s0", "s1"}
    assert set(both.job_id.str.split("__").str[1]) == {"nn", "squared_exponential"}
    for job in study.expand(study.load_study(paths["both"])):
        assert (out / "both" / "jobs" / f"{job.id}.json").is_file()
        assert job.id.startswith(f"breast_cancer__{job.kernel_label}__s{job.split}__")

    # the report groups by kernel: a section per data set and kernel, and the comparison
    text = write_report(out / "both").read_text()
    assert "## Kernels compared" in text
    # the evidence profiles are drawn per data set and kernel (they were computed under the
    # plain data-set label and matched no panel)
    from gpc_compare.report import _load
    from gpc_compare.report.profiles import evidence_profiles

    config = study.load_study(out / "both" / "study.toml")
    loaded = _load(out / "both", config)
    profiles = evidence_profiles(config, loaded.records, loaded.datasets, ["laplace"])
    assert {p.dataset for p in profiles} == {"breast_cancer / nn",
                                             "breast_cancer / squared_exponential"}  # fmt: skip
    assert all(np.isfinite(p.log_evidence).all() for p in profiles)
    assert "### breast_cancer / nn" in text and "### breast_cancer / squared_exponential" in text
    assert "squared_exponential (squared_exponential), nn (neural_network) kernels" in text
    row = next(line for line in text.splitlines() if line.startswith("| breast_cancer | ep |"))
    means = [
        both[(both.kernel == k) & (both.engine == "ep") & (both.metric == "mean_log_predictive")][
            "value"
        ].mean()
        for k in ("squared_exponential", "nn")
    ]
    assert row.split(" | ")[2:4] == [f"{m:.3f}" for m in means]


@pytest.mark.parametrize(
    ("kernels", "message"),
    [
        ('[kernels."a b"]\nname = "matern52"\n', r"kernels\.a b: must be letters, digits"),
        ('[kernels.".."]\nname = "matern52"\n', r"kernels\.\.\.: must be letters"),
        ('[kernels."se/1"]\nname = "matern52"\n', r"kernels\.se/1: must be letters"),
        ("[kernels.se]\nlengthscale = 1.0\n", r"kernels\.se\.name: missing"),
        ('[kernels.se]\nname = "rbf"\n', r"kernels\.se\.name: unknown kernel 'rbf'"),
        ("[kernels.nn]\nname = 'neural_network'\nard = true\n", r"kernels\.nn\.ard: the neural"),
        ("[kernels.matern52]\nvariance = 0\n", r"kernels\.matern52\.variance: must be a positive"),
        ("kernels = 3\n", r"kernels: must hold one table per kernel"),
        (SE + "[kernels.matern52]\n", r"kernel: give one \[kernel\] table or several"),
    ],
)
def test_kernel_labels_and_tables_are_checked_at_load(tmp_path, kernels, message, capsys) -> None:
    path = _study(tmp_path, "bad", kernels)
    with pytest.raises(study.StudyError, match=message) as info:
        study.load_study(path)
    assert str(info.value).startswith(f"{path}: ")
    assert main(["run", str(path), "--output", str(tmp_path / "out")]) == 2
    assert "Traceback" not in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_kernel_axis_jobs_and_defaults(tmp_path: Path) -> None:
    """data set x kernel x split x engine, in file order; ``name`` defaults to the label."""
    config = study.load_study(_study(tmp_path, "axis", "[kernels.matern52]\n" + AXIS))
    assert list(config.kernels) == ["matern52", "squared_exponential", "nn"]
    assert config.kernels["matern52"]["name"] == "matern52"
    assert config.kernels["nn"] == {
        "name": "neural_network", "lengthscale": "sqrt_d", "variance": 2.0, "ard": False
    }  # fmt: skip
    jobs = study.expand(config)
    assert [(j.kernel_label, j.split, j.engine) for j in jobs[:5]] == [
        ("matern52", 0, "laplace"), ("matern52", 0, "ep"), ("matern52", 1, "laplace"),
        ("matern52", 1, "ep"), ("squared_exponential", 0, "laplace"),
    ]  # fmt: skip
    assert len(jobs) == 3 * 2 * 2 and len({j.id for j in jobs}) == 12
    # the same seed and split for every kernel: the kernels are compared on paired folds
    assert len({j.seed for j in jobs if (j.split, j.engine) == (0, "ep")}) == 1
    assert jobs[0].describe() == "breast_cancer/matern52/split 0/laplace"
    kernel = study.problem.make_kernel(config.kernels["nn"], 4)
    assert type(kernel).__name__ == "NeuralNetwork"
    np.testing.assert_allclose(kernel.theta, np.log([2.0, 2.0]))  # ell = sqrt(4), sigma_f^2 = 2
