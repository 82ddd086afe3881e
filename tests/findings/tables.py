"""The committed tables, read and compared as the findings state them (for the tests in
this directory): means over folds, corrected resampled t-intervals of engine differences
(Nadeau and Bengio 2003; :func:`gpc_compare.metrics.paired_difference`) and the sentences
the pages write about them."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pandas as pd

from gpc_compare.metrics import (
    LOWER_IS_BETTER,
    PairedDifference,
    against_reference,
    paired_difference,
)

RESULTS = Path(__file__).resolve().parents[2] / "results"

#: The benchmark data sets in the order the findings list them, and their names there.
NAMES = {
    "breast_cancer": "breast cancer",
    "crabs": "crabs",
    "digits_3v5": "digits",
    "ionosphere": "ionosphere",
    "pima": "Pima",
    "sonar": "sonar",
}
WORDS = ["no", "one", "two", "three", "four", "five", "six"]
PROBIT_ORDER = ["breast_cancer", "ionosphere", "sonar", "pima", "crabs", "digits_3v5"]


def page_text(path: str) -> str:
    """The page's text with every run of whitespace made one space."""
    return " ".join((RESULTS / path).read_text().split())


@cache
def table(study: str) -> pd.DataFrame:
    return pd.read_csv(RESULTS / study / "results.csv")


def scores(study: str, metric: str, kernel: str | None = None) -> pd.DataFrame:
    d = table(study)
    d = d[d.metric == metric]
    return d if kernel is None else d[d.kernel == kernel]


def diff(
    study: str,
    dataset: str,
    a: str,
    b: str,
    metric: str = "mean_log_predictive",
    kernel: str | None = None,
    b_study: str | None = None,
) -> PairedDifference:
    """The corrected resampled t-interval of engine a - engine b over the folds both ran;
    engine b from ``b_study`` where given (a study with the same data sets and splits:
    they derive from the seed and the data set alone; the training and test sizes are
    asserted equal split by split)."""
    s = scores(study, metric, kernel)
    t = s if b_study is None else scores(b_study, metric, kernel)
    sa, sb = (x[(x.dataset == dataset) & (x.engine == e)].set_index("split")
              for x, e in ((s, a), (t, b)))  # fmt: skip
    common = sorted(set(sa.index) & set(sb.index))
    assert len(common) >= 2, (study, dataset, a, b)
    for size in ("n_train", "n_test"):
        assert (sa[size][common] == sb[size][common]).all(), (study, b_study, dataset, size)
    return paired_difference(
        sa.value[common].to_numpy(),
        sb.value[common].to_numpy(),
        sa.n_train[common].to_numpy(),
        sa.n_test[common].to_numpy(),
        higher_is_better=metric not in LOWER_IS_BETTER,
    )


def ci(p: PairedDifference, fmt: str = "+.4f") -> str:
    """``mean [lower, upper]`` as the findings write a difference."""
    return f"{p.mean:{fmt}} [{p.lower:{fmt}}, {p.upper:{fmt}}]"


def join(words: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'; 'none' for no words."""
    if not words:
        return "none"
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def wins(
    diffs: dict[str, PairedDifference], names: dict[str, str] = NAMES
) -> tuple[list[str], list[str], list[str]]:
    """The data sets where a is better, where b is better, and where neither (in order)."""
    out: tuple[list[str], list[str], list[str]] = ([], [], [])
    for dataset, p in diffs.items():
        out[{"a better": 0, "b better": 1}.get(p.verdict, 2)].append(names[dataset])
    return out


def verdicts(
    a_name: str,
    b_name: str,
    diffs: dict[str, PairedDifference],
    names: dict[str, str] = NAMES,
) -> str:
    """The sentence the findings write after a list of differences."""
    a, b, neither = wins(diffs, names)
    parts = [f"{a_name} better on {join(a)}"] if a else []
    parts += [f"{b_name} better on {join(b)}"] if b else []
    parts += [f"no win on {join(neither)}"] if neither else []
    return "; ".join(parts)


def assert_on_page(page: str, *expected: str) -> None:
    """Fail, naming every sentence missing, unless the page says each one verbatim."""
    text = page_text(page)
    missing = [e for e in expected if e not in text]
    assert not missing, f"{page} does not say (from the committed tables): {missing}"


def listed(study: str, a: str, b: str, order: list[str], **kw) -> dict[str, PairedDifference]:
    """Engine a - engine b on each data set of ``order``."""
    return {d: diff(study, d, a, b, **kw) for d in order}


def diff_list(
    diffs: dict[str, PairedDifference], fmt: str = "+.4f", names: dict[str, str] = NAMES
) -> str:
    """'breast cancer -0.0009 [-0.0033, +0.0016], crabs ...' as the findings list them."""
    return ", ".join(f"{names[d]} {ci(p, fmt)}" for d, p in diffs.items())


def selected(study: str, name: str = "log_variance", kernel: str | None = None) -> pd.DataFrame:
    """One row per job (its mean log predictive row) with ``selected``, the value of the
    hyperparameter ``name`` (log scale) the job used."""
    s = scores(study, "mean_log_predictive", kernel)
    return s.assign(selected=s.hyperparameters.map(lambda h: json.loads(h)[name]))


def log_variance(study: str, kernel: str | None = None, name: str = "log_variance") -> pd.DataFrame:
    """Mean over folds of each engine's selected log sigma_f^2 (or hyperparameter ``name``),
    data sets x engines."""
    return selected(study, name, kernel).groupby(["dataset", "engine"]).selected.mean().unstack()


def means(study: str, metric: str) -> pd.DataFrame:
    """Mean over folds, data sets x engines."""
    return scores(study, metric).groupby(["dataset", "engine"]).value.mean().unstack()


def slash(values, fmt: str) -> str:
    return " / ".join(f"{v:{fmt}}" for v in values)


def grid(likelihood: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The grid's log evidences (points x methods) and its rows."""
    g = pd.read_csv(RESULTS / "approximations_grid" / likelihood / "grid.csv")
    key = ["dataset", "log_lengthscale", "log_sf"]
    return g.pivot_table(index=key, columns="method", values="log_evidence"), g


def ep_low(gap: pd.Series, dataset: str) -> str:
    low = gap[(gap < -0.4) & (gap.index.get_level_values("dataset") == dataset)]
    return f"{low.max():.2f} to {low.min():.2f}"


def reference_mcse(study: str) -> pd.Series:
    """Per data set, the MCMC reference's Monte Carlo standard error of its mean log
    predictive averaged over the splits, sqrt(sum_s mcse_s^2) / J (the report's)."""
    s = scores(study, "mean_log_predictive")
    s = s[s.engine == "mcmc"]
    return s.groupby("dataset").mcse.apply(lambda v: float((v**2).sum() ** 0.5 / len(v)))


def reference_verdicts(
    a_name: str,
    diffs: dict[str, PairedDifference],
    mcse: pd.Series,
    names: dict[str, str] = NAMES,
) -> str:
    """The sentence after a list of engine - MCMC differences: the report's verdicts with
    the reference's Monte Carlo error (:func:`gpc_compare.metrics.against_reference`)."""
    groups: dict[str, list[str]] = {}
    for dataset, p in diffs.items():
        groups.setdefault(against_reference(p, mcse[dataset]), []).append(names[dataset])
    parts = []
    for verdict, words in [
        ("indistinguishable", "indistinguishable on {}"),
        ("the reference cannot decide", "MCMC cannot decide on {}"),
        ("a better", a_name + " better on {}"),
        ("b better", "MCMC better on {}"),
        ("no difference", "no win on {}"),
    ]:
        if verdict in groups:
            parts.append(words.format(join(groups[verdict])))
    return "; ".join(parts)


def mcmc_records(study: str) -> pd.DataFrame:
    """The diagnostics of every MCMC job record the study committed (``jobs/*.json``)."""
    rows = []
    for path in sorted((RESULTS / study / "jobs").glob("*__mcmc__*.json")):
        record = json.loads(path.read_text())
        rows.append(
            {"dataset": record["dataset"], "split": record["split"]} | record["diagnostics"]
        )
    return pd.DataFrame(rows).sort_values(["dataset", "split"])
