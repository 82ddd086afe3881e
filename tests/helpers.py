"""Test helpers: the GPML reference cases, central finite differences, toy data."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
from scipy import integrate

DATA = Path(__file__).parent / "data"
STUDIES = Path(__file__).resolve().parent.parent / "studies"
GPML_CASES = ["synth50", "synth80_big_sf", "crabs_meanconst"]


def load_gpml(name: str) -> dict:
    """A GPML toolbox v4.2 reference case (copied from shared/oracle; see tests/data/README.md)."""
    with open(DATA / "gpml" / f"{name}.json") as fh:
        case = json.load(fh)
    for key in ("X", "y", "X_test"):
        case[key] = np.asarray(case[key], dtype=float)
    return case


def central_difference(
    fun: Callable[[np.ndarray], float | np.ndarray], x: np.ndarray, h: float = 1e-5
) -> np.ndarray:
    """(fun(x + h e_i) - fun(x - h e_i)) / 2h for every i, stacked on the first axis."""
    x = np.asarray(x, dtype=float)
    out = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        out.append((np.asarray(fun(x + e)) - np.asarray(fun(x - e))) / (2 * h))
    return np.array(out)


def two_point_log_evidence(
    K: np.ndarray,
    mean: float,
    p1: Callable[[float], float],
    p2: Callable[[float], float],
    half_width: float,
    epsabs: float = 1e-12,
) -> float:
    """log of the integral of N(f; mean, K) p1(f_1) p2(f_2) over the square of the given
    half-width about 0, by scipy's adaptive dblquad (the brute force of two-point tests).

    The bivariate normal density is written out (scalar math, no frozen scipy
    distribution: the integrand is called about 10^5 times)."""
    Ki = np.linalg.inv(K)
    a11, a12, a22 = float(Ki[0, 0]), float(Ki[0, 1]), float(Ki[1, 1])
    c = 1.0 / (2.0 * math.pi * math.sqrt(float(np.linalg.det(K))))

    def integrand(b: float, a: float) -> float:
        da, db = a - mean, b - mean
        density = c * math.exp(-0.5 * (a11 * da * da + 2.0 * a12 * da * db + a22 * db * db))
        return density * p1(a) * p2(b)

    w = half_width
    return math.log(integrate.dblquad(integrand, -w, w, -w, w, epsabs=epsabs)[0])


def toy_data(n: int = 20, d: int = 2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A small, overlapping two-class problem in d dimensions."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(np.sin(2.0 * X[:, 0]) + 0.5 * X[:, -1] + 0.5 * rng.normal(size=n) > 0, 1, -1)
    return X, y


def study_script(name: str) -> ModuleType:
    """The study script ``studies/NAME.py``, loaded as a module (it is not in the package)."""
    from gpc_compare.study import load_study_script

    return load_study_script(STUDIES / f"{name}.py")


def arviz_extremes(idata, var_names: list[str]) -> tuple[float, float, float]:
    """The largest R-hat and the smallest bulk and tail ESS over ``var_names`` by ArviZ
    itself (``az.rhat``, ``az.ess(method="bulk")``, ``az.ess(method="tail")``), taken as
    ``gpc_compare.diagnostics.diagnose`` took them before it computed them itself: each
    variable's xarray ``.max()`` (``.min()``), then Python's ``max`` (``min``)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import arviz as az

        def extreme(ds, how):
            return float(how([float(getattr(ds[v], how.__name__)()) for v in var_names]))

        return (
            extreme(az.rhat(idata, var_names=var_names), max),
            extreme(az.ess(idata, var_names=var_names, method="bulk"), min),
            extreme(az.ess(idata, var_names=var_names, method="tail"), min),
        )
