"""Housekeeping: expired idempotency records are swept hourly (access tokens are not stored: docs/decisions/0250)."""

from __future__ import annotations

from marketsync.http import idempotency
from marketsync.jobs.registry import schedule
from marketsync.runtime import Runtime


@schedule("auth.sweep-expired", interval_s=lambda s: 3600.0)
async def sweep_expired(rt: Runtime) -> None:
    async with rt.db.transaction() as session:
        await idempotency.delete_expired(session, rt.clock.now())
