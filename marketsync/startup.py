"""What every process does before it serves, works or runs a command: settings checked, schema current, keys
the database knows, connectors composed. A failure is one clear sentence (StartupError), never a traceback.

`run_command` and `serve_http` are how the CLI's commands (`<domain>/commands.py`) open a runtime and run."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar

import structlog
import typer
import uvicorn
from pydantic import ValidationError
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError

from marketsync import migrate
from marketsync.auth import keys
from marketsync.config import MissingKeys, Settings
from marketsync.http.errors import ApiError
from marketsync.http.logs import configure_logging
from marketsync.kit import jsonio
from marketsync.kit.cli import fail, run_service, settle_heap
from marketsync.marketplaces.registry import compose_connectors
from marketsync.runtime import Runtime

T = TypeVar("T")
log = structlog.get_logger("marketsync.cli")

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


# -- running a command or serving ---------------------------------------------------------------------------


def serve_http(
    build_app: Callable[[Runtime], Any],
    host: str,
    port: int,
    *,
    lifespan: Literal["auto", "on", "off"] = "auto",
    **announce: Any,
) -> None:
    """Prepare, then serve the ASGI app built on a fresh runtime until SIGTERM/SIGINT."""
    settings = settings_or_exit()
    configure_logging(settings.log_level)

    async def main() -> None:
        rt = Runtime.create(settings)
        try:
            await prepare(rt)
            trusted = settings.forwarded_allow_ips  # only a named proxy's X-Forwarded-* headers are believed
            config = uvicorn.Config(
                build_app(rt), host=host, port=port, log_config=None, access_log=False, lifespan=lifespan,
                proxy_headers=bool(trusted), forwarded_allow_ips=trusted or None,
                timeout_keep_alive=settings.http_keep_alive_s,
            )  # fmt: skip
            # What startup built (the app, its routes and models, the runtime: ~165,000 objects) lives as long as the
            # process: kept out of the collector, a full collection no longer walks it (~10% of a request's CPU).
            settle_heap()
            log.info("serving", url=f"http://{host}:{port}", **announce)
            await uvicorn.Server(config).serve()
        finally:
            await rt.close()

    run_or_exit(lambda: run_service(main()))


def settings_or_exit(*, as_json: bool = False) -> Settings:
    try:
        return load_settings()
    except StartupError as exc:
        fail(str(exc), as_json=as_json)


def run_or_exit(run: Callable[[], T], *, as_json: bool = False) -> T:
    try:
        return run()
    except StartupError as exc:
        fail(str(exc), as_json=as_json)


def run_command(
    body: Callable[[Runtime], Awaitable[T]], *, as_json: bool = False, settings: Settings | None = None
) -> T:
    """Open the runtime, apply pending migrations, run, close. Service errors exit 1 with their message."""
    settings = settings or settings_or_exit(as_json=as_json)
    configure_logging(settings.log_level)

    async def main() -> T:
        rt = compose_connectors(Runtime.create(settings))
        try:
            await prepare(rt, migrate_schema=True)  # an operator's command brings the schema up to date
            return await body(rt)
        finally:
            await rt.close()

    try:
        return run_or_exit(lambda: asyncio.run(main()), as_json=as_json)
    except ApiError as exc:
        if as_json:
            sys.stdout.write(
                jsonio.dumps({"error": exc.code, "title": exc.title, "errors": exc.errors}).decode() + "\n"
            )
        else:
            details = "".join(f"\n  {k}: {' '.join(v)}" for k, v in exc.errors.items())
            typer.echo(f"error: {exc.title}{details}", err=True)
        raise typer.Exit(1) from None
