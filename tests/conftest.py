"""Shared fixtures (helpers live in tests/helpers.py)."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import toy_data


@pytest.fixture
def data() -> tuple[np.ndarray, np.ndarray]:
    return toy_data()
