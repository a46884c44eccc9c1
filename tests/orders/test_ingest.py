"""ingest_pulled_orders: the interface the OrderPull job calls (upsert, change detection, NEW count)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import httpx
import pytest

from marketsync.kit.clock import FrozenClock
from marketsync.runtime import Runtime
from tests.orders.support import BUYER_NAME, ingest, order_by_marketplace_id, pulled_item, pulled_order
from tests.support.factories import make_tenant

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(START)


async def test_new_orders_are_inserted_with_items_address_and_buyer(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    connection = tenant.marketplace("P1")
    first = pulled_order(
        items=[
            pulled_item(sku="A", quantity=2, unit_price="10.00"),
            pulled_item(sku="B", quantity=1, unit_price="5.25"),
        ]
    )
    second = pulled_order()

    assert await ingest(rt, connection, first, second) == 2

    order = await order_by_marketplace_id(api, tenant.headers, first.marketplace_order_id, customer=True)
    assert order["MarketplaceId"] == connection.id
    assert (order["Platform"], order["Country"]) == ("P1", "UK")
    assert order["Status"] == "Unshipped"
    assert order["Currency"] == "GBP"
    assert Decimal(str(order["ItemsTotal"])) == Decimal("25.25")
    assert Decimal(str(order["OrderTotal"])) == Decimal("28.75")
    assert order["LastModifiedDate"] == "2026-03-01T09:00:00.000Z"
    assert [(i["Sku"], i["Quantity"], i["Status"]) for i in order["Items"]] == [
        ("A", 2, "Unshipped"),
        ("B", 1, "Unshipped"),
    ]
    assert order["Customer"]["Name"] == BUYER_NAME
    assert order["Customer"]["ShippingAddress"]["PostalCode"] == "N1 9GU"
    assert order["Address"] == {"Region": "Greater London", "CountryCode": "GB"}


async def test_repull_changes_nothing_unless_something_changed(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    connection = tenant.marketplace("P1")
    item = pulled_item(item_id="LINE-1", quantity=3)
    pulled = pulled_order(order_id="MO-SAME", items=[item])
    assert await ingest(rt, connection, pulled) == 1

    clock.advance(minutes=5)
    assert await ingest(rt, connection, pulled) == 0
    unchanged = await order_by_marketplace_id(api, tenant.headers, "MO-SAME")
    assert unchanged["LastModifiedDate"] == "2026-03-01T09:00:00.000Z"

    clock.advance(minutes=5)
    shipped = pulled_order(
        order_id="MO-SAME",
        status="Shipped",
        items=[pulled_item(item_id="LINE-1", quantity=3, status="Shipped")],
        changed_at=START + timedelta(minutes=10),
    )
    assert await ingest(rt, connection, shipped) == 0
    changed = await order_by_marketplace_id(api, tenant.headers, "MO-SAME")
    assert changed["LastModifiedDate"] == "2026-03-01T09:10:00.000Z"
    assert changed["Status"] == "Shipped"
    assert changed["Items"][0]["ShippedQuantity"] == 3


async def test_same_marketplace_order_id_on_two_connections_is_two_orders(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P2", "DE")))
    assert await ingest(rt, tenant.marketplace("P1"), pulled_order(order_id="MO-X")) == 1
    assert await ingest(rt, tenant.marketplace("P2"), pulled_order(order_id="MO-X", currency="EUR")) == 1
    response = await api.post("/api/orders/List", json={}, headers=tenant.headers)
    assert sorted(o["Platform"] for o in response.json()["Orders"]) == ["P1", "P2"]


async def test_marketplace_statuses_map_onto_the_status_model(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    connection = tenant.marketplace("P1")
    pending = pulled_order(order_id="MO-P", status="PendingPayment")
    cancelled = pulled_order(order_id="MO-C", status="Cancelled")
    partly = pulled_order(order_id="MO-PS", items=[pulled_item(status="Shipped"), pulled_item(status="Unshipped")])
    assert await ingest(rt, connection, pending, cancelled, partly) == 3
    statuses = {
        mid: (await order_by_marketplace_id(api, tenant.headers, mid))["Status"] for mid in ("MO-P", "MO-C", "MO-PS")
    }
    assert statuses == {"MO-P": "Pending", "MO-C": "Cancelled", "MO-PS": "PartiallyShipped"}

    # The marketplace releases the pending order: it becomes Unshipped and its last-changed time moves.
    clock.advance(minutes=1)
    released = pulled_order(
        order_id="MO-P", status="Unshipped", items=[pulled_item(item_id=pending.items[0].marketplace_item_id)]
    )
    await ingest(rt, connection, released)
    order = await order_by_marketplace_id(api, tenant.headers, "MO-P")
    assert order["Status"] == "Unshipped"
    assert order["LastModifiedDate"] == "2026-03-01T09:01:00.000Z"


async def test_a_stale_pull_never_undoes_a_local_change(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    """P2 never hears of a local confirm, so its next pull still says Unshipped: the shipment stays."""
    tenant = await make_tenant(rt, api, marketplaces=(("P2", "DE"),))
    connection = tenant.marketplace("P2")
    pulled = pulled_order(order_id="MO-STALE", currency="EUR")
    await ingest(rt, connection, pulled)
    order = await order_by_marketplace_id(api, tenant.headers, "MO-STALE")
    item_id = order["Items"][0]["OrderItemId"]
    response = await api.post(
        "/api/orders/Confirm", json={"OrderItems": [{"OrderItemId": item_id}]}, headers=tenant.headers
    )
    assert response.status_code == 200, response.text

    clock.advance(minutes=1)
    await ingest(rt, connection, pulled)
    order = await order_by_marketplace_id(api, tenant.headers, "MO-STALE")
    assert order["Status"] == "Shipped"
    assert order["Items"][0]["ShippedQuantity"] == 2
