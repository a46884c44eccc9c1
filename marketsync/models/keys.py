"""Fingerprints of the keys a database was first used with (docs/decisions/0162-keys-and-settings.md)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from marketsync.models.base import Base


class KeyFingerprint(Base):
    """One row per key: `hash` (the secret hash key) or `encryption:<key id>`. Never the key itself: an HMAC of a
    fixed label under the key, which proves a process holds the same key without revealing it."""

    __tablename__ = "key_fingerprints"

    purpose: Mapped[str] = mapped_column(String(80), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
