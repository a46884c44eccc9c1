"""`marketsync sandbox amazon`: the simulator as its own process (state in memory, gone when it stops).

The application it accepts is the one the service is configured with: MARKETSYNC_AMAZON_APP_ID,
MARKETSYNC_AMAZON_LWA_CLIENT_ID and MARKETSYNC_AMAZON_LWA_CLIENT_SECRET when set (the simulator's own otherwise), with
the app's callback {MARKETSYNC_BASE_URL}/app/marketplaces/amazon/callback as its registered redirect URI. Read from the
environment directly: the simulator needs no database and no other setting of the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Iterator

import uvicorn

from marketsync.marketplaces.amazon.simulator.app import create_simulator_app
from marketsync.marketplaces.amazon.simulator.state import (
    DEFAULT_APPLICATION_ID,
    DEFAULT_CLIENT_ID,
    DEFAULT_CLIENT_SECRET,
    AmazonSimulator,
)

DEFAULT_PORT = 8200
CALLBACK_PATH = "/app/marketplaces/amazon/callback"


def configured_simulator() -> AmazonSimulator:
    sim = AmazonSimulator()
    base = os.environ.get("MARKETSYNC_BASE_URL", "http://127.0.0.1:8000").rstrip("/")
    sim.applications.clear()
    sim.register_application(
        os.environ.get("MARKETSYNC_AMAZON_LWA_CLIENT_ID") or DEFAULT_CLIENT_ID,
        os.environ.get("MARKETSYNC_AMAZON_LWA_CLIENT_SECRET") or DEFAULT_CLIENT_SECRET,
        os.environ.get("MARKETSYNC_AMAZON_APP_ID") or DEFAULT_APPLICATION_ID,
        [base + CALLBACK_PATH],
    )
    sim.add_seller(store_name="Demo Store")  # one selling account to choose on the consent page
    return sim


def announce(sim: AmazonSimulator, url: str) -> str:
    app = next(iter(sim.applications.values()))
    lines = [
        f"Amazon SP-API simulator on {url} (state in memory; Ctrl-C stops it)",
        f"  MARKETSYNC_AMAZON_SPAPI_URL={url}",
        f"  MARKETSYNC_AMAZON_LWA_URL={url}/auth/o2/token",
        f"  MARKETSYNC_AMAZON_CONSENT_URL={url}/apps/authorize/consent",
        f"  MARKETSYNC_AMAZON_APP_ID={app.application_id}",
        f"  MARKETSYNC_AMAZON_LWA_CLIENT_ID={app.client_id}",
        f"  redirect URI: {', '.join(app.redirect_uris)}",
        f"  control: {url}/_simulator/state",
    ]
    if app.client_secret == DEFAULT_CLIENT_SECRET:
        lines.insert(7, f"  MARKETSYNC_AMAZON_LWA_CLIENT_SECRET={DEFAULT_CLIENT_SECRET}  (the simulator's own)")
    return "\n".join(lines)


def run(host: str, port: int) -> None:
    """Serve until SIGTERM/SIGINT; the URLs are printed once listening (port 0: an ephemeral one)."""
    sim = configured_simulator()
    config = uvicorn.Config(create_simulator_app(sim), host=host, port=port, log_config=None, access_log=False)

    class QuietServer(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # stopped by the handlers below: a clean exit (status 0), not the signal re-raised

    server = QuietServer(config)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for stop in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(stop, lambda: setattr(server, "should_exit", True))
        task = asyncio.create_task(server.serve())
        while not server.started:
            if task.done():
                return await task
            await asyncio.sleep(0.01)
        bound = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://{'[' + host + ']' if ':' in host else host}:{bound}"
        sim.base_url = url
        sys.stdout.write(announce(sim, url) + "\n")
        sys.stdout.flush()
        await task

    asyncio.run(main())
