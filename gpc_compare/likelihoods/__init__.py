"""Likelihoods p(y | f), answering each engine in its own terms.

Every likelihood is a :class:`Likelihood`, whose ``latent_dim`` says how many latent values
it takes per input. Binary likelihoods (probit, logistic; ``latent_dim = 1``) take y in
{-1, +1} and one latent value per input; the softmax likelihood (:class:`Softmax`) takes
class indices 0..C-1 and C latent values per input (R&W section 3.5); it lives in
:mod:`.softmax`; the multinomial probit (:class:`MultinomialProbit`, Girolami and Rogers
2006) and the robust-max (:class:`RobustMax`) beside it, in :mod:`.multinomial_probit` and
:mod:`.robustmax`. The Gaussian likelihood (:class:`Gaussian`, ``regression = True``) takes
real-valued y: with it every engine is GP regression, in closed form for Laplace and EP.

- Laplace asks for ``log_prob`` and its first three derivatives in f
  (:meth:`Likelihood.derivatives`; the third enters the evidence gradient, R&W eq. 5.23).
- EP asks for the moments of the tilted distribution p(y | f) N(f | mu, s2)
  (:meth:`Likelihood.tilted_moments`; R&W eqs. 3.56-3.58).
- Prediction asks for the integral log int p(y | f) N(f | m, v) df
  (:meth:`Likelihood.log_predictive`; R&W eq. 3.25, Bishop 4.145).

The probit and Gaussian likelihoods answer the last two in closed form. Everything else falls back
to quadrature: a trapezoid rule centred on the mode of the tilted integrand and
spanning twelve prior standard deviations either side, accurate for any mean and
variance, with the sum taken in log space, so that log p(y* | x*) is exact even where
p is 1e-300. Probabilities are never clipped.
"""

from __future__ import annotations

from .base import Likelihood
from .binary import Logistic, Probit
from .gaussian import Gaussian
from .multinomial_probit import MULTINOMIAL_PROBIT_MC_SAMPLES, MultinomialProbit
from .robustmax import RobustMax
from .softmax import SOFTMAX_MC_SAMPLES, Softmax

__all__ = [
    "SOFTMAX_MC_SAMPLES",
    "Gaussian",
    "Likelihood",
    "Logistic",
    "MULTINOMIAL_PROBIT_MC_SAMPLES",
    "MultinomialProbit",
    "Probit",
    "RobustMax",
    "Softmax",
    "get_likelihood",
]

_LIKELIHOODS: dict[str, type[Likelihood]] = {
    "probit": Probit,
    "logistic": Logistic,
    "softmax": Softmax,
    "multinomial_probit": MultinomialProbit,
    "robustmax": RobustMax,
    "gaussian": Gaussian,  # variance 1.0; pass Gaussian(variance=s2) for another
}


def get_likelihood(likelihood: str | Likelihood) -> Likelihood:
    """A likelihood object from its name ("probit", "logistic", "softmax",
    "multinomial_probit", "robustmax", "gaussian": the last with variance 1.0) or the
    object.

    Parameters
    ----------
    likelihood : str or Likelihood
        A name (case-insensitive), or a likelihood, returned as it is.

    Returns
    -------
    Likelihood
        A new likelihood object for a name.

    Raises
    ------
    ValueError
        For an unknown name, listing the known ones.
    """
    if isinstance(likelihood, Likelihood):
        return likelihood
    if isinstance(likelihood, str) and likelihood.lower() in _LIKELIHOODS:
        return _LIKELIHOODS[likelihood.lower()]()
    raise ValueError(
        f"likelihood must be one of {sorted(_LIKELIHOODS)} or a Likelihood object, "
        f"got {likelihood!r}"
    )
