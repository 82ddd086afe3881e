"""The ``Posterior`` contract, and the forms the engines share: Gaussian, multi-class, draws.

The contract
------------
Every engine (``gc.fit(X, y, method=...)``) returns a :class:`Posterior`:

``hyperparameter_names``
    The kernel's log hyperparameters, then ``"mean"`` when the prior has a constant
    mean hyperparameter (``mean=`` a number; ``mean=None`` is a fixed zero mean).
``log_marginal_likelihood``
    log p(y | X, theta) as this engine estimates it (float).
``log_marginal_likelihood_gradient``
    Its gradient, in the order of ``hyperparameter_names`` (ndarray).
``latent_mean``, ``latent_var``
    Posterior moments of the latent f at the training inputs.
``predict_latent(Xs)``
    Mean and variance of the latent f* at new inputs.
``predict_proba(Xs)``
    P(y = +1 | x, data), shape (n,); refused (ValueError) for the Gaussian likelihood,
    which is regression: there ``log_predictive`` takes real-valued ys.
``log_predictive(Xs, ys)``
    log p(y* | x*, data), computed in log space (never from a clipped probability).
``to_inference_data(random_seed=None)``
    An :class:`arviz.InferenceData` with the posterior of f at the training inputs
    (``random_seed`` seeds what the export draws; engines add keyword-only options).
``convergence``
    A :class:`Convergence` record of the engine's iteration.
``optimization``
    The :class:`OptimizationResult` when the hyperparameters were fitted, else ``None``.
``record()``
    The facts a study stores about the fit (JSON-ready).

Several classes
---------------
With the softmax likelihood (C >= 2 classes, one latent GP per class, R&W section 3.5) an
engine returns a :class:`MulticlassPosterior`: the same contract, with C columns.
``classes_`` holds the labels (sorted) and ``n_classes`` their number; ``latent_mean`` and
``latent_var`` have shape (n, C); ``predict_latent(Xs)`` gives means (m, C) and, per
point, the C x C covariance of f* (m, C, C); ``predict_proba(Xs)`` and
``predict_log_proba(Xs)`` give (m, C), columns in the order of ``classes_``, rows summing
to one; ``log_predictive(Xs, ys)`` takes labels from ``classes_``.

The forms
---------
:mod:`.base` holds the contract (:class:`Posterior`) and its records (:class:`Convergence`,
:class:`OptimizationResult`); :mod:`.gaussian`, :mod:`.multiclass` and :mod:`.draws` the
shared forms the engines return.

The Gaussian form
-----------------
Laplace, EP, KL and VB all approximate p(f | X, y) by N(f | m + K alpha, (K^-1 + W)^-1),
held as (alpha, sW = W^1/2, L = chol(B)), B = I + sW K sW (R&W Alg. 3.1-3.2 and 3.5-3.6;
for EP, W is the site precision diag(tau~); for KL and VB, the variational sites'
precisions). :class:`GaussianPosterior` writes prediction, sampling and export once for
all of them; the sparse engines share :mod:`.sparse`.

Draws
-----
The MCMC engine holds the posterior as draws of f at the training inputs
(:class:`SamplePosterior`; :class:`SoftmaxSamplePosterior` for C classes) and predicts by
conditioning every draw on the GP and averaging (:mod:`.draws`).
"""

from .base import Convergence, OptimizationResult, Posterior, Restart
from .draws import SamplePosterior, SoftmaxSamplePosterior
from .gaussian import GaussianPosterior
from .multiclass import MulticlassPosterior
from .sparse import FITCPrior, FITCSites, SparsePosterior

__all__ = [
    "Convergence",
    "FITCPrior",
    "FITCSites",
    "GaussianPosterior",
    "MulticlassPosterior",
    "OptimizationResult",
    "Posterior",
    "Restart",
    "SamplePosterior",
    "SoftmaxSamplePosterior",
    "SparsePosterior",
]
