"""Engines and sessions. SQLite (embedded, WAL) and PostgreSQL share the code and the migrations.

On SQLite every write transaction starts with BEGIN IMMEDIATE through a one-connection writer pool, so
writers queue in-process instead of failing with SQLITE_BUSY on lock upgrade; readers use their own pool
and never block on writers (WAL). On PostgreSQL both factories share one engine.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
from sqlalchemy import Row, create_engine, event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.sql import Executable

T = TypeVar("T")
# A short read held up by a locked file falls back to the threaded path instead of holding the event loop.
_IN_LOOP_BUSY_TIMEOUT_MS = 50


def async_url(url: str) -> str:
    """Plain `sqlite:///PATH` / `postgresql://...` become their async-driver forms."""
    parsed = make_url(url)
    driver = parsed.drivername
    if driver in ("sqlite", "sqlite+pysqlite"):
        parsed = parsed.set(drivername="sqlite+aiosqlite")
    elif driver in ("postgresql", "postgres", "postgresql+psycopg2", "postgresql+psycopg"):
        parsed = parsed.set(drivername="postgresql+asyncpg")
    return parsed.render_as_string(hide_password=False)


def _configure_sqlite(engine: AsyncEngine, *, immediate: bool) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, decide when a transaction begins.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _sqlite_hot_reader(url: str) -> Engine:
    engine = create_engine(url, pool_size=2, max_overflow=2)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA query_only=ON")
        cursor.execute("PRAGMA busy_timeout=50")  # never hold the event loop: fall back to the async path
        cursor.close()

    return engine


class _InLoopSqliteConnection(aiosqlite.Connection):
    """aiosqlite's interface run in the calling thread: no worker thread, so no hop per call.

    Each aiosqlite call is a hand-off to its thread and back through the event loop (~0.2 ms here, several ms
    under load); a read session makes about nine. Only for short read-only work (see `Database.short_read`).
    """

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self._running or self._connection is None:
            raise ValueError("Connection closed")
        return fn(*args, **kwargs)

    async def _connect(self) -> _InLoopSqliteConnection:
        if self._connection is None:
            self._connection = self._connector()
        return self

    def __await__(self) -> Any:
        return self._connect().__await__()

    def stop(self) -> None:
        self._running = False
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def _in_loop_sqlite_reader(url: str, database: str) -> AsyncEngine:
    def connector() -> sqlite3.Connection:
        # isolation_level=None: SQLAlchemy's begin hook issues BEGIN (a snapshot for the whole read).
        connection = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA query_only=ON")
        connection.execute(f"PRAGMA busy_timeout={_IN_LOOP_BUSY_TIMEOUT_MS}")
        return connection

    async def creator() -> aiosqlite.Connection:
        return await _InLoopSqliteConnection(connector, 64)._connect()

    engine = create_async_engine(url, async_creator=creator, pool_size=4, max_overflow=4)

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN")

    return engine


class Database:
    """The one coordination point: a reader and a writer session factory over one database."""

    def __init__(self, url: str, *, echo: bool = False) -> None:
        self.url = async_url(url)
        parsed = make_url(self.url)
        self.is_sqlite = parsed.get_backend_name() == "sqlite"
        if self.is_sqlite:
            if parsed.database and parsed.database != ":memory:":
                Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
            self.engine = create_async_engine(self.url, echo=echo, pool_size=8, max_overflow=8)
            _configure_sqlite(self.engine, immediate=False)
            self.write_engine = create_async_engine(self.url, echo=echo, pool_size=1, max_overflow=0, pool_timeout=60)
            _configure_sqlite(self.write_engine, immediate=True)
            self._hot_reader: Engine | None = _sqlite_hot_reader(parsed.set(drivername="sqlite").render_as_string())
            self._in_loop_engine: AsyncEngine | None = _in_loop_sqlite_reader(self.url, parsed.database or ":memory:")
        else:
            self._hot_reader = None
            self._in_loop_engine = None
            self.engine = create_async_engine(self.url, echo=echo, pool_size=10, max_overflow=10, pool_pre_ping=False)
            self.write_engine = self.engine
        self._autocommit = self.engine.execution_options(isolation_level="AUTOCOMMIT")
        # SQLite: in the event loop; PostgreSQL: autocommit (READ COMMITTED snapshots are per statement anyway).
        self._short_reader = async_sessionmaker(
            self._in_loop_engine or self._autocommit, expire_on_commit=False, autoflush=False
        )
        self._reader = async_sessionmaker(self.engine, expire_on_commit=False, autoflush=False)
        self._writer = async_sessionmaker(self.write_engine, expire_on_commit=False, autoflush=False)

    @property
    def dialect(self) -> str:
        return "sqlite" if self.is_sqlite else "postgresql"

    def reader(self) -> AsyncSession:
        return self._reader()

    def writer(self) -> AsyncSession:
        return self._writer()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """A write session committed once at the edge, rolled back on any exception."""
        async with self._writer() as session, session.begin():
            yield session

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        async with self._reader() as session, session.begin():
            yield session

    async def read_one(self, statement: Executable, params: Mapping[str, Any] | None = None) -> Row[Any] | None:
        """One small indexed read on the hottest path (the bearer-token lookup of every request).

        SQLite: a plain sqlite3 read in the event loop (WAL readers never wait for writers; ~0.1 ms against
        ~2 ms through the aiosqlite thread), falling back to the async path if the file is briefly locked.
        PostgreSQL: one autocommit round trip instead of BEGIN/SELECT/COMMIT.
        A statement built once with `bindparam`s and run with `params` skips rebuilding it per call (~0.4 ms).
        """
        if self._hot_reader is not None:
            try:
                with self._hot_reader.connect() as connection:
                    return connection.execute(statement, params).first()
            except OperationalError:
                pass
        async with self._autocommit.connect() as connection:
            return (await connection.execute(statement, params)).first()

    async def short_read(self, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
        """`work(session)` in a read session without the per-call thread hops of `read()`.

        For short indexed reads on the request path (a handful of rows; docs/decisions/0011-hot-path-token-read.md):
        on SQLite the session runs in the event loop (WAL readers never wait for writers; a briefly locked file
        makes `work` run again through `read()`, so it must only read); on PostgreSQL each statement is one
        autocommit round trip instead of BEGIN/.../COMMIT. Never for scans or large pages: they would hold the loop.
        """
        if self._in_loop_engine is not None:
            try:
                async with self._short_reader() as session, session.begin():
                    return await work(session)
            except OperationalError:
                pass
            async with self.read() as session:
                return await work(session)
        async with self._short_reader() as session, session.begin():
            return await work(session)

    async def dispose(self) -> None:
        if self._hot_reader is not None:
            self._hot_reader.dispose()
        if self._in_loop_engine is not None:
            await self._in_loop_engine.dispose()
        await self.engine.dispose()
        if self.write_engine is not self.engine:
            await self.write_engine.dispose()


def insert_for(session: AsyncSession, table: Any) -> sqlite.Insert | postgresql.Insert:
    """A dialect insert offering on_conflict_do_nothing / on_conflict_do_update on both backends."""
    name = session.get_bind().dialect.name
    if name == "sqlite":
        return sqlite.insert(table)
    return postgresql.insert(table)


def dialect_of(session: AsyncSession) -> str:
    return session.get_bind().dialect.name
