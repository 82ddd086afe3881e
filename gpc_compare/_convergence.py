"""Rank-normalised split R-hat and bulk and tail effective sample sizes, vectorised.

:func:`rank_diagnostics` computes, for every scalar entry of a (chains, draws, k) array at
once, the numbers ArviZ 0.23 gives one entry at a time: ``az.rhat`` (method "rank"),
``az.ess(method="bulk")`` and ``az.ess(method="tail")``, with ``relative=False``. The
estimators are those of Vehtari, Gelman, Simpson, Carpenter and Buerkner (2021),
"Rank-normalization, folding, and localization: an improved R-hat for assessing convergence
of MCMC", Bayesian Analysis 16(2) (below "V21": split R-hat and ESS in its section 3,
rank normalisation, folding and the bulk and tail ESS in section 4), with ArviZ's
conventions kept:

- chains are split in halves (the middle draw of an odd count dropped) and stacked;
- rank normalisation: average ranks r over all split chains together, then
  z = Phi^{-1}((r - 3/8) / (S + 1/4)) with S the number of draws (Blom 1958);
- R-hat on z: sqrt(((N - 1) W / N + B / N) / W) (N draws a split chain, W the mean
  within-chain variance, B / N the variance of the chain means), the larger of that of
  the ranks and that of the folded ranks |x - median(x)| (the larger as Python's ``max``
  takes it: a NaN folded value leaves the bulk one);
- ESS (with the initial monotone sequence of Geyer 1992, "Practical Markov chain Monte
  Carlo", Statistical Science 7(4)): autocovariances by FFT,
  rho_t = 1 - (W - mean_m acov_m(t)) / var_plus, the pairs rho_{2j} + rho_{2j+1} summed
  while positive and made monotone, tau floored at 1 / log10(S), ESS = S / tau; a sample
  whose range is below ``np.finfo(float).resolution`` has ESS = S;
- tail ESS: the smaller ESS of the indicators x <= q_{0.05} and x <= q_{0.95}, q the type-7
  quantile as ``scipy.stats.mstats.mquantiles(alphap=1, betap=1)`` computes it;
- NaN for an entry holding a NaN, for fewer than 4 draws, and (R-hat) for one chain.

Variances are two-pass (``np.var``), as ArviZ's numpy path; with numba installed ArviZ
takes the one-pass sum(x^2)/n - mean^2, which agrees to rounding except where a variance
is itself rounding error: chains each constant at different values, where R-hat is inf (or
a rounding-sized W gives ~1e16) here and ArviZ's numba path may give NaN.

:func:`ess_mean` is ``az.ess(method="mean")`` the same way: the ESS of the draws
themselves (not their ranks) over the split chains, what ``az.mcse(method="mean")``
divides the sample sd by (the Monte Carlo errors of :mod:`gpc_compare.metrics.mcse`).

ArviZ loops in Python over entries (seconds for a few hundred latent values); here the
work is array operations over all entries, in blocks that bound the memory.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from scipy.fft import next_fast_len
from scipy.special import ndtri

__all__ = ["ess_mean", "peak_bytes", "rank_diagnostics"]

#: Blom's offset c in the rank normalisation (r - c) / (S - 2c + 1).
_BLOM = 3.0 / 8.0
#: The quantiles whose indicators' ESS is the tail ESS (V21 section 4).
_TAIL_PROBS = (0.05, 0.95)
#: Fewer draws per chain and ArviZ returns NaN.
_MIN_DRAWS = 4
#: Values held in memory per block of entries (chains x draws x entries): 2 MB of float64.
#: (At 4 x 1000 x 755 a block of 2^18 values was faster than one of 2^21, 0.48 s against
#: 0.60, and its temporaries' peak 24.5 MB against 196 MB.)
_BLOCK = 1 << 18
#: The temporaries' peak in copies of a block's values (tracemalloc: 12.3 copies at
#: 2 x 1000 x 100 and at 4 x 1000 x 100, 12.3 with full blocks at 4 x 1000 x 755).
_PEAK_COPIES = 13


def peak_bytes(size: int) -> int:
    """Bytes of :func:`rank_diagnostics`' temporaries for ``size`` float64 values: a few
    copies of a block, so bounded whatever the number of entries."""
    return 8 * _PEAK_COPIES * min(int(size), _BLOCK)


def rank_diagnostics(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rank-normalised split R-hat, bulk ESS and tail ESS of every entry.

    Parameters
    ----------
    x : ndarray, shape (chains, draws, k)
        The draws of k scalar quantities (integers are taken as float64; float32 stays
        float32 where ArviZ keeps it, the median and the folding).

    Returns
    -------
    rhat, ess_bulk, ess_tail : ndarray, shape (k,)
        As ``az.rhat(method="rank")``, ``az.ess(method="bulk")`` and
        ``az.ess(method="tail")`` give them, entry by entry (NaN where ArviZ gives NaN).
    """
    x = np.asarray(x)
    # a float32 sample is folded in float32, as ArviZ folds it (|x - median| rounded there)
    x = x.astype(x.dtype if np.issubdtype(x.dtype, np.floating) else float, copy=False)
    out = np.full((3, _entries(x)), np.nan)
    for where, block in _blocks(x):
        out[:, where] = _block(block)
    return out[0], out[1], out[2]


def ess_mean(x: np.ndarray) -> np.ndarray:
    """The ESS of the mean of every entry, as ``az.ess(method="mean")`` gives it.

    Parameters
    ----------
    x : ndarray, shape (chains, draws, k)
        The draws of k scalar quantities.

    Returns
    -------
    ndarray, shape (k,)
        The ESS over the split chains of the draws as they are (V21 section 3; no rank
        normalisation), not relative; NaN for an entry holding a NaN or fewer than 4
        draws a chain, the number of draws for an entry that is constant.
    """
    x = np.asarray(x, dtype=float)
    out = np.full(_entries(x), np.nan)
    for where, block in _blocks(x):
        bad = np.isnan(block).any(axis=(1, 2))
        ess = _ess(_split_chains(np.where(bad[:, None, None], 0.0, block)))
        out[where] = np.where(bad, np.nan, ess)
    return out


def _entries(x: np.ndarray) -> int:
    """k, the entries of draws x of shape (chains, draws, k) (a ValueError otherwise)."""
    if x.ndim != 3:
        raise ValueError(f"x must be (chains, draws, k), got shape {x.shape}")
    return x.shape[2]


def _blocks(x: np.ndarray) -> Iterator[tuple[slice, np.ndarray]]:
    """(slice, block) over the entries of x (chains, draws, k): each block (entries,
    chains, draws), contiguous, of at most _BLOCK values; none where there are fewer than
    _MIN_DRAWS draws a chain (the diagnostics are then NaN)."""
    chains, draws, k = x.shape
    if draws < _MIN_DRAWS or chains < 1:
        return
    step = max(1, _BLOCK // (chains * draws))
    for lo in range(0, k, step):
        block = np.moveaxis(x[:, :, lo : lo + step], 2, 0)
        yield slice(lo, lo + step), np.ascontiguousarray(block)


def _block(a: np.ndarray) -> np.ndarray:
    """(R-hat, bulk ESS, tail ESS) of each entry of ``a`` (entries, chains, draws)."""
    bad = np.isnan(a).any(axis=(1, 2))
    a = np.where(bad[:, None, None], 0.0, a)
    split = _split_chains(a)
    z, ordered = _z_scale(split)
    rhat = np.full(len(a), np.nan)
    if a.shape[1] >= 2:
        bulk = _rhat(z)
        half = ordered.shape[1] // 2  # an even count: the median is the middle pair's mean
        med = (ordered[:, half - 1] + ordered[:, half]) / 2.0
        folded = _rhat(_z_scale(np.abs(split - med[:, None, None]))[0])
        rhat = np.where(folded > bulk, folded, bulk)  # max(bulk, folded) as Python's max
    out = np.stack([rhat, _ess(z), _ess_tail(a)])
    out[:, bad] = np.nan
    return out


def _split_chains(a: np.ndarray) -> np.ndarray:
    """Each chain's first and last halves as chains: (entries, 2 chains, draws // 2)."""
    half = a.shape[2] // 2
    return np.concatenate((a[:, :, :half], a[:, :, -half:]), axis=1)


def _z_scale(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank normalisation (V21 section 4) over all chains of each entry of (entries, chains,
    draws): z = Phi^{-1}((r - 3/8) / (S + 1/4)), r the average rank (ties given their mean
    rank, as ``scipy.stats.rankdata(method="average")``); an entry holding a NaN is all NaN.
    Returned with each entry's values sorted, (entries, S).

    An average rank is a half-integer, r = (first + last) / 2 + 1 over the 0-based sorted
    positions of its ties, so Phi^{-1} is evaluated once per possible rank and looked up.
    """
    flat = y.reshape(len(y), -1)
    length = flat.shape[1]
    # flat indices: faster than take_along_axis and put_along_axis
    order = np.argsort(flat, axis=1) + (np.arange(len(flat)) * length)[:, None]
    s = flat.ravel()[order]
    pos = np.arange(length)
    starts = np.ones(flat.shape, dtype=bool)
    starts[:, 1:] = s[:, 1:] != s[:, :-1]
    if starts.all():  # no ties: first = last = the position
        both = 2 * pos
    else:
        ends = np.ones(flat.shape, dtype=bool)
        ends[:, :-1] = starts[:, 1:]
        first = np.maximum.accumulate(np.where(starts, pos, 0), axis=1)
        last = np.minimum.accumulate(np.where(ends, pos, length - 1)[:, ::-1], axis=1)
        both = first + last[:, ::-1]
    ranks = np.arange(2 * length - 1) / 2.0 + 1.0  # r for first + last = 0, 1, ..., 2L - 2
    table = ndtri((ranks - _BLOM) / (length - 2 * _BLOM + 1))
    z = np.empty(flat.shape)
    z.ravel()[order] = table[both]
    z[np.isnan(flat).any(axis=1)] = np.nan
    return z.reshape(y.shape), s


def _rhat(z: np.ndarray) -> np.ndarray:
    """Split R-hat of (entries, chains, draws) (V21 section 3): sqrt((B/W + N - 1) / N),
    B = N times the variance of the chain means, W the mean within-chain variance."""
    n = z.shape[2]
    between = n * z.mean(axis=2).var(axis=1, ddof=1)
    within = z.var(axis=2, ddof=1).mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt((between / within + n - 1) / n)


def _mean_autocov(y: np.ndarray) -> np.ndarray:
    """The chains' mean autocovariance at lags 0..N-1 of (entries, chains, draws), by FFT
    (each chain's divided by N), as (entries, N).

    The periodogram is averaged over chains before the one inverse transform: the same
    mean as ArviZ's chain by chain, up to rounding.
    """
    n = y.shape[2]
    m = next_fast_len(2 * n, real=True)  # >= 2N - 1: no wrap-around
    f = np.fft.rfft(y - y.mean(axis=2, keepdims=True), n=m, axis=2)
    power = (f.real**2 + f.imag**2).mean(axis=1)
    return np.fft.irfft(power, n=m, axis=1)[:, :n] / n


def _ess(y: np.ndarray) -> np.ndarray:
    """ESS of (entries, chains, draws), not relative (V21 section 3; ArviZ's ``_ess``).

    Geyer's initial positive sequence stops at the first pair P_j = rho_{2j} + rho_{2j+1}
    (P_0 = 1 + rho_1) that is not positive, or after ``jmax`` pairs (t < N - 3): with J the
    pairs kept, tau = -1 + 2 sum_{j<J} min_{i<=j} P_i + rho_{2J}, the last term kept when
    P_J >= 0 or rho_{2J} > 0, as ArviZ's loops do.
    """
    n_rows, n_chains, n = y.shape
    size = n_chains * n
    constant = (y.max(axis=(1, 2)) - y.min(axis=(1, 2))) < np.finfo(float).resolution
    acov = _mean_autocov(y)
    mean_var = acov[:, 0] * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if n_chains > 1:
        var_plus = var_plus + y.mean(axis=2).var(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = 1.0 - (mean_var[:, None] - acov) / var_plus[:, None]
    rho[:, 0] = 1.0
    jmax = len(range(1, n - 3, 2))
    pairs = rho[:, 0 : 2 * jmax + 2 : 2] + rho[:, 1 : 2 * jmax + 2 : 2]
    stops = ~(pairs > 0)
    stops[:, jmax] = True  # the loop's own end
    kept = stops.argmax(axis=1)  # J: the first pair not positive, at most jmax
    monotone = np.minimum.accumulate(pairs[:, :jmax], axis=1)
    total = np.where(np.arange(jmax) < kept[:, None], monotone, 0.0).sum(axis=1)
    rows = np.arange(n_rows)
    even = rho[rows, 2 * kept]
    last = np.where((pairs[rows, kept] >= 0) | (even > 0), even, 0.0)
    tau = -1.0 + 2.0 * total + last
    floor = 1 / np.log10(size)
    tau = np.where(floor > tau, floor, tau)
    ess = size / tau
    ess[np.isnan(rho[:, 1])] = np.nan
    ess[constant] = size
    return ess


def _ess_tail(a: np.ndarray) -> np.ndarray:
    """Tail ESS of (entries, chains, draws): the smaller ESS of the indicators of the 5%
    and 95% quantiles (V21 section 4), each over the split chains."""
    n_rows = len(a)
    x = np.sort(a.reshape(n_rows, -1), axis=1)
    n = x.shape[1]
    rows = np.arange(n_rows)
    ess = []
    for prob in _TAIL_PROBS:
        # mquantiles(alphap=1, betap=1): aleph = n p + m, m = alphap + p (1 - alphap - betap)
        p = np.float64(prob)
        aleph = n * p + (1.0 + p * (1.0 - 1.0 - 1.0))
        k = int(np.floor(np.clip(aleph, 1, n - 1)))
        gamma = np.clip(aleph - k, 0, 1)
        q = (1.0 - gamma) * x[rows, k - 1] + gamma * x[rows, k]
        below = (a <= q[:, None, None]).astype(float)
        ess.append(_ess(_split_chains(below)))
    low, high = ess
    return np.where(high < low, high, low)  # min(low, high) as Python's min
