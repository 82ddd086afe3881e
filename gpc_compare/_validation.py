"""Input checks: every problem with the user's data becomes a ValueError that names it."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import numpy as np

__all__ = [
    "OptionCheck",
    "OptionError",
    "any_value",
    "check_X",
    "check_Xy",
    "check_choice",
    "check_class_labels",
    "check_count",
    "check_flag",
    "check_fraction",
    "check_kernel_matrix",
    "check_labels",
    "check_option_values",
    "check_positive",
    "check_random_seed",
    "check_targets",
    "choice",
    "count",
    "option_checker",
    "optional",
    "real_array",
]


class OptionError(ValueError):
    """A bad option value; ``option`` names it (for a message that names the field)."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


#: A check of one option: ``check(value, name)`` returns the value (normalised) or raises a
#: ValueError whose message starts with ``name``.
OptionCheck = Callable[[Any, str], Any]


def check_X(X: object, *, name: str = "X", n_features: int | None = None) -> np.ndarray:
    """A finite, non-empty 2-D float array, or a ValueError saying what is wrong."""
    if X is None:
        raise ValueError(f"{name} is None; expected a 2-D array of shape (n_samples, n_features)")
    if np.iscomplexobj(X):  # (numpy would drop the imaginary part with a ComplexWarning)
        raise ValueError(f"{name} must be real: it has complex values")
    try:
        arr = np.asarray(X, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric: {exc}") from None
    if arr.ndim != 2:
        hint = f"; for a single feature use {name}.reshape(-1, 1)" if arr.ndim == 1 else ""
        raise ValueError(
            f"{name} must be a 2-D array of shape (n_samples, n_features), "
            f"got a {arr.ndim}-D array of shape {arr.shape}{hint}"
        )
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty: it has 0 samples")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} has 0 features")
    bad = ~np.isfinite(arr)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        what = "NaN" if np.isnan(arr[i, j]) else "infinity"
        raise ValueError(
            f"{name} contains NaN or infinity ({int(bad.sum())} entries; the first, {what}, "
            f"at row {i}, column {j})"
        )
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(
            f"{name} has {arr.shape[1]} features but the model was fit with {n_features}"
        )
    return arr


def _label_array(y: object, name: str, what: str) -> np.ndarray:
    """``y`` as a non-empty 1-D array (a single column is flattened)."""
    if y is None:
        raise ValueError(f"{name} is None; expected a 1-D array of {what}")
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of labels, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    return arr


def check_labels(y: object, *, name: str = "y", both_classes: bool = True) -> np.ndarray:
    """Binary labels {0, 1}, {-1, +1} or booleans as floats in {-1, +1}.

    A training set must hold both classes; a test set (``both_classes=False``) need not.
    """
    arr = _label_array(y, name, "binary labels")
    if arr.dtype == bool:
        values = np.where(arr, 1.0, -1.0)
    else:
        try:
            values = arr.astype(float)
        except (TypeError, ValueError):
            raise ValueError(
                f"{name} must hold binary labels {{0, 1}}, {{-1, +1}} or booleans; "
                f"got values such as {np.unique(arr.astype(str))[:5].tolist()}"
            ) from None
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{name} contains NaN or infinity")
        classes = np.unique(values)
        if not (set(classes) <= {0.0, 1.0} or set(classes) <= {-1.0, 1.0}):
            raise ValueError(
                f"{name} must hold binary labels {{0, 1}}, {{-1, +1}} or booleans; "
                f"got the values {classes[:10].tolist()} (for more than two classes, "
                "use likelihood='softmax')"
            )
        values = np.where(values == 1.0, 1.0, -1.0)
    if both_classes and np.unique(values).size < 2:
        raise ValueError(
            f"{name} contains a single class ({'+1' if values[0] > 0 else 'the negative class'}); "
            "binary classification needs examples of both"
        )
    return values


def check_targets(y: object, *, name: str = "y") -> np.ndarray:
    """Real-valued regression targets: a finite, non-empty numeric 1-D float array (a single
    column is flattened), or a ValueError naming the problem."""
    if y is None:
        raise ValueError(f"{name} is None; expected a 1-D array of real-valued targets")
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(
            f"{name} must be a 1-D array of real-valued targets, got shape {arr.shape}"
        )
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if arr.dtype == bool or arr.dtype.kind not in "iuf":  # (complex is "c": refused)
        raise ValueError(
            f"{name} must hold real numbers (regression targets for the Gaussian likelihood), "
            f"got dtype {arr.dtype}"
        )
    values = arr.astype(float)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = "NaN" if np.isnan(values[i]) else "infinity"
        raise ValueError(
            f"{name} contains NaN or infinity ({int(bad.sum())} entries; the first, {what}, "
            f"at index {i})"
        )
    return values


def check_class_labels(
    y: object, *, name: str = "y", classes: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Labels of C classes, any C distinct values: their indices 0..C-1 and the classes.

    Without ``classes`` (a training set) the classes are the sorted distinct values and
    there must be at least two. With ``classes`` (a test set) every label must be one of
    them.

    Returns
    -------
    codes : ndarray of int, shape (n,)
        ``classes[codes] == y``.
    classes : ndarray, shape (C,)
    """
    arr = _label_array(y, name, "class labels")
    if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinity")
    if arr.dtype.kind == "O" and any(
        isinstance(v, float | np.floating) and not np.isfinite(v) for v in arr
    ):
        raise ValueError(f"{name} contains NaN or infinity")
    try:
        found, codes = np.unique(arr, return_inverse=True)
    except TypeError:
        raise ValueError(
            f"{name} mixes label types that cannot be ordered "
            f"({sorted({type(v).__name__ for v in arr})})"
        ) from None
    if classes is None:
        if found.size < 2:
            raise ValueError(
                f"{name} contains a single class ({found[0]!r}); classification needs "
                "examples of at least two"
            )
        return codes.astype(int), found
    classes = np.asarray(classes)
    try:
        pos = np.searchsorted(classes, found)
        pos = np.minimum(pos, classes.size - 1)
        known = classes[pos] == found
    except TypeError:
        known = np.zeros(found.size, dtype=bool)
    if not np.all(known):
        raise ValueError(
            f"{name} holds labels the model was not fit on: {found[~known][:5].tolist()} "
            f"(its classes are {classes[:10].tolist()})"
        )
    return pos[codes].astype(int), classes


def check_Xy(X: object, y: object, *, regression: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Check a training set: X as in :func:`check_X`, y as in :func:`check_labels` (binary
    labels), or with ``regression`` as in :func:`check_targets` (real values)."""
    X = check_X(X)
    y = check_targets(y) if regression else check_labels(y)
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} samples but y has {y.shape[0]} labels")
    return X, y


def _real(value: object, name: str, what: str) -> float:
    """``value`` as a float if it is a real number (not a string, not a bool: one rule for
    every numeric option, whether it came from Python, a TOML file or the command line,
    which converts its own), or a ValueError naming the option."""
    if isinstance(value, str | bytes | bool | np.bool_):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {what}, got {value!r}") from None


def real_array(value: object, name: str) -> np.ndarray:
    """``value`` as a float array if it holds numbers (the rule of :func:`_real` for
    arrays: strings and booleans refused, not converted), or a ValueError naming it."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers") from None
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be an array of numbers, got one of {arr.dtype}")
    return arr.astype(float)


def check_positive(value: object, name: str) -> float:
    """A finite positive number, or a ValueError naming the option."""
    v = _real(value, name, "a positive number")
    if not (np.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return v


def check_count(value: object, name: str, minimum: int = 1) -> int:
    """A whole number >= ``minimum``, or a ValueError naming the option."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        if not (isinstance(value, float) and value.is_integer()):
            raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    if int(value) < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


#: How many n x n float64 matrices a dense engine holds at once, at most (K, the Cholesky
#: factor of B, its inverse or Sigma, and temporaries), for :func:`check_dense_memory`.
DENSE_MATRICES = 6


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation: Linux's MemAvailable, capped by a
    container's (cgroup v2) limit less its usage; else the free physical pages; None
    where none can be read."""
    available = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/sys/fs/cgroup/memory.max") as fh:
            limit = fh.read().strip()
        with open("/sys/fs/cgroup/memory.current") as fh:
            used = int(fh.read().strip())
        if limit != "max":
            room = int(limit) - used
            available = room if available is None else min(available, room)
    except (OSError, ValueError):
        pass
    if available is not None:
        return available
    try:
        import os

        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None


def dense_memory_problem(n: int, available: int | None = None) -> str | None:
    """Why a dense (O(n^2) memory) engine cannot take n cases here, or None if it can."""
    need = DENSE_MATRICES * 8 * n * n
    available = available_memory() if available is None else available
    if available is None or need <= available:
        return None
    return (
        f"n = {n:,} training cases need about {need / 2**30:.1f} GiB for a dense engine's "
        f"n x n matrices ({DENSE_MATRICES} of {8 * n * n / 2**30:.2f} GiB), but "
        f"{available / 2**30:.1f} GiB are available: use a sparse engine "
        "(method='fitc_ep', 'fitc_laplace' or 'svgp': O(n M) memory) or fewer cases"
    )


def check_dense_memory(n: int) -> None:
    """Refuse (ValueError) an n whose n x n matrices do not fit in the memory available,
    before any is allocated, rather than let the machine run out of memory."""
    problem = dense_memory_problem(n)
    if problem is not None:
        raise ValueError(problem)


def check_kernel_matrix(kernel, X: np.ndarray) -> np.ndarray:
    """K = kernel(X), which must be finite: inputs or hyperparameters so extreme that it
    overflows give a ValueError here rather than a NaN evidence later. (An n too large for
    a dense engine's memory is refused once, before a fit or an optimisation starts:
    :func:`check_dense_memory`, called by ``gc.fit`` and the study worker.)"""
    with np.errstate(over="ignore", invalid="ignore"):
        K = kernel(X)
    if not np.all(np.isfinite(K)):
        raise ValueError(
            "the kernel matrix contains NaN or infinity: the inputs or the kernel's "
            "hyperparameters are too extreme (standardise X, or bound the variance)"
        )
    return K


def check_choice(value: object, name: str, choices: Collection[Any]) -> Any:
    """``value`` if it is one of ``choices``, or a ValueError naming the option."""
    if isinstance(value, bool) or not any(value == c and type(value) is type(c) for c in choices):
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def check_fraction(value: object, name: str, *, closed: bool = True) -> float:
    """A number in (0, 1] (or (0, 1) with ``closed=False``), or a ValueError naming it."""
    interval = "(0, 1]" if closed else "(0, 1)"
    v = _real(value, name, f"in {interval}")
    if not (0.0 < v < 1.0 or (closed and v == 1.0)):
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return v


def check_flag(value: object, name: str) -> bool:
    """``True`` or ``False`` (numpy's too), or a ValueError naming the option."""
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_random_seed(value: object, name: str = "random_seed") -> Any:
    """A seed numpy accepts (None, an integer >= 0, a sequence of them, a SeedSequence or a
    Generator), or a ValueError naming the argument (not numpy's TypeError)."""
    if value is None or isinstance(value, np.random.Generator | np.random.SeedSequence):
        return value
    if isinstance(value, bool | float | str | bytes):
        raise ValueError(
            f"{name} must be None, an integer >= 0 or a numpy Generator, got {value!r}"
        )
    try:
        np.random.default_rng(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be None, an integer >= 0 or a numpy Generator, got {value!r} ({exc})"
        ) from None
    return value


def any_value(value: object, name: str) -> Any:
    """No check here (e.g. ``warm_start``, whose shape the engine checks against n)."""
    return value


def count(minimum: int) -> OptionCheck:
    """The check of a whole-number option >= ``minimum``."""
    return lambda value, name: check_count(value, name, minimum)


def choice(*choices: Any) -> OptionCheck:
    """The check of an option that takes one of ``choices``."""
    return lambda value, name: check_choice(value, name, choices)


def optional(check: OptionCheck) -> OptionCheck:
    """``check``, with None allowed (the option's "choose for me")."""
    return lambda value, name: None if value is None else check(value, name)


def check_option_values(
    options: Mapping[str, Any], checks: Mapping[str, OptionCheck], owner: str
) -> dict[str, Any]:
    """``options`` checked one by one (unknown names refused), as a new dict.

    Parameters
    ----------
    options : mapping
        Option name -> value, as a user gave them.
    checks : mapping
        Option name -> :data:`OptionCheck`: every option ``owner`` accepts.
    owner : str
        Who takes the options, for messages (``"method 'ep'"``).

    Returns
    -------
    dict
        The checked (normalised) values of the options given.

    Raises
    ------
    ValueError
        Naming the first unknown or bad option.
    """
    unknown = sorted(set(options) - set(checks))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} for {owner}; it accepts {sorted(checks)}")
    checked = {}
    for name, value in options.items():
        try:
            checked[name] = checks[name](value, name)
        except ValueError as exc:
            raise OptionError(name, str(exc)) from None
    return checked


def option_checker(
    checks: Mapping[str, OptionCheck],
    owner: str,
    defaults: Mapping[str, Any] | None = None,
    together: Callable[[dict[str, Any]], None] | None = None,
) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """The ``check_options(options)`` of an engine or an estimator.

    It checks each option given against ``checks`` (:func:`check_option_values`), then,
    with the ``defaults`` filled in, the options ``together`` (a callable raising a
    ValueError, e.g. for ``min_iter > max_iter``), and returns the checked values of
    the options given. ``gc.fit``, ``gc.evidence.estimate`` and the study loader call it
    before any fit, so a bad value is refused at once, naming the option.
    """

    def check_options(options: Mapping[str, Any]) -> dict[str, Any]:
        checked = check_option_values(options, checks, owner)
        if together is not None:
            together({**(defaults or {}), **checked})
        return checked

    check_options.__doc__ = f"The options of {owner} checked (see ``option_checker``)."
    return check_options
