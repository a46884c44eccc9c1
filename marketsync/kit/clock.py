"""Injectable time: production uses SystemClock, tests a FrozenClock they move by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class FrozenClock:
    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, **delta: float) -> datetime:
        self._now += timedelta(**delta)
        return self._now


def iso(ts: datetime) -> str:
    """ISO 8601 UTC with milliseconds and a Z suffix, the one wire format for timestamps."""
    return ts.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
