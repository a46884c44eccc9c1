"""The merchant's people who sign in to the app (/app), and their server-side sessions."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from marketsync.models.base import ID, Base


class AppUser(Base):
    __tablename__ = "app_users"

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    account_id: Mapped[str] = mapped_column(ID, ForeignKey("accounts.id", ondelete="CASCADE"), index=True)
    # Lower-cased: one person, one sign-in, whatever the case they type.
    email: Mapped[str] = mapped_column(String(320), unique=True)
    password_hash: Mapped[str] = mapped_column(String(200))  # argon2id, parameters in the hash
    role: Mapped[str] = mapped_column(String(16))  # Owner | Staff
    created_at: Mapped[datetime]


class AppSession(Base):
    """A signed-in browser. The cookie holds a random token; the row holds its hash only."""

    __tablename__ = "app_sessions"
    __table_args__ = (Index("ix_app_sessions_user", "user_id"),)

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(ID, ForeignKey("app_users.id", ondelete="CASCADE"))
    account_id: Mapped[str] = mapped_column(ID)
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
    last_seen_at: Mapped[datetime]
    expires_at: Mapped[datetime]  # absolute end, whatever the activity
    revoked_at: Mapped[datetime | None]
    # What a page shows once (decision 0401), until the page after the form's redirect takes it: AES-GCM bound to this
    # row, never in clear.
    reveals: Mapped[str | None] = mapped_column(Text)
