"""Shared fixtures (helpers live in tests/helpers.py)."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from .helpers import toy_data


@pytest.fixture(autouse=True, scope="session")
def _single_threaded_blas():
    """The tests' matrices are small: one BLAS thread avoids oversubscribing a loaded
    2-core machine (which slowed fits here up to 60-fold)."""
    with threadpool_limits(1):
        yield


@pytest.fixture
def data() -> tuple[np.ndarray, np.ndarray]:
    return toy_data()
