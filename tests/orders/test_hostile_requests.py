"""Valid-but-extreme and tampered inputs to the orders List answer 400 naming the field, never 500."""

from __future__ import annotations

import base64

import httpx
import orjson
import pytest

from marketsync.runtime import Runtime
from tests.orders.support import ingest, pulled_order
from tests.support.factories import make_tenant, problem

BEYOND_UTC = ("9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00")
UTC_EXTREMES = ("9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z")


@pytest.mark.parametrize("field", ["UpdatedSince", "FromDate", "ToDate"])
async def test_timestamps_utc_cannot_hold_are_a_400_naming_the_field(
    rt: Runtime, api: httpx.AsyncClient, field: str
) -> None:
    tenant = await make_tenant(rt, api)
    for stamp in BEYOND_UTC:
        response = await api.post("/api/orders/List", json={field: stamp}, headers=tenant.headers)
        assert response.status_code == 400, response.text
        assert field in problem(response)["errors"]


@pytest.mark.parametrize("field", ["UpdatedSince", "FromDate", "ToDate"])
async def test_the_extremes_utc_can_hold_are_answered(rt: Runtime, api: httpx.AsyncClient, field: str) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    await ingest(rt, tenant.marketplace("P1"), pulled_order())
    for stamp in UTC_EXTREMES:
        response = await api.post("/api/orders/List", json={field: stamp}, headers=tenant.headers)
        assert response.status_code == 200, response.text
        assert isinstance(response.json()["Orders"], list)


async def test_a_hand_edited_cursor_is_refused(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    await ingest(rt, tenant.marketplace("P1"), *[pulled_order() for _ in range(3)])
    first = await api.post("/api/orders/List", json={"Limit": 1}, headers=tenant.headers)
    cursor = first.json()["NextCursor"]
    payload, mac = cursor.split(".")
    data = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    data["u"] = 253402300799999999  # year 9999: the probe's 500
    edited = base64.urlsafe_b64encode(orjson.dumps(data)).rstrip(b"=").decode()
    for tampered in (f"{edited}.{mac}", edited, cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB")):
        response = await api.post("/api/orders/List", json={"Limit": 1, "Cursor": tampered}, headers=tenant.headers)
        assert response.status_code == 400, response.text
        assert "Cursor" in problem(response)["errors"]
    genuine = await api.post("/api/orders/List", json={"Limit": 1, "Cursor": cursor}, headers=tenant.headers)
    assert genuine.status_code == 200
    assert genuine.json()["Orders"][0]["ServiceOrderID"] != first.json()["Orders"][0]["ServiceOrderID"]


async def test_answers_carrying_customer_data_are_not_stored_by_caches(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    await ingest(rt, tenant.marketplace("P1"), pulled_order())
    listed = await api.post("/api/orders/List", json={"IncludeCustomerData": True}, headers=tenant.headers)
    assert listed.status_code == 200
    assert listed.headers["cache-control"] == "no-store"
    order_id = listed.json()["Orders"][0]["ServiceOrderID"]
    single = await api.get(f"/api/orders/{order_id}", headers=tenant.headers)
    assert single.headers["cache-control"] == "no-store"
    refused = await api.post("/api/orders/List", json={"Limit": 0}, headers=tenant.headers)
    assert refused.status_code == 400 and refused.headers["cache-control"] == "no-store"
