"""Merchant accounts, API credentials and the access tokens issued to them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from marketsync.models.base import ID, Base


class Account(Base):
    __tablename__ = "accounts"

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime]
    # The IANA zone the app shows the account's times in, set by an Owner; the API stays UTC (decision 0435).
    time_zone: Mapped[str] = mapped_column(String(64), server_default="UTC")


class Credential(Base):
    __tablename__ = "credentials"

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    account_id: Mapped[str] = mapped_column(ID, ForeignKey("accounts.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    client_id: Mapped[str] = mapped_column(String(64), unique=True)
    # Keyed hash of the secret; the secret itself is shown once and never stored.
    secret_hash: Mapped[str] = mapped_column(String(64))
    scopes: Mapped[str] = mapped_column(String(200))  # space-separated
    created_at: Mapped[datetime]
    # A rotation (docs/decisions/0432): the secret it replaced, accepted until previous_secret_expires_at; tokens
    # issued before rotated_at stop then too.
    previous_secret_hash: Mapped[str | None] = mapped_column(String(64))
    previous_secret_expires_at: Mapped[datetime | None]
    rotated_at: Mapped[datetime | None]
    # To the hour, written in the background (auth.usage): no request pays for a write.
    last_used_at: Mapped[datetime | None]
