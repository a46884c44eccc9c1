"""Whether a claimed delivery may still be sent: its subscription's state, read at most STATE_FRESH_S before.

A delete or a disabling stops deliveries at once (spec section 3), including those a worker has claimed ahead and
not yet sent (decision 0316). One read answers every delivery about to be sent in the same 20 ms, so the check
costs a read per 20 ms of sending, not one per delivery.
"""

from __future__ import annotations

import asyncio

import structlog

from marketsync.db import Database
from marketsync.webhooks import repository

log = structlog.get_logger("marketsync.webhooks")

STATE_FRESH_S = 0.02
DELETED, DISABLED = "SubscriptionDeleted", "SubscriptionDisabled"


class SubscriptionStates:
    """Subscription states as last read, each with the loop time its read began; one read in flight at a time,
    for every subscription asked about since the last one began."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._known: dict[str, tuple[float, str | None]] = {}
        self._asked: set[str] = set()
        self._reading: asyncio.Task[None] | None = None

    async def why_not_sendable(self, subscription_id: str) -> str | None:
        """None when the subscription is active; else DELETED or DISABLED. A read that began after the question is
        accepted however long it took (a slow database must not make this loop); one that fails lets the delivery
        go, as before this check: the recording still moves only deliveries their worker holds."""
        loop = asyncio.get_running_loop()
        asked_at = loop.time()
        while True:
            known = self._known.get(subscription_id)
            if known is not None and (known[0] >= asked_at or loop.time() - known[0] <= STATE_FRESH_S):
                return known[1]
            self._asked.add(subscription_id)
            if self._reading is None or self._reading.done():
                self._reading = asyncio.create_task(self._read())
            try:
                await asyncio.shield(self._reading)
            except Exception:
                log.warning("webhook_subscription_state_unread", subscription_id=subscription_id, exc_info=True)
                return None

    async def _read(self) -> None:
        asked, self._asked = self._asked, set()
        began = asyncio.get_running_loop().time()
        active = await repository.subscriptions_active(self._db, asked)
        # Entries older than a second are no use to anyone: dropped, so the cache stays the size of the work.
        self._known = {k: v for k, v in self._known.items() if began - v[0] <= 1.0}
        for subscription_id in asked:
            state = active.get(subscription_id)
            self._known[subscription_id] = (began, None if state else DISABLED if state is not None else DELETED)
