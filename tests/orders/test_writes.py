"""Confirm, Cancel, Refund, Update: rules per item, all-or-nothing batches, write reach per platform."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx
import pytest

from marketsync.runtime import Runtime
from tests.orders.support import (
    ingest_one,
    item_ids,
    jobs_of,
    order_by_marketplace_id,
    post,
    pulled_item,
    tenant_with,
)
from tests.support.factories import problem


async def test_confirm_ships_records_the_shipment_and_queues_write_back(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await tenant_with(rt, api, "P1")
    order = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))
    [item_id] = item_ids(order)
    response = await post(
        api,
        tenant,
        "Confirm",
        {
            "OrderItems": [
                {
                    "OrderItemId": item_id,
                    "ShipDate": "2026-01-02T10:00:00Z",
                    "CarrierCode": "RM",
                    "CarrierName": "Royal Mail",
                    "ServiceLevel": "Tracked48",
                    "TrackingNumber": "TRK123",
                }
            ]
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["RequestId"] == response.headers["x-request-id"]
    assert body["Warnings"] == []
    assert body["Items"] == [{"OrderItemId": item_id, "ServiceOrderID": order["ServiceOrderID"], "Status": "Shipped"}]
    [job] = await jobs_of(rt, tenant.account_id)
    assert body["JobIds"] == [job.id]
    assert job.type == "OrderWriteBack"
    assert job.payload["MarketplaceId"] == tenant.marketplace("P1").id
    [line] = job.payload["Lines"]
    assert (line["Reference"], line["Action"], line["Details"]["TrackingNumber"]) == (item_id, "Confirm", "TRK123")

    after = await order_by_marketplace_id(api, tenant.headers, order["MarketplaceOrderId"])
    assert after["Status"] == "Shipped"
    assert after["Items"][0]["ShippedQuantity"] == 2
    [shipment] = after["Shipments"]
    assert shipment == {
        "ShipmentId": shipment["ShipmentId"],
        "OrderItemId": item_id,
        "Quantity": 2,
        "ShipDate": "2026-01-02T10:00:00.000Z",
        "CarrierCode": "RM",
        "CarrierName": "Royal Mail",
        "ServiceLevel": "Tracked48",
        "TrackingNumber": "TRK123",
    }
    assert after["LastModifiedDate"] > order["LastModifiedDate"]


@pytest.mark.parametrize("platform", ["P1", "P2", "P3", "P4"])
async def test_write_reach_per_platform(rt: Runtime, api: httpx.AsyncClient, platform: str) -> None:
    """Spec section 1: only P1 receives Confirm/Cancel/Refund; elsewhere it is stored and Warnings names it."""
    tenant = await tenant_with(rt, api, platform)
    connection = tenant.marketplace(platform)
    orders = [
        await ingest_one(rt, api, tenant.headers, connection, items=[pulled_item(quantity=2)], currency="EUR")
        for _ in range(3)
    ]
    writes = [
        ("Confirm", {"OrderItems": [{"OrderItemId": item_ids(orders[0])[0], "TrackingNumber": "T1"}]}),
        ("Cancel", {"CancelReason": "OutOfStock", "OrderItems": [{"OrderItemId": item_ids(orders[1])[0]}]}),
        (
            "Refund",
            {
                "Reason": "Goodwill",
                "Currency": "EUR",
                "OrderItems": [{"OrderItemId": item_ids(orders[2])[0], "Amount": 5}],
            },
        ),
    ]
    for path, body in writes:
        response = await post(api, tenant, path, body)
        assert response.status_code == 200, response.text
        result = response.json()
        if platform == "P1":
            assert result["Warnings"] == [] and len(result["JobIds"]) == 1, result
        else:
            assert result["JobIds"] == []
            [warning] = result["Warnings"]
            assert platform in warning
    jobs = await jobs_of(rt, tenant.account_id)
    assert len(jobs) == (3 if platform == "P1" else 0)
    # Stored locally either way.
    statuses = [(await order_by_marketplace_id(api, tenant.headers, o["MarketplaceOrderId"]))["Status"] for o in orders]
    assert statuses == ["Shipped", "Cancelled", "Unshipped"]


async def test_one_bad_item_leaves_the_whole_batch_unapplied(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await tenant_with(rt, api, "P1")
    good = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))
    good2 = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))
    cancelled = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"), status="Cancelled")
    batch = {
        "OrderItems": [
            {"OrderItemId": item_ids(good)[0], "TrackingNumber": "A"},
            {"OrderItemId": item_ids(good2)[0], "TrackingNumber": "B"},
            {"OrderItemId": item_ids(cancelled)[0], "TrackingNumber": "C"},
        ]
    }
    response = await post(api, tenant, "Confirm", batch)
    assert response.status_code == 400
    errors = problem(response)["errors"]
    assert list(errors) == ["OrderItems[2].OrderItemId"]
    assert "Cancelled" in errors["OrderItems[2].OrderItemId"][0]
    for order in (good, good2):
        now = await order_by_marketplace_id(api, tenant.headers, order["MarketplaceOrderId"])
        assert now["Status"] == "Unshipped" and now["Shipments"] == []
        assert now["LastModifiedDate"] == order["LastModifiedDate"]
    assert await jobs_of(rt, tenant.account_id) == []


async def test_unknown_repeated_and_foreign_items_are_named(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await tenant_with(rt, api, "P1")
    stranger = await tenant_with(rt, api, "P1")
    mine = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))
    theirs = await ingest_one(rt, api, stranger.headers, stranger.marketplace("P1"))
    [mine_id], [theirs_id] = item_ids(mine), item_ids(theirs)
    response = await post(
        api,
        tenant,
        "Confirm",
        {"OrderItems": [{"OrderItemId": i, "TrackingNumber": "T1"} for i in (mine_id, theirs_id, mine_id)]},
    )
    assert response.status_code == 400
    errors = problem(response)["errors"]
    assert set(errors) == {"OrderItems[1].OrderItemId", "OrderItems[2].OrderItemId"}
    missing = await post(api, tenant, "Confirm", {"OrderItems": []})
    assert missing.status_code == 400 and "OrderItems" in problem(missing)["errors"]


async def test_nonsensical_transitions_are_refused_with_a_clear_message(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await tenant_with(rt, api, "P1")
    conn = tenant.marketplace("P1")
    shipped = await ingest_one(rt, api, tenant.headers, conn, status="Shipped")
    pending = await ingest_one(rt, api, tenant.headers, conn, status="Pending")
    open_order = await ingest_one(rt, api, tenant.headers, conn, items=[pulled_item(quantity=3, unit_price="10.00")])
    [shipped_id], [pending_id], [open_id] = item_ids(shipped), item_ids(pending), item_ids(open_order)

    cases: list[tuple[str, dict[str, Any], str, str]] = [
        (
            "Cancel",
            {"CancelReason": "OutOfStock", "OrderItems": [{"OrderItemId": shipped_id}]},
            "OrderItems[0].OrderItemId",
            "shipped item cannot be cancelled",
        ),
        ("Confirm", {"OrderItems": [{"OrderItemId": shipped_id}]}, "OrderItems[0].OrderItemId", "already Shipped"),
        ("Confirm", {"OrderItems": [{"OrderItemId": pending_id}]}, "OrderItems[0].OrderItemId", "Pending"),
        (
            "Refund",
            {"Reason": "Goodwill", "Currency": "GBP", "OrderItems": [{"OrderItemId": pending_id, "Amount": 1}]},
            "OrderItems[0].Amount",
            "nothing has been paid",
        ),
        (
            "Cancel",
            {"CancelReason": "OutOfStock", "OrderItems": [{"OrderItemId": open_id, "Quantity": 4}]},
            "OrderItems[0].Quantity",
            "Only 3 unshipped",
        ),
        (
            "Refund",
            {"Reason": "Goodwill", "Currency": "GBP", "OrderItems": [{"OrderItemId": open_id, "Amount": 30.01}]},
            "OrderItems[0].Amount",
            "exceeds the 30.00 still refundable",
        ),
        (
            "Refund",
            {
                "Reason": "CustomerReturn",
                "Currency": "GBP",
                "OrderItems": [{"OrderItemId": open_id, "Amount": 25, "Quantity": 2}],
            },
            "OrderItems[0].Amount",
            "exceeds the price of the 2 unit(s)",
        ),
        (
            "Refund",
            {"Reason": "Goodwill", "Currency": "EUR", "OrderItems": [{"OrderItemId": open_id, "Amount": 1}]},
            "Currency",
            "order's currency",
        ),
        (
            "Refund",
            {"Reason": "BecauseISaidSo", "Currency": "GBP", "OrderItems": [{"OrderItemId": open_id, "Amount": 1}]},
            "Reason",
            "",
        ),
        (
            "Refund",
            {"Reason": "Goodwill", "Currency": "GBP", "OrderItems": [{"OrderItemId": open_id, "Amount": 0}]},
            "OrderItems[0].Amount",
            "",
        ),
        (
            "Refund",
            {"Reason": "Goodwill", "Currency": "GBP", "OrderItems": [{"OrderItemId": open_id, "Amount": 1.001}]},
            "OrderItems[0].Amount",
            "",
        ),
        ("Cancel", {"OrderItems": [{"OrderItemId": open_id}]}, "CancelReason", "Required"),
        ("Cancel", {"CancelReason": "Bored", "OrderItems": [{"OrderItemId": open_id}]}, "CancelReason", ""),
    ]
    for path, body, key, text in cases:
        response = await post(api, tenant, path, body)
        assert response.status_code == 400, (path, body, response.text)
        errors = problem(response)["errors"]
        assert key in errors, (path, body, errors)
        assert text in " ".join(errors[key]), (path, body, errors)

    # Cancel then confirm a cancelled item; refund beyond what remains after a partial refund.
    assert (
        await post(
            api,
            tenant,
            "Cancel",
            {"CancelReason": "OutOfStock", "OrderItems": [{"OrderItemId": open_id, "Quantity": 1}]},
        )
    ).status_code == 200
    partly = await order_by_marketplace_id(api, tenant.headers, open_order["MarketplaceOrderId"])
    assert partly["Items"][0]["CancelledQuantity"] == 1 and partly["Items"][0]["CancelReason"] == "OutOfStock"
    assert (
        await post(api, tenant, "Cancel", {"CancelReason": "OutOfStock", "OrderItems": [{"OrderItemId": open_id}]})
    ).status_code == 200
    refused = await post(api, tenant, "Confirm", {"OrderItems": [{"OrderItemId": open_id}]})
    assert refused.status_code == 400 and "cancelled item cannot be confirmed" in refused.text
    cancelled_order = await order_by_marketplace_id(api, tenant.headers, open_order["MarketplaceOrderId"])
    assert cancelled_order["Status"] == "Cancelled"


async def test_refunds_accumulate_up_to_what_was_paid(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await tenant_with(rt, api, "P1")
    order = await ingest_one(
        rt,
        api,
        tenant.headers,
        tenant.marketplace("P1"),
        items=[pulled_item(quantity=2, unit_price="10.00"), pulled_item(quantity=1, unit_price="4.50")],
    )
    first_id, second_id = item_ids(order)
    response = await post(
        api,
        tenant,
        "Refund",
        {
            "Reason": "CustomerReturn",
            "Currency": "GBP",
            "OrderItems": [{"OrderItemId": first_id, "Amount": 10.00, "Quantity": 1}],
        },
    )
    assert response.status_code == 200, response.text
    [refund] = response.json()["Refunds"]
    assert refund["ServiceOrderID"] == order["ServiceOrderID"] and Decimal(str(refund["Amount"])) == Decimal("10")

    full = await post(
        api,
        tenant,
        "Refund",
        {
            "Reason": "ItemDamaged",
            "Currency": "GBP",
            "OrderItems": [{"OrderItemId": first_id, "Amount": 10.00}, {"OrderItemId": second_id, "Amount": 4.50}],
        },
    )
    assert full.status_code == 200, full.text
    after = await order_by_marketplace_id(api, tenant.headers, order["MarketplaceOrderId"])
    assert after["Status"] == "Refunded"
    assert Decimal(str(after["RefundedTotal"])) == Decimal("24.50")
    assert [(i["Status"], i["RefundedQuantity"]) for i in after["Items"]] == [("Refunded", 1), ("Refunded", 0)]
    assert [r["Reason"] for r in after["Refunds"]] == ["CustomerReturn", "ItemDamaged"]
    assert [len(r["Items"]) for r in after["Refunds"]] == [1, 2]

    over = await post(
        api,
        tenant,
        "Refund",
        {"Reason": "Goodwill", "Currency": "GBP", "OrderItems": [{"OrderItemId": second_id, "Amount": 0.01}]},
    )
    assert over.status_code == 400 and "OrderItems[0].Amount" in problem(over)["errors"]


async def test_update_attaches_the_external_reference_locally(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await tenant_with(rt, api, "P1")
    stranger = await tenant_with(rt, api, "P1")
    order = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))
    body = {"ServiceOrderID": order["ServiceOrderID"], "ExternalReference": "ERP-42"}
    response = await post(api, tenant, "Update", body)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "RequestId": response.headers["x-request-id"],
        "Warnings": [],
        "ServiceOrderID": order["ServiceOrderID"],
        "ExternalReference": "ERP-42",
    }
    after = await order_by_marketplace_id(api, tenant.headers, order["MarketplaceOrderId"])
    assert after["ExternalReference"] == "ERP-42"
    assert after["LastModifiedDate"] > order["LastModifiedDate"]
    assert await jobs_of(rt, tenant.account_id) == []  # nothing is sent anywhere

    # The same reference again is not a change: the last-changed time stays.
    await post(api, tenant, "Update", body)
    again = await order_by_marketplace_id(api, tenant.headers, order["MarketplaceOrderId"])
    assert again["LastModifiedDate"] == after["LastModifiedDate"]

    cleared = await post(api, tenant, "Update", {"ServiceOrderID": order["ServiceOrderID"], "ExternalReference": None})
    assert cleared.json()["ExternalReference"] is None
    foreign = await post(api, stranger, "Update", body)
    assert foreign.status_code == 404 and problem(foreign)["code"] == "not-found"
    missing_field = await post(api, tenant, "Update", {"ServiceOrderID": order["ServiceOrderID"]})
    assert missing_field.status_code == 400 and "ExternalReference" in problem(missing_field)["errors"]


async def test_a_null_refund_quantity_is_the_omitted_quantity(rt: Runtime, api: httpx.AsyncClient) -> None:
    # Optional request fields read null as omitted (spec §4), as CancelItem's Quantity already did: a money-only
    # refund, Quantity 0.
    tenant = await tenant_with(rt, api, "P1")
    order = await ingest_one(
        rt, api, tenant.headers, tenant.marketplace("P1"), items=[pulled_item(quantity=2, unit_price="10.00")]
    )
    [item_id] = item_ids(order)
    body = {"OrderItemId": item_id, "Amount": 2.50, "Quantity": None}
    response = await post(api, tenant, "Refund", {"Reason": "Goodwill", "Currency": "GBP", "OrderItems": [body]})
    assert response.status_code == 200, response.text
    after = await order_by_marketplace_id(api, tenant.headers, order["MarketplaceOrderId"])
    assert after["Items"][0]["RefundedQuantity"] == 0 and after["Refunds"][0]["Items"][0]["Quantity"] == 0
