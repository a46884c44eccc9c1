"""Engines and sessions (db.py): what an error may log, who may read the SQLite file, how JSON columns are stored."""

from __future__ import annotations

import asyncio
import stat
import time
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from marketsync.db import MMAP_SIZE_BYTES, WRITER_PAGE_CACHE_KIB, Database
from marketsync.db._wal_checkpoints import COALESCE_S, SAFETY_NET_PAGES, WalCheckpointer
from marketsync.kit import jsonio
from marketsync.marketplaces.sandbox import state
from marketsync.models.sandbox import SandboxFeed
from marketsync.runtime import Runtime


async def test_a_database_error_never_carries_its_bound_values(rt: Runtime) -> None:
    secret = "buyer@example.com-4111111111111111"
    with pytest.raises(DBAPIError) as raised:
        async with rt.db.transaction() as session:
            await session.execute(text("INSERT INTO no_such_table (x) VALUES (:value)"), {"value": secret})
    assert secret not in str(raised.value)
    assert "hidden" in str(raised.value)


async def test_the_sqlite_file_is_created_readable_by_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "fresh" / "marketsync.db"
    db = Database(f"sqlite:///{path}")
    try:
        async with db.transaction() as session:
            await session.execute(text("CREATE TABLE t (x INTEGER)"))
        for candidate in (path, path.with_name(path.name + "-wal")):
            if candidate.exists():
                assert stat.S_IMODE(candidate.stat().st_mode) == 0o600, candidate
    finally:
        await db.dispose()


async def _wal_copied_into_the_file(
    path: Path, baseline: int, checkpointer: WalCheckpointer, within_s: float = 20.0
) -> bool:
    """The file grew past `baseline` and the thread has counted its checkpoint (it counts once the copy returned,
    so the file can grow a moment before)."""
    # Generous: on a loaded machine (the suite on several xdist workers) copying and syncing 2 MiB took over 2 s.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while loop.time() < deadline:
        if path.stat().st_size > baseline and checkpointer.checkpoints >= 1:
            return True
        await asyncio.sleep(0.01)
    return False


async def test_commits_reach_the_sqlite_file_through_the_processs_own_checkpoints(tmp_path: Path) -> None:
    """A commit never runs the WAL checkpoint itself (the write connection's only a 40 MiB safety net): the
    process's thread copies the committed pages into the database file just after (wal_checkpoints.py)."""
    path = tmp_path / "marketsync.db"
    db = Database(f"sqlite:///{path}")
    try:
        async with db.transaction() as session:
            autocheckpoint = (await session.execute(text("PRAGMA wal_autocheckpoint"))).scalar_one()
            await session.execute(text("CREATE TABLE t (x TEXT)"))
        assert autocheckpoint == SAFETY_NET_PAGES
        before = path.stat().st_size
        async with db.transaction() as session:
            # 2 MiB of rows: far below the safety net, so only the thread can move them into the file.
            await session.execute(
                text(
                    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) "
                    "INSERT INTO t (x) SELECT printf('%.2000c', 'x') FROM n"
                )
            )
        assert db.checkpointer is not None
        assert await _wal_copied_into_the_file(path, before + 1_000_000, db.checkpointer)
    finally:
        await db.dispose()
    assert db.checkpointer.thread_stopped()


async def test_a_write_transaction_keeps_its_pages_in_memory_until_its_commit(tmp_path: Path) -> None:
    """The writer's page cache (WRITER_PAGE_CACHE_KIB, docs/decisions/0465) holds a transaction that dirties far more
    than SQLite's default 2 MiB: nothing is spilled to the WAL before the commit, which writes each page once."""
    path = tmp_path / "marketsync.db"
    wal = path.with_name(path.name + "-wal")
    db = Database(f"sqlite:///{path}")
    try:
        async with db.transaction() as session:
            await session.execute(text("CREATE TABLE t (x TEXT)"))
        before = wal.stat().st_size
        async with db.transaction() as session:
            cache = (await session.execute(text("PRAGMA cache_size"))).scalar_one()
            # About 8 MiB of pages: four times SQLite's default cache.
            await session.execute(
                text(
                    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 4000) "
                    "INSERT INTO t (x) SELECT printf('%.2000c', 'x') FROM n"
                )
            )
            during = wal.stat().st_size
        after = wal.stat().st_size
        async with db.read() as session:
            reader_cache = (await session.execute(text("PRAGMA cache_size"))).scalar_one()
    finally:
        await db.dispose()
    assert cache == -WRITER_PAGE_CACHE_KIB and reader_cache == -2000
    assert during == before
    assert after > before + 8_000_000


async def test_every_connection_reads_the_file_through_a_memory_map(tmp_path: Path) -> None:
    """The writer and the readers map the file (MMAP_SIZE_BYTES, docs/decisions/0469), and what one writes through
    the map the other reads, the WAL's newer pages included."""
    path = tmp_path / "marketsync.db"
    db = Database(f"sqlite:///{path}")
    try:
        async with db.transaction() as session:
            writer_map = (await session.execute(text("PRAGMA mmap_size"))).scalar_one()
            await session.execute(text("CREATE TABLE t (x INTEGER)"))
            await session.execute(
                text("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) "
                     "INSERT INTO t (x) SELECT i FROM n")
            )  # fmt: skip
        async with db.transaction() as session:
            await session.execute(text("UPDATE t SET x = -x WHERE x % 2 = 0"))
        async with db.read() as session:
            reader_map = (await session.execute(text("PRAGMA mmap_size"))).scalar_one()
            total = (await session.execute(text("SELECT sum(x), count(*) FROM t"))).one()
    finally:
        await db.dispose()
    assert writer_map == reader_map == MMAP_SIZE_BYTES
    # 1 - 2 + 3 - ... - 5000: the odd numbers kept, the even ones negated by the second transaction.
    assert tuple(total) == (-2500, 5000)


async def test_a_database_that_never_writes_runs_no_checkpoint_thread(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'marketsync.db'}")
    try:
        async with db.read() as session:
            assert (await session.execute(text("SELECT 1"))).scalar_one() == 1
        assert db.checkpointer is not None and not db.checkpointer.started()
    finally:
        await db.dispose()


async def test_closing_just_after_a_commit_stops_the_checkpoint_thread_at_once(tmp_path: Path) -> None:
    """close() arriving while the thread coalesces commits (COALESCE_S) once left it waiting for a wake-up that
    had been cleared: every dispose then waited out the join's 10 s."""
    checkpointer = WalCheckpointer(str(tmp_path / "marketsync.db"))
    checkpointer.committed()
    time.sleep(COALESCE_S / 2)
    checkpointer.close()
    assert checkpointer.thread_stopped()


async def test_commits_within_the_window_share_one_checkpoint(tmp_path: Path) -> None:
    """A stream of commits is checkpointed once per COALESCE_S, not once a commit (decision 0470): commits before
    and during the window give one checkpoint, no sooner than the window after the first; a later commit, another."""
    checkpointer = WalCheckpointer(str(tmp_path / "marketsync.db"))
    try:
        first_commit = time.monotonic()
        for _ in range(3):
            checkpointer.committed()
        time.sleep(COALESCE_S / 4)
        checkpointer.committed()
        assert _checkpoints_reach(checkpointer, 1)
        assert time.monotonic() - first_commit >= COALESCE_S
        time.sleep(COALESCE_S * 2)
        assert checkpointer.checkpoints == 1
        checkpointer.committed()
        assert _checkpoints_reach(checkpointer, 2)
    finally:
        checkpointer.close()


def _checkpoints_reach(checkpointer: WalCheckpointer, count: int, within_s: float = 20.0) -> bool:
    deadline = time.monotonic() + within_s
    while checkpointer.checkpoints < count and time.monotonic() < deadline:
        time.sleep(0.01)
    return checkpointer.checkpoints == count


async def test_json_columns_are_written_with_orjson_and_read_back_whole(rt: Runtime) -> None:
    """db.JSON_COLUMNS: the engines' JSON serializer is jsonio's (the raw-driver writers store the same text)."""
    lines = [{"Reference": "SKU-é", "Price": "12.50", "Quantity": 3, "Nested": {"1": [None, True]}}]
    async with rt.db.transaction() as session:
        now = rt.clock.now()
        seller = await state.ensure_seller(session, "01JSONCOLUMNSELLER00000000", "P1", "UK", now)
        feed = await state.submit_feed(session, seller, now, "json-feed", "PriceStock", lines)
        feed_id = feed.feed_id
    async with rt.db.read() as session:
        stored = await session.scalar(
            text("SELECT CAST(lines AS TEXT) FROM sandbox_feeds WHERE feed_id = :feed_id"), {"feed_id": feed_id}
        )
        read_back = await session.get(SandboxFeed, ("01JSONCOLUMNSELLER00000000", feed_id))
    assert stored == jsonio.column_text(lines)  # compact, UTF-8 as it is (the standard library's escaped é)
    assert read_back is not None and read_back.lines == lines
    assert jsonio.column_text({1: "a"}) == '{"1":"a"}'  # keys that are not strings, as the standard library wrote them


async def test_refreshed_statistics_give_postgresql_the_size_of_a_table_just_filled(rt: Runtime) -> None:
    """The demo fills its tables at once and refreshes the planner's statistics (docs/decisions/0450): on PostgreSQL
    the planner then knows the rows are there; on SQLite nothing is written (decision 0296: no statistics)."""
    async with rt.db.transaction() as session:
        await session.execute(text("CREATE TABLE filled (x INTEGER)"))
        await session.execute(text("INSERT INTO filled (x) VALUES " + ",".join(f"({i})" for i in range(500))))
    try:
        await rt.db.refresh_statistics()
        async with rt.db.read() as session:
            if rt.db.is_sqlite:
                statistics = "SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'"
                assert (await session.execute(text(statistics))).scalar_one() == 0
            else:
                estimate = "SELECT reltuples FROM pg_class WHERE relname = 'filled'"
                assert (await session.execute(text(estimate))).scalar_one() == 500
    finally:
        # The worker's PostgreSQL database outlives the test: a table left behind is a difference from the models
        # for the next test of the schema there (tests/migrations/test_migrations_match_models.py).
        async with rt.db.transaction() as session:
            await session.execute(text("DROP TABLE filled"))
