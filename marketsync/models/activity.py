"""The app's activity log: who did what and when in the app (docs/decisions/0431-activity-log.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from marketsync.models.base import ID, Base


class ActivityEntry(Base):
    """One thing a person did in the app. Never a secret: what was done and to what (a SKU with its old and new
    value, a credential's name, a person's email), kept for activity.RETENTION, then purged."""

    __tablename__ = "activity_entries"
    __table_args__ = (
        Index("ix_activity_entries_account_created", "account_id", "created_at", "id"),  # the log, newest first
        Index("ix_activity_entries_account_user", "account_id", "user_id", "created_at", "id"),  # one person's
        Index("ix_activity_entries_account_kind", "account_id", "kind", "created_at", "id"),  # one kind's
        Index("ix_activity_entries_created", "created_at"),  # the purge
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    account_id: Mapped[str] = mapped_column(ID, ForeignKey("accounts.id", ondelete="CASCADE"))
    # The person, and their email as it was: the entry outlives a person removed since.
    user_id: Mapped[str | None] = mapped_column(ID)
    actor: Mapped[str] = mapped_column(String(320))
    kind: Mapped[str] = mapped_column(String(24))  # activity.Kind
    action: Mapped[str] = mapped_column(String(40))
    subject: Mapped[str] = mapped_column(String(300))
    details: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime]
