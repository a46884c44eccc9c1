"""Database.driver_read: hand-written SQL on the raw driver for bounded hot-path reads (decision 0066)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError

from marketsync.db import DriverReader
from marketsync.runtime import Runtime
from tests.support.factories import make_account


def _placeholder(reader: DriverReader, n: int) -> str:
    return f"${n}" if reader.postgres else "?"


async def _names(reader: DriverReader, prefix: str) -> list[str]:
    rows = await reader.fetch(
        f"SELECT name FROM accounts WHERE name LIKE {_placeholder(reader, 1)} ORDER BY name", [prefix + "%"]
    )
    return [row[0] for row in rows]


async def test_reads_with_the_backends_own_placeholders(rt: Runtime) -> None:
    for name in ("dr-b", "dr-a"):
        await make_account(rt, name=name)
    assert await rt.db.driver_read(lambda reader: _names(reader, "dr-")) == ["dr-a", "dr-b"]
    assert (await rt.db.driver_read(lambda reader: _names(reader, "nobody"))) == []


def _recording(readers: list[str], prefix: str, *, locked_once: bool = False) -> Callable[[DriverReader], Any]:
    """Work that notes which reader ran it (and, with locked_once, fails its first run as a locked file would)."""

    async def work(reader: DriverReader) -> list[str]:
        readers.append(type(reader).__name__)
        if locked_once and len(readers) == 1:
            raise sqlite3.OperationalError("database is locked")
        return await _names(reader, prefix)

    return work


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_sqlite_work_reads_one_snapshot(rt: Runtime) -> None:
    await make_account(rt, name="snap-1")

    async def twice(reader: DriverReader) -> tuple[list[str], list[str]]:
        before = await _names(reader, "snap-")
        async with rt.db.transaction() as session:  # a write committed between the two reads
            await session.execute(
                sa.text("INSERT INTO accounts (id, name, created_at) VALUES ('SNAP2', 'snap-2', '2026-01-01')")
            )
        return before, await _names(reader, "snap-")

    before, after = await rt.db.driver_read(twice)
    assert before == after == ["snap-1"]
    assert await rt.db.driver_read(lambda reader: _names(reader, "snap-")) == ["snap-1", "snap-2"]


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_a_locked_sqlite_file_reruns_the_work_through_a_session(rt: Runtime) -> None:
    await make_account(rt, name="locked-1")
    readers: list[str] = []
    assert await rt.db.driver_read(_recording(readers, "locked-", locked_once=True)) == ["locked-1"]
    assert readers == ["_SqliteDriverReader", "_SessionDriverReader"]
    # The raw connection was left outside any transaction: the next read opens its own.
    assert await rt.db.driver_read(lambda reader: _names(reader, "locked-")) == ["locked-1"]


async def test_a_read_inside_a_read_joins_it(rt: Runtime) -> None:
    await make_account(rt, name="nested-1")

    async def outer(reader: DriverReader) -> tuple[list[str], list[str]]:
        inner = await rt.db.driver_read(lambda inner_reader: _names(inner_reader, "nested-"))
        return await _names(reader, "nested-"), inner

    assert await rt.db.driver_read(outer) == (["nested-1"], ["nested-1"])


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
async def test_postgres_reads_on_a_kept_connection_and_survive_dropped_connections(rt: Runtime) -> None:
    await make_account(rt, name="kept-1")
    readers: list[str] = []
    names = _recording(readers, "kept-")
    assert await rt.db.driver_read(names) == ["kept-1"]
    async with rt.db.engine.connect() as admin:
        await admin.execute(
            sa.text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
    # The dropped kept connection sends the read through a session (whose pool may itself fail one checkout,
    # as it always has); the next read opens a new kept connection.
    with contextlib.suppress(DBAPIError):
        assert await rt.db.driver_read(names) == ["kept-1"]
    assert await rt.db.driver_read(names) == ["kept-1"]
    assert readers[0] == readers[-1] == "_AsyncpgDriverReader"


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
async def test_an_error_of_the_work_keeps_the_postgres_connection(rt: Runtime) -> None:
    """A 404 or a refused cursor is no reason to reconnect (and near max_connections it would fail)."""

    async def backend_pid(reader: DriverReader) -> int:
        (row,) = await reader.fetch("SELECT pg_backend_pid()", [])
        return int(row[0])

    async def not_found(reader: DriverReader) -> None:
        await reader.fetch("SELECT 1", [])
        raise LookupError("no such order")

    first = await rt.db.driver_read(backend_pid)
    for _ in range(3):
        with pytest.raises(LookupError):
            await rt.db.driver_read(not_found)
    assert await rt.db.driver_read(backend_pid) == first


async def test_postgresql_connections_compile_no_jit(rt: Runtime) -> None:
    """Every connection the service keeps runs with JIT off: the pool's sessions, the driver reads and the wake-ups'
    connection arguments (a generic plan costed over jit_above_cost compiled on every run: decision 0343)."""
    if rt.db.is_sqlite:
        pytest.skip("PostgreSQL only: SQLite compiles no query")

    async def setting(reader: DriverReader) -> str:
        return str((await reader.fetch("SHOW jit", []))[0][0])

    assert await rt.db.driver_read(setting) == "off"
    async with rt.db.read() as session:
        assert (await session.execute(sa.text("SHOW jit"))).scalar_one() == "off"
    async with rt.db.transaction() as session:
        assert (await session.execute(sa.text("SHOW jit"))).scalar_one() == "off"
    _, options = rt.db.driver_connect_args()
    assert options["server_settings"] == {"jit": "off"}
