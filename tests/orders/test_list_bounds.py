"""Orders List compares its time bounds at the precision it shows timestamps in (milliseconds), on both
databases: an order stored with microseconds is found by the millisecond value the API gave for it
(orders.rules.changed_bounds)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from marketsync.kit.clock import FrozenClock
from marketsync.runtime import Runtime
from tests.orders.support import ingest, pulled_order
from tests.support.factories import make_tenant

STORED_AT = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
SHOWN = "2026-03-01T12:00:00.123Z"


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(STORED_AT)


@pytest.mark.parametrize(
    ("bounds", "found"),
    [
        ({"ToDate": SHOWN}, True),  # was missed: 12:00:00.123456 > 12:00:00.123000
        ({"UpdatedSince": SHOWN}, True),
        ({"FromDate": SHOWN, "ToDate": SHOWN}, True),
        ({"UpdatedSince": "2026-03-01T12:00:00.123999Z"}, True),  # within the shown millisecond
        ({"ToDate": "2026-03-01T12:00:00.122Z"}, False),
        ({"UpdatedSince": "2026-03-01T12:00:00.124Z"}, False),
        ({"ToDate": "9999-12-31T23:59:59.999999Z"}, True),  # the last millisecond there is
    ],
)
async def test_a_bound_at_the_shown_millisecond_finds_an_order_stored_with_microseconds(
    rt: Runtime, api: httpx.AsyncClient, bounds: dict[str, Any], found: bool
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    await ingest(rt, tenant.marketplace("P1"), pulled_order())
    everything = (await api.post("/api/orders/List", json={}, headers=tenant.headers)).json()["Orders"]
    assert [order["LastModifiedDate"] for order in everything] == [SHOWN]

    response = await api.post("/api/orders/List", json=bounds, headers=tenant.headers)

    assert response.status_code == 200, response.text
    assert len(response.json()["Orders"]) == (1 if found else 0)


async def test_a_walk_resumed_from_a_shown_time_neither_misses_nor_repeats(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    await ingest(rt, tenant.marketplace("P1"), pulled_order())
    clock.advance(microseconds=300)  # the same millisecond: 12:00:00.123756
    await ingest(rt, tenant.marketplace("P1"), pulled_order())
    clock.advance(milliseconds=5)
    await ingest(rt, tenant.marketplace("P1"), pulled_order())

    first = (await api.post("/api/orders/List", json={"ToDate": SHOWN}, headers=tenant.headers)).json()["Orders"]
    after = {"UpdatedSince": "2026-03-01T12:00:00.124Z"}
    rest = (await api.post("/api/orders/List", json=after, headers=tenant.headers)).json()["Orders"]

    assert len(first) == 2 and len(rest) == 1
    assert {o["ServiceOrderID"] for o in first}.isdisjoint(o["ServiceOrderID"] for o in rest)
