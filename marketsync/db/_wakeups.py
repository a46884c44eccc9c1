"""Wake-ups: an idle worker hears of new work when the transaction that made it commits, not at its next poll.

A job enqueued or an event recorded marks its session (`wake_workers_on_commit`) with the kind of work it made:
JOBS (the queue: a claim) or EVENTS (the webhook pollers: fan-out and delivery). A wake-up wakes only the work of its
kinds, so a push's event does not run a claim, and a job's end does not run the webhook pollers
(docs/decisions/0451). On PostgreSQL the transaction then sends `NOTIFY marketsync_work` with the kinds before it
commits (PostgreSQL delivers a notification only if, and when, its transaction commits) and every worker keeps one
`LISTEN` connection; a notification a process sent itself is not heard twice (it signalled itself at its commit).
On SQLite the signal is in-process: the API with its embedded workers (`marketsync serve`) is one process. Polling
stays as the fallback: a lost notification costs at most one poll interval (docs/decisions/0163-wake-ups.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
from collections.abc import Iterable
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import structlog
from sqlalchemy.ext.asyncio import AsyncSession

log = structlog.get_logger("marketsync.wakeups")

CHANNEL = "marketsync_work"
_FLAG = "marketsync.wake_workers"
RECONNECT_MAX_S = 5.0
# The kinds of work a wake-up names: the job queue, and the events the webhook pollers fan out and deliver.
JOBS = "jobs"
EVENTS = "events"
EVERY_KIND: frozenset[str] = frozenset({JOBS, EVENTS})


def wake_workers_on_commit(session: AsyncSession, kind: str = JOBS) -> None:
    """Workers wake for `kind` of work when the caller's transaction commits (and never if it rolls back)."""
    session.info.setdefault(_FLAG, set()).add(kind)


def wants_wake_up(session: AsyncSession) -> frozenset[str]:
    """The kinds of work the session's transaction made (empty: no wake-up), taken from it."""
    return frozenset(session.info.pop(_FLAG, ()))


def _set(event: asyncio.Event, *_callback_args: Any) -> None:
    event.set()


class WakeUps:
    """This process's wake-up signal, fed by its own commits and, on PostgreSQL, by every process's NOTIFY."""

    def __init__(
        self, connect_args: tuple[tuple[Any, ...], dict[str, Any]] | None, *, check_every_s: float | None = None
    ) -> None:
        self._connect_args = connect_args  # asyncpg's, when the database is PostgreSQL (with bounded waits)
        # A LISTEN connection only reads: one whose peer vanished without closing it (a partition, a dropped NAT
        # entry) would never say so, and wake-ups would silently stop. Every `check_every_s` it runs a statement,
        # bounded by the connection's command_timeout; a failure reconnects.
        self._check_every_s = check_every_s
        self._signal = asyncio.Event()
        self._woken: set[str] = set()
        # Names this process in its notifications: the listener ignores its own (already signalled at the commit).
        self.origin = f"{os.getpid()}-{os.urandom(4).hex()}"

    def signal(self, kinds: Iterable[str] = EVERY_KIND) -> None:
        self._woken.update(kinds)
        self._signal.set()

    def notification(self, kinds: Iterable[str]) -> str:
        """The NOTIFY payload of a commit that made work of these kinds: `origin:kind,kind`."""
        return f"{self.origin}:{','.join(sorted(kinds))}"

    def _notified(self, _connection: Any, _pid: int, _channel: str, payload: str) -> None:
        origin, _, kinds = payload.partition(":")
        if origin == self.origin:
            return
        # A payload without kinds (another version's, or a hand-sent NOTIFY) wakes every kind.
        self.signal({kind for kind in kinds.split(",") if kind in EVERY_KIND} or EVERY_KIND)

    def take(self) -> frozenset[str]:
        """The kinds signalled since the last look, without waiting."""
        woken, self._woken = frozenset(self._woken), set()
        self._signal.clear()
        return woken

    async def wait(self, stop: asyncio.Event, timeout_s: float) -> frozenset[str]:
        """Until new work is signalled, `stop` is set, or `timeout_s` passes (the polling fallback): the kinds
        signalled, every kind when the poll interval passed."""
        if not self._signal.is_set():
            waiters = [asyncio.ensure_future(self._signal.wait()), asyncio.ensure_future(stop.wait())]
            try:
                done, _ = await asyncio.wait(waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:
                    waiter.cancel()
            if not done:
                self.take()
                return EVERY_KIND
        return self.take()

    async def listen(self) -> None:
        """Keep a LISTEN connection until cancelled; after each (re)connect, signal once (work may have been
        notified while no connection listened). Nothing to do on SQLite."""
        if self._connect_args is None:
            return
        args, kwargs = self._connect_args
        delay = 0.1
        while True:
            connection = None
            try:
                connection = await asyncpg.connect(*args, **kwargs)
                lost = asyncio.Event()
                connection.add_termination_listener(functools.partial(_set, lost))
                await connection.add_listener(CHANNEL, self._notified)
                self.signal()
                delay = 0.1
                await self._until_lost(connection, lost)
                log.warning("wakeup_listener_lost")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("wakeup_listener_failed", error_class=type(exc).__name__)
            finally:
                if connection is not None and not connection.is_closed():
                    with contextlib.suppress(Exception):
                        await asyncio.shield(connection.close(timeout=2))
            await asyncio.sleep(delay)
            delay = min(delay * 2, RECONNECT_MAX_S)

    async def _until_lost(self, connection: Any, lost: asyncio.Event) -> None:
        """Return when the connection is closed under us, or stops answering its periodic check."""
        while True:
            try:
                await asyncio.wait_for(lost.wait(), timeout=self._check_every_s)
                return
            except TimeoutError:
                pass
            try:
                await connection.fetchval("SELECT 1")
            except (OSError, asyncpg.InterfaceError, asyncpg.PostgresError):  # TimeoutError is an OSError
                return
