"""The Jacobian of EP's probit site update with respect to the cavity, which the total
leave-one-out gradient of :mod:`.ep` needs (the implicit function theorem at the EP fixed
point)."""

from __future__ import annotations

import numpy as np

from ..numerics import probit_ratio

__all__ = ["_probit_site_jacobian"]


def _probit_site_jacobian(y, tau_c, nu_c):
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
