"""Apply pending migrations. Every command does this on start (DESIGN.md section 5); upgrades run while the
service serves, and processes starting together take turns (docs/decisions/0306-online-migrations.md)."""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import structlog
from alembic import command, op
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import TextClause, inspect, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection

from marketsync.db import Database

log = structlog.get_logger("marketsync.migrate")

MIGRATIONS = Path(__file__).parent / "migrations"
# Any constant: the PostgreSQL advisory lock one upgrade holds at a time, whichever process runs it.
UPGRADE_LOCK_KEY = 74_210_001
# How often a process waiting for another's upgrade tries the lock again.
LOCK_POLL_S = 0.2

_INVALID_INDEX = text(
    "SELECT 1 FROM pg_index JOIN pg_class ON pg_class.oid = pg_index.indexrelid "
    "WHERE pg_class.relname = :name AND pg_class.relnamespace = current_schema()::regnamespace "
    "AND NOT pg_index.indisvalid"
)


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def _upgrade(connection: Any, revision: str) -> None:
    # In no transaction of ours: Alembic then runs each migration in a transaction of its own (env.py), and a
    # migration may step out of it (create_index_online).
    assert not connection.in_transaction()
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


def head_revision() -> str:
    """The revision this code's migrations end at."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


async def current_revision(db: Database) -> str | None:
    """The database's revision; None for a database never migrated."""
    async with db.engine.connect() as connection:
        has_table = await connection.run_sync(lambda sync: inspect(sync).has_table("alembic_version"))
        if not has_table:
            return None
        value = (await connection.execute(text("SELECT version_num FROM alembic_version"))).scalar_one_or_none()
        return str(value) if value is not None else None


async def upgrade(db: Database, revision: str = "head") -> None:
    """Upgrade to `revision`, after any other process's upgrade of the same database has finished.

    Not bounded by MARKETSYNC_DB_COMMAND_TIMEOUT_S: a migration, or the wait for another process's, may be long."""
    async with db.unbounded_engine() as engine, engine.connect() as connection:
        async with _upgrade_lock(db, connection):
            await connection.run_sync(_upgrade, revision)
        await connection.commit()  # a run with nothing to do leaves Alembic's read of the version open


@asynccontextmanager
async def _upgrade_lock(db: Database, connection: AsyncConnection) -> AsyncIterator[None]:
    if db.is_sqlite:
        async with _sqlite_upgrade_lock(db.sqlite_file):
            yield
        return

    # A session lock, taken and held outside any transaction: a transaction left open while waiting would hold back
    # the holder's CREATE INDEX CONCURRENTLY, which waits for every older transaction of the database. So no
    # blocking pg_advisory_lock: a short transaction per try. The lock is the connection's, let go when upgrade()
    # closes it (NullPool: really closed), whether the migrations succeeded or not.
    async def try_lock() -> bool:
        taken = await connection.scalar(text("SELECT pg_try_advisory_lock(:key)"), {"key": UPGRADE_LOCK_KEY})
        await connection.commit()
        return bool(taken)

    await _poll(try_lock)
    try:
        yield
    finally:
        # Closing the connection lets go of the lock too, but a pool in front of PostgreSQL would keep the server
        # session (and the lock) alive for the next client: let go of it here, whatever happened.
        try:
            await connection.rollback()
            await connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": UPGRADE_LOCK_KEY})
            await connection.commit()
        except (SQLAlchemyError, OSError) as exc:  # a connection that broke: closing it lets go of the lock
            log.warning("migrate_unlock_failed", error_class=type(exc).__name__)


@asynccontextmanager
async def _sqlite_upgrade_lock(database_file: str | None) -> AsyncIterator[None]:
    """An flock on `<db file>-migrate`, polled (a wait that can be cancelled, no thread). The kernel lets go of a
    dead process's lock. An in-memory database has one process: nothing to take."""
    if database_file is None:
        yield
        return
    lock = os.open(f"{database_file}-migrate", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)

    async def try_lock() -> bool:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    try:
        await _poll(try_lock)
        yield
    finally:
        os.close(lock)  # lets go of the lock with the file


async def _poll(try_lock: Callable[[], Awaitable[bool]]) -> None:
    """Until `try_lock` takes the upgrade lock: another process's upgrade is running meanwhile."""
    if await try_lock():
        return
    log.info("migrate_waiting_for_another_upgrade")
    while True:  # nothing in this process to wait on: the holder is another process
        await asyncio.sleep(LOCK_POLL_S)
        if await try_lock():
            return


def add_column_once(table: str, column: Any) -> None:
    """In a migration that builds an index online afterwards: add a column, or find it added by a run of the same
    migration that the index build interrupted (create_index_online commits what came before it on PostgreSQL).
    SQLite has no ADD COLUMN IF NOT EXISTS, and needs none: its migration is one transaction."""
    op.add_column(table, column, if_not_exists=op.get_bind().dialect.name == "postgresql")


def drop_index_online(name: str, table: str) -> None:
    """In a migration: drop an index without taking the table's exclusive lock, which would queue every read and
    write of the table behind the longest transaction open on it (PostgreSQL's DROP INDEX CONCURRENTLY, outside the
    migration's transaction as create_index_online). Gone already (an interrupted run), nothing to do."""
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index(name, table_name=table, if_exists=True)
        return
    with op.get_context().autocommit_block():
        op.drop_index(name, table_name=table, postgresql_concurrently=True, if_exists=True)


def create_index_online(
    name: str, table: str, columns: Sequence[str | TextClause], *, unique: bool = False, where: str | None = None
) -> None:
    """In a migration: create an index without blocking the table's writes.

    PostgreSQL: CREATE INDEX CONCURRENTLY, which cannot run in a transaction, so the migration's transaction is
    committed first (Alembic's autocommit block; the migration's statements before this call are then applied even
    if a later one fails). A build that was interrupted (a killed process, a failed unique check) leaves an INVALID
    index of the same name, which writes keep up to date but reads never use: it is dropped and built again. A valid
    index of that name is kept, so a migration interrupted after the build runs again. SQLite: a plain CREATE INDEX
    (a write transaction blocks SQLite's writers whatever it does). `where` makes it a partial index (both backends);
    a `text()` column is an expression (`lower(sku)`)."""
    partial: dict[str, Any] = {} if where is None else {"sqlite_where": text(where), "postgresql_where": text(where)}
    if op.get_bind().dialect.name == "sqlite":
        op.create_index(name, table, list(columns), unique=unique, if_not_exists=True, **partial)
        return
    with op.get_context().autocommit_block():
        if op.get_bind().execute(_INVALID_INDEX, {"name": name}).first() is not None:
            op.drop_index(name, table_name=table, postgresql_concurrently=True, if_exists=True)
        op.create_index(
            name, table, list(columns), unique=unique, if_not_exists=True, postgresql_concurrently=True, **partial
        )
