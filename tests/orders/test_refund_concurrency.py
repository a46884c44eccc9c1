"""Refunds under concurrency: never more than was paid; an Idempotency-Key makes a retry refund once."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import httpx

from marketsync.runtime import Runtime
from tests.orders.support import ingest_one, order_by_marketplace_id, pulled_item
from tests.support.factories import make_tenant, problem

CONCURRENT = 20


async def test_twenty_concurrent_refunds_never_exceed_what_was_paid(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    order = await ingest_one(
        rt, api, tenant.headers, tenant.marketplace("P1"), items=[pulled_item(quantity=2, unit_price="25.00")]
    )
    item_id = order["Items"][0]["OrderItemId"]
    body = {"Reason": "Goodwill", "Currency": "GBP", "OrderItems": [{"OrderItemId": item_id, "Amount": 7.00}]}

    responses = await asyncio.gather(
        *[api.post("/api/orders/Refund", json=body, headers=tenant.headers) for _ in range(CONCURRENT)]
    )
    statuses = sorted(r.status_code for r in responses)
    # 50.00 paid: seven refunds of 7.00 fit (49.00), the eighth would exceed it.
    assert statuses == [200] * 7 + [400] * 13, [r.text for r in responses if r.status_code not in (200, 400)]
    for refused in (r for r in responses if r.status_code == 400):
        assert "OrderItems[0].Amount" in problem(refused)["errors"]
    after = await order_by_marketplace_id(api, tenant.headers, order["MarketplaceOrderId"])
    assert Decimal(str(after["RefundedTotal"])) == Decimal("49.00")
    assert len(after["Refunds"]) == 7


async def test_twenty_concurrent_identical_refunds_with_one_key_refund_once(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    order = await ingest_one(
        rt, api, tenant.headers, tenant.marketplace("P1"), items=[pulled_item(quantity=1, unit_price="30.00")]
    )
    item_id = order["Items"][0]["OrderItemId"]
    body = {"Reason": "ItemDamaged", "Currency": "GBP", "OrderItems": [{"OrderItemId": item_id, "Amount": 12.50}]}
    headers = {**tenant.headers, "Idempotency-Key": "refund-7f3a"}

    responses = await asyncio.gather(
        *[api.post("/api/orders/Refund", json=body, headers=headers) for _ in range(CONCURRENT)]
    )
    # Each duplicate either waits its turn and gets the stored answer (200) or is told the first is still
    # running (409 idempotency-in-flight); none performs a second refund.
    assert {r.status_code for r in responses} <= {200, 409}, [r.text for r in responses]
    ok = [r for r in responses if r.status_code == 200]
    assert ok
    assert len({r.json()["Refunds"][0]["RefundId"] for r in ok}) == 1
    retry = await api.post("/api/orders/Refund", json=body, headers=headers)
    assert retry.status_code == 200
    assert retry.headers.get("idempotent-replayed") == "true"
    assert retry.json() == ok[0].json()

    after = await order_by_marketplace_id(api, tenant.headers, order["MarketplaceOrderId"])
    assert Decimal(str(after["RefundedTotal"])) == Decimal("12.50")
    assert len(after["Refunds"]) == 1

    # The same key with another body is refused, not applied.
    other = {**body, "OrderItems": [{"OrderItemId": item_id, "Amount": 1.00}]}
    mismatch = await api.post("/api/orders/Refund", json=other, headers=headers)
    assert mismatch.status_code == 422
    after = await order_by_marketplace_id(api, tenant.headers, order["MarketplaceOrderId"])
    assert Decimal(str(after["RefundedTotal"])) == Decimal("12.50")
