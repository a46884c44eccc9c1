"""Keyset paging under concurrent change: within one walk no order is skipped or shown twice."""

from __future__ import annotations

from typing import Any

import httpx

from marketsync.runtime import Runtime
from tests.orders.support import ingest, pulled_order
from tests.support.factories import make_tenant, problem


async def test_inserted_and_changed_between_pages_none_skipped_none_twice(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    connection = tenant.marketplace("P1")
    for _ in range(4):
        await ingest(rt, connection, *[pulled_order() for _ in range(6)])

    async def page(body: dict[str, Any]) -> dict[str, Any]:
        response = await api.post("/api/orders/List", json=body, headers=tenant.headers)
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result

    everything = [o["ServiceOrderID"] for o in (await page({"Limit": 200}))["Orders"]]
    assert len(everything) == 24

    seen: list[str] = []
    changed: set[str] = set()
    inserted: list[str] = []
    body: dict[str, Any] = {"Limit": 5}
    first = await page(body)
    next_updated_since = first["NextUpdatedSince"]
    result = first
    round_ = 0
    while True:
        seen += [o["ServiceOrderID"] for o in result["Orders"]]
        if result["NextCursor"] is None:
            break
        # Between pages: new orders arrive, one order already shown and one not yet shown change.
        round_ += 1
        new = [pulled_order() for _ in range(2)]
        await ingest(rt, connection, *new)
        inserted += [o.marketplace_order_id for o in new]
        not_seen = [order_id for order_id in everything if order_id not in seen and order_id not in changed]
        for order_id in (seen[0 + round_], not_seen[-1]):
            response = await api.post(
                "/api/orders/Update",
                json={"ServiceOrderID": order_id, "ExternalReference": f"ref-{round_}"},
                headers=tenant.headers,
            )
            assert response.status_code == 200, response.text
            changed.add(order_id)
        result = await page({**body, "Cursor": result["NextCursor"]})

    assert len(seen) == len(set(seen)), "an order was shown twice within one walk"
    untouched = set(everything) - changed
    assert untouched <= set(seen), "an order that did not change during the walk was skipped"

    # Orders changed (or added) during the walk come in the next walk, which starts at NextUpdatedSince.
    follow_up: list[dict[str, Any]] = []
    result = await page({"Limit": 200, "UpdatedSince": next_updated_since})
    follow_up += result["Orders"]
    assert result["NextCursor"] is None
    follow_ids = {o["ServiceOrderID"] for o in follow_up}
    assert changed <= follow_ids
    assert set(inserted) <= {o["MarketplaceOrderId"] for o in follow_up}
    assert set(everything) <= set(seen) | follow_ids


async def test_equal_last_changed_times_are_ordered_by_id(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Orders ingested in one batch share a last-changed time: the id breaks the tie, so paging is exact."""
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    await ingest(rt, tenant.marketplace("P1"), *[pulled_order() for _ in range(7)])
    seen: list[str] = []
    body: dict[str, Any] = {"Limit": 2}
    while True:
        response = await api.post("/api/orders/List", json=body, headers=tenant.headers)
        result = response.json()
        seen += [o["ServiceOrderID"] for o in result["Orders"]]
        if not result["NextCursor"]:
            break
        body["Cursor"] = result["NextCursor"]
    assert len(seen) == 7 and len(set(seen)) == 7
    assert seen == sorted(seen)


async def test_a_cursor_issued_to_one_account_is_refused_for_another(rt: Runtime, api: httpx.AsyncClient) -> None:
    issued_to = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    other = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    for tenant in (issued_to, other):
        await ingest(rt, tenant.marketplace("P1"), *[pulled_order() for _ in range(3)])
    first = await api.post("/api/orders/List", json={"Limit": 1}, headers=issued_to.headers)
    cursor = first.json()["NextCursor"]
    assert cursor

    refused = await api.post("/api/orders/List", json={"Limit": 1, "Cursor": cursor}, headers=other.headers)
    accepted = await api.post("/api/orders/List", json={"Limit": 1, "Cursor": cursor}, headers=issued_to.headers)

    assert refused.status_code == 400
    assert problem(refused)["errors"] == {
        "Cursor": ["Not a cursor this service issued to this account; start a new walk without Cursor."]
    }
    assert accepted.status_code == 200
