"""The operator interface (DESIGN.md section 5). Names are fixed: outside checks drive them."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Callable, Iterator

import structlog
import typer

from marketsync import migrate, startup
from marketsync.auth import commands as _auth_commands  # noqa: F401  (registers commands)
from marketsync.auth import keys
from marketsync.catalog import commands as _catalog_commands  # noqa: F401
from marketsync.config import is_loopback_host
from marketsync.demo import run_demo
from marketsync.http.logs import configure_logging
from marketsync.inventory import commands as _inventory_commands  # noqa: F401
from marketsync.kit import crypto
from marketsync.kit.cli import JsonOption, admin, app, db_app, emit, fail, run_service, settle_heap
from marketsync.marketplaces import commands as _marketplace_commands  # noqa: F401
from marketsync.marketplaces.amazon.simulator import commands as amazon_simulator_commands
from marketsync.marketplaces.registry import compose_connectors
from marketsync.marketplaces.sandbox import commands as sandbox_commands
from marketsync.orders import commands as _orders_commands  # noqa: F401
from marketsync.people import commands as _people_commands  # noqa: F401
from marketsync.runtime import Runtime
from marketsync.startup import run_command, run_or_exit, serve_http, settings_or_exit
from marketsync.webhooks import commands as _webhooks_commands  # noqa: F401

log = structlog.get_logger("marketsync.cli")


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8000, "--port"),
    no_workers: bool = typer.Option(False, "--no-workers", help="API only; run `marketsync worker` elsewhere."),
) -> None:
    """Serve the API (and, unless --no-workers, the workers in the same process)."""
    from marketsync.app import create_app

    settings = settings_or_exit()
    if settings.dev_mode and not is_loopback_host(host):
        # Dev mode lets subscriptions reach loopback: only this machine may hold the credentials that subscribe.
        fail(f"MARKETSYNC_DEV_MODE: refused with --host {host}: dev mode serves on loopback only (docs/decisions/0420)")
    serve_http(
        lambda rt: create_app(rt, run_workers=not no_workers), host, port,
        base_url=settings.base_url, workers=not no_workers,
    )  # fmt: skip


@app.command()
def worker() -> None:
    """Run a worker: jobs, schedules and webhook deliveries. Stops gracefully on SIGTERM/SIGINT."""
    from marketsync.jobs.worker import Worker

    settings = settings_or_exit()
    configure_logging(settings.log_level)

    async def main() -> None:
        rt = compose_connectors(Runtime.create(settings))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            await startup.prepare(rt)
            worker = Worker(rt)
            settle_heap()
            async with serve_worker_endpoints(rt, worker.health):
                await worker.run(stop)
        finally:
            await rt.close()

    run_or_exit(lambda: run_service(main()))


@contextlib.asynccontextmanager
async def serve_worker_endpoints(rt: Runtime, health: Callable[[], dict[str, object]]) -> AsyncIterator[None]:
    """The worker's /metrics and /healthz on MARKETSYNC_WORKER_METRICS_HOST:PORT, for as long as the worker runs."""
    port = rt.settings.worker_metrics_port
    if port == 0:
        yield
        return
    import uvicorn

    from marketsync import observability

    config = uvicorn.Config(
        observability.worker_endpoints(rt, health), host=rt.settings.worker_metrics_host, port=port,
        log_config=None, access_log=False, lifespan="off", timeout_keep_alive=rt.settings.http_keep_alive_s,
    )  # fmt: skip

    class EndpointServer(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # SIGTERM belongs to the worker (graceful shutdown), not to this side server

    server = EndpointServer(config)

    async def serve() -> None:
        try:
            await server.serve()
        except SystemExit:  # uvicorn's answer to a port in use: the worker runs on without its endpoints
            log.warning("worker_endpoints_unavailable", host=rt.settings.worker_metrics_host, port=port)

    task = asyncio.create_task(serve())
    try:
        yield
    finally:
        server.should_exit = True
        await task


@db_app.command("upgrade")
def db_upgrade(as_json: bool = JsonOption) -> None:
    """Apply pending migrations."""

    async def body(rt: Runtime) -> dict[str, object]:
        return {"Database": rt.db.dialect, "Revision": await migrate.current_revision(rt.db)}

    result = run_command(body, as_json=as_json)
    emit(result, as_json, f"database ({result['Database']}) is up to date at revision {result['Revision']}")


keys_app = typer.Typer(no_args_is_help=True, help="Encryption and hashing keys (shared by every process).")
admin.add_typer(keys_app, name="keys")
# The CLI's composition root for marketplace implementations: the one that brings commands of its own.
app.add_typer(sandbox_commands.group, name="sandbox")
sandbox_commands.group.command("amazon")(amazon_simulator_commands.amazon)


@keys_app.command("generate")
def keys_generate(as_json: bool = JsonOption) -> None:
    """Print a new key pair for MARKETSYNC_ENCRYPTION_KEYS and MARKETSYNC_SECRET_HASH_KEY (nothing is stored)."""
    key_id = "k" + crypto.random_secret(3).lower()
    result = {
        "MARKETSYNC_ENCRYPTION_KEYS": f"{key_id}:{crypto.random_secret(32)}",
        "MARKETSYNC_SECRET_HASH_KEY": crypto.random_secret(32),
    }
    emit(result, as_json, "\n".join(f"{name}={value}" for name, value in result.items()))


@keys_app.command("check")
def keys_check(as_json: bool = JsonOption) -> None:
    """Compare this environment's keys with the ones the database was first used with (exit 2 on a mismatch)."""

    async def body(rt: Runtime) -> keys.KeyReport:
        async with rt.db.transaction() as session:
            return await keys.check_or_record(session, rt.settings, rt.clock)

    report = run_command(body, as_json=as_json)
    result = {"Matched": report.checked, "Recorded": report.recorded}
    emit(result, as_json, f"keys match the database (matched: {', '.join(report.checked) or 'none, first use'})")


@app.command()
def demo(as_json: bool = JsonOption) -> None:
    """Prepare the demo tenant (idempotent; a new secret each run, earlier ones stay valid)."""
    result = run_command(run_demo, as_json=as_json)
    settings = settings_or_exit(as_json=as_json)
    human = (
        f"Demo account {result['AccountId']}\n"
        f"  client_id:     {result['client_id']}\n"
        f"  client_secret: {result['client_secret']}   (shown once)\n"
        f"  scopes:        {' '.join(result['Scopes'])}\n"
        f"  base_url:      {settings.base_url}\n"
        f"  auth_url:      {settings.base_url}/connect/token\n"
        f"  OpenAPI:       {settings.base_url}/docs\n"
        f"  app:           {settings.base_url}/app  (sign in as {result['AppUser']['Email']} / "
        f"{result['AppUser']['Password']}, shown once)\n"
        + "".join(
            f"  marketplace:   {m['Platform']} {m['Country']}  {m['MarketplaceId']}\n" for m in result["Marketplaces"]
        )
    )
    emit(result, as_json, human)


def main() -> None:
    app()
