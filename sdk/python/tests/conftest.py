"""SDK test fixtures: the service's own (tests/conftest.py: a runtime and a served API on both databases), and
which client flavour a test drives. The SDK's tests sit beside the SDK (DESIGN.md section 3) and run in `make test`
(pyproject's testpaths)."""

from __future__ import annotations

import pytest

from tests.conftest import *  # noqa: F403  (the service's fixtures: rt, api, database_url, ...)


@pytest.fixture(params=["async", "sync"])
def flavour(request: pytest.FixtureRequest) -> str:
    """Which client a test drives: `AsyncClient`, or `Client` from a worker thread."""
    return str(request.param)
