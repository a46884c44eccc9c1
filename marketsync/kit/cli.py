"""The CLI's command groups and helpers. Each domain adds its commands in `<domain>/commands.py`."""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Literal, NoReturn, TypeVar

import structlog
import typer
import uvicorn
import uvloop

from marketsync import connectors, startup
from marketsync.config import Settings
from marketsync.errors import ApiError
from marketsync.kit import jsonio
from marketsync.logging import configure_logging
from marketsync.runtime import Runtime

T = TypeVar("T")
log = structlog.get_logger("marketsync.cli")

app = typer.Typer(
    no_args_is_help=True, add_completion=False, help="marketsync: marketplace inventory and orders service."
)
db_app = typer.Typer(no_args_is_help=True, help="Database maintenance.")
admin = typer.Typer(no_args_is_help=True, help="Operator commands (the app, until the web console exists).")
account_app = typer.Typer(no_args_is_help=True, help="Merchant accounts.")
credential_app = typer.Typer(no_args_is_help=True, help="API credentials.")
marketplace_app = typer.Typer(no_args_is_help=True, help="Marketplace connections.")
dataflow_app = typer.Typer(no_args_is_help=True, help="Data Flow: who owns Price and Stock.")
taxonomy_app = typer.Typer(no_args_is_help=True, help="Marketplace taxonomies.")
webhooks_app = typer.Typer(no_args_is_help=True, help="Webhook subscriptions and delivery log.")
user_app = typer.Typer(no_args_is_help=True, help="People who sign in to the app (/app).")
sandbox = typer.Typer(no_args_is_help=True, help="Drive the built-in sandbox marketplaces.")
dev_app = typer.Typer(no_args_is_help=True, help="The integrator's local loop (an API client of a running service).")

app.add_typer(db_app, name="db")
app.add_typer(admin, name="admin")
app.add_typer(sandbox, name="sandbox")
app.add_typer(dev_app, name="dev")
admin.add_typer(account_app, name="account")
admin.add_typer(credential_app, name="credential")
admin.add_typer(marketplace_app, name="marketplace")
admin.add_typer(dataflow_app, name="dataflow")
admin.add_typer(taxonomy_app, name="taxonomy")
admin.add_typer(webhooks_app, name="webhooks")
admin.add_typer(user_app, name="user")

JsonOption = typer.Option(False, "--json", help="Print exactly one JSON object on stdout.")


def emit(result: dict[str, Any], as_json: bool, human: str | None = None) -> None:
    if as_json:
        sys.stdout.write(jsonio.dumps(result).decode() + "\n")
    else:
        typer.echo(human if human is not None else "\n".join(f"{k}: {v}" for k, v in result.items()))


# A full collection once per this many young (generation 1) collections, not Python's 10 (decision 0300).
FULL_COLLECTION_EVERY = 100


def settle_heap() -> None:
    """Once a long-running process has built what it keeps: out of the collector's sight (`gc.freeze`), and full
    collections made rare. With the startup heap frozen, the objects a full collection counts against are few, so
    Python ran one whenever a feed's lines in flight outlived two young collections: 10-12 a minute under a steady
    push load, each stalling the event loop 20-120 ms and finding almost nothing (docs/decisions/0300)."""
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)


def run_service(main: Coroutine[Any, Any, None]) -> None:
    """Long-running processes use uvloop (what uvicorn picks when it owns the loop)."""
    uvloop.run(main)


def serve_http(
    build_app: Callable[[Runtime], Any],
    host: str,
    port: int,
    *,
    lifespan: Literal["auto", "on", "off"] = "auto",
    **announce: Any,
) -> None:
    """Prepare (startup.prepare), then serve the ASGI app built on a fresh runtime until SIGTERM/SIGINT."""
    settings = settings_or_exit()
    configure_logging(settings.log_level)

    async def main() -> None:
        rt = Runtime.create(settings)
        try:
            await startup.prepare(rt)
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


def fail(message: str, *, as_json: bool = False, code: str = "startup-failed") -> NoReturn:
    """One line on stderr (or one JSON object on stdout with --json), exit status 2."""
    if as_json:
        sys.stdout.write(jsonio.dumps({"error": code, "title": message, "errors": {}}).decode() + "\n")
    else:
        typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def settings_or_exit(*, as_json: bool = False) -> Settings:
    try:
        return startup.load_settings()
    except startup.StartupError as exc:
        fail(str(exc), as_json=as_json)


def run_or_exit(run: Callable[[], T], *, as_json: bool = False) -> T:
    try:
        return run()
    except startup.StartupError as exc:
        fail(str(exc), as_json=as_json)


def run_command(
    body: Callable[[Runtime], Awaitable[T]], *, as_json: bool = False, settings: Settings | None = None
) -> T:
    """Open the runtime, apply pending migrations, run, close. Service errors exit 1 with their message."""
    settings = settings or settings_or_exit(as_json=as_json)
    configure_logging(settings.log_level)

    async def main() -> T:
        rt = connectors.compose(Runtime.create(settings))
        try:
            await startup.prepare(rt, migrate_schema=True)  # an operator's command brings the schema up to date
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
