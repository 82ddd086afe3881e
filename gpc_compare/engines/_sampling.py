"""Running NUTS for the MCMC engine: nutpie or PyMC's sampler, the fallback, diagnostics.

On nutpie, the models at fixed hyperparameters, whitened, run with the density compiled
once in :mod:`._compiled` (binary) or :mod:`._compiled_multiclass` (nothing compiled per
model); full Bayes and the "prior" parameterisation through ``pm.sample`` (nutpie
compiling the PyMC model, or PyMC's own sampler).
Where nutpie cannot start, PyMC's sampler runs the PyMC model instead and the
diagnostics say so.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from ..diagnostics import Diagnostics, check_complete, diagnose

__all__ = ["NutsSettings", "default_sampler", "run_nuts", "sample_nutpie"]


def default_sampler() -> str:
    """nutpie where it is installed, else PyMC's sampler."""
    try:
        import nutpie  # noqa: F401
    except ImportError:
        return "pymc"
    return "nutpie"


@dataclass(frozen=True)
class NutsSettings:
    """What NUTS is asked for: the MCMC engine's options with its defaults resolved.

    Attributes
    ----------
    draws, tune, chains, random_seed, target_accept, progressbar
        As for ``pm.sample`` (per chain: ``tune`` iterations discarded, then ``draws``).
    cores : int or None
        Chains sampled at once (as for ``pm.sample``); None: the samplers' default.
    nuts_sampler : {"nutpie", "pymc"}
        The NUTS implementation tried first.
    rhat_max, ess_min : float
        The thresholds of :attr:`Diagnostics.passed`.
    """

    draws: int
    tune: int
    chains: int
    cores: int | None
    random_seed: Any
    target_accept: float
    nuts_sampler: str
    progressbar: bool
    rhat_max: float
    ess_min: float


def run_nuts(
    build_model: Callable[[], Any],
    observed: np.ndarray,
    settings: NutsSettings,
    *,
    compiled: Any = None,
    dropped: float | None,
    parameterization: str,
    var_names: list[str],
    stacklevel: int,
) -> tuple[Any, Diagnostics]:
    """Run NUTS: the complete InferenceData (with ``observed_data`` and, for the whitened
    parameterisation, the prior variance ``dropped``) and its diagnostics, warning (at
    ``stacklevel`` above the caller) when they do not pass.

    ``build_model`` returns the PyMC model (built only when ``pm.sample`` needs it, and
    once); ``compiled``, when given, is the nutpie model (:func:`._compiled.whitened_model`)
    that nutpie samples instead of compiling the PyMC model. The diagnostics record the
    sampler that ran, why it replaced nutpie (``fallback``), ``parameterization`` and the
    draws, tuning iterations and chains.
    """
    model = functools.cache(build_model)  # (nutpie's failure, then PyMC's: one build)
    sampler, fallback = settings.nuts_sampler, ""
    try:
        idata = _sample(sampler, settings, model, compiled)
    except RuntimeError as exc:  # nutpie's failures (e.g. "All initialization points failed")
        if sampler != "nutpie":
            raise
        reason = " ".join(str(exc).split("Stack backtrace")[0].split())  # (not Rust's frames)
        fallback = f"nutpie failed ({reason}); sampled with PyMC's NUTS instead"
        warnings.warn(fallback, RuntimeWarning, stacklevel=stacklevel + 1)
        sampler = "pymc"
        try:
            idata = _sample(sampler, settings, model, compiled)
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
    check_complete(idata, settings.draws, settings.chains)
    diagnostics = dataclasses.replace(
        diagnose(idata, settings.rhat_max, settings.ess_min, var_names),
        sampler=sampler,
        fallback=fallback,
        parameterization=parameterization,
        draws=settings.draws,
        tune=settings.tune,
        chains=settings.chains,
    )
    if not diagnostics.passed:
        warnings.warn(
            f"MCMC diagnostics {diagnostics.message}", RuntimeWarning, stacklevel=stacklevel + 1
        )
    return idata, diagnostics


def _sample(sampler: str, settings: NutsSettings, model: Callable[[], Any], compiled: Any):
    """One sampler's run: nutpie on the ``compiled`` density where there is one, else
    ``pm.sample`` on the PyMC ``model()`` (nutpie compiling it, or PyMC's own NUTS)."""
    if sampler == "nutpie" and compiled is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return sample_nutpie(compiled, settings)
    import pymc as pm

    with model(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.sample(
            draws=settings.draws,
            tune=settings.tune,
            chains=settings.chains,
            cores=settings.cores,
            random_seed=settings.random_seed,
            target_accept=settings.target_accept,
            nuts_sampler=sampler,
            progressbar=settings.progressbar,
            compute_convergence_checks=False,
        )


def sample_nutpie(model, settings: NutsSettings):
    """Run ``nutpie.sample`` on ``model``.

    Parameters
    ----------
    model
        A nutpie model (:func:`._compiled.whitened_model`,
        :func:`._compiled_multiclass.whitened_model`).
    settings : NutsSettings
        ``draws``, ``tune``, ``chains``, ``cores``, ``target_accept``, ``progressbar``
        as for ``pm.sample``; nutpie's seed is drawn from ``random_seed``
        (``np.random.default_rng``), so an integer (or a Generator) reproduces the draws.

    Returns
    -------
    arviz.InferenceData
        With the sampling seconds in ``posterior.attrs["sampling_time"]``, as PyMC records
        them.
    """
    import nutpie

    seed = int(np.random.default_rng(settings.random_seed).integers(2**31))
    t0 = time.perf_counter()
    idata = nutpie.sample(
        model,
        draws=settings.draws,
        tune=settings.tune,
        chains=settings.chains,
        cores=settings.cores,
        seed=seed,
        target_accept=settings.target_accept,
        progress_bar=settings.progressbar,
    )
    idata.posterior.attrs["sampling_time"] = time.perf_counter() - t0
    idata.posterior.attrs["tuning_steps"] = settings.tune
    return idata
