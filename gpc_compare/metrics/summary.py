"""Summaries across repetitions: intervals over a study's splits, Monte Carlo standard errors."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .intervals import clipped_t_interval

__all__ = ["mc_standard_errors", "summarize"]


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard deviation and a 95% interval across splits per data set, engine, metric.

    Parameters
    ----------
    table : DataFrame
        The tidy study table (``results.csv``).

    Returns
    -------
    DataFrame
        Columns ``dataset, engine, metric, n_splits, mean, sd, low, high, interval`` (and
        ``kernel`` after ``dataset`` when the table's ``kernel`` column holds more than
        one kernel: the summary is then per data set, kernel, engine and metric);
        ``low`` and ``high`` are mean -/+ t_{0.975, k-1} sd / sqrt(k) over the k splits
        (equal to the mean for one split), clipped to the metric's range
        (:data:`~gpc_compare.metrics.intervals.METRIC_RANGES`: an error rate or an AUC
        stays in [0, 1]); ``interval`` says which: ``"t"`` or ``"t, clipped"``. Infinite
        values (a confident mistake) give an infinite mean.
    """
    by = ["dataset", "engine", "metric"]
    if "kernel" in table and table["kernel"].nunique(dropna=True) > 1:
        by = ["dataset", "kernel", "engine", "metric"]
    rows = []
    for keys, group in table.groupby(by, sort=False):
        v = group["value"].to_numpy(dtype=float)
        v = v[~np.isnan(v)]
        k = v.size
        if k == 0:
            continue
        metric = str(keys[-1])
        mean, low, high, clipped = clipped_t_interval(v, metric)
        sd = float(np.std(v, ddof=1)) if k > 1 and np.all(np.isfinite(v)) else 0.0
        rows.append(
            {
                **dict(zip(by, keys, strict=True)),
                "n_splits": k,
                "mean": mean,
                "sd": sd,
                "low": low,
                "high": high,
                "interval": "t, clipped" if clipped else "t",
            }
        )
    return pd.DataFrame(rows)


def mc_standard_errors(draws: object) -> tuple[float, float]:
    """Monte Carlo standard errors of the mean and of the variance of MCMC draws.

    The mean's is ArviZ's ``az.mcse(draws, method="mean")``: the standard deviation of all
    draws (``ddof=1``) over the square root of their effective sample size for the mean,
    the split-chain ESS from the autocorrelations truncated by Geyer's initial monotone
    sequence (Vehtari et al. 2021, Bayesian Analysis 16(2), without rank normalisation).
    The variance's is the same estimator applied to the squared deviations
    (z - zbar)^2 about the mean zbar of all draws, whose average is the (ddof=0) variance
    of the draws.

    Parameters
    ----------
    draws : array_like, shape (chains, draws)
        The draws of one scalar quantity, one row per chain (at least 4 draws per chain).

    Returns
    -------
    se_mean, se_var : float
        The standard errors of the sample mean and of the sample variance.
    """
    z = np.asarray(draws, dtype=float)
    if z.ndim != 2:
        raise ValueError(f"draws must have shape (chains, draws), got {z.shape}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz as az

    se_mean = float(np.ravel(az.mcse(z, method="mean"))[0])
    se_var = float(np.ravel(az.mcse((z - z.mean()) ** 2, method="mean"))[0])
    return se_mean, se_var
