"""record_event: the one way any domain fires an event. It joins the caller's transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, bindparam, case, exists, null
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.db import EVENTS, DriverSql, session_driver, wake_workers_on_commit
from marketsync.webhooks import statements
from marketsync.webhooks.rules import EVENT_TYPES

__all__ = ["EVENT_TYPES", "record_event", "record_event_on_driver"]
from marketsync.kit import jsonio
from marketsync.kit.ids import new_id
from marketsync.models import Event
from marketsync.models.base import UTCDateTime
from marketsync.models.webhooks import WebhookSubscription


def record_event(
    session: AsyncSession, account_id: str, event_type: str, payload: dict[str, Any], occurred_at: datetime
) -> Event:
    """Freeze the delivery body now: every attempt of every delivery of this event sends these bytes.

    An account with no active subscription has the event recorded as dispatched already, decided by its INSERT
    (docs/decisions/0455): the fan-out has nothing to do for it, and subscriptions receive what occurs from their
    creation on."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {event_type!r}")
    event = Event(
        id=new_id(),
        account_id=account_id,
        type=event_type,
        body=jsonio.dumps(payload),
        occurred_at=occurred_at,
        dispatched_at=_dispatched_unless_subscribed(account_id, occurred_at),
    )
    session.add(event)
    wake_workers_on_commit(session, EVENTS)  # the fan-out and the first delivery attempt start as this commits
    return event


async def record_event_on_driver(
    session: AsyncSession, account_id: str, event_type: str, payload: dict[str, Any], occurred_at: datetime
) -> None:
    """`record_event` as one statement on the raw driver, in the session's transaction, written at once (no ORM
    flush at commit): the price/stock push's hot path (docs/decisions/0462). The same row and body; the workers are
    woken only for an event left for the fan-out (an account with an active subscription): one dispatched as it is
    recorded gives the webhook pollers nothing to do."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {event_type!r}")
    driver = await session_driver(session)
    at = DriverSql(driver.postgres).time_value(occurred_at)
    body = jsonio.dumps(payload)
    sql = statements.INSERT_EVENT.text(driver.postgres)
    [(dispatched_at,)] = await driver.fetch(sql, (new_id(), account_id, event_type, body, at))
    if dispatched_at is None:
        wake_workers_on_commit(session, EVENTS)


def _dispatched_unless_subscribed(account_id: str, occurred_at: datetime) -> ColumnElement[Any]:
    """NULL (left for the fan-out) while the account has an active subscription, else `occurred_at`: evaluated by the
    event's INSERT, in its transaction, so no statement is added to the caller's."""
    subscribed = exists().where(WebhookSubscription.account_id == account_id, WebhookSubscription.is_active.is_(True))
    return case((subscribed, null()), else_=bindparam(None, occurred_at, type_=UTCDateTime()))
