"""Covariance functions with log-space hyperparameters, bounds and gradients.

Every kernel exposes the same small interface:

- ``kernel(X, X2=None)`` the covariance matrix K(X, X2);
- ``kernel.diag(X)`` its diagonal k(x, x);
- ``kernel.gradient(X)`` the derivatives dK/d theta_j, shape (p, n, n), with respect to
  the *log* of each free hyperparameter, in the order of ``hyperparameter_names``;
- ``kernel.gradient_terms(X, M, V)`` what evidence gradients need of them, <M, dK_j> and
  dK_j V, without forming the (p, n, n) array (the stationary kernels form no dK_j at all);
- ``kernel.theta`` / ``kernel.bounds`` / ``kernel.with_theta(theta)``: the free
  hyperparameters in log space, their log bounds, and a copy with new values.

A hyperparameter whose bounds are ``"fixed"`` keeps its value and is left out of
``theta`` (the Iris study fixes sigma_f = 1 this way). Kernels combine
with ``+`` and ``*``; the parts' names are prefixed ``k1__`` and ``k2__`` as in
scikit-learn.

Symbols: ``lengthscale`` is ell, ``variance`` is the signal variance sigma_f^2, so for
the squared exponential ``k(x, x') = sigma_f^2 exp(-|x - x'|^2 / (2 ell^2))`` (R&W eq. 4.9).

Modules: :mod:`.base` (the contract, sums and products), :mod:`.stationary` (squared
exponential, Matern), :mod:`.dot_product` (linear, constant, neural network).
"""

from __future__ import annotations

from .base import Kernel, Product, Sum
from .dot_product import Constant, Linear, NeuralNetwork
from .stationary import Matern32, Matern52, SquaredExponential

__all__ = [
    "Constant",
    "Kernel",
    "Linear",
    "Matern32",
    "Matern52",
    "NeuralNetwork",
    "Product",
    "SquaredExponential",
    "Sum",
]
