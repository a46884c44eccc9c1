"""When each credential was last used, kept coarse (to the hour) so that no request pays for a write
(docs/decisions/0432-credential-rotation-and-last-used.md).

A request notes its credential in this process's memory (a dict lookup); `flush` writes what changed, from the app's
background loop every FLUSH_EVERY and when the process stops. A process killed outright loses at most that much of
"last used", which is only ever shown to the hour.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from marketsync.auth import repository
from marketsync.runtime import Runtime

FLUSH_EVERY = timedelta(minutes=5)
GRANULARITY_S = 3600  # the hour


class UsageNotes:
    """Credential id -> the start of the hour it was last used in; `dirty` holds those not written yet."""

    def __init__(self) -> None:
        self.hours: dict[str, int] = {}
        self.dirty: set[str] = set()

    def note(self, credential_id: str, now_s: float) -> None:
        hour = int(now_s) // GRANULARITY_S * GRANULARITY_S
        if self.hours.get(credential_id) != hour:  # once an hour per credential: the rest is one dict lookup
            self.hours[credential_id] = hour
            self.dirty.add(credential_id)

    def take(self) -> dict[str, int]:
        taken = {credential_id: self.hours[credential_id] for credential_id in self.dirty}
        self.dirty.clear()
        return taken


def notes_of(rt: Runtime) -> UsageNotes:
    notes = rt.extras.get("credential_usage")
    if notes is None:
        notes = rt.extras["credential_usage"] = UsageNotes()
    return notes


def note(rt: Runtime, credential_id: str) -> None:
    notes_of(rt).note(credential_id, rt.clock.now().timestamp())


async def flush(rt: Runtime) -> int:
    """Write the hours noted since the last flush (a later hour only: processes flush in any order)."""
    taken = notes_of(rt).take()
    if not taken:
        return 0
    async with rt.db.transaction() as session:
        for credential_id, hour in taken.items():
            await repository.mark_used(session, credential_id, datetime.fromtimestamp(hour, UTC))
    return len(taken)
