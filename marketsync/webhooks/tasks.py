"""Workers' webhook duties: fan-out and delivery pollers (every worker, every cycle) and the retention sweep."""

from __future__ import annotations

import structlog

from marketsync.jobs.registry import poller, schedule
from marketsync.runtime import Runtime
from marketsync.webhooks import engine, repository, rules

log = structlog.get_logger("marketsync.webhooks")

RETENTION_SWEEP_INTERVAL_S = 3600.0


@poller("webhooks.fan-out")
async def fan_out_events(rt: Runtime, worker_id: str) -> int:
    return await engine.fan_out(rt)


@poller("webhooks.deliver")
async def deliver_webhooks(rt: Runtime, worker_id: str) -> int:
    # Fan out first as well: an event recorded since the last cycle is delivered in this one, not the next.
    # (The separate fan-out poller keeps new events flowing while a long delivery run is busy.)
    await engine.fan_out(rt)
    return await engine.deliver_due(rt, worker_id)


@schedule("webhooks.retention", interval_s=lambda _settings: RETENTION_SWEEP_INTERVAL_S)
async def sweep_attempt_log(rt: Runtime) -> None:
    """The attempt log is kept 30 days (spec section 6), with the finished deliveries and events behind it."""
    async with rt.db.transaction() as session:
        swept = await repository.sweep(session, rt.clock.now() - rules.ATTEMPT_LOG_RETENTION)
    log.info("webhook_retention_swept", **swept)
