"""SDK test fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["async", "sync"])
def flavour(request: pytest.FixtureRequest) -> str:
    """Which client a test drives: `AsyncClient`, or `Client` from a worker thread."""
    return str(request.param)
