"""Housekeeping: expired tokens and idempotency records are swept hourly."""

from __future__ import annotations

from marketsync.auth import repository
from marketsync.jobs.registry import schedule
from marketsync.kit import idempotency
from marketsync.runtime import Runtime


@schedule("auth.sweep-expired", interval_s=lambda s: 3600.0)
async def sweep_expired(rt: Runtime) -> None:
    async with rt.db.transaction() as session:
        await repository.delete_expired_tokens(session, rt.clock.now())
        await idempotency.delete_expired(session, rt.clock.now())
