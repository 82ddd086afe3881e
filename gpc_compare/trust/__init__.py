"""Can this approximation be trusted here? Pareto-smoothed importance sampling from q.

``gc.psis(posterior)`` draws x ~ q from an engine's Gaussian approximation, weighs each
draw by the target's unnormalised density over q's,

    log w(x) = log p(y | x) + log p(x) - log q(x),

and fits a generalized Pareto distribution to the upper tail of the weights (PSIS,
Vehtari, Simpson, Gelman, Yao and Gabry 2024, with ``arviz.psislw``). Its shape k-hat
says how heavy the tail is: the importance-weighted estimates converge at a useful rate
when k-hat is small, and an approximation whose weights have k-hat above 0.7 is not
close to the posterior where it matters (Yao, Vehtari, Simpson and Gelman 2018). The same
weights give the importance-sampling evidence, with a standard error, and predictions
corrected towards the exact posterior.

What is diagnosed
-----------------
Every target is the engine's own model's unnormalised posterior, evaluated exactly:

- Laplace, EP, KL, VB: q(f) = N(m + K alpha, (K^-1 + W)^-1) over f at the n training
  inputs, against p(y | f) N(f | m, K), the GP posterior itself; the evidence estimated
  is log p(y | X, theta), the number every engine's own evidence approximates.
- softmax Laplace: its Gaussian over the C n latent values, against
  p(y | f) prod_c N(f_c | 0, K).
- FITC-Laplace, FITC-EP: q(f) on the FITC prior K~ = Q + diag(K - Q), against
  p(y | f) N(f | m, K~): the FITC model's posterior and evidence, not the full GP's.
- SVGP: q(v) over its M whitened inducing values, against p(v) prod_i p(y_i | v), each f_i
  given v by its exact GP conditional ``N(m + a_i^T v, k_ii - |a_i|^2)``, independently of
  the others (the FITC model on SVGP's inducing inputs). SVGP's bound depends on q only
  through these per-case conditionals, so it bounds this model's evidence as well as the
  full GP's; the full GP's p(v | y) would need an n-dimensional integral over f | v for
  each draw, and is not evaluated. With Z = X both are the full GP (up to the jitter).

The record's ``diagnosed`` says which, and the formulas are in :mod:`._targets`. For the
dense forms no K^-1 is needed: with delta = f - mu and B = I + sW K sW,
log p(f) - log q(f) = 1/2 delta^T W delta - alpha^T delta - 1/2 alpha^T (mu - m)
- 1/2 log|B|, exact for every f. MCMC's draws (and anything not a Gaussian approximation)
are refused with a ValueError, as is an n whose factors would not fit in memory.

The numbers
-----------
``pareto_k``
    k-hat of the raw weights (``arviz.psislw``, r_eff = 1: independent draws; the tail
    is the largest min(S / 5, 3 sqrt(S)) weights, Vehtari et al. 2024 app. H). Weights
    equal to rounding (spread below sqrt(machine epsilon) in the log: q is the target,
    as under the Gaussian likelihood) have no tail to fit; ArviZ and loo return inf
    there, this returns -inf, the limit of a bounded tail.
``verdict``
    With S draws and the threshold k_S = min(1 - 1/log10(S), 0.7) of Vehtari et al.
    (2024, eq. 13 and sec. 3.2.4): "reliable" for k-hat < k_S (the PSIS estimates and
    their Monte Carlo errors can be trusted, and q is close to the posterior); "usable
    with care" for k_S <= k-hat <= 0.7 (S is too small for this tail: ``min_draws`` =
    10^(1/(1 - k-hat)) draws would do, sec. 3.2.3; the band is empty for S >= 2155,
    where k_S = 0.7, e.g. the default 4000); "not reliable" above 0.7, where the draws
    needed grow impractically and the bias dominates (sec. 3.2.4), so that q is not to
    be trusted for this data (Yao et al. 2018, who also call 0.5 < k-hat < 0.7 "not
    perfect but useful" for q itself). For S < 2155 the threshold is below 0.7
    (0.5 at S = 100).
``ess``
    1 / sum w~_s^2 of the smoothed, normalised weights, the importance-sampling effective
    sample size as Vehtari et al. (2024) use it.
``log_evidence``, ``log_evidence_se``
    From the raw (not smoothed) weights, whose mean is an unbiased estimate of Z:
    log Z^ = log mean_s w_s, se = sd(w) / (sqrt(S) mean(w)) (the delta method). The
    weights' variance is finite only for k < 1/2: above that the se understates the
    error, and above 0.7 neither number is to be trusted.
``predict_proba(Xs)``, ``log_predictive(Xs, ys)``
    Self-normalised with the smoothed weights: p(y* | data) = sum_s w~_s
    int p(y* | f*) p(f* | draw s) df*, where f* given a draw is the GP conditional given
    f at the training inputs (R&W eq. 2.19, as the MCMC engine predicts) for the dense
    forms, and the test case's conditional given the inducing values (FITC's predictive
    prior, as the sparse engines predict) for FITC and SVGP. With equal weights this is
    the plain prediction up to Monte Carlo error.
``mean_log_predictive(Xs, ys)``
    The corrected held-out score mean_i log p^_i and its Monte Carlo standard error, by
    the delta method for a self-normalised estimate (Owen 2013, sec. 9.2) with the
    smoothed weights: sqrt(sum_s w~_s^2 (g_s - 1)^2), g_s = mean_i p_i(draw s) / p^_i.
    It is the error of the S draws, to be trusted where k-hat is (Vehtari et al. 2024);
    with equal weights (q the posterior) it is the plain Monte Carlo error of averaging the
    draws' predictions, which is not zero.

The Student-t proposal
----------------------
``proposal="student_t"`` draws x = mu + s (q's scale) z with s = sqrt(df / chi2_df), a
multivariate t with ``df`` degrees of freedom and q's location and scale (the latent
draw's standard normal vector scaled, so the t is over the D values the draw is made of:
n, C n, M + n (FITC: inducing values and per-case residuals) or M), its covariance
df / (df - 2) times q's. Its heavier tails are meant for a target wider than q (Laplace at
a large signal variance, Kuss and Rasmussen 2005). In D dimensions, though, the t moves
every coordinate by the one factor sqrt(df / chi2_df), which a posterior does not, and
measured it does not reliably lower k-hat: Laplace on 40 separable cases at sigma_f^2 =
1e4, mean k-hat over 8 seeds 74 (Gaussian) and 66 (t, df = 4), both "not reliable";
Laplace on crabs (n = 200) at EP's optimum, 0.68 (Gaussian), 0.70 (df = 4), 0.58
(df = 2), 0.73 (df = 10), the seeds' spread about 0.06. On one case it corrects q's
tails as meant (tests/test_trust.py).

Cost
----
Dense: a Cholesky of K (with the project's jitter), the triangular product L_K^T W L_K
(LAPACK dlauum) and a Cholesky of A = I + L_K^T W L_K, n^3 flops in all, then 2 n^2 per
draw (a triangular solve and product) in blocks of draws; the draws' whitened values are
kept for prediction (draws x n floats). Sparse: O(n M) per draw (SVGP with the logistic
likelihood: a quadrature per case and draw, about 15 microseconds each). Measured at
n = 5,000 (2-D, probit, 4000 draws): Laplace 20.5 s of CPU over both BLAS threads and a
1.6 GB peak (137 s wall on this machine, shared with a load of 13); FITC-EP and SVGP with
M = 128, 5.4 s and 4.2 s of CPU (``benchmarks/quoted_times.py``, idle).

References
----------
Vehtari, A., Simpson, D., Gelman, A., Yao, Y. and Gabry, J. (2024). Pareto smoothed
importance sampling. Journal of Machine Learning Research 25(72), 1-58.

Owen, A. B. (2013). Monte Carlo theory, methods and examples. Chapter 9: Importance
sampling. https://artowen.su.domains/mc/

Yao, Y., Vehtari, A., Simpson, D. and Gelman, A. (2018). Yes, but did it work?:
Evaluating variational inference. Proceedings of the 35th ICML, PMLR 80, 5581-5590.

Kuss, M. and Rasmussen, C. E. (2005). Assessing approximate inference for binary
Gaussian process classification. Journal of Machine Learning Research 6, 1679-1704.

Rasmussen, C. E. and Williams, C. K. I. (2006). Gaussian Processes for Machine Learning.
MIT Press (R&W).
"""

from __future__ import annotations

import time

import numpy as np

from .._validation import check_choice, check_count, check_positive, check_random_seed
from ._record import (
    KHAT_BOUND,
    PSISDiagnosis,
    draw_blocks,
    khat_threshold,
    log_evidence,
    min_draws,
    smooth,
    verdict,
)
from ._targets import BLOCK_ELEMENTS, target_for

__all__ = ["KHAT_BOUND", "PROPOSALS", "PSISDiagnosis", "psis"]

#: The proposals ``psis`` takes.
PROPOSALS = ("gaussian", "student_t")
#: The fewest draws accepted: the tail fit needs min(S / 5, 3 sqrt(S)) > 4 of them, and
#: at S = 100 the reliability threshold is already 0.5.
MIN_DRAWS = 100


def psis(
    posterior,
    draws: int = 4000,
    random_seed: int | np.random.Generator | None = None,
    proposal: str = "gaussian",
    *,
    df: float = 4.0,
) -> PSISDiagnosis:
    """Diagnose a Gaussian approximation by Pareto-smoothed importance sampling from it.

    Parameters
    ----------
    posterior : Posterior
        From ``gc.fit`` with method laplace, ep, kl, vb, fitc_laplace, fitc_ep or svgp
        (softmax: laplace). MCMC's is refused: it is not an approximation q.
    draws : int
        S, at least 100; the default 4000 puts the reliability threshold at 0.7.
    random_seed : int, Generator or None
        Seeds the draws (the same seed gives the same record).
    proposal : {"gaussian", "student_t"}
        q itself, or the multivariate t with q's location and scale (module notes).
    df : float
        The Student-t's degrees of freedom (``proposal="student_t"`` only).

    Returns
    -------
    PSISDiagnosis
        pareto_k, verdict, ess, log_evidence and its se, the corrected
        ``predict_proba``, ``log_predictive`` and ``mean_log_predictive`` (with its se),
        ``latent_mean``, ``record()``.

    Raises
    ------
    ValueError
        For a posterior that is not a Gaussian approximation, an n whose factors do not
        fit in memory, or a bad option.

    Notes
    -----
    See :mod:`gpc_compare.trust` for the targets, the thresholds and the references.
    """
    start = time.perf_counter()
    draws = check_count(draws, "draws", MIN_DRAWS)
    proposal = check_choice(proposal, "proposal", PROPOSALS)
    df = check_positive(df, "df")
    rng = np.random.default_rng(check_random_seed(random_seed))
    target = target_for(posterior, draws)
    block = max(1, min(draws, BLOCK_ELEMENTS // max(1, target.width)))
    sizes = [min(block, draws - s) for s in range(0, draws, block)]
    generators = rng.spawn(len(sizes))
    t_df = None if proposal == "gaussian" else df
    weights, keep = [], []
    for lw, d in draw_blocks(target, generators, sizes, t_df):
        weights.append(lw)
        keep.append(d.keep)
    lw = np.concatenate(weights)
    if not np.all(np.isfinite(lw)):
        raise FloatingPointError(
            f"{np.sum(~np.isfinite(lw))} of the {draws} log weights are not finite: the "
            "likelihood or the proposal overflowed (check the hyperparameters' scale)"
        )
    smoothed, k = smooth(lw)
    log_z, log_z_se = log_evidence(lw)
    return PSISDiagnosis(
        method=posterior.method,
        diagnosed=target.diagnosed,
        proposal=proposal,
        df=t_df,
        draws=draws,
        pareto_k=k,
        khat_threshold=khat_threshold(draws),
        verdict=verdict(k, draws),
        min_draws=min_draws(k),
        ess=float(1.0 / np.exp(2.0 * smoothed).sum()),
        log_evidence=log_z,
        log_evidence_se=log_z_se,
        seconds=time.perf_counter() - start,
        log_weights=lw,
        smoothed_log_weights=smoothed,
        _target=target,
        _keep=np.concatenate(keep),
        _blocks=(generators, sizes, t_df),
    )
