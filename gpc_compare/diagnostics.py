"""Convergence diagnostics of MCMC fits: R-hat, effective sample sizes, divergences.

:func:`diagnose` summarises an ArviZ InferenceData by its worst rank-normalised split
R-hat and smallest bulk and tail effective sample sizes (Vehtari, Gelman, Simpson,
Carpenter and Buerkner 2021), counts divergent transitions, and passes the fit when
R-hat <= ``rhat_max``, bulk ESS >= ``ess_min`` and there are no divergences. The
diagnostics are ArviZ's (``az.rhat``, ``az.ess(method="bulk")`` and ``"tail"``), computed
by :func:`gpc_compare._convergence.rank_diagnostics` over all entries at once.
:func:`check_complete` refuses a trace that stopped early.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ._convergence import rank_diagnostics

__all__ = ["Diagnostics", "check_complete", "diagnose"]


@dataclass(frozen=True)
class Diagnostics:
    """Convergence diagnostics of an MCMC fit, over f (and theta in full Bayes).

    Attributes
    ----------
    r_hat_max : float
        Largest rank-normalised split R-hat.
    ess_bulk_min, ess_tail_min : float
        Smallest bulk and tail effective sample sizes.
    divergences : int
        Divergent transitions after tuning.
    passed : bool
        R-hat <= ``rhat_max``, bulk ESS >= ``ess_min`` and no divergences.
    message : str
        What failed, or that all passed.
    sampler : str
        The NUTS implementation that drew the samples ("nutpie" or "pymc"; empty when not
        recorded).
    fallback : str
        Why the requested sampler was replaced (nutpie failed to start and PyMC's sampler
        ran instead), or empty.
    parameterization : str
        The coordinates NUTS moved in ("ep", "laplace", "prior" or "full_bayes"; empty when
        not recorded).
    draws, tune, chains : int
        The run: per chain, ``tune`` tuning iterations (discarded) and then ``draws`` draws
        kept (0 when not recorded). A fit's ``convergence.iterations`` is ``tune + draws``.
    """

    r_hat_max: float
    ess_bulk_min: float
    ess_tail_min: float
    divergences: int
    passed: bool
    message: str
    sampler: str = ""
    fallback: str = ""
    parameterization: str = ""
    draws: int = 0
    tune: int = 0
    chains: int = 0


def check_complete(idata, draws: int, chains: int) -> None:
    """Refuse a partial trace: PyMC and nutpie return the draws so far when interrupted.

    Parameters
    ----------
    idata : arviz.InferenceData
        The sampler's output.
    draws, chains : int
        What was asked for.

    Raises
    ------
    RuntimeError
        If the posterior group holds fewer chains or draws.
    """
    post = idata.posterior
    got = (post.sizes.get("chain", 0), post.sizes.get("draw", 0))
    if got != (chains, draws):
        raise RuntimeError(
            f"sampling stopped early (interrupted?): {got[0]} chains x {got[1]} draws of "
            f"{chains} x {draws}"
        )


def diagnose(idata, rhat_max: float, ess_min: float, var_names: list[str]) -> Diagnostics:
    """The worst R-hat and ESS over ``var_names``, the divergences, and pass or fail.

    Parameters
    ----------
    idata : arviz.InferenceData
        With ``posterior`` (and ``sample_stats``, for the divergences).
    rhat_max, ess_min : float
        The thresholds of :attr:`Diagnostics.passed`.
    var_names : list of str
        The variables judged (e.g. ``["f"]``, or ``["f", "theta"]`` in full Bayes).

    Returns
    -------
    Diagnostics
    """
    rhat, bulk, tail = _extremes(idata.posterior, var_names)
    div = int(idata.sample_stats["diverging"].sum()) if "diverging" in idata.sample_stats else 0
    problems = []
    if np.isnan(rhat):
        problems.append("R-hat undefined (it needs at least two chains)")
    elif not rhat <= rhat_max:
        problems.append(f"R-hat {rhat:.3f} > {rhat_max}")
    if not bulk >= ess_min:
        problems.append(f"bulk ESS {bulk:.0f} < {ess_min:.0f}")
    if div:
        problems.append(f"{div} divergences")
    message = "passed" if not problems else "not passed: " + "; ".join(problems)
    return Diagnostics(rhat, bulk, tail, div, not problems, message)


def _extremes(posterior, var_names: list[str]) -> tuple[float, float, float]:
    """The largest R-hat and the smallest bulk and tail ESS over the entries of ``var_names``.

    As the ArviZ route took them: each variable's NaN-skipping max (min), as xarray's
    ``.max()`` (NaN only when all of its entries are), then Python's ``max`` (``min``)
    over the variables in order.
    """
    arrays = []
    for v in var_names:
        values = posterior[v].transpose("chain", "draw", ...).to_numpy()
        arrays.append(values.reshape(values.shape[0], values.shape[1], -1))
    stats = rank_diagnostics(np.concatenate(arrays, axis=2))
    cuts = np.cumsum([a.shape[2] for a in arrays])[:-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN variable: NaN

        def extreme(values: np.ndarray, how, nanhow) -> float:
            return float(how(float(nanhow(part)) for part in np.split(values, cuts)))

        return (
            extreme(stats[0], max, np.nanmax),
            extreme(stats[1], min, np.nanmin),
            extreme(stats[2], min, np.nanmin),
        )
