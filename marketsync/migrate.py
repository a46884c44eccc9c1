"""Apply pending migrations. Every command does this on start (DESIGN.md section 5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from marketsync.db import Database

MIGRATIONS = Path(__file__).parent / "migrations"
# Any constant: serialises concurrent upgrades from several processes on PostgreSQL.
_PG_LOCK = 74_210_001


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def _upgrade(connection: Any, revision: str) -> None:
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
    # Not bounded by MARKETSYNC_DB_COMMAND_TIMEOUT_S: a migration, or the wait for another process's, may be long.
    async with db.unbounded_engine() as engine, engine.begin() as connection:
        if not db.is_sqlite:
            await connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK})
        await connection.run_sync(_upgrade, revision)
