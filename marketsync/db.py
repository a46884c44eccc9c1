"""Engines and sessions. SQLite (embedded, WAL) and PostgreSQL share the code and the migrations.

On SQLite every write transaction starts with BEGIN IMMEDIATE through a one-connection writer pool, so
writers queue in-process instead of failing with SQLITE_BUSY on lock upgrade; readers use their own pool
and never block on writers (WAL). On PostgreSQL both factories share one engine.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Row, create_engine, event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.sql import Executable


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
        else:
            self._hot_reader = None
            self.engine = create_async_engine(self.url, echo=echo, pool_size=10, max_overflow=10, pool_pre_ping=False)
            self.write_engine = self.engine
        self._autocommit = self.engine.execution_options(isolation_level="AUTOCOMMIT")
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

    async def read_one(self, statement: Executable) -> Row[Any] | None:
        """One small indexed read on the hottest path (the bearer-token lookup of every request).

        SQLite: a plain sqlite3 read in the event loop (WAL readers never wait for writers; ~0.1 ms against
        ~2 ms through the aiosqlite thread), falling back to the async path if the file is briefly locked.
        PostgreSQL: one autocommit round trip instead of BEGIN/SELECT/COMMIT.
        """
        if self._hot_reader is not None:
            try:
                with self._hot_reader.connect() as connection:
                    return connection.execute(statement).first()
            except OperationalError:
                pass
        async with self._autocommit.connect() as connection:
            return (await connection.execute(statement)).first()

    async def dispose(self) -> None:
        if self._hot_reader is not None:
            self._hot_reader.dispose()
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
