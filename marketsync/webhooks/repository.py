"""All webhook queries: subscriptions, fan-out from the event outbox, leased delivery claims, the attempt log."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, bindparam, case, delete, exists, func, or_, select, true, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import BindParameter

from marketsync.db import (
    Database,
    DriverReader,
    DriverSql,
    PreparedRead,
    SessionDriver,
    insert_for,
    older_than,
    session_driver,
)
from marketsync.db.statements import Statement
from marketsync.models import Event
from marketsync.models.base import UTCDateTime
from marketsync.models.webhooks import WebhookAttempt, WebhookDelivery, WebhookSubscription
from marketsync.webhooks import statements

PENDING, SUCCEEDED, FAILED, CANCELLED = "Pending", "Succeeded", "Failed", "Cancelled"


def _rowcount(result: Any) -> int:
    return int(getattr(result, "rowcount", 0) or 0)


# --- subscriptions ---------------------------------------------------------------------------------------------


async def list_subscriptions(session: AsyncSession, account_id: str) -> Sequence[WebhookSubscription]:
    result = await session.execute(
        select(WebhookSubscription)
        .where(WebhookSubscription.account_id == account_id)
        .order_by(WebhookSubscription.created_at, WebhookSubscription.id)
    )
    return result.scalars().all()


async def delete_subscription(session: AsyncSession, account_id: str, subscription_id: str) -> bool:
    # Queued deliveries go with it (explicitly, so SQLite needs no cascade support at run time).
    await session.execute(
        delete(WebhookDelivery).where(
            WebhookDelivery.subscription_id == subscription_id, WebhookDelivery.account_id == account_id
        )
    )
    result = await session.execute(
        delete(WebhookSubscription).where(
            WebhookSubscription.id == subscription_id, WebhookSubscription.account_id == account_id
        )
    )
    return _rowcount(result) > 0


async def secrets_page(session: AsyncSession, after_id: str, limit: int) -> Sequence[tuple[str, str, str]]:
    result = await session.execute(
        select(WebhookSubscription.id, WebhookSubscription.account_id, WebhookSubscription.secret_encrypted)
        .where(WebhookSubscription.id > after_id)
        .order_by(WebhookSubscription.id)
        .limit(limit)
    )
    return [(r[0], r[1], r[2]) for r in result.all()]


async def replace_secret(session: AsyncSession, subscription_id: str, old: str, new: str) -> bool:
    result = await session.execute(
        update(WebhookSubscription)
        .where(WebhookSubscription.id == subscription_id, WebhookSubscription.secret_encrypted == old)
        .values(secret_encrypted=new)
    )
    return _rowcount(result) > 0


# --- fan-out -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PendingEvent:
    id: str
    account_id: str
    type: str


async def undispatched_events(session: AsyncSession, limit: int) -> list[PendingEvent]:
    result = await session.execute(
        select(Event.id, Event.account_id, Event.type)
        .where(Event.dispatched_at.is_(None))
        .order_by(Event.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return [PendingEvent(r[0], r[1], r[2]) for r in result.all()]


async def active_subscriptions(session: AsyncSession, account_ids: Iterable[str]) -> list[tuple[str, str, list[str]]]:
    result = await session.execute(
        select(WebhookSubscription.id, WebhookSubscription.account_id, WebhookSubscription.event_types).where(
            WebhookSubscription.account_id.in_(sorted(set(account_ids))), WebhookSubscription.is_active.is_(True)
        )
    )
    return [(r[0], r[1], list(r[2])) for r in result.all()]


async def insert_deliveries(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if rows:
        await session.execute(
            insert_for(session, WebhookDelivery).on_conflict_do_nothing(index_elements=["event_id", "subscription_id"]),
            rows,
        )


async def mark_dispatched(session: AsyncSession, event_ids: list[str], now: datetime) -> None:
    await session.execute(update(Event).where(Event.id.in_(event_ids)).values(dispatched_at=now))


# --- delivery claims ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaimedDelivery:
    id: str
    account_id: str
    subscription_id: str
    event_id: str
    event_type: str
    attempt: int  # the number of the attempt about to be made (X-SVC-Attempt)
    url: str
    secret_encrypted: str
    body: bytes
    resent: bool  # sent again by a person: a failed attempt is final
    is_test: bool = False  # a test event: X-SVC-Test: true on every attempt


@dataclass(frozen=True)
class AbandonedAttempt:
    delivery_id: str
    account_id: str
    subscription_id: str
    event_id: str
    event_type: str
    attempt: int


def _due(now: datetime | BindParameter[datetime]) -> ColumnElement[bool]:
    return and_(
        WebhookDelivery.status == PENDING,
        WebhookDelivery.next_attempt_at <= now,
        or_(WebhookDelivery.lease_expires_at.is_(None), WebhookDelivery.lease_expires_at < now),
    )


_ANY_UNDISPATCHED_EVENT = PreparedRead(select(exists().where(Event.dispatched_at.is_(None))))
_ANY_DUE_DELIVERY = PreparedRead(select(exists().where(_due(bindparam("now", type_=UTCDateTime())))))


async def has_undispatched_events(db: Database) -> bool:
    """A read-only look before taking the write lock: idle workers must not serialise on SQLite's writer."""
    return await _exists(db, _ANY_UNDISPATCHED_EVENT, {})


async def has_due_deliveries(db: Database, now: datetime) -> bool:
    return await _exists(db, _ANY_DUE_DELIVERY, {"now": now})


async def _exists(db: Database, prepared: PreparedRead, params: dict[str, Any]) -> bool:
    row = await db.first(prepared, params)
    return bool(row and row[0])


# The claim and the recording of results are the worker's hot path: hand-written SQL on the raw driver inside the
# session's transaction (db.SessionDriver), a fixed number of statements per batch whatever its size (statements.py).

# At most this many deliveries of one subscription are leased at a time, across workers: a slow receiver holds that
# many slots, never all of them (docs/decisions/0317; statements.CLAIM_DUE).
PER_SUBSCRIPTION_CLAIMS = 4


async def has_claimable_deliveries(db: Database, now: datetime) -> bool:
    """Whether a claim would lease anything (due, and within its subscription's cap): a read-only look, so a worker
    whose only due deliveries wait for a capped subscription does not take SQLite's writer to claim nothing."""

    async def look(reader: DriverReader) -> bool:
        return await any_claimable(reader, now)

    return await db.driver_read(look)


async def any_claimable(reader: DriverReader, now: datetime) -> bool:
    """has_claimable_deliveries on a reader already held."""
    at = _stored_time(now, reader.postgres)
    return bool(await reader.fetch(statements.ANY_CLAIMABLE.text(reader.postgres), (at, PER_SUBSCRIPTION_CLAIMS)))


def _stored_time(value: datetime | None, postgres: bool) -> datetime | str | None:
    """A UTC instant as the column stores it (naive UTC; text with microseconds on SQLite, sorting as text)."""
    if value is None:
        return None
    naive = value.replace(tzinfo=None) if value.tzinfo is UTC else value.astimezone(UTC).replace(tzinfo=None)
    return naive if postgres else naive.isoformat(sep=" ", timespec="microseconds")


async def claim_due(
    session: AsyncSession, worker_id: str, now: datetime, lease_s: float, limit: int
) -> tuple[list[ClaimedDelivery], list[AbandonedAttempt]]:
    """Lease up to `limit` due deliveries, at most PER_SUBSCRIPTION_CLAIMS of a subscription counting those it has
    leased already; an expired lease means its worker died mid-attempt (taken over).

    Two statements: the due rows with everything an attempt needs (locked, SKIP LOCKED on PostgreSQL; SQLite's
    writer transaction already excludes other claimers), then the lease on exactly those rows.
    """
    driver = await session_driver(session)
    at = _stored_time(now, driver.postgres)
    rows = await driver.fetch(statements.CLAIM_DUE.text(driver.postgres), (at, PER_SUBSCRIPTION_CLAIMS, limit))
    if not rows:
        return [], []
    ids = [r[0] for r in rows]
    expires = _stored_time(now + timedelta(seconds=lease_s), driver.postgres)
    lease = statements.LEASE.text(driver.postgres, len(ids))
    await driver.execute(lease, (worker_id, expires, ids) if driver.postgres else (worker_id, expires, *ids))
    claimed = [
        ClaimedDelivery(r[0], r[1], r[2], r[3], r[4], int(r[5]) + 1, r[7], r[8], bytes(r[9]), bool(r[10]), bool(r[11]))
        for r in rows
    ]
    abandoned = [
        AbandonedAttempt(c.id, c.account_id, c.subscription_id, c.event_id, c.event_type, c.attempt - 1)
        for c, r in zip(claimed, rows, strict=True)
        if r[6] is not None
    ]
    return claimed, abandoned


async def _hand_back(session: AsyncSession, statement: Statement, worker_id: str, delivery_ids: list[str]) -> None:
    if not delivery_ids:
        return
    driver = await session_driver(session)
    sql = statement.text(driver.postgres, len(delivery_ids))
    await driver.execute(sql, (delivery_ids, worker_id) if driver.postgres else (*delivery_ids, worker_id))


async def release_unstarted(session: AsyncSession, worker_id: str, delivery_ids: list[str]) -> None:
    """Hand back deliveries claimed but never attempted (a worker stopping): due again, attempt number unused."""
    await _hand_back(session, statements.HAND_BACK_UNSTARTED, worker_id, delivery_ids)


async def hand_back_dropped(session: AsyncSession, worker_id: str, delivery_ids: list[str]) -> None:
    """Deliveries claimed but not sent because their subscription was deleted or disabled meanwhile: the attempt
    number they were given is taken back. A deleted one's row is gone; a disabled one's is Cancelled with its lease
    cleared (and stays so unless recovered); one leased to another worker since is left alone."""
    await _hand_back(session, statements.HAND_BACK_DROPPED, worker_id, delivery_ids)


async def subscriptions_active(db: Database, subscription_ids: Collection[str]) -> dict[str, bool]:
    """IsActive of each subscription that still exists (a deleted one is absent), on a reader."""

    async def look(reader: DriverReader) -> dict[str, bool]:
        sql = DriverSql(reader.postgres)
        rows = await reader.fetch(
            f"SELECT id, is_active FROM webhook_subscriptions WHERE {sql.bind_in('id', subscription_ids)}",  # noqa: S608
            sql.params,
        )
        return {row[0]: bool(row[1]) for row in rows}

    return await db.driver_read(look)


@dataclass(frozen=True)
class FinishedDelivery:
    """A delivery's new state after an attempt; the lease is released."""

    id: str
    status: str
    next_attempt_at: datetime
    finished_at: datetime | None


async def finish_held(session: AsyncSession, worker_id: str, rows: Sequence[FinishedDelivery]) -> set[str]:
    """Move the deliveries this worker still holds (leased to it and Pending: not taken over, cancelled or deleted
    meanwhile) to their new state; the ids of those moved. One statement for the batch."""
    if not rows:
        return set()
    driver = await session_driver(session)
    sql = statements.FINISH_HELD.text(driver.postgres, len(rows))
    if driver.postgres:
        moved = await driver.fetch(
            sql,
            (
                [r.id for r in rows],
                [r.status for r in rows],
                [_stored_time(r.next_attempt_at, True) for r in rows],
                [_stored_time(r.finished_at, True) for r in rows],
                worker_id,
            ),
        )
    else:
        values: list[Any] = []
        for r in rows:
            values += (r.id, r.status, _stored_time(r.next_attempt_at, False), _stored_time(r.finished_at, False))
        moved = await driver.fetch(sql, (*values, worker_id))
    return {r[0] for r in moved}


@dataclass(frozen=True)
class AttemptRow:
    """One line of the attempt log (spec section 6): timing, status, outcome, error and the response snippet."""

    id: str
    account_id: str
    subscription_id: str
    delivery_id: str
    event_id: str
    event_type: str
    attempt: int
    started_at: datetime
    duration_ms: int
    status_code: int | None
    outcome: str
    error_class: str | None
    error_detail: str | None
    response_snippet: str | None
    next_attempt_at: datetime | None


async def insert_attempts(session: AsyncSession, rows: Sequence[AttemptRow]) -> None:
    """One statement for the batch (PostgreSQL: over unnest'ed arrays; SQLite: executemany)."""
    if not rows:
        return
    driver = await session_driver(session)
    postgres = driver.postgres
    values = [
        (
            r.id,
            r.account_id,
            r.subscription_id,
            r.delivery_id,
            r.event_id,
            r.event_type,
            r.attempt,
            _stored_time(r.started_at, postgres),
            r.duration_ms,
            r.status_code,
            r.outcome,
            r.error_class,
            r.error_detail,
            r.response_snippet,
            _stored_time(r.next_attempt_at, postgres),
        )
        for r in rows
    ]
    await driver.execute_rows(statements.INSERT_ATTEMPTS.text(postgres), values)


async def subscriptions_succeeded(session: AsyncSession, subscription_ids: Collection[str], now: datetime) -> None:
    """A delivery succeeded for each of these subscriptions: ConsecutiveFailures back to 0 (one statement)."""
    if not subscription_ids:
        return
    driver: SessionDriver = await session_driver(session)
    ids = sorted(subscription_ids)  # one lock order for every worker (PostgreSQL)
    at = _stored_time(now, driver.postgres)
    sql = statements.SUBSCRIPTIONS_SUCCEEDED.text(driver.postgres, len(ids))
    await driver.execute(sql, (at, ids) if driver.postgres else (at, *ids))


async def subscription_failed(session: AsyncSession, subscription_id: str) -> int | None:
    """Count one failed delivery; the new ConsecutiveFailures, or None if the subscription is gone or disabled."""
    result = await session.execute(
        update(WebhookSubscription)
        .where(WebhookSubscription.id == subscription_id, WebhookSubscription.is_active.is_(True))
        .values(consecutive_failures=WebhookSubscription.consecutive_failures + 1)
        .returning(WebhookSubscription.consecutive_failures)
    )
    value = result.scalar_one_or_none()
    return None if value is None else int(value)


async def disable_subscription(session: AsyncSession, subscription_id: str, now: datetime, reason: str) -> None:
    await session.execute(
        update(WebhookSubscription)
        .where(WebhookSubscription.id == subscription_id, WebhookSubscription.is_active.is_(True))
        .values(is_active=False, disabled_at=now, disabled_reason=reason)
    )
    # Deliveries stop: queued ones are cancelled; one in flight elsewhere finds its row no longer Pending.
    await session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.subscription_id == subscription_id, WebhookDelivery.status == PENDING)
        .values(status=CANCELLED, finished_at=now, lease_owner=None, lease_expires_at=None)
    )


# --- a person's repairs in the app: resend, recover, sample, replace -------------------------------------------


async def subscription_of(session: AsyncSession, account_id: str, subscription_id: str) -> WebhookSubscription | None:
    result = await session.execute(
        select(WebhookSubscription).where(
            WebhookSubscription.id == subscription_id, WebhookSubscription.account_id == account_id
        )
    )
    return result.scalar_one_or_none()


async def delivery_of(session: AsyncSession, account_id: str, delivery_id: str) -> WebhookDelivery | None:
    result = await session.execute(
        select(WebhookDelivery).where(WebhookDelivery.id == delivery_id, WebhookDelivery.account_id == account_id)
    )
    return result.scalar_one_or_none()


def _not_in_flight(now: datetime) -> ColumnElement[bool]:
    # An attempt under a live lease is on the wire: its worker records it; requeueing would race it.
    return or_(WebhookDelivery.lease_expires_at.is_(None), WebhookDelivery.lease_expires_at < now)


async def requeue(
    session: AsyncSession,
    account_id: str,
    now: datetime,
    *,
    delivery_id: str | None = None,
    subscription_id: str | None = None,
    finished_since: datetime | None = None,
) -> int:
    """Make deliveries due now: one by id (any state), or a subscription's Failed and Cancelled ones finished
    since a time. Same delivery id and bytes; the attempt number goes on counting. A finished one is marked resent,
    so a failed attempt is final (decision 0122); one still retrying is only made due now."""
    query = update(WebhookDelivery).where(WebhookDelivery.account_id == account_id, _not_in_flight(now))
    if delivery_id is not None:
        query = query.where(WebhookDelivery.id == delivery_id)
    if subscription_id is not None:
        query = query.where(
            WebhookDelivery.subscription_id == subscription_id,
            WebhookDelivery.status.in_((FAILED, CANCELLED)),
        )
    if finished_since is not None:
        query = query.where(WebhookDelivery.finished_at >= finished_since)
    result = await session.execute(
        query.values(
            status=PENDING,
            next_attempt_at=now,
            finished_at=None,
            lease_owner=None,
            lease_expires_at=None,
            # A finished delivery sent again gets one attempt; one still retrying keeps its schedule.
            resent=case((WebhookDelivery.status == PENDING, WebhookDelivery.resent), else_=true()),
        )
    )
    return _rowcount(result)


# --- attempt log and retention ------------------------------------------------------------------------------------


async def list_attempts(
    session: AsyncSession,
    account_id: str,
    subscription_id: str | None,
    limit: int,
    *,
    before: tuple[datetime, str] | None = None,
    delivery_id: str | None = None,
    event_type: str | None = None,
) -> Sequence[WebhookAttempt]:
    """Newest first; `before` is the (started_at, id) of the last attempt of the previous page."""
    query = select(WebhookAttempt).where(WebhookAttempt.account_id == account_id)
    if subscription_id is not None:
        query = query.where(WebhookAttempt.subscription_id == subscription_id)
    if event_type is not None:
        query = query.where(WebhookAttempt.event_type == event_type)
    if delivery_id is not None:
        query = query.where(WebhookAttempt.delivery_id == delivery_id)
    if before is not None:
        query = query.where(older_than(WebhookAttempt.started_at, WebhookAttempt.id, before))
    result = await session.execute(
        query.order_by(WebhookAttempt.started_at.desc(), WebhookAttempt.id.desc()).limit(limit)
    )
    return result.scalars().all()


async def delivered_body(session: AsyncSession, account_id: str, delivery_id: str) -> bytes | None:
    """The bytes a delivery of the account sent (its event's frozen body, which every attempt signs and sends), found
    through one of its logged attempts; None when the delivery or its event is no longer kept."""
    event_id = (
        select(WebhookAttempt.event_id)
        .where(WebhookAttempt.account_id == account_id, WebhookAttempt.delivery_id == delivery_id)
        .limit(1)
        .scalar_subquery()
    )
    query = select(Event.body).where(Event.account_id == account_id, Event.id == event_id)
    body = (await session.execute(query)).scalar_one_or_none()
    return bytes(body) if body is not None else None


async def sweep(session: AsyncSession, cutoff: datetime, at_most: int) -> dict[str, int]:
    """Delete up to `at_most` expired rows of each table: the attempts, the finished deliveries, then the events no
    delivery refers to any more. The caller repeats it, one transaction a batch, until a batch finds less."""
    attempts = await session.execute(
        delete(WebhookAttempt).where(
            WebhookAttempt.id.in_(select(WebhookAttempt.id).where(WebhookAttempt.started_at < cutoff).limit(at_most))
        )
    )
    finished = select(WebhookDelivery.id).where(WebhookDelivery.status != PENDING, WebhookDelivery.finished_at < cutoff)
    deliveries = await session.execute(delete(WebhookDelivery).where(WebhookDelivery.id.in_(finished.limit(at_most))))
    pending_for_event = exists().where(WebhookDelivery.event_id == Event.id)
    expired = select(Event.id).where(Event.dispatched_at.is_not(None), Event.dispatched_at < cutoff, ~pending_for_event)
    events = await session.execute(delete(Event).where(Event.id.in_(expired.limit(at_most))))
    return {
        "Attempts": _rowcount(attempts),
        "Deliveries": _rowcount(deliveries),
        "Events": _rowcount(events),
    }


async def stats(session: AsyncSession) -> dict[str, int]:
    """Counts for the metrics: deliveries waiting, events not yet fanned out, disabled subscriptions."""
    pending = await session.execute(select(func.count()).where(WebhookDelivery.status == PENDING))
    undispatched = await session.execute(select(func.count()).where(Event.dispatched_at.is_(None)))
    disabled = await session.execute(select(func.count()).where(WebhookSubscription.is_active.is_(False)))
    return {
        "pending_deliveries": int(pending.scalar_one()),
        "undispatched_events": int(undispatched.scalar_one()),
        "disabled_subscriptions": int(disabled.scalar_one()),
    }


async def disabled_count(session: AsyncSession, account_id: str) -> int:
    """The account's subscriptions disabled after failing deliveries (a handful per account: its rows, no index)."""
    query = select(func.count()).where(
        WebhookSubscription.account_id == account_id, WebhookSubscription.is_active.is_(False)
    )
    return int((await session.execute(query)).scalar_one())
