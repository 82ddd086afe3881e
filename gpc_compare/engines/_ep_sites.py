"""EP's site updates (:mod:`.ep`): moment matching (R&W eq. 3.59), one sequential sweep
with rank-one updates of Sigma (R&W Alg. 3.5 lines 4-9), and the Jacobian of the probit
site update with respect to the cavity, which the total leave-one-out gradient needs (the
implicit function theorem at the EP fixed point)."""

from __future__ import annotations

import numpy as np
from scipy.linalg import blas
from threadpoolctl import threadpool_limits

from ..numerics import probit_ratio

__all__ = ["ep_log_evidence", "probit_site_jacobian", "sequential_sweep", "site_update"]


def probit_site_jacobian(y, tau_c, nu_c):
    """d(ttau, tnu) / d(tau_-, nu_-) of the probit site update, per site.

    With alpha1 = d log Z / d mu_c and beta = -d2 log Z / d mu_c^2 (closed form for
    log Z = log Phi(y mu_c / sqrt(1 + v_c))), the update is ttau = beta / (1 - beta v_c),
    tnu = (alpha1 + mu_c beta) / (1 - beta v_c) (GPML's likErf EP form of R&W eq. 3.59).

    Returns
    -------
    dttau_dtau, dttau_dnu, dtnu_dtau, dtnu_dnu : ndarray
    """
    mu_c, v_c = nu_c / tau_c, 1.0 / tau_c
    s = np.sqrt(1.0 + v_c)
    z = y * mu_c / s
    r, gap, cgap = probit_ratio(z)
    alpha1 = y * r / s
    beta = r * gap / s**2
    da_dmu, da_dv = -beta, y * r * (gap * z - 1.0) / (2.0 * s**3)
    db_dmu, db_dv = -y * r * cgap / s**3, r * (cgap * z / 2.0 - gap) / s**4
    den = 1.0 - beta * v_c
    # derivatives with respect to (mu_c, v_c)
    dtt_dmu = db_dmu / den**2
    dtt_dv = (db_dv + beta**2) / den**2
    num = alpha1 + mu_c * beta
    dtn_dmu = (da_dmu + beta + mu_c * db_dmu) / den + num * (db_dmu * v_c) / den**2
    dtn_dv = (da_dv + mu_c * db_dv) / den + num * (db_dv * v_c + beta) / den**2
    # chain to (tau_-, nu_-): mu_c = nu/tau, v_c = 1/tau
    dmu_dtau, dmu_dnu, dv_dtau = -mu_c / tau_c, 1.0 / tau_c, -1.0 / tau_c**2
    return (
        dtt_dmu * dmu_dtau + dtt_dv * dv_dtau,
        dtt_dmu * dmu_dnu,
        dtn_dmu * dmu_dtau + dtn_dv * dv_dtau,
        dtn_dmu * dmu_dnu,
    )


def site_update(lik, y, tau_cav, nu_cav, moments=None):
    """New site parameters from the cavities by moment matching (R&W eq. 3.59); the
    tilted mean and variance are computed unless given."""
    if moments is None:
        moments = lik.tilted_moments(y, nu_cav / tau_cav, 1.0 / tau_cav)[1:]
    mhat, vhat = moments
    return 1.0 / vhat - tau_cav, mhat / vhat - nu_cav


def sequential_sweep(K, y, lik, state, ttau, tnu, damping, rng):
    """One sweep of R&W Alg. 3.5 lines 4-9 in random order, with rank-one updates.

    Sigma is kept as its lower triangle (Fortran order) and updated in place by BLAS
    ``dsyr`` on one thread: level-2 BLAS gains nothing from threads at these sizes and
    loses badly on a loaded machine.
    """
    n = K.shape[0]
    Sigma = np.asfortranarray(K - state.V.T @ state.V)
    mu = state.mu.copy()
    ttau, tnu = ttau.copy(), tnu.copy()
    with threadpool_limits(1, user_api="blas"):
        for i in rng.permutation(n):
            Sii = Sigma[i, i]
            tau_cav = 1.0 / Sii - ttau[i]
            if tau_cav <= 0:  # cannot form the cavity: leave the site as it is
                continue
            nu_cav = mu[i] / Sii - tnu[i]
            new_tt, new_tn = site_update(lik, y[i : i + 1], np.array([tau_cav]), np.array([nu_cav]))
            new_tt = max(float(new_tt[0]), 0.0)  # tau~ kept non-negative
            new_tt = (1 - damping) * ttau[i] + damping * new_tt
            new_tn = (1 - damping) * tnu[i] + damping * float(new_tn[0])
            d_tau, d_nu = new_tt - ttau[i], new_tn - tnu[i]
            ttau[i], tnu[i] = new_tt, new_tn
            # Sigma <- Sigma - d_tau / (1 + d_tau Sigma_ii) s s^T (R&W Alg. 3.5 line 8), and
            # mu <- mu + s (d_nu - d_tau mu_i) / (1 + d_tau Sigma_ii) (the same update of
            # mu = Sigma (K^-1 m + nu~), derived from Sherman-Morrison)
            si = np.concatenate((Sigma[i, :i], Sigma[i:, i]))  # column i from the lower half
            denom = 1.0 + d_tau * Sii
            mu += si * ((d_nu - d_tau * mu[i]) / denom)
            blas.dsyr(-d_tau / denom, si, a=Sigma, lower=1, overwrite_a=1)
    return ttau, tnu


def ep_log_evidence(state, log_det_B: float, m: float) -> float:
    """log Z_EP (R&W eq. 3.65) in the stable form of Alg. 3.5 (GPML's epComputeParams):

    sum log Z_i - 1/2 log|B| + 1/2 sum log(1 + ttau/tau_-) + 1/2 p^T Sigma p
    + 1/2 q^T ((ttau/tau_-) q - 2p) / (ttau + tau_-) - 1/2 sum p^2 / (tau_- + ttau),

    with p = nu~ - ttau m and q = nu_- - tau_- m the sites and cavities of g = f - m.
    ``state`` carries ``log_z``, ``ttau``, ``tau_cav``, ``nu_cav``, ``p`` and ``Sigma_p``
    (dense EP's and FITC-EP's alike); log|B| = log|I + sW K sW| is the prior's part.
    """
    ttau, tau_cav, p = state.ttau, state.tau_cav, state.p
    q = state.nu_cav - tau_cav * m
    tau_sum = tau_cav + ttau
    return float(
        state.log_z.sum()
        - 0.5 * log_det_B
        + 0.5 * np.log1p(ttau / tau_cav).sum()
        + 0.5 * p @ state.Sigma_p
        + 0.5 * q @ ((ttau / tau_cav * q - 2.0 * p) / tau_sum)
        - 0.5 * (p**2 / tau_sum).sum()
    )
