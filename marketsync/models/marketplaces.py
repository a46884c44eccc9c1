"""Marketplace connections: one per account, kind (Platform) and country."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from marketsync.kinds import ConnectionState
from marketsync.models.base import ID, Base


class MarketplaceConnection(Base):
    __tablename__ = "marketplace_connections"
    __table_args__ = (
        UniqueConstraint("account_id", "platform", "country", name="uq_marketplace_connections_kind_country"),
        Index("ix_marketplace_connections_account_state", "account_id", "state"),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    account_id: Mapped[str] = mapped_column(ID, ForeignKey("accounts.id", ondelete="CASCADE"))
    platform: Mapped[str] = mapped_column(String(8))
    country: Mapped[str] = mapped_column(String(8))
    # AwaitingConsent | Active | Paused (kinds.ConnectionState). A disconnected connection is deleted (its listings
    # with it).
    state: Mapped[str] = mapped_column(String(16), default=ConnectionState.ACTIVE)
    health_status: Mapped[str | None] = mapped_column(String(32))
    health_status_message: Mapped[str] = mapped_column(Text, default="")
    is_healthy: Mapped[bool] = mapped_column(default=True)
    requires_reauthorization: Mapped[bool] = mapped_column(default=False)
    health_checked_at: Mapped[datetime | None]
    last_pull_status: Mapped[str] = mapped_column(String(32), default="NeverRun")
    last_pull_total_skus: Mapped[int] = mapped_column(Integer, default=0)
    last_pull_current_sku: Mapped[int] = mapped_column(Integer, default=0)
    # Opaque cursor of the order pull (marketplace-defined; Amazon's carries its NextToken, of no bounded length): TEXT
    # on PostgreSQL (migration 0034); SQLite never enforces a VARCHAR's length, and widening it there would mean
    # rebuilding the table, whose DROP cascades to the listings.
    order_cursor: Mapped[str | None] = mapped_column(String(200).with_variant(Text(), "postgresql"))
    # A real marketplace's authorisation (Amazon): the selling partner's id, and its refresh token encrypted at rest
    # (AES-GCM, kit/crypto.py: never logged, never shown). Null for the sandbox marketplaces.
    seller_id: Mapped[str | None] = mapped_column(String(64))
    credential: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
