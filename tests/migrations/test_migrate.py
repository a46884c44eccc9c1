"""Upgrades run while the service serves, and processes upgrading one database at once take turns (marketsync/
migrate.py, docs/decisions/0306-online-migrations.md): index builds let writes through on PostgreSQL, an interrupted
build is redone, a starting process waits for another's upgrade past the connect bound, and two upgrades at once both
succeed."""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import pytest
from structlog.testing import capture_logs

from marketsync import migrate, startup
from marketsync.db import Database
from marketsync.runtime import Runtime
from tests.support.databases import downgrade

LISTINGS_INDEX = "ix_listings_marketplace_listing"  # built by migration 0018, on a table that is big in production
# A write to listings that needs no other rows: a DELETE takes the lock an INSERT or UPDATE takes.
LISTINGS_WRITE = "DELETE FROM listings WHERE id = 'none'"


@pytest.fixture
def database_url(empty_url: str) -> str:
    """`rt` here is built on a database never migrated."""
    return empty_url


@asynccontextmanager
async def holding_the_upgrade_lock(db: Database, url: str) -> AsyncIterator[None]:
    """Another process's upgrade, as far as the lock is concerned."""
    if db.is_sqlite:
        assert db.sqlite_file is not None
        lock = os.open(f"{db.sqlite_file}-migrate", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            yield
        finally:
            os.close(lock)
        return
    other = await asyncpg.connect(url)
    try:
        assert await other.fetchval("SELECT pg_try_advisory_lock($1)", migrate.UPGRADE_LOCK_KEY)
        yield
    finally:
        await other.close()


async def index_state(url: str, name: str) -> tuple[bool, str] | None:
    """(valid, definition) of an index on PostgreSQL; None when there is none."""
    connection = await asyncpg.connect(url)
    try:
        row = await connection.fetchrow(
            "SELECT i.indisvalid, pg_get_indexdef(i.indexrelid) FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = $1",
            name,
        )
    finally:
        await connection.close()
    return None if row is None else (row[0], row[1])


async def wait_until_the_build_waits(url: str) -> None:
    """Until CREATE INDEX CONCURRENTLY waits for the writes in flight (its first phase)."""
    connection = await asyncpg.connect(url)
    try:
        for _ in range(200):
            phase = await connection.fetchval(
                "SELECT phase FROM pg_stat_progress_create_index "
                "WHERE datname = current_database() AND relid = 'listings'::regclass"
            )
            if phase is not None and phase.startswith("waiting for writers"):
                return
            await asyncio.sleep(0.05)
    finally:
        await connection.close()
    raise AssertionError("the index build never started")


async def test_two_upgrades_at_once_both_succeed_and_leave_the_schema_at_head(empty_url: str) -> None:
    databases = [Database(empty_url) for _ in range(2)]  # two processes' engines
    try:
        with capture_logs() as logs:
            await asyncio.gather(*(migrate.upgrade(db) for db in databases))
        assert [entry["event"] for entry in logs].count("migrate_waiting_for_another_upgrade") == 1
        for db in databases:
            assert await migrate.current_revision(db) == migrate.head_revision()
    finally:
        for db in databases:
            await db.dispose()


async def test_prepare_waits_past_the_connect_bound_for_another_upgrade(
    rt: Runtime, empty_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(startup, "CONNECT_TIMEOUT_S", 0.3)
    async with holding_the_upgrade_lock(rt.db, empty_url):
        preparing = asyncio.create_task(startup.prepare(rt, migrate_schema=True))
        await asyncio.sleep(1.0)
        assert not preparing.done()  # neither failed at the bound nor upgraded under the other's lock
    await asyncio.wait_for(preparing, 60)
    assert await migrate.current_revision(rt.db) == migrate.head_revision()


async def test_prepare_at_head_does_not_take_the_upgrade_lock(
    rt: Runtime, empty_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await migrate.upgrade(rt.db)
    monkeypatch.setattr(startup, "CONNECT_TIMEOUT_S", 5.0)
    async with holding_the_upgrade_lock(rt.db, empty_url):
        await asyncio.wait_for(startup.prepare(rt, migrate_schema=True), 10)  # would wait for the lock


@pytest.mark.parametrize("backend", ["postgresql"])
async def test_an_index_build_lets_writes_through(empty_url: str) -> None:
    db = Database(empty_url)
    in_flight, meanwhile = await asyncpg.connect(empty_url), await asyncpg.connect(empty_url)
    try:
        await migrate.upgrade(db, "0017")
        open_write = in_flight.transaction()
        await open_write.start()
        await in_flight.execute(LISTINGS_WRITE)  # a write in flight when the build starts: the build waits for it
        building = asyncio.create_task(migrate.upgrade(db, "0018"))
        await wait_until_the_build_waits(empty_url)

        # A plain CREATE INDEX would queue its SHARE lock behind the write in flight, and every later write behind it.
        await meanwhile.execute("SET lock_timeout = '2s'")
        async with meanwhile.transaction():
            await meanwhile.execute(LISTINGS_WRITE)
        assert not building.done()

        await open_write.commit()
        await asyncio.wait_for(building, 60)
        assert await migrate.current_revision(db) == "0018"
        assert await index_state(empty_url, LISTINGS_INDEX) == (
            True,
            f"CREATE INDEX {LISTINGS_INDEX} ON public.listings USING btree (marketplace_id, listing_id)",
        )
    finally:
        await in_flight.close()
        await meanwhile.close()
        await db.dispose()


@pytest.mark.parametrize("backend", ["postgresql"])
async def test_an_invalid_index_left_by_an_interrupted_build_is_built_again(empty_url: str) -> None:
    db = Database(empty_url)
    in_flight, builder = await asyncpg.connect(empty_url), await asyncpg.connect(empty_url)
    try:
        await migrate.upgrade(db, "0017")
        # An earlier build of the index, cancelled while it waited for a write: PostgreSQL keeps it, INVALID.
        async with in_flight.transaction():
            await in_flight.execute(LISTINGS_WRITE)
            await builder.execute("SET statement_timeout = '300ms'")
            with pytest.raises(asyncpg.QueryCanceledError):
                await builder.execute(f"CREATE INDEX CONCURRENTLY {LISTINGS_INDEX} ON listings (listing_id)")
        assert await index_state(empty_url, LISTINGS_INDEX) == (
            False,
            f"CREATE INDEX {LISTINGS_INDEX} ON public.listings USING btree (listing_id)",
        )

        await migrate.upgrade(db, "0018")
        assert await index_state(empty_url, LISTINGS_INDEX) == (
            True,
            f"CREATE INDEX {LISTINGS_INDEX} ON public.listings USING btree (marketplace_id, listing_id)",
        )
    finally:
        await in_flight.close()
        await builder.close()
        await db.dispose()


@pytest.mark.parametrize("backend", ["postgresql"])
async def test_the_upgrade_lets_go_of_its_lock_before_its_connection_closes(empty_url: str) -> None:
    """A pool in front of PostgreSQL keeps the server session after our connection closes: the lock must not
    outlive the upgrade with it."""
    db = Database(empty_url)
    other = await asyncpg.connect(empty_url)
    try:
        async with db.engine.connect() as connection:
            async with migrate._upgrade_lock(db, connection):
                assert not await other.fetchval("SELECT pg_try_advisory_lock($1)", migrate.UPGRADE_LOCK_KEY)
            # Still open, as a pooled server session would be.
            assert await other.fetchval("SELECT pg_try_advisory_lock($1)", migrate.UPGRADE_LOCK_KEY)
    finally:
        await other.close()
        await db.dispose()


@pytest.mark.parametrize("backend", ["postgresql"])
async def test_a_migration_whose_index_build_was_interrupted_runs_again(empty_url: str) -> None:
    """0007 adds three columns, then builds its index online, which commits the columns first: a run killed during
    the build leaves them without the revision, and the next run finds them."""
    db = Database(empty_url)
    connection = await asyncpg.connect(empty_url)
    try:
        await migrate.upgrade(db, "0006")
        await connection.execute(
            "ALTER TABLE orders ADD COLUMN document BYTEA, ADD COLUMN customer_document BYTEA, "
            "ADD COLUMN document_version SMALLINT DEFAULT 0 NOT NULL"
        )
        await migrate.upgrade(db, "0007")
        assert await migrate.current_revision(db) == "0007"
        assert await index_state(empty_url, "ix_orders_document_version") == (
            True,
            "CREATE INDEX ix_orders_document_version ON public.orders USING btree (document_version)",
        )
    finally:
        await connection.close()
        await db.dispose()


@pytest.mark.parametrize("backend", ["postgresql"])
async def test_an_index_drop_lets_writes_through(empty_url: str) -> None:
    """0020 drops the index it replaces: a plain DROP INDEX would queue its exclusive lock behind a write in
    flight, and every later read and write of listings behind it."""
    db = Database(empty_url)
    in_flight, meanwhile = await asyncpg.connect(empty_url), await asyncpg.connect(empty_url)
    try:
        await migrate.upgrade(db, "0019")
        # The new index built already (a run interrupted after its build): 0020 goes straight to the drop.
        await meanwhile.execute("CREATE INDEX ix_listings_account_product ON listings (account_id, product_id)")
        open_write = in_flight.transaction()
        await open_write.start()
        await in_flight.execute(LISTINGS_WRITE)
        dropping = asyncio.create_task(migrate.upgrade(db, "0020"))
        await asyncio.sleep(1.0)  # the drop waits for the write in flight

        await meanwhile.execute("SET lock_timeout = '2s'")
        async with meanwhile.transaction():
            await meanwhile.execute(LISTINGS_WRITE)
            await meanwhile.fetch("SELECT id FROM listings LIMIT 1")
        assert not dropping.done()

        await open_write.commit()
        await asyncio.wait_for(dropping, 60)
        assert await migrate.current_revision(db) == "0020"
        assert await index_state(empty_url, "ix_listings_account_id") is None
    finally:
        await in_flight.close()
        await meanwhile.close()
        await db.dispose()


async def test_every_migration_goes_down_and_up_again(empty_url: str) -> None:
    """Down to the first revision and back to head: every downgrade runs (online drops and builds included) and
    leaves a schema its upgrade applies to again."""
    db = Database(empty_url)
    try:
        await migrate.upgrade(db)
        async with db.write_engine.connect() as connection:
            await connection.run_sync(downgrade, "0001")
        assert await migrate.current_revision(db) == "0001"
        await migrate.upgrade(db)
        assert await migrate.current_revision(db) == migrate.head_revision()
    finally:
        await db.dispose()
