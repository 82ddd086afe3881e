"""The contract suite over the registry: every engine, every likelihood it declares."""

from __future__ import annotations

import pytest

from gpc_compare.engines import registered

from .contract import check_contract

CASES = [(name, lik) for name, e in registered().items() for lik in e.likelihoods]


@pytest.mark.parametrize(("method", "likelihood"), CASES, ids=[f"{m}-{k}" for m, k in CASES])
def test_every_engine_keeps_the_contract(method: str, likelihood: str) -> None:
    check_contract(registered()[method], likelihood)


def test_the_suite_covers_every_engine_and_likelihood() -> None:
    assert {m for m, _ in CASES} == set(registered())
    assert len(CASES) >= 2 * len(registered())  # (VB takes one likelihood; the rest more)
