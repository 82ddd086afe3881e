"""The engine contract: what every posterior engine declares and does.

An engine is a subclass of :class:`Engine` (tinygp's ``Solver``, GPML's one signature
``[post nlZ dnlZ] = infX(hyp, mean, cov, lik, x, y)``):

- ``name``, what ``gc.fit(method=...)`` and a study's ``[engines.NAME]`` call it, and
  ``label``, its name in messages and reports;
- ``Options``, one frozen dataclass of its options, each field declared once with
  :func:`option` (its default, its check and its doc): constructing it checks every value,
  so ``gc.fit``, the study loader and the estimator refuse a bad option in the same words,
  and ``gpc-compare list engines`` and the docs read the same declaration;
- ``likelihoods``, the likelihoods it takes, each with what the engine can do with it
  (:data:`CAPABILITY_NAMES`): EP's leave-one-out predictive is probit-only, MCMC's
  hyperparameter sampling binary-only;
- ``infer(problem, options) -> Posterior``, the fit at fixed hyperparameters.

:func:`gpc_compare.engines.register` adds an engine to the registry, after which
``gc.fit``, studies, the estimator and the command line take it by name.
"""

from __future__ import annotations

import dataclasses
import textwrap
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, TypeVar

import numpy as np

from .._validation import OptionCheck, OptionError, available_memory
from ..kernels import Kernel
from ..likelihoods import Likelihood
from ..posterior import Posterior

__all__ = [
    "CAPABILITY_NAMES",
    "Engine",
    "EngineOptions",
    "Problem",
    "engine_options",
    "option",
]

#: What an engine may declare, and what each promise means.
CAPABILITY_NAMES: dict[str, str] = {
    "evidence": "always gives log_marginal_likelihood (an estimate of log p(y | X, theta))",
    "evidence_gradient": (
        "gives the exact gradient of its evidence, so it can select its own hyperparameters "
        "(optimize=True); an engine without it runs at another engine's values"
    ),
    "bound": "its evidence is a lower bound on log p(y | X, theta) (variational methods)",
    "loo": "gives the cavity leave-one-out predictive log-likelihood and its gradients",
    "multiclass": "takes a likelihood of C >= 2 classes (softmax, multinomial_probit, robustmax)",
    "draws": "holds posterior draws: convergence diagnostics and the sampler's InferenceData",
    "hyperparameter_sampling": "can sample the hyperparameters too (full_bayes=True)",
    "reference": "a gold standard the approximations are measured against",
    "sparse": (
        "approximates the prior by M inducing inputs (inducing=M or an (M, d) array): "
        "O(n M^2) time and O(n M) memory, for n beyond the dense engines' reach"
    ),
}


@dataclass(frozen=True, eq=False)
class Problem:
    """What every engine fits: checked training data and the model's parts.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Training inputs (finite).
    y : ndarray, shape (n,)
        Labels in {-1, +1} (binary likelihoods), class indices 0..C-1 (softmax) or real
        targets (the Gaussian likelihood), as ``gc.fit`` checks them.
    kernel : Kernel
        The prior covariance (shared by the C latent functions of the softmax).
    likelihood : Likelihood
    mean : float or None
        Constant prior mean (a hyperparameter), or None for a fixed zero mean.
    """

    X: np.ndarray
    y: np.ndarray
    kernel: Kernel
    likelihood: Likelihood
    mean: float | None = None

    @property
    def n(self) -> int:
        """The number of training cases."""
        return int(self.X.shape[0])


def option(default: Any, check: OptionCheck, doc: str) -> Any:
    """Declare an engine option: a dataclass field carrying its default, check and doc.

    Parameters
    ----------
    default : object
        The value when the option is not given (immutable: None, a number, a string).
    check : callable
        ``check(value, name)`` returns the value (normalised) or raises a ValueError whose
        message starts with ``name`` (the checks of :mod:`gpc_compare._validation`).
    doc : str
        One or a few sentences: what the option does (shown by ``gpc-compare list engines``
        and in the options class's docstring).

    Returns
    -------
    dataclasses.Field
        The field, to assign to the option's name in an :class:`EngineOptions` subclass.
    """
    return field(default=default, metadata={"check": check, "doc": doc})


class EngineOptions:
    """Base of every engine's options class (declare one with :func:`engine_options`).

    Constructing it checks each value with its field's check (a ValueError naming the
    option) and then :meth:`check_together`. :meth:`build` takes a mapping as a user gives
    it: unknown names are refused and ``renamed`` old names accepted with a
    DeprecationWarning.
    """

    #: Old option name -> new name, accepted for one release with a DeprecationWarning.
    renamed: ClassVar[dict[str, str]] = {}

    def __post_init__(self) -> None:
        for f in fields(self):
            try:
                value = f.metadata["check"](getattr(self, f.name), f.name)
            except OptionError:
                raise
            except ValueError as exc:
                raise OptionError(f.name, str(exc)) from None
            object.__setattr__(self, f.name, value)
        self.check_together()

    def check_together(self) -> None:
        """Raise a ValueError for values that do not go together (none by default)."""

    @classmethod
    def names(cls) -> list[str]:
        """The option names, in declaration order."""
        return [f.name for f in fields(cls)]

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Option name -> default."""
        return {f.name: f.default for f in fields(cls)}

    @classmethod
    def describe(cls) -> list[tuple[str, Any, str]]:
        """(name, default, doc) of every option, in declaration order."""
        return [(f.name, f.default, f.metadata["doc"]) for f in fields(cls)]

    @classmethod
    def canonical(cls, options: Mapping[str, Any], owner: str) -> dict[str, Any]:
        """``options`` with renamed options under their new names (a DeprecationWarning
        each) and unknown names refused (ValueError listing those ``owner`` accepts)."""
        out: dict[str, Any] = {}
        for name, value in options.items():
            new = cls.renamed.get(name)
            if new is not None:
                warnings.warn(
                    f"{owner}: option {name!r} is now {new!r}; the old name will be removed",
                    DeprecationWarning,
                    stacklevel=4,
                )
                if new in options:
                    raise ValueError(f"{owner}: give {new!r} or its old name {name!r}, not both")
                name = new
            out[name] = value
        unknown = sorted(set(out) - set(cls.names()))
        if unknown:
            raise ValueError(
                f"unknown option(s) {unknown} for {owner}; it accepts {sorted(cls.names())}"
            )
        return out

    @classmethod
    def build(cls: type[_O], options: Mapping[str, Any] | None = None, owner: str = "") -> _O:
        """The options from a mapping as a user gives it (see :meth:`canonical`)."""
        return cls(**cls.canonical(options or {}, owner or cls.__name__))

    def replace(self: _O, **changes: Any) -> _O:
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Option name -> value."""
        return {name: getattr(self, name) for name in self.names()}


_O = TypeVar("_O", bound=EngineOptions)


def engine_options(cls: type[_O]) -> type[_O]:
    """Make ``cls`` (a subclass of :class:`EngineOptions` whose fields are declared with
    :func:`option`) a frozen dataclass, its docstring listing every option with its default
    and doc (numpydoc "Attributes").

    Returns
    -------
    type
        ``cls`` itself, made a frozen dataclass with the longer docstring.
    """
    cls = dataclass(frozen=True, eq=False)(cls)
    lines = ["", "Attributes", "----------"]
    for name, default, doc in cls.describe():
        lines.append(f"{name} : default {default!r}")
        lines.extend(textwrap.wrap(doc, 84, initial_indent="    ", subsequent_indent="    "))
    cls.__doc__ = textwrap.dedent(cls.__doc__ or "").rstrip() + "\n" + "\n".join(lines) + "\n"
    return cls


def _likelihood_name(likelihood: str | Likelihood) -> str:
    return likelihood if isinstance(likelihood, str) else likelihood.name


class Engine(ABC):
    """A posterior engine: its name, its options, what it can do with each likelihood,
    and the fit (see the module note). Subclass it, set the class attributes, implement
    :meth:`infer`, and :func:`gpc_compare.engines.register` an instance."""

    #: What ``gc.fit(method=...)`` and a study's ``[engines.NAME]`` call it.
    name: ClassVar[str]
    #: Its name in messages and reports ("EP").
    label: ClassVar[str]
    #: One line: what it approximates, for ``gpc-compare list engines``.
    summary: ClassVar[str] = ""
    #: Its options (a class made by :func:`engine_options`).
    Options: ClassVar[type[EngineOptions]]
    #: Likelihood name -> what the engine can do with it (names of CAPABILITY_NAMES).
    likelihoods: ClassVar[Mapping[str, frozenset[str]]]
    #: Options for a quick fit on a small problem (the contract tests use them).
    quick_options: ClassVar[Mapping[str, Any]] = {}
    #: How many n x n float64 matrices the engine holds at its peak: (a fit at fixed
    #: hyperparameters, an optimisation: its evidence gradients and the best posterior so
    #: far), measured with the squared exponential kernel (tests/engines/test_memory.py;
    #: another kernel adds its ``extra_matrices``); None for an engine with no n x n matrix
    #: (the sparse engines: O(n M)).
    dense_matrices: ClassVar[tuple[float, float] | None] = (6.0, 6.0)
    #: With the softmax likelihood (C latent functions): the coefficients (a, b, c) of a
    #: fit's and of an optimisation's a + b C + c C^2 matrices (C^2: a (C n) x (C n)
    #: matrix); None where the engine takes no softmax.
    dense_matrices_softmax: ClassVar[tuple[tuple[float, ...], tuple[float, ...]] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for caps in getattr(cls, "likelihoods", {}).values():
            unknown = set(caps) - set(CAPABILITY_NAMES)
            if unknown:
                raise TypeError(f"{cls.__name__} declares unknown capabilities {sorted(unknown)}")
            if "sparse" in caps and cls.dense_matrices is not None:
                raise TypeError(f"{cls.__name__} is sparse: its dense_matrices must be None")

    # ----------------------------------------------------------------- declarations
    def capabilities(self, likelihood: str | Likelihood | None = None) -> frozenset[str]:
        """What the engine can do with ``likelihood`` (a ValueError if it does not take
        it), or with any likelihood it takes (None)."""
        if likelihood is None:
            return frozenset().union(*self.likelihoods.values())
        self.check_likelihood(likelihood)
        return self.likelihoods[_likelihood_name(likelihood)]

    def takes(self, likelihood: str | Likelihood) -> bool:
        """Whether the engine takes ``likelihood``."""
        return _likelihood_name(likelihood) in self.likelihoods

    def check_likelihood(self, likelihood: str | Likelihood) -> None:
        """A ValueError naming the engine and the likelihood if it does not take it."""
        if not self.takes(likelihood):
            raise ValueError(
                f"the {self.label} engine (method={self.name!r}) does not take the "
                f"{_likelihood_name(likelihood)!r} likelihood; it takes "
                f"{sorted(self.likelihoods)}"
            )

    @property
    def seeded(self) -> bool:
        """Whether the engine has randomness of its own (a ``random_seed`` option)."""
        return "random_seed" in self.Options.names()

    def takes_option(self, name: str) -> bool:
        """Whether ``name`` is one of the engine's options."""
        return name in self.Options.names()

    # ---------------------------------------------------------------------- options
    @property
    def owner(self) -> str:
        """How messages name the engine's options' owner ("method 'ep'")."""
        return f"method {self.name!r}"

    def options(self, options: Mapping[str, Any] | EngineOptions | None = None) -> EngineOptions:
        """The engine's checked options from a mapping (defaults for those not given).

        A ``warm_start`` that is a posterior of this engine becomes its ``warm_start``
        (``gc.fit(..., warm_start=previous)``); one of another engine is refused.
        """
        if not isinstance(options, self.Options):
            options = self.Options.build(options, self.owner)
        previous = getattr(options, "warm_start", None)
        if isinstance(previous, Posterior):
            if previous.method != self.name:
                raise OptionError(
                    "warm_start",
                    f"warm_start is a posterior of method {previous.method!r}; the {self.label} "
                    f"engine starts from its own (method={self.name!r}) or from its arrays",
                )
            options = options.replace(warm_start=previous.warm_start)
        return options

    def check_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """Check ``options`` (ValueError naming the first bad or unknown one) and return
        the checked values of those given, under their current names."""
        given = self.Options.canonical(options, self.owner)
        checked = self.Options(**given)
        return {name: getattr(checked, name) for name in given}

    def with_seed(self, options: Mapping[str, Any], random_seed: Any) -> dict[str, Any]:
        """``options`` with ``random_seed`` added where the engine takes one and none was
        given: the one place a caller's seed reaches an engine's own randomness."""
        out = dict(options)
        if self.seeded and out.get("random_seed") is None:
            out["random_seed"] = random_seed
        return out

    # ----------------------------------------------------------------------- memory
    def dense_count(
        self, optimize: bool = False, *, kernel: Kernel | None = None, classes: int | None = None
    ) -> float:
        """How many n x n float64 matrices a fit holds at its peak: the engine's
        declaration (:attr:`dense_matrices`, :attr:`dense_matrices_softmax` for ``classes``
        C, the softmax's), and what ``kernel`` adds beyond the squared exponential's."""
        if self.dense_matrices is None:
            return 0.0
        if classes is not None and self.dense_matrices_softmax is not None:
            a, b, c = self.dense_matrices_softmax[bool(optimize)]
            count = a + b * classes + c * classes**2
        else:
            count = self.dense_matrices[bool(optimize)]
        return count + (0.0 if kernel is None else kernel.extra_matrices(optimize))

    def dense_bytes(
        self,
        n: int,
        optimize: bool = False,
        *,
        kernel: Kernel | None = None,
        classes: int | None = None,
    ) -> int:
        """Bytes of the n x n matrices a fit on n cases holds at its peak
        (:meth:`dense_count` of them)."""
        return int(self.dense_count(optimize, kernel=kernel, classes=classes) * 8 * n * n)

    def memory_bytes(
        self,
        n: int,
        options: EngineOptions,
        optimize: bool = False,
        *,
        kernel: Kernel | None = None,
        classes: int | None = None,
    ) -> int:
        """Peak memory of a fit on n cases with ``options``, estimated (bytes): the n x n
        matrices, and what the options add (an engine that stores draws overrides this).
        ``classes`` is C with the softmax likelihood, None with a binary one."""
        return self.dense_bytes(n, optimize, kernel=kernel, classes=classes)

    def memory_problem(
        self,
        n: int,
        options: EngineOptions,
        optimize: bool = False,
        available: int | None = None,
        *,
        kernel: Kernel | None = None,
        classes: int | None = None,
    ) -> str | None:
        """Why a fit on n cases would not fit in the memory available, or None if it does
        (refused before anything is allocated, rather than let the machine run out)."""
        available = available_memory() if available is None else available
        need = self.memory_bytes(n, options, optimize, kernel=kernel, classes=classes)
        if available is None or need <= available:
            return None
        dense = self.dense_bytes(n, optimize, kernel=kernel, classes=classes)
        if need - dense <= dense:  # mostly the n x n matrices
            count = dense / (8 * n * n)
            what = (
                f"the {self.label} engine's n x n matrices ({count:g} of "
                f"{8 * n * n / 2**30:.2f} GiB)"
            )
            hint = (
                ": use a sparse engine (method='fitc_ep', 'fitc_laplace' or 'svgp': O(n M) "
                "memory) or fewer cases"
            )
        else:
            what = f"what the {self.label} engine's options ask it to store"
            hint = self.storage_hint(options)
        return (
            f"n = {n:,} training cases need about {need / 2**30:.1f} GiB for {what}, but "
            f"{available / 2**30:.1f} GiB are available{hint}"
        )

    def storage_hint(self, options: EngineOptions) -> str:
        """What to change when the options ask for more than memory holds (the end of
        :meth:`memory_problem`'s message)."""
        return ""

    # -------------------------------------------------------------------------- fit
    @abstractmethod
    def infer(self, problem: Problem, options: EngineOptions) -> Posterior:
        """The posterior at the problem's (fixed) hyperparameters.

        Parameters
        ----------
        problem : Problem
            Checked data, kernel, likelihood (one the engine takes) and prior mean.
        options : EngineOptions
            This engine's options (an instance of ``self.Options``).

        Returns
        -------
        Posterior
            See :mod:`gpc_compare.posterior` for the contract.
        """

    def run(
        self,
        X: np.ndarray,
        y: np.ndarray,
        kernel: Kernel,
        likelihood: Likelihood,
        mean: float | None = None,
        **options: Any,
    ) -> Posterior:
        """:meth:`infer` on arrays already checked, options as keywords (``gc.fit`` checks
        the arrays; this is what it, the optimiser and the study worker call). A likelihood
        the engine does not take is refused here (:meth:`check_likelihood`), so
        :meth:`infer` never sees one."""
        self.check_likelihood(likelihood)
        opts = self.options(options)
        return self.infer(Problem(X, y, kernel, likelihood, mean), opts)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}: {sorted(self.likelihoods)}>"


#: A callable that makes an engine (an :class:`Engine` subclass, or a factory).
EngineFactory = Callable[[], Engine]
