"""This domain's part of `marketsync demo`: the category tree of each demo marketplace's site, as its marketplace
gives it (idempotent: a site whose current version has this content is left alone, so its ProductTypeViewIds stay
valid)."""

from __future__ import annotations

from collections.abc import Sequence

from marketsync.catalog.taxonomy import service
from marketsync.marketplaces.connector import connector_for
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime


async def seed(rt: Runtime, account_id: str, connections: Sequence[MarketplaceConnection]) -> None:
    for connection in connections:
        generated = await connector_for(rt, connection).category_tree()
        if generated is None:  # found by search at that marketplace: nothing to load ahead
            continue
        async with rt.db.transaction() as session:
            await service.load_taxonomy_unless_current(rt, session, generated, connection.country)
