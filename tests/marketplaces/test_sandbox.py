"""The sandbox marketplaces as the connectors see them: over real HTTP, publishes, order updates, feeds."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import httpx
import pytest

from marketsync.marketplaces.connector import (
    AuthorizationRevoked,
    ListingDraft,
    OrderUpdateLine,
    PriceStockLine,
    Throttled,
    connector_for,
)
from marketsync.marketplaces.sandbox import taxonomies as shipped
from marketsync.marketplaces.sandbox.app import create_sandbox_app
from marketsync.runtime import Runtime
from tests.marketplaces import support
from tests.support.factories import make_tenant
from tests.support.server import serve


async def _result(rt: Runtime, connection: object, feed_id: str) -> object:
    connector = connector_for(rt, connection)  # type: ignore[arg-type]
    for _ in range(5):
        result = await connector.feed_result(feed_id)
        if result.status != "Processing":
            return result
    raise AssertionError("feed never finished")


async def test_sandbox_served_apart_over_http(
    rt: Runtime, api: httpx.AsyncClient, make_runtime: Callable[..., Runtime]
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    p1 = tenant.marketplace("P1")
    await support.listed_product(rt, p1, "HTTP-1", price="3.00", quantity=4)
    async with serve(create_sandbox_app(rt)) as sandbox_url:  # type: ignore[arg-type]
        other = make_runtime(sandbox_url=sandbox_url, sandbox_latency_ms=5)
        try:
            connector = connector_for(other, p1)
            assert (await connector.check_authorization()).health_status == "Healthy"
            page = await connector.pull_listings(None)
            assert [(item.sku, item.price, item.quantity) for item in page.listings] == [("HTTP-1", Decimal("3"), 4)]

            await support.update_seller(rt, p1, bucket_tokens=0.0, bucket_refill_per_s=0.25, bucket_at=rt.clock.now())
            with pytest.raises(Throttled) as throttled:
                await connector.pull_orders(None)
            assert throttled.value.retry_after_s == 4.0

            await support.update_seller(rt, p1, bucket_tokens=100.0, bucket_refill_per_s=100.0, auth_revoked=True)
            with pytest.raises(AuthorizationRevoked):
                await connector.pull_orders(None)
            assert (await connector.check_authorization()).health_status == "UnAuthorized"
        finally:
            await other.close()


async def test_feed_submission_is_idempotent_by_our_feed_id(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P4", "FR"),))
    p4 = tenant.marketplace("P4")
    await support.listed_product(rt, p4, "IDEM-1", price="5.00", quantity=1)
    connector = connector_for(rt, p4)
    line = PriceStockLine("IDEM-1", Decimal("6.00"), 2)

    first = await connector.submit_price_stock("our-feed-1", [line])
    assert (await connector.feed_result(first)).status == "Processing"  # asynchronous
    await _result(rt, p4, first)
    again = await connector.submit_price_stock("our-feed-1", [PriceStockLine("IDEM-1", Decimal("7.00"), 3)])

    assert again == first
    assert (await _result(rt, p4, again)).processed == 1  # type: ignore[attr-defined]
    remote = (await support.sandbox_listings(rt, p4))["IDEM-1"]
    assert (remote.price, remote.quantity, remote.feed_updates) == (Decimal("6.00"), 2, 1)


def _leaf_categories(platform: str) -> tuple[str, str]:
    """A leaf with requirements the API cannot carry, and one without."""
    leaves = [c for c in shipped.generate(platform).categories if c.is_leaf]
    with_requirements = next(c.category_id for c in leaves if c.off_api_requirements)
    plain = next(c.category_id for c in leaves if not c.off_api_requirements)
    return with_requirements, plain


async def test_publish_rejects_drafts_missing_what_the_api_cannot_carry(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P2", "DE"),))
    p2 = tenant.marketplace("P2")
    needs_images, plain = _leaf_categories("P2")
    connector = connector_for(rt, p2)

    def draft(reference: str, category_id: str | None) -> ListingDraft:
        return ListingDraft(reference, f"SKU-{reference}", None, None, category_id, {}, "Title", Decimal("9.99"), 3)

    feed_id = await connector.publish_listings(
        "publish-1", [draft("ok", plain), draft("images", needs_images), draft("nocat", None)]
    )
    result = await _result(rt, p2, feed_id)

    assert result.status == "Done"  # type: ignore[attr-defined]
    errors = {e.reference: e.message for e in result.errors}  # type: ignore[attr-defined]
    assert set(errors) == {"images", "nocat"}
    for name in shipped.off_api_requirements("P2", needs_images):
        assert name in errors["images"]
    listing_id, external_sku, url = result.published["ok"]  # type: ignore[attr-defined]
    assert external_sku == "SKU-ok" and url.endswith(listing_id)


async def test_order_updates_are_applied_per_line_on_p1_only(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P2", "DE")))
    from marketsync.marketplaces.sandbox import state as sandbox_state

    orders = {}
    for platform in ("P1", "P2"):
        connection = tenant.marketplace(platform)
        async with rt.db.transaction() as session:
            seller = await sandbox_state.ensure_seller(
                session, connection.id, platform, connection.country, rt.clock.now()
            )
            [orders[platform]] = await sandbox_state.orders_arrive(session, seller, rt.clock.now(), 1)

    def lines(platform: str) -> list[OrderUpdateLine]:
        order = orders[platform]
        item_id = order.items[0]["ItemId"]
        return [
            OrderUpdateLine(
                "good", order.order_id, item_id, "Confirm", {"TrackingNumber": "TRK-1", "CarrierCode": "DHL"}
            ),
            OrderUpdateLine("bad", order.order_id, "no-such-item", "Cancel"),
        ]

    p1_result = await _result(
        rt,
        tenant.marketplace("P1"),
        await connector_for(rt, tenant.marketplace("P1")).send_order_updates("u1", lines("P1")),
    )
    assert p1_result.status == "Done" and p1_result.processed == 1  # type: ignore[attr-defined]
    assert [e.reference for e in p1_result.errors] == ["bad"]  # type: ignore[attr-defined]
    page = await connector_for(rt, tenant.marketplace("P1")).pull_orders(None)
    assert page.orders[0].items[0].status == "Shipped"

    p2_result = await _result(
        rt,
        tenant.marketplace("P2"),
        await connector_for(rt, tenant.marketplace("P2")).send_order_updates("u1", lines("P2")),
    )
    assert p2_result.status == "Rejected"  # type: ignore[attr-defined]
