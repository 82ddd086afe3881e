"""Write ``expectation_reference.json``: E[g(z)], E[g'(z)] and E[g''(z)] / 2 for
z ~ N(a, v) and g = log Phi (probit) or log sigmoid (logistic), at 30 significant digits
(mpmath.quad over +-10 standard deviations split at 0), for the grid of means and variances
``tests/test_expectation.py`` holds the engines' expected log likelihood to.

Run from the repository root: ``python tests/data/make_expectation_reference.py``
(about a minute). The test recomputes a few entries with mpmath on every run, so the file
cannot drift from this script.
"""

from __future__ import annotations

import json
from pathlib import Path

import mpmath

MEANS = [-1e3, -30.0, -5.0, -1.0, 0.0, 0.5, 3.0, 30.0, 1e3]
VARS = [0.0, 1e-8, 1e-2, 1.0, 10.0, 1e2, 1e4, 1e6]
OUT = Path(__file__).with_name("expectation_reference.json")


def integrands(name: str):
    """log p, d log p / dz, d^2 log p / dz^2 as functions of z = y f, in mpmath."""
    if name == "probit":

        def ratio(z):
            return mpmath.npdf(z) / mpmath.ncdf(z)

        return (
            lambda z: mpmath.log(mpmath.ncdf(z)),
            ratio,
            lambda z: -ratio(z) * (z + ratio(z)),
        )
    return (
        lambda z: -mpmath.log1p(mpmath.exp(-z)),
        lambda z: 1 / (1 + mpmath.exp(z)),
        lambda z: -1 / ((1 + mpmath.exp(z)) * (1 + mpmath.exp(-z))),
    )


def reference(name: str, a: float, v: float) -> tuple[float, float, float]:
    """E[g(z)], E[g'(z)], E[g''(z)] / 2 for z ~ N(a, v) with 30 digits (mpmath.quad)."""
    funs = integrands(name)
    with mpmath.workdps(30):
        if v == 0.0:
            vals = [fun(mpmath.mpf(a)) for fun in funs]
        else:
            s = mpmath.sqrt(mpmath.mpf(v))
            pts = sorted({-mpmath.inf, a - 10 * s, mpmath.mpf(0), a + 10 * s, mpmath.inf})
            vals = []
            for fun in funs:

                def integrand(z, fun=fun):
                    return mpmath.npdf(z, a, s) * fun(z)

                val, err = mpmath.quad(integrand, pts, error=True)
                if err > 1e-14 * max(1, abs(val)):
                    raise ArithmeticError(f"mpmath.quad did not converge: {name} {a} {v}")
                vals.append(val)
        return float(vals[0]), float(vals[1]), float(vals[2] / 2)


def main() -> None:
    table = {
        "about": "E[log p], E[d log p / dz], E[d2 log p / dz2] / 2 for z ~ N(mean, var); "
        "written by make_expectation_reference.py (mpmath, 30 digits)",
        "cases": [
            {"likelihood": name, "mean": a, "var": v, "values": list(reference(name, a, v))}
            for name in ("probit", "logistic")
            for v in VARS
            for a in MEANS
        ],
    }
    OUT.write_text(json.dumps(table, indent=1) + "\n")


if __name__ == "__main__":
    main()
