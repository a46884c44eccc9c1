"""This domain's part of `marketsync demo` (idempotent)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from marketsync.runtime import Runtime

if TYPE_CHECKING:
    from marketsync.demo import DemoTenant


async def seed(rt: Runtime, tenant: DemoTenant) -> None:
    """Nothing to add: demo orders arrive the way real ones do. The marketplaces seeder makes buyers order
    at the sandbox P1 and P2 marketplaces and pulls them in through `orders.service.ingest_pulled_orders`,
    so the demo's orders carry real marketplace ids and write-back to P1 works on them."""
    return None
