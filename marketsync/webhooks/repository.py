"""All webhook queries: subscriptions, fan-out from the event outbox, leased delivery claims, the attempt log."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Table, and_, bindparam, delete, exists, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import BindParameter

from marketsync.db import Database, PreparedRead, insert_for
from marketsync.models import Event
from marketsync.models.base import UTCDateTime
from marketsync.models.webhooks import WebhookAttempt, WebhookDelivery, WebhookSubscription

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


async def claim_due(
    session: AsyncSession, worker_id: str, now: datetime, lease_s: float, limit: int
) -> tuple[list[ClaimedDelivery], list[AbandonedAttempt]]:
    """Lease up to `limit` due deliveries; an expired lease means its worker died mid-attempt (taken over)."""
    due = _due(now)
    candidates = (
        await session.execute(
            select(WebhookDelivery.id, WebhookDelivery.lease_owner)
            .join(WebhookSubscription, WebhookSubscription.id == WebhookDelivery.subscription_id)
            .where(due, WebhookSubscription.is_active.is_(True))
            .order_by(WebhookDelivery.next_attempt_at, WebhookDelivery.id)
            .limit(limit)
            .with_for_update(skip_locked=True, of=WebhookDelivery)
        )
    ).all()
    if not candidates:
        return [], []
    ids = [c[0] for c in candidates]
    taken_over = {c[0] for c in candidates if c[1] is not None}
    await session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.id.in_(ids), due)
        .values(
            lease_owner=worker_id,
            lease_expires_at=now + timedelta(seconds=lease_s),
            attempts=WebhookDelivery.attempts + 1,
        )
    )
    rows = (
        await session.execute(
            select(
                WebhookDelivery.id,
                WebhookDelivery.account_id,
                WebhookDelivery.subscription_id,
                WebhookDelivery.event_id,
                WebhookDelivery.event_type,
                WebhookDelivery.attempts,
                WebhookSubscription.url,
                WebhookSubscription.secret_encrypted,
                Event.body,
            )
            .join(WebhookSubscription, WebhookSubscription.id == WebhookDelivery.subscription_id)
            .join(Event, Event.id == WebhookDelivery.event_id)
            .where(WebhookDelivery.id.in_(ids), WebhookDelivery.lease_owner == worker_id)
            .order_by(WebhookDelivery.next_attempt_at, WebhookDelivery.id)
        )
    ).all()
    claimed = [ClaimedDelivery(r[0], r[1], r[2], r[3], r[4], int(r[5]), r[6], r[7], bytes(r[8])) for r in rows]
    abandoned = [
        AbandonedAttempt(c.id, c.account_id, c.subscription_id, c.event_id, c.event_type, c.attempt - 1)
        for c in claimed
        if c.id in taken_over
    ]
    return claimed, abandoned


async def still_leased(session: AsyncSession, delivery_ids: list[str], worker_id: str) -> set[str]:
    """Which of these deliveries this worker still holds (not taken over, cancelled or deleted meanwhile)."""
    if not delivery_ids:
        return set()
    result = await session.execute(
        select(WebhookDelivery.id)
        .where(
            WebhookDelivery.id.in_(delivery_ids),
            WebhookDelivery.lease_owner == worker_id,
            WebhookDelivery.status == PENDING,
        )
        .with_for_update()
    )
    return set(result.scalars().all())


_delivery_table: Table = WebhookDelivery.__table__  # type: ignore[assignment]


async def finish_deliveries(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """rows: {d_id, d_status, d_next, d_finished}; releases the lease. Only rows this worker holds are passed."""
    if not rows:
        return
    statement = (
        update(_delivery_table)
        .where(_delivery_table.c.id == bindparam("d_id"))
        .values(
            status=bindparam("d_status"),
            next_attempt_at=bindparam("d_next"),
            finished_at=bindparam("d_finished"),
            lease_owner=None,
            lease_expires_at=None,
        )
    )
    await session.execute(statement, rows)


async def insert_attempts(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if rows:
        await session.execute(insert(WebhookAttempt), rows)


async def subscription_succeeded(session: AsyncSession, subscription_id: str, now: datetime) -> None:
    await session.execute(
        update(WebhookSubscription)
        .where(WebhookSubscription.id == subscription_id, WebhookSubscription.is_active.is_(True))
        .values(consecutive_failures=0, last_success_at=now)
    )


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


# --- a person's repairs in the app: resend, recover, sample, re-enable -----------------------------------------


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
    since a time. Same delivery id and bytes; the attempt number goes on counting."""
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
        query.values(status=PENDING, next_attempt_at=now, finished_at=None, lease_owner=None, lease_expires_at=None)
    )
    return _rowcount(result)


async def reenable_subscription(session: AsyncSession, account_id: str, subscription_id: str) -> bool:
    result = await session.execute(
        update(WebhookSubscription)
        .where(WebhookSubscription.id == subscription_id, WebhookSubscription.account_id == account_id)
        .values(is_active=True, consecutive_failures=0, disabled_at=None, disabled_reason=None)
    )
    return _rowcount(result) > 0


# --- attempt log and retention ------------------------------------------------------------------------------------


async def list_attempts(
    session: AsyncSession,
    account_id: str,
    subscription_id: str | None,
    limit: int,
    *,
    before: tuple[datetime, str] | None = None,
    delivery_id: str | None = None,
) -> Sequence[WebhookAttempt]:
    """Newest first; `before` is the (started_at, id) of the last attempt of the previous page."""
    query = select(WebhookAttempt).where(WebhookAttempt.account_id == account_id)
    if subscription_id is not None:
        query = query.where(WebhookAttempt.subscription_id == subscription_id)
    if delivery_id is not None:
        query = query.where(WebhookAttempt.delivery_id == delivery_id)
    if before is not None:
        started_at, attempt_id = before
        query = query.where(
            or_(
                WebhookAttempt.started_at < started_at,
                and_(WebhookAttempt.started_at == started_at, WebhookAttempt.id < attempt_id),
            )
        )
    result = await session.execute(
        query.order_by(WebhookAttempt.started_at.desc(), WebhookAttempt.id.desc()).limit(limit)
    )
    return result.scalars().all()


async def sweep(session: AsyncSession, cutoff: datetime) -> dict[str, int]:
    attempts = await session.execute(delete(WebhookAttempt).where(WebhookAttempt.started_at < cutoff))
    deliveries = await session.execute(
        delete(WebhookDelivery).where(WebhookDelivery.status != PENDING, WebhookDelivery.finished_at < cutoff)
    )
    pending_for_event = exists().where(WebhookDelivery.event_id == Event.id)
    events = await session.execute(
        delete(Event).where(Event.dispatched_at.is_not(None), Event.dispatched_at < cutoff, ~pending_for_event)
    )
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
