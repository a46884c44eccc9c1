"""This domain's part of `marketsync demo`: the four shipped taxonomies (idempotent: an import of
unchanged content is a no-op)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from marketsync.catalog import service, taxonomy
from marketsync.marketplaces.sandbox import taxonomies as shipped
from marketsync.runtime import Runtime

if TYPE_CHECKING:
    from marketsync.demo import DemoTenant


async def seed(rt: Runtime, tenant: DemoTenant) -> None:
    for platform in taxonomy.PLATFORMS:
        generated = shipped.generate(platform)
        async with rt.db.transaction() as session:
            await service.import_taxonomy(rt, session, generated)
