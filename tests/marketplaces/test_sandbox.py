"""The sandbox marketplaces as the connectors see them: over real HTTP, publishes, order updates, feeds."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import httpx
import pytest

from marketsync.marketplaces.connector import (
    AuthorizationRevoked,
    ListingDraft,
    MarketplaceError,
    OrderUpdateLine,
    PriceStockLine,
    Throttled,
    connector_for,
)
from marketsync.marketplaces.sandbox import state as sandbox_state
from marketsync.marketplaces.sandbox import taxonomies as shipped
from marketsync.marketplaces.sandbox.app import create_sandbox_app
from marketsync.models import MarketplaceConnection
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


def _applied_chunks(monkeypatch: pytest.MonkeyPatch, size: int) -> list[int]:
    """Apply price & stock feeds `size` lines per transaction; the returned list gets each transaction's count."""
    monkeypatch.setattr(sandbox_state, "FEED_CHUNK_LINES", size)
    return support.chunk_sizes(
        monkeypatch, sandbox_state, "_apply_price_stock", lambda _session, _seller, _now, lines, _faulted: len(lines)
    )


async def _five_listed(rt: Runtime, connection: MarketplaceConnection) -> list[PriceStockLine]:
    for index in range(5):
        await support.listed_product(rt, connection, f"CHUNK-{index}", price="5.00", quantity=1)
    return [PriceStockLine(f"CHUNK-{index}", Decimal(f"{6 + index}.00"), 10 + index) for index in range(5)]


async def test_a_feed_longer_than_a_chunk_is_applied_at_one_poll_a_chunk_per_transaction(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    p1 = tenant.marketplace("P1")
    lines = await _five_listed(rt, p1)
    await support.update_seller(rt, p1, feed_fault="item-errors")  # lines 0, 2 and 4 of the feed are refused
    sizes = _applied_chunks(monkeypatch, 2)

    result = await _result(rt, p1, await connector_for(rt, p1).submit_price_stock("chunked", lines))

    assert sizes == [2, 2, 1]
    assert result.status == "Done" and result.processed == 2  # type: ignore[attr-defined]
    assert [error.reference for error in result.errors] == ["CHUNK-0", "CHUNK-2", "CHUNK-4"]  # type: ignore[attr-defined]
    remote = await support.sandbox_listings(rt, p1)
    assert {sku: (row.price, row.quantity, row.feed_updates) for sku, row in remote.items()} == {
        "CHUNK-0": (Decimal("5.00"), 1, 0),
        "CHUNK-1": (Decimal("7.00"), 11, 1),
        "CHUNK-2": (Decimal("5.00"), 1, 0),
        "CHUNK-3": (Decimal("9.00"), 13, 1),
        "CHUNK-4": (Decimal("5.00"), 1, 0),
    }


async def test_a_feed_interrupted_between_chunks_is_resumed_without_a_line_applied_twice(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    p1 = tenant.marketplace("P1")
    lines = await _five_listed(rt, p1)
    sizes = _applied_chunks(monkeypatch, 2)
    connector = connector_for(rt, p1)
    feed_id = await connector.submit_price_stock("interrupted", lines)
    for _ in range(2):  # the first poll finds it waiting, the second applies one chunk; then the marketplace stops
        async with rt.db.transaction() as session:
            seller = await sandbox_state.ensure_seller(session, p1.id, p1.platform, p1.country, rt.clock.now())
            feed = await sandbox_state.poll_feed(session, seller, rt.clock.now(), feed_id)
    assert sandbox_state.applying(feed) and feed.processed == 2

    result = await connector.feed_result(feed_id)

    assert sizes == [2, 2, 1]
    assert result.status == "Done" and result.processed == 5 and result.errors == []
    remote = await support.sandbox_listings(rt, p1)
    assert {sku: row.feed_updates for sku, row in remote.items()} == {f"CHUNK-{index}": 1 for index in range(5)}
    assert remote["CHUNK-4"].price == Decimal("10.00") and remote["CHUNK-4"].quantity == 14


async def test_a_feed_naming_a_listing_twice_applies_both_lines_in_their_order(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """As a marketplace processes a feed's messages in turn: the second line's values win where it gives one, and the
    listing counts two updates (PostgreSQL writes a batch in one statement, which could write a row only once)."""
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    p1 = tenant.marketplace("P1")
    lines = await _five_listed(rt, p1)
    twice = [*lines[:2], PriceStockLine("CHUNK-0", None, 42), PriceStockLine("CHUNK-0", Decimal("7.25"), None)]

    result = await _result(rt, p1, await connector_for(rt, p1).submit_price_stock("twice", twice))

    assert result.status == "Done" and result.processed == 4 and result.errors == []  # type: ignore[attr-defined]
    remote = await support.sandbox_listings(rt, p1)
    assert (remote["CHUNK-0"].price, remote["CHUNK-0"].quantity, remote["CHUNK-0"].feed_updates) == (
        Decimal("7.25"),
        42,
        3,
    )
    assert (remote["CHUNK-1"].price, remote["CHUNK-1"].quantity, remote["CHUNK-1"].feed_updates) == (
        Decimal("7.00"),
        11,
        1,
    )


async def test_consent_is_granted_at_the_sandbox_itself_and_restores_a_revoked_authorisation(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """The sandbox has no consent page of its own (the app shows one); the grant goes through its connector over
    HTTP, free of the request budget, and clears a revoked authorisation (docs/decisions/0351)."""
    tenant = await make_tenant(rt, api, marketplaces=(("P2", "DE"),))
    p2 = tenant.marketplace("P2")
    connector = connector_for(rt, p2)
    assert (await connector.begin_consent("state-1", "http://app.invalid/callback")).url is None
    await support.update_seller(rt, p2, bucket_tokens=0.0, bucket_refill_per_s=0.0, auth_revoked=True)
    granted = await connector.finish_consent({})
    assert granted.refresh_token is None  # the sandbox keeps the grant on its side
    await support.update_seller(rt, p2, bucket_tokens=10.0, bucket_refill_per_s=1.0)
    assert (await connector.check_authorization()).health_status == "Healthy"


async def test_the_sandbox_is_a_taxonomy_source_of_its_shipped_tree(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    connector = connector_for(rt, tenant.marketplace("P1"))
    tree = await connector.category_tree()
    assert tree == shipped.generate("P1")
    t_shirts = shipped.anchor(tree, "T-Shirts")
    schema = await connector.category_schema(t_shirts.category_id)
    assert schema.category == t_shirts and schema.version == t_shirts.content_hash()[:16]
    assert t_shirts.parent_id is not None
    for unknown in ("no-such-category", t_shirts.parent_id):  # a department is no leaf: it has no schema
        with pytest.raises(MarketplaceError):
            await connector.category_schema(unknown)
