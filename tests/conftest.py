"""Fixtures: `rt` (a Runtime on a fresh database, run once per backend) and `api` (real HTTP to it).

Every test that takes `rt` or `api` runs on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from marketsync.app import create_app
from marketsync.config import Settings
from marketsync.http.logs import configure_logging
from marketsync.kit.clock import Clock, SystemClock
from marketsync.marketplaces.registry import compose_connectors
from marketsync.runtime import Runtime
from tests.support.amazon import amazon_simulator  # noqa: F401  (the Amazon SP-API simulator fixture)
from tests.support.databases import IN_CI, PG_ADMIN_URL, PostgresSessionDatabase, SqliteTemplate, postgres_or_skip
from tests.support.server import serve

configure_logging("INFO")  # JSON lines, as in production (the dev renderer is slow on tracebacks)

TEST_ENCRYPTION_KEYS = "t1:" + base64.urlsafe_b64encode(b"k" * 32).decode()
TEST_HASH_KEY = base64.urlsafe_b64encode(b"h" * 32).decode()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> SqliteTemplate:
    return SqliteTemplate(tmp_path_factory.mktemp("sqlite-template"))


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[PostgresSessionDatabase]:
    database = postgres_or_skip()
    yield database
    database.drop()


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def database_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if backend == "sqlite":
        template: SqliteTemplate = request.getfixturevalue("sqlite_template")
        return template.fresh(tmp_path)
    database: PostgresSessionDatabase = request.getfixturevalue("postgres_database")
    return await database.reset()


@pytest.fixture
async def empty_url(backend: str, tmp_path: Path) -> AsyncIterator[str]:
    """A database never migrated, of its own (for a migration's test: upgrade it to the revision before)."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'migration.db'}"
        return
    name = f"ms_migration_{uuid.uuid4().hex[:10]}"
    try:
        admin = await asyncpg.connect(PG_ADMIN_URL, timeout=5)
    except (OSError, asyncpg.PostgresError) as exc:
        if IN_CI:
            pytest.fail(f"PostgreSQL is required in CI: {exc}")
        pytest.skip(f"PostgreSQL unreachable: {exc}")
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        yield f"{PG_ADMIN_URL.rsplit('/', 1)[0]}/{name}"
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


def test_settings(database_url: str, var_dir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "var_dir": var_dir,
        "encryption_keys": TEST_ENCRYPTION_KEYS,
        "secret_hash_key": TEST_HASH_KEY,
        "rate_limit": "100000/minute",
        "job_lease_s": 2.0,
        "worker_poll_s": 0.05,
        "webhook_retry_scale": 0.001,
        "webhook_allowed_networks": "127.0.0.0/8,::1/128",
        "order_pull_interval_s": 3600.0,
        # Runnable at once: tests drive the worker themselves (tests/inventory/test_push.py tests the hold).
        "propagation_hold_s": 0.0,
    }
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    """Override in a test module (or with indirect parametrisation) to change settings."""
    return {}


@pytest.fixture
def clock() -> Clock:
    return SystemClock()


@pytest.fixture
async def rt(
    database_url: str, tmp_path: Path, settings_overrides: dict[str, Any], clock: Clock
) -> AsyncIterator[Runtime]:
    settings = test_settings(database_url, tmp_path / "var", **settings_overrides)
    runtime = compose_connectors(Runtime.create(settings, clock=clock))
    try:
        yield runtime
    finally:
        await runtime.close()


@pytest.fixture
async def api(rt: Runtime) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client talking to a real uvicorn server on loopback (no embedded workers)."""
    async with serve(create_app(rt)) as base_url, httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        yield client


@pytest.fixture
async def make_runtime(database_url: str, tmp_path: Path) -> AsyncIterator[Callable[..., Runtime]]:
    """A second runtime (another 'process') on the same database, e.g. for two API processes; closed afterwards."""
    created: list[Runtime] = []

    def factory(**overrides: Any) -> Runtime:
        runtime = compose_connectors(Runtime.create(test_settings(database_url, tmp_path / "var", **overrides)))
        created.append(runtime)
        return runtime

    yield factory
    for runtime in created:
        await runtime.close()
