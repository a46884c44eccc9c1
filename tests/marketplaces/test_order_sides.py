"""A kind-P2 marketplace's orders, the same for the sandbox P2 and for Amazon through its simulator (decision 0379):
pulled on the rolling schedule and stored once, OrdersDownloaded once per pull that found new orders, and Confirm,
Cancel and Refund stored, never sent, with a Warnings entry naming the platform (spec §1, §4)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from marketsync.jobs.worker import Worker
from marketsync.kit.clock import Clock, FrozenClock
from marketsync.models import Job
from marketsync.orders import tasks
from marketsync.runtime import Runtime
from tests.marketplaces import support
from tests.marketplaces.sides import Side
from tests.support.factories import Tenant, make_tenant


@pytest.fixture
def clock() -> Clock:
    return FrozenClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))


async def _pull(rt: Runtime) -> None:
    await tasks.schedule_order_pulls(rt)
    await Worker(rt).drain()


async def _orders(api: httpx.AsyncClient, tenant: Tenant) -> dict[str, dict[str, Any]]:
    listed = await api.post("/api/orders/List", json={"Limit": 200}, headers=tenant.headers)
    assert listed.status_code == 200, listed.text
    return {order["MarketplaceOrderId"]: order for order in listed.json()["Orders"]}


@pytest.mark.parametrize("side", ["P2", "Amazon"], indirect=True)
async def test_pulled_orders_are_stored_once_and_each_pull_with_new_ones_fires_orders_downloaded(
    rt: Runtime, api: httpx.AsyncClient, side: Side
) -> None:
    tenant = await make_tenant(rt, api)
    connection = await side.connect(tenant.account_id)
    await side.listed_product(connection, "ORD-SKU", price="19.99", quantity=40)
    arrived = await side.orders_arrive(connection, 3)

    await _pull(rt)

    fired = await support.events(rt, tenant.account_id, "OrdersDownloaded")
    assert [e["payload"] for e in fired] == [
        {
            "Marketplace": side.name,
            "Platform": side.platform,
            "Country": side.country,
            "NewOrderCount": 3,
            "UserPlatformId": connection.id,
        }
    ]
    stored = await _orders(api, tenant)
    assert sorted(stored) == sorted(arrived)
    assert {order["Platform"] for order in stored.values()} == {side.platform}

    await _pull(rt)  # nothing new: silent, nothing stored twice
    assert len(await support.events(rt, tenant.account_id, "OrdersDownloaded")) == 1
    assert len(await _orders(api, tenant)) == 3

    await side.orders_arrive(connection, 2)
    await _pull(rt)
    fired = await support.events(rt, tenant.account_id, "OrdersDownloaded")
    assert [e["payload"]["NewOrderCount"] for e in fired] == [3, 2]
    assert len(await _orders(api, tenant)) == 5


@pytest.mark.parametrize("side", ["P2", "Amazon"], indirect=True)
async def test_order_writes_are_stored_never_sent_and_warn_naming_the_platform(
    rt: Runtime, api: httpx.AsyncClient, side: Side, clock: FrozenClock
) -> None:
    tenant = await make_tenant(rt, api)
    connection = await side.connect(tenant.account_id)
    await side.listed_product(connection, "ORD-SKU", price="19.99", quantity=40)
    arrived = await side.orders_arrive(connection, 3)
    await _pull(rt)
    stored = await _orders(api, tenant)
    shipped, cancelled, refunded = (stored[order_id] for order_id in arrived)

    def every_item(order: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"OrderItemId": item["OrderItemId"]} for item in order["Items"]]

    writes: list[tuple[str, dict[str, Any]]] = [
        ("Confirm", {"OrderItems": [{**line, "TrackingNumber": "T1"} for line in every_item(shipped)]}),
        ("Cancel", {"CancelReason": "OutOfStock", "OrderItems": every_item(cancelled)}),
        (
            "Refund",
            {
                "Reason": "Goodwill",
                "Currency": refunded["Currency"],
                "OrderItems": [{"OrderItemId": refunded["Items"][0]["OrderItemId"], "Amount": 1}],
            },
        ),
    ]
    for action, body in writes:
        answer = await api.post(f"/api/orders/{action}", json=body, headers=tenant.headers)
        assert answer.status_code == 200, answer.text
        result = answer.json()
        assert result["JobIds"] == []
        [warning] = result["Warnings"]
        assert side.platform in warning

    await Worker(rt).drain()
    async with rt.db.read() as session:
        jobs = (await session.execute(select(Job.type).where(Job.account_id == tenant.account_id))).scalars().all()
    assert "OrderWriteBack" not in jobs  # nothing is sent to the marketplace
    assert await side.feeds_received(connection) == 0
    clock.advance(seconds=1)  # a list's high-water mark is the clock: past the writes' stamps
    after = await _orders(api, tenant)
    assert [after[order_id]["Status"] for order_id in arrived] == ["Shipped", "Cancelled", refunded["Status"]]
    assert after[arrived[2]]["Refunds"], after[arrived[2]]
