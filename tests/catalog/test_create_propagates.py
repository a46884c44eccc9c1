"""Create's Quantity on an existing SKU reaches every listing of the product, as a push does (decision 0308)."""

from __future__ import annotations

import httpx
from sqlalchemy import select

from marketsync.inventory import service as inventory
from marketsync.inventory.rules import drift_message
from marketsync.jobs import service as jobs_service
from marketsync.jobs.repository import QUEUED
from marketsync.jobs.types import PriceStockPushPayload
from marketsync.marketplaces.sandbox import state as sandbox_state
from marketsync.models import Job, Listing
from marketsync.runtime import Runtime
from tests.catalog.support import create, create_payload, load_taxonomies, run_jobs
from tests.inventory.support import push_ok
from tests.marketplaces.support import listed_product
from tests.support.factories import Tenant, make_tenant


async def _tenant_with_a_listed_product(rt: Runtime, api: httpx.AsyncClient) -> Tenant:
    """PHONE-1 (stock 5) live on P1 and P3; P2 is where Create publishes it."""
    await load_taxonomies(rt, ("P2",))
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P2", "DE"), ("P3", "US")))
    product = await listed_product(rt, tenant.marketplace("P1"), "PHONE-1", quantity=5)
    async with rt.db.transaction() as session:
        p3 = tenant.marketplace("P3")
        seller = await sandbox_state.ensure_seller(session, p3.id, "P3", "US", rt.clock.now())
        remote = await sandbox_state.put_listing(
            session, seller, rt.clock.now(), sku="PHONE-1", price=product.price, quantity=5, title=product.title
        )
        session.add(
            Listing(
                id=remote.listing_id + "-row",
                account_id=tenant.account_id,
                product_id=product.id,
                marketplace_id=p3.id,
                listing_id=remote.listing_id,
                external_sku="PHONE-1",
                attributes={},
                status="Live",
                marketplace_price=product.price,
                marketplace_quantity=5,
                created_at=rt.clock.now(),
                updated_at=rt.clock.now(),
            )
        )
    return tenant


async def _pushes(rt: Runtime, account_id: str) -> dict[str, list[str]]:
    """Queued PriceStockPush jobs: connection id -> their products."""
    async with rt.db.read() as session:
        queued = (
            (await session.execute(select(Job).where(Job.account_id == account_id, Job.status.in_(QUEUED))))
            .scalars()
            .all()
        )
        return {
            PriceStockPushPayload.of(job.payload).MarketplaceId: await jobs_service.price_stock_push_products(
                session, job.id, PriceStockPushPayload.of(job.payload)
            )
            for job in queued
            if job.type == "PriceStockPush"
        }


async def _held(rt: Runtime, connection_id: str) -> int | None:
    async with rt.db.read() as session:
        remote = await sandbox_state.listing_by_sku(session, connection_id, "PHONE-1")
        assert remote is not None
        return remote.quantity


async def test_create_quantity_on_an_existing_sku_reaches_every_listing(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await _tenant_with_a_listed_product(rt, api)
    product_id = (await api.get("/api/products/PHONE-1", headers=tenant.headers)).json()["Product"]
    payload = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1", Quantity=3)

    response = await create(api, tenant, payload)

    assert response.status_code == 200, response.text
    body = response.json()
    assert drift_message("Stock") in body["Warnings"]  # Stock is the marketplace's until Data Flow says otherwise
    p1, p2, p3 = (tenant.marketplace(kind).id for kind in ("P1", "P2", "P3"))
    pushes = await _pushes(rt, tenant.account_id)
    assert sorted(pushes) == sorted([p1, p3])  # P2's listing gets the stock in its publish feed
    assert product_id["Quantity"] == 5 and all(len(products) == 1 for products in pushes.values())
    await run_jobs(rt)
    assert [await _held(rt, connection_id) for connection_id in (p1, p2, p3)] == [3, 3, 3]


async def test_create_propagates_what_a_push_of_the_same_stock_would(rt: Runtime, api: httpx.AsyncClient) -> None:
    """The same connections, the same products; a Create that moves nothing schedules nothing; Data Flow set to the
    merchant's system takes the drift warning away."""
    tenant = await _tenant_with_a_listed_product(rt, api)
    async with rt.db.transaction() as session:
        await inventory.set_data_owner(rt, session, tenant.account_id, "Stock", "Merchant")
    payload = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1", Quantity=5)  # the stock it has

    unchanged = (await create(api, tenant, payload)).json()
    assert unchanged["Warnings"] == [] and await _pushes(rt, tenant.account_id) == {}
    await run_jobs(rt)  # P2's listing is live: a push now reaches all three

    pushed = await push_ok(api, tenant, [{"Sku": "PHONE-1", "Quantity": 8}])
    by_push = await _pushes(rt, tenant.account_id)
    assert len(pushed["JobIds"]) == 3 and pushed["Warnings"] == []
    await run_jobs(rt)

    moved = (await create(api, tenant, {**payload, "Quantity": 2})).json()
    assert moved["Warnings"] == [] and moved["ListingAction"] == "Revise"
    by_create = await _pushes(rt, tenant.account_id)
    p2 = tenant.marketplace("P2").id
    assert {k: v for k, v in by_push.items() if k != p2} == by_create
    await run_jobs(rt)
    assert [await _held(rt, tenant.marketplace(kind).id) for kind in ("P1", "P2", "P3")] == [2, 2, 2]
