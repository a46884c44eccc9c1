"""This domain's part of `marketsync demo` (idempotent)."""

from __future__ import annotations

from collections.abc import Sequence

from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime


async def seed(rt: Runtime, account_id: str, connections: Sequence[MarketplaceConnection]) -> None:
    """Nothing to add: demo orders arrive the way real ones do. The marketplaces seeder makes buyers order
    at the sandbox P1 and P2 marketplaces and pulls them in through `orders.service.ingest_pulled_orders`,
    so the demo's orders carry real marketplace ids and write-back to P1 works on them."""
    return None
