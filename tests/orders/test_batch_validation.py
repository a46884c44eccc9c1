"""One 400 names every bad field of a write batch (spec section 7), and the whole batch is validated before
anything is applied (spec section 4), including what the marketplace that receives the change would refuse."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from marketsync.kit.clock import iso
from marketsync.models import IdempotencyRecord
from marketsync.runtime import Runtime
from tests.orders.support import ingest_one, item_ids, jobs_of, order_by_marketplace_id, post, tenant_with
from tests.support.factories import Tenant, problem


async def assert_untouched(api: httpx.AsyncClient, tenant: Tenant, *orders: dict[str, Any]) -> None:
    for order in orders:
        now = await order_by_marketplace_id(api, tenant.headers, order["MarketplaceOrderId"])
        assert now == order


async def test_confirm_names_shape_and_existence_errors_together(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await tenant_with(rt, api, "P1")
    order = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))
    [item_id] = item_ids(order)
    response = await post(
        api,
        tenant,
        "Confirm",
        {
            "OrderItems": [
                {"OrderItemId": item_id, "TrackingNumber": "T1"},
                {"OrderItemId": "bogus"},
                {"OrderItemId": "bogus2", "ShipDate": "x"},
            ]
        },
    )
    assert response.status_code == 400
    errors = problem(response)["errors"]
    assert list(errors) == ["OrderItems[1].OrderItemId", "OrderItems[2].OrderItemId", "OrderItems[2].ShipDate"]
    assert errors["OrderItems[1].OrderItemId"] == ["No order item with this id."]
    await assert_untouched(api, tenant, order)
    assert await jobs_of(rt, tenant.account_id) == []


async def test_state_refusals_and_shape_errors_come_in_one_400(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await tenant_with(rt, api, "P1")
    cancelled = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"), status="Cancelled")
    good = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))
    response = await post(
        api,
        tenant,
        "Confirm",
        {
            "OrderItems": [
                {"OrderItemId": item_ids(cancelled)[0], "TrackingNumber": "T1"},
                {"OrderItemId": item_ids(good)[0], "TrackingNumber": "T2", "CarrierCode": "x" * 101, "Colour": 1},
            ]
        },
    )
    assert response.status_code == 400
    errors = problem(response)["errors"]
    assert set(errors) == {"OrderItems[0].OrderItemId", "OrderItems[1].CarrierCode", "OrderItems[1].Colour"}
    assert "cancelled item cannot be confirmed" in errors["OrderItems[0].OrderItemId"][0]
    await assert_untouched(api, tenant, cancelled, good)


async def test_cancel_names_the_missing_reason_and_the_unknown_item(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await tenant_with(rt, api, "P1")
    response = await post(api, tenant, "Cancel", {"OrderItems": [{"OrderItemId": "bogus"}]})
    assert response.status_code == 400
    assert problem(response)["errors"] == {
        "CancelReason": ["Required."],
        "OrderItems[0].OrderItemId": ["No order item with this id."],
    }
    # A bad Quantity still lets the item's state be checked.
    shipped = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"), status="Shipped")
    response = await post(
        api,
        tenant,
        "Cancel",
        {"CancelReason": "OutOfStock", "OrderItems": [{"OrderItemId": item_ids(shipped)[0], "Quantity": 0}]},
    )
    errors = problem(response)["errors"]
    assert set(errors) == {"OrderItems[0].Quantity", "OrderItems[0].OrderItemId"}
    assert "shipped item cannot be cancelled" in errors["OrderItems[0].OrderItemId"][0]


async def test_refund_names_every_bad_field_including_the_unknown_item(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await tenant_with(rt, api, "P1")
    response = await post(api, tenant, "Refund", {"OrderItems": [{"OrderItemId": "bogus", "Amount": -1}]})
    assert response.status_code == 400
    errors = problem(response)["errors"]
    assert set(errors) == {"Reason", "Currency", "OrderItems[0].Amount", "OrderItems[0].OrderItemId"}
    assert errors["OrderItems[0].OrderItemId"] == ["No order item with this id."]

    # A bad Reason does not hide an amount the item cannot take, nor a currency that is not the order's.
    order = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))  # 2 x 10.00 GBP
    [item_id] = item_ids(order)
    over = await post(
        api,
        tenant,
        "Refund",
        {"Reason": "Nope", "Currency": "GBP", "OrderItems": [{"OrderItemId": item_id, "Amount": 25}]},
    )
    errors = problem(over)["errors"]
    assert set(errors) == {"Reason", "OrderItems[0].Amount"}
    assert "exceeds the 20.00 still refundable" in errors["OrderItems[0].Amount"][0]
    wrong_currency = await post(
        api,
        tenant,
        "Refund",
        {"Reason": "Nope", "Currency": "EUR", "OrderItems": [{"OrderItemId": item_id, "Amount": 1}]},
    )
    assert set(problem(wrong_currency)["errors"]) == {"Reason", "Currency"}
    # A currency that is not the order's does not hide what is wrong with the item's amount and quantity.
    both = await post(
        api,
        tenant,
        "Refund",
        {"Reason": "Goodwill", "Currency": "EUR", "OrderItems": [{"OrderItemId": item_id, "Amount": 25}]},
    )
    errors = problem(both)["errors"]
    assert set(errors) == {"Currency", "OrderItems[0].Amount"}
    assert "in GBP" in errors["Currency"][0]
    assert "exceeds the 20.00 still refundable" in errors["OrderItems[0].Amount"][0]
    every = await post(
        api,
        tenant,
        "Refund",
        {
            "Reason": "Goodwill",
            "Currency": "EUR",
            "OrderItems": [{"OrderItemId": item_id, "Amount": 25, "Quantity": 3}],
        },
    )
    assert set(problem(every)["errors"]) == {"Currency", "OrderItems[0].Amount", "OrderItems[0].Quantity"}
    await assert_untouched(api, tenant, order)


async def test_a_refund_amount_in_quotes_is_refused(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Amounts are JSON numbers (as Quantity is a JSON integer): "5.00" is a string, named in the 400."""
    tenant = await tenant_with(rt, api, "P1")
    order = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))  # 2 x 10.00 GBP
    [item_id] = item_ids(order)
    for amount, quantity in (("5.00", 0), (True, 0), ("5.00", "1")):
        response = await post(
            api,
            tenant,
            "Refund",
            {
                "Reason": "CustomerReturn",
                "Currency": "GBP",
                "OrderItems": [{"OrderItemId": item_id, "Amount": amount, "Quantity": quantity}],
            },
        )
        assert response.status_code == 400, response.text
        errors = problem(response)["errors"]
        expected = {"OrderItems[0].Amount"} | ({"OrderItems[0].Quantity"} if quantity == "1" else set())
        assert set(errors) == expected, errors
        assert "JSON number" in errors["OrderItems[0].Amount"][0]
    await assert_untouched(api, tenant, order)
    accepted = await post(
        api,
        tenant,
        "Refund",
        {"Reason": "CustomerReturn", "Currency": "GBP", "OrderItems": [{"OrderItemId": item_id, "Amount": 5.00}]},
    )
    assert accepted.status_code == 200, accepted.text


async def test_update_names_a_bad_reference_and_an_unknown_order_together(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await tenant_with(rt, api, "P1")
    response = await post(api, tenant, "Update", {"ServiceOrderID": "bogus", "ExternalReference": "x" * 201})
    assert response.status_code == 400
    assert set(problem(response)["errors"]) == {"ServiceOrderID", "ExternalReference"}
    # Alone, an unknown order stays a 404.
    alone = await post(api, tenant, "Update", {"ServiceOrderID": "bogus", "ExternalReference": "ERP-1"})
    assert alone.status_code == 404


async def test_p1_confirm_needs_a_carrier_code_or_tracking_number_up_front(rt: Runtime, api: httpx.AsyncClient) -> None:
    """The P1 feed refuses a shipment without either; a kind without write-back stores it as sent."""
    tenant = await tenant_with(rt, api, "P1", "P2")
    p1 = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))
    p2 = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P2"))
    for details in ({}, {"CarrierName": "Royal Mail"}, {"ServiceLevel": "Tracked48"}):
        response = await post(api, tenant, "Confirm", {"OrderItems": [{"OrderItemId": item_ids(p1)[0], **details}]})
        assert response.status_code == 400, response.text
        [message] = problem(response)["errors"]["OrderItems[0].TrackingNumber"]
        assert "P1 UK" in message and "CarrierCode" in message
    await assert_untouched(api, tenant, p1)
    assert await jobs_of(rt, tenant.account_id) == []

    stored_only = await post(api, tenant, "Confirm", {"OrderItems": [{"OrderItemId": item_ids(p2)[0]}]})
    assert stored_only.status_code == 200, stored_only.text
    for details in ({"CarrierCode": "RM"}, {"TrackingNumber": "T1"}):
        again = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))
        ok = await post(api, tenant, "Confirm", {"OrderItems": [{"OrderItemId": item_ids(again)[0], **details}]})
        assert ok.status_code == 200, ok.text


async def test_ship_date_in_the_future_or_before_the_purchase_is_refused(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await tenant_with(rt, api, "P2")
    order = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P2"))  # purchased 2026-01-01T11:00Z
    other = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P2"))
    now = rt.clock.now()
    response = await post(
        api,
        tenant,
        "Confirm",
        {
            "OrderItems": [
                {"OrderItemId": item_ids(order)[0], "ShipDate": iso(now + timedelta(days=2))},
                {"OrderItemId": item_ids(other)[0], "ShipDate": "2026-01-01T10:59:59Z"},
            ]
        },
    )
    assert response.status_code == 400
    errors = problem(response)["errors"]
    assert set(errors) == {"OrderItems[0].ShipDate", "OrderItems[1].ShipDate"}
    assert "future" in errors["OrderItems[0].ShipDate"][0]
    assert "2026-01-01T11:00:00.000Z" in errors["OrderItems[1].ShipDate"][0]
    await assert_untouched(api, tenant, order, other)

    edges = await post(
        api,
        tenant,
        "Confirm",
        {
            "OrderItems": [
                {"OrderItemId": item_ids(order)[0], "ShipDate": iso(now + timedelta(hours=23))},
                {"OrderItemId": item_ids(other)[0], "ShipDate": "2026-01-01T11:00:00Z"},
            ]
        },
    )
    assert edges.status_code == 200, edges.text


@pytest.mark.parametrize("key", ["", "k" * 256])
async def test_a_bad_idempotency_key_is_named_beside_every_bad_field(
    rt: Runtime, api: httpx.AsyncClient, key: str
) -> None:
    """A bad Idempotency-Key used to be the only field named (the key was read first); it is one more bad field of
    the request now, and nothing is applied (docs/decisions/0344)."""
    tenant = await tenant_with(rt, api, "P1")
    order = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))  # 2 x 10.00 GBP
    [item_id] = item_ids(order)
    headers = {"Idempotency-Key": key}
    bad = await post(
        api, tenant, "Refund", {"Reason": "Nope", "OrderItems": [{"OrderItemId": "bogus", "Amount": -1}]}, **headers
    )
    assert bad.status_code == 400, bad.text
    errors = problem(bad)["errors"]
    assert set(errors) == {
        "Idempotency-Key",
        "Reason",
        "Currency",
        "OrderItems[0].Amount",
        "OrderItems[0].OrderItemId",
    }
    assert errors["Idempotency-Key"] == ["Must be 1 to 255 printable characters."]
    # A state refusal of a well-formed body is named too.
    over = await post(
        api,
        tenant,
        "Refund",
        {"Reason": "Goodwill", "Currency": "GBP", "OrderItems": [{"OrderItemId": item_id, "Amount": 25}]},
        **headers,
    )
    assert set(problem(over)["errors"]) == {"Idempotency-Key", "OrderItems[0].Amount"}
    # A body with nothing wrong: the key alone, and the refund is not applied.
    fine = await post(
        api,
        tenant,
        "Refund",
        {"Reason": "Goodwill", "Currency": "GBP", "OrderItems": [{"OrderItemId": item_id, "Amount": 5}]},
        **headers,
    )
    assert fine.status_code == 400 and set(problem(fine)["errors"]) == {"Idempotency-Key"}
    # Update: the unknown order (a 404 alone) is named beside the key.
    update = await post(api, tenant, "Update", {"ServiceOrderID": "bogus", "ExternalReference": "ERP-1"}, **headers)
    assert update.status_code == 400 and set(problem(update)["errors"]) == {"Idempotency-Key", "ServiceOrderID"}
    confirm = await post(api, tenant, "Confirm", {"OrderItems": [{"OrderItemId": item_id}]}, **headers)
    assert set(problem(confirm)["errors"]) == {"Idempotency-Key", "OrderItems[0].TrackingNumber"}
    await assert_untouched(api, tenant, order)
    assert await jobs_of(rt, tenant.account_id) == []
    async with rt.db.read() as session:
        assert (await session.execute(select(func.count()).select_from(IdempotencyRecord))).scalar_one() == 0
