"""This domain's part of `marketsync demo` (idempotent).

Runs after the inventory demo created the catalogue and its listings: the sandbox marketplaces are
given the tenant's live listings (so mirrors and pushes find them), P1 and P2 receive a few orders
which are pulled at once, and every connection's health is checked so it is known.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from marketsync.jobs import service as jobs_service
from marketsync.jobs.types import OrderPullPayload
from marketsync.kinds import kind_of
from marketsync.marketplaces import repository, service
from marketsync.marketplaces.sandbox import state as sandbox_state
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime

if TYPE_CHECKING:
    from marketsync.demo import DemoTenant

DEMO_ORDERS = {"P1": 4, "P2": 3}


async def _seed_marketplace_listings(rt: Runtime, connection: MarketplaceConnection) -> int:
    async with rt.db.transaction() as session:
        now = rt.clock.now()
        seller = await sandbox_state.ensure_seller(session, connection.id, connection.platform, connection.country, now)
        pairs = await repository.live_listings(session, connection.id)
        known = [
            sandbox_state.KnownListing(
                sku=product.sku,
                listing_id=listing.listing_id,
                external_sku=listing.external_sku,
                title=product.title,
                category_id=listing.category_id,
                price=product.price,
                quantity=product.quantity,
            )
            for listing, product in pairs
        ]
        remote = await sandbox_state.seed_listings(session, seller, now, known)
        for listing, product in pairs:
            held = remote[product.sku]
            if listing.listing_id is None or listing.external_sku is None:
                listing.listing_id, listing.external_sku, listing.listing_url = (
                    held.listing_id,
                    held.external_sku,
                    held.listing_url,
                )
            listing.marketplace_price, listing.marketplace_quantity = held.price, held.quantity
        return len(pairs)


async def _orders_and_pull(rt: Runtime, connection: MarketplaceConnection) -> None:
    async with rt.db.transaction() as session:
        now = rt.clock.now()
        seller = await sandbox_state.ensure_seller(session, connection.id, connection.platform, connection.country, now)
        if await sandbox_state.count_orders(session, connection.id) == 0:
            await sandbox_state.orders_arrive(session, seller, now, DEMO_ORDERS.get(connection.platform, 2))
        job = jobs_service.enqueue(session, now, connection.account_id, OrderPullPayload(MarketplaceId=connection.id))
        job_id = job.id
    await jobs_service.run_now(rt, job_id)


async def seed(rt: Runtime, tenant: DemoTenant) -> None:
    for connection in tenant.connections:
        if connection.state != service.ACTIVE:
            continue
        await _seed_marketplace_listings(rt, connection)
        if kind_of(connection.platform).orders_pulled:
            await _orders_and_pull(rt, connection)
        await service.check_health(rt, connection)
