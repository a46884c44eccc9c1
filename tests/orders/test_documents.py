"""Stored order documents (docs/decisions/0066-order-documents.md).

Every change stores the order's wire JSON (the autouse check in conftest.py proves it after every orders test);
these tests cover orders whose document is missing (an upgraded database) or from an older renderer: reads
render them from their rows, byte for byte what a current document gives, and the schedule stores them.
"""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest
import sqlalchemy as sa

from marketsync.kit.clock import FrozenClock
from marketsync.models.base import UTCDateTime
from marketsync.orders import schemas, service, tasks
from marketsync.runtime import Runtime
from tests.orders.support import assert_documents_current, ingest, pulled_item, pulled_order, stored_documents
from tests.support.factories import make_tenant

LIST_WITH_CUSTOMER = {"Limit": 200, "IncludeCustomerData": True}


async def service_store(rt: Runtime, order_ids: list[str]) -> None:
    async with rt.db.transaction() as session:
        await service.store_documents(session, order_ids)


@pytest.fixture
def clock() -> FrozenClock:
    # Frozen: NextUpdatedSince follows the clock, and responses are compared byte for byte.
    return FrozenClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))


async def _responses(api: httpx.AsyncClient, headers: dict[str, str], order_ids: list[str]) -> list[bytes]:
    """The raw bytes of List (with and without customer data) and of GET for each order."""
    bodies = []
    for body in ({}, LIST_WITH_CUSTOMER):
        listed = await api.post("/api/orders/List", json=body, headers=headers)
        assert listed.status_code == 200, listed.text
        bodies.append(listed.content)
    for order_id in order_ids:
        for customer in ("false", "true"):
            got = await api.get(f"/api/orders/{order_id}", params={"includeCustomerData": customer}, headers=headers)
            assert got.status_code == 200, got.text
            bodies.append(got.content)
    return bodies


async def test_orders_without_a_current_document_read_the_same_and_the_schedule_stores_them(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    await ingest(rt, tenant.marketplace("P1"), *(pulled_order(items=[pulled_item(), pulled_item()]) for _ in range(3)))
    orders = (await api.post("/api/orders/List", json={}, headers=tenant.headers)).json()["Orders"]
    shipped, refunded = orders[0]["Items"][0]["OrderItemId"], orders[1]["Items"][1]["OrderItemId"]
    confirm = {"OrderItems": [{"OrderItemId": shipped, "TrackingNumber": "TRK-1", "CarrierCode": "RM"}]}
    refund = {"Reason": "CustomerReturn", "Currency": "GBP", "OrderItems": [{"OrderItemId": refunded, "Amount": 4.5}]}
    for operation, body in (("Confirm", confirm), ("Refund", refund)):
        response = await api.post(f"/api/orders/{operation}", json=body, headers=tenant.headers)
        assert response.status_code == 200, response.text
    order_ids = [order["ServiceOrderID"] for order in orders]
    clock.advance(seconds=1)  # a walk's high-water mark is the clock: past the writes' stamps
    current = await _responses(api, tenant.headers, order_ids)
    assert b'"TrackingNumber":"TRK-1"' in current[0] and b'"Reason":"CustomerReturn"' in current[0]

    # An upgraded database (no document yet) and a document written by an older renderer.
    async with rt.db.transaction() as session:
        await session.execute(
            sa.text(
                "UPDATE orders SET document = NULL, customer_document = NULL, document_version = 0 WHERE id <> :id"
            ),
            {"id": order_ids[2]},
        )
        await session.execute(
            sa.text("UPDATE orders SET document = :old, document_version = :version WHERE id = :id"),
            {"old": b'{"Old":true}', "version": schemas.DOCUMENT_VERSION - 1, "id": order_ids[2]},
        )
    assert await _responses(api, tenant.headers, order_ids) == current
    assert all(version != schemas.DOCUMENT_VERSION for _, _, version, _ in (await stored_documents(rt)).values())

    await tasks.refresh_documents(rt)
    await assert_documents_current(rt)
    assert await _responses(api, tenant.headers, order_ids) == current


async def test_a_document_without_customer_data_holds_none_of_it(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P2", "DE"),))
    await ingest(rt, tenant.marketplace("P2"), pulled_order(buyer_name="Grace Hopper-Customer"))
    ((document, customer, _version, _stamped),) = (await stored_documents(rt)).values()
    assert document is not None and customer is not None
    assert b"Grace Hopper-Customer" not in document and b"Customer" not in document
    assert b"Grace Hopper-Customer" in customer


async def test_a_change_that_stored_no_document_is_shown_from_the_rows(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    """E.g. a process still running code from before stored documents, during a rolling upgrade."""
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    await ingest(rt, tenant.marketplace("P1"), pulled_order())
    async with rt.db.transaction() as session:
        order_id = (await session.execute(sa.text("SELECT id FROM orders"))).scalar_one()
        # Bound through the column's own type: sqlite3's default datetime adapter is deprecated (Python 3.12).
        statement = sa.text("UPDATE orders SET external_reference = 'ERP-42', updated_at = :at WHERE id = :id")
        await session.execute(
            statement.bindparams(sa.bindparam("at", type_=UTCDateTime())),
            {"at": datetime(2026, 3, 1, 9, 0, 0, 5000, tzinfo=UTC), "id": order_id},
        )
    clock.advance(seconds=1)
    listed = (await api.post("/api/orders/List", json={}, headers=tenant.headers)).json()["Orders"]
    got = (await api.get(f"/api/orders/{order_id}", headers=tenant.headers)).json()
    assert listed[0]["ExternalReference"] == got["ExternalReference"] == "ERP-42"
    assert listed[0]["LastModifiedDate"] == got["LastModifiedDate"] == "2026-03-01T09:00:00.005Z"
    await service_store(rt, [order_id])  # what the next change (or a re-render) does; the autouse check follows
