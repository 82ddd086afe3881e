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
WORDS = ["no", "one", "two", "three", "four", "five", "six"]
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
    nn = at[(at.kernel == "nn") & (at.engine == "ep") & (at.dataset == "digits_3v5")]
    nn = pd.DataFrame(list(nn.hyperparameters.map(json.loads)))
    assert np.allclose(nn.log_variance, np.log(1e5))
    n_train = s[s.dataset.isin(["breast_cancer", "pima", "crabs", "digits_3v5"])].n_train
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
        f"(digits: ell {np.exp(nn.log_lengthscale.min()):.0f}-"
        f"{np.exp(nn.log_lengthscale.max()):.0f} at sigma_f^2 = 1e5 on every fold)",
        f"on {n_train.min()}-{n_train.max()} training cases",
        f"(median job time per fold {median.nn:.1f} s, SE {median.se:.1f} s,"
        f" Matern 5/2 {median.matern52:.1f} s)",
    )


# --- approximations (probit, MCMC reference) ----------------------------------------------


def _means(study: str, metric: str) -> pd.DataFrame:
    """Mean over folds, data sets x engines."""
    return _scores(study, metric).groupby(["dataset", "engine"]).value.mean().unstack()


def _slash(values, fmt: str) -> str:
    return " / ".join(f"{v:{fmt}}" for v in values)


def test_approximations_prediction_findings():
    study, page = "approximations", "approximations/README.md"
    order = list(NAMES)
    expected = []
    for a, b, a_name, b_name in [
        ("ep", "mcmc", "EP", "MCMC"),
        ("laplace", "ep", "Laplace", "EP"),
        ("kl", "ep", "KL", "EP"),
        ("kl", "laplace", "KL", "Laplace"),
    ]:
        diffs = _listed(study, a, b, order)
        expected.append(
            f"{a_name} - {b_name}: {_diff_list(diffs)}: {_verdicts(a_name, b_name, diffs)}"
        )
    s = _scores(study, "mean_log_predictive")
    fold = s[(s.dataset == "ionosphere") & (s.split == 4)].set_index("engine").value
    kl = _means(study, "marginal_kl_mean")
    bits, ece, err = (_means(study, m) for m in ("information_bits", "ece", "error_rate"))
    assert (err.laplace - err.ep).abs().max() < 0.01
    expected += [
        f"fold 4, where EP's sigma_f^2 is at the bound 1e5: {fold.ep - fold.mcmc:+.3f}",
        f"0.000-{kl.ep.max():.3f} nats per case",
        f"{bits.laplace.sonar:.2f} bits against EP's {bits.ep.sonar:.2f} on sonar and"
        f" {bits.laplace.digits_3v5:.2f} against {bits.ep.digits_3v5:.2f} on digits",
        f"(ECE {ece.laplace.digits_3v5:.3f} vs {ece.ep.digits_3v5:.3f} on digits,"
        f" {ece.laplace.ionosphere:.3f} vs {ece.ep.ionosphere:.3f} on ionosphere)",
        f"Laplace {100 * err.laplace.digits_3v5:.1f}% vs EP {100 * err.ep.digits_3v5:.1f}% on"
        f" digits, {100 * err.laplace.sonar:.1f}% vs {100 * err.ep.sonar:.1f}% on sonar",
    ]
    _assert_on_page(page, *expected)


def test_approximations_evidence_and_latent_findings():
    study, page = "approximations", "approximations/README.md"
    lv = _log_variance(study)
    s = _scores(study, "mean_log_predictive")
    pima = s[(s.dataset == "pima") & s.engine.isin(["ep", "laplace"])]
    theta = pd.DataFrame(list(pima.hyperparameters.map(json.loads)), index=pima.index)
    theta = theta.assign(split=pima.split, engine=pima.engine).set_index(["split", "engine"])
    ep_theta, lap_theta = (theta.xs(e, level="engine") for e in ("ep", "laplace"))
    pima_gap = (ep_theta - lap_theta).abs().to_numpy().max()
    grid = pd.read_csv(RESULTS / "approximations_grid/probit/summary.csv").set_index("dataset")
    worst = -grid.laplace_gap_min
    at_max = -grid.laplace_gap_at_gold_argmax
    kl, rmse, gap = (
        _means(study, m) for m in ("marginal_kl_mean", "latent_mean_rmse", "evidence_gap")
    )
    ep_gap = _scores(study, "evidence_gap")
    ep_gap = ep_gap[ep_gap.engine == "ep"]
    z = _scores(study, "evidence_gap_z")
    z = z[z.engine == "ep"]
    se = np.abs(ep_gap.value.to_numpy() / z.value.to_numpy())  # SMC's se: gap / z
    evidence = _means(study, "log_evidence")
    kl_below = evidence.ep - evidence.kl
    order = PROBIT_ORDER
    _assert_on_page(
        page,
        f"(sonar: Laplace log sigma_f^2 {lv.laplace.sonar:.2f} vs EP {lv.ep.sonar:.1f}"
        " at the bound;"
        f" digits: {lv.laplace.digits_3v5:.2f} vs {lv.ep.digits_3v5:.1f}; ionosphere"
        f" {lv.laplace.ionosphere:.2f} vs {lv.ep.ionosphere:.2f}; breast cancer"
        f" {lv.laplace.breast_cancer:.2f} vs {lv.ep.breast_cancer:.2f})",
        f"(differences <= {pima_gap:.2f})",
        f"by {worst.drop('crabs').min():.0f}-{worst.drop('crabs').max():.0f} nats at large"
        f" sigma_f and short length-scales (crabs {worst.crabs:.0f})",
        f"by {_slash(at_max[order], '.2g')} nats at the reference's maximum",
        f"{_slash(kl.laplace_at_ep[order], '.3g')} for Laplace against"
        f" {_slash(kl.ep[order], '.2g')} for EP",
        f"{_slash(rmse.laplace_at_ep[order], '.3g')} against {_slash(rmse.ep[order], '.3g')}",
        f"below the reference's (SMC) by {_slash(-gap.laplace_at_ep[order], '.2g')} nats",
        f"EP - SMC is {_slash(gap.ep[order], '.2g')} nats",
        f"(largest {ep_gap.value.min():.2f}, digits; SMC's standard error there at most"
        f" {se.max():.1f}, median {np.median(se):.2f})",
        f"on the grid EP - SMC lies in [{grid.ep_gap_min.min():.2f}, {grid.ep_gap_max.max():+.2f}]",
        f"(by {kl_below.min():.2g} on Pima to {kl_below.max():.2g} nats on sonar)",
        f"(mean log sigma_f^2 {_slash(lv.kl[['digits_3v5', 'ionosphere', 'sonar']], '.1f')}"
        f" against EP's {_slash(lv.ep[['digits_3v5', 'ionosphere', 'sonar']], '.2f')}",
        f"(mean KL(MCMC || approximation) {kl.kl_at_ep.min():.1g}-{kl.kl_at_ep.max():.2f} nats per"
        f" case against {kl.laplace_at_ep.min():.3f}-{kl.laplace_at_ep.max():.1f}",
        f"lies {-gap.kl_at_ep.max():.2f} (Pima) to {-gap.kl_at_ep.min():.0f} nats (sonar) below",
    )
    assert (ep_gap.value < 0).all()
    assert ep_gap.loc[ep_gap.value.idxmin(), "dataset"] == "digits_3v5"


def test_approximations_mcmc_reference_and_time():
    page = "approximations/README.md"
    ref = pd.read_csv(RESULTS / "approximations/mcmc_reference.csv")
    by = ref.groupby("attempt")
    passed = by.passed.sum()
    first = ref[ref.attempt == 1].groupby("dataset").passed.sum()
    last = ref[ref.attempt == 4]
    jobs = pd.read_csv(RESULTS / "approximations/jobs.csv")
    median = jobs.groupby("engine").seconds.median()
    _assert_on_page(
        page,
        *(f"{passed[a]} of 30 passed" for a in (1, 2)),
        f"{passed[3]} of 30 folds in this study's run, and on {passed[4]} of 30 on the"
        " current engine",
        "(" + ", ".join(f"{NAMES[d]} {first[d]}" for d in PROBIT_ORDER) + ")",
        f"R-hat <= {last.r_hat_max.max():.4f}, bulk ESS >= {last.ess_bulk_min.min():.0f},"
        f" {'no' if last.divergences.sum() == 0 else last.divergences.sum()} divergences",
        f"Laplace {median.laplace:.1f} s, EP {median.ep:.1f} s, KL {median.kl:.1f} s,"
        f" MCMC {median.mcmc:.0f} s",
    )
    assert by.divergences.sum()[3] == 0
    failed = ref[(ref.attempt == 3) & ~ref.passed]
    assert list(zip(failed.dataset, failed.split, strict=True)) == [("digits_3v5", 0)]


# --- approximations_grid ------------------------------------------------------------------


def _grid(likelihood: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The grid's log evidences (points x methods) and its rows."""
    g = pd.read_csv(RESULTS / "approximations_grid" / likelihood / "grid.csv")
    key = ["dataset", "log_lengthscale", "log_sf"]
    return g.pivot_table(index=key, columns="method", values="log_evidence"), g


def _ep_low(gap: pd.Series, dataset: str) -> str:
    low = gap[(gap < -0.4) & (gap.index.get_level_values("dataset") == dataset)]
    return f"{low.max():.2f} to {low.min():.2f}"


def _grid_claims(likelihood: str) -> list[str]:
    w, g = _grid(likelihood)
    smc = g[g.method == "smc"]
    assert smc.se.max() <= 0.1 and len(smc) == 294
    median_se = smc.groupby("dataset").se.median()
    ep, laplace, kl = (w[m] - w.smc for m in ("ep", "laplace", "kl"))
    worst = laplace.groupby(level="log_sf").min()
    out = [
        f"SMC's standard error is <= 0.1 at all {len(smc)} points (medians"
        f" {median_se.min():.3f}-{median_se.max():.3f} per data set",
        f"EP - SMC lies in [{ep.min():.2f}, {ep.max():+.2f}]",
        f"more than 0.4 nats low at {(ep < -0.4).sum()} points",
        f"at most {kl.max():.{3 if likelihood == 'probit' else 4}f} nats above",
        f"({(kl > 0).sum()} points at most",
    ]
    if likelihood == "probit":
        out += [
            "crabs at short length-scales (log ell <= 0.83, log sigma_f >= 1.67:"
            f" {_ep_low(ep, 'crabs')})",
            f"ionosphere at log ell 0.83-1.67, log sigma_f >= 2.5 ({_ep_low(ep, 'ionosphere')}",
            f"digits at the largest sigma_f ({_ep_low(ep, 'digits_3v5')})",
            "The worst point per row of log sigma_f (all data sets) is "
            f"{worst.iloc[0]:.1f} nats at log sigma_f = 0, "
            + ", ".join(f"{v:.1f} at {f'{s:.2f}'.rstrip('0')}" for s, v in worst.iloc[1:-1].items())
            + f" and {worst.iloc[-1]:.1f} at 5",
            f"Laplace is above SMC at {(laplace > 0).sum()} points only, by at most"
            f" {laplace.max():.3f} nats",
            f"down to {kl.xs('crabs').min():.1f} (crabs) to {kl.xs('digits_3v5').min():.0f} nats"
            " (digits)",
            f"SMC about {smc.seconds.sum():,.0f} s summed over the 294 points (median"
            f" {smc.seconds.median():.1f} s, at most {smc.seconds.max():.0f} s",
        ]
    else:
        out += [
            f"ionosphere at log ell 0.83-1.67, log sigma_f >= 2.5 ({_ep_low(ep, 'ionosphere')})",
            "The worst point per row of log sigma_f is "
            + _join([f"{v:.2g}" for v in worst])
            + " nats",
            f"it is above SMC at {(laplace > 0).sum()} points, by at most {laplace.max():.2f}",
            f"SMC {smc.seconds.sum():,.0f} s summed over the 294 points (median"
            f" {smc.seconds.median():.1f} s, at most {smc.seconds.max():.0f} s",
        ]
    return out


@pytest.mark.parametrize("likelihood", ["probit", "logistic"])
def test_grid_findings(likelihood):
    claims = _grid_claims(likelihood)
    for page in ("FINDING.md", "README.md"):  # the README carries the finding
        _assert_on_page(f"approximations_grid/{likelihood}/{page}", *claims)


# --- results/README.md --------------------------------------------------------------------


def test_top_level_findings():
    order = list(NAMES)
    ep_mcmc = _listed("approximations", "ep", "mcmc", order)
    assert all(p.verdict == "no difference" for p in ep_mcmc.values())
    largest = max(ep_mcmc, key=lambda d: abs(ep_mcmc[d].mean))
    lap_ep = _listed("approximations", "laplace", "ep", order)
    lap_wins, ep_wins, neither = _wins(lap_ep)
    assert not lap_wins
    kl = _means("approximations", "marginal_kl_mean")
    ece = _means("approximations", "ece")
    passed = pd.read_csv(RESULTS / "approximations/mcmc_reference.csv").groupby("attempt").passed
    kl_ep = {
        study: _listed(study, "kl", "ep", order)
        for study in ("approximations", "approximations_logistic")
    }
    for diffs in kl_ep.values():
        assert _wins(diffs)[2] == [NAMES[d] for d in order if d != "sonar"]
    kl_lap = _listed("approximations", "kl", "laplace", order)
    vb_kl = _listed("approximations_logistic", "vb", "kl", order)
    w, _ = _grid("probit")
    laplace, ep = w.laplace - w.smc, w.ep - w.smc
    worst = laplace.groupby(level="log_sf").min()
    at_max = pd.read_csv(RESULTS / "approximations_grid/probit/summary.csv")
    at_max = at_max.laplace_gap_at_gold_argmax
    low = {d: ep.xs(d).min() for d in ("crabs", "ionosphere", "digits_3v5")}
    probit = kl_ep["approximations"]
    _assert_on_page(
        "README.md",
        f"includes zero on all six benchmarks (largest mean {ep_mcmc[largest].mean:+.4f} nats"
        f" per case, {NAMES[largest]}",
        f"EP's is <= {kl.ep.max():.3f} nats per case",
        f"on {passed.sum()[3]} of 30 folds ({passed.sum()[4]} of 30 in a rerun",
        f"loses to EP on {len(ep_wins)} of the six sets ("
        + ", ".join(f"{NAMES[d]} {_ci(lap_ep[d], '.3f')}" for d in ("digits_3v5", "sonar"))
        + " nats per case)",
        f"on {_join(neither)} there is no win (ionosphere {_ci(lap_ep['ionosphere'], '+.3f')})",
        f"ECE {ece.laplace.digits_3v5:.3f} vs {ece.ep.digits_3v5:.3f}",
        f"mean KL {kl.laplace_at_ep.min():.3f}-{kl.laplace_at_ep.max():.1f} nats per case"
        f" against EP's 0.000-{kl.ep.max():.3f}",
        f"at every reliable point but {WORDS[(laplace > 0).sum()]} (breast cancer and crabs,"
        f" at most {laplace.max():+.2f} nats)",
        "the worst point per row of log sigma_f is "
        + _join([f"{v:.2g}" if abs(v) < 10 else f"{v:.0f}" for v in worst]),
        f"at SMC's maximum {at_max.max():.2f} to {at_max.min():.0f} nats",
        f"EP - SMC lies in [{ep.min():.2f}, {ep.max():+.2f}] nats",
        f"more than 0.4 nats low at {(ep < -0.4).sum()} points (crabs at short length-scales"
        f" down to {low['crabs']:.2f}, ionosphere down to {low['ionosphere']:.2f}, digits"
        f" {low['digits_3v5']:.2f})",
        "(probit: "
        + ", ".join(f"{NAMES[d]} {probit[d].mean:+.3f}" for d in order if d != "sonar").replace(
            "+0.000", "0.000", 1 if probit["pima"].mean == 0 else 0
        )
        + f" nats per case; sonar {_ci(probit['sonar'], '+.3f')})",
        f"beats Laplace on {_join(_wins(kl_lap)[0])} by"
        f" {min(p.mean for p in kl_lap.values() if p.verdict == 'a better'):.2f}-"
        f"{max(p.mean for p in kl_lap.values()):.2f} nats per case",
        f"VB loses to KL on {WORDS[len(_wins(vb_kl)[1])]}"
        f" sets (up to {-vb_kl['sonar'].mean:.3f} nats per case on sonar)",
    )
