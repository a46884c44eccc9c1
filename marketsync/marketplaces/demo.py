"""This domain's part of `marketsync demo` (idempotent).

Runs after the inventory demo created the catalogue and its listings: each demo connection's marketplace does its
part (the sandbox takes the tenant's live listings, so mirrors and pushes find them, and receives a few orders),
orders are pulled at once where they are pulled, and every connection's health is checked so it is known.
"""

from __future__ import annotations

from collections.abc import Sequence

from marketsync.jobs import service as jobs_service
from marketsync.jobs.types import OrderPullPayload
from marketsync.kinds import kind_of
from marketsync.marketplaces import repository, service
from marketsync.marketplaces.connector import DemoSeeder, ListingDraft, registry_of
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime


async def _seed_at_marketplace(rt: Runtime, connection: MarketplaceConnection, seeder: DemoSeeder) -> None:
    async with rt.db.read() as session:
        pairs = await repository.live_listings(session, connection.id)
    drafts = [
        ListingDraft(
            reference=listing.id,
            sku=product.sku,
            external_sku=listing.external_sku,
            listing_id=listing.listing_id,
            category_id=listing.category_id,
            attributes={},
            title=product.title,
            price=product.price,
            quantity=product.quantity,
        )
        for listing, product in pairs
    ]
    held = await seeder(rt, connection, drafts)  # outside our transaction: the marketplace writes its own state
    async with rt.db.transaction() as session:
        for listing, product in await repository.live_listings(session, connection.id):
            remote = held.get(product.sku)
            if remote is None:
                continue
            if listing.listing_id is None or listing.external_sku is None:
                listing.listing_id, listing.external_sku, listing.listing_url = (
                    remote.listing_id,
                    remote.external_sku,
                    remote.listing_url,
                )
            listing.marketplace_price, listing.marketplace_quantity = remote.price, remote.quantity


async def _pull_orders(rt: Runtime, connection: MarketplaceConnection) -> None:
    async with rt.db.transaction() as session:
        job = jobs_service.enqueue(
            session, rt.clock.now(), connection.account_id, OrderPullPayload(MarketplaceId=connection.id)
        )
        job_id = job.id
    await jobs_service.run_now(rt, job_id)


async def seed(rt: Runtime, account_id: str, connections: Sequence[MarketplaceConnection]) -> None:
    registry = registry_of(rt)
    for connection in connections:
        if connection.state != service.ACTIVE:
            continue
        marketplace = registry.marketplace(connection.platform)
        if marketplace is not None and marketplace.seed_demo is not None:
            await _seed_at_marketplace(rt, connection, marketplace.seed_demo)
        if kind_of(connection.platform).orders_pulled:
            await _pull_orders(rt, connection)
        await service.check_health(rt, connection)
