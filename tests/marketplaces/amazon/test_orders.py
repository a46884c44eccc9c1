"""Amazon orders pulled on the rolling schedule: getOrders with LastUpdatedAfter and NextToken, getOrderItems, the
status table (docs/decisions/0371), customer data only through a Restricted Data Token and only in answers that ask
for it (0376), OrdersDownloaded as for P2, order writes stored with a warning naming Amazon."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from marketsync.jobs.worker import Worker
from marketsync.kit.clock import Clock, FrozenClock
from marketsync.models import MarketplaceConnection
from marketsync.orders import tasks
from marketsync.runtime import Runtime
from tests.marketplaces import support
from tests.marketplaces.amazon.support import amazon_connection, amazon_settings, spapi_calls
from tests.support.amazon import AmazonServer
from tests.support.factories import Tenant, make_tenant

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> Clock:
    return FrozenClock(START)


@pytest.fixture
def settings_overrides(amazon_simulator: AmazonServer) -> dict[str, Any]:
    return amazon_settings(amazon_simulator)


async def _tenant(
    rt: Runtime, api: httpx.AsyncClient, server: AmazonServer
) -> tuple[Tenant, MarketplaceConnection, str]:
    tenant = await make_tenant(rt, api)
    connection, seller = await amazon_connection(rt, server, tenant.account_id)
    server.sim.set_listing(seller.selling_partner_id, "UK", "ORD-SKU", price="19.99", quantity=40)
    return tenant, connection, seller.selling_partner_id


async def _pull(rt: Runtime, clock: FrozenClock) -> None:
    clock.advance(minutes=5)  # Amazon answers only orders changed at least two minutes ago
    await tasks.schedule_order_pulls(rt)
    await Worker(rt).drain()


async def _orders(api: httpx.AsyncClient, tenant: Tenant, **body: Any) -> list[dict[str, Any]]:
    listed = await api.post("/api/orders/List", json={"Limit": 200, **body}, headers=tenant.headers)
    assert listed.status_code == 200, listed.text
    orders: list[dict[str, Any]] = listed.json()["Orders"]
    return orders


async def test_orders_are_pulled_stored_once_and_downloaded_fires_as_for_p2(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer, clock: FrozenClock
) -> None:
    tenant, connection, seller_id = await _tenant(rt, api, amazon_simulator)
    arrived = amazon_simulator.sim.orders_arrive(seller_id, "UK", 3)

    await _pull(rt, clock)

    fired = await support.events(rt, tenant.account_id, "OrdersDownloaded")
    assert [e["payload"] for e in fired] == [
        {
            "Marketplace": "Amazon UK",
            "Platform": "Amazon",
            "Country": "UK",
            "NewOrderCount": 3,
            "UserPlatformId": connection.id,
        }
    ]
    stored = await _orders(api, tenant)
    assert sorted(o["MarketplaceOrderId"] for o in stored) == sorted(o.amazon_order_id for o in arrived)
    first = next(o for o in stored if o["MarketplaceOrderId"] == arrived[0].amazon_order_id)
    assert first["Platform"] == "Amazon" and first["Status"] == "Unshipped"
    assert [item["Sku"] for item in first["Items"]] == [item.sku for item in arrived[0].items]

    # Nothing new: silent, and the cursor moved past what was pulled.
    await _pull(rt, clock)
    assert len(await support.events(rt, tenant.account_id, "OrdersDownloaded")) == 1

    amazon_simulator.sim.orders_arrive(seller_id, "UK", 2)
    await _pull(rt, clock)
    fired = await support.events(rt, tenant.account_id, "OrdersDownloaded")
    assert [e["payload"]["NewOrderCount"] for e in fired] == [3, 2]


async def test_a_pull_pages_with_next_token_and_each_orders_items(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer, clock: FrozenClock
) -> None:
    tenant, _, seller_id = await _tenant(rt, api, amazon_simulator)
    amazon_simulator.sim.orders_arrive(seller_id, "UK", 130)
    # Amazon's default getOrderItems rate (0.5 a second after 30) would make this pull take a minute and a half: the
    # rate header of the first answer raises it.
    amazon_simulator.sim.set_rate("getOrderItems", 200.0, 30)
    before = len(amazon_simulator.sim.requests)

    await _pull(rt, clock)

    calls = spapi_calls(amazon_simulator, before)
    assert calls.count("getOrders") == 2  # 100, then the NextToken page of 30
    assert calls.count("getOrderItems") == 130
    assert calls.count("createRestrictedDataToken") == 1
    assert len(await _orders(api, tenant)) == 130
    fired = await support.events(rt, tenant.account_id, "OrdersDownloaded")
    assert [e["payload"]["NewOrderCount"] for e in fired] == [130]


async def test_statuses_follow_amazons_and_a_shipment_or_cancellation_is_pulled_again(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer, clock: FrozenClock
) -> None:
    tenant, _, seller_id = await _tenant(rt, api, amazon_simulator)
    sim = amazon_simulator.sim
    pending = sim.add_order(seller_id, "UK", [("ORD-SKU", 1)], status="Pending")
    shipped = sim.add_order(seller_id, "UK", [("ORD-SKU", 2)])
    cancelled = sim.add_order(seller_id, "UK", [("ORD-SKU", 1)])
    await _pull(rt, clock)
    statuses = {o["MarketplaceOrderId"]: o["Status"] for o in await _orders(api, tenant)}
    assert statuses[pending.amazon_order_id] == "Pending"
    assert statuses[shipped.amazon_order_id] == "Unshipped"

    for item in shipped.items:
        item.quantity_shipped = item.quantity
    sim.update_order(shipped.amazon_order_id, status="Shipped")
    sim.update_order(cancelled.amazon_order_id, status="Canceled")
    sim.update_order(pending.amazon_order_id, status="Unshipped")
    await _pull(rt, clock)

    statuses = {o["MarketplaceOrderId"]: o["Status"] for o in await _orders(api, tenant)}
    assert statuses == {
        pending.amazon_order_id: "Unshipped",
        shipped.amazon_order_id: "Shipped",
        cancelled.amazon_order_id: "Cancelled",
    }
    assert len(await support.events(rt, tenant.account_id, "OrdersDownloaded")) == 1  # changes are not new orders


async def test_customer_data_comes_only_through_the_restricted_data_token_and_only_when_asked(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer, clock: FrozenClock
) -> None:
    tenant, _, seller_id = await _tenant(rt, api, amazon_simulator)
    order = amazon_simulator.sim.add_order(seller_id, "UK", [("ORD-SKU", 1)], buyer_name="Ann Buyer")
    await _pull(rt, clock)

    [token] = amazon_simulator.sim.restricted_tokens.values()
    assert [(r["method"], r["path"], sorted(r["dataElements"])) for r in token.resources] == [  # type: ignore[attr-defined]
        ("GET", "/orders/v0/orders", ["buyerInfo", "shippingAddress"])
    ]
    [plain] = await _orders(api, tenant)
    assert "Customer" not in plain and "Ann Buyer" not in str(plain)
    [full] = await _orders(api, tenant, IncludeCustomerData=True)
    customer = full["Customer"]
    assert customer["Name"] == "Ann Buyer"
    assert customer["Email"] == order.buyer_email
    one = await api.get(f"/api/orders/{full['ServiceOrderID']}", headers=tenant.headers)
    assert "Customer" not in one.json()
    one = await api.get(f"/api/orders/{full['ServiceOrderID']}?includeCustomerData=true", headers=tenant.headers)
    assert one.json()["Customer"]["Name"] == "Ann Buyer"


async def test_the_first_pull_reaches_thirty_days_back(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer, clock: FrozenClock
) -> None:
    tenant, _, seller_id = await _tenant(rt, api, amazon_simulator)
    sim = amazon_simulator.sim
    old = sim.add_order(seller_id, "UK", [("ORD-SKU", 1)])
    old.last_update = START - timedelta(days=31)
    recent = sim.add_order(seller_id, "UK", [("ORD-SKU", 1)])
    recent.last_update = START - timedelta(days=29)
    await _pull(rt, clock)
    assert [o["MarketplaceOrderId"] for o in await _orders(api, tenant)] == [recent.amazon_order_id]


@pytest.mark.parametrize("action", ["Confirm", "Cancel"])
async def test_order_writes_are_stored_never_sent_and_warn_naming_amazon(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer, clock: FrozenClock, action: str
) -> None:
    tenant, _, seller_id = await _tenant(rt, api, amazon_simulator)
    amazon_simulator.sim.add_order(seller_id, "UK", [("ORD-SKU", 1)])
    await _pull(rt, clock)
    [order] = await _orders(api, tenant)
    item_id = order["Items"][0]["OrderItemId"]
    body: dict[str, Any] = {"OrderItems": [{"OrderItemId": item_id}]}
    if action == "Confirm":
        body["OrderItems"][0].update(
            {"ShipDate": "2026-03-02T10:00:00Z", "CarrierCode": "RoyalMail", "TrackingNumber": "RM1"}
        )
    else:
        body["CancelReason"] = "OutOfStock"
    before = len(amazon_simulator.sim.requests)

    answer = await api.post(f"/api/orders/{action}", json=body, headers=tenant.headers)

    assert answer.status_code == 200, answer.text
    assert any("Amazon" in warning for warning in answer.json()["Warnings"])
    await Worker(rt).drain()
    assert spapi_calls(amazon_simulator, before) == []  # nothing sent to Amazon
    clock.advance(seconds=1)
    [after] = await _orders(api, tenant)
    assert after["Status"] == ("Shipped" if action == "Confirm" else "Cancelled")
