"""record_event: the one way any domain fires an event. It joins the caller's transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.db import EVENTS, wake_workers_on_commit
from marketsync.webhooks.rules import EVENT_TYPES

__all__ = ["EVENT_TYPES", "record_event"]
from marketsync.kit import jsonio
from marketsync.kit.ids import new_id
from marketsync.models import Event


def record_event(
    session: AsyncSession, account_id: str, event_type: str, payload: dict[str, Any], occurred_at: datetime
) -> Event:
    """Freeze the delivery body now: every attempt of every delivery of this event sends these bytes."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {event_type!r}")
    event = Event(
        id=new_id(),
        account_id=account_id,
        type=event_type,
        body=jsonio.dumps(payload),
        occurred_at=occurred_at,
        dispatched_at=None,
    )
    session.add(event)
    wake_workers_on_commit(session, EVENTS)  # the fan-out and the first delivery attempt start as this commits
    return event
