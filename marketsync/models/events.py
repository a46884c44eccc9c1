"""The event outbox: every event is a row written in the transaction of the change that caused it."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, LargeBinary, String, false
from sqlalchemy.orm import Mapped, mapped_column

from marketsync.models.base import ID, Base


class Event(Base):
    __tablename__ = "events"
    __table_args__ = (Index("ix_events_undispatched", "dispatched_at", "id"),)

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    account_id: Mapped[str] = mapped_column(ID, ForeignKey("accounts.id", ondelete="CASCADE"), index=True)
    type: Mapped[str] = mapped_column(String(40))
    # The delivery body, frozen when the event fires: every attempt sends these bytes.
    body: Mapped[bytes] = mapped_column(LargeBinary)
    occurred_at: Mapped[datetime]
    # Set once the event has been fanned out to subscriptions.
    dispatched_at: Mapped[datetime | None]
    # A test event (the API's webhooks/Test, the app's "Send a sample"): its deliveries carry X-SVC-Test: true and
    # its payload the test marker (docs/decisions/0421).
    is_test: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
