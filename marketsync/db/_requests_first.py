"""Requests first: in a process that serves the API and runs the workers (`marketsync serve`), background work
opens its next database transaction when no request is in flight, or after waiting at most `max_wait_s`.

The two share one event loop and, on SQLite, one writer. Without this, the work a request causes (a publish, its
events' webhooks, the sandbox's calls) takes the loop and the writer while the next request waits behind it
(docs/decisions/0281-requests-first.md). The wait is bounded, so background work still advances under a steady
stream of requests; a process without requests (`marketsync worker`) never waits.

On SQLite only the outermost database use of a background task waits: inside a transaction it holds the one writer,
which a request may be waiting for. On PostgreSQL, with no single writer, background statements wait too (db.py),
but not in a transaction that holds locks the API's requests take too (docs/decisions/0468).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import MutableMapping
from contextvars import ContextVar, Token
from typing import Any

from sqlalchemy import exc as sa_exc

# PostgreSQL: a background statement waits at most this long, whatever the process's bound (docs/decisions/0302).
STATEMENT_MAX_WAIT_S = 0.025
# The key under which a PostgreSQL connection's info notes that its transaction holds locks the API's requests take
# too (the queued job a push extends, which a worker's claim locks): its later statements never wait for the requests
# in flight, which may be waiting for those locks (docs/decisions/0468). Cleared at the transaction's end (db.py).
LOCKS_HELD_INFO = "marketsync.locks_held"
# After a request is answered, background work waits this long before its next database use: a client sending request
# after request on one connection has its next one in within it, and would otherwise find background work started in
# the gap holding the writer (SQLite) or the loop (docs/decisions/0456). 20 ms covers a client that takes a few
# milliseconds between requests, as one building its next batch, or timing another server in between (0464).
FOLLOW_UP_GRACE_S = 0.020
# The key under which a PostgreSQL session's info holds its database's RequestsFirst (the raw driver's statements).
REQUESTS_FIRST_INFO = "marketsync.requests_first"
# The key marking a SQLite session of the writer engine: its transactions begin IMMEDIATE, holding the one writer.
SQLITE_WRITER_INFO = "marketsync.sqlite_writer"

_background: ContextVar[bool] = ContextVar("marketsync_background", default=False)
_in_database: ContextVar[bool] = ContextVar("marketsync_in_database", default=False)


def mark_background() -> None:
    """The calling task, and every task it creates from now on, is background work (the worker's loop)."""
    _background.set(True)


def in_background() -> bool:
    """Whether the calling task is background work (a job, a poller, a schedule of the worker's loop)."""
    return _background.get()


class RequestsFirst:
    def __init__(self, max_wait_s: float) -> None:
        self.max_wait_s = max_wait_s
        self.statement_max_wait_s = min(max_wait_s, STATEMENT_MAX_WAIT_S)
        self.in_flight = 0
        self._waiters: set[asyncio.Future[None]] = set()
        self._last_answered = -float("inf")  # loop time of the last request's end

    def request_started(self) -> None:
        self.in_flight += 1

    def request_ended(self) -> None:
        self.in_flight -= 1
        self._last_answered = asyncio.get_running_loop().time()
        if self.in_flight == 0 and self._waiters:
            waiters, self._waiters = self._waiters, set()
            for waiter in waiters:
                _release(waiter)

    def background_waits(self) -> bool:
        """Whether background work should wait before its next statement (PostgreSQL: db.py)."""
        return self.in_flight > 0 and self.max_wait_s > 0 and _background.get()

    def statement_waits(self, connection_info: MutableMapping[str, Any]) -> bool:
        """PostgreSQL, before a statement on a connection (its info dict): whether it waits for the requests in flight
        (`background_waits`), unless its transaction holds locks requests take (db.hold_locks_requests_take)."""
        return not connection_info.get(LOCKS_HELD_INFO) and self.background_waits()

    async def wait(self, max_wait_s: float | None = None) -> None:
        """Until no request is in flight, at most `max_wait_s` (default: the process's bound)."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.add(waiter)
        timeout = loop.call_later(self.max_wait_s if max_wait_s is None else max_wait_s, _release, waiter)
        try:
            await waiter
        finally:
            timeout.cancel()
            self._waiters.discard(waiter)

    async def pause(self) -> None:
        """Before a database use (`turn`) or between two stretches of background Python outside the database (a long
        loop): the requests in flight go first, then a request that follows the last one answered within
        FOLLOW_UP_GRACE_S; at most the process's bound in all. Inside a database use, or outside the worker,
        nothing."""
        if not _background.get() or _in_database.get() or self.max_wait_s <= 0:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.max_wait_s
        while (left := deadline - loop.time()) > 0:
            if self.in_flight > 0:
                await self.wait(left)
                continue
            follow_up = self._last_answered + FOLLOW_UP_GRACE_S - loop.time()
            if follow_up > 0:
                await asyncio.sleep(min(follow_up, left))
                continue
            # A request whose bytes arrived in this turn of the loop is counted once its task has run: let it.
            await asyncio.sleep(0)
            if self.in_flight == 0:
                return

    def turn(self) -> _Turn:
        """`async with` around a database use: background work outside any transaction waits there while requests
        are in flight (bounded); nested uses and everything else go on at once."""
        return _Turn(self)


class _Turn:
    __slots__ = ("_entered", "_owner")

    def __init__(self, owner: RequestsFirst) -> None:
        self._owner = owner
        self._entered: Token[bool] | None = None

    async def __aenter__(self) -> None:
        if not _background.get() or _in_database.get():
            return
        await self._owner.pause()
        self._entered = _in_database.set(True)

    async def __aexit__(self, *_exc: object) -> None:
        if self._entered is not None:
            _in_database.reset(self._entered)


def _release(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class WriterTurns:
    """SQLite's one writer connection, handed to requests before background work. Background work that holds the
    writer keeps it to its commit. Waiters are served in order of arrival, a background waiter counted as arriving
    `background_max_wait_s` later than it did: a request goes before background work queued up to that long before
    it, and never waits behind background work queued after it, however many background transactions follow one
    another (four listing mirrors did: a request waited its whole 60 s). Background work still advances under a
    steady stream of writes."""

    def __init__(self, *, timeout_s: float, background_max_wait_s: float) -> None:
        self.timeout_s = timeout_s
        self.background_max_wait_s = background_max_wait_s
        self._held = False
        # A heap of (when the waiter counts as arrived, arrival order, its turn). A waiter that timed out or was
        # cancelled stays in it, done, and is passed over when its entry comes up.
        self._waiting: list[tuple[float, int, asyncio.Future[None]]] = []
        self._arrivals = itertools.count()

    async def acquire(self) -> None:
        if not self._held:
            self._held = True
            return
        loop = asyncio.get_running_loop()
        turn: asyncio.Future[None] = loop.create_future()
        # With no wait allowed (0), background work counts as arriving when it does: first come, first served.
        late_by = self.background_max_wait_s if _background.get() else 0.0
        heapq.heappush(self._waiting, (loop.time() + late_by, next(self._arrivals), turn))
        timeout = loop.call_later(self.timeout_s, _time_out, turn, self.timeout_s)
        try:
            await turn
        except BaseException:
            if turn.done() and not turn.cancelled() and turn.exception() is None:
                self.release()  # handed the writer as this waiter was cancelled: hand it on
            raise
        finally:
            timeout.cancel()

    def release(self) -> None:
        while self._waiting:
            _, _, turn = heapq.heappop(self._waiting)
            if not turn.done():
                turn.set_result(None)
                return
        self._held = False


def _time_out(turn: asyncio.Future[None], timeout_s: float) -> None:
    if not turn.done():
        turn.set_exception(sa_exc.TimeoutError(f"the SQLite writer was not free within {timeout_s:g} s"))
