"""Tables of the webhooks domain: subscriptions, logical deliveries (with leases) and the attempt log."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint, false, text
from sqlalchemy.orm import Mapped, mapped_column

from marketsync.models.base import ID, Base
from marketsync.models.jobs import LEASE_OWNER_LENGTH


class WebhookSubscription(Base):
    __tablename__ = "webhook_subscriptions"
    __table_args__ = (Index("ix_webhook_subscriptions_account_created", "account_id", "created_at", "id"),)

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    account_id: Mapped[str] = mapped_column(ID, ForeignKey("accounts.id", ondelete="CASCADE"))
    url: Mapped[str] = mapped_column(String(2048))
    event_types: Mapped[list[str]] = mapped_column(JSON)
    # AES-GCM `<key id>:<base64>` with (account, subscription) as associated data; never stored in clear.
    secret_encrypted: Mapped[str] = mapped_column(String(200))
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    consecutive_failures: Mapped[int] = mapped_column(Integer, default=0)
    disabled_at: Mapped[datetime | None]
    disabled_reason: Mapped[str | None] = mapped_column(String(500))
    last_success_at: Mapped[datetime | None]
    created_at: Mapped[datetime]


class WebhookDelivery(Base):
    """One logical delivery of one event to one subscription; its id is X-SVC-Delivery-Id."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("event_id", "subscription_id", name="uq_webhook_deliveries_event_subscription"),
        Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
        # A subscription's due deliveries in claim order, and its queue for deletes and disabling (decision 0322).
        Index("ix_webhook_deliveries_subscription_due", "subscription_id", "status", "next_attempt_at", "id"),
        # The leased deliveries only (few: at most workers x slots), for the claim's count of live leases.
        Index(
            "ix_webhook_deliveries_leased",
            "lease_expires_at",
            sqlite_where=text("lease_expires_at IS NOT NULL"),
            postgresql_where=text("lease_expires_at IS NOT NULL"),
        ),
        # The subscriptions with Pending deliveries, one index seek each: the claim looks at these, not at every
        # active subscription (decision 0322).
        Index(
            "ix_webhook_deliveries_pending_subscription",
            "subscription_id",
            sqlite_where=text("status = 'Pending'"),
            postgresql_where=text("status = 'Pending'"),
        ),
        Index("ix_webhook_deliveries_finished", "finished_at"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    account_id: Mapped[str] = mapped_column(ID, ForeignKey("accounts.id", ondelete="CASCADE"))
    subscription_id: Mapped[str] = mapped_column(ID, ForeignKey("webhook_subscriptions.id", ondelete="CASCADE"))
    event_id: Mapped[str] = mapped_column(ID, ForeignKey("events.id", ondelete="CASCADE"))
    event_type: Mapped[str] = mapped_column(String(40))
    # Pending (due at next_attempt_at), Succeeded, Failed, Cancelled (subscription disabled).
    status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime]
    lease_owner: Mapped[str | None] = mapped_column(String(LEASE_OWNER_LENGTH))
    lease_expires_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    # Sent again by a person (resend, recover): a failed attempt is final, never a new backoff schedule (0122).
    resent: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class WebhookAttempt(Base):
    """The attempt log (spec section 6): kept 30 days, outlives a deleted subscription until swept."""

    __tablename__ = "webhook_attempts"
    __table_args__ = (
        Index("ix_webhook_attempts_account_started", "account_id", "started_at"),
        Index("ix_webhook_attempts_subscription_started", "subscription_id", "started_at"),
        Index("ix_webhook_attempts_started", "started_at"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    account_id: Mapped[str] = mapped_column(ID, ForeignKey("accounts.id", ondelete="CASCADE"))
    subscription_id: Mapped[str] = mapped_column(ID)
    delivery_id: Mapped[str] = mapped_column(ID)
    event_id: Mapped[str] = mapped_column(ID)
    event_type: Mapped[str] = mapped_column(String(40))
    attempt: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime]
    duration_ms: Mapped[int] = mapped_column(Integer)
    status_code: Mapped[int | None] = mapped_column(Integer)
    # Succeeded, Retrying, Failed (final) or Abandoned (the worker died mid-attempt).
    outcome: Mapped[str] = mapped_column(String(16))
    error_class: Mapped[str | None] = mapped_column(String(40))
    error_detail: Mapped[str | None] = mapped_column(String(500))
    response_snippet: Mapped[str | None] = mapped_column(Text)
    next_attempt_at: Mapped[datetime | None]
