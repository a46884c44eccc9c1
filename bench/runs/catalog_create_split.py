"""Where a product create's latency goes when `serve` runs its workers in the process (docs/perf/catalog.md).

    .venv/bin/python -m bench.runs.catalog_create_split [--backend sqlite|postgresql] [--creates 300] [--no-workers]
        [--sandbox-url URL]

The app is served in this process (uvicorn on uvloop, workers in the process unless --no-workers); the client is a
separate process posting bench.runs.catalog_http's 30-attribute laptop sequentially (a pause of --pause-ms between
creates stands for the floor request the bench alternates with). Per create it splits the latency the client saw:
  - before the app: from the client's send to the app's first line (the loop busy with other work, HTTP parsing);
  - write-lock wait: opening the create's write transaction (SQLite: the one writer connection and BEGIN
    IMMEDIATE, held meanwhile by a publish or the sandbox; PostgreSQL: a pooled connection);
  - the rest of the handler (its own work, plus other tasks the loop ran while the handler awaited the database).
Medians of each part over the creates after a warm-up. Loopback only; bounded loops.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import contextvars
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import uvicorn
import uvloop

from bench.runs.catalog_http import LAPTOP_ATTRIBUTES
from bench.support import BENCH_KEYS, create_scratch_pg, drop_scratch_pg, free_port, percentile
from marketsync import migrate
from marketsync.app import create_app
from marketsync.auth import service as auth_service
from marketsync.auth.scopes import ALL_SCOPES
from marketsync.catalog.taxonomy import service
from marketsync.config import Settings
from marketsync.http.logs import configure_logging
from marketsync.marketplaces import service as marketplaces
from marketsync.marketplaces.registry import compose_connectors
from marketsync.marketplaces.sandbox import taxonomies as shipped
from marketsync.runtime import Runtime

WARMUP = 20
IN_CREATE: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar("in_create", default=None)

CLIENT = r"""
import json, sys, time, httpx
base, token, body = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
count, pause = int(sys.argv[4]), float(sys.argv[5])
out = []
with httpx.Client(base_url=base, timeout=60, headers={"Authorization": f"Bearer {token}"}) as client:
    for index in range(count):
        body["Sku"] = f"SPLIT-{index:06d}"
        sent = time.time()
        response = client.post("/api/products/Create", json=body)
        assert response.status_code == 200, response.text
        out.append((body["Sku"], sent, time.time()))
        time.sleep(pause / 1000)
print(json.dumps(out))
"""


def instrument(rt: Runtime, app: Any) -> tuple[Any, dict[str, tuple[float, float, float]]]:
    """Wrap the app (when each create reached it and how long it took) and rt.db.transaction (the lock wait)."""
    seen: dict[str, tuple[float, float, float]] = {}
    transaction = rt.db.transaction

    @contextlib.asynccontextmanager
    async def timed_transaction() -> AsyncIterator[Any]:
        waits = IN_CREATE.get()
        async with transaction() as session:
            if waits is not None:
                started = time.perf_counter()
                await session.connection()  # the writer (and BEGIN IMMEDIATE on SQLite) now, timed
                waits.append(time.perf_counter() - started)
            yield session

    rt.db.transaction = timed_transaction  # type: ignore[method-assign]

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/api/products/Create":
            await app(scope, receive, send)
            return
        arrived, started = time.time(), time.perf_counter()
        waits: list[float] = []
        token = IN_CREATE.set(waits)
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        try:
            await app(scope, replay, send)
        finally:
            IN_CREATE.reset(token)
        seen[json.loads(body)["Sku"]] = (arrived, time.perf_counter() - started, sum(waits))

    return wrapped, seen


async def run(
    backend: str, creates: int, pause_ms: float, directory: Path, *, workers: bool, sandbox: str | None
) -> None:
    scratch = None
    if backend == "sqlite":
        url = f"sqlite:///{directory / 'split.db'}"
    else:
        scratch, url = await create_scratch_pg("ms_split_cat")
    settings = Settings(
        **BENCH_KEYS,
        database_url=url,
        var_dir=directory / "var",
        rate_limit="10000000/minute",
        log_level="WARNING",
        sandbox_url=sandbox,
    )
    rt = compose_connectors(Runtime.create(settings))
    try:
        await migrate.upgrade(rt.db)
        async with rt.db.transaction() as session:
            await service.import_taxonomy(rt, session, shipped.generate("P1", 1, 20_000), "UK")
            account = await auth_service.create_account(rt, session, f"split-{uuid.uuid4().hex[:8]}")
            credential = await auth_service.create_credential(rt, session, account.id, "split", list(ALL_SCOPES))
            connection = await marketplaces.connect(rt, session, account.id, "P1", "UK")
        shipped.off_api_requirements("P1", "warm")  # the sandbox's index, built once per process
        app, seen = instrument(rt, create_app(rt, run_workers=workers))
        port = free_port()
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False, lifespan="on")
        )
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        import httpx

        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            form = {
                "grant_type": "client_credentials",
                "client_id": credential.client_id,
                "client_secret": credential.client_secret,
            }
            token = (await client.post("/connect/token", data=form)).json()["access_token"]
            schema = (
                await client.get(
                    "/api/product-types/Schema",
                    params={"marketplaceId": connection.id, "categoryId": shipped.ANCHOR_IDS["P1"]["Laptops"]},
                    headers={"Authorization": f"Bearer {token}"},
                )
            ).json()
        body = {
            "Sku": "",
            "MarketplaceId": connection.id,
            "CategoryId": shipped.ANCHOR_IDS["P1"]["Laptops"],
            "Quantity": 5,
            "ProductTypeViewId": schema["ProductTypeViewId"],
            "Attributes": LAPTOP_ATTRIBUTES,
        }
        load = Path("/proc/loadavg").read_text().split()[0]
        client_process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            CLIENT,
            f"http://127.0.0.1:{port}",
            token,
            json.dumps(body),
            str(creates),
            str(pause_ms),
            stdout=subprocess.PIPE,
        )
        output, _ = await client_process.communicate()
        server.should_exit = True
        await task
        total, before, lock, rest = [], [], [], []
        for sku, sent, received in json.loads(output)[WARMUP:]:
            arrived, handled, waited = seen[sku]
            total.append((received - sent) * 1000)
            before.append((arrived - sent) * 1000)
            lock.append(waited * 1000)
            rest.append((handled - waited) * 1000)
        print(
            f"{backend}, workers {'in the process' if workers else 'off'}, sandbox {sandbox or 'in process'}: "
            f"{len(total)} creates, load {load} -> {Path('/proc/loadavg').read_text().split()[0]}"
        )
        for name, samples in (
            ("client saw", total),
            ("before the app", before),
            ("write-lock wait", lock),
            ("rest of the handler", rest),
        ):
            print(f"  {name:22} p50 {statistics.median(samples):7.2f} ms  p90 {percentile(samples, 0.9):7.2f} ms")
    finally:
        await rt.close()
        if scratch is not None:
            await drop_scratch_pg(scratch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="sqlite", choices=["sqlite", "postgresql"])
    parser.add_argument("--creates", type=int, default=300)
    parser.add_argument("--pause-ms", type=float, default=2.0)
    parser.add_argument("--no-workers", action="store_true")
    parser.add_argument("--sandbox-url", default=None, help="a `marketsync sandbox serve` on loopback")
    args = parser.parse_args()
    configure_logging("WARNING")
    with tempfile.TemporaryDirectory(prefix="ms-split-cat-") as raw:
        uvloop.run(
            run(
                args.backend,
                args.creates,
                args.pause_ms,
                Path(raw),
                workers=not args.no_workers,
                sandbox=args.sandbox_url,
            )
        )


if __name__ == "__main__":
    main()
