"""The delivery engine run by workers: fan events out to subscriptions, deliver due deliveries under leases.

A logical delivery is one (event, subscription) row; its id is X-SVC-Delivery-Id and its bytes are the event's
frozen body, so every attempt (on any worker, after any crash) sends the same id and the same bytes. The lease
covers one attempt (deadline + margin); a worker killed mid-attempt leaves the lease to expire, and the next
worker takes the delivery over as the next attempt.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

import structlog
from prometheus_client import Counter, Histogram

from marketsync.kit.ids import new_id
from marketsync.runtime import Runtime
from marketsync.webhooks import delivery, repository, rules, service
from marketsync.webhooks.delivery import AttemptResult
from marketsync.webhooks.repository import ClaimedDelivery

log = structlog.get_logger("marketsync.webhooks")
ATTEMPTS = Counter("marketsync_webhook_attempts_total", "Delivery attempts by outcome", ["outcome"])
ATTEMPT_SECONDS = Histogram(
    "marketsync_webhook_attempt_seconds",
    "Duration of a delivery attempt (connect to response)",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
EVENTS_DISPATCHED = Counter("marketsync_events_dispatched_total", "Events fanned out to subscriptions", ["type"])
DISABLED = Counter("marketsync_webhook_disablings_total", "Subscriptions disabled after 6 failed deliveries")

FANOUT_BATCH = 500
DELIVERY_CONCURRENCY = 16
RECORD_WINDOW_S = 0.02


async def fan_out(rt: Runtime) -> int:
    """Turn undispatched events into one Pending delivery per active subscription naming the event type."""
    handled = 0
    if not await repository.has_undispatched_events(rt.db):
        return handled
    while True:
        async with rt.db.transaction() as session:
            events = await repository.undispatched_events(session, FANOUT_BATCH)
            if not events:
                break
            now = rt.clock.now()
            subscriptions: dict[str, list[tuple[str, list[str]]]] = defaultdict(list)
            for subscription_id, account_id, event_types in await repository.active_subscriptions(
                session, (e.account_id for e in events)
            ):
                subscriptions[account_id].append((subscription_id, event_types))
            rows = [
                {
                    "id": new_id(),
                    "account_id": event.account_id,
                    "subscription_id": subscription_id,
                    "event_id": event.id,
                    "event_type": event.type,
                    "status": repository.PENDING,
                    "attempts": 0,
                    "next_attempt_at": now,
                    "lease_owner": None,
                    "lease_expires_at": None,
                    "created_at": now,
                    "finished_at": None,
                }
                for event in events
                for subscription_id, event_types in subscriptions[event.account_id]
                if event.type in event_types
            ]
            await repository.insert_deliveries(session, rows)
            await repository.mark_dispatched(session, [e.id for e in events], now)
        for event in events:
            EVENTS_DISPATCHED.labels(event.type).inc()
        handled += len(events)
        if len(events) < FANOUT_BATCH:
            break
    return handled


def lease_seconds(rt: Runtime) -> float:
    """One attempt never outlives its deadline, so the lease needs no heartbeat: deadline plus a margin."""
    return rt.settings.webhook_timeout_s + rt.settings.job_lease_s


async def deliver_due(rt: Runtime, worker_id: str, concurrency: int = DELIVERY_CONCURRENCY) -> int:
    """Keep up to `concurrency` attempts in flight until nothing is due; record results as they complete."""
    in_flight: dict[asyncio.Task[AttemptResult], ClaimedDelivery] = {}
    finished = 0
    refill_at = max(1, concurrency // 4)  # claim in batches, not one transaction per freed slot
    try:
        while True:
            free = concurrency - len(in_flight)
            if free >= refill_at or not in_flight:
                for claimed in await _claim(rt, worker_id, free):
                    in_flight[asyncio.create_task(send(rt, claimed))] = claimed
            if not in_flight:
                return finished
            done, pending = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
            if pending:
                # Gather what completes within a short window: one transaction records the whole batch,
                # while a slow receiver never holds the others back for more than the window.
                more, _ = await asyncio.wait(pending, timeout=RECORD_WINDOW_S)
                done |= more
            results = [(in_flight.pop(task), task.result()) for task in done]
            await record(rt, worker_id, results)
            finished += len(results)
    finally:
        # Cancelled (worker shutdown): unfinished attempts keep their lease and are taken over when it expires.
        for task in in_flight:
            task.cancel()
        if in_flight:
            await asyncio.gather(*in_flight, return_exceptions=True)


async def _claim(rt: Runtime, worker_id: str, limit: int) -> list[ClaimedDelivery]:
    if not await repository.has_due_deliveries(rt.db, rt.clock.now()):
        return []
    async with rt.db.transaction() as session:
        now = rt.clock.now()
        claimed, abandoned = await repository.claim_due(session, worker_id, now, lease_seconds(rt), limit)
        await repository.insert_attempts(
            session,
            [
                {
                    "id": new_id(),
                    "account_id": a.account_id,
                    "subscription_id": a.subscription_id,
                    "delivery_id": a.delivery_id,
                    "event_id": a.event_id,
                    "event_type": a.event_type,
                    "attempt": a.attempt,
                    "started_at": now,
                    "duration_ms": 0,
                    "status_code": None,
                    "outcome": "Abandoned",
                    "error_class": "WorkerLost",
                    "error_detail": "the worker holding this attempt stopped before recording it; taken over",
                    "response_snippet": None,
                    "next_attempt_at": now,
                }
                for a in abandoned
            ],
        )
    for a in abandoned:
        log.warning("webhook_delivery_taken_over", delivery_id=a.delivery_id, attempt=a.attempt)
    return claimed


async def send(rt: Runtime, claimed: ClaimedDelivery) -> AttemptResult:
    """Sign (fresh timestamp, same bytes) and make one attempt. Never raises: failures become results."""
    try:
        secret = service.reveal_secret(rt, claimed.account_id, claimed.subscription_id, claimed.secret_encrypted)
    except Exception as exc:  # a key missing from MARKETSYNC_ENCRYPTION_KEYS: retried once fixed
        now = rt.clock.now()
        return AttemptResult(now, 0, None, "SecretUnavailable", type(exc).__name__, None)
    timestamp = int(rt.clock.now().timestamp())
    headers = rules.delivery_headers(
        rules.derive_key(secret), timestamp, claimed.body, claimed.event_type, claimed.id, claimed.attempt
    )
    try:
        return await delivery.attempt(rt, claimed.url, headers, claimed.body)
    except Exception as exc:
        log.exception("webhook_attempt_crashed", delivery_id=claimed.id)
        return AttemptResult(rt.clock.now(), 0, None, "InternalError", type(exc).__name__, None)


async def record(rt: Runtime, worker_id: str, results: list[tuple[ClaimedDelivery, AttemptResult]]) -> None:
    """Log every attempt; advance deliveries this worker still holds; count successes and failed deliveries."""
    scale = rt.settings.webhook_retry_scale
    async with rt.db.transaction() as session:
        now = rt.clock.now()
        held = await repository.still_leased(session, [c.id for c, _ in results], worker_id)
        attempt_rows: list[dict[str, Any]] = []
        delivery_rows: list[dict[str, Any]] = []
        effects: list[tuple[ClaimedDelivery, rules.AttemptDecision, AttemptResult]] = []
        for claimed, result in results:
            decision = rules.decide(result.status_code, claimed.attempt, scale)
            next_at = now + decision.next_attempt_in if decision.next_attempt_in is not None else None
            attempt_rows.append(
                {
                    "id": new_id(),
                    "account_id": claimed.account_id,
                    "subscription_id": claimed.subscription_id,
                    "delivery_id": claimed.id,
                    "event_id": claimed.event_id,
                    "event_type": claimed.event_type,
                    "attempt": claimed.attempt,
                    "started_at": result.started_at,
                    "duration_ms": result.duration_ms,
                    "status_code": result.status_code,
                    "outcome": decision.outcome if claimed.id in held else "Discarded",
                    "error_class": result.error_class,
                    "error_detail": result.error_detail,
                    "response_snippet": result.snippet,
                    "next_attempt_at": next_at if claimed.id in held else None,
                }
            )
            if claimed.id not in held:
                continue  # deleted, disabled or taken over meanwhile: the attempt is logged, nothing else moves
            status = {
                "Succeeded": repository.SUCCEEDED,
                "Retrying": repository.PENDING,
                "Failed": repository.FAILED,
            }[decision.outcome]
            delivery_rows.append(
                {
                    "d_id": claimed.id,
                    "d_status": status,
                    "d_next": next_at or now,
                    "d_finished": None if status == repository.PENDING else now,
                }
            )
            effects.append((claimed, decision, result))
        await repository.insert_attempts(session, attempt_rows)
        for row in attempt_rows:
            ATTEMPTS.labels(row["outcome"]).inc()
            ATTEMPT_SECONDS.observe(row["duration_ms"] / 1000)
        # Deliveries first: disabling below cancels whatever is still Pending, retries included.
        await repository.finish_deliveries(session, delivery_rows)
        # Successes in one batch share `now`, so a run of them per subscription is one update; a failure
        # first applies the success that preceded it, keeping "consecutive" in completion order.
        succeeded: set[str] = set()
        for claimed, decision, result in effects:
            if decision.outcome == "Succeeded":
                succeeded.add(claimed.subscription_id)
            elif decision.delivery_failed:
                if claimed.subscription_id in succeeded:
                    succeeded.discard(claimed.subscription_id)
                    await repository.subscription_succeeded(session, claimed.subscription_id, now)
                failures = await repository.subscription_failed(session, claimed.subscription_id)
                if failures is not None and rules.should_disable(failures):
                    await repository.disable_subscription(
                        session, claimed.subscription_id, now, rules.disabled_reason(failures, result.summary)
                    )
                    DISABLED.inc()
                    log.info("webhook_subscription_disabled", subscription_id=claimed.subscription_id)
        for subscription_id in sorted(succeeded):
            await repository.subscription_succeeded(session, subscription_id, now)
