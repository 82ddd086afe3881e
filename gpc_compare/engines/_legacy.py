"""TRANSITION ONLY: an Engine wrapping an engine module of the old layout (module-level
OPTIONS, OPTION_CHECKS, CAPABILITIES, LIKELIHOODS, LABEL, check_options, infer). Only the
MCMC engine still has it; removed once that module defines its Engine class."""

from __future__ import annotations

from types import ModuleType

from ._engine import Engine, EngineOptions, engine_options, option


def legacy_engine(module: ModuleType) -> Engine:
    name = module.__name__.rsplit(".", 1)[-1]
    ns = {k: option(module.OPTIONS[k], module.OPTION_CHECKS[k], k) for k in module.OPTIONS}
    ns["__annotations__"] = {k: "object" for k in module.OPTIONS}
    # the module's cross-option checks (MCMC's evidence=True without full_bayes, ...)
    ns["check_together"] = lambda self: module.check_options(self.to_dict())
    Options = engine_options(type(f"{name}_options", (EngineOptions,), ns))
    caps = module.CAPABILITIES
    likelihoods = {
        lik: (caps if lik == "softmax" else caps - {"multiclass"}) for lik in module.LIKELIHOODS
    }

    class _Legacy(Engine):
        def infer(self, problem, options):
            return module.infer(
                problem.X,
                problem.y,
                problem.kernel,
                problem.likelihood,
                problem.mean,
                **options.to_dict(),
            )

    _Legacy.name = name
    _Legacy.label = module.LABEL
    _Legacy.Options = Options
    _Legacy.likelihoods = likelihoods
    return _Legacy()
