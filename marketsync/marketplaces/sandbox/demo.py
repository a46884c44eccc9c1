"""The sandbox marketplaces' part of `marketsync demo` (idempotent): a demo connection's marketplace takes the
tenant's live listings as its own (so mirrors and pushes find them) and, where orders are pulled, receives a few."""

from __future__ import annotations

from collections.abc import Sequence

from marketsync.kinds import kind_of
from marketsync.marketplaces.connector import ListingDraft, MarketplaceListing
from marketsync.marketplaces.sandbox import state
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime

DEMO_ORDERS = {"P1": 4, "P2": 3}


async def seed(
    rt: Runtime, connection: MarketplaceConnection, listings: Sequence[ListingDraft]
) -> dict[str, MarketplaceListing]:
    """What the marketplace holds of each listing afterwards, by merchant SKU."""
    async with rt.db.transaction() as session:
        now = rt.clock.now()
        seller = await state.ensure_seller(session, connection.id, connection.platform, connection.country, now)
        known = [
            state.KnownListing(
                sku=draft.sku,
                listing_id=draft.listing_id,
                external_sku=draft.external_sku,
                title=draft.title,
                category_id=draft.category_id,
                price=draft.price,
                quantity=draft.quantity,
            )
            for draft in listings
        ]
        held = await state.seed_listings(session, seller, now, known)
        if kind_of(connection.platform).orders_pulled and await state.count_orders(session, connection.id) == 0:
            await state.orders_arrive(session, seller, now, DEMO_ORDERS.get(connection.platform, 2))
        return {
            sku: MarketplaceListing(
                listing_id=row.listing_id,
                sku=row.sku,
                external_sku=row.external_sku,
                listing_url=row.listing_url,
                price=row.price,
                quantity=row.quantity,
                category_id=row.category_id,
            )
            for sku, row in held.items()
        }
