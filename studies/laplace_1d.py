"""Bishop (2006) Figure 4.14: the Laplace approximation of a skewed 1-D density.

The density is p(z) = f(z) / Z with f(z) = exp(-z^2 / 2) sigma(20 z + 4) (Bishop 4.125,
Fig. 4.14). This study computes

- the exact normaliser Z and moments of p(z) by adaptive quadrature (``scipy.integrate.quad``
  on [-40, 40], the mode as a break point, relative tolerance 1e-13);
- Bishop's Laplace approximation directly: the mode z0 (4.126, d/dz ln f = 0 solved by
  safeguarded Newton to 1e-12, ``gpc_compare.numerics.newton_1d``), the precision
  A = -d^2/dz^2 ln f at z0 (4.128), the Gaussian N(z0, 1/A) (4.130) and the evidence
  approximation Z ~ f(z0) sqrt(2 pi / A) (4.135);
- the package's Laplace, EP and MCMC engines on the same density.

The mapping onto the engines. f(z) is, up to the constant sqrt(2 pi), the posterior of
a one-point GP classifier with the logistic likelihood: with g = 20 z + 4 the prior
z ~ N(0, 1) becomes g ~ N(4, 400) and sigma(20 z + 4) = sigma(y g) with y = +1. So the
engines are run on X = [[0]], y = [+1], kernel ``Constant(variance=400)`` (K = 400),
constant prior mean 4 and ``likelihood="logistic"``; their latent moments map back by
z = (g - 4) / 20 (mean (m_g - 4) / 20, variance v_g / 400: affine, so the Laplace mode
and curvature map exactly) and their evidence p(y | X) = int N(g; 4, 400) sigma(g) dg =
Z / sqrt(2 pi). ``gc.fit`` refuses a single class, so the engines' ``infer`` functions
(``gc.engines.<name>.infer``, the functions ``gc.fit`` calls) are used directly.
With one site EP is exact in the normaliser and the first two moments (the tilted
distribution *is* the posterior); the study asserts it.

Writes to ``results/laplace_1d/``: ``summary.csv`` (tidy: method, quantity, value,
exact, abs_error, mc_se), ``figure_4_14.png`` (Bishop's two panels with EP and MCMC
added) and ``README.md``. Run from the repository root: ``python studies/laplace_1d.py``
(about 10 s, almost all of it MCMC: 4 chains x 2000 draws, random_seed=0; seeds 1
and 2 rerun for the spread of the Monte Carlo moments).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import integrate
from threadpoolctl import threadpool_limits

import gpc_compare as gc
from gpc_compare.likelihoods import get_likelihood
from gpc_compare.metrics import mc_standard_errors
from gpc_compare.numerics import log_sigmoid, newton_1d, sigmoid
from gpc_compare.provenance import versions_text

#: sigma(SCALE z + OFFSET): Bishop's Fig. 4.14 has sigma(20 z + 4).
SCALE = 20.0
OFFSET = 4.0
#: Quadrature range: f(z) < exp(-800) beyond |z| = 40.
Z_RANGE = (-40.0, 40.0)
X_ONE = np.array([[0.0]])
Y_ONE = np.array([1.0])
MCMC_OPTIONS = {"draws": 2000, "tune": 1000, "chains": 4, "random_seed": 0}
EXTRA_SEEDS = (1, 2)


# --------------------------------------------------------------------------- the density
def log_f(z: np.ndarray | float) -> np.ndarray:
    """ln f(z) = -z^2 / 2 + ln sigma(20 z + 4), the unnormalised log density (Bishop 4.125)."""
    z = np.asarray(z, dtype=float)
    return -0.5 * z**2 + log_sigmoid(SCALE * z + OFFSET)


def d_log_f(z: float) -> tuple[float, float]:
    """First and second derivatives of ln f: -z + 20 sigma(-a) and -1 - 400 sigma(a) sigma(-a)."""
    a = SCALE * z + OFFSET
    return float(-z + SCALE * sigmoid(-a)), float(-1.0 - SCALE**2 * sigmoid(a) * sigmoid(-a))


class Exact(NamedTuple):
    """The exact normaliser and moments of p(z) = f(z) / Z, by quadrature."""

    Z: float
    mean: float
    var: float


class LaplaceFit(NamedTuple):
    """Bishop's Laplace approximation: mode z0, precision A, evidence f(z0) sqrt(2 pi / A)."""

    z0: float
    A: float
    Z: float


def laplace_direct(tol: float = 1e-12) -> LaplaceFit:
    """Solve d/dz ln f = 0 (4.126) by Newton safeguarded by bisection; A from 4.128.

    ln f is strictly concave (second derivative <= -1), so d ln f / dz is decreasing with
    one root, bracketed by [-1, 21] (the derivative is -z + 20 sigma(-a), between -z and
    20 - z). Iterates from z = 0 until the bracket or the step is below ``tol``
    (:func:`gpc_compare.numerics.newton_1d`).
    """
    z = newton_1d(d_log_f, -1.0, SCALE + 1.0, tol, x0=0.0, max_iter=200)
    A = -d_log_f(z)[1]
    # Bishop 4.135 in one dimension: Z ~ f(z0) (2 pi)^(1/2) / A^(1/2)
    return LaplaceFit(z, A, float(np.exp(log_f(z)) * np.sqrt(2.0 * np.pi / A)))


def exact_moments(z0: float | None = None) -> Exact:
    """Z, mean and variance of p(z) by ``scipy.integrate.quad`` over [-40, 40].

    The integrands are scaled by f(z0) (z0 the mode) so that quad works near 1, and the
    mode is passed as a break point.
    """
    z0 = laplace_direct().z0 if z0 is None else z0
    lf0 = float(log_f(z0))

    def moment(k: int, c: float = 0.0) -> float:
        def integrand(z: float) -> float:
            return (z - c) ** k * np.exp(float(log_f(z)) - lf0)

        val, _ = integrate.quad(
            integrand, *Z_RANGE, points=[z0], epsabs=0.0, epsrel=1e-13, limit=500
        )
        return val

    m0 = moment(0)
    mean = z0 + moment(1, z0) / m0  # first moment about the mode: no cancellation
    var = moment(2, mean) / m0
    return Exact(float(np.exp(lf0) * m0), float(mean), float(var))


def density(z: np.ndarray, exact: Exact) -> np.ndarray:
    """The normalised p(z) = f(z) / Z."""
    return np.exp(log_f(z) - np.log(exact.Z))


def gaussian(z: np.ndarray, mean: float, var: float) -> np.ndarray:
    return np.exp(-0.5 * (z - mean) ** 2 / var) / np.sqrt(2.0 * np.pi * var)


# --------------------------------------------------------------------------- the engines
def one_point_problem():
    """(X, y, kernel, likelihood, mean) of the one-point GPC equal to p(z) under g = 20 z + 4."""
    kernel = gc.kernels.Constant(variance=SCALE**2)
    return X_ONE, Y_ONE, kernel, get_likelihood("logistic"), OFFSET


def to_z(mean_g: float, var_g: float) -> tuple[float, float]:
    """Moments of z = (g - 4) / 20 from those of g."""
    return (mean_g - OFFSET) / SCALE, var_g / SCALE**2


def log_evidence_to_Z(log_evidence: float) -> float:
    """Z = sqrt(2 pi) p(y | X): the prior N(z; 0, 1) carries the 1 / sqrt(2 pi)."""
    return float(np.exp(log_evidence) * np.sqrt(2.0 * np.pi))


class EngineFit(NamedTuple):
    """An engine's approximation of p(z): moments in z, and its normaliser Z (or NaN)."""

    mean: float
    var: float
    Z: float
    posterior: gc.Posterior


def fit_engine(method: str, **options) -> EngineFit:
    """Run the engine (``Engine.run``) on the one-point problem and map back to z."""
    X, y, kernel, lik, mean = one_point_problem()
    post = gc.engines.get_engine(method).run(X, y, kernel, lik, mean, **options)
    m, v = to_z(float(post.latent_mean[0]), float(post.latent_var[0]))
    Z = np.nan if method == "mcmc" else log_evidence_to_Z(post.log_marginal_likelihood)
    return EngineFit(m, v, Z, post)


# --------------------------------------------------------------------------- the study
def compute(mcmc: bool = True) -> dict:
    """Everything the study reports; ``mcmc=False`` skips the sampler (fast, for tests)."""
    lap = laplace_direct()
    ex = exact_moments(lap.z0)
    with threadpool_limits(1, user_api="blas"):
        eng_lap = fit_engine("laplace", tol=1e-14)
        eng_ep = fit_engine("ep")
        eng_mc = fit_engine("mcmc", **MCMC_OPTIONS) if mcmc else None
        # two more seeds: how much one 4 x 2000 run's moments move (reported, not plotted)
        extra = [
            fit_engine("mcmc", **{**MCMC_OPTIONS, "random_seed": s}) for s in EXTRA_SEEDS
        ] if mcmc else []  # fmt: skip
    out = {"laplace": lap, "exact": ex, "engine_laplace": eng_lap, "ep": eng_ep, "mcmc": eng_mc}
    # the engine's Laplace mode and curvature are Bishop's, mapped by g = 20 z + 4
    if abs(eng_lap.mean - lap.z0) > 1e-8 or abs(eng_lap.var * lap.A - 1.0) > 1e-8:
        raise RuntimeError(f"engine Laplace {eng_lap[:2]} differs from direct {lap}")
    # one site: EP's tilted distribution is the posterior, so its moments are exact
    if abs(eng_ep.mean - ex.mean) > 1e-6 or abs(eng_ep.var - ex.var) > 1e-6:
        raise RuntimeError(f"EP moments {eng_ep[:2]} are not the exact {ex}")
    if mcmc:
        z_chains = (eng_mc.posterior.idata.posterior["f"].values[..., 0] - OFFSET) / SCALE
        out["mcmc_z"] = z_chains
        out["mcmc_se"] = mc_standard_errors(z_chains)
        out["mcmc_extra"] = [
            (seed, e, mc_standard_errors(
                (e.posterior.idata.posterior["f"].values[..., 0] - OFFSET) / SCALE))
            for seed, e in zip(EXTRA_SEEDS, extra, strict=True)
        ]  # fmt: skip
    return out


def summary_table(res: dict) -> pd.DataFrame:
    ex, lap, el, ep = res["exact"], res["laplace"], res["engine_laplace"], res["ep"]
    nan = np.nan
    rows = [
        ("exact", "mode", lap.z0, lap.z0, nan),
        ("exact", "mean", ex.mean, ex.mean, nan),
        ("exact", "var", ex.var, ex.var, nan),
        ("exact", "normaliser_Z", ex.Z, ex.Z, nan),
        ("laplace", "mean", lap.z0, ex.mean, nan),
        ("laplace", "var", 1.0 / lap.A, ex.var, nan),
        ("laplace", "precision_A", lap.A, 1.0 / ex.var, nan),
        ("laplace", "normaliser_Z", lap.Z, ex.Z, nan),
        ("laplace_engine", "mode", el.mean, lap.z0, nan),
        ("laplace_engine", "var", el.var, 1.0 / lap.A, nan),
        ("laplace_engine", "normaliser_Z", el.Z, lap.Z, nan),
        ("ep", "mean", ep.mean, ex.mean, nan),
        ("ep", "var", ep.var, ex.var, nan),
        ("ep", "normaliser_Z", ep.Z, ex.Z, nan),
    ]
    if res["mcmc"] is not None:
        mc = res["mcmc"]
        se_m, se_v = res["mcmc_se"]
        d = mc.posterior.diagnostics
        rows += [
            ("mcmc", "mean", mc.mean, ex.mean, se_m),
            ("mcmc", "var", mc.var, ex.var, se_v),
        ]
        for seed, e, (sm, sv) in res["mcmc_extra"]:
            rows += [
                (f"mcmc_seed{seed}", "mean", e.mean, ex.mean, sm),
                (f"mcmc_seed{seed}", "var", e.var, ex.var, sv),
            ]
        rows += [
            ("mcmc", "r_hat_max", d.r_hat_max, nan, nan),
            ("mcmc", "ess_bulk_min", d.ess_bulk_min, nan, nan),
            ("mcmc", "divergences", d.divergences, nan, nan),
            ("mcmc", "diagnostics_passed", float(d.passed), nan, nan),
        ]
    df = pd.DataFrame(rows, columns=["method", "quantity", "value", "exact", "mc_se"])
    df.insert(4, "abs_error", (df["value"] - df["exact"]).abs())
    return df


def figure(res: dict, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    ex, lap, ep = res["exact"], res["laplace"], res["ep"]
    z = np.linspace(-2.0, 4.0, 1201)
    fig = Figure(figsize=(12, 4.6), layout="constrained")
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2)
    p = density(z, ex)
    ax1.fill_between(z, p, color="gold", alpha=0.6, label="exact p(z)")
    ax1.plot(z, p, color="darkgoldenrod", lw=1.5)
    if res["mcmc"] is not None:
        ax1.hist(res["mcmc_z"].ravel(), bins=np.linspace(-2, 4, 61), density=True,
                 histtype="step", color="k", lw=1.0,
                 label="MCMC draws (NUTS, 4 x 2000, seed 0)")  # fmt: skip
    ax1.plot(z, gaussian(z, lap.z0, 1 / lap.A), color="red", lw=2,
             label=f"Laplace N({lap.z0:.3f}, {1 / lap.A:.3f})")  # fmt: skip
    ax1.plot(z, gaussian(z, ep.mean, ep.var), color="tab:blue", lw=2, ls="--",
             label=f"EP N({ep.mean:.3f}, {ep.var:.3f})")  # fmt: skip
    ax1.axvline(lap.z0, color="red", lw=0.8, ls=":")
    ax1.set_xlim(-2, 4)
    ax1.set_ylim(0, 0.85)
    ax1.set_xlabel("z")
    ax1.set_ylabel("density")
    ax1.set_title("p(z) ∝ exp(-z²/2) σ(20z + 4) and its Gaussian approximations")
    ax1.legend(loc="upper right", fontsize=9)
    ax2.plot(z, -np.log(p), color="darkgoldenrod", lw=2.5, label="exact: -ln p(z)")
    ax2.plot(z, -np.log(gaussian(z, lap.z0, 1 / lap.A)), color="red", lw=2, label="Laplace")
    ax2.plot(z, -np.log(gaussian(z, ep.mean, ep.var)), color="tab:blue", lw=2, ls="--",
             label="EP")  # fmt: skip
    ax2.set_xlim(-2, 4)
    ax2.set_ylim(0, 40)
    ax2.set_xlabel("z")
    ax2.set_ylabel("negative log density")
    ax2.set_title("negative logarithms (Bishop Fig. 4.14, right)")
    ax2.legend(loc="upper center", fontsize=9)
    fig.savefig(path, dpi=110)


def markdown_table(df: pd.DataFrame) -> str:
    """A pipe table (no tabulate dependency); numbers to 6 significant digits."""

    def cell(v) -> str:
        if isinstance(v, float):
            return "" if np.isnan(v) else f"{v:.6g}"
        return str(v)

    lines = ["| " + " | ".join(df.columns) + " |", "|" + " --- |" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


def readme(res: dict, table: pd.DataFrame) -> str:
    ex, lap, el, ep, mc = (res[k] for k in ("exact", "laplace", "engine_laplace", "ep", "mcmc"))
    se_m, se_v = res["mcmc_se"]
    d = mc.posterior.diagnostics
    skew_gap = (ex.mean - lap.z0) / np.sqrt(ex.var)
    return f"""# Bishop Figure 4.14: the Laplace approximation of p(z) ∝ exp(-z²/2) σ(20z + 4)

Bishop (2006), section 4.4: eqs. 4.125-4.135 and Fig. 4.14.

![figure](figure_4_14.png)

## Findings

- **Exact** (quadrature): normaliser Z = ∫ exp(-z²/2) σ(20z+4) dz = {ex.Z:.12f}
  (= sqrt(2π) × p(y=+1) of the one-point classifier), mean {ex.mean:.6f}, variance
  {ex.var:.6f}, mode z0 = {lap.z0:.12f}.
- **Laplace** (Bishop 4.126-4.130): N(z0 = {lap.z0:.6f}, 1/A = {1 / lap.A:.6f}), A =
  {lap.A:.6f}. The mode sits {skew_gap:.3f} exact standard deviations *left* of the mean
  ({ex.mean - lap.z0:+.4f}) and the Laplace variance is {1 / lap.A / ex.var:.3f} × the exact
  one: the density is right-skewed (the sigmoid cuts off the left tail sharply at
  z ≈ -0.2 and leaves the right half of the N(0,1) prior), and the curvature at the mode
  sees only the steep side. Bishop 4.135 gives Z ≈ f(z0) sqrt(2π/A) = {lap.Z:.6f}, which is
  {lap.Z / ex.Z:.4f} × the exact Z ({100 * (lap.Z / ex.Z - 1):+.2f} %).
- **The package's Laplace engine** on the one-point GPC (Constant kernel 400, prior mean 4,
  y = +1, logistic) gives the same mode and curvature after z = (g-4)/20: differences
  {abs(el.mean - lap.z0):.1e} (mode) and {abs(el.var * lap.A - 1):.1e} (relative, variance);
  its evidence reproduces Bishop 4.135 to {abs(el.Z / lap.Z - 1):.1e} (relative).
- **EP** is exact here, as theory says for a single site: mean {ep.mean:.10f} (error
  {abs(ep.mean - ex.mean):.1e}), variance {ep.var:.10f} (error {abs(ep.var - ex.var):.1e}),
  normaliser {ep.Z:.10f} (relative error {abs(ep.Z / ex.Z - 1):.1e}). EP's Gaussian matches
  the mass of p(z); Laplace matches its peak.
- **MCMC** (NUTS, 4 chains × 2000 draws after 1000 tuning, random_seed=0): mean
  {mc.mean:.4f} ± {se_m:.4f} (MC s.e.; exact {ex.mean:.4f}, z = {(mc.mean - ex.mean) / se_m:+.2f}),
  variance {mc.var:.4f} ± {se_v:.4f} (exact {ex.var:.4f}, z = {(mc.var - ex.var) / se_v:+.2f}).
  The same run with seeds {", ".join(str(s) for s, _, _ in res["mcmc_extra"])}: means
  {", ".join(f"{e.mean:.4f} ± {sm:.4f}" for _, e, (sm, _) in res["mcmc_extra"])}, variances
  {", ".join(f"{e.var:.4f} ± {sv:.4f}" for _, e, (_, sv) in res["mcmc_extra"])} (means at
  z = {", ".join(f"{(e.mean - ex.mean) / sm:+.2f}" for _, e, (sm, _) in res["mcmc_extra"])}):
  seed 0's deviation is a Monte Carlo fluctuation, not a bias; one 4 × 2000 run pins the
  mean to about ±0.03
  (its ESS, about {d.ess_bulk_min:.0f}, is a fifth of the 8000 draws on this skewed density).
  Diagnostics: R-hat max {d.r_hat_max:.4f}, bulk ESS min {d.ess_bulk_min:.0f}, divergences
  {d.divergences}, passed = {d.passed}.

**Against Bishop.** Fig. 4.14 shows only the exact density and the Laplace Gaussian
"centred on the mode z0" and their negative logs; the figure here
reproduces both panels (the right one shows the Laplace parabola touching -ln p(z) at z0
and diverging from it on both sides, most on the left where -ln p(z) grows linearly
with slope ~20 before the quadratic takes over). What the figure in the book does not
quantify: the Laplace Gaussian is shifted left of the mass by {ex.mean - lap.z0:.2f} and only
slightly too narrow (variance {1 / lap.A / ex.var:.2f} × the exact);
its normaliser is {100 * (lap.Z / ex.Z - 1):+.1f} % off. Nothing here disagrees with the
textbook; the numbers above make its qualitative picture precise.

## Table

`summary.csv` (columns method, quantity, value, exact, abs_error, mc_se):

{markdown_table(table)}

## Reproduce

`python studies/laplace_1d.py` (from the repository root; about 10 s). Seeds: MCMC
random_seed=0, and 1 and 2 for the spread (draws=2000, tune=1000, chains=4); EP's default
order seed. Versions:
{versions_text()}.
"""


def run(output: Path) -> None:
    """Compute everything and write ``summary.csv``, ``figure_4_14.png`` and ``README.md``."""
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    res = compute(mcmc=True)
    table = summary_table(res)
    table.to_csv(output / "summary.csv", index=False)
    figure(res, output / "figure_4_14.png")
    (output / "README.md").write_text(readme(res, table), encoding="utf-8")
    print(table.to_string(index=False))


if __name__ == "__main__":
    run(Path(__file__).resolve().parent.parent / "results" / "laplace_1d")
