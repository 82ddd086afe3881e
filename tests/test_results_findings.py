"""The findings in ``results/*/README.md`` and ``FINDING.md`` are the committed tables' numbers.

Every number a finding states is recomputed here from the committed CSVs (``results.csv``,
``jobs.csv``, ``grid.csv``) and the page must contain exactly the recomputed text: a table
that changes, or a number typed by hand that is wrong, fails the test. Engine-vs-engine
differences are the corrected resampled t-intervals over the folds (Nadeau and Bengio 2003;
:func:`gpc_compare.metrics.paired_difference`), the statistic the reports use, and a "win"
is written only where the interval excludes zero.

The sentences are matched with their whitespace collapsed, so a page may wrap its lines
freely.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpc_compare.metrics import PairedDifference, paired_difference

RESULTS = Path(__file__).resolve().parents[1] / "results"

#: The benchmark data sets in the order the findings list them, and their names there.
NAMES = {
    "breast_cancer": "breast cancer",
    "crabs": "crabs",
    "digits_3v5": "digits",
    "ionosphere": "ionosphere",
    "pima": "Pima",
    "sonar": "sonar",
}
PROBIT_ORDER = ["breast_cancer", "ionosphere", "sonar", "pima", "crabs", "digits_3v5"]


def _page(path: str) -> str:
    """The page's text with every run of whitespace made one space."""
    return " ".join((RESULTS / path).read_text().split())


@cache
def _table(study: str) -> pd.DataFrame:
    return pd.read_csv(RESULTS / study / "results.csv")


def _scores(study: str, metric: str, kernel: str | None = None) -> pd.DataFrame:
    d = _table(study)
    d = d[d.metric == metric]
    return d if kernel is None else d[d.kernel == kernel]


def _diff(
    study: str,
    dataset: str,
    a: str,
    b: str,
    metric: str = "mean_log_predictive",
    kernel: str | None = None,
) -> PairedDifference:
    """The corrected resampled t-interval of engine a - engine b over the folds both ran."""
    s = _scores(study, metric, kernel)
    s = s[s.dataset == dataset]
    sa, sb = (s[s.engine == e].set_index("split") for e in (a, b))
    common = sorted(set(sa.index) & set(sb.index))
    assert len(common) >= 2, (study, dataset, a, b)
    return paired_difference(
        sa.value[common].to_numpy(),
        sb.value[common].to_numpy(),
        sa.n_train[common].to_numpy(),
        sa.n_test[common].to_numpy(),
        higher_is_better=metric not in ("error_rate", "brier", "ece"),
    )


def _ci(p: PairedDifference, fmt: str = "+.4f") -> str:
    """``mean [lower, upper]`` as the findings write a difference."""
    return f"{p.mean:{fmt}} [{p.lower:{fmt}}, {p.upper:{fmt}}]"


def _join(words: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'; 'none' for no words."""
    if not words:
        return "none"
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _wins(diffs: dict[str, PairedDifference]) -> tuple[list[str], list[str], list[str]]:
    """The data sets where a is better, where b is better, and where neither (in order)."""
    out: tuple[list[str], list[str], list[str]] = ([], [], [])
    for dataset, p in diffs.items():
        out[{"a better": 0, "b better": 1}.get(p.verdict, 2)].append(NAMES[dataset])
    return out


def _verdicts(a_name: str, b_name: str, diffs: dict[str, PairedDifference]) -> str:
    """The sentence the findings write after a list of differences."""
    a, b, neither = _wins(diffs)
    parts = [f"{a_name} better on {_join(a)}"] if a else []
    parts += [f"{b_name} better on {_join(b)}"] if b else []
    parts += [f"no win on {_join(neither)}"] if neither else []
    return "; ".join(parts)


def _assert_on_page(page: str, *expected: str) -> None:
    text = _page(page)
    missing = [e for e in expected if e not in text]
    assert not missing, f"{page} does not say (from the committed tables): {missing}"


def _listed(study: str, a: str, b: str, order: list[str], **kw) -> dict[str, PairedDifference]:
    return {d: _diff(study, d, a, b, **kw) for d in order}


def _diff_list(diffs: dict[str, PairedDifference], fmt: str = "+.4f") -> str:
    return ", ".join(f"{NAMES[d]} {_ci(p, fmt)}" for d, p in diffs.items())


def _log_variance(study: str, kernel: str | None = None) -> pd.DataFrame:
    """Mean over folds of each engine's selected log sigma_f^2, data sets x engines."""
    s = _scores(study, "mean_log_predictive", kernel).copy()
    s["lv"] = s.hyperparameters.map(lambda h: json.loads(h)["log_variance"])
    return s.groupby(["dataset", "engine"]).lv.mean().unstack()


# --- approximations_logistic -------------------------------------------------------------


def test_approximations_logistic_finding():
    study, page = "approximations_logistic", "approximations_logistic/README.md"
    order = list(NAMES)
    expected = []
    for a, b, a_name, b_name in [
        ("kl", "ep", "KL", "EP"),
        ("vb", "kl", "VB", "KL"),
        ("laplace", "ep", "Laplace", "EP"),
    ]:
        diffs = _listed(study, a, b, order)
        expected.append(
            f"{a_name} - {b_name}: {_diff_list(diffs)}: {_verdicts(a_name, b_name, diffs)}"
        )
    evidence = _scores(study, "log_evidence").groupby(["dataset", "engine"]).value.mean().unstack()
    expected.append("EP " + " / ".join(f"{evidence.ep[d]:.1f}" for d in order))
    below = evidence.ep.to_numpy()[:, None] - evidence[["kl", "vb"]].to_numpy()
    for j, name in enumerate(["KL", "VB"]):
        lo, hi = np.argmin(below[:, j]), np.argmax(below[:, j])
        expected.append(
            f"{name} {below[lo, j]:.2g} ({NAMES[order[lo]]}) to {below[hi, j]:.1f} nats"
            f" ({NAMES[order[hi]]}) below EP's"
        )
    lv = _log_variance(study)
    for d in ["digits_3v5", "ionosphere", "sonar", "breast_cancer", "pima"]:
        expected.append(f"{NAMES[d]} {lv.vb[d]:.1f} against KL's {lv.kl[d]:.1f}")
    assert np.ptp(lv.loc["crabs", ["kl", "vb"]]) < 1e-6
    jobs = pd.read_csv(RESULTS / study / "jobs.csv")
    median = jobs.groupby("engine").seconds.median()
    expected.append(
        f"Laplace {median.laplace:.1f} s, KL {median.kl:.1f} s, VB {median.vb:.1f} s,"
        f" EP {median.ep:.1f} s"
    )
    warned = jobs[jobs.warnings.notna()].groupby("engine").size()
    folds = jobs.groupby("engine").size()
    expected.append(
        f"EP warned of non-convergence on {warned.get('ep', 0)} of its {folds.ep} folds"
    )
    assert all(warned.get(e, 0) == 0 for e in ("laplace", "kl", "vb"))
    _assert_on_page(page, *expected)


# --- kernels ------------------------------------------------------------------------------

KERNELS = {"se": "SE", "matern52": "Matern 5/2", "nn": "NN"}


def _kernel_diff(
    dataset: str, k1: str, k2: str, engine: str, metric: str = "mean_log_predictive"
) -> PairedDifference:
    """Kernel k1 - kernel k2 under one engine, over the same folds."""
    s = _scores("kernels", metric)
    s = s[(s.dataset == dataset) & (s.engine == engine)]
    a, b = (s[s.kernel == k].set_index("split").sort_index() for k in (k1, k2))
    return paired_difference(a.value, b.value, a.n_train, a.n_test)


def test_kernels_held_out_table_and_kernel_verdicts():
    page = "kernels/README.md"
    mean = _scores("kernels", "mean_log_predictive").groupby(["dataset", "kernel", "engine"])
    mean = mean.value.mean()
    rows = [
        f"| {NAMES[d]} | " + " | ".join(f"{mean[d, k, 'ep']:.3f}" for k in KERNELS) + " |"
        for d in PROBIT_ORDER
    ]
    err = _scores("kernels", "error_rate").groupby(["dataset", "kernel", "engine"]).value.mean()
    # Where a kernel beats another under EP: ionosphere only.
    pairs = [("matern52", "se"), ("matern52", "nn"), ("se", "nn")]
    wins = {
        d
        for d in PROBIT_ORDER
        for p in pairs
        if _kernel_diff(d, *p, "ep").verdict != "no difference"
    }
    assert wins == {"ionosphere"}
    kd = _kernel_diff
    f = "+.3f"
    _assert_on_page(
        page,
        *rows,
        "The kernel matters under EP on one of the six sets, ionosphere",
        f"Matern 5/2 - SE: EP {_ci(kd('ionosphere', 'matern52', 'se', 'ep'), f)},"
        f" Laplace {_ci(kd('ionosphere', 'matern52', 'se', 'laplace'), f)}",
        f"Matern 5/2 - NN: EP {_ci(kd('ionosphere', 'matern52', 'nn', 'ep'), f)},"
        f" Laplace {_ci(kd('ionosphere', 'matern52', 'nn', 'laplace'), f)}",
        f"error rate (EP) {err['ionosphere', 'matern52', 'ep']:.3f} against"
        f" {err['ionosphere', 'se', 'ep']:.3f} (SE) and {err['ionosphere', 'nn', 'ep']:.3f} (NN)",
        f"Matern 5/2 - SE {_ci(kd('ionosphere', 'matern52', 'se', 'ep', 'log_evidence'), '+.1f')}"
        f" nats and Matern 5/2 - NN"
        f" {_ci(kd('ionosphere', 'matern52', 'nn', 'ep', 'log_evidence'), '+.1f')} (EP)",
        f"NN - SE: EP {_ci(kd('sonar', 'nn', 'se', 'ep'), f)}, no win; Laplace"
        f" {_ci(kd('sonar', 'nn', 'se', 'laplace'), f)}, SE better",
        f"error rate (EP) {err['sonar', 'nn', 'ep']:.3f} against {err['sonar', 'se', 'ep']:.3f}",
        f"SE - Matern 5/2 under EP {_ci(kd('sonar', 'se', 'matern52', 'ep'), f)}",
        f"SE - NN {_ci(kd('sonar', 'se', 'nn', 'ep', 'log_evidence'), '+.1f')} nats (EP)",
        f"digits NN - SE {_ci(kd('digits_3v5', 'nn', 'se', 'laplace'), f)}",
        "NN - SE (EP): "
        + ", ".join(
            f"{NAMES[d]} {_ci(kd(d, 'nn', 'se', 'ep', 'log_evidence'), '+.1f')}"
            for d in ["breast_cancer", "crabs", "digits_3v5", "pima"]
        ),
    )
    assert kd("sonar", "nn", "se", "ep").verdict == "no difference"
    assert kd("sonar", "nn", "se", "laplace").verdict == "b better"
    assert kd("pima", "nn", "se", "ep", "log_evidence").verdict == "no difference"


def test_kernels_ep_against_laplace_and_bounds():
    page = "kernels/README.md"
    diffs = {
        (d, k): _diff("kernels", d, "ep", "laplace", kernel=k)
        for d in PROBIT_ORDER
        for k in KERNELS
    }
    rows = [
        f"| {NAMES[d]} | " + " | ".join(_ci(diffs[d, k], "+.3f") for k in KERNELS) + " |"
        for d in PROBIT_ORDER
    ]
    wins = {key for key, p in diffs.items() if p.verdict == "a better"}
    assert not any(p.verdict == "b better" for p in diffs.values())
    assert wins == {(d, k) for d in ("sonar", "digits_3v5") for k in KERNELS} | {
        ("ionosphere", "matern52"),
        ("ionosphere", "nn"),
    }, "the README's sentence on EP's wins over Laplace no longer holds"
    s = _scores("kernels", "mean_log_predictive")
    at = s.assign(b=s.at_bound.fillna("").str.contains("log_variance upper"))
    count = at.groupby(["engine", "kernel"]).b.sum()
    by_set = at[at.b].groupby(["engine", "kernel"]).dataset.agg(lambda x: set(x))
    assert by_set["ep", "nn"] - by_set["ep", "se"] == {"breast_cancer"}
    assert by_set["laplace", "nn"] - by_set["laplace", "se"] == {"digits_3v5"}
    jobs = pd.read_csv(RESULTS / "kernels" / "jobs.csv")
    median = jobs.groupby("kernel").seconds.median()
    approximations = _table("approximations")
    same = []
    for metric in ("mean_log_predictive", "error_rate", "log_evidence"):
        for engine in ("ep", "laplace"):
            x = _scores("kernels", metric, "se")
            x = x[x.engine == engine].set_index(["dataset", "split"]).value
            y = approximations[
                (approximations.engine == engine) & (approximations.metric == metric)
            ]
            same.append(
                np.array_equal(x.to_numpy(), y.set_index(["dataset", "split"]).value[x.index])
            )
    assert all(same), "the SE rows no longer equal the approximations study's"
    _assert_on_page(
        page,
        *rows,
        f"`gpc-compare run studies/kernels.toml` ({len(jobs)} jobs",
        f"on {count['ep', 'se']} (SE), {count['ep', 'matern52']} (Matern 5/2) and"
        f" {count['ep', 'nn']} (NN) of 30 folds",
        f"Laplace's on {count['laplace', 'se']}, {count['laplace', 'matern52']} and"
        f" {count['laplace', 'nn']}",
        f"(median job time per fold {median.nn:.1f} s, SE {median.se:.1f} s,"
        f" Matern 5/2 {median.matern52:.1f} s)",
    )
