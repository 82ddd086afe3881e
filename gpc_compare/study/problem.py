"""The problem one job works on: its data set (subsampled), its split, its kernel.

Everything here is a pure function of the study file and its seed, identical in every
process and on every machine, so a job computed on a Dask worker equals one computed here.
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.model_selection import (
    StratifiedKFold,
    StratifiedShuffleSplit,
    train_test_split,
)

from .. import datasets as gc_datasets
from .. import kernels

__all__ = [
    "KERNELS",
    "DatasetSpec",
    "at_point",
    "load_dataset",
    "make_kernel",
    "n_splits",
    "split_indices",
    "stable_seed",
]

#: Kernel names a study may use, and their classes in :mod:`gpc_compare.kernels`.
KERNELS = {
    "squared_exponential": "SquaredExponential",
    "matern32": "Matern32",
    "matern52": "Matern52",
    "linear": "Linear",
    "neural_network": "NeuralNetwork",
}


@dataclass(frozen=True)
class DatasetSpec:
    """A data set of a study: a loader name and its options, or a file's prepared data.

    A data set read from a file (:mod:`gpc_compare.study.datafiles`) carries its path in
    ``file`` and its arrays in ``data`` (so a job never reads the file again), and the
    digest of its content in ``options`` (what job ids hash).

    Parameters
    ----------
    name : str
        The loader's name (:func:`gpc_compare.datasets.load`) or the data file's.
    options : mapping
        The loader's options (``n``, ``random_seed``, ...), a ``label`` and, for a data
        file, ``data_sha256``.
    subsample : int, optional
        Keep this many cases, a stratified subsample drawn with the study's seed.
    file : str, optional
        The data file's path, for a data set read from a file.
    data : Dataset, optional
        That file's data, prepared (not compared: ``options`` holds its digest).
    """

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)
    subsample: int | None = None
    file: str | None = None
    data: gc_datasets.Dataset | None = field(default=None, compare=False, repr=False)

    @property
    def label(self) -> str:
        """The name in tables and figures (the loader name, unless options make it unique)."""
        return str(self.options.get("label", self.name))

    @property
    def seed_key(self) -> str:
        """What the data set's seeds (subsample, splits, engines) derive from: a data
        file's content digest, so that the same data give the same splits and numbers by
        every route (the command line, a study file, :func:`gpc_compare.compare`) whatever
        they are called; a bundled data set's label (its name and options fix its
        content)."""
        return str(self.options.get("data_sha256", self.label))


def stable_seed(*parts: object) -> int:
    """A seed from the study seed and names, identical across processes and machines."""
    words = [zlib.crc32(str(part).encode()) for part in parts]
    return int(np.random.SeedSequence(words).generate_state(1)[0])


def n_splits(splits: Mapping[str, Any]) -> int:
    """How many splits a study's ``[splits]`` makes (one for ``kind = "none"``; r x k for
    r repeats of k-fold)."""
    kind = splits["kind"]
    if kind == "kfold":
        return splits["n_splits"] * splits.get("n_repeats", 1)
    return 1 if kind == "none" else splits["n_repeats"]


def load_dataset(spec: DatasetSpec, seed: int = 0) -> gc_datasets.Dataset:
    """The data set of ``spec``; a stratified subsample drawn with the study ``seed``."""
    if spec.data is not None:  # a file's data, read and checked when the study was loaded
        data = spec.data
    else:
        options = {k: v for k, v in spec.options.items() if k != "label"}
        data = gc_datasets.load(spec.name, **options)
    if spec.subsample is not None and spec.subsample < data.n_samples:
        keep, _ = train_test_split(
            np.arange(data.n_samples),
            train_size=spec.subsample,
            stratify=data.y,
            random_state=stable_seed("subsample", seed, spec.seed_key),
        )
        keep = np.sort(keep)
        data = dataclasses.replace(data, X=data.X[keep], y=data.y[keep])
    return data


def split_indices(data: gc_datasets.Dataset, splits: Mapping[str, Any], index: int, seed: int):
    """Train and test indices of split ``index`` (stratified; same for every engine).

    ``kind = "none"``: every case trains and the test set is empty (evidence studies).
    ``kind = "kfold"`` with ``n_repeats`` r (absent: 1): split ``index`` is fold
    ``index % k`` of repeat ``index // k``; repeat 0 shuffles with ``seed`` (the splits of
    a study without repeats), repeat i > 0 with a seed derived from ``seed`` and i.
    """
    if splits["kind"] == "none":
        return np.arange(data.n_samples), np.arange(0)
    if splits["kind"] == "kfold":
        repeat, index = divmod(index, splits["n_splits"])
        if repeat >= splits.get("n_repeats", 1):
            raise IndexError(f"split {repeat * splits['n_splits'] + index} out of range")
        shuffle = seed if repeat == 0 else stable_seed("repeat", seed, repeat)
        splitter = StratifiedKFold(splits["n_splits"], shuffle=True, random_state=shuffle)
    else:
        splitter = StratifiedShuffleSplit(
            splits["n_repeats"], test_size=splits["test_size"], random_state=seed
        )
    for i, (train, test) in enumerate(splitter.split(data.X, data.y)):
        if i == index:
            return train, test
    raise IndexError(f"split {index} out of range")  # pragma: no cover


def make_kernel(spec: Mapping[str, Any], d: int) -> kernels.Kernel:
    """The study's kernel for ``d`` inputs (``"sqrt_d"``: length-scale sqrt(d))."""
    cls = getattr(kernels, KERNELS[spec["name"]])
    bounds = {
        key: (b if b == "fixed" else tuple(float(v) for v in b))
        for key in ("lengthscale_bounds", "variance_bounds")
        if (b := spec.get(key)) is not None
    }
    if spec["name"] == "linear":
        bounds.pop("lengthscale_bounds", None)
        return cls(variance=float(spec["variance"]), **bounds)
    ell = math.sqrt(d) if spec["lengthscale"] == "sqrt_d" else float(spec["lengthscale"])
    ell = np.full(d, ell) if spec.get("ard") else ell
    return cls(lengthscale=ell, variance=float(spec["variance"]), **bounds)


def at_point(
    kernel: kernels.Kernel, mean: float | None, point: Mapping[str, float]
) -> tuple[kernels.Kernel, float | None]:
    """The kernel and prior mean with the hyperparameters named in ``point`` set to its values."""
    names = kernel.hyperparameter_names
    theta = kernel.theta.copy()
    for name, value in point.items():
        if name == "mean":
            mean = float(value)
        else:
            theta[names.index(name)] = value
    return kernel.with_theta(theta), mean
