"""Wake-ups: an idle worker hears of new work when the transaction that made it commits, not at its next poll.

A job enqueued or an event recorded marks its session (`wake_workers_on_commit`). On PostgreSQL the transaction then
sends `NOTIFY marketsync_work` before it commits (PostgreSQL delivers a notification only if, and when, its
transaction commits) and every worker keeps one `LISTEN` connection. On SQLite the signal is in-process: the API
with its embedded workers (`marketsync serve`) is one process. Polling stays as the fallback: a lost notification
costs at most one poll interval (docs/decisions/0163-wake-ups.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import structlog
from sqlalchemy.ext.asyncio import AsyncSession

log = structlog.get_logger("marketsync.wakeups")

CHANNEL = "marketsync_work"
_FLAG = "marketsync.wake_workers"
RECONNECT_MAX_S = 5.0


def wake_workers_on_commit(session: AsyncSession) -> None:
    """Workers wake when the caller's transaction commits (and never if it rolls back)."""
    session.info[_FLAG] = True


def wants_wake_up(session: AsyncSession) -> bool:
    return bool(session.info.pop(_FLAG, False))


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

    def signal(self) -> None:
        self._signal.set()

    async def wait(self, stop: asyncio.Event, timeout_s: float) -> None:
        """Until new work is signalled, `stop` is set, or `timeout_s` passes (the polling fallback)."""
        if not self._signal.is_set():
            waiters = [asyncio.ensure_future(self._signal.wait()), asyncio.ensure_future(stop.wait())]
            try:
                await asyncio.wait(waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:
                    waiter.cancel()
        self._signal.clear()

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
                await connection.add_listener(CHANNEL, functools.partial(_set, self._signal))
                self._signal.set()
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
