"""What every process does before it serves, works or runs a command: settings checked, schema current, keys
the database knows. A failure is one clear sentence (StartupError), never a traceback."""

from __future__ import annotations

import asyncio

from pydantic import ValidationError
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError

from marketsync import migrate
from marketsync.config import MissingKeys, Settings
from marketsync.kit import keys
from marketsync.runtime import Runtime

# A database that does not answer within this long is reported as unreachable.
CONNECT_TIMEOUT_S = 15.0


class StartupError(Exception):
    """The process cannot start; the message says what to fix."""


def load_settings() -> Settings:
    """Settings from the environment; every bad variable named in one StartupError."""
    try:
        return Settings()
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            name = "MARKETSYNC_" + "_".join(str(part) for part in error["loc"]).upper() if error["loc"] else "settings"
            problems.append(f"{name}: {error['msg'].removeprefix('Value error, ')}")
        raise StartupError("invalid settings: " + "; ".join(problems)) from None
    except ValueError as exc:  # a key that cannot be decoded
        raise StartupError(str(exc)) from None


def describe_database(url: str) -> str:
    """The database URL without its password, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "the configured database"


async def prepare(rt: Runtime, *, migrate_schema: bool | None = None) -> None:
    """Migrate (unless switched off), then check the keys against the database. Raises StartupError.

    Reaching the database is bounded (CONNECT_TIMEOUT_S), the upgrade is not: its migrations, or the wait for another
    process's upgrade of the same database (docs/decisions/0306-online-migrations.md), may take longer."""
    settings = rt.settings
    upgrade = settings.migrate_on_start if migrate_schema is None else migrate_schema
    try:
        _ = settings.encryption_keyring, settings.hash_key
    except (MissingKeys, ValueError) as exc:
        raise StartupError(str(exc)) from None
    try:
        async with asyncio.timeout(CONNECT_TIMEOUT_S):
            current = await migrate.current_revision(rt.db)
        head = migrate.head_revision()
        if current != head:
            if not upgrade:
                raise StartupError(
                    f"the database is at revision {current or 'none'} and this version needs {head}: run "
                    "`marketsync db upgrade` first (MARKETSYNC_MIGRATE_ON_START is off)"
                )
            await migrate.upgrade(rt.db)
        async with asyncio.timeout(CONNECT_TIMEOUT_S):
            await _check_keys(rt)
    except StartupError:
        raise
    except keys.KeysMismatch as exc:
        raise StartupError(str(exc)) from None
    except (TimeoutError, OSError, OperationalError, DBAPIError) as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0] if str(exc) else type(exc).__name__
        raise StartupError(f"cannot use the database {describe_database(settings.database_url)}: {reason}") from None


async def _check_keys(rt: Runtime) -> None:
    for attempt in range(2):
        try:
            async with rt.db.transaction() as session:
                await keys.check_or_record(session, rt.settings, rt.clock)
            return
        except DBAPIError:
            # Two first processes recorded the same fingerprints at once: read what the other one stored.
            if attempt == 1:
                raise
