"""Engines and sessions. SQLite (embedded, WAL) and PostgreSQL share the code and the migrations.

On SQLite every write transaction starts with BEGIN IMMEDIATE through a one-connection writer pool, so
writers queue in-process instead of failing with SQLITE_BUSY on lock upgrade; readers use their own pool
and never block on writers (WAL). On PostgreSQL both factories share one engine.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, and_, event, or_, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, ExceptionContext, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.pool import NullPool
from sqlalchemy.util import await_only

from marketsync.db import _wakeups as wakeups
from marketsync.db._fast import (
    POSTGRES_UNAVAILABLE,
    DriverReader,
    DriverSql,
    FastReads,
    KeyedRead,
    PreparedRead,
    SessionDriver,
    asyncpg_connect_args,
    session_driver,
    session_reader,
)
from marketsync.db._requests_first import (
    LOCKS_HELD_INFO,
    REQUESTS_FIRST_INFO,
    SQLITE_WRITER_INFO,
    RequestsFirst,
    WriterTurns,
    in_background,
    mark_background,
)
from marketsync.db._wakeups import EVENTS, EVERY_KIND, JOBS, wake_workers_on_commit
from marketsync.db._wal_checkpoints import WRITE_CONNECTION_PRAGMAS, WalCheckpointer
from marketsync.db._writer_handoff import WriterHandoff
from marketsync.kit import jsonio

# What the rest of the service uses; the modules behind it (`_fast`, `_writer_handoff`, `_wal_checkpoints`,
# `_requests_first`, `_wakeups`) are this package's own.
__all__ = [
    "EVENTS",
    "EVERY_KIND",
    "JOBS",
    "MMAP_SIZE_BYTES",
    "POSTGRES_UNAVAILABLE",
    "WRITER_PAGE_CACHE_KIB",
    "Database",
    "DriverReader",
    "DriverSql",
    "KeyedRead",
    "PreparedRead",
    "RequestsFirst",
    "SessionDriver",
    "async_url",
    "database_unavailable",
    "dialect_of",
    "hold_locks_requests_take",
    "insert_for",
    "mark_background",
    "older_than",
    "on_commit",
    "session_driver",
    "session_reader",
    "wake_workers_on_commit",
]

T = TypeVar("T")
# JSON columns written and read with orjson (the standard library's json cost a job's 500 kept feed lines, and the
# sandbox's 500 feed lines on every poll, more than the rest of their statement).
JSON_COLUMNS: dict[str, Any] = {"json_serializer": jsonio.column_text, "json_deserializer": jsonio.loads}


# How long a SQLite write waits for another process's transaction (SQLite's busy handler, then the handoff's turn).
BUSY_TIMEOUT_S = 30.0
# The writer connection's page cache (SQLite's default: 2 MiB). A 500-SKU push dirties pages all over a large
# catalogue's tables and indexes; with 2 MiB the write spilled them mid-statement (docs/decisions/0465).
WRITER_PAGE_CACHE_KIB = 64 * 1024
# Every SQLite connection reads the file through a memory map up to this size (SQLite's own ceiling as built here):
# a page not in the connection's cache is read where the OS page cache holds it, not copied by a system call. A
# million-product push reads and writes pages all over the file (docs/decisions/0469).
MMAP_SIZE_BYTES = 0x7FFF0000
_NOTIFY = text(f"SELECT pg_notify('{wakeups.CHANNEL}', :kinds)")


def _create_private_file(path: Path) -> None:
    """The SQLite file (and, by SQLite's rule, its -wal and -shm files) readable by the service's user only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))


def async_url(url: str) -> str:
    """Plain `sqlite:///PATH` / `postgresql://...` become their async-driver forms."""
    parsed = make_url(url)
    driver = parsed.drivername
    if driver in ("sqlite", "sqlite+pysqlite"):
        parsed = parsed.set(drivername="sqlite+aiosqlite")
    elif driver in ("postgresql", "postgres", "postgresql+psycopg2", "postgresql+psycopg"):
        parsed = parsed.set(drivername="postgresql+asyncpg")
    return parsed.render_as_string(hide_password=False)


def _switch_to_wal(cursor: Any) -> None:
    """PRAGMA journal_mode=WAL, tried again while another connection is switching the same fresh file: SQLite answers
    that race "database is locked" at once, without its busy handler. Only a new file's first connections can meet
    it (on a WAL file the pragma changes nothing), so the short blocking waits stay off the steady path."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except Exception as exc:  # the driver's OperationalError, wrapped by SQLAlchemy's adapter
            if "database is locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(0.01)


def _began_immediate_on_the_loop(driver: Any) -> bool:
    """BEGIN IMMEDIATE on the loop's thread, on the sqlite3 connection under aiosqlite, without the round trips to
    aiosqlite's thread (docs/decisions/0462), when SQLite's write lock is free: it is once this process holds the
    writer (WriterTurns, WriterHandoff), unless a program outside marketsync writes. The busy handler is off for it,
    so it never waits on the loop: a lock held elsewhere answers at once, and the caller begins through aiosqlite,
    whose busy handler waits on aiosqlite's thread."""
    connection: sqlite3.Connection = driver._conn
    connection.execute("PRAGMA busy_timeout=0")
    try:
        connection.execute("BEGIN IMMEDIATE")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        connection.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")


def _configure_sqlite(engine: AsyncEngine, *, immediate: bool, checkpointer: WalCheckpointer | None = None) -> None:
    """`immediate` and `checkpointer`: the writer engine (its commits wake the process's WAL checkpoints)."""

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, decide when a transaction begins.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        # busy_timeout first: switching a new file to WAL takes its lock, and a process opening the same fresh file
        # at that instant (serve and a worker started together) would fail at once with "database is locked".
        cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        _switch_to_wal(cursor)
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA mmap_size={MMAP_SIZE_BYTES}")
        if immediate:
            cursor.execute(f"PRAGMA cache_size=-{WRITER_PAGE_CACHE_KIB}")
        if checkpointer is not None:
            for pragma in WRITE_CONNECTION_PRAGMAS:
                cursor.execute(pragma)
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        if immediate and _began_immediate_on_the_loop(conn.connection.driver_connection):
            return
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    if checkpointer is not None:
        # When the connection is back in the pool, its transaction has ended: the "commit" event comes before the
        # commit, and a checkpoint run between the two would miss it with no wake-up left to come.
        @event.listens_for(engine.sync_engine, "checkin")
        def _on_checkin(_dbapi_connection: Any, _record: Any) -> None:
            checkpointer.committed()


# The session.info key of the callbacks `on_commit` keeps until the transaction commits.
_ON_COMMIT = "marketsync.on_commit"


async def hold_locks_requests_take(session: AsyncSession) -> None:
    """The session's transaction has just taken locks the API's requests take too (a claim's queued job, a push's
    products): on PostgreSQL its later background statements no longer wait for the requests in flight (0468). A
    request's own transaction never waits: nothing to note (the push's hot path)."""
    if in_background():
        (await session.connection()).info[LOCKS_HELD_INFO] = True


def on_commit(session: AsyncSession, callback: Callable[[], None]) -> None:
    """`callback()` once `session`'s transaction (Database.transaction) has committed; never if it rolls back or the
    session is not one of its transactions."""
    session.info.setdefault(_ON_COMMIT, []).append(callback)


class Database:
    """The one coordination point: a reader and a writer session factory over one database."""

    def __init__(
        self,
        url: str,
        *,
        echo: bool = False,
        pool_size: int = 10,
        max_overflow: int = 10,
        command_timeout_s: float | None = 30.0,
        requests_first_max_wait_s: float = 0.0,
    ) -> None:
        self.url = async_url(url)
        self.requests_first = RequestsFirst(requests_first_max_wait_s)
        self.writer_turns: WriterTurns | None = None
        self.command_timeout_s = command_timeout_s
        parsed = make_url(self.url)
        self.is_sqlite = parsed.get_backend_name() == "sqlite"
        self.checkpointer: WalCheckpointer | None = None
        self.handoff: WriterHandoff | None = None
        sqlite_file = parsed.database if self.is_sqlite and parsed.database not in (None, "", ":memory:") else None
        # The SQLite database's file; None on PostgreSQL and for an in-memory database.
        self.sqlite_file: str | None = sqlite_file
        if self.is_sqlite:
            if sqlite_file:
                _create_private_file(Path(sqlite_file))
            self.engine = create_async_engine(
                self.url, echo=echo, pool_size=8, max_overflow=8, hide_parameters=True, **JSON_COLUMNS
            )
            _configure_sqlite(self.engine, immediate=False)
            self.write_engine = create_async_engine(
                self.url,
                echo=echo,
                pool_size=1,
                max_overflow=0,
                pool_timeout=60,
                hide_parameters=True,
                **JSON_COLUMNS,
            )
            # Who takes the one writer next: a request before background work (_requests_first.py).
            self.writer_turns = WriterTurns(timeout_s=60, background_max_wait_s=requests_first_max_wait_s)
            # A file's WAL is checkpointed by a thread of this process after commits (_wal_checkpoints.py).
            self.checkpointer = WalCheckpointer(sqlite_file) if sqlite_file else None
            # ...and each write transaction takes its turn at the writer among processes (_writer_handoff.py).
            self.handoff = WriterHandoff(sqlite_file, timeout_s=BUSY_TIMEOUT_S) if sqlite_file else None
            _configure_sqlite(self.write_engine, immediate=True, checkpointer=self.checkpointer)
        else:
            # hide_parameters: an error's log line never carries bound values (customer data, secrets' hashes).
            # No pool_pre_ping: a lost connection found by a statement invalidates the whole pool at once (one
            # request answers 503, the next checkout reconnects), without a round trip on every checkout.
            self.engine = create_async_engine(
                self.url,
                echo=echo,
                pool_size=pool_size,
                max_overflow=max_overflow,
                pool_pre_ping=False,
                hide_parameters=True,
                connect_args=connection_options(command_timeout_s),
                **JSON_COLUMNS,
            )
            _treat_timeouts_as_lost_connections(self.engine)
            _background_statements_wait(self.engine, self.requests_first)
            self.write_engine = self.engine
        # PostgreSQL: the raw driver's statements under a session wait as its SQLAlchemy statements do (_fast.py).
        info: dict[str, Any] = {} if self.is_sqlite else {REQUESTS_FIRST_INFO: self.requests_first}
        # SQLite: a writer session's statements may run on the loop's thread (_fast.session_driver).
        writer_info = {SQLITE_WRITER_INFO: True} if self.is_sqlite else info
        self._reader = async_sessionmaker(self.engine, expire_on_commit=False, autoflush=False, info=info)
        self._writer = async_sessionmaker(self.write_engine, expire_on_commit=False, autoflush=False, info=writer_info)
        self.wakeups = wakeups.WakeUps(
            None if self.is_sqlite else self.driver_connect_args(), check_every_s=command_timeout_s
        )
        self.fast = FastReads(
            self.url,
            self.engine.dialect,
            sqlite_file=sqlite_file,
            engine=self.engine,
            read_session=self.read,
            driver_options=connection_options(command_timeout_s),
        )

    def driver_connect_args(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """asyncpg.connect's arguments for a connection of this database outside the pool, its waits bounded."""
        args, kwargs = asyncpg_connect_args(self.url, self.engine.dialect)
        return args, {**kwargs, **connection_options(self.command_timeout_s)}

    @asynccontextmanager
    async def unbounded_engine(self) -> AsyncIterator[AsyncEngine]:
        """An engine whose statements may run as long as they need (migrations, which may wait for another
        process's upgrade lock): one connection, no command timeout. SQLite: the writer engine."""
        if self.is_sqlite:
            yield self.write_engine
            return
        # Opening the connection stays bounded (an unreachable server is not waited on); its statements are not.
        opening = {} if self.command_timeout_s is None else {"timeout": self.command_timeout_s}
        engine = create_async_engine(
            self.url, poolclass=NullPool, hide_parameters=True, connect_args=opening, **JSON_COLUMNS
        )
        try:
            yield engine
        finally:
            await engine.dispose()

    @property
    def dialect(self) -> str:
        return "sqlite" if self.is_sqlite else "postgresql"

    def reader(self) -> AsyncSession:
        return self._reader()

    def writer(self) -> AsyncSession:
        return self._writer()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """A write session committed once at the edge, rolled back on any exception. Work it queued (a job, an
        event) wakes the workers as it commits (marketsync/db/_wakeups.py)."""
        wake: frozenset[str] = frozenset()
        committed: list[Callable[[], None]] = []
        async with (
            self.requests_first.turn(),
            self._sqlite_writer_turn(),
            self._writer() as session,
            session.begin(),
        ):
            yield session
            wake = wakeups.wants_wake_up(session)
            if wake and not self.is_sqlite:  # delivered by PostgreSQL only when this transaction commits
                await session.execute(_NOTIFY, {"kinds": self.wakeups.notification(wake)})
            committed = session.info.pop(_ON_COMMIT, ())
        if wake:
            self.wakeups.signal(wake)
        for callback in committed:
            callback()

    @asynccontextmanager
    async def _sqlite_writer_turn(self) -> AsyncIterator[None]:
        """SQLite: this process's turn at the one writer (requests first), then the database's among processes."""
        turns, handoff = self.writer_turns, self.handoff
        if turns is None:
            yield
            return
        await turns.acquire()
        try:
            if handoff is None:
                yield
                return
            await handoff.acquire()
            try:
                yield
            finally:
                handoff.release()
        finally:
            turns.release()

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        async with self.requests_first.turn(), self._reader() as session, session.begin():
            yield session

    async def first(self, prepared: PreparedRead, params: Mapping[str, Any]) -> tuple[Any, ...] | None:
        """The first row of a prepared read on the raw driver (_fast.py: the bearer-token lookup)."""
        return await self.fast.first(prepared, params)

    async def rows_by_key(self, read: KeyedRead, key: str) -> list[tuple[Any, ...]]:
        """The rows of one key on the raw driver, concurrent lookups batched on PostgreSQL (_fast.py)."""
        return await self.fast.rows_by_key(read, key)

    async def driver_read(self, work: Callable[[DriverReader], Awaitable[T]]) -> T:
        """`work(reader)` with hand-written SQL on the raw driver (_fast.py: the orders page)."""
        async with self.requests_first.turn():
            return await self.fast.driver_read(work)

    async def refresh_statistics(self) -> None:
        """PostgreSQL: ANALYZE, so the planner knows tables a bulk write just filled (the demo's seed) before
        autovacuum gets to them, a minute or more later (docs/decisions/0450). SQLite: nothing; the service's queries
        plan well without statistics, as a deployment's file has none (docs/decisions/0296)."""
        if self.is_sqlite:
            return
        async with self.engine.connect() as connection:
            await connection.execution_options(isolation_level="AUTOCOMMIT")
            await connection.execute(text("ANALYZE"))

    async def dispose(self) -> None:
        await self.fast.close()
        await self.engine.dispose()
        if self.write_engine is not self.engine:
            await self.write_engine.dispose()
        if self.checkpointer is not None:
            self.checkpointer.close()
        if self.handoff is not None:
            self.handoff.close()


def _background_statements_wait(engine: AsyncEngine, requests_first: RequestsFirst) -> None:
    """PostgreSQL: background work waits for the requests in flight before each of its statements too (bounded), so
    a request resumes without the loop running the workers' work between its own statements; but not once its
    transaction holds locks the requests take too (0468), which its end releases."""

    @event.listens_for(engine.sync_engine, "before_cursor_execute")
    def _before(connection: Connection, *_args: Any) -> None:
        if requests_first.statement_waits(connection.info):
            await_only(requests_first.wait(requests_first.statement_max_wait_s))

    @event.listens_for(engine.sync_engine, "commit")
    @event.listens_for(engine.sync_engine, "rollback")
    def _ended(connection: Connection) -> None:
        if not connection.invalidated:  # an invalidated connection's info went with its DBAPI connection
            connection.info.pop(LOCKS_HELD_INFO, None)

    @event.listens_for(engine.sync_engine.pool, "checkin")
    def _returned(_dbapi_connection: Any, record: Any) -> None:
        record.info.pop(LOCKS_HELD_INFO, None)


def connection_options(command_timeout_s: float | None) -> dict[str, Any]:
    """asyncpg arguments of every PostgreSQL connection the service keeps: its waits bounded, and no JIT compilation.

    The service's statements are short reads and writes, which JIT compilation never pays back; and a prepared
    statement's generic plan, not knowing its LIMIT, can be costed far above `jit_above_cost` and compiled on every
    run (~250 ms for a 3 ms products page at 1,000,000 products: docs/decisions/0343-no-jit.md)."""
    return {**bounded_waits(command_timeout_s), "server_settings": {"jit": "off"}}


def bounded_waits(command_timeout_s: float | None) -> dict[str, Any]:
    """asyncpg arguments bounding every wait on a PostgreSQL connection: opening it and each statement.

    A connection whose peer vanished without closing it (a network partition, a dropped NAT or firewall entry, a
    host that died) never answers: without a bound a statement on it waits forever, and a worker whose side tasks
    wait so stops scheduling work. With it the statement fails (TimeoutError) and the connection is discarded."""
    if command_timeout_s is None:
        return {}
    return {"command_timeout": command_timeout_s, "timeout": command_timeout_s}


def _treat_timeouts_as_lost_connections(engine: AsyncEngine) -> None:
    """A statement that timed out on the driver leaves its asyncpg connection mid-protocol (the answer, if it ever
    comes, is still owed): SQLAlchemy is told it is a lost connection, so the connection is discarded and the pool's
    others are replaced at their next checkout, instead of going back to the pool unusable."""

    @event.listens_for(engine.sync_engine, "handle_error")
    def _on_error(context: ExceptionContext) -> None:
        if isinstance(context.original_exception, TimeoutError):
            context.is_disconnect = True


def insert_for(session: AsyncSession, table: Any) -> sqlite.Insert | postgresql.Insert:
    """A dialect insert offering on_conflict_do_nothing / on_conflict_do_update on both backends."""
    name = session.get_bind().dialect.name
    if name == "sqlite":
        return sqlite.insert(table)
    return postgresql.insert(table)


def older_than(at: Any, row_id: Any, before: tuple[datetime, str]) -> ColumnElement[bool]:
    """The rows after `before` (the (time, id) of a page's last row) in a newest-first list ordered by (at, id)
    descending: the keyset of the app's jobs, imports and webhook attempt pages."""
    at_value, id_value = before
    return or_(at < at_value, and_(at == at_value, row_id < id_value))


def dialect_of(session: AsyncSession) -> str:
    return session.get_bind().dialect.name


def database_unavailable(exc: BaseException) -> bool:
    """An error that says the database cannot be reached right now (a lost or refused connection, a full pool, a
    busy SQLite file), not that the request was wrong: answered 503 with Retry-After, and the transaction it broke
    was rolled back, so nothing was partly written."""
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError | sa_exc.TimeoutError):
        return True
    return _caused_by_the_driver_losing_the_server(exc)


def _caused_by_the_driver_losing_the_server(exc: BaseException) -> bool:
    """The error, or the driver's error under it, is one a restarted server or a lost connection raises.

    SQLAlchemy's translations keep asyncpg's error as their cause, and some say nothing by their own class: a connect
    refused while the server shuts down or starts up ("the database system is shutting down", 57P03) is a bare
    DBAPIError (no connection existed to invalidate), and a terminated connection met by a transaction started on the
    raw driver (_fast.session_driver) raises the dialect's InternalClientError. Both answered 500."""
    lost = (*POSTGRES_UNAVAILABLE, ConnectionRefusedError, ConnectionResetError)
    if isinstance(exc, lost):
        return True
    # Only under SQLAlchemy's errors: an OSError under a marketplace's or a webhook's HTTP error is not the database.
    cause: BaseException | None = exc
    for _ in range(3):  # SQLAlchemy's error, the dialect's translation, asyncpg's error: a short chain
        if cause is None or not type(cause).__module__.startswith("sqlalchemy."):
            return False
        cause = getattr(cause, "orig", None) or cause.__cause__
        if isinstance(cause, lost):
            return True
    return False
