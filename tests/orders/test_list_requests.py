"""What POST /api/orders/List accepts: no body at all is "no filter"; an empty selection and a value of the
wrong JSON type are 400s naming the field (never silently widened or coerced)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from marketsync.runtime import Runtime
from tests.orders.support import ingest_one, tenant_with
from tests.support.factories import problem


async def test_a_list_without_a_body_is_the_first_page_of_everything(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await tenant_with(rt, api, "P1")
    order = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))
    bare = await api.post("/api/orders/List", headers=tenant.headers)  # no Content-Type, Content-Length 0
    assert bare.status_code == 200, bare.text
    empty_object = await api.post("/api/orders/List", json={}, headers=tenant.headers)
    assert [o["ServiceOrderID"] for o in bare.json()["Orders"]] == [order["ServiceOrderID"]]
    assert bare.json()["Orders"] == empty_object.json()["Orders"]
    assert "Customer" not in bare.json()["Orders"][0]


@pytest.mark.parametrize("field", ["OrderStatuses", "ServiceOrderIDs"])
async def test_an_empty_filter_array_is_refused_not_widened(rt: Runtime, api: httpx.AsyncClient, field: str) -> None:
    tenant = await tenant_with(rt, api, "P1")
    await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))
    response = await api.post("/api/orders/List", json={field: []}, headers=tenant.headers)
    assert response.status_code == 400
    assert problem(response)["errors"] == {field: ["At least one value; omit the field to apply no filter."]}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"Limit": True}, "Limit"),
        ({"Limit": "5"}, "Limit"),
        ({"Limit": 5.0}, "Limit"),
        ({"UpdatedSince": 1234}, "UpdatedSince"),
        ({"FromDate": "2026-01-01T00:00:00"}, "FromDate"),  # no offset: ambiguous
        ({"IncludeCustomerData": "yes"}, "IncludeCustomerData"),
        ({"IncludeCustomerData": 1}, "IncludeCustomerData"),
        ({"OrderStatuses": "Unshipped"}, "OrderStatuses"),
        ({"ServiceOrderIDs": [1]}, "ServiceOrderIDs[0]"),
        ({"Cursor": 7}, "Cursor"),
    ],
)
async def test_a_wrong_json_type_is_a_400_naming_the_field(
    rt: Runtime, api: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    tenant = await tenant_with(rt, api, "P1")
    response = await api.post("/api/orders/List", json=body, headers=tenant.headers)
    assert response.status_code == 400, response.text
    assert list(problem(response)["errors"]) == [field]


async def test_strict_types_still_take_iso_timestamps_and_query_booleans(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await tenant_with(rt, api, "P1")
    order = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))
    response = await api.post(
        "/api/orders/List",
        json={"UpdatedSince": "2000-01-01T00:00:00+02:00", "Limit": 5, "IncludeCustomerData": True},
        headers=tenant.headers,
    )
    assert response.status_code == 200, response.text
    assert "Customer" in response.json()["Orders"][0]
    for value, has_customer in (("true", True), ("false", False)):
        one = await api.get(
            f"/api/orders/{order['ServiceOrderID']}", params={"includeCustomerData": value}, headers=tenant.headers
        )
        assert one.status_code == 200 and ("Customer" in one.json()) is has_customer
    # Writes are strict too: a quantity sent as a string is named, as the price push does.
    cancel = await api.post(
        "/api/orders/Cancel",
        json={
            "CancelReason": "OutOfStock",
            "OrderItems": [{"OrderItemId": order["Items"][0]["OrderItemId"], "Quantity": "1"}],
        },
        headers=tenant.headers,
    )
    assert cancel.status_code == 400 and list(problem(cancel)["errors"]) == ["OrderItems[0].Quantity"]


async def test_null_is_an_omitted_field_on_every_optional_list_field(rt: Runtime, api: httpx.AsyncClient) -> None:
    # Spec §4: request fields are optional unless stated; products List and category Search read null as
    # omitted, and so does this List (a client that serialises unset fields as null gets the defaults).
    tenant = await tenant_with(rt, api, "P1")
    await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))
    nulls = {
        name: None
        for name in (
            "ServiceOrderIDs",
            "OrderStatuses",
            "UpdatedSince",
            "FromDate",
            "ToDate",
            "Limit",
            "Cursor",
            "IncludeCustomerData",
        )
    }
    response = await api.post("/api/orders/List", json=nulls, headers=tenant.headers)
    assert response.status_code == 200, response.text
    omitted = await api.post("/api/orders/List", json={}, headers=tenant.headers)
    assert response.json()["Orders"] == omitted.json()["Orders"] and len(response.json()["Orders"]) == 1
    assert "Customer" not in response.json()["Orders"][0]


async def test_a_shape_error_does_not_hide_a_bad_cursor(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Spec section 7: one 400 names every bad field. A bad Limit used to stop the request before the Cursor was
    checked; the Cursor is checked on its own now, and against the filters when every filter is well-formed."""
    tenant = await tenant_with(rt, api, "P1")
    for _ in range(2):
        await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))
    walk = {"Limit": 1, "OrderStatuses": ["Unshipped"]}
    first = await api.post("/api/orders/List", json=walk, headers=tenant.headers)
    cursor = first.json()["NextCursor"]
    assert cursor is not None

    async def errors_of(body: dict[str, Any]) -> dict[str, list[str]]:
        response = await api.post("/api/orders/List", json=body, headers=tenant.headers)
        assert response.status_code == 400, response.text
        found: dict[str, list[str]] = problem(response)["errors"]
        return found

    garbage = await errors_of({"Limit": "x", "Cursor": "garbage"})
    assert set(garbage) == {"Limit", "Cursor"}
    assert garbage["Cursor"][0].startswith("Not a cursor this service issued")
    # A cursor of another walk (other filters) is named beside the bad Limit.
    other_walk = await errors_of({"Limit": 0, "Cursor": cursor, "OrderStatuses": ["Shipped"]})
    assert set(other_walk) == {"Limit", "Cursor"}
    assert "other filters" in other_walk["Cursor"][0]
    # The walk's own cursor: the bad Limit alone.
    assert set(await errors_of({"Limit": 0, "Cursor": cursor, "OrderStatuses": ["Unshipped"]})) == {"Limit"}
    # A malformed filter is named by itself; whether the cursor belongs to the filters is then not asked.
    assert set(await errors_of({"Cursor": cursor, "OrderStatuses": ["Nope"]})) == {"OrderStatuses[0]"}
    assert set(await errors_of({"Cursor": "garbage", "UpdatedSince": 5, "Extra": 1})) == {
        "Cursor",
        "UpdatedSince",
        "Extra",
    }
