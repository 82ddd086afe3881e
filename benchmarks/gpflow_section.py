"""The "Against GPflow" section of results/benchmarks/svgp_multiclass.md, rendered from
svgp_multiclass_gpflow.csv (bench_gpflow_multiclass.py writes both; the findings test
tests/findings/test_findings_gpflow.py renders it again and compares).

``python benchmarks/gpflow_section.py`` renders the section again from the committed CSV.
"""

from __future__ import annotations

import csv
from pathlib import Path

HEADING = "## Against GPflow"
CHECKS = [
    ("iris", "robustmax"),
    ("iris", "softmax"),
    ("letter500", "robustmax"),
    ("letter500", "softmax"),
]


def read(path: Path) -> dict[tuple[str, str], str]:
    """The CSV as {(part, what): value} (values as written: numbers repr'd, or text)."""
    with Path(path).open(newline="") as fh:
        return {(r["part"], r["what"]): r["value"] for r in csv.DictReader(fh)}


def _f(v: str, fmt: str) -> str:
    return format(float(v), fmt)


def _part(t: dict, part: str) -> dict[str, str]:
    """One part's rows of the CSV as {what: value}."""
    return {what: value for (p, what), value in t.items() if p == part}


def _checks(t: dict, lik: str | None = None, key: str = "elbo_ours"):
    """(problem, likelihood, part) of each value check in the CSV (of likelihood ``lik``
    where given), those holding ``key``."""
    for name, check_lik in CHECKS:
        p = f"check_{name}_{check_lik}"
        if (lik is None or check_lik == lik) and (p, key) in t:
            yield name, check_lik, p


def _check_table(t: dict) -> list[str]:
    lines = [
        "| problem | likelihood | n / test / C / M | ELBO ours | ELBO GPflow | GPflow - ours "
        "| KL GPflow - ours | E[log p] GPflow - ours | max abs mean diff | max rel var diff "
        "| max abs p diff |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, lik, p in _checks(t):
        v = _part(t, p)
        size = "/".join(str(int(float(v[k]))) for k in ("n", "n_test", "C", "M"))
        se = f" +- {_f(v['elbo_gpflow_se'], '.3f')}" if float(v["elbo_gpflow_se"]) else ""
        lines.append(
            f"| {name} | {lik} | {size} | {_f(v['elbo_ours'], '.6f')} | "
            f"{_f(v['elbo_gpflow'], '.6f')}{se} | {_f(v['elbo_diff'], '.2e')} | "
            f"{_f(v['kl_diff'], '.2e')} | {_f(v['ell_diff'], '.2e')} | "
            f"{_f(v['f_mean_max_abs_diff'], '.1e')} | {_f(v['f_var_max_rel_diff'], '.1e')} | "
            f"{_f(v['proba_max_abs_diff'], '.1e')} |"
        )
    return lines


def _robustmax_table(t: dict) -> list[str]:
    lines = [
        "| problem | E GPflow | numpy copy of GPflow's formula | same, unclipped | unclipped, "
        "200 nodes | ours at GPflow's marginals | GPflow's epsilon, eps / (C - 1) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, _, p in _checks(t, "robustmax", "ell_gpflow"):
        cells = [
            _f(t[p, k], ".6f")
            for k in (
                "ell_gpflow",
                "ell_numpy_gpflow_formula",
                "ell_numpy_unclipped_gh20",
                "ell_numpy_unclipped_gh200",
                "ell_ours_at_gpflow_marginals",
            )
        ]
        eps = f"{_f(t[p, 'epsilon_gpflow'], 'g')}, {_f(t[p, 'eps_k1_gpflow'], '.6g')}"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {eps} |")
    lines += [
        "",
        "The predictive probabilities at the test inputs likewise (largest absolute "
        "differences over the test inputs and classes, at GPflow's predictive marginals):",
        "",
        "| problem | numpy copy vs GPflow's predict_y | squashing (copy vs unclipped) | 20 "
        "nodes vs 200 (unclipped) | unclipped, 200 nodes vs ours |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, _, p in _checks(t, "robustmax", "proba_copy_vs_gpflow"):
        keys = ("vs_gpflow", "squash_effect", "gh20_vs_gh200", "gh200_vs_ours")
        cells = [_f(t[p, f"proba_copy_{k}"], ".1e") for k in keys]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def _softmax_table(t: dict) -> list[str]:
    lines = [
        "| problem | E GPflow (Monte Carlo) | E ours (the fit's) | E ours (large Monte Carlo) "
        "| GPflow - ours (large), in standard errors | largest standard error of GPflow's p |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, _, p in _checks(t, "softmax", "ell_gpflow"):
        g, gs = float(t[p, "ell_gpflow"]), float(t[p, "ell_gpflow_se"])
        big, bs = float(t[p, "ell_ours_large_mc"]), float(t[p, "ell_ours_large_mc_se"])
        own, os_ = float(t[p, "ell_ours"]), float(t[p, "ell_ours_se"])
        own_txt = f"{own:.4f}" + (f" +- {os_:.4f}" if os_ else " (quadrature)")
        z = (g - big) / (gs**2 + bs**2) ** 0.5
        lines.append(
            f"| {name} | {g:.4f} +- {gs:.4f} | {own_txt} | {big:.4f} +- {bs:.4f} | {z:+.2f} | "
            f"{_f(t[p, 'proba_gpflow_se_max'], '.1e')} |"
        )
    return lines


def _timing_table(t: dict, lik: str) -> list[str]:
    rows = [
        ("fit seconds", "fit_seconds", ".1f"),
        ("iterations (ours) / natural-gradient steps (GPflow)", "iterations", ".0f"),
        ("converged (own criterion)", "converged", ".0f"),
        ("seconds to within 10 nats of its final ELBO", "seconds_within_10", ".1f"),
        ("seconds to within 1 nat of its final ELBO", "seconds_within_1", ".1f"),
        ("final ELBO, own bound", "elbo", ".2f"),
        ("final q under our bound", "elbo_by_ours", ".2f"),
        ("final q under GPflow's bound", "elbo_by_gpflow", ".2f"),
        ("held-out accuracy", "accuracy", ".4f"),
        ("held-out mean log predictive", "mlp", ".4f"),
        ("prediction seconds (4,000 test cases)", "predict_seconds", ".1f"),
    ]
    lines = ["| | ours (site iteration) | GPflow (natural gradients) |", "| --- | ---: | ---: |"]
    for label, key, fmt in rows:
        cells = [_f(t[f"timing_{lik}_{who}", key], fmt) for who in ("ours", "gpflow")]
        lines.append(f"| {label} | {cells[0]} | {cells[1]} |")
    return lines


def _versions(t: dict) -> list[str]:
    out = []
    envs = (("versions_ours_env", "gpc_compare's"), ("versions_gpflow_env", "GPflow's"))
    for part, label in envs:
        items = [f"{what} {value}" for what, value in _part(t, part).items()]
        out.append(f"- {label} environment: " + "; ".join(items))
    return out


def render(path: Path) -> str:
    """The section's markdown from the CSV at ``path``."""
    t = read(path)
    timed = [lik for lik in ("robustmax", "softmax") if (f"timing_{lik}_ours", "elbo") in t]
    lines = [
        f"{HEADING} (GPflow's SVGP with num_latent_gps = C, whiten=True)",
        "",
        "Computed by `benchmarks/bench_gpflow_multiclass.py` (its docstring says how): GPflow "
        "runs in its own virtual environment (it needs numpy < 2), in separate processes, the "
        "two sides exchanging npz files; every number below is in "
        "`svgp_multiclass_gpflow.csv` and this section is rendered from it "
        "(`benchmarks/gpflow_section.py`).",
        "",
        "### The value check: our converged q scored by GPflow",
        "",
        "Same data, kernel (SE; ours sigma_f^2 exp(-r^2 / (2 ell^2)) is GPflow's "
        "`SquaredExponential(variance, lengthscales)`), Z (k-means++), jitter (ours relative, "
        "1e-6 mean diag K_uu, given to GPflow as its absolute default jitter), and q (ours "
        "converged: q_mu = E[v_c], q_sqrt = chol(S_c)). Iris: SE(1.5, 4), 120 training cases; "
        "letter500: SE(5, 10), a seeded 500-case subsample of letter. Means and variances of "
        "q(f_i) at the training inputs, p at the test inputs (GPflow's `predict_y`).",
        "",
        *_check_table(t),
        "",
        "Robust-max (epsilon 1e-3 both sides): GPflow's `RobustMax.prob_is_largest` "
        "uses 20 Gauss-Hermite nodes and shrinks each Phi into [1e-6, 1 - 1e-6]; its "
        "expected log likelihood, a numpy copy of that formula at GPflow's marginals, "
        "and the same without the shrinking and with 200 nodes, against ours:",
        "",
        *_robustmax_table(t),
        "",
        "Softmax: GPflow's `Softmax` is Monte Carlo (the mean of replicated calls, +- its "
        "standard error); ours is a quadrature for C = 3 and antithetic Monte Carlo for "
        "C = 26 (the fit's 64 draws a case, and 4096 for the comparison):",
        "",
        *_softmax_table(t),
        "",
        *(["### Timing", ""] if timed else []),
        *(
            "One thread each (BLAS, OpenMP, TensorFlow's intra- and inter-op pools); the two "
            "sides ran in separate processes one after the other (not side by side in one "
            "process as the project's other benchmarks), on a machine shared with other "
            "jobs, so seconds are indicative. " + _sizes(t, timed)
            if timed
            else "",
            "",
        ),
        *(line for lik in timed for line in _timing(t, lik)),
        "### Versions",
        "",
        *_versions(t),
        "",
        f"Command: `{t['command', 'command']}`",
        "",
    ]
    return "\n".join(lines)


#: Letter's training part (the seeded 80/20 split of its 20,000 cases).
LETTER_TRAIN = 16000


def _full(t: dict, lik: str) -> bool:
    """Whether likelihood ``lik`` was timed on all of letter's training cases."""
    return int(float(t[f"timing_{lik}_settings", "n"])) == LETTER_TRAIN


def _sizes(t: dict, timed: list[str]) -> str:
    """What was timed on all 16,000 training cases, and why the rest on a subsample."""
    full = [lik for lik in timed if _full(t, lik)]
    sub = [lik for lik in timed if not _full(t, lik)]
    if not sub:
        return "Both are timed on all 16,000 training cases."
    why = (
        "in a trial at full size GPflow's first natural-gradient steps on the robust-max, "
        "from its default q, left q invalid (NaN) even at small gamma"
    )
    if not full:
        return (
            "Both are timed on a subsample of letter's training part, not all 16,000 cases: "
            + why
            + ", and the two fits at full size with both likelihoods did not fit in this "
            "session's time."
        )
    seconds = _f(t["timing_robustmax_ours", "fit_seconds"], ".0f")
    n = f"{int(float(t['timing_robustmax_settings', 'n'])):,}"
    return (
        "The softmax is timed on all 16,000 training cases; the robust-max on a subsample: "
        + why
        + f", and our robust-max fit, the slow case of the site iteration, took {seconds} s "
        f"to converge at n = {n} already."
    )


def _timing(t: dict, lik: str) -> list[str]:
    s, g = _part(t, f"timing_{lik}_settings"), _part(t, f"timing_{lik}_gpflow")
    n = int(float(s["n"]))
    which = (
        "all of letter's training cases"
        if n == LETTER_TRAIN
        else f"a seeded subsample of the {LETTER_TRAIN:,}"
    )
    noisy = (
        " GPflow's softmax ELBO is its Monte Carlo estimate (100 draws a case, GPflow's "
        "default), so its trace is the moving mean over the window; both final q are also "
        f"scored by our bound with {_f(s['score_samples'], '.0f')} antithetic draws a case, "
        "a common yardstick."
        if lik == "softmax"
        else " Each final q is also scored by the other side's bound (GPflow's robust-max "
        "expectation differs from ours by its squashing of Phi and its 20 nodes)."
    )
    return [
        f"#### Letter, {lik}, n = {n} training ({which}), "
        f"{_f(s['n_test'], '.0f')} test, C = {_f(s['C'], '.0f')}, M = {_f(s['M'], '.0f')}",
        "",
        f"SE(ell = {_f(s['lengthscale'], 'g')}, sigma_f^2 = {_f(s['variance'], 'g')}) given "
        "and the same Z (k-means++ on the 16,000, as ours chooses) for both; ours: the site "
        "iteration at its default tolerances (tol 1e-10, site_tol 1e-6), K_uf kept; GPflow: "
        "natural gradients on (q_mu, q_sqrt) from its default q, full batch, nothing else "
        "trained, gamma rising log-linearly from 1e-4 to "
        f"{_f(s['gamma'], 'g')} over {_f(s['warmup'], '.0f')} steps (Salimbeni, "
        "Eleftheriadis and Hensman 2018); a step that leaves q invalid (NaN: S_c not "
        f"positive definite) is undone and gamma halved ({_f(g['failures'], '.0f')} here, "
        f"final gamma {_f(g['gamma_final'], 'g')}); stopped when the mean ELBO of the last "
        f"{_f(s['window'], '.0f')} steps differed from the {_f(s['window'], '.0f')} "
        f"before by less than {_f(s['rtol'], 'g')} |ELBO|, or after "
        f"{_f(s['budget'], '.0f')} s." + noisy,
        "",
        *_timing_table(t, lik),
        "",
    ]


def write_section(csv_path: Path, md_path: Path) -> None:
    """Replace the section (from its heading to the end) of ``md_path``, or append it."""
    text = md_path.read_text() if md_path.exists() else "# The multi-class SVGP\n"
    head = text.split(HEADING)[0].rstrip("\n")
    md_path.write_text(head + "\n\n" + render(csv_path))


if __name__ == "__main__":
    out = Path(__file__).resolve().parents[1] / "results" / "benchmarks"
    write_section(out / "svgp_multiclass_gpflow.csv", out / "svgp_multiclass.md")
