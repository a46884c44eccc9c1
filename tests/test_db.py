"""Engines and sessions (db.py): what an error may log, and who may read the SQLite file."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from marketsync.db import Database
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
