"""The catalogue's hot paths over HTTP against their floors (bench/floors/inventory.py), same run, alternating.

    .venv/bin/python -m bench.runs.inventory_http [--products 100000] [--backends sqlite,postgresql] [--pushes 40]
        [--pages 150] [--gets 300] [--listings 4] [--only push,propagate,drained,walk,pages,get]

One `marketsync serve` (workers in process, logs at WARNING) and one floor app (uvicorn + uvloop + httptools,
Starlette, orjson, raw sqlite3 in WAL / asyncpg) on loopback, each on its own scratch database holding the same
catalogue (seeded with the raw driver: `--products` products, each listed on `--listings` connections), the
same bearer token. One client (httpx, bodies pre-serialised), requests alternating between the two servers
(which goes first alternates too):
  - push: 500 random SKUs, every SKU's price and quantity changing, PropagateToListings false (Updated = 500
    asserted on both sides); then the same with PropagateToListings true (the service schedules one job per
    connection holding a moved SKU; the floor schedules nothing), back to back (the in-process workers send the
    previous pushes' jobs meanwhile) and drained (before each request the previous push's jobs are complete,
    waited for untimed);
  - walk: a ModifiedSince walk from the oldest product, Limit 200, resuming at each page's last LastModifiedDate
    (`--pages` pages on each side); products/s = new products per page / page time;
  - pages: without ModifiedSince, Limit 200 at offsets within the first 10,000 products (the same at every size),
    TotalCount exact (`--pages` pages on each side);
  - get: `GET /api/products/{sku}` for random SKUs, next to the authenticated no-op route of
    bench/runs/foundation_http.py (the service's fixed cost of a request) served by a third process.
Prints p50/p99 per side and the ratio, with the load average before and after.

The seeded listings exist at the sandbox marketplaces too (a propagating push's feeds are applied, not refused line
by line: the drained phase asserts every job succeeded), and the catalogue counts as mirrored (`mirrored`).
Diagnosis: BENCH_RAW=1 prints every timing in order; BENCH_LOGS=DIR keeps the servers' logs, at the level
BENCH_SERVICE_LOG_LEVEL (default WARNING); BENCH_MAX_WAIT=S sets the service's MARKETSYNC_REQUESTS_FIRST_MAX_WAIT_S.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import orjson

from bench.floors import inventory as inventory_floor
from bench.runs.foundation_http import FIXED_COST_PATH, service_env
from bench.support import (
    REPO,
    cpu_probe_ms,
    create_scratch_pg,
    database_name,
    drop_scratch_pg,
    free_port,
    marketsync,
    percentile,
    postgres_cpu_s,
    print_figures,
    process,
    process_cpu_s,
    thread_cpu_s,
)
from marketsync.kit.ids import new_id

BATCH = 500
WARMUP = 5
PLATFORMS = (("P1", "UK"), ("P2", "DE"), ("P3", "US"), ("P4", "FR"))
# After a bulk load, PostgreSQL's autovacuum (insert threshold) vacuums and analyses the new tables within minutes; a
# benchmark started right after the load would measure the minutes before it instead (no visibility map, so no
# index-only scans, hint bits set by the first reads, autovacuum running mid-benchmark): both sides start vacuumed.
VACUUM_AFTER_LOAD = "VACUUM (ANALYZE)"
SANDBOX_LISTING_COLUMNS = ("connection_id", "listing_id", "sku", "external_sku", "listing_url", "attributes", "price",
                           "quantity", "feed_updates", "updated_at")  # fmt: skip


# What each seeded listing holds at the sandbox marketplace, and the service's listings map with it.
MARKETPLACE_PRICE, MARKETPLACE_QUANTITY = 100_000, 10


def loadavg() -> str:
    with open("/proc/loadavg") as handle:
        return " ".join(handle.read().split()[:3])


def generated_products(count: int) -> tuple[list[str], list[datetime]]:
    base = datetime(2026, 1, 1)
    return [f"BENCH-{i:07d}" for i in range(count)], [base + timedelta(microseconds=i) for i in range(count)]


def listing_values(index: int, platform: str, country: str) -> tuple[str, str, str]:
    listing_id = f"{platform}{country}-{index:08d}"
    return listing_id, f"BENCH-{index:07d}", f"https://{platform.lower()}.example/{country.lower()}/{listing_id}"


def _chunks(count: int, size: int = 50_000) -> range:
    return range(0, count, size)


def mirrored(*, postgres: bool) -> tuple[str, tuple[Any, Any]]:
    """The seeded catalogue is the mirrored one: the listing mirror's schedule last ran now and is next due in a day.
    Otherwise `serve` starts by mirroring every seeded listing (4 x 100,000 here: minutes, a benchmark of its own,
    bench/runs/marketplaces_feeds.py) while the phases below are measured. The statement and its values for the
    driver."""
    now = datetime.now(UTC).replace(tzinfo=None)
    last, due = now, now + timedelta(days=1)
    columns = "INSERT INTO schedules (name, last_run_at, next_run_at) VALUES ('marketplaces.listing_mirror', "
    if postgres:
        return columns + "$1, $2)", (last, due)
    return columns + "?, ?)", tuple(at.isoformat(sep=" ", timespec="microseconds") for at in (last, due))


async def seed_service(url: str, account_id: str, marketplaces: list[tuple[str, str, str]], count: int,
                       listings: int, marketplace_url: str) -> None:  # fmt: skip
    """The service's products and listings, bulk-inserted with the raw driver (ids in SKU order), and the same
    listings at the sandbox marketplace in `marketplace_url` (the service's own database unless it runs apart)."""
    skus, times = generated_products(count)
    now = datetime(2026, 1, 1)
    ids = [new_id() for _ in range(count)]
    product_columns = ("id", "account_id", "sku", "sku_lower", "price", "quantity", "title", "modified_at",
                       "created_at")  # fmt: skip
    # The listings hold what the marketplace holds (seed_marketplace): the seeded catalogue is the mirrored one.
    listing_columns = ("id", "account_id", "product_id", "marketplace_id", "listing_id", "external_sku", "listing_url",
                       "attributes", "status", "marketplace_price", "marketplace_quantity", "created_at",
                       "updated_at")  # fmt: skip

    def product_rows(start: int, stop: int, text: bool) -> list[tuple[Any, ...]]:
        return [
            (ids[i], account_id, skus[i], skus[i].lower(), 100_000, 10, None,
             times[i].isoformat(sep=" ", timespec="microseconds") if text else times[i],
             now.isoformat(sep=" ", timespec="microseconds") if text else now)
            for i in range(start, stop)
        ]  # fmt: skip

    def listing_rows(start: int, stop: int, text: bool) -> list[tuple[Any, ...]]:
        stamp: Any = now.isoformat(sep=" ", timespec="microseconds") if text else now
        return [
            (new_id(), account_id, ids[i], marketplace_id, *listing_values(i, platform, country), "{}", "Live",
             MARKETPLACE_PRICE, MARKETPLACE_QUANTITY, stamp, stamp)
            for i in range(start, stop)
            for marketplace_id, platform, country in marketplaces[:listings]
        ]  # fmt: skip

    await bulk_load(
        url,
        count,
        [("products", product_columns, product_rows), ("listings", listing_columns, listing_rows)],
        then=mirrored,
    )
    await seed_marketplace(marketplace_url, marketplaces, count, listings)


async def seed_marketplace(url: str, marketplaces: list[tuple[str, str, str]], count: int, listings: int) -> None:
    """The same listings as the sandbox marketplace holds them: a feed's lines are applied, not refused."""
    now = datetime(2026, 1, 1)

    def marketplace_rows(start: int, stop: int, text: bool) -> list[tuple[Any, ...]]:
        stamp: Any = now.isoformat(sep=" ", timespec="microseconds") if text else now
        return [
            (marketplace_id, listing_id, sku, sku, listing_url, "{}", MARKETPLACE_PRICE, MARKETPLACE_QUANTITY, 0, stamp)
            for i in range(start, stop)
            for marketplace_id, platform, country in marketplaces[:listings]
            for listing_id, sku, listing_url in (listing_values(i, platform, country),)
        ]

    await bulk_load(url, count, [("sandbox_listings", SANDBOX_LISTING_COLUMNS, marketplace_rows)])


# A table's rows for the items start..stop (timestamps as SQLite's text when the flag says so).
Rows = Callable[[int, int, bool], list[tuple[Any, ...]]]


async def bulk_load(
    url: str,
    count: int,
    tables: Sequence[tuple[str, Sequence[str], Rows]],
    *,
    then: Callable[..., tuple[str, tuple[Any, ...]]] | None = None,
) -> None:
    """`count` items' rows into each table, 50,000 items at a time, on the raw driver (one sqlite3 transaction of
    executemany, or asyncpg's COPY), then `then(postgres=...)`'s statement; PostgreSQL's tables vacuumed and analysed
    (as autovacuum does), SQLite's left without statistics (as a deployment's are)."""
    if url.startswith("sqlite:///"):
        db = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        db.execute("BEGIN")
        for start in _chunks(count):
            for table, columns, rows in tables:
                db.executemany(
                    f"INSERT INTO {table} ({','.join(columns)}) VALUES ({','.join('?' * len(columns))})",
                    rows(start, min(start + 50_000, count), True),
                )
        if then is not None:
            db.execute(*then(postgres=False))
        db.execute("COMMIT")
        # No ANALYZE: nothing runs it on a deployment's SQLite file, so the service's queries must plan well without
        # statistics (docs/decisions/0296-sqlite-plans-without-statistics.md: GET one product read 105 ms before).
        db.close()
        return
    connection = await asyncpg.connect(url)
    try:
        for start in _chunks(count):
            for table, columns, rows in tables:
                records = rows(start, min(start + 50_000, count), False)
                await connection.copy_records_to_table(table, records=records, columns=columns)
        if then is not None:
            statement, values = then(postgres=True)
            await connection.execute(statement, *values)
        await connection.execute(VACUUM_AFTER_LOAD)
    finally:
        await connection.close()


async def seed_floor(url: str, token: str, count: int, listings: int) -> None:
    skus, times = generated_products(count)

    def listing_rows(start: int, stop: int) -> list[tuple[Any, ...]]:
        return [(i, platform, country, *listing_values(i, platform, country))
                for i in range(start, stop) for platform, country in PLATFORMS[:listings]]  # fmt: skip

    if url.startswith("sqlite:///"):
        db = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        for statement in inventory_floor.SQLITE_SCHEMA:
            db.execute(statement)
        db.execute("BEGIN")
        db.execute("INSERT INTO tokens VALUES (?, ?)", (inventory_floor.token_hash(token), "floor"))
        for start in _chunks(count):
            stop = min(start + 50_000, count)
            db.executemany(
                "INSERT INTO products VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (i, skus[i], skus[i].lower(), 100_000, 10, inventory_floor.wire_time(times[i]))
                    for i in range(start, stop)
                ],
            )
            db.executemany("INSERT INTO listings VALUES (?, ?, ?, ?, ?, ?)", listing_rows(start, stop))
        db.execute("COMMIT")
        db.execute("ANALYZE")
        db.close()
        return
    connection = await asyncpg.connect(url)
    try:
        for statement in inventory_floor.POSTGRES_SCHEMA:
            await connection.execute(statement)
        await connection.execute("INSERT INTO tokens VALUES ($1, $2)", inventory_floor.token_hash(token), "floor")
        for start in _chunks(count):
            stop = min(start + 50_000, count)
            await connection.copy_records_to_table(
                "products",
                records=[(i, skus[i], skus[i].lower(), 100_000, 10, times[i]) for i in range(start, stop)],
            )
            await connection.copy_records_to_table("listings", records=listing_rows(start, stop))
        await connection.execute(VACUUM_AFTER_LOAD)
    finally:
        await connection.close()


Call = Callable[[httpx.AsyncClient, int], Awaitable[None]]


async def alternate(
    clients: dict[str, httpx.AsyncClient],
    call: Call,
    rounds: int,
    warmup: int,
    between: Callable[[int], Awaitable[None]] | None = None,
) -> dict[str, list[float]]:
    """`call(client, round)` on every side each round, the side going first alternating; ms per call.
    `between(round)` runs untimed after each call."""
    timings: dict[str, list[float]] = {name: [] for name in clients}
    names = list(clients)
    for round_number in range(warmup + rounds):
        order = names if round_number % 2 == 0 else names[::-1]
        for name in order:
            if between is not None:
                await between(round_number)
            started = time.perf_counter()
            await call(clients[name], round_number)
            elapsed = (time.perf_counter() - started) * 1000
            if round_number >= warmup:
                timings[name].append(elapsed)
    return timings


def summary(timings: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    if os.environ.get("BENCH_RAW"):
        print({name: [round(x, 1) for x in t] for name, t in timings.items()}, file=sys.stderr)
    return {name: {"p50": statistics.median(t), "p99": percentile(t, 0.99), "n": len(t)} for name, t in timings.items()}


async def drain(client: httpx.AsyncClient, job_ids: list[str]) -> None:
    """Wait (untimed) until these jobs are complete: the next push then meets idle workers."""
    deadline = time.monotonic() + 120
    for job_id in job_ids:
        while time.monotonic() < deadline:
            job = (await client.get(f"/api/jobs/{job_id}")).json()
            if job["IsComplete"]:
                # A feed the marketplace refused line by line is cheaper than one it applies: measure the real one.
                assert job["IsSuccessful"] and job["ProgressDone"] == job["ProgressTotal"], job
                break
            await asyncio.sleep(0.02)


async def bench_push(clients: dict[str, httpx.AsyncClient], skus: dict[str, list[str]], pushes: int,
                     propagate: bool, seed: int, drained: bool = False) -> dict[str, list[float]]:  # fmt: skip
    """`skus`: each side's catalogue; sides of the same catalogue push the same bodies."""
    bodies: dict[str, list[bytes]] = {}
    for side in clients:
        rng = random.Random(seed)
        bodies[side] = []
        for round_number in range(WARMUP + pushes):
            chosen = rng.sample(skus[side], BATCH)
            step = seed * 1000 + round_number
            items = [{"Sku": sku, "Price": 11 + step + (i % 100) / 100, "Quantity": 1000 + step} for i, sku in
                     enumerate(chosen)]  # fmt: skip
            bodies[side].append(orjson.dumps({"Items": items, "PropagateToListings": propagate}))

    async def call(client: httpx.AsyncClient, round_number: int) -> None:
        side = client.headers["x-side"]
        response = await client.post("/api/inventory/price-quantity", content=bodies[side][round_number])
        body = response.json()
        assert response.status_code == 200 and body["Updated"] == BATCH and not body["Warnings"], body
        assert bool(body["JobIds"]) == (propagate and side.startswith("ours")), body["JobIds"]
        if drained:
            pending.extend((side, job_id) for job_id in body["JobIds"])

    pending: list[tuple[str, str]] = []  # (side, job id)

    async def drain_between(round_number: int) -> None:
        for side, client in clients.items():  # each catalogue's own service
            if side.startswith("ours"):
                await drain(client, [job_id for of_side, job_id in pending if of_side == side])
        pending.clear()

    return await alternate(clients, call, pushes, WARMUP, between=drain_between if drained else None)


async def bench_walk(clients: dict[str, httpx.AsyncClient], pages: int) -> tuple[dict[str, list[float]], int]:
    cursors = {name: "2025-12-31T00:00:00Z" for name in clients}
    sizes: list[int] = []

    async def call(client: httpx.AsyncClient, _round: int) -> None:
        side = client.headers["x-side"]
        body = orjson.dumps({"ModifiedSince": cursors[side], "Limit": 200})
        response = await client.post("/api/products/List", content=body)
        page = response.json()
        assert response.status_code == 200 and len(page["Products"]) == 200, page
        cursors[side] = page["Products"][-1]["LastModifiedDate"]
        sizes.append(len(page["Products"]))

    timings = await alternate(clients, call, pages, 2)
    assert len(set(cursors.values())) == 1, cursors  # both sides walked the same products
    return timings, 199  # inclusive bound: each page after the first repeats the previous page's last product


# Offset pages without ModifiedSince: the same 50 offsets at every catalogue size, so sizes compare like for like.
OFFSETS = range(0, 10_000, 200)


async def bench_pages(
    clients: dict[str, httpx.AsyncClient], pages: int, totals: dict[str, int]
) -> dict[str, list[float]]:
    """Pages of 200 without ModifiedSince, at offsets within the first 10,000 products; `totals`: each side's
    catalogue size, its exact TotalCount."""
    offsets = [offset for offset in OFFSETS if offset + 200 <= min(totals.values())]

    async def call(client: httpx.AsyncClient, round_number: int) -> None:
        offset = offsets[round_number * 17 % len(offsets)]
        response = await client.post("/api/products/List", content=orjson.dumps({"Limit": 200, "Offset": offset}))
        page = response.json()
        assert response.status_code == 200 and len(page["Products"]) == 200, page
        assert page["TotalCount"] == totals[client.headers["x-side"]], page["TotalCount"]

    return await alternate(clients, call, pages, 2)


async def bench_get(
    clients: dict[str, httpx.AsyncClient], skus: dict[str, list[str]], gets: int
) -> dict[str, list[float]]:
    """`skus`: each side's catalogue (the no-op's is not read)."""
    chosen = {}
    for side in clients:
        rng = random.Random(5)
        chosen[side] = [rng.choice(skus[side]) for _ in range(gets + 20)]

    async def call(client: httpx.AsyncClient, round_number: int) -> None:
        side = client.headers["x-side"]
        if side.startswith("no-op"):
            response = await client.get(FIXED_COST_PATH)
            assert response.status_code == 200
            return
        sku = chosen[side][round_number]
        response = await client.get(f"/api/products/{sku}")
        assert response.status_code == 200 and response.json()["Product"]["Sku"] == sku

    return await alternate(clients, call, gets, 20)


@contextlib.asynccontextmanager
async def scratch_database(backend: str, directory: str) -> AsyncIterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tempfile.mkdtemp(prefix='msbench-', dir=directory)}/bench.db"
        return
    name, url = await create_scratch_pg("ms_inventory")
    try:
        yield url
    finally:
        await drop_scratch_pg(name)


@dataclass
class Deployment:
    """One catalogue of `products` products served by `serve` and by the floor app (and the authenticated no-op of
    bench/runs/foundation_http.py when GET is measured), each on its own scratch database: the clients by side."""

    products: int
    skus: list[str]
    clients: dict[str, httpx.AsyncClient]
    pids: dict[str, int]
    databases: dict[str, str]
    profile: Callable[[str], contextlib.AbstractContextManager[None]]
    results: dict[str, Any]


@contextlib.asynccontextmanager
async def deployment(backend: str, products: int, args: argparse.Namespace) -> AsyncIterator[Deployment]:
    results: dict[str, Any] = {"backend": backend, "products": products, "load_before": loadavg()}
    directory = tempfile.mkdtemp(prefix="msbench-inventory-")
    async with (
        scratch_database(backend, directory) as url,
        scratch_database(backend, directory) as floor_url,
        scratch_database(backend, directory) as sandbox_url,
        contextlib.AsyncExitStack() as servers,
    ):
        var_dir = f"{directory}/var"
        env = service_env(url, var_dir)
        env["MARKETSYNC_LOG_LEVEL"] = os.environ.get("BENCH_SERVICE_LOG_LEVEL", "WARNING")
        if os.environ.get("BENCH_MAX_WAIT"):
            env["MARKETSYNC_REQUESTS_FIRST_MAX_WAIT_S"] = os.environ["BENCH_MAX_WAIT"]
        account = str(marketsync(env, "admin", "account", "create", "--name", "bench")["AccountId"])
        credential = marketsync(env, "admin", "credential", "create", "--account", account, "--name", "bench",
                                "--scopes", "InventoryRead InventoryWrite MarketplacesRead")  # fmt: skip
        for platform, country in PLATFORMS:
            marketsync(env, "admin", "marketplace", "connect", "--account", account, "--platform", platform,
                       "--country", country)  # fmt: skip
        for kind in ("Price", "Stock"):
            marketsync(env, "admin", "dataflow", "set", "--account", account, "--kind", kind, "--owner", "Merchant")
        raw_url = url.replace("postgresql+asyncpg://", "postgresql://")
        marketplace_url = raw_url
        pids: dict[str, int] = {}  # whose CPU time each push phase reports
        # On PostgreSQL, the database server's CPU time too: the floor's database apart (its pool keeps its
        # connections), and the rest of the server (ours, the sandbox's, every background process).
        databases = {"floor": database_name(floor_url)} if backend == "postgresql" else {}
        if args.sandbox == "remote":  # started before the seed: it migrates its own database as it starts
            sandbox_port = free_port()
            sandbox_env = {**service_env(sandbox_url, f"{directory}/sandbox-var"), "MARKETSYNC_LOG_LEVEL": "WARNING"}
            sandbox_app = [sys.executable, "-m", "marketsync", "sandbox", "serve", "--port", str(sandbox_port)]
            sandbox = servers.enter_context(
                process(sandbox_app, sandbox_env, f"http://127.0.0.1:{sandbox_port}/v1/feeds")
            )
            pids["sandbox"] = sandbox.pid
            env["MARKETSYNC_SANDBOX_URL"] = f"http://127.0.0.1:{sandbox_port}"
            marketplace_url = sandbox_url.replace("postgresql+asyncpg://", "postgresql://")
        marketplaces = await _marketplaces(raw_url, account)
        started = time.perf_counter()
        await seed_service(raw_url, account, marketplaces, products, args.listings, marketplace_url)
        results["seed_service_s"] = time.perf_counter() - started
        port, floor_port, noop_port = free_port(), free_port(), free_port()
        serve = [sys.executable, "-m", "marketsync", "serve", "--port", str(port)]
        if args.no_workers or args.worker_process:  # the workers elsewhere, or (diagnosis) none
            serve.append("--no-workers")
        served = servers.enter_context(process(serve, env, f"http://127.0.0.1:{port}/readyz"))
        pids["serve"] = served.pid
        if args.worker_process:
            pids["worker"] = servers.enter_context(worker_process(env)).pid
        token = httpx.post(
            f"http://127.0.0.1:{port}/connect/token",
            data={"grant_type": "client_credentials", "client_id": credential["client_id"],
                  "client_secret": credential["client_secret"]},
        ).json()["access_token"]  # fmt: skip
        started = time.perf_counter()
        await seed_floor(floor_url, token, products, args.listings)
        results["seed_floor_s"] = time.perf_counter() - started
        floor_env = {**os.environ, "FLOOR_DATABASE": floor_url}
        floor_cmd = [sys.executable, "-m", "uvicorn", "bench.floors.inventory:app", "--port", str(floor_port),
                     "--log-level", "warning", "--no-access-log"]  # fmt: skip
        pids["floor"] = servers.enter_context(
            process(floor_cmd, floor_env, f"http://127.0.0.1:{floor_port}/readyz")
        ).pid
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        bases = {"ours": port, "floor": floor_port}
        if "get" in args.only.split(","):  # the service's fixed cost of a request, served by a third process
            noop_cmd = [sys.executable, "-m", "bench.runs.foundation_http", "--serve-fixed-cost", str(noop_port)]
            servers.enter_context(process(noop_cmd, env, f"http://127.0.0.1:{noop_port}/readyz"))
            bases["no-op"] = noop_port
        clients = {
            side: await servers.enter_async_context(
                httpx.AsyncClient(base_url=f"http://127.0.0.1:{at}", headers={**headers, "x-side": side}, timeout=120)
            )
            for side, at in bases.items()
        }
        skus, _ = generated_products(products)
        yield Deployment(products, skus, clients, pids, databases, profiler(args.profile, pids, backend), results)
    shutil.rmtree(directory, ignore_errors=True)
    results["load_after"] = loadavg()


async def run_backend(backend: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every phase of `--only` on each catalogue size at once: one size, ours and the floor in turn; several sizes
    (issue 15 item 7's growth), every size's sides in turn, so that the sizes are compared at the same moments (run
    one after the other, the machine's load moved a size's figures more than the size did). Each side is named
    `ours`, `floor`, `no-op`, with several sizes `ours@{products}` and so on."""
    only = set(args.only.split(","))
    sizes = [int(count) for count in args.products.split(",")]
    async with contextlib.AsyncExitStack() as stack:
        deployments = [await stack.enter_async_context(deployment(backend, size, args)) for size in sizes]
        alone = deployments[0] if len(deployments) == 1 else None

        def side(name: str, d: Deployment) -> str:
            return name if alone is not None else f"{name}@{d.products}"

        def sides(*names: str) -> dict[str, httpx.AsyncClient]:
            return {side(name, d): d.clients[name] for d in deployments for name in names}

        for d in deployments:
            for name, client in d.clients.items():
                client.headers["x-side"] = side(name, d)
        skus = {side(name, d): d.skus for d in deployments for name in d.clients}

        def measured(phase: str) -> contextlib.AbstractContextManager[None]:
            """The phase's profile and CPU time a push, of one size's processes (several sizes: neither)."""
            if alone is None:
                return contextlib.nullcontext()
            within = contextlib.ExitStack()
            within.enter_context(alone.profile(phase))
            if phase in ("push", "drained", "propagate"):
                pushes = WARMUP + args.pushes
                within.enter_context(cpu_per_push(alone.pids, alone.databases, alone.results, phase, pushes))
            return within

        def split(phase: str, timings: dict[str, list[float]]) -> None:
            for d in deployments:
                mine = {name: timings[side(name, d)] for name in d.clients if side(name, d) in timings}
                d.results[phase] = summary(mine)

        if "walk" in only:
            with measured("walk"):
                walk, new_per_page = await bench_walk(sides("ours", "floor"), args.pages)
            split("walk", walk)
            for d in deployments:
                d.results["walk_new_per_page"] = new_per_page
        if "pages" in only:
            with measured("pages"):
                totals = {side(name, d): d.products for d in deployments for name in ("ours", "floor")}
                split("pages", await bench_pages(sides("ours", "floor"), args.pages, totals))
        if "get" in only:
            with measured("get"):
                split("get", await bench_get(sides("ours", "floor", "no-op"), skus, args.gets))
        for phase, propagate, seed in (("push", False, 1), ("drained", True, 3), ("propagate", True, 2)):
            if phase in only:
                with measured(phase):
                    timings = await bench_push(
                        sides("ours", "floor"), skus, args.pushes, propagate, seed, drained=phase == "drained"
                    )
                split(phase, timings)
    return [d.results for d in deployments]


@contextlib.contextmanager
def cpu_per_push(
    pids: dict[str, int], databases: dict[str, str], results: dict[str, Any], phase: str, pushes: int
) -> Iterator[None]:
    """Each process's CPU time during the phase, in ms per push (results[phase + "_cpu"]), and on PostgreSQL the
    database server's: each of `databases` (side -> database name) apart, and the rest as ours. In the drained phase
    the service's includes the jobs of every push but the last; back to back, those of the pushes the phase ended
    on."""
    meters: dict[str, Callable[[], float]] = {name: functools.partial(process_cpu_s, pid) for name, pid in pids.items()}
    if databases:
        meters["postgres (server)"] = postgres_cpu_s
        meters |= {f"postgres ({side})": functools.partial(postgres_cpu_s, name) for side, name in databases.items()}
    before = {name: meter() for name, meter in meters.items()}
    threads_before = thread_cpu_s(pids["serve"])
    yield
    spent = {name: (meter() - before[name]) * 1000 / pushes for name, meter in meters.items()}
    if databases:  # the server's time but the floor's: ours (the sandbox's database too, when apart)
        spent["postgres (ours)"] = spent.pop("postgres (server)") - sum(
            spent[f"postgres ({side})"] for side in databases
        )
    results[f"{phase}_cpu"] = {name: round(ms, 1) for name, ms in spent.items()}
    threads = thread_cpu_s(pids["serve"])
    results[f"{phase}_serve_threads_cpu"] = {
        name: round((used - threads_before.get(name, 0.0)) * 1000 / pushes, 1)
        for name, used in threads.items()
        if used - threads_before.get(name, 0.0) > 0
    }


@contextlib.contextmanager
def worker_process(env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """`marketsync worker` beside `serve --no-workers`: the scale-out deployment (DESIGN.md section 1)."""
    worker = subprocess.Popen([sys.executable, "-m", "marketsync", "worker"], env=env, cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        time.sleep(2)  # started: it polls the queue from then on
        yield worker
    finally:
        worker.terminate()
        worker.wait(timeout=30)


def profiler(
    directory: str | None, pids: dict[str, int], backend: str
) -> Callable[[str], contextlib.AbstractContextManager[None]]:
    """`with profile(phase)`: py-spy samples each of our processes during the phase (collapsed stacks in DIR:
    `{phase}-{backend}.txt` for serve, `{phase}-{backend}-{name}.txt` for the worker and the sandbox apart)."""

    @contextlib.contextmanager
    def profile(phase: str) -> Iterator[None]:
        if directory is None:
            yield
            return
        os.makedirs(directory, exist_ok=True)
        spies = []
        for name, pid in pids.items():
            if name == "floor":
                continue
            out = f"{directory}/{phase}-{backend}{'' if name == 'serve' else '-' + name}.txt"
            record = [str(Path(sys.executable).parent / "py-spy"), "record", "-p", str(pid), "-o", out, "-f", "raw",
                      "-r", "250", "--nonblocking"]  # fmt: skip
            spies.append(subprocess.Popen(record, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(1)
        try:
            yield
        finally:
            for spy in spies:
                spy.send_signal(signal.SIGINT)
            for spy in spies:
                spy.wait(timeout=60)

    return profile


async def _marketplaces(url: str, account: str) -> list[tuple[str, str, str]]:
    query = "SELECT id, platform, country FROM marketplace_connections WHERE account_id = {} ORDER BY platform"
    if url.startswith("sqlite:///"):
        db = sqlite3.connect(url.removeprefix("sqlite:///"))
        rows = db.execute(query.format("?"), (account,)).fetchall()
        db.close()
        return [tuple(row) for row in rows]
    connection = await asyncpg.connect(url)
    try:
        return [tuple(row) for row in await connection.fetch(query.format("$1"), account)]
    finally:
        await connection.close()


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print(f"\ncatalogue {args.products} products, {args.listings} listings each\n")
    print(
        "| backend | products | path | ours p50 ms | ours p99 ms | floor p50 ms | floor p99 ms | ratio p50 | load avg |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        load = f"{r['load_before']} → {r['load_after']}"
        for key, label in (
            ("push", "500-SKU push"),
            ("propagate", "500-SKU push, propagate to 4, back to back (workers sending the last pushes)"),
            ("drained", "500-SKU push, propagate to 4, the jobs of the last push done before the next"),
        ):
            if key in r:
                o, f = r[key]["ours"], r[key]["floor"]
                print(f"| {r['backend']} | {r['products']:,} | {label} | {o['p50']:.1f} | {o['p99']:.1f} "
                      f"| {f['p50']:.1f} | {f['p99']:.1f} "
                      f"| {o['p50'] / f['p50']:.2f}x | {load} |")  # fmt: skip
    for r in results:
        for key in ("push", "drained", "propagate"):
            if f"{key}_cpu" in r:
                spent = ", ".join(f"{name} {ms} ms" for name, ms in r[f"{key}_cpu"].items())
                print(f"CPU per push, {r['backend']} {key} (both sides' pushes, each process): {spent}")
                print(f"  serve's threads: {r[f'{key}_serve_threads_cpu']}")
        if "walk" in r:
            o, f = r["walk"]["ours"], r["walk"]["floor"]
            new = r["walk_new_per_page"]
            print(f"| {r['backend']} | {r['products']:,} | ModifiedSince walk page (200) "
                  f"| {o['p50']:.2f} ({new / o['p50'] * 1000:,.0f} "
                  f"products/s) | {o['p99']:.2f} | {f['p50']:.2f} ({new / f['p50'] * 1000:,.0f}/s) | {f['p99']:.2f} "
                  f"| {o['p50'] / f['p50']:.2f}x | {load} |")  # fmt: skip
        if "pages" in r:
            o, f = r["pages"]["ours"], r["pages"]["floor"]
            print(f"| {r['backend']} | {r['products']:,} | List without ModifiedSince, Offset page (200) "
                  f"| {o['p50']:.2f} | {o['p99']:.2f} | {f['p50']:.2f} | {f['p99']:.2f} "
                  f"| {o['p50'] / f['p50']:.2f}x | {load} |")  # fmt: skip
        if "get" in r:
            o, f, n = r["get"]["ours"], r["get"]["floor"], r["get"]["no-op"]
            print(f"| {r['backend']} | {r['products']:,} | GET /api/products/{{sku}} | {o['p50']:.2f} | {o['p99']:.2f} "
                  f"| {f['p50']:.2f} "
                  f"| {f['p99']:.2f} | {o['p50'] / f['p50']:.2f}x; {o['p50'] / n['p50']:.2f}x of the authenticated "
                  f"no-op ({n['p50']:.2f} / {n['p99']:.2f}) | {load} |")  # fmt: skip
    print()
    print(json.dumps(results))
    print_figures(figures_of(results, args))


# Each path's name in bench/all.py's growth table.
SERIES = {
    "push": "500-SKU push",
    "drained": "500-SKU push propagating, jobs done",
    "propagate": "500-SKU push propagating, back to back",
    "walk": "products ModifiedSince walk, page of 200",
    "pages": "products Offset page of 200, no ModifiedSince",
    "get": "GET /api/products/{sku}",
}


def figures_of(results: list[dict[str, Any]], args: argparse.Namespace) -> list[dict[str, Any]]:
    """The FIGURES line of `make bench` (bench/all.py): each path's p50 next to its floor's, with the target."""
    deployed = ""
    if args.worker_process:
        deployed += ", serve --no-workers and a worker process"
    if args.sandbox == "remote":
        deployed += ", the sandbox marketplaces as their own process"
    figures = []
    for r in results:
        figures += _figures_of_size(r, f"{r['products']:,} products{deployed}", args)
    return figures


def _figures_of_size(r: dict[str, Any], size: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    paths = (
        ("push", f"500-SKU push, every SKU changing, PropagateToListings false, {size}", "≤ 2.5x"),
        ("drained", f"500-SKU push, propagate to 4 connections (previous jobs done), {size}", "≤ 3x"),
        ("propagate", f"500-SKU push, propagate to 4 connections, back to back (workers busy), {size}", "≤ 3x"),
        ("walk", f"POST /api/products/List ModifiedSince walk, Limit 200, {size}, p50 per page", "≥ 25,000 products/s"),
        (
            "pages",
            f"POST /api/products/List without ModifiedSince, Limit 200, Offset 0-9,800, {size}",
            "growth ≤ 1.3x (item 7)",
        ),
        ("get", f"GET /api/products/{{sku}}, {size}", "≤ 2x the authenticated no-op"),
    )
    figures = []
    for key, what, target in paths:
        if key not in r:
            continue
        ours, floor = r[key]["ours"], r[key]["floor"]
        figure = {
            "what": f"{what} ({r['backend']}; load {r['load_before']} → {r['load_after']})",
            "ours": round(ours["p50"], 2),
            "p99_ms": round(ours["p99"], 2),
            "floor": round(floor["p50"], 2),
            "floor_name": "bench/floors/inventory.py",
            "ratio": round(ours["p50"] / floor["p50"], 2),
            "target": target,
            "unit": "ms",
            # bench/all.py puts the same series at two sizes side by side (issue 15 item 7: cost growth).
            "series": f"{SERIES[key]} ({r['backend']}{', worker process' if args.worker_process else ''}"
            f"{', sandbox apart' if args.sandbox == 'remote' else ''})",
            "rows": r["products"],
        }
        if key == "walk":
            figure["target"] += f" (ours {r['walk_new_per_page'] / ours['p50'] * 1000:,.0f}/s)"
        if f"{key}_cpu" in r:  # what each process spent a push: the propagation's work is the service's
            spent = ", ".join(f"{name} {ms:g}" for name, ms in r[f"{key}_cpu"].items())
            figure["target"] += f" (CPU ms a push: {spent})"
        if key == "get":
            figure["target"] += (
                f" (no-op {r['get']['no-op']['p50']:.2f} ms: {ours['p50'] / r['get']['no-op']['p50']:.2f}x)"
            )
        figures.append(figure)
    return figures


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--products",
        default="100000",
        help="catalogue size; several (10000,1000000): every size served at once, their requests in turn",
    )
    parser.add_argument("--listings", type=int, default=4, choices=range(0, 5))
    parser.add_argument("--pushes", type=int, default=40)
    parser.add_argument("--pages", type=int, default=150)
    parser.add_argument("--gets", type=int, default=300)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--only", default="walk,pages,get,push,propagate,drained")
    parser.add_argument("--no-workers", action="store_true", help="serve without workers (diagnosis only)")
    parser.add_argument(
        "--worker-process",
        action="store_true",
        help="serve --no-workers beside one `marketsync worker` process (the scale-out deployment)",
    )
    parser.add_argument(
        "--sandbox",
        choices=("in-process", "remote"),
        default="in-process",
        help="where the sandbox marketplaces run: inside serve (their feed handling shares our process and, on "
        "SQLite, our writer) or as `marketsync sandbox serve` with its own database, as a real marketplace would",
    )
    parser.add_argument("--profile", metavar="DIR", help="py-spy our processes during each phase (collapsed stacks)")
    args = parser.parse_args()
    before = cpu_probe_ms()
    results = [result for backend in args.backends.split(",") for result in await run_backend(backend, args)]
    print(f"CPU probe {before} ms before, {cpu_probe_ms()} ms after")
    report(results, args)


if __name__ == "__main__":
    asyncio.run(main())
