"""POST /api/orders/List and GET /api/orders/{id}: shape, customer data, filters, limits, scopes."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from marketsync.kit.clock import FrozenClock
from marketsync.runtime import Runtime
from tests.orders.support import BUYER_EMAIL, BUYER_NAME, STREET, ingest, pulled_order
from tests.support.factories import make_tenant, problem

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
CUSTOMER_KEYS = {"Name", "Email", "Phone", "ShippingAddress"}


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(START)


async def test_list_entry_and_get_have_the_same_shape_and_customer_only_on_request(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    await ingest(rt, tenant.marketplace("P1"), pulled_order())

    listed_response = await api.post("/api/orders/List", json={}, headers=tenant.headers)
    listed = listed_response.json()
    assert set(listed) == {"Orders", "NextCursor", "NextUpdatedSince"}
    entry = listed["Orders"][0]
    got = await api.get(f"/api/orders/{entry['ServiceOrderID']}", headers=tenant.headers)
    assert got.status_code == 200
    # Spec sections 2 and 4: "returned identically" by both: the order object itself, no envelope (0390).
    assert (
        got.json() == entry and got.content.startswith(b'{"ServiceOrderID":') and got.content in listed_response.content
    )
    assert "Customer" not in entry
    for personal in (BUYER_NAME, BUYER_EMAIL, STREET):
        assert personal not in got.text and personal not in str(listed)
    assert entry["Items"][0]["OrderItemId"]
    assert set(entry) >= {
        "ServiceOrderID",
        "MarketplaceOrderId",
        "MarketplaceId",
        "Platform",
        "Country",
        "Status",
        "PurchaseDate",
        "LastModifiedDate",
        "Currency",
        "OrderTotal",
        "Items",
        "Shipments",
        "Refunds",
        "ExternalReference",
        "Address",
    }

    with_customer = await api.get(
        f"/api/orders/{entry['ServiceOrderID']}", params={"includeCustomerData": "true"}, headers=tenant.headers
    )
    listed_with = await api.post("/api/orders/List", json={"IncludeCustomerData": True}, headers=tenant.headers)
    assert with_customer.json() == listed_with.json()["Orders"][0]
    customer = with_customer.json()["Customer"]
    assert set(customer) == CUSTOMER_KEYS
    assert (customer["Name"], customer["Email"]) == (BUYER_NAME, BUYER_EMAIL)
    assert customer["ShippingAddress"]["Line1"] == STREET


async def test_another_accounts_order_is_404(rt: Runtime, api: httpx.AsyncClient) -> None:
    owner = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    stranger = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    await ingest(rt, owner.marketplace("P1"), pulled_order())
    order_id = (await api.post("/api/orders/List", json={}, headers=owner.headers)).json()["Orders"][0][
        "ServiceOrderID"
    ]

    response = await api.get(f"/api/orders/{order_id}", headers=stranger.headers)
    assert response.status_code == 404
    assert problem(response)["code"] == "not-found"
    assert (await api.post("/api/orders/List", json={}, headers=stranger.headers)).json()["Orders"] == []
    by_id = await api.post("/api/orders/List", json={"ServiceOrderIDs": [order_id]}, headers=stranger.headers)
    assert by_id.json()["Orders"] == []


async def test_scopes(rt: Runtime, api: httpx.AsyncClient) -> None:
    reader = await make_tenant(rt, api, scopes=["OrdersRead"])
    writer = await make_tenant(rt, api, scopes=["OrdersWrite"])
    assert (await api.post("/api/orders/List", json={}, headers=reader.headers)).status_code == 200
    denied_list = await api.post("/api/orders/List", json={}, headers=writer.headers)
    assert denied_list.status_code == 403 and problem(denied_list)["code"] == "insufficient-scope"
    confirm = {"OrderItems": [{"OrderItemId": "01ABCDEFGHJKMNPQRSTVWXYZ00"}]}
    denied_write = await api.post("/api/orders/Confirm", json=confirm, headers=reader.headers)
    assert denied_write.status_code == 403
    assert (await api.post("/api/orders/List", json={})).status_code == 401


async def test_limit_default_50_and_maximum_200(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    await ingest(rt, tenant.marketplace("P1"), *[pulled_order() for _ in range(55)])
    first = (await api.post("/api/orders/List", json={}, headers=tenant.headers)).json()
    assert len(first["Orders"]) == 50 and first["NextCursor"]
    everything = (await api.post("/api/orders/List", json={"Limit": 200}, headers=tenant.headers)).json()
    assert len(everything["Orders"]) == 55 and everything["NextCursor"] is None

    too_many = await api.post("/api/orders/List", json={"Limit": 201}, headers=tenant.headers)
    assert too_many.status_code == 400
    assert "Limit" in problem(too_many)["errors"]
    zero = await api.post("/api/orders/List", json={"Limit": 0}, headers=tenant.headers)
    assert zero.status_code == 400


async def test_bad_requests_name_the_field(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    cases = [
        ({"OrderStatuses": ["Lost"]}, "OrderStatuses[0]"),
        ({"UpdatedSince": "yesterday"}, "UpdatedSince"),
        ({"UpdatedSince": "2026-01-01T00:00:00"}, "UpdatedSince"),  # no time zone: ambiguous
        ({"Cursor": "not-a-cursor"}, "Cursor"),
        ({"limit": 10}, "limit"),  # field names are case-exact
    ]
    for body, key in cases:
        response = await api.post("/api/orders/List", json=body, headers=tenant.headers)
        assert response.status_code == 400, (body, response.text)
        assert key in problem(response)["errors"], (body, response.text)


async def test_a_cursor_reused_with_other_filters_is_refused(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    await ingest(rt, tenant.marketplace("P1"), *[pulled_order() for _ in range(3)])
    first = (await api.post("/api/orders/List", json={"Limit": 1}, headers=tenant.headers)).json()
    cursor = first["NextCursor"]
    same = await api.post("/api/orders/List", json={"Limit": 2, "Cursor": cursor}, headers=tenant.headers)
    assert same.status_code == 200  # Limit may change between pages
    other = await api.post(
        "/api/orders/List", json={"Limit": 1, "Cursor": cursor, "OrderStatuses": ["Shipped"]}, headers=tenant.headers
    )
    assert other.status_code == 400
    assert "Cursor" in problem(other)["errors"]


async def test_filters_bound_the_last_changed_time_not_the_purchase_date(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    connection = tenant.marketplace("P1")
    old = pulled_order(order_id="MO-OLD")
    await ingest(rt, connection, old)  # changed at 09:00
    clock.advance(minutes=20)
    await ingest(rt, connection, pulled_order(order_id="MO-NEW"))  # changed at 09:20
    clock.advance(minutes=20)

    async def ids(body: dict[str, object]) -> list[str]:
        response = await api.post("/api/orders/List", json=body, headers=tenant.headers)
        assert response.status_code == 200, response.text
        return [o["MarketplaceOrderId"] for o in response.json()["Orders"]]

    assert await ids({}) == ["MO-OLD", "MO-NEW"]  # oldest change first
    assert await ids({"UpdatedSince": "2026-03-01T09:10:00Z"}) == ["MO-NEW"]
    assert await ids({"FromDate": "2026-03-01T09:10:00Z"}) == ["MO-NEW"]
    assert await ids({"ToDate": "2026-03-01T09:10:00Z"}) == ["MO-OLD"]
    assert await ids({"FromDate": "2026-03-01T08:00:00Z", "ToDate": "2026-03-01T09:30:00Z"}) == ["MO-OLD", "MO-NEW"]

    # A change to the old order (here: an external reference) moves its last-changed time.
    old_id = (await api.post("/api/orders/List", json={}, headers=tenant.headers)).json()["Orders"][0]["ServiceOrderID"]
    response = await api.post(
        "/api/orders/Update", json={"ServiceOrderID": old_id, "ExternalReference": "ERP-1"}, headers=tenant.headers
    )
    assert response.status_code == 200, response.text
    assert await ids({"UpdatedSince": "2026-03-01T09:30:00Z"}) == ["MO-OLD"]


async def test_filter_by_ids_and_statuses(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    await ingest(
        rt,
        tenant.marketplace("P1"),
        pulled_order(order_id="MO-U"),
        pulled_order(order_id="MO-S", status="Shipped"),
        pulled_order(order_id="MO-C", status="Cancelled"),
    )
    orders = (await api.post("/api/orders/List", json={}, headers=tenant.headers)).json()["Orders"]
    by_mid = {o["MarketplaceOrderId"]: o["ServiceOrderID"] for o in orders}

    async def mids(body: dict[str, object]) -> set[str]:
        response = await api.post("/api/orders/List", json=body, headers=tenant.headers)
        assert response.status_code == 200, response.text
        return {o["MarketplaceOrderId"] for o in response.json()["Orders"]}

    assert await mids({"OrderStatuses": ["Unshipped"]}) == {"MO-U"}
    assert await mids({"OrderStatuses": ["Shipped", "Cancelled"]}) == {"MO-S", "MO-C"}
    assert await mids({"ServiceOrderIDs": [by_mid["MO-S"], by_mid["MO-U"]]}) == {"MO-S", "MO-U"}
    assert await mids({"ServiceOrderIDs": [by_mid["MO-S"]], "OrderStatuses": ["Unshipped"]}) == set()
