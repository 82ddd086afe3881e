"""Running NUTS for the MCMC engine: nutpie or PyMC's sampler, the fallback, diagnostics.

On nutpie, the binary model at fixed hyperparameters, whitened, runs with the density
compiled once in :mod:`._compiled` (nothing compiled per model); full Bayes, the "prior"
parameterisation and the softmax through ``pm.sample`` (nutpie compiling the PyMC model,
or PyMC's own sampler).
Where nutpie cannot start, PyMC's sampler runs the PyMC model instead and the
diagnostics say so.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import xarray as xr

from ..diagnostics import Diagnostics, check_complete, diagnose

__all__ = ["default_sampler", "run_nuts", "sample_nutpie"]


def default_sampler() -> str:
    """nutpie where it is installed, else PyMC's sampler."""
    try:
        import nutpie  # noqa: F401
    except ImportError:
        return "pymc"
    return "nutpie"


def run_nuts(
    build_model: Callable[[], Any],
    observed: np.ndarray,
    *,
    compiled: Any = None,
    draws: int,
    tune: int,
    chains: int,
    random_seed,
    target_accept: float,
    nuts_sampler: str,
    progressbar: bool,
    dropped: float | None,
    parameterization: str,
    rhat_max: float,
    ess_min: float,
    var_names: list[str],
    stacklevel: int,
) -> tuple[Any, Diagnostics]:
    """Run NUTS: the complete InferenceData (with ``observed_data`` and, for the whitened
    parameterisation, the prior variance ``dropped``) and its diagnostics, warning (at
    ``stacklevel`` above the caller) when they do not pass.

    ``build_model`` returns the PyMC model (built only when ``pm.sample`` needs it, and
    once);
    ``compiled``, when given, is the nutpie model (:func:`._compiled.whitened_model`)
    that nutpie samples instead of compiling the PyMC model.
    """
    import pymc as pm

    model = functools.cache(build_model)  # (nutpie's failure, then PyMC's: one build)

    def sample(sampler: str):
        if sampler == "nutpie" and compiled is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return sample_nutpie(
                    compiled, draws=int(draws), tune=int(tune), chains=int(chains),
                    random_seed=random_seed, target_accept=target_accept,
                    progressbar=progressbar,
                )  # fmt: skip
        with model(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pm.sample(
                draws=int(draws), tune=int(tune), chains=int(chains), random_seed=random_seed,
                target_accept=target_accept, nuts_sampler=sampler, progressbar=progressbar,
                compute_convergence_checks=False,
            )  # fmt: skip

    fallback = ""
    try:
        idata = sample(nuts_sampler)
    except RuntimeError as exc:  # nutpie's failures (e.g. "All initialization points failed")
        if nuts_sampler != "nutpie":
            raise
        reason = " ".join(str(exc).split("Stack backtrace")[0].split())  # (not Rust's frames)
        fallback = f"nutpie failed ({reason}); sampled with PyMC's NUTS instead"
        warnings.warn(fallback, RuntimeWarning, stacklevel=stacklevel + 1)
        try:
            idata = sample("pymc")
        except Exception as again:  # noqa: BLE001 - both failed: say so, plainly
            raise RuntimeError(
                f"MCMC could not start: nutpie failed ({reason}), and so did PyMC's "
                f"sampler ({type(again).__name__}: {' '.join(str(again).split())[:300]})"
            ) from None
    if dropped is not None:
        idata.attrs["dropped_prior_variance"] = dropped
    if "observed_data" not in idata.groups():
        n = observed.shape[0]
        idata.add_groups(
            observed_data=xr.Dataset({"y": ("obs", observed)}, coords={"obs": np.arange(n)})
        )
    check_complete(idata, draws, chains)
    diagnostics = diagnose(idata, rhat_max, ess_min, var_names)
    diagnostics = dataclasses.replace(
        diagnostics, sampler="pymc" if fallback else nuts_sampler, fallback=fallback,
        parameterization=parameterization,
    )  # fmt: skip
    if not diagnostics.passed:
        warnings.warn(
            f"MCMC diagnostics {diagnostics.message}", RuntimeWarning, stacklevel=stacklevel + 1
        )
    return idata, diagnostics


def sample_nutpie(model, *, draws: int, tune: int, chains: int, random_seed, target_accept: float,
                  progressbar: bool):  # fmt: skip
    """Run ``nutpie.sample`` on ``model``.

    Parameters
    ----------
    model
        A nutpie model (:func:`._compiled.whitened_model`).
    draws, tune, chains, random_seed, target_accept, progressbar
        As for ``pm.sample``; nutpie's seed is drawn from ``random_seed``
        (``np.random.default_rng``), so an integer (or a Generator) reproduces the draws.

    Returns
    -------
    arviz.InferenceData
        With the sampling seconds in ``posterior.attrs["sampling_time"]``, as PyMC records
        them.
    """
    import nutpie

    seed = int(np.random.default_rng(random_seed).integers(2**31))
    t0 = time.perf_counter()
    idata = nutpie.sample(
        model, draws=draws, tune=tune, chains=chains, seed=seed, target_accept=target_accept,
        progress_bar=progressbar,
    )  # fmt: skip
    idata.posterior.attrs["sampling_time"] = time.perf_counter() - t0
    idata.posterior.attrs["tuning_steps"] = tune
    return idata
