"""This domain's part of `marketsync demo`: the shipped taxonomy of each demo marketplace's site (idempotent: an
import of unchanged content is a no-op)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from marketsync.catalog import service
from marketsync.marketplaces.sandbox import taxonomies as shipped
from marketsync.runtime import Runtime

if TYPE_CHECKING:
    from marketsync.demo import DemoTenant


async def seed(rt: Runtime, tenant: DemoTenant) -> None:
    for connection in tenant.connections:
        generated = shipped.generate(connection.platform)
        async with rt.db.transaction() as session:
            await service.import_taxonomy(rt, session, generated, connection.country)
