"""Every orders test ends by checking that each order's stored document matches its rows (decision 0066)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from marketsync.runtime import Runtime
from tests.orders.support import assert_documents_current


@pytest.fixture(autouse=True)
async def documents_follow_every_change(rt: Runtime) -> AsyncIterator[None]:
    yield
    await assert_documents_current(rt)
