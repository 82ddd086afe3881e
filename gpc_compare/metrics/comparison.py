"""An approximation against a reference posterior: latent errors, Gaussian KL, evidence gap.

The functions take plain arrays and numbers (``post.latent_mean``, ``post.latent_var``,
``post.log_marginal_likelihood``); the reference's arguments are keyword-only
(``ref_mean=``, ``ref_var=``, ...), so an approximation and its reference cannot be swapped
by position.
"""

from __future__ import annotations

import numpy as np

__all__ = ["evidence_gap", "kl_gaussian", "latent_errors", "mean_marginal_kl"]


def _moments(value: object, name: str, *, variance: bool) -> np.ndarray:
    """A non-empty finite float array; strictly positive when it holds variances."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a numeric array") from None
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinity")
    if variance and not np.all(arr > 0.0):
        raise ValueError(f"{name} must hold variances > 0, got min {arr.min():.3g}")
    return arr


def _gaussians(**arrays: object) -> dict[str, np.ndarray]:
    """Check means and variances (names containing "var") and that their shapes agree."""
    out = {k: _moments(v, k, variance="var" in k) for k, v in arrays.items()}
    (first, shape), *rest = ((k, a.shape) for k, a in out.items())
    for k, other in rest:
        if other != shape:
            raise ValueError(f"{k} has shape {other} but {first} has shape {shape}")
    return out


def _x_minus_log1p(x: np.ndarray) -> np.ndarray:
    """x - log(1 + x) for x > -1, without cancellation near 0.

    For |x| < 0.1 the series sum_{k>=2} (-1)^k x^k / k, 24 terms (truncation below
    0.1^24 / 26, far under a double's resolution of x^2 / 2); elsewhere the direct form.
    """
    x = np.asarray(x, dtype=float)
    small = np.abs(x) < 0.1
    with np.errstate(invalid="ignore"):
        out = np.where(np.isposinf(x), np.inf, x - np.log1p(x))  # inf - inf would be NaN
    xs = x[small]
    series = np.zeros_like(xs)
    for k in range(25, 1, -1):  # Horner in x: x^2 (1/2 - x (1/3 - x (1/4 - ...)))
        series = 1.0 / k - xs * series
    out[small] = xs * xs * series
    return out


def kl_gaussian(mean_p: object, var_p: object, mean_q: object, var_q: object) -> np.ndarray:
    """Elementwise KL divergence KL(N(mean_p, var_p) || N(mean_q, var_q)), in nats.

    Defined as

        KL(p || q) = 1/2 [ log(v_q / v_p) + (v_p + (m_p - m_q)^2) / v_q - 1 ],

    computed as 1/2 [ d - log1p(d) ] + (m_p - m_q)^2 / (2 v_q) with d = (v_p - v_q) / v_q,
    so that it stays accurate (not a difference of nearly equal numbers) when v_p and v_q
    nearly agree.

    Parameters
    ----------
    mean_p, var_p : array_like
        Means and variances (> 0) of the first distribution, p.
    mean_q, var_q : array_like
        Means and variances (> 0) of the second, q; all four of one shape.

    Returns
    -------
    ndarray
        KL(p_i || q_i) for each element, >= 0, and 0 where the two Gaussians are equal.
    """
    a = _gaussians(mean_p=mean_p, var_p=var_p, mean_q=mean_q, var_q=var_q)
    vp, vq = a["var_p"], a["var_q"]
    with np.errstate(over="ignore"):  # v_p / v_q beyond the doubles: KL is +inf
        d = (vp - vq) / vq  # v_p / v_q - 1
    return 0.5 * _x_minus_log1p(d) + 0.5 * (a["mean_p"] - a["mean_q"]) ** 2 / vq


def mean_marginal_kl(mean: object, var: object, *, ref_mean: object, ref_var: object) -> float:
    """Mean KL divergence from the reference marginals to the approximate ones, in nats.

    Defined as (1/n) sum_i KL(N(ref_mean_i, ref_var_i) || N(mean_i, var_i)): the direction
    is KL(reference || approximation), where the reference (MCMC) marginal is summarised
    by its mean and variance. This is the divergence that EP's moment matching minimises
    site by site (R&W sec. 3.6), it is finite whenever both variances are, and it grows
    without bound as an approximation's variance shrinks below the reference's (the
    overconfidence Laplace is known for). For the other direction use
    :func:`kl_gaussian` with the arguments swapped.

    Parameters
    ----------
    mean, var : array_like, shape (n,)
        The approximation's latent means and variances (variances > 0).
    ref_mean, ref_var : array_like, shape (n,)
        The reference's latent means and variances, at the same inputs (keyword-only).

    Returns
    -------
    float
        The mean KL divergence, >= 0.
    """
    return float(np.mean(kl_gaussian(ref_mean, ref_var, mean, var)))


def latent_errors(
    mean: object, var: object, *, ref_mean: object, ref_var: object
) -> dict[str, float]:
    """How far an approximation's latent marginals are from a reference's.

    Parameters
    ----------
    mean, var : array_like
        The approximation's latent means and variances (variances > 0), e.g.
        ``post.latent_mean`` and ``post.latent_var``.
    ref_mean, ref_var : array_like
        The reference's (MCMC's, at the same hyperparameters) means and variances at the
        same inputs, the same shape (keyword-only).

    Returns
    -------
    dict
        ``latent_mean_rmse`` = sqrt(mean_i (mean_i - ref_mean_i)^2),
        ``latent_mean_max_abs`` = ``max_i |mean_i - ref_mean_i|``,
        ``latent_var_rmse`` = sqrt(mean_i (var_i - ref_var_i)^2),
        ``latent_var_max_abs`` = ``max_i |var_i - ref_var_i|``,
        ``latent_sd_ratio_mean`` = mean_i sqrt(var_i / ref_var_i) (below 1: the
        approximation is too narrow on average), and
        ``marginal_kl_mean`` = :func:`mean_marginal_kl`, KL(reference || approximation)
        averaged over the inputs; in that order.
    """
    a = _gaussians(mean=mean, var=var, ref_mean=ref_mean, ref_var=ref_var)
    dm = a["mean"] - a["ref_mean"]
    dv = a["var"] - a["ref_var"]
    return {
        "latent_mean_rmse": float(np.sqrt(np.mean(dm**2))),
        "latent_mean_max_abs": float(np.max(np.abs(dm))),
        "latent_var_rmse": float(np.sqrt(np.mean(dv**2))),
        "latent_var_max_abs": float(np.max(np.abs(dv))),
        "latent_sd_ratio_mean": float(np.mean(np.sqrt(a["var"] / a["ref_var"]))),
        "marginal_kl_mean": mean_marginal_kl(
            a["mean"], a["var"], ref_mean=a["ref_mean"], ref_var=a["ref_var"]
        ),
    }


def _finite_number(value: object, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number, got {value!r}") from None
    if not np.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return v


def evidence_gap(
    log_evidence: object, *, ref_log_evidence: object, ref_se: object | None = None
) -> dict[str, float]:
    """Gap between an engine's log evidence and a gold-standard estimate.

    Parameters
    ----------
    log_evidence : float
        The engine's log p(y | X, theta) (e.g. ``post.log_marginal_likelihood``).
    ref_log_evidence : float
        The reference estimate at the same hyperparameters (e.g. the MCMC engine's
        annealed-importance-sampling estimate), keyword-only.
    ref_se : float, optional
        The reference's standard error (> 0), e.g. ``ref.log_marginal_likelihood_se``.

    Returns
    -------
    dict
        ``evidence_gap`` = log_evidence - ref_log_evidence (in nats; positive when the
        engine overestimates), and ``evidence_gap_z`` = evidence_gap / ref_se, the gap
        in reference standard errors (NaN when ``ref_se`` is not given).
    """
    approx = _finite_number(log_evidence, "log_evidence")
    ref = _finite_number(ref_log_evidence, "ref_log_evidence")
    gap = approx - ref
    if ref_se is None:
        return {"evidence_gap": gap, "evidence_gap_z": float("nan")}
    se = _finite_number(ref_se, "ref_se")
    if se <= 0.0:
        raise ValueError(f"ref_se must be a standard error > 0, got {ref_se!r}")
    return {"evidence_gap": gap, "evidence_gap_z": gap / se}
