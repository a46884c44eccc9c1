"""The delivery engine run by workers: fan events out to subscriptions, deliver due deliveries under leases.

A logical delivery is one (event, subscription) row; its id is X-SVC-Delivery-Id and its bytes are the event's
frozen body, so every attempt (on any worker, after any crash) sends the same id and the same bytes. The lease
covers the wait for a slot and one attempt (two deadlines + margin, docs/decisions/0245); a worker killed
mid-attempt leaves the lease to expire, and the next worker takes the delivery over as the next attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections import Counter, defaultdict, deque
from dataclasses import dataclass
from datetime import datetime

import structlog
from prometheus_client import Counter as MetricCounter
from prometheus_client import Histogram
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.kit.ids import new_id
from marketsync.runtime import Runtime
from marketsync.webhooks import delivery, repository, rules, service
from marketsync.webhooks.delivery import AttemptResult
from marketsync.webhooks.repository import ClaimedDelivery
from marketsync.webhooks.states import SubscriptionStates

log = structlog.get_logger("marketsync.webhooks")
ATTEMPTS = MetricCounter("marketsync_webhook_attempts_total", "Delivery attempts by outcome", ["outcome"])
ATTEMPT_SECONDS = Histogram(
    "marketsync_webhook_attempt_seconds",
    "Duration of a delivery attempt (connect to response)",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
EVENTS_DISPATCHED = MetricCounter("marketsync_events_dispatched_total", "Events fanned out to subscriptions", ["type"])
DISABLED = MetricCounter("marketsync_webhook_disablings_total", "Subscriptions disabled after 6 failed deliveries")
DROPPED = MetricCounter(
    "marketsync_webhook_deliveries_dropped_total",
    "Claimed deliveries not sent: their subscription was deleted or disabled meanwhile",
    ["reason"],
)

FANOUT_BATCH = 500
DELIVERY_CONCURRENCY = 16
RECORD_WAIT_S = 0.05
# With slots to spare and attempts in flight, a run looks for newly due deliveries this often, not only once results
# come in: a receiver stalling its attempts for a deadline must not hold back other subscriptions' deliveries.
CLAIM_POLL_S = 0.1


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
    """A claimed delivery waits for a free slot at most one attempt deadline (no more are claimed ahead than there
    are slots, and every attempt ends by its deadline), then makes one attempt that never outlives its deadline:
    so the lease needs no heartbeat. Two deadlines plus a margin (docs/decisions/0245)."""
    return 2 * rt.settings.webhook_timeout_s + rt.settings.job_lease_s


async def deliver_due(rt: Runtime, worker_id: str, concurrency: int = DELIVERY_CONCURRENCY) -> int:
    """Keep `concurrency` attempts in flight until nothing is due.

    Deliveries are claimed ahead (up to twice the concurrency in hand), so a finished attempt's slot takes the
    next claimed delivery at once, even while a transaction is being written. One write transaction per turn
    records the attempts finished since the last turn and tops the claimed deliveries up; a turn starts once half
    of the slots have finished, RECORD_WAIT_S after the first did, when nothing is left in flight, or, while there
    is room for a batch of claims, every CLAIM_POLL_S (it writes only when a claim would lease something). No more
    than repository.PER_SUBSCRIPTION_CLAIMS deliveries of one subscription are claimed at a time (decision 0317).
    """
    in_flight: set[asyncio.Task[Sent]] = set()
    ready: deque[tuple[ClaimedDelivery, SigningKey]] = deque()
    finished: list[Sent] = []
    progress = asyncio.Event()
    recorded = 0
    batch = max(1, concurrency // 2)  # claim and record in batches, not one transaction per freed slot
    loop = asyncio.get_running_loop()
    states = SubscriptionStates(rt.db)

    def start_ready() -> None:
        while ready and len(in_flight) < concurrency:
            task = asyncio.create_task(send(rt, *ready.popleft(), states))
            in_flight.add(task)
            task.add_done_callback(on_done)

    def on_done(task: asyncio.Task[Sent]) -> None:
        in_flight.discard(task)
        if not task.cancelled():
            finished.append(task.result())
        start_ready()
        progress.set()

    try:
        while True:
            room = 2 * concurrency - len(in_flight) - len(ready)
            wanted = room if room >= batch or not (in_flight or ready) else 0
            results, finished[:] = finished[:], []
            ready.extend(await _turn(rt, worker_id, results, wanted))
            recorded += len(results)
            start_ready()
            if not in_flight and not finished:
                return recorded
            deadline: float | None = None
            if 2 * concurrency - len(in_flight) - len(ready) >= batch:
                deadline = loop.time() + CLAIM_POLL_S
            while in_flight and len(finished) < batch:
                if finished:  # the record window, from the first result on (or the claim poll, if sooner)
                    deadline = min(math.inf if deadline is None else deadline, loop.time() + RECORD_WAIT_S)
                timeout = None if deadline is None else deadline - loop.time()
                if timeout is not None and timeout <= 0:
                    break
                progress.clear()
                try:
                    await asyncio.wait_for(progress.wait(), timeout)
                except TimeoutError:
                    break
    finally:
        # Cancelled (worker shutdown): attempts under way keep their lease and are taken over when it expires;
        # deliveries claimed but not yet attempted are handed back as they were.
        unstarted = [claimed.id for claimed, _ in ready]
        ready.clear()
        for task in list(in_flight):
            task.cancel()
        if in_flight:
            await asyncio.gather(*in_flight, return_exceptions=True)
        if unstarted:
            with contextlib.suppress(Exception):
                async with rt.db.transaction() as session:
                    await repository.release_unstarted(session, worker_id, unstarted)


@dataclass(frozen=True)
class Dropped:
    """Not sent: the subscription was deleted or disabled after the claim (states.DELETED or states.DISABLED)."""

    reason: str


Sent = tuple[ClaimedDelivery, AttemptResult | Dropped]
SigningKey = bytes | Exception  # the derived key, or why the secret could not be revealed


async def _turn(
    rt: Runtime, worker_id: str, finished: list[Sent], wanted: int
) -> list[tuple[ClaimedDelivery, SigningKey]]:
    """Record `finished` and claim up to `wanted` deliveries, in one transaction; none when there is nothing to do
    (an idle worker only reads: it must not serialise on SQLite's writer)."""
    if not finished and (wanted == 0 or not await repository.has_claimable_deliveries(rt.db, rt.clock.now())):
        return []
    abandoned: list[repository.AbandonedAttempt] = []
    claimed: list[ClaimedDelivery] = []
    async with rt.db.transaction() as session:
        now = rt.clock.now()
        if finished:
            await record(rt, session, worker_id, finished, now)
        if wanted:
            claimed, abandoned = await repository.claim_due(session, worker_id, now, lease_seconds(rt), wanted)
            await repository.insert_attempts(
                session,
                [
                    repository.AttemptRow(
                        id=new_id(),
                        account_id=a.account_id,
                        subscription_id=a.subscription_id,
                        delivery_id=a.delivery_id,
                        event_id=a.event_id,
                        event_type=a.event_type,
                        attempt=a.attempt,
                        started_at=now,
                        duration_ms=0,
                        status_code=None,
                        outcome="Abandoned",
                        error_class="WorkerLost",
                        error_detail="the worker holding this attempt stopped before recording it; taken over",
                        response_snippet=None,
                        next_attempt_at=now,
                    )
                    for a in abandoned
                ],
            )
    for a in abandoned:
        log.warning("webhook_delivery_taken_over", delivery_id=a.delivery_id, attempt=a.attempt)
    keys = _signing_keys(rt, claimed)
    return [(c, keys[c.subscription_id]) for c in claimed]


def _signing_keys(rt: Runtime, claimed: list[ClaimedDelivery]) -> dict[str, SigningKey]:
    """Each subscription's derived signing key, revealed once for the claimed batch (never kept beyond it)."""
    keys: dict[str, SigningKey] = {}
    for c in claimed:
        if c.subscription_id not in keys:
            try:
                secret = service.reveal_secret(rt, c.account_id, c.subscription_id, c.secret_encrypted)
                keys[c.subscription_id] = rules.derive_key(secret)
            except Exception as exc:  # a key missing from MARKETSYNC_ENCRYPTION_KEYS: retried once fixed
                keys[c.subscription_id] = exc
    return keys


async def send(rt: Runtime, claimed: ClaimedDelivery, key: SigningKey, states: SubscriptionStates) -> Sent:
    """Sign (fresh timestamp, same bytes) and make one attempt, unless the subscription was deleted or disabled since
    the claim (decision 0316). Never raises: failures become results."""
    reason = await states.why_not_sendable(claimed.subscription_id)
    if reason is not None:
        return claimed, Dropped(reason)
    if isinstance(key, Exception):
        return claimed, AttemptResult(rt.clock.now(), 0, None, "SecretUnavailable", type(key).__name__, None)
    timestamp = int(rt.clock.now().timestamp())
    headers = rules.delivery_headers(
        key, timestamp, claimed.body, claimed.event_type, claimed.id, claimed.attempt, is_test=claimed.is_test
    )
    try:
        return claimed, await delivery.attempt(rt, claimed.url, headers, claimed.body)
    except Exception as exc:
        log.exception("webhook_attempt_crashed", delivery_id=claimed.id)
        return claimed, AttemptResult(rt.clock.now(), 0, None, "InternalError", type(exc).__name__, None)


_DELIVERY_STATUS = {"Succeeded": repository.SUCCEEDED, "Retrying": repository.PENDING, "Failed": repository.FAILED}


async def record(rt: Runtime, session: AsyncSession, worker_id: str, sent: list[Sent], now: datetime) -> None:
    """Log every attempt; advance deliveries this worker still holds; count successes and failed deliveries.
    A dropped delivery was not attempted: no log line, its attempt number taken back (decision 0316)."""
    results: list[tuple[ClaimedDelivery, AttemptResult]] = []
    dropped: list[tuple[ClaimedDelivery, Dropped]] = []
    for claimed, result in sent:
        if isinstance(result, Dropped):
            dropped.append((claimed, result))
        else:
            results.append((claimed, result))
    if dropped:
        await repository.hand_back_dropped(session, worker_id, [claimed.id for claimed, _ in dropped])
        for claimed, reason in dropped:
            DROPPED.labels(reason.reason).inc()
            log.info("webhook_delivery_dropped", delivery_id=claimed.id, reason=reason.reason)
    scale = rt.settings.webhook_retry_scale
    decided = [
        (claimed, result, rules.decide(result.status_code, claimed.attempt, scale, final=claimed.resent))
        for claimed, result in results
    ]
    next_times = [now + d.next_attempt_in if d.next_attempt_in is not None else None for _, _, d in decided]
    # Deliveries first: disabling below cancels whatever is still Pending, retries included.
    held = await repository.finish_held(
        session,
        worker_id,
        [
            repository.FinishedDelivery(
                claimed.id,
                _DELIVERY_STATUS[decision.outcome],
                next_at or now,
                None if decision.outcome == "Retrying" else now,
            )
            for (claimed, _, decision), next_at in zip(decided, next_times, strict=True)
        ],
    )
    effects = await _log_attempts(session, decided, next_times, held)
    await _count_on_subscriptions(session, effects, now)


async def _log_attempts(
    session: AsyncSession,
    decided: list[tuple[ClaimedDelivery, AttemptResult, rules.AttemptDecision]],
    next_times: list[datetime | None],
    held: set[str],
) -> list[tuple[ClaimedDelivery, rules.AttemptDecision, AttemptResult]]:
    """One attempt row per attempt (Discarded where the delivery was no longer this worker's); the attempts whose
    outcome moves their subscription."""
    attempt_rows: list[repository.AttemptRow] = []
    effects: list[tuple[ClaimedDelivery, rules.AttemptDecision, AttemptResult]] = []
    outcomes: Counter[str] = Counter()
    for (claimed, result, decision), next_at in zip(decided, next_times, strict=True):
        is_held = claimed.id in held
        outcome = decision.outcome if is_held else "Discarded"
        outcomes[outcome] += 1
        ATTEMPT_SECONDS.observe(result.duration_ms / 1000)
        attempt_rows.append(
            repository.AttemptRow(
                id=new_id(),
                account_id=claimed.account_id,
                subscription_id=claimed.subscription_id,
                delivery_id=claimed.id,
                event_id=claimed.event_id,
                event_type=claimed.event_type,
                attempt=claimed.attempt,
                started_at=result.started_at,
                duration_ms=result.duration_ms,
                status_code=result.status_code,
                outcome=outcome,
                error_class=result.error_class,
                error_detail=result.error_detail,
                response_snippet=result.snippet,
                next_attempt_at=next_at if is_held else None,
            )
        )
        if is_held:  # else deleted, disabled or taken over meanwhile: the attempt is logged, nothing else moves
            effects.append((claimed, decision, result))
    await repository.insert_attempts(session, attempt_rows)
    for outcome, n in outcomes.items():
        ATTEMPTS.labels(outcome).inc(n)
    return effects


async def _count_on_subscriptions(
    session: AsyncSession,
    effects: list[tuple[ClaimedDelivery, rules.AttemptDecision, AttemptResult]],
    now: datetime,
) -> None:
    """Successes reset a subscription's consecutive failures; a failed delivery counts one, and disables the
    subscription at the limit. Successes in one batch share `now`, so a run of them per subscription is one update;
    a failure first applies the success that preceded it, keeping "consecutive" in completion order."""
    succeeded: set[str] = set()
    for claimed, decision, result in effects:
        if decision.outcome == "Succeeded":
            succeeded.add(claimed.subscription_id)
        elif decision.delivery_failed:
            if claimed.subscription_id in succeeded:
                succeeded.discard(claimed.subscription_id)
                await repository.subscriptions_succeeded(session, [claimed.subscription_id], now)
            failures = await repository.subscription_failed(session, claimed.subscription_id)
            if failures is not None and rules.should_disable(failures):
                await repository.disable_subscription(
                    session, claimed.subscription_id, now, rules.disabled_reason(failures, result.summary)
                )
                DISABLED.inc()
                log.info("webhook_subscription_disabled", subscription_id=claimed.subscription_id)
    await repository.subscriptions_succeeded(session, succeeded, now)
