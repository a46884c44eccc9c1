"""Test databases on both backends, migrated once per test session and reset per test.

SQLite: a migrated template file, copied for each test. PostgreSQL: a database of this pytest session
(a unique name, so parallel runs never collide), truncated before each test. With CI=true an
unreachable PostgreSQL fails the run instead of skipping.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from marketsync import migrate
from marketsync.db import Database
from marketsync.models import Base

PG_ADMIN_URL = os.environ.get("MARKETSYNC_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() == "true"


def _run(coro_fn: Any, *args: Any) -> Any:
    """Run a coroutine to completion on a fresh loop in a helper thread (callers may be inside a loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(coro_fn(*args))).result()


async def _migrate(url: str) -> None:
    db = Database(url)
    try:
        await migrate.upgrade(db)
    finally:
        await db.dispose()


class SqliteTemplate:
    def __init__(self, directory: Path) -> None:
        self.template = directory / "template.db"
        _run(_migrate, f"sqlite:///{self.template}")

    def fresh(self, directory: Path) -> str:
        target = directory / "marketsync.db"
        shutil.copyfile(self.template, target)
        return f"sqlite:///{target}"


class PostgresSessionDatabase:
    def __init__(self) -> None:
        self.name = f"ms_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
        base = PG_ADMIN_URL.rsplit("/", 1)[0]
        self.url = f"{base}/{self.name}"
        _run(self._create)
        _run(_migrate, self.url)
        tables = [t.name for t in Base.metadata.sorted_tables]
        self._truncate = f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE"

    async def _admin(self, sql: str) -> None:
        conn = await asyncpg.connect(PG_ADMIN_URL, timeout=5)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    async def _create(self) -> None:
        await self._admin(f'CREATE DATABASE "{self.name}"')

    async def reset(self) -> str:
        conn = await asyncpg.connect(self.url)
        try:
            await conn.execute(self._truncate)
        finally:
            await conn.close()
        return self.url

    def drop(self) -> None:
        _run(self._admin, f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


def postgres_or_skip() -> PostgresSessionDatabase:
    try:
        return PostgresSessionDatabase()
    except (OSError, asyncpg.PostgresError) as exc:
        if IN_CI:
            pytest.fail(f"PostgreSQL is required in CI and unreachable at {PG_ADMIN_URL}: {exc}")
        pytest.skip(f"PostgreSQL unreachable at {PG_ADMIN_URL} ({exc}); set MARKETSYNC_TEST_PG_URL")


def downgrade(connection: Any, revision: str) -> None:
    """Run the migrations down to `revision` on a sync connection in no transaction, as migrate.upgrade runs them up
    (each migration commits on its own, and some step out of their transaction: migrate.create_index_online):
    `async with db.write_engine.connect() as conn: await conn.run_sync(downgrade, "0020")`."""
    from alembic import command

    config = migrate.alembic_config()
    config.attributes["connection"] = connection
    command.downgrade(config, revision)
    connection.commit()
