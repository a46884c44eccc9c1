"""An Amazon connection's health (getMarketplaceParticipations on the health schedule; a revoked authorisation is
UnAuthorized + RequiresReauthorization with one event, exactly as for the sandboxes) and its listing mirror
(searchListingsItems, LastPull as today: docs/decisions/0375-amazon-mirror-source.md)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx
import pytest

from marketsync.inventory import tasks as inventory_tasks
from marketsync.jobs.worker import Worker
from marketsync.kit.clock import Clock, FrozenClock
from marketsync.marketplaces import service, tasks
from marketsync.marketplaces.amazon.client import services_of
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime
from tests.marketplaces import support
from tests.marketplaces.amazon.support import amazon_connection, amazon_settings, listed_at_amazon, spapi_calls
from tests.support.amazon import AmazonServer
from tests.support.factories import make_tenant


@pytest.fixture
def clock() -> Clock:
    return FrozenClock()


@pytest.fixture
def settings_overrides(amazon_simulator: AmazonServer) -> dict[str, Any]:
    return amazon_settings(amazon_simulator)


async def _marketplaces(api: httpx.AsyncClient, headers: dict[str, str]) -> list[dict[str, Any]]:
    answer = await api.get("/api/marketplaces", headers=headers)
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["Marketplaces"]
    return found


async def _stored(rt: Runtime, connection: MarketplaceConnection) -> MarketplaceConnection:
    async with rt.db.read() as session:
        found = await session.get(MarketplaceConnection, connection.id)
        assert found is not None
        return found


async def test_healthy_when_the_seller_takes_part_in_the_site_and_listed_as_amazon(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer
) -> None:
    tenant = await make_tenant(rt, api)
    connection, seller = await amazon_connection(rt, amazon_simulator, tenant.account_id)
    [before] = await _marketplaces(api, tenant.headers)
    assert (before["Platform"], before["Country"], before["HealthStatus"]) == ("Amazon", "UK", None)

    await tasks.health_checks(rt)

    [listed] = await _marketplaces(api, tenant.headers)
    assert (listed["HealthStatus"], listed["IsHealthy"], listed["RequiresReauthorization"]) == (
        "Healthy",
        True,
        False,
    )
    assert seller.store_name in listed["HealthStatusMessage"]
    assert "credential" not in str(listed).lower() and "Atzr" not in str(listed)
    assert await support.events(rt, tenant.account_id) == []  # nothing was broken

    amazon_simulator.sim.set_participation(seller.selling_partner_id, "UK", participating=False)
    await tasks.health_checks(rt)
    [listed] = await _marketplaces(api, tenant.headers)
    assert (listed["HealthStatus"], listed["IsHealthy"], listed["RequiresReauthorization"]) == (
        "NotParticipating",
        False,
        False,
    )
    assert [e["type"] for e in await support.events(rt, tenant.account_id)] == ["MarketplaceUnhealthy"]
    assert connection.id == listed["MarketplaceId"]


async def test_a_revoked_authorisation_is_unauthorized_once_and_reauthorising_restores_it(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer
) -> None:
    tenant = await make_tenant(rt, api)
    connection, seller = await amazon_connection(rt, amazon_simulator, tenant.account_id)
    await tasks.health_checks(rt)
    amazon_simulator.sim.revoke(seller.selling_partner_id)
    services_of(rt).tokens.forget(seller.selling_partner_id)

    await tasks.health_checks(rt)
    await tasks.health_checks(rt)  # still broken: no second event

    [listed] = await _marketplaces(api, tenant.headers)
    assert (listed["HealthStatus"], listed["IsHealthy"], listed["RequiresReauthorization"]) == (
        "UnAuthorized",
        False,
        True,
    )
    fired = await support.events(rt, tenant.account_id)
    assert fired == [
        {
            "type": "MarketplaceUnhealthy",
            "payload": {
                "Marketplace": "Amazon UK",
                "Platform": "Amazon",
                "UserPlatformId": connection.id,
                "Reason": "UnAuthorized",
                "Detail": "Amazon refused the authorisation; reauthorise Amazon in the app.",
            },
        }
    ]

    # Reauthorising is the same consent: a new refresh token on the same connection.
    await amazon_connection(rt, amazon_simulator, tenant.account_id, seller=seller)
    amazon_simulator.sim.restore(seller.selling_partner_id)
    await tasks.health_checks(rt)
    assert [e["type"] for e in await support.events(rt, tenant.account_id)] == [
        "MarketplaceUnhealthy",
        "MarketplaceRestored",
    ]
    assert (await _stored(rt, connection)).requires_reauthorization is False


async def test_a_push_meeting_a_revoked_authorisation_flips_health_and_fails(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer
) -> None:
    tenant = await make_tenant(rt, api)
    connection, seller = await amazon_connection(rt, amazon_simulator, tenant.account_id)
    product = await listed_at_amazon(rt, amazon_simulator, connection, "REV-1")
    await support.set_product_values(rt, product.id, Decimal("11.00"), 6)
    amazon_simulator.sim.revoke(seller.selling_partner_id)
    job_id = await support.enqueue(
        rt, tenant.account_id, "PriceStockPush", {"MarketplaceId": connection.id, "ProductIds": [product.id]}
    )

    await Worker(rt).drain()

    assert (await support.job(rt, job_id)).status == "Failed"
    stored = await _stored(rt, connection)
    assert (stored.health_status, stored.requires_reauthorization) == ("UnAuthorized", True)
    assert [e["type"] for e in await support.events(rt, tenant.account_id)] == ["MarketplaceUnhealthy"]


async def test_a_new_connection_pulls_its_listings_at_once(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer
) -> None:
    """Decision 0404 for Amazon: the connect queues the first listing pull, which searchListingsItems answers."""
    tenant = await make_tenant(rt, api)
    connection, _seller = await amazon_connection(rt, amazon_simulator, tenant.account_id)
    assert "searchListingsItems" in spapi_calls(amazon_simulator)
    stored = await _stored(rt, connection)
    assert (stored.last_pull_status, stored.last_pull_total_skus) == ("Completed", 0)


async def test_the_mirror_fills_the_listings_map_page_by_page_and_reports_last_pull(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer
) -> None:
    tenant = await make_tenant(rt, api)
    connection, seller = await amazon_connection(rt, amazon_simulator, tenant.account_id)
    skus = [f"MIR-{n:02d}" for n in range(45)]
    for index, sku in enumerate(skus):
        amazon_simulator.sim.set_listing(seller.selling_partner_id, "UK", sku, price=f"{10 + index}.00", quantity=index)
    for sku in skus[:3]:  # the catalogue knows three of them
        await listed_at_amazon(rt, amazon_simulator, connection, sku, price="1.00", quantity=1)
    async with rt.db.transaction() as session:  # ... whose listings the map does not hold yet
        for sku in skus[:3]:
            listing = await support.our_listing(rt, connection, (await _product_id(rt, sku)))
            assert listing is not None
            await session.delete(await session.merge(listing))
    before = len(amazon_simulator.sim.requests)
    job_id = await support.enqueue(rt, tenant.account_id, "ListingMirror", {"MarketplaceId": connection.id})

    await Worker(rt).drain()

    job = await support.job(rt, job_id)
    assert (job.status, job.progress_done, job.progress_total) == ("Completed", 45, 45)
    assert spapi_calls(amazon_simulator, before).count("searchListingsItems") == 3  # 20 a page
    stored = await _stored(rt, connection)
    assert (stored.last_pull_status, stored.last_pull_total_skus, stored.last_pull_current_sku) == (
        "Completed",
        45,
        45,
    )
    listing = await support.our_listing(rt, connection, await _product_id(rt, "MIR-02"))
    assert listing is not None
    assert (listing.listing_id, listing.external_sku, listing.status) == ("MIR-02", "MIR-02", "Live")
    assert (listing.marketplace_price, listing.marketplace_quantity, listing.category_id) == (
        Decimal("1.00"),
        1,
        "LUGGAGE",
    )
    asin = amazon_simulator.sim.listing(seller.selling_partner_id, "UK", "MIR-02").asin  # type: ignore[union-attr]
    assert listing.listing_url == f"https://www.amazon.co.uk/dp/{asin}"


async def test_where_amazon_owns_stock_the_mirror_brings_it_into_the_catalogue(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer
) -> None:
    tenant = await make_tenant(rt, api)
    connection, seller = await amazon_connection(rt, amazon_simulator, tenant.account_id)
    product = await listed_at_amazon(rt, amazon_simulator, connection, "OWN-1", price="5.00", quantity=5)
    async with rt.db.transaction() as session:
        from marketsync.inventory import service as inventory

        await inventory.set_data_owner(rt, session, tenant.account_id, "Stock", "Marketplace")
    amazon_simulator.sim.set_listing(seller.selling_partner_id, "UK", "OWN-1", quantity=17)

    await inventory_tasks.schedule_listing_mirrors(rt)
    await Worker(rt).drain()

    assert (await support.product(rt, product.id)).quantity == 17
    changed = await support.events(rt, tenant.account_id, "InventoryChanged")
    assert [e["payload"]["source"] for e in changed] == [
        {"writer": "MasterMirror", "channel": "Marketplace", "userPlatformId": connection.id}
    ]


async def _product_id(rt: Runtime, sku: str) -> str:
    from sqlalchemy import select

    from marketsync.models import Product

    async with rt.db.read() as session:
        return str((await session.execute(select(Product.id).where(Product.sku == sku))).scalar_one())


async def test_a_paused_amazon_connection_is_omitted_and_never_called(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer
) -> None:
    tenant = await make_tenant(rt, api)
    connection, _ = await amazon_connection(rt, amazon_simulator, tenant.account_id)
    async with rt.db.transaction() as session:
        await service.pause(rt, session, tenant.account_id, connection.id)
    before = len(amazon_simulator.sim.requests)
    await tasks.health_checks(rt)
    assert await _marketplaces(api, tenant.headers) == []
    assert spapi_calls(amazon_simulator, before) == []
