"""Workers' webhook duties: fan-out and delivery pollers (every worker, every cycle) and the retention sweep."""

from __future__ import annotations

from collections import Counter

import structlog

from marketsync.jobs.registry import poller, schedule
from marketsync.runtime import Runtime
from marketsync.webhooks import engine, repository, rules

log = structlog.get_logger("marketsync.webhooks")

RETENTION_SWEEP_INTERVAL_S = 3600.0
RETENTION_SWEEP_BATCH = 2_000


@poller("webhooks.fan-out")
async def fan_out_events(rt: Runtime, worker_id: str) -> int:
    return await engine.fan_out(rt)


@poller("webhooks.deliver")
async def deliver_webhooks(rt: Runtime, worker_id: str) -> int:
    # Fan out first as well: an event recorded since the last cycle is delivered in this one, not the next.
    # (The separate fan-out poller keeps new events flowing while a long delivery run is busy.)
    total = 0
    while True:
        fanned_out = await engine.fan_out(rt)
        delivered = await engine.deliver_due(rt, worker_id)
        total += delivered
        # An event that arrived while this run was finishing woke a worker cycle that found this poller still
        # running: look again now rather than at the next poll interval (after a run that did some work only, so
        # a delivery no claim can take never makes this loop spin).
        if not (fanned_out or delivered):
            return total
        if not await repository.has_undispatched_events(rt.db) and not await repository.has_due_deliveries(
            rt.db, rt.clock.now()
        ):
            return total


@schedule("webhooks.retention", interval_s=lambda _settings: RETENTION_SWEEP_INTERVAL_S)
async def sweep_attempt_log(rt: Runtime) -> None:
    """The attempt log is kept 30 days (spec section 6), with the finished deliveries and events behind it."""
    cutoff, swept = rt.clock.now() - rules.ATTEMPT_LOG_RETENTION, Counter[str]()
    while True:
        # In batches, a transaction each: a month of a busy account's log deleted at once held SQLite's one writer
        # (and every push waiting for it) for as long as that took.
        async with rt.db.transaction() as session:
            batch = await repository.sweep(session, cutoff, RETENTION_SWEEP_BATCH)
        swept.update(batch)
        if all(count < RETENTION_SWEEP_BATCH for count in batch.values()):
            break
    log.info("webhook_retention_swept", **{kind: swept[kind] for kind in ("Attempts", "Deliveries", "Events")})
