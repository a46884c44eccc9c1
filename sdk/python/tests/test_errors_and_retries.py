"""Problem details as typed exceptions; retries only where they are safe; a retried refund refunds once."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import httpx
import pytest
from marketsync_client import (
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
    ServerError,
    TokenError,
    TransportError,
    UnprocessableEntity,
)
from marketsync_client import models as m
from pydantic import ValidationError

from marketsync.runtime import Runtime
from tests.inventory.support import add_products
from tests.orders.support import ingest, pulled_item, pulled_order
from tests.support.factories import make_tenant
from tests.support.sdk import Seen, sdk

REFUND = "/api/orders/Refund"


async def test_problems_are_typed_exceptions_with_fields_and_request_id(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("Dup-1", "1.00", 1), ("DUP-1", "1.00", 1), ("OK-1", "1.00", 1)])
    async with sdk(api, tenant) as client:
        with pytest.raises(NotFound) as missing:
            await client.get_order("no-such-order")
        assert (missing.value.status, missing.value.code) == (404, "not-found")
        assert missing.value.request_id and missing.value.type == "urn:service:error:not-found"

        with pytest.raises(BadRequest) as invalid:
            await client.push_price_quantity([{"Sku": "OK-1", "Price": Decimal("-1")}, {"Sku": "OK-1", "Quantity": -2}])
        assert invalid.value.code == "validation-failed"
        # One 400 names every bad field.
        assert set(invalid.value.errors) == {"Items[0].Price", "Items[1].Quantity"}
        assert all(isinstance(message, str) for messages in invalid.value.errors.values() for message in messages)
        assert "Items[0].Price" in str(invalid.value) and invalid.value.request_id in str(invalid.value)

        with pytest.raises(Conflict) as ambiguous:
            await client.get_product("dup-1")
        assert ambiguous.value.code == "conflict"


async def test_scopes_are_what_the_caller_asks_for(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    async with sdk(api, tenant, scopes=["OrdersRead"]) as narrow:
        token = await narrow.fetch_token()
        assert token.scope == "OrdersRead"
        assert (await narrow.list_orders()).Orders == []
        with pytest.raises(Forbidden) as refused:
            await narrow.list_products()
        assert (refused.value.status, refused.value.code) == (403, "insufficient-scope")
    async with sdk(api, tenant, scopes=["OrdersRead", "Bogus"]) as bogus:
        with pytest.raises(TokenError) as invalid_scope:
            await bogus.list_orders()
        assert (invalid_scope.value.status, invalid_scope.value.error) == (400, "invalid_scope")


async def test_a_wrong_secret_is_a_token_error_and_is_not_retried(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    seen = Seen()
    async with sdk(api, tenant, seen=seen, client_secret="wrong") as client:
        with pytest.raises(TokenError) as refused:
            await client.list_marketplaces()
    assert (refused.value.status, refused.value.error) == (401, "invalid_client")
    assert len(seen.paths("/connect/token")) == 1 and not seen.paths("/api/marketplaces")


async def test_requests_are_checked_before_sending(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    seen = Seen()
    async with sdk(api, tenant, seen=seen) as client:
        with pytest.raises(ValidationError, match="timezone"):
            await client.list_orders(updated_since=datetime(2026, 1, 1))  # naive: which zone would it be?
        with pytest.raises(ValidationError, match="Extra inputs"):
            await client.push_price_quantity([{"Sku": "A", "price": 1}])  # field names are case-exact
        with pytest.raises(ValidationError):
            await client.cancel_orders("Changed my mind", [{"OrderItemId": "x"}])  # type: ignore[arg-type]
    assert seen.requests == []


async def test_a_refund_whose_answer_was_lost_is_retried_with_its_key_and_refunds_once(
    rt: Runtime, api: httpx.AsyncClient, flavour: str
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    pulled = pulled_order(items=[pulled_item(quantity=1, unit_price="30.00")])
    await ingest(rt, tenant.marketplace("P1"), pulled)
    seen = Seen()
    # The first Refund is applied by the service, then the connection drops before the answer arrives.
    async with sdk(api, tenant, flavour, seen=seen, faults={REFUND: ["lose"]}) as client:
        [order] = (await client.list_orders()).Orders
        item_id = order.Items[0].OrderItemId
        result = await client.refund_orders("ItemDamaged", "GBP", [{"OrderItemId": item_id, "Amount": "12.50"}])
        after = await client.get_order(order.ServiceOrderID)

    first, second = seen.paths(REFUND)
    key = first.headers["idempotency-key"]
    assert key and second.headers["idempotency-key"] == key  # generated once, sent with every try
    assert [status for path, status, _ in seen.statuses if path == REFUND] == [200, 200]
    assert result.Refunds[0].Amount == Decimal("12.50")
    assert after.RefundedTotal == Decimal("12.50") and len(after.Refunds) == 1  # refunded once
    assert after.Refunds[0].RefundId == result.Refunds[0].RefundId


async def test_unkeyed_writes_are_not_repeated_once_sent(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("P-1", "1.00", 1)])
    seen = Seen()
    push = "/api/inventory/price-quantity"
    async with sdk(api, tenant, seen=seen, faults={push: ["lose", "connect"]}) as client:
        # Sent and applied, answer lost: the push is not keyed, so it is not repeated.
        with pytest.raises(TransportError):
            await client.push_price_quantity([{"Sku": "P-1", "Quantity": 2}])
        assert len(seen.paths(push)) == 1
        # Refused before sending: repeated (nothing can have been applied)...
        again = await client.push_price_quantity([{"Sku": "P-1", "Quantity": 2}])
        assert len(seen.paths(push)) == 3 and again.Unchanged == 1  # the lost one had been applied
        # ...but a 503 on an unkeyed write is raised, not repeated.
    async with sdk(api, tenant, seen=seen, faults={push: ["503"]}) as client:
        with pytest.raises(ServerError) as unavailable:
            await client.push_price_quantity([{"Sku": "P-1", "Quantity": 3}])
        assert unavailable.value.status == 503 and unavailable.value.code == "http-503"
    assert len(seen.paths(push)) == 4


async def test_reads_and_keyed_writes_are_retried_through_503_and_connection_failures(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("P-1", "1.00", 1)])
    seen = Seen()
    products = "/api/products/List"
    marketplaces = "/api/marketplaces"
    async with sdk(
        api, tenant, seen=seen, faults={products: ["503", "lose", "connect"], marketplaces: ["503"] * 5}
    ) as client:
        page = await client.list_products()
        assert page.TotalCount == 1 and len(seen.paths(products)) == 4
        # Retries are bounded: five attempts, then the last answer is raised.
        with pytest.raises(ServerError) as exhausted:
            await client.list_marketplaces()
        assert exhausted.value.status == 503 and len(seen.paths(marketplaces)) == 5


async def test_keys_reused_with_another_body_and_replayed_creates(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    pulled = pulled_order(items=[pulled_item(quantity=1, unit_price="30.00")])
    await ingest(rt, tenant.marketplace("P1"), pulled)
    async with sdk(api, tenant) as client:
        [order] = (await client.list_orders()).Orders
        item = {"OrderItemId": order.Items[0].OrderItemId, "Amount": Decimal("1.00")}
        first = await client.refund_orders("Goodwill", "GBP", [item], idempotency_key="k-1")
        replay = await client.refund_orders("Goodwill", "GBP", [item], idempotency_key="k-1")
        assert replay.Refunds[0].RefundId == first.Refunds[0].RefundId
        with pytest.raises(UnprocessableEntity) as reused:
            await client.refund_orders("Goodwill", "GBP", [{**item, "Amount": Decimal("2.00")}], idempotency_key="k-1")
        assert reused.value.code == "idempotency-key-reused"
        # Without a key of the caller's, each call is its own refund.
        await client.refund_orders("Goodwill", "GBP", [item])
        assert (await client.get_order(order.ServiceOrderID)).RefundedTotal == Decimal("2.00")
        assert isinstance(first, m.RefundWriteResult)


async def test_optional_fields_given_as_none_are_read_as_omitted(
    rt: Runtime, api: httpx.AsyncClient, flavour: str
) -> None:
    """`RefundItem(Quantity=None)` (a refund without a return, as its type allows) and list flags given as None are
    read by the service as the omitted field (decision 0326), never answered with a 400."""
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    await ingest(rt, tenant.marketplace("P1"), pulled_order(items=[pulled_item(quantity=2, unit_price="30.00")]))
    async with sdk(api, tenant, flavour) as client:
        [order] = (await client.list_orders(limit=None, include_customer_data=None)).Orders
        line = m.RefundItem(OrderItemId=order.Items[0].OrderItemId, Amount=Decimal("5.00"), Quantity=None)
        result = await client.refund_orders("Goodwill", "GBP", [line])
        after = await client.get_order(order.ServiceOrderID)
    assert result.Refunds[0].Amount == Decimal("5.00")
    assert after.RefundedTotal == Decimal("5.00") and after.Items[0].RefundedQuantity == 0
