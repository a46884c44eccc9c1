"""SessionDriver on SQLite: a request's statements run on the event loop's thread, background work's on aiosqlite's
(docs/decisions/0462); either way they are the session's transaction's, committed or rolled back with it."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.db import DriverSql, SessionDriver, mark_background, session_driver
from marketsync.runtime import Runtime
from tests.support.factories import make_account


def _sqlite_only(rt: Runtime) -> None:
    if not rt.db.is_sqlite:
        pytest.skip("SQLite only: asyncpg's statements have no thread of their own to skip")


async def _thread_of_statements(session: AsyncSession) -> tuple[SessionDriver, int]:
    """The driver, and the thread its next statement runs on (a SQL function answering the caller's thread)."""
    raw = (await (await session.connection()).get_raw_connection()).driver_connection
    assert raw is not None
    raw._conn.create_function("thread_ident", 0, threading.get_ident)
    driver = await session_driver(session)
    rows = await driver.fetch("SELECT thread_ident()", ())
    return driver, int(rows[0][0])


async def test_a_requests_statements_run_on_the_loops_thread_and_commit_with_the_session(rt: Runtime) -> None:
    _sqlite_only(rt)
    account_id = await make_account(rt, name="before")
    async with rt.db.transaction() as session:
        driver, thread = await _thread_of_statements(session)
        assert thread == threading.get_ident()
        await driver.execute("UPDATE accounts SET name = ? WHERE id = ?", ("after", account_id))
        await driver.executemany("UPDATE accounts SET name = ? WHERE id = ?", [("after, twice", account_id)])
    async with rt.db.read() as session:
        reader = await session_driver(session)
        assert await reader.fetch("SELECT name FROM accounts WHERE id = ?", (account_id,)) == [("after, twice",)]


async def test_a_rolled_back_transaction_keeps_nothing_its_statements_wrote(rt: Runtime) -> None:
    account_id = await make_account(rt, name="before")
    with pytest.raises(RuntimeError, match="undo"):
        async with rt.db.transaction() as session:
            driver = await session_driver(session)
            sql = DriverSql(driver.postgres)
            await driver.execute(f"UPDATE accounts SET name = {sql.bind('after')} WHERE id = {sql.bind(account_id)}",
                                 sql.params)  # fmt: skip
            raise RuntimeError("undo")
    async with rt.db.transaction() as session:
        driver = await session_driver(session)
        sql = DriverSql(driver.postgres)
        rows = await driver.fetch(f"SELECT name FROM accounts WHERE id = {sql.bind(account_id)}", sql.params)
        assert [tuple(row) for row in rows] == [("before",)]


async def test_background_work_keeps_aiosqlites_thread(rt: Runtime) -> None:
    _sqlite_only(rt)

    async def job() -> int:
        mark_background()
        async with rt.db.transaction() as session:
            return (await _thread_of_statements(session))[1]

    assert await asyncio.create_task(job()) != threading.get_ident()


async def test_a_read_sessions_statements_keep_aiosqlites_thread(rt: Runtime) -> None:
    """A read session's transaction is deferred: it holds no lock, and a statement that had to wait for one must not
    wait on the loop."""
    _sqlite_only(rt)
    async with rt.db.read() as session:
        assert (await _thread_of_statements(session))[1] != threading.get_ident()


async def _trace_the_writer(rt: Runtime) -> list[tuple[str, int]]:
    """Every statement of the writer engine's one connection, with the thread it ran on."""
    seen: list[tuple[str, int]] = []
    async with rt.db.write_engine.connect() as connection:
        raw = (await connection.get_raw_connection()).driver_connection
        assert raw is not None
        raw._conn.set_trace_callback(lambda sql: seen.append((sql, threading.get_ident())))
    return seen


async def test_a_write_transaction_begins_on_the_loops_thread(rt: Runtime) -> None:
    _sqlite_only(rt)
    seen = await _trace_the_writer(rt)
    async with rt.db.transaction() as session:
        await session_driver(session)
    assert ("BEGIN IMMEDIATE", threading.get_ident()) in seen


async def test_a_write_lock_held_outside_marketsync_is_waited_for_off_the_loop(rt: Runtime) -> None:
    """A program outside the writer handoff (the sqlite3 shell) holds SQLite's write lock: the transaction waits for it
    on aiosqlite's thread, in SQLite's busy handler, and the loop goes on meanwhile."""
    if not rt.db.is_sqlite or rt.db.sqlite_file is None:
        pytest.skip("SQLite only: PostgreSQL has no database-wide write lock")
    account_id = await make_account(rt, name="before")
    seen = await _trace_the_writer(rt)
    outside = sqlite3.connect(rt.db.sqlite_file, isolation_level=None)
    outside.execute("BEGIN IMMEDIATE")

    async def rename() -> None:
        async with rt.db.transaction() as session:
            driver = await session_driver(session)
            await driver.execute("UPDATE accounts SET name = ? WHERE id = ?", ("after", account_id))

    renaming = asyncio.create_task(rename())
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.sleep(0.2)
    assert loop.time() - started < 0.5  # the loop was not held by the wait
    assert not renaming.done()
    outside.execute("COMMIT")
    outside.close()
    await asyncio.wait_for(renaming, 10)
    begins = [thread for sql, thread in seen if sql == "BEGIN IMMEDIATE"]
    assert begins and begins[-1] != threading.get_ident()  # the one that waited ran on aiosqlite's thread
    async with rt.db.read() as session:
        reader = await session_driver(session)
        assert await reader.fetch("SELECT name FROM accounts WHERE id = ?", (account_id,)) == [("after",)]
