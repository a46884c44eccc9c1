"""Tables of the sandbox marketplaces: the state a real marketplace would hold on its side.

They live in the service's database so that `marketsync sandbox ...` commands run in another process are
seen by a running server or worker at its next cycle. Nothing here references the service's own tables:
the sandbox stands for a third party and knows a seller only by the connection id it was authorised with.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import JSON, Float, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from marketsync.models.base import ID, Base


class SandboxSeller(Base):
    """One seller account at a sandbox marketplace (one per marketplace connection)."""

    __tablename__ = "sandbox_sellers"

    connection_id: Mapped[str] = mapped_column(ID, primary_key=True)
    platform: Mapped[str] = mapped_column(String(8))
    country: Mapped[str] = mapped_column(String(8))
    auth_revoked: Mapped[bool] = mapped_column(default=False)
    # none | reject | item-errors
    feed_fault: Mapped[str] = mapped_column(String(16), default="none")
    # Token bucket: every API call costs one token; empty means 429 with Retry-After.
    bucket_capacity: Mapped[float] = mapped_column(Float)
    bucket_refill_per_s: Mapped[float] = mapped_column(Float)
    bucket_tokens: Mapped[float] = mapped_column(Float)
    bucket_at: Mapped[datetime]
    # Counters behind the marketplace's own ids and the order-change cursor.
    order_seq: Mapped[int] = mapped_column(Integer, default=0)
    change_seq: Mapped[int] = mapped_column(Integer, default=0)
    listing_seq: Mapped[int] = mapped_column(Integer, default=0)
    feed_seq: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime]


class SandboxListing(Base):
    __tablename__ = "sandbox_listings"
    __table_args__ = (
        UniqueConstraint("connection_id", "external_sku", name="uq_sandbox_listings_external_sku"),
        Index("ix_sandbox_listings_sku", "connection_id", "sku"),
    )

    connection_id: Mapped[str] = mapped_column(ID, primary_key=True)
    listing_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    sku: Mapped[str] = mapped_column(String(200))
    external_sku: Mapped[str] = mapped_column(String(200))
    listing_url: Mapped[str] = mapped_column(String(500))
    title: Mapped[str | None] = mapped_column(String(500))
    category_id: Mapped[str | None] = mapped_column(String(40))
    attributes: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    price: Mapped[Decimal | None]
    quantity: Mapped[int | None] = mapped_column(Integer)
    # How many feed rows have been applied to this listing (lets tests prove "exactly once").
    feed_updates: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime]


class SandboxOrder(Base):
    __tablename__ = "sandbox_orders"
    __table_args__ = (Index("ix_sandbox_orders_change", "connection_id", "change_seq"),)

    connection_id: Mapped[str] = mapped_column(ID, primary_key=True)
    order_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    # Position in the seller's order-change stream: the pull cursor.
    change_seq: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(24))
    purchase_date: Mapped[datetime]
    changed_at: Mapped[datetime]
    currency: Mapped[str] = mapped_column(String(3))
    buyer_name: Mapped[str] = mapped_column(String(200))
    buyer_email: Mapped[str | None] = mapped_column(String(200))
    buyer_phone: Mapped[str | None] = mapped_column(String(40))
    shipping_address: Mapped[dict[str, Any]] = mapped_column(JSON)
    shipping_total: Mapped[Decimal]
    tax_total: Mapped[Decimal]
    # [{ItemId, Sku, Title, Quantity, UnitPrice (string), Status, Tracking...}]
    items: Mapped[list[dict[str, Any]]] = mapped_column(JSON)


class SandboxFeed(Base):
    __tablename__ = "sandbox_feeds"
    __table_args__ = (UniqueConstraint("connection_id", "client_feed_id", name="uq_sandbox_feeds_client_feed_id"),)

    connection_id: Mapped[str] = mapped_column(ID, primary_key=True)
    feed_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    # The submitter's id: resubmitting it returns this feed instead of creating another.
    client_feed_id: Mapped[str] = mapped_column(String(64))
    # PriceStock | Listings | OrderUpdates
    kind: Mapped[str] = mapped_column(String(16))
    # Processing | Done | Rejected
    status: Mapped[str] = mapped_column(String(16))
    lines: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    # Polls answered "Processing" before the feed is processed (feeds are asynchronous).
    polls_remaining: Mapped[int] = mapped_column(Integer, default=1)
    processed: Mapped[int] = mapped_column(Integer, default=0)
    errors: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    published: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    message: Mapped[str] = mapped_column(Text, default="")
    submitted_at: Mapped[datetime]
    processed_at: Mapped[datetime | None]
