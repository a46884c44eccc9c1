"""The price/stock push to Amazon: N SKUs are ONE JSON_LISTINGS_FEED (createFeedDocument, the upload, createFeed,
getFeed polls, the processing report), validated before it is sent; each SKU's outcome from the report
(docs/decisions/0373-amazon-feed-not-per-sku-patches.md)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx
import pytest

from marketsync.jobs.worker import Worker
from marketsync.kit.clock import Clock, FrozenClock
from marketsync.marketplaces.amazon.connector import AmazonConnector
from marketsync.marketplaces.connector import MarketplaceError, PriceStockLine, connector_for
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime
from tests.marketplaces import support
from tests.marketplaces.amazon.support import amazon_connection, amazon_settings, listed_at_amazon, spapi_calls
from tests.support.amazon import AmazonServer
from tests.support.factories import Tenant, make_tenant


@pytest.fixture
def clock() -> Clock:
    return FrozenClock()


@pytest.fixture
def settings_overrides(amazon_simulator: AmazonServer) -> dict[str, Any]:
    return amazon_settings(amazon_simulator)


SKUS = ("AMZ-A", "AMZ-B", "AMZ-C")


async def _three_listed(
    rt: Runtime, api: httpx.AsyncClient, server: AmazonServer
) -> tuple[Tenant, MarketplaceConnection, list[str]]:
    tenant = await make_tenant(rt, api)
    connection, _ = await amazon_connection(rt, server, tenant.account_id)
    ids = []
    for index, sku in enumerate(SKUS):
        product = await listed_at_amazon(rt, server, connection, sku, price="10.00", quantity=5)
        await support.set_product_values(rt, product.id, Decimal("12.50") + index, 7 + index)
        ids.append(product.id)
    return tenant, connection, ids


async def _push(rt: Runtime, tenant: Tenant, connection: MarketplaceConnection, ids: list[str]) -> str:
    return await support.enqueue(
        rt, tenant.account_id, "PriceStockPush", {"MarketplaceId": connection.id, "ProductIds": ids}
    )


def _held(server: AmazonServer, connection: MarketplaceConnection, sku: str) -> tuple[Decimal | None, int | None]:
    assert connection.seller_id is not None
    listing = server.sim.listing(connection.seller_id, connection.country, sku)
    assert listing is not None
    return listing.price, listing.quantity


async def test_a_push_of_n_skus_is_one_feed_and_reaches_amazon(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer
) -> None:
    tenant, connection, ids = await _three_listed(rt, api, amazon_simulator)
    before = len(amazon_simulator.sim.requests)
    job_id = await _push(rt, tenant, connection, ids)

    await Worker(rt).drain()

    job = await support.job(rt, job_id)
    assert (job.status, job.progress_done, job.progress_total) == ("Completed", 3, 3)
    assert [_held(amazon_simulator, connection, sku) for sku in SKUS] == [
        (Decimal("12.5"), 7),
        (Decimal("13.5"), 8),
        (Decimal("14.5"), 9),
    ]
    calls = spapi_calls(amazon_simulator, before)
    feed_calls = [c for c in calls if c != "getFeed"]
    assert feed_calls == ["createFeedDocument", "createFeed", "getFeedDocument"]  # plus the upload and download
    assert calls.count("getFeed") >= 1
    assert len(amazon_simulator.sim.feeds) == 1
    ours = await support.our_listing(rt, connection, ids[0])
    assert ours is not None and (ours.marketplace_price, ours.marketplace_quantity) == (Decimal("12.50"), 7)
    assert await support.events(rt, tenant.account_id) == []  # a clean feed is silent


async def test_a_feed_rejected_whole_fails_the_job_with_amazons_reason(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer
) -> None:
    tenant, connection, ids = await _three_listed(rt, api, amazon_simulator)
    amazon_simulator.sim.set_feed_fault("reject", message="The feed was rejected: account under review.")
    job_id = await _push(rt, tenant, connection, ids)

    await Worker(rt).drain()

    job = await support.job(rt, job_id)
    assert (job.status, job.progress_done, job.progress_total) == ("Failed", 0, 3)
    assert "The feed was rejected: account under review." in (job.failure_reason or "")
    fired = await support.events(rt, tenant.account_id)
    assert [e["payload"] for e in fired] == [
        {
            "Marketplace": "Amazon UK",
            "UserPlatformId": connection.id,
            "FeedKind": "Price & stock",
            "Outcome": "Rejected",
            "Status": "Rejected",
            "FailedCount": 3,
        }
    ]
    assert _held(amazon_simulator, connection, "AMZ-A") == (Decimal("10.00"), 5)


async def test_per_sku_errors_of_the_report_are_the_jobs_progress_and_feed_outcome(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer
) -> None:
    tenant, connection, ids = await _three_listed(rt, api, amazon_simulator)
    amazon_simulator.sim.set_feed_fault("item-errors", skus=["AMZ-A", "AMZ-C"], message="Price below the minimum.")
    job_id = await _push(rt, tenant, connection, ids)

    await Worker(rt).drain()

    job = await support.job(rt, job_id)
    assert (job.status, job.progress_done, job.progress_total) == ("Completed", 1, 3)
    fired = await support.events(rt, tenant.account_id)
    assert [(e["payload"]["Outcome"], e["payload"]["FailedCount"]) for e in fired] == [("ProcessedWithErrors", 2)]
    assert _held(amazon_simulator, connection, "AMZ-B") == (Decimal("13.5"), 8)
    assert _held(amazon_simulator, connection, "AMZ-A") == (Decimal("10.00"), 5)
    refused = await support.our_listing(rt, connection, ids[0])
    applied = await support.our_listing(rt, connection, ids[1])
    assert refused is not None and refused.marketplace_price == Decimal("10.00")
    assert applied is not None and applied.marketplace_price == Decimal("13.50")


async def test_a_sku_amazon_does_not_hold_is_named_in_the_report(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer
) -> None:
    _, connection, _ = await _three_listed(rt, api, amazon_simulator)
    assert connection.seller_id is not None
    amazon_simulator.sim.market(connection.seller_id, "UK").listings.pop("AMZ-C")  # removed in Seller Central
    connector = connector_for(rt, connection)
    receipt = await connector.submit_price_stock("J1", [PriceStockLine("AMZ-C", Decimal("3"), 1)])
    result = await connector.feed_result(receipt)
    while result.status == "Processing":
        result = await connector.feed_result(receipt)
    assert result.status == "Done" and [e.reference for e in result.errors] == ["AMZ-C"]
    assert "does not exist" in result.errors[0].message


async def test_a_document_that_breaks_amazons_schema_is_never_sent(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer
) -> None:
    tenant = await make_tenant(rt, api)
    connection, _ = await amazon_connection(rt, amazon_simulator, tenant.account_id)
    connector = connector_for(rt, connection)
    assert isinstance(connector, AmazonConnector)
    before = len(amazon_simulator.sim.requests)
    with pytest.raises(MarketplaceError, match="breaks Amazon's schema"):
        await connector.submit_price_stock("J1", [PriceStockLine("", Decimal("3"), 1)])  # an empty SKU
    assert spapi_calls(amazon_simulator, before) == []


async def test_500_skus_cost_one_feed_of_at_most_five_calls_besides_the_polls(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer
) -> None:
    tenant = await make_tenant(rt, api)
    connection, seller = await amazon_connection(rt, amazon_simulator, tenant.account_id)
    skus = [f"BULK-{n:04d}" for n in range(500)]
    for sku in skus:
        amazon_simulator.sim.set_listing(seller.selling_partner_id, "UK", sku, price="5.00", quantity=1)
    connector = connector_for(rt, connection)
    http_calls_before = len(connector.services.calls)  # type: ignore[attr-defined]
    receipt = await connector.submit_price_stock("J1", [PriceStockLine(s, Decimal("6.00"), 2) for s in skus])
    polls = 0
    result = await connector.feed_result(receipt)
    while result.status == "Processing":
        polls += 1
        result = await connector.feed_result(receipt)
    assert result.status == "Done" and result.errors == [] and result.processed == 500
    made = [operation for operation, _ in connector.services.calls[http_calls_before:]]  # type: ignore[attr-defined]
    without_polls = [operation for operation in made if operation != "getFeed"]
    assert without_polls == ["createFeedDocument", "document", "createFeed", "getFeedDocument", "document"]
    assert amazon_simulator.sim.listing(seller.selling_partner_id, "UK", "BULK-0499").quantity == 2  # type: ignore[union-attr]
