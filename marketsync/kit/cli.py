"""The CLI's command groups and output helpers. Each domain adds its commands in `<domain>/commands.py`; running one
(settings, runtime, migrations, connectors) is `marketsync.startup.run_command`."""

from __future__ import annotations

import gc
import sys
from collections.abc import Coroutine
from typing import Any, NoReturn, TypeVar

import structlog
import typer
import uvloop

from marketsync.kit import jsonio

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
dev_app = typer.Typer(no_args_is_help=True, help="The integrator's local loop (an API client of a running service).")

app.add_typer(db_app, name="db")
app.add_typer(admin, name="admin")
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


def fail(message: str, *, as_json: bool = False, code: str = "startup-failed") -> NoReturn:
    """One line on stderr (or one JSON object on stdout with --json), exit status 2."""
    if as_json:
        sys.stdout.write(jsonio.dumps({"error": code, "title": message, "errors": {}}).decode() + "\n")
    else:
        typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)
