"""Fast reads on the raw driver, for the request path's bounded reads: the bearer-token lookup of every request
(`first` with a `PreparedRead`) and the orders page and single-order document (`driver_read`). Everything else
goes through SQLAlchemy sessions (db.py).

SQLite: a plain sqlite3 connection per thread, read-only, in the event loop (WAL readers never wait for writers; a
locked file falls back to the session path). PostgreSQL: a few asyncpg connections kept per process; a lost
connection, a restarted server or another event loop falls back to the session path, which behaves as before.
Nothing is cached: every call reads the database (a revoked token fails on the next request).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Coroutine, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy import Row
from sqlalchemy.engine import Dialect, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession
from sqlalchemy.sql import Executable, Select

from marketsync.db._requests_first import REQUESTS_FIRST_INFO, SQLITE_WRITER_INFO, RequestsFirst, in_background

T = TypeVar("T")
# A read held up by a locked file falls back to the threaded session path instead of holding the event loop.
_BUSY_TIMEOUT_MS = 50
# asyncpg connections kept per process for prepared reads: each lookup holds one for a single round trip.
_POSTGRES_PREPARED_CONNECTIONS = 2
# ... and for driver reads (pages of orders), apart, so a page never makes a token lookup wait. With SQLAlchemy's
# pool (10 + 10 overflow) an API process may hold up to 24 connections (README, How it is built).
_POSTGRES_DRIVER_READ_CONNECTIONS = 2
# What a dropped connection or a restarted server raises on a kept asyncpg connection (terminated backends answer
# the next call with admin_shutdown, or leave the protocol mid-state). Not QueryCanceledError (a statement timeout,
# also an OperatorInterventionError): the connection is fine, and running the query again would only double it.
_POSTGRES_CONNECTION_LOST: tuple[type[BaseException], ...] = (
    OSError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.CrashShutdownError,
    asyncpg.exceptions.CannotConnectNowError,
)


class _CannotOpen(Exception):
    """A kept connection could not be opened (server down, too many connections): the caller falls back."""


class SessionConnectionLost(Exception):
    """A write session's connection failed under a raw-driver statement (SessionDriver): it was invalidated, so the
    pool never hands it out again, and the request answers 503 like any lost connection."""


POSTGRES_UNAVAILABLE: tuple[type[BaseException], ...] = (
    _CannotOpen,
    SessionConnectionLost,
    *_POSTGRES_CONNECTION_LOST,
)


# Keys of SQLAlchemy's asyncpg connect arguments that its adapter consumes rather than asyncpg.
_SQLALCHEMY_ONLY_CONNECT_ARGS = ("prepared_statement_cache_size", "prepared_statement_name_func", "async_creator_fn")


@dataclass(frozen=True)
class _CompiledRead:
    sql: str
    binds: tuple[tuple[str, Callable[[Any], Any] | None], ...]
    columns: tuple[Callable[[Any], Any] | None, ...] | None  # None: no column needs converting
    constants: Mapping[str, Any]  # values written into the statement (`status == "Pending"`)

    def arguments(self, params: Mapping[str, Any]) -> tuple[Any, ...]:
        if self.constants:
            params = {**self.constants, **params}
        return tuple(params[name] if convert is None else convert(params[name]) for name, convert in self.binds)

    def row(self, values: Sequence[Any]) -> tuple[Any, ...]:
        if self.columns is None:
            return tuple(values)
        return tuple(
            value if convert is None else convert(value) for value, convert in zip(values, self.columns, strict=True)
        )


class PreparedRead:
    """A small Core SELECT run on the raw driver by `FastReads.first` (the bearer-token lookup of every request).

    Build it once at import time. It is compiled once per dialect, and its parameters and columns go through
    SQLAlchemy's own type processors, so values compare exactly as through SQLAlchemy (a UTCDateTime binds as
    naive UTC: text on SQLite, TIMESTAMP on PostgreSQL). Positional binds only (no IN-lists, no literal binds);
    `bindparam`s take `params` at each call, values written into the statement are bound as they are.
    """

    def __init__(self, statement: Select[*tuple[Any, ...]]) -> None:
        self.statement = statement
        self._compiled: dict[str, _CompiledRead] = {}

    def compiled_for(self, dialect: Dialect) -> _CompiledRead:
        compiled = self._compiled.get(dialect.name)
        if compiled is None:
            compiled = self._compiled[dialect.name] = self._compile(dialect)
        return compiled

    def _compile(self, dialect: Dialect) -> _CompiledRead:
        compiled: Any = self.statement.compile(dialect=dialect)
        if not compiled.positional or compiled.literal_execute_params or compiled.post_compile_params:
            raise ValueError("a prepared read needs plain positional bind parameters")
        processors = compiled._bind_processors
        readers = tuple(
            column.type._cached_result_processor(dialect, None) for column in self.statement.selected_columns
        )
        return _CompiledRead(
            sql=compiled.string,
            binds=tuple((name, processors.get(name)) for name in compiled.positiontup),
            columns=readers if any(readers) else None,
            constants={name: bind.value for name, bind in compiled.binds.items() if not bind.required},
        )


class KeyedRead:
    """The rows of one key, on the raw driver, with the lookups of concurrent requests in one round trip on
    PostgreSQL (`FastReads.rows_by_key`: the credential read of every API request, an account's marketplaces;
    docs/decisions/0250).

    Both statements return the key as their first column. `sqlite_sql` takes the key as its one `?`;
    `postgres_sql` takes an array of keys as $1. Rows of one key come in the statement's order.
    """

    def __init__(self, sqlite_sql: str, postgres_sql: str) -> None:
        self.sqlite_sql = sqlite_sql
        self.postgres_sql = postgres_sql


class _Batches:
    """Lookups that arrive while a round trip is in flight wait for the next one, which carries all of them.

    Every lookup is answered by a read that began after it was asked (no answer is reused from a read that started
    earlier), so a deleted row fails the next lookup exactly as with one query per lookup.
    """

    def __init__(self, connections: _PostgresReadConnections, sql: str) -> None:
        self._connections = connections
        self._sql = sql
        self._waiting: dict[str, list[asyncio.Future[Any]]] = {}
        self._draining = False

    async def get(self, key: str) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, []).append(future)
        if not self._draining:
            self._draining = True
            # A task of its own: a caller cancelled mid-trip must not strand the lookups that joined it.
            asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, {}
                try:
                    async with self._connections.connection() as connection:
                        records = await connection.fetch(self._sql, list(batch))
                except BaseException as exc:
                    for futures in batch.values():
                        for future in futures:
                            if not future.done():
                                future.set_exception(exc if isinstance(exc, Exception) else _CannotOpen(str(exc)))
                    if not isinstance(exc, Exception):
                        raise
                    continue
                found: dict[str, list[tuple[Any, ...]]] = {}
                for record in records:
                    found.setdefault(record[0], []).append(tuple(record))
                for key, futures in batch.items():
                    rows = found.get(key, [])
                    for future in futures:
                        if not future.done():
                            future.set_result(rows)
        finally:
            self._draining = False


class _SqliteReadConnections:
    """One plain sqlite3 connection per thread (an event loop's): query_only, short busy_timeout, autocommit.

    sqlite3 keeps the statements it prepared per connection, so a prepared read costs one step of the VM.
    """

    def __init__(self, database: str, dialect: Dialect) -> None:
        self.database = database
        self.dialect = dialect
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            # check_same_thread=False only so that close() may run in another thread.
            connection = sqlite3.connect(self.database, isolation_level=None, check_same_thread=False)
            connection.execute("PRAGMA query_only=ON")
            connection.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            with self._lock:
                self._opened.append(connection)
            self._local.connection = connection
        return connection

    def close(self) -> None:
        with self._lock:
            opened, self._opened = self._opened, []
        self._local = threading.local()
        for connection in opened:
            connection.close()


def asyncpg_connect_args(url: str, dialect: Dialect) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """asyncpg.connect's arguments for this URL, as SQLAlchemy's asyncpg dialect would open it."""
    args, kwargs = dialect.create_connect_args(make_url(url))
    for key in _SQLALCHEMY_ONLY_CONNECT_ARGS:
        kwargs.pop(key, None)
    return tuple(args), dict(kwargs)


class _PostgresReadConnections:
    """A few asyncpg connections kept open for prepared reads.

    Checking a connection out of SQLAlchemy's pool and running Core on it cost ~0.5 ms of CPU per lookup;
    asyncpg on a kept connection, with the statement prepared once (asyncpg's statement cache), ~0.08 ms.
    Connections are opened with the arguments SQLAlchemy's asyncpg dialect would use.
    """

    def __init__(self, url: str, dialect: Dialect, size: int, options: Mapping[str, Any]) -> None:
        args, kwargs = asyncpg_connect_args(url, dialect)
        # `options` (db.connection_options): asyncpg's command_timeout and connect timeout, so a silent connection
        # raises TimeoutError (an OSError: lost, so discarded) instead of holding the read forever; JIT off.
        self._connect_args = args, {**kwargs, **options}
        self.dialect = dialect
        # First come, first served (asyncio.Semaphore queues fairly; a queue of connections let newcomers overtake
        # woken waiters: p99 500 ms under 32 connections).
        self._gate = asyncio.Semaphore(size)
        self._idle: list[Any] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    def usable_here(self) -> bool:
        """asyncpg connections belong to the loop that opened them (so does SQLAlchemy's pool)."""
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        return loop is self._loop

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        """A kept connection for one short piece of work (`_CannotOpen` if none can be opened).

        After the work it is kept again, also when the work raised an ordinary error (a 404, a refused cursor, an
        SQL error: asyncpg leaves the connection ready); one that was lost, or interrupted mid-call (cancelled), is
        discarded, since it may be mid-protocol.
        """
        async with self._gate:
            connection = self._idle.pop() if self._idle else None
            if connection is None:
                args, kwargs = self._connect_args
                try:
                    connection = await asyncpg.connect(*args, **kwargs)
                except Exception as exc:
                    raise _CannotOpen(str(exc)) from exc
            try:
                yield connection
            except Exception as exc:
                if isinstance(exc, _POSTGRES_CONNECTION_LOST) or connection.is_closed():
                    connection.terminate()
                elif not self._closed:
                    self._idle.append(connection)
                raise
            except BaseException:
                connection.terminate()
                raise
            if self._closed:
                connection.terminate()
            else:
                self._idle.append(connection)

    async def fetch_row(self, sql: str, arguments: Sequence[Any]) -> Any:
        async with self.connection() as connection:
            return await connection.fetchrow(sql, *arguments)

    async def close(self) -> None:
        """Close the idle connections; one in use is terminated when its work ends. Never raises."""
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            try:
                await connection.close(timeout=5)
            except Exception:
                connection.terminate()


class FastReads:
    """The raw-driver reads of one database (see the module docstring). `Database` owns one."""

    def __init__(
        self,
        url: str,
        dialect: Dialect,
        *,
        sqlite_file: str | None,
        engine: AsyncEngine,
        read_session: Callable[[], AbstractAsyncContextManager[AsyncSession]],
        driver_options: Mapping[str, Any] | None = None,
    ) -> None:
        postgres = dialect.name == "postgresql"
        options = driver_options or {}
        self._read_session = read_session
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        # An in-memory database is private to its connection: a second one would see no tables.
        self._sqlite_prepared = _SqliteReadConnections(sqlite_file, dialect) if sqlite_file else None
        # Driver reads have connections of their own: a token lookup never runs inside a page's snapshot.
        self._sqlite_driver_reads = _SqliteReadConnections(sqlite_file, dialect) if sqlite_file else None
        self._postgres_prepared = (
            _PostgresReadConnections(url, dialect, _POSTGRES_PREPARED_CONNECTIONS, options) if postgres else None
        )
        self._postgres_driver_reads = (
            _PostgresReadConnections(url, dialect, _POSTGRES_DRIVER_READ_CONNECTIONS, options) if postgres else None
        )
        self._batches: dict[int, _Batches] = {}

    async def _autocommit_first(self, statement: Executable, params: Mapping[str, Any] | None) -> Row[Any] | None:
        """`first`'s fallback: one autocommit statement through SQLAlchemy (PostgreSQL: no BEGIN/COMMIT)."""
        async with self._autocommit.connect() as connection:
            return (await connection.execute(statement, params)).first()

    async def first(self, prepared: PreparedRead, params: Mapping[str, Any]) -> tuple[Any, ...] | None:
        """The first row of a `PreparedRead`, on the raw driver, without SQLAlchemy's per-call work (the bearer-token
        lookup of every request; the workers' idle checks).

        SQLite: this thread's plain sqlite3 connection in the event loop (~0.01 ms against ~0.16 ms through a
        SQLAlchemy connection; WAL readers never wait for writers); a locked file (OperationalError) falls back to
        the autocommit path. PostgreSQL: asyncpg on a kept connection (~0.08 ms of CPU against ~0.5 ms); any driver
        failure, or another event loop, falls back to the same path, which then behaves exactly as before.
        Nothing is cached: every call reads the database (a revoked token fails on the next request).
        """
        if self._sqlite_prepared is not None:
            compiled = prepared.compiled_for(self._sqlite_prepared.dialect)
            try:
                rows = self._sqlite_prepared.connection().execute(compiled.sql, compiled.arguments(params)).fetchall()
            except sqlite3.OperationalError:
                pass
            else:  # fetchall() ran the statement to completion: no read transaction is left open
                return compiled.row(rows[0]) if rows else None
        elif self._postgres_prepared is not None and self._postgres_prepared.usable_here():
            compiled = prepared.compiled_for(self._postgres_prepared.dialect)
            try:
                record = await self._postgres_prepared.fetch_row(compiled.sql, compiled.arguments(params))
            except Exception:  # noqa: S110 - dropped connection, restarted server: the ordinary path reports it
                pass
            else:
                return None if record is None else compiled.row(record)
        row = await self._autocommit_first(prepared.statement, params)
        return None if row is None else tuple(row)

    async def rows_by_key(self, read: KeyedRead, key: str) -> list[tuple[Any, ...]]:
        """The rows of `key` (each starting with the key), concurrent lookups batched into one round trip on
        PostgreSQL (one query per lookup cost ~80 µs of CPU each; a batch of 16 about as much as one). SQLite: one
        statement on this thread's connection. A driver failure, a locked file or another event loop: one statement
        through `driver_read`, which falls back as it does."""
        if self._sqlite_prepared is not None:
            try:  # one statement in autocommit, read to completion: no snapshot stays open (as `first`)
                return self._sqlite_prepared.connection().execute(read.sqlite_sql, (key,)).fetchall()
            except sqlite3.OperationalError:
                pass  # locked: the session path below waits for the file as every other read does
        elif self._postgres_prepared is not None and self._postgres_prepared.usable_here():
            batches = self._batches.get(id(read))
            if batches is None:
                batches = self._batches[id(read)] = _Batches(self._postgres_prepared, read.postgres_sql)
            try:
                rows: list[tuple[Any, ...]] = await batches.get(key)
            except Exception:  # noqa: S110 - dropped connection, restarted server: the ordinary path reports it
                pass
            else:
                return rows

        async def one(reader: DriverReader) -> list[tuple[Any, ...]]:
            if reader.postgres:
                return [tuple(row) for row in await reader.fetch(read.postgres_sql, ([key],))]
            return [tuple(row) for row in await reader.fetch(read.sqlite_sql, (key,))]

        return await self.driver_read(one)

    async def driver_read(self, work: Callable[[DriverReader], Awaitable[T]]) -> T:
        """`work(reader)`: hand-written SQL on the raw driver, for bounded hot-path reads (a page of orders).

        Without SQLAlchemy's session and pool (~1.3 ms a page on SQLite against a 0.55 ms query;
        docs/decisions/0066-order-documents.md). SQLite: a plain sqlite3 connection of this thread inside
        BEGIN/COMMIT, one snapshot for all of `work`'s queries; a locked file makes `work` run again through
        a read session, so `work` must only read. PostgreSQL: a kept asyncpg connection in autocommit (READ
        COMMITTED); a driver failure (dropped connection, restarted server) or another event loop makes `work` run
        through a read session.
        """
        if self._sqlite_driver_reads is not None:
            connection = self._sqlite_driver_reads.connection()
            # sqlite3 calls never suspend the coroutine, so reads on this thread cannot interleave inside the
            # transaction; a read nested in another just joins it.
            own_transaction = not connection.in_transaction
            try:
                if own_transaction:
                    connection.execute("BEGIN")
                try:
                    return await work(_SqliteDriverReader(connection))
                finally:
                    if own_transaction:
                        _end_read(connection)
            except sqlite3.OperationalError:
                pass  # locked: the session path waits for the file as every other read does (busy_timeout 30 s)
        elif self._postgres_driver_reads is not None and self._postgres_driver_reads.usable_here():
            try:
                async with self._postgres_driver_reads.connection() as pg_connection:
                    return await work(_AsyncpgDriverReader(pg_connection))
            except POSTGRES_UNAVAILABLE:
                pass
        async with self._read_session() as session:
            return await work(await session_reader(session))

    async def close(self) -> None:
        if self._sqlite_prepared is not None:
            self._sqlite_prepared.close()
        if self._sqlite_driver_reads is not None:
            self._sqlite_driver_reads.close()
        if self._postgres_prepared is not None:
            await self._postgres_prepared.close()
        if self._postgres_driver_reads is not None:
            await self._postgres_driver_reads.close()


def _end_read(connection: sqlite3.Connection) -> None:
    """COMMIT a read transaction; if that fails, ROLLBACK, so the connection never keeps an old snapshot."""
    try:
        connection.execute("COMMIT")
    except sqlite3.Error:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise


class DriverReader(Protocol):
    """Hand-written SQL on a raw driver connection (placeholders `?` on SQLite, `$n` on PostgreSQL)."""

    postgres: bool

    async def fetch(self, sql: str, arguments: Sequence[Any]) -> list[Sequence[Any]]: ...


class DriverSql:
    """Parameters collected in the driver's own placeholder style ($n for asyncpg, ? for sqlite3), for the hand-written
    SQL of driver reads and writes. The texts built with it interpolate only their module's table and column names and
    these placeholders (hence the S608 waivers where they are used); every value is a bound parameter."""

    def __init__(self, postgres: bool) -> None:
        self.postgres = postgres
        self.params: list[Any] = []

    def bind(self, value: Any) -> str:
        self.params.append(value)
        return f"${len(self.params)}" if self.postgres else "?"

    def bind_time(self, value: datetime) -> str:
        return self.bind(self.time_value(value))

    def time_value(self, value: datetime) -> datetime | str:
        """A timestamp as UTCDateTime stores it: naive UTC (text with microseconds on SQLite)."""
        naive = value.replace(tzinfo=None) if value.tzinfo is UTC else value.astimezone(UTC).replace(tzinfo=None)
        return naive if self.postgres else naive.isoformat(sep=" ", timespec="microseconds")

    def bind_in(self, column: str, values: Collection[str]) -> str:
        if self.postgres:
            return f"{column} = ANY({self.bind(list(values))}::varchar[])"
        return f"{column} IN ({', '.join(self.bind(value) for value in values)})"


class _SqliteDriverReader:
    postgres = False

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    async def fetch(self, sql: str, arguments: Sequence[Any]) -> list[Sequence[Any]]:
        return self._connection.execute(sql, arguments).fetchall()


class _AsyncpgDriverReader:
    postgres = True

    def __init__(self, connection: Any) -> None:
        self._connection = connection

    async def fetch(self, sql: str, arguments: Sequence[Any]) -> list[Sequence[Any]]:
        rows: list[Sequence[Any]] = await self._connection.fetch(sql, *arguments)
        return rows


class _SessionDriverReader:
    """The driver connection (aiosqlite / asyncpg) under a session's transaction."""

    def __init__(self, driver: Any, postgres: bool) -> None:
        self._driver = driver
        self.postgres = postgres

    async def fetch(self, sql: str, arguments: Sequence[Any]) -> list[Sequence[Any]]:
        if self.postgres:
            rows: list[Sequence[Any]] = await self._driver.fetch(sql, *arguments)
            return rows
        return list(await self._driver.execute_fetchall(sql, arguments))


class SessionDriver:
    """The raw driver connection (aiosqlite / asyncpg) under a write session's transaction, for the statements of
    a hot write path (the price/stock push): hand-written SQL (`?` on SQLite, `$n` on PostgreSQL), no Core
    compilation, no result processing. It runs inside the session's transaction: committed or rolled back with it.

    SQLite, for a request (not background work): the statements run on the event loop's thread, on the sqlite3
    connection under aiosqlite, as the floor and the service's own reads do (docs/decisions/0462). The writer
    session's transaction began IMMEDIATE, so it holds SQLite's one writer: a statement never waits for a lock, it
    only runs, and a push's statements take less than the round trips to aiosqlite's thread they replace.
    Background work keeps the thread: a long statement of a job never holds the loop from the requests (0281).

    SQLAlchemy does not see these statements fail: when one breaks the connection (lost, or interrupted mid-protocol),
    the connection is invalidated here, so the pool discards it instead of handing it to the next request.
    """

    def __init__(
        self,
        driver: Any,
        postgres: bool,
        connection: AsyncConnection,
        requests_first: RequestsFirst | None = None,
        *,
        on_loop: bool = False,
    ) -> None:
        self._driver = driver
        self.postgres = postgres
        self._connection = connection
        # PostgreSQL: background work waits for the requests in flight before each statement, as its SQLAlchemy
        # statements do (db.py: _background_statements_wait; docs/decisions/0452, 0468).
        self._requests_first = requests_first if postgres else None
        # aiosqlite's own sqlite3 connection; its thread is idle while the session's transaction runs this.
        self._sqlite_on_loop: sqlite3.Connection | None = driver._conn if on_loop and not postgres else None

    async def fetch(self, sql: str, arguments: Sequence[Any]) -> list[Sequence[Any]]:
        if self.postgres:
            rows: list[Sequence[Any]] = await self._guarded(self._driver.fetch(sql, *arguments))
            return rows
        if self._sqlite_on_loop is not None:
            return self._sqlite_on_loop.execute(sql, arguments).fetchall()
        return list(await self._driver.execute_fetchall(sql, arguments))

    async def execute(self, sql: str, arguments: Sequence[Any]) -> int:
        """Run one statement; answers how many rows it inserted, updated or deleted."""
        if self.postgres:
            status: str = await self._guarded(self._driver.execute(sql, *arguments))
            # asyncpg answers the command tag: "UPDATE 500", "INSERT 0 1", "SELECT 3".
            count = status.rpartition(" ")[2]
            return int(count) if count.isdigit() else 0
        if self._sqlite_on_loop is not None:
            return self._sqlite_on_loop.execute(sql, arguments).rowcount
        cursor = await self._driver.execute(sql, arguments)
        return int(cursor.rowcount)

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> int | None:
        """Run one statement per row; answers how many rows they changed in all (None on PostgreSQL: asyncpg's
        executemany does not count)."""
        if self.postgres:
            await self._guarded(self._driver.executemany(sql, rows))
            return None
        if self._sqlite_on_loop is not None:
            return self._sqlite_on_loop.executemany(sql, rows).rowcount
        cursor = await self._driver.executemany(sql, rows)
        return int(cursor.rowcount)

    async def execute_rows(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """One statement over many rows, each row the statement's parameters in order: SQLite runs it a row at a time
        (executemany); PostgreSQL's text takes each column as an array (`unnest($1::type[], ...)`), one statement
        whatever the number of rows, where asyncpg's executemany runs one per row."""
        if not rows:
            return
        if self.postgres:
            await self.execute(sql, [list(column) for column in zip(*rows, strict=True)])
        else:
            await self.executemany(sql, rows)

    async def _guarded(self, call: Coroutine[Any, Any, T]) -> T:
        first = self._requests_first
        if first is not None and first.statement_waits(self._connection.info):
            try:
                await first.wait(first.statement_max_wait_s)
            except BaseException:
                call.close()  # never awaited: no "coroutine was never awaited" warning
                raise
        try:
            return await call
        except BaseException as exc:
            # An SQL error (a constraint, a trigger) leaves the connection usable: the session rolls back as usual.
            broken = not isinstance(exc, Exception) or isinstance(exc, POSTGRES_UNAVAILABLE) or self._driver.is_closed()
            if broken:
                await _invalidate(self._connection)
            raise


async def _invalidate(connection: AsyncConnection) -> None:
    with contextlib.suppress(Exception):
        await connection.invalidate()


async def session_driver(session: AsyncSession) -> SessionDriver:
    """A SessionDriver on `session`'s connection, its transaction begun (SQLAlchemy's asyncpg adapter begins lazily,
    at its first statement: a raw statement before that would run outside the transaction)."""
    connection = await session.connection()
    adapted = await connection.get_raw_connection()
    postgres = session.get_bind().dialect.name == "postgresql"
    if postgres:
        adapter: Any = adapted.dbapi_connection
        if adapter._transaction is None and adapter.isolation_level != "autocommit":
            try:
                await adapter._start_transaction()
            except Exception as exc:  # the connection cannot even begin: lost, or left mid-protocol
                await _invalidate(connection)
                raise SessionConnectionLost(str(exc)) from exc
    on_loop = bool(session.info.get(SQLITE_WRITER_INFO)) and not in_background()
    return SessionDriver(
        adapted.driver_connection, postgres, connection, session.info.get(REQUESTS_FIRST_INFO), on_loop=on_loop
    )


async def session_reader(session: AsyncSession) -> DriverReader:
    """A DriverReader inside `session`'s transaction (e.g. reading back what a write just flushed)."""
    connection = await session.connection()
    driver = (await connection.get_raw_connection()).driver_connection
    return _SessionDriverReader(driver, session.get_bind().dialect.name == "postgresql")
