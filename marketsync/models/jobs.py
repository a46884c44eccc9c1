"""Asynchronous jobs and leased periodic schedules."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from marketsync.models.base import ID, Base

# A worker's identity (worker.worker_identity) fits in this.
LEASE_OWNER_LENGTH = 64


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        Index("ix_jobs_claim", "status", "run_after"),
        Index("ix_jobs_lease", "status", "lease_expires_at"),
        Index("ix_jobs_account", "account_id", "created_at"),
        Index("ix_jobs_account_status", "account_id", "status", "created_at", "id"),  # the app's list by status
        Index("ix_jobs_marketplace", "marketplace_id", "status"),
        Index("ix_jobs_account_type", "account_id", "type", "created_at", "id"),  # the app's list by type (0038)
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    account_id: Mapped[str] = mapped_column(ID, ForeignKey("accounts.id", ondelete="CASCADE"))
    type: Mapped[str] = mapped_column(String(64))
    # The connection a marketplace job works for (its payload's MarketplaceId), as a column so "is one queued
    # for this connection" and "cancel this connection's jobs" are indexed queries. No foreign key: a job
    # outlives a disconnected connection as history.
    marketplace_id: Mapped[str | None] = mapped_column(ID)
    status: Mapped[str] = mapped_column(String(16))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    progress_done: Mapped[int | None] = mapped_column(Integer)
    progress_total: Mapped[int | None] = mapped_column(Integer)
    recovery_count: Mapped[int] = mapped_column(Integer, default=0)
    run_after: Mapped[datetime]
    lease_owner: Mapped[str | None] = mapped_column(String(LEASE_OWNER_LENGTH))
    lease_expires_at: Mapped[datetime | None]
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    # Visible only in the app (spec section 2, Job): never serialised by the API.
    failure_reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class JobProductAddition(Base):
    """Products a push added to a queued PriceStockPush, one row per push (docs/decisions/0304): the job reads its
    payload's ProductIds and these when it runs. Appending a row costs a push its own products; rewriting the
    payload cost it every product already queued."""

    __tablename__ = "job_product_additions"

    job_id: Mapped[str] = mapped_column(ID, ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    id: Mapped[str] = mapped_column(ID, primary_key=True)  # time-ordered: the pushes' order
    product_ids: Mapped[list[str]] = mapped_column(JSON)


class Schedule(Base):
    __tablename__ = "schedules"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    next_run_at: Mapped[datetime]
    last_run_at: Mapped[datetime | None]
    lease_owner: Mapped[str | None] = mapped_column(String(LEASE_OWNER_LENGTH))
    lease_expires_at: Mapped[datetime | None]
