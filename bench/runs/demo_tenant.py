"""The hot paths on the tenant `marketsync demo` makes (issue 42), each next to its floor measured in the same run.

    .venv/bin/python -m bench.runs.demo_tenant [--backends sqlite,postgresql] [--pushes 60] [--reads 40]
        [--only push,propagate,list,get,orders,search,create] [--extra-products 0[,1000000]] [--profile DIR]
        [--os-cache warm|cold|as-is] [--state FILE]

As an outside run measures (issue 42): a fresh database; `marketsync demo --json` (four connected sandbox
marketplaces with listings, orders, taxonomies, webhooks; its schedules run in `serve`), then `admin dataflow set
--owner Merchant` for Price and Stock; `marketsync serve` with its workers in process and the rate limit raised; one
client connection (httpx) over HTTP to each server. Ours and the floors are served at once and called in turn,
request by request, who goes first alternating; **every `serve` but the one timed is paused (SIGSTOP) while a request
is timed**, so that a floor never shares the cores with our background work (the schedules, the propagation's
jobs) and the ratio is the cost of the request itself.

Phases (`--only`):
  - push: `--pushes` sequential pushes of 500 distinct demo SKUs, every price and quantity changing,
    PropagateToListings false; propagate: the same with PropagateToListings true, back to back (the in-process
    workers send the previous pushes' feeds to the sandbox meanwhile); floor: bench/floors.py;
  - list: POST /api/products/List Limit 200 at Offsets 0..(products - 200); floor: bench/floors.py;
  - get: GET /api/products/{sku}, next to the floor and the authenticated no-op (bench/foundation_http.py);
  - orders: POST /api/orders/List Limit 200 (the demo's orders); floor: bench/floor_orders.py;
  - search: POST /api/product-types/Search on the P2 (DE) taxonomy (3,916 leaves), Limit 50, a mix of terms;
  - create: POST /api/products/Create on P1 (UK) without a category, a new SKU each time.
Search and create have absolute goals (issue 42); their figures carry the CPU probe.

`--extra-products N[,M]`: the demo tenant plus N bulk-loaded products, each listed on the four connections (and at
the sandbox marketplaces), the floor holding the same SKUs; several sizes are served at once (the growth of
issue 42 item 3: `--only growth` in bench/all.py). The seeded products count as mirrored (the listing mirror's
schedule last ran now): the demo's other schedules run. Every timing is kept in round order, and the largest size's
figures carry `paired_growth`: ours' growth over the floor's taken round by round (its median and middle half),
beside the ratio of the medians.

`--os-cache` (SQLite): before each phase every side's database file is read into the operating system's page cache
(`warm`, the default), dropped from it (`cold`), or left as the earlier phases and the machine left it (`as-is`).
Ours holds the whole tenant (orders, listings, the sandbox marketplaces: 7 GB beside a million products) where the
floor holds only the operation's table (0.5 GB). This machine pages out file pages left untouched for about a minute
(its kernel runs DAMON's `pageout` on pages idle for 12 aggregation intervals of 5 s) even with 20 GB free: during the
first listing mirror's minutes ours' products are paged out and the floor's small file stays cached, and what a phase
then measures is which file the machine kept (docs/decisions/0467-bench-os-cache-state.md). Both sides get the same.

Resumable: each finished backend is kept in `--state` (default var/bench/demo_tenant-KEY.json, keyed by the arguments
and the commit), and a rerun with the same arguments on the same commit measures only what is missing.
Diagnosis: BENCH_RAW=1 prints every timing; BENCH_LOGS=DIR keeps the servers' logs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
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
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import orjson

# The floors (DESIGN.md section 6) and the pieces shared with the catalogue's benchmark.
from bench.floors import inventory as floors
from bench.floors import orders as floor_orders
from bench.runs import inventory_http as catalogue_http
from bench.runs import orders_list
from bench.runs.catalog_http import SEARCHES
from bench.runs.foundation_http import FIXED_COST_PATH, service_env
from bench.support import (
    BENCH_KEYS,
    REPO,
    cpu_probe_ms,
    create_scratch_pg,
    drop_scratch_pg,
    free_port,
    percentile,
    print_figures,
    process,
)
from marketsync.config import Settings
from marketsync.marketplaces.registry import compose_connectors
from marketsync.runtime import Runtime

INVENTORY_FLOOR_APP = "bench.floors.inventory:app"
ORDERS_FLOOR_APP = "bench.floors.orders:app"
NOOP_SERVER = ["-m", "bench.runs.foundation_http", "--serve-fixed-cost"]
BATCH = 500
WARMUP = 5
TENANT = "the demo's tenant (`marketsync demo`: 4 marketplaces with listings, schedules running, Data Flow Merchant)"
STATE_DIR = REPO / "var" / "bench"
# The wire form of a timestamp the floor's SQLite table keeps (bench/floors.py wire_time).
WIRE = "%Y-%m-%dT%H:%M:%S.%fZ"


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# -- the tenant ---------------------------------------------------------------------------------------------------


@dataclass
class Side:
    """One server a phase calls: its client and, for `serve`, its pid (paused while another side is timed)."""

    name: str
    client: httpx.AsyncClient
    pid: int | None = None


@dataclass
class Tenant:
    """The demo's tenant in one database, served by one `serve`."""

    url: str  # for the raw driver
    account_id: str
    marketplaces: dict[str, str]  # platform -> connection id
    pid: int
    port: int
    token: str


def cli(tree: str | None) -> list[str]:
    """How to run `marketsync` from this tree, or from another one (`-P`: the working directory's package never
    shadows the tree's)."""
    return [sys.executable, "-m", "marketsync"] if tree is None else [sys.executable, "-P", "-m", "marketsync"]


def tree_env(env: dict[str, str], tree: str | None) -> dict[str, str]:
    return env if tree is None else {**env, "PYTHONPATH": f"{tree}:{tree}/sdk/python"}


def run_cli(env: dict[str, str], tree: str | None, *args: str) -> dict[str, Any]:
    out = subprocess.run([*cli(tree), *args, "--json"], env=env, cwd=REPO, check=True, capture_output=True)
    parsed: dict[str, Any] = json.loads(out.stdout)
    return parsed


async def demo_tenant(
    directory: str,
    url: str,
    extra: int,
    args: argparse.Namespace,
    servers: contextlib.ExitStack,
    tree: str | None = None,
) -> tuple[Tenant, dict[str, str]]:
    """`marketsync demo`, Data Flow Merchant for Price and Stock, `extra` products and orders bulk-loaded, then
    `serve` (workers in process, rate limit raised) on `url`: the tenant and the demo's answer."""
    env = tree_env(service_env(url, tempfile.mkdtemp(prefix="var-", dir=directory)), tree)
    env["MARKETSYNC_LOG_LEVEL"] = os.environ.get("BENCH_SERVICE_LOG_LEVEL", "WARNING")
    if os.environ.get("BENCH_MAX_WAIT"):
        env["MARKETSYNC_REQUESTS_FIRST_MAX_WAIT_S"] = os.environ["BENCH_MAX_WAIT"]
    demo = run_cli(env, tree, "demo")
    account = str(demo["AccountId"])
    for kind in ("Price", "Stock"):
        run_cli(env, tree, "admin", "dataflow", "set", "--account", account, "--kind", kind, "--owner", "Merchant")
    marketplaces = {str(m["Platform"]): str(m["MarketplaceId"]) for m in demo["Marketplaces"]}
    if extra:
        await add_products(raw(url), account, marketplaces, extra)
        await add_orders(raw(url), account, marketplaces["P1"], extra)
    port = free_port()
    serve = servers.enter_context(
        process([*cli(tree), "serve", "--port", str(port), *args.serve_option], env, f"http://127.0.0.1:{port}/readyz")
    )
    return Tenant(raw(url), account, marketplaces, serve.pid, port, bearer_token(port, demo)), env


def bearer_token(port: int, demo: dict[str, Any]) -> str:
    """The demo credential's token; a server just started on a loaded machine may answer 503 once or twice."""
    form = {"grant_type": "client_credentials", "client_id": demo["client_id"], "client_secret": demo["client_secret"]}
    for _ in range(10):
        response = httpx.post(f"http://127.0.0.1:{port}/connect/token", data=form, timeout=60)
        if response.status_code == 200:
            return str(response.json()["access_token"])
        time.sleep(1)
    raise RuntimeError(f"no token from the service: {response.status_code} {response.text[:300]}")


@dataclass
class Deployment:
    """The demo tenant (plus `extra` bulk-loaded products) served by `serve`, its floors and the no-op app."""

    backend: str
    extra: int
    url: str  # the service's database, for the raw driver
    skus: list[str]
    account_id: str
    marketplaces: dict[str, str]  # platform -> connection id
    sides: dict[str, Side] = field(default_factory=dict)
    # With --baseline: the same tenant served by another tree's code (side "base"), its own database.
    base: Tenant | None = None
    results: dict[str, Any] = field(default_factory=dict)
    # Every side's SQLite database file (ours, the baseline's, the floors'): the OS cache's state is set on them.
    files: list[str] = field(default_factory=list)

    @property
    def products(self) -> int:
        return len(self.skus)


@contextlib.asynccontextmanager
async def scratch(backend: str, directory: str) -> AsyncIterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tempfile.mkdtemp(prefix='db-', dir=directory)}/bench.db"
        return
    name, url = await create_scratch_pg("ms_demo_tenant")
    try:
        yield url
    finally:
        await drop_scratch_pg(name)


def raw(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


async def fetch(url: str, query: str, *values: Any) -> list[tuple[Any, ...]]:
    """Rows of one query on the raw driver (`?` placeholders, rewritten to `$n` for asyncpg)."""
    if url.startswith("sqlite:///"):
        db = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            return [tuple(row) for row in db.execute(query, values).fetchall()]
        finally:
            db.close()
    parts = query.split("?")
    query = parts[0] + "".join(f"${i}{part}" for i, part in enumerate(parts[1:], start=1))
    connection = await asyncpg.connect(url)
    try:
        return [tuple(row) for row in await connection.fetch(query, *values)]
    finally:
        await connection.close()


async def seed_floor(url: str, floor_url: str, account_id: str, token: str, extra: int) -> None:
    """The inventory floor's tables holding the tenant's products and listings as the service holds them: the
    `extra` bulk-loaded products generated as bench/runs/inventory_http.py seeds them (numbered 0..extra-1), then the
    demo's read back from the service's database (the same SKUs, quantities, modification times and listings)."""
    if extra:
        await catalogue_http.seed_floor(floor_url, token, extra, len(catalogue_http.PLATFORMS))
    demo = "p.account_id = ? AND p.sku NOT LIKE 'BENCH-%'"  # the generated products' SKUs: inventory_http's
    products = await fetch(url, f"SELECT p.id, p.sku, p.price, p.quantity, p.modified_at FROM products p WHERE {demo} "
                           "ORDER BY p.id", account_id)  # fmt: skip
    listings = await fetch(
        url,
        "SELECT l.product_id, m.platform, m.country, l.listing_id, l.external_sku, l.listing_url FROM listings l "
        "JOIN marketplace_connections m ON m.id = l.marketplace_id JOIN products p ON p.id = l.product_id "
        f"WHERE {demo}",
        account_id,
    )
    number = {row[0]: extra + n for n, row in enumerate(products)}
    sqlite = floor_url.startswith("sqlite:///")

    def moment(value: Any) -> Any:
        at = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
        return at.replace(tzinfo=None).strftime(WIRE) if sqlite else at.replace(tzinfo=None)

    product_rows = [(number[pid], sku, sku.lower(), price, quantity or 0, moment(modified))
                    for pid, sku, price, quantity, modified in products]  # fmt: skip
    listing_rows = [(number[pid], *rest) for pid, *rest in listings if pid in number]
    if sqlite:
        db = sqlite3.connect(floor_url.removeprefix("sqlite:///"), isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        if not extra:  # otherwise the generated part made them
            for statement in floors.SQLITE_SCHEMA:
                db.execute(statement)
            db.execute("INSERT INTO tokens VALUES (?, ?)", (floors.token_hash(token), "floor"))
        db.execute("BEGIN")
        db.executemany("INSERT INTO products VALUES (?, ?, ?, ?, ?, ?)", product_rows)
        db.executemany("INSERT INTO listings VALUES (?, ?, ?, ?, ?, ?)", listing_rows)
        db.execute("COMMIT")
        db.execute("ANALYZE")
        db.close()
        return
    connection = await asyncpg.connect(floor_url)
    try:
        if not extra:
            for statement in floors.POSTGRES_SCHEMA:
                await connection.execute(statement)
            await connection.execute("INSERT INTO tokens VALUES ($1, $2)", floors.token_hash(token), "floor")
        await connection.copy_records_to_table("products", records=product_rows)
        await connection.copy_records_to_table("listings", records=listing_rows)
        await connection.execute(catalogue_http.VACUUM_AFTER_LOAD)
    finally:
        await connection.close()


async def add_products(url: str, account_id: str, marketplaces: dict[str, str], count: int) -> None:
    """`count` more products (BENCH-nnnnnnn), each listed on the four connections and at the sandbox marketplaces,
    bulk-loaded with the raw driver (bench/catalogue_http.py's seed), before `serve` starts."""
    connections = [(marketplaces[platform], platform, country) for platform, country in catalogue_http.PLATFORMS]
    await catalogue_http.seed_service(url, account_id, connections, count, len(connections), url)


@contextlib.asynccontextmanager
async def deployment(backend: str, extra: int, directory: str, args: argparse.Namespace) -> AsyncIterator[Deployment]:
    async with (
        scratch(backend, directory) as url,
        scratch(backend, directory) as floor_url,
        scratch(backend, directory) as base_url,
        contextlib.AsyncExitStack() as servers,
    ):
        started = time.perf_counter()
        processes = servers.enter_context(contextlib.ExitStack())
        ours, env = await demo_tenant(directory, url, extra, args, processes)
        base = None
        if args.baseline:
            base, _ = await demo_tenant(directory, base_url, extra, args, processes, tree=args.baseline)
        seeded_s = time.perf_counter() - started
        floor_port, orders_port, noop_port = free_port(), free_port(), free_port()
        await seed_floor(ours.url, raw(floor_url), ours.account_id, ours.token, extra)
        orders_url = await orders_floor(ours.url, raw(floor_url), ours.account_id)
        floor_env = {**os.environ, "FLOOR_DATABASE": raw(floor_url)}
        orders_env = {**os.environ, "FLOOR_DATABASE": orders_url, "FLOOR_HASH_KEY": "floor-cursor-key"}
        uvicorn = [sys.executable, "-m", "uvicorn", "--log-level", "warning", "--no-access-log", "--port"]
        processes.enter_context(
            process(
                [*uvicorn, str(floor_port), INVENTORY_FLOOR_APP], floor_env, f"http://127.0.0.1:{floor_port}/readyz"
            )
        )
        processes.enter_context(
            process([*uvicorn, str(orders_port), ORDERS_FLOOR_APP], orders_env,
                    f"http://127.0.0.1:{orders_port}/docs-none")
        )  # fmt: skip
        processes.enter_context(
            process([sys.executable, *NOOP_SERVER, str(noop_port)], env, f"http://127.0.0.1:{noop_port}/readyz")
        )
        bearer = {"Authorization": f"Bearer {ours.token}", "Content-Type": "application/json"}
        bases: dict[str, tuple[int, dict[str, str], int | None]] = {
            "ours": (ours.port, bearer, ours.pid),
            "floor": (floor_port, bearer, None),
            "orders floor": (orders_port, {"Authorization": f"Bearer {ORDERS_FLOOR_TOKEN}"}, None),
            "no-op": (noop_port, bearer, None),
        }
        if base is not None:
            bases["base"] = (base.port, {**bearer, "Authorization": f"Bearer {base.token}"}, base.pid)
        sides = {}
        for name, (at, headers, pid) in bases.items():
            # One connection per server: the client keeps it alive between requests.
            limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
            client = await servers.enter_async_context(
                httpx.AsyncClient(base_url=f"http://127.0.0.1:{at}", headers=headers, timeout=120, limits=limits)
            )
            sides[name] = Side(name, client, pid)
        query = "SELECT sku FROM products WHERE account_id = ? ORDER BY sku"
        skus = [row[0] for row in await fetch(ours.url, query, ours.account_id)]
        if base is not None:  # the demo's catalogue is the same at every run: the sides push the same SKUs
            assert [row[0] for row in await fetch(base.url, query, base.account_id)] == skus
        d = Deployment(backend, extra, ours.url, skus, ours.account_id, ours.marketplaces, sides, base=base)
        sides_urls = [ours.url, floor_url, orders_url] + ([base.url] if base is not None else [])
        d.files = sorted({u.removeprefix("sqlite:///") for u in sides_urls if u.startswith("sqlite:///")})
        d.results.update(
            backend=backend,
            extra=extra,
            products=len(skus),
            load_before=loadavg(),
            seeded_s=round(seeded_s, 1),
            os_cache=args.os_cache,
        )
        try:
            yield d
        finally:
            d.results["load_after"] = loadavg()


ORDERS_FLOOR_TOKEN = "floor-orders-token"


async def orders_floor(url: str, floor_url: str, account_id: str) -> str:
    """The orders floor's table: the service's stored order documents, copied inside the database engine
    (bench/runs/orders_http.py's way; on PostgreSQL into the service's own database, as there). Its database URL."""
    if floor_url.startswith("sqlite:///"):
        db = sqlite3.connect(floor_url.removeprefix("sqlite:///"))
        for statement in floor_orders.SQLITE_SCHEMA:
            db.execute(statement)
        db.execute("ATTACH DATABASE ? AS service", (url.removeprefix("sqlite:///"),))
        with db:
            db.execute("INSERT INTO main.orders SELECT account_id, updated_at, id, document FROM service.orders "
                       "WHERE account_id = ?", (account_id,))  # fmt: skip
            db.execute("INSERT INTO tokens VALUES (?, ?)", (floor_orders.token_hash(ORDERS_FLOOR_TOKEN), account_id))
        db.execute("DETACH DATABASE service")
        db.execute("ANALYZE")
        db.close()
        return floor_url
    connection = await asyncpg.connect(url)
    try:
        for statement in floor_orders.POSTGRES_SCHEMA:
            await connection.execute(statement)
        await connection.execute(
            "INSERT INTO floor_orders SELECT account_id, updated_at, id, document FROM orders WHERE account_id = $1",
            account_id,
        )
        await connection.execute(
            "INSERT INTO floor_tokens VALUES ($1, $2)", floor_orders.token_hash(ORDERS_FLOOR_TOKEN), account_id
        )
        await connection.execute("ANALYZE floor_orders")
    finally:
        await connection.close()
    return url


async def add_orders(url: str, account_id: str, marketplace_id: str, count: int) -> None:
    """`count` more orders at the P1 connection, their documents stored as the `orders.documents` schedule stores them
    (bench/runs/orders_list.py's generator), before `serve` starts."""
    settings = Settings(**BENCH_KEYS, database_url=url, var_dir=tempfile.mkdtemp(prefix="msbench-orders-"),
                        log_level="WARNING")  # fmt: skip
    rt = compose_connectors(Runtime.create(settings))
    try:
        await orders_list.generate(rt, url, account_id, marketplace_id, count)
        await orders_list.store_documents(rt)
    finally:
        await rt.close()


async def idle_workers(d: Deployment) -> None:
    """Until no job of the tenant is runnable or running (`serve`'s workers idle): at most 10 minutes, and 150 µs more
    a listing (the demo's connections queue a first listing mirror, which reads every seeded listing: 4,000,000 of them
    beside a million products)."""
    timeout_s = 600 + 150e-6 * d.products * len(d.marketplaces)
    deadline = time.monotonic() + timeout_s
    query = "SELECT count(*) FROM jobs WHERE account_id = ? AND status IN ('Published', 'InProcess')"
    tenants = [(d.url, d.account_id)] + ([(d.base.url, d.base.account_id)] if d.base is not None else [])
    started = time.monotonic()
    while time.monotonic() < deadline:
        if not any([(await fetch(url, query, account))[0][0] for url, account in tenants]):
            print(f"workers idle after {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
            return
        await asyncio.sleep(0.2)
    raise TimeoutError(f"the workers did not finish the tenant's jobs within {timeout_s:g} s")


def set_os_cache(files: list[str], state: str) -> float:
    """Every file read into the OS page cache (`warm`) or dropped from it (`cold`); `as-is` leaves it. Seconds taken."""
    started = time.monotonic()
    for path in files if state != "as-is" else []:
        descriptor = os.open(path, os.O_RDONLY)
        try:
            if state == "cold":
                os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
            else:
                while os.read(descriptor, 1 << 20):
                    pass
        finally:
            os.close(descriptor)
    return time.monotonic() - started


# -- alternation, ours paused -------------------------------------------------------------------------------------


@contextlib.contextmanager
def others_paused(sides: list[Side], timed: Side) -> Iterator[None]:
    """Every `serve` but the timed side's stopped (SIGSTOP) for the request, continued after it."""
    paused = [side.pid for side in sides if side.pid is not None and side is not timed]
    for pid in paused:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in paused:
            os.kill(pid, signal.SIGCONT)


Call = Callable[[Side, int], Awaitable[None]]


async def alternate(sides: list[Side], call: Call, rounds: int, warmup: int) -> dict[str, list[float]]:
    """`call(side, round)` on every side each round, who goes first alternating; ms per call, warm-up dropped."""
    timings: dict[str, list[float]] = {side.name: [] for side in sides}
    for round_number in range(warmup + rounds):
        for side in sides if round_number % 2 == 0 else sides[::-1]:
            with others_paused(sides, side):
                started = time.perf_counter()
                await call(side, round_number)
                elapsed = (time.perf_counter() - started) * 1000
            if round_number >= warmup:
                timings[side.name].append(elapsed)
            await asyncio.sleep(0)
    return timings


def summary(timings: dict[str, list[float]]) -> dict[str, dict[str, Any]]:
    if os.environ.get("BENCH_RAW"):
        print({name: [round(x, 1) for x in t] for name, t in timings.items()}, file=sys.stderr)
    # Every timing kept, in round order: the growth step pairs each round's sides (paired_growth).
    return {name: {"p50": statistics.median(t), "p99": percentile(t, 0.99), "n": len(t), "t": [round(x, 4) for x in t]}
            for name, t in timings.items()}  # fmt: skip


def named(d: Deployment, many: bool, *names: str) -> list[Side]:
    """The deployment's sides, renamed by size when several sizes are served at once."""
    chosen = []
    for name in names:
        side = d.sides[name]
        chosen.append(Side(f"{name}@{d.products}" if many else name, side.client, side.pid))
    return chosen


def split(deployments: list[Deployment], many: bool, phase: str, timings: dict[str, list[float]]) -> None:
    for d in deployments:
        mine = {}
        for name in d.sides:
            key = f"{name}@{d.products}" if many else name
            if key in timings:
                mine[name] = timings[key]
        d.results[phase] = summary(mine)


# -- the phases ---------------------------------------------------------------------------------------------------


def push_bodies(skus: list[str], pushes: int, propagate: bool, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    bodies = []
    for round_number in range(WARMUP + pushes):
        step = seed * 1000 + round_number
        items = [{"Sku": sku, "Price": 11 + step + (i % 100) / 100, "Quantity": 1000 + step}
                 for i, sku in enumerate(rng.sample(skus, BATCH))]  # fmt: skip
        bodies.append(orjson.dumps({"Items": items, "PropagateToListings": propagate}))
    return bodies


async def bench_push(sides: list[Side], skus: dict[str, list[str]], pushes: int, propagate: bool,
                     seed: int) -> dict[str, list[float]]:  # fmt: skip
    bodies = {side.name: push_bodies(skus[side.name], pushes, propagate, seed) for side in sides}

    async def call(side: Side, round_number: int) -> None:
        response = await side.client.post("/api/inventory/price-quantity", content=bodies[side.name][round_number])
        body = response.json()
        assert response.status_code == 200 and body["Updated"] == BATCH and not body["Warnings"], body
        assert bool(body["JobIds"]) == (propagate and side.name.startswith(("ours", "base"))), body["JobIds"]

    return await alternate(sides, call, pushes, WARMUP)


async def bench_list(sides: list[Side], reads: int, products: int) -> dict[str, list[float]]:
    """Pages of 200 without ModifiedSince at offsets within the smallest catalogue (the demo's 3,000 products)."""
    offsets = list(range(0, products - 199, 200))

    async def call(side: Side, round_number: int) -> None:
        offset = offsets[round_number * 7 % len(offsets)]
        response = await side.client.post("/api/products/List", content=orjson.dumps({"Limit": 200, "Offset": offset}))
        page = response.json()
        assert response.status_code == 200 and len(page["Products"]) == 200, page

    return await alternate(sides, call, reads, 3)


async def bench_walk(sides: list[Side], reads: int, products: dict[str, int]) -> dict[str, list[float]]:
    """A ModifiedSince walk, Limit 200, from the oldest product (the growth step's walk); a side's walk starts again
    from the oldest before its page would come short (`products`: each side's catalogue)."""
    start = "2000-01-01T00:00:00Z"
    cursors = {side.name: start for side in sides}
    walked = dict.fromkeys(cursors, 0)

    async def call(side: Side, _round: int) -> None:
        body = orjson.dumps({"ModifiedSince": cursors[side.name], "Limit": 200})
        response = await side.client.post("/api/products/List", content=body)
        page = response.json()
        assert response.status_code == 200 and len(page["Products"]) == 200, page
        # Each page after the first repeats the last one's last product (ModifiedSince is inclusive).
        walked[side.name] += 199
        cursors[side.name] = page["Products"][-1]["LastModifiedDate"]
        if walked[side.name] + 400 > products[side.name]:
            cursors[side.name], walked[side.name] = start, 0

    return await alternate(sides, call, reads, 2)


async def bench_get(sides: list[Side], skus: dict[str, list[str]], reads: int) -> dict[str, list[float]]:
    rng = random.Random(5)
    chosen = {side.name: [rng.choice(skus[side.name]) for _ in range(reads + 10)] for side in sides}

    async def call(side: Side, round_number: int) -> None:
        if side.name.startswith("no-op"):
            assert (await side.client.get(FIXED_COST_PATH)).status_code == 200
            return
        sku = chosen[side.name][round_number]
        response = await side.client.get(f"/api/products/{sku}")
        assert response.status_code == 200 and response.json()["Product"]["Sku"] == sku, response.text

    return await alternate(sides, call, reads, 10)


async def bench_orders(sides: list[Side], reads: int) -> dict[str, list[float]]:
    async def call(side: Side, _round: int) -> None:
        response = await side.client.post("/api/orders/List", json={"Limit": 200})
        assert response.status_code == 200 and response.json()["Orders"], response.text

    return await alternate(sides, call, reads, 5)


async def bench_search(sides: list[Side], marketplace: dict[str, str], reads: int) -> dict[str, list[float]]:
    async def call(side: Side, round_number: int) -> None:
        text = SEARCHES[round_number % len(SEARCHES)]
        body: dict[str, Any] = {"MarketplaceId": marketplace[side.name], "Limit": 50, "Offset": 0}
        if text is not None:
            body["SearchText"] = text
        response = await side.client.post("/api/product-types/Search", json=body)
        assert response.status_code == 200, response.text

    return await alternate(sides, call, reads, len(SEARCHES))


async def bench_create(sides: list[Side], marketplace: dict[str, str], reads: int, tag: str) -> dict[str, list[float]]:
    async def call(side: Side, round_number: int) -> None:
        sku = f"PERF-{tag}-{side.name}-{round_number:04d}".replace("@", "-")
        response = await side.client.post(
            "/api/products/Create", json={"Sku": sku, "MarketplaceId": marketplace[side.name], "Quantity": 5}
        )
        assert response.status_code == 200, response.text

    return await alternate(sides, call, reads, 5)


async def run_backend(backend: str, sizes: list[int], args: argparse.Namespace) -> list[dict[str, Any]]:
    only = set(args.only.split(","))
    directory = tempfile.mkdtemp(prefix="msbench-demo-")
    try:
        async with contextlib.AsyncExitStack() as stack:
            deployments = [await stack.enter_async_context(deployment(backend, n, directory, args)) for n in sizes]
            many = len(deployments) > 1

            def sides(*names: str) -> list[Side]:
                return [side for d in deployments for side in named(d, many, *names)]

            def ours(*others: str) -> tuple[str, ...]:
                """Ours, the baseline tree's when there is one, and the others."""
                return ("ours", *(["base"] if args.baseline else []), *others)

            def per_side(value: Callable[[Deployment], Any], *names: str) -> dict[str, Any]:
                return {side.name: value(d) for d in deployments for side in named(d, many, *names)}

            def base_sites(platform: str) -> dict[str, str]:
                return {side.name: d.base.marketplaces[platform] for d in deployments if d.base is not None
                        for side in named(d, many, "base")}  # fmt: skip

            skus = per_side(lambda d: d.skus, *ours("floor", "no-op"))

            async def settled(phase: str) -> contextlib.AbstractContextManager[None]:
                """Each phase starts with the workers idle: the jobs an earlier phase queued (the propagation's
                feeds) are done first, untimed, every `serve` running; then the phase is profiled."""
                for d in deployments:
                    if "--no-workers" not in args.serve_option:
                        await idle_workers(d)
                for d in deployments:
                    took = set_os_cache(d.files, args.os_cache)
                    if d.files and args.os_cache != "as-is":
                        print(f"{phase}: OS cache {args.os_cache} in {took:.1f} s", file=sys.stderr, flush=True)
                return profile(phase)

            profile = profiler(args.profile, deployments[0], backend) if not many else _no_profile
            if "push" in only:
                with await settled("push"):
                    split(deployments, many, "push", await bench_push(sides(*ours("floor")), skus, args.pushes,
                                                                      False, 1))  # fmt: skip
            if "propagate" in only:
                with await settled("propagate"):
                    split(deployments, many, "propagate", await bench_push(sides(*ours("floor")), skus, args.pushes,
                                                                           True, 2))  # fmt: skip
            if "list" in only:
                with await settled("list"):
                    smallest = min(d.products for d in deployments)
                    split(deployments, many, "list", await bench_list(sides(*ours("floor")), args.reads, smallest))
            if "walk" in only:
                with await settled("walk"):
                    catalogues = per_side(lambda d: d.products, *ours("floor"))
                    split(deployments, many, "walk", await bench_walk(sides(*ours("floor")), args.reads, catalogues))
            if "get" in only:
                with await settled("get"):
                    split(deployments, many, "get", await bench_get(sides(*ours("floor", "no-op")), skus, args.reads))
            if "orders" in only:
                with await settled("orders"):
                    split(deployments, many, "orders", await bench_orders(sides(*ours("orders floor")), args.reads))
            if "search" in only:
                with await settled("search"):
                    p2 = {**per_side(lambda d: d.marketplaces["P2"], "ours"), **base_sites("P2")}
                    split(deployments, many, "search", await bench_search(sides(*ours()), p2, args.reads))
            if "create" in only:
                with await settled("create"):
                    p1 = {**per_side(lambda d: d.marketplaces["P1"], "ours"), **base_sites("P1")}
                    split(deployments, many, "create", await bench_create(sides(*ours()), p1, args.reads, backend))
        return [d.results for d in deployments]
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def _no_profile(_phase: str) -> Iterator[None]:
    yield


def profiler(
    directory: str | None, d: Deployment, backend: str
) -> Callable[[str], contextlib.AbstractContextManager[None]]:
    """py-spy on `serve` during each phase: DIR/{phase}-{backend}.txt (collapsed stacks; `make bench-tools`)."""
    if directory is None:
        return _no_profile
    pid = d.sides["ours"].pid
    assert pid is not None
    return catalogue_http.profiler(directory, {"serve": pid}, backend)


# -- figures ------------------------------------------------------------------------------------------------------

PATHS = (
    # key, what, goal (None: against a floor or the no-op by ratio), the floor's side, the ratio's goal
    ("push", "500-SKU push, every value changing, PropagateToListings false", "floor", 2.5),
    ("propagate", "500-SKU push propagating to 4 connections, back to back", "floor", 3.0),
    ("list", "POST /api/products/List Limit 200 (Offset pages)", "floor", None),
    ("walk", "POST /api/products/List ModifiedSince walk, Limit 200", "floor", None),
    ("get", "GET /api/products/{sku}", "floor", None),
    ("orders", "POST /api/orders/List Limit 200", "orders floor", None),
    ("search", "POST /api/product-types/Search, P2 DE (3,916 leaves), Limit 50", None, None),
    ("create", "POST /api/products/Create on P1 UK, no category", None, None),
)
# Each path's series in bench/all.py's growth table.
SERIES = {"push": "500-SKU push", "walk": "products ModifiedSince walk, page of 200", "get": "GET /api/products/{sku}",
          "orders": "orders page of 200", "search": "category search", "list": "products Offset page of 200",
          "propagate": "500-SKU push propagating"}  # fmt: skip


def paired_growth(small: dict[str, Any], large: dict[str, Any], floor_side: str) -> dict[str, float]:
    """Ours' growth over the floor's, round by round: in round r, (ours large / ours small) / (floor large / floor
    small), the four requests timed one after the other within a few tens of milliseconds. The median and quartiles
    over the rounds: a slower minute moves the four alike and cancels out; what is left is how far single requests
    scatter. The goal is read on the ratio of the medians (figures_of); this is reported beside it."""
    rounds = zip(small["ours"]["t"], large["ours"]["t"], small[floor_side]["t"], large[floor_side]["t"], strict=True)
    ratios = sorted((ours_l / ours_s) / (floor_l / floor_s) for ours_s, ours_l, floor_s, floor_l in rounds)
    q1, median, q3 = statistics.quantiles(ratios, n=4)
    return {"median": round(median, 3), "q1": round(q1, 3), "q3": round(q3, 3), "rounds": len(ratios)}


def figures_of(results: list[dict[str, Any]], probe: tuple[float, float], many: bool) -> list[dict[str, Any]]:
    figures = []
    by_backend = {(r["backend"], r["products"]): r for r in results}
    largest = {r["backend"]: max(s["products"] for s in results if s["backend"] == r["backend"]) for r in results}
    smallest = {r["backend"]: min(s["products"] for s in results if s["backend"] == r["backend"]) for r in results}
    for r in results:
        size = f"{r['products']:,} products" + (f" ({r['extra']:,} bulk-loaded)" if r["extra"] else "")
        load = f"load {r['load_before']} → {r['load_after']}; CPU probe {probe[0]} → {probe[1]} ms"
        sqlite_cache = r["backend"] == "sqlite" and "os_cache" in r
        cache = f"; SQLite files {r['os_cache']} in the OS cache" if sqlite_cache else ""
        context = f"demo tenant, {r['backend']}; {size}{cache}; {load}"
        for key, what, floor_side, ratio_goal in PATHS:
            if key not in r:
                continue
            ours = r[key]["ours"]
            figure: dict[str, Any] = {
                "what": f"{what}, p50 ({context})",
                "ours": round(ours["p50"], 2),
                "p99_ms": round(ours["p99"], 2),
                "unit": "ms",
                "tenant": "demo",
            }
            if floor_side is not None:
                floor = r[key][floor_side]
                figure["floor"], figure["ratio"] = round(floor["p50"], 2), round(ours["p50"] / floor["p50"], 2)
                figure["floor_name"] = "bench/floors/orders.py" if key == "orders" else "bench/floors/inventory.py"
            if ratio_goal is not None:
                figure["target"] = f"≤ {ratio_goal:g}x"
            elif key in ("list", "walk"):
                figure["target"] = f"≥ 25,000 products/s (ours {200 / ours['p50'] * 1000:,.0f}/s)"
            elif key == "get":
                noop = r[key]["no-op"]["p50"]
                figure["target"] = f"≤ 2x the authenticated no-op (no-op {noop:.2f} ms: {ours['p50'] / noop:.2f}x)"
            elif key == "orders":
                sqlite = by_backend.get(("sqlite", r["products"]))
                figure["target"] = "PostgreSQL ≤ 2x SQLite's"
                if r["backend"] == "postgresql" and sqlite is not None and "orders" in sqlite:
                    figure["target"] += f" ({ours['p50'] / sqlite['orders']['ours']['p50']:.2f}x)"
            elif key == "search":
                figure["target"] = "≤ 3 ms"
            elif key == "create":
                figure["target"] = "≤ 10 ms"
            if many:
                figure["series"] = f"{SERIES[key]} ({r['backend']}, demo tenant)"
                figure["rows"] = r["products"]
                small = by_backend[(r["backend"], smallest[r["backend"]])]
                if floor_side is not None and r["products"] == largest[r["backend"]] and r is not small:
                    figure["paired_growth"] = paired_growth(small[key], r[key], floor_side)
            figures.append(figure)
    return figures


def report(results: list[dict[str, Any]]) -> None:
    print("| backend | products | path | ours p50 | ours p99 | other sides' p50 (ms) | ratio |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        for key, what, floor_side, _ in PATHS:
            if key not in r:
                continue
            ours = r[key]["ours"]
            others = ", ".join(f"{name} {v['p50']:.2f}" for name, v in r[key].items() if name != "ours")
            ratio = f"{ours['p50'] / r[key][floor_side]['p50']:.2f}x" if floor_side else "—"
            print(f"| {r['backend']} | {r['products']:,} | {what} | {ours['p50']:.2f} | {ours['p99']:.2f} | {others} "
                  f"| {ratio} |")  # fmt: skip


def state_path(args: argparse.Namespace) -> Path:
    if args.state:
        return Path(args.state)
    # The same arguments on the same commit: a rerun after a change to the code measures afresh.
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    arguments = [args.pushes, args.reads, args.only, args.extra_products, args.baseline, args.os_cache]
    key = json.dumps([*arguments, head], sort_keys=True)
    return STATE_DIR / f"demo_tenant-{hashlib.sha256(key.encode()).hexdigest()[:10]}.json"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--pushes", type=int, default=60)
    parser.add_argument("--reads", type=int, default=40)
    parser.add_argument("--only", default="push,propagate,list,get,orders,search,create")
    parser.add_argument("--extra-products", default="0", help="products bulk-loaded beside the demo's; several sizes "
                        "(10000,1000000) are served at once, their requests in turn")  # fmt: skip
    parser.add_argument("--profile", metavar="DIR", help="py-spy `serve` during each phase (collapsed stacks)")
    parser.add_argument("--serve-option", action="append", default=[], help="passed to serve (diagnosis: --no-workers)")
    parser.add_argument("--baseline", metavar="TREE", help="also serve the same tenant with another tree's code (a "
                        "git worktree), side `base`, in the same alternation: an A/B on a noisy machine")  # fmt: skip
    parser.add_argument("--os-cache", choices=("warm", "cold", "as-is"), default="warm", help="the SQLite files' "
                        "state in the OS page cache at each phase's start, every side's the same")  # fmt: skip
    parser.add_argument("--state", help="where finished backends are kept (resume)")
    parser.add_argument("--fresh", action="store_true", help="forget what an interrupted run kept")
    args = parser.parse_args()
    sizes = [int(n) for n in args.extra_products.split(",")]
    state = state_path(args)
    done: dict[str, Any] = {} if args.fresh or not state.exists() else json.loads(state.read_text())
    before = cpu_probe_ms()
    for backend in args.backends.split(","):
        if backend in done:
            print(f"{backend}: kept from {state} (--fresh measures it again)", flush=True)
            continue
        started = time.monotonic()
        results = await run_backend(backend, sizes, args)
        for r in results:
            r["elapsed_s"] = round(time.monotonic() - started)
        done[backend] = results
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(json.dumps(done))
        print(f"{backend}: {time.monotonic() - started:.0f} s", flush=True)
    after = cpu_probe_ms()
    print(f"CPU probe {before} ms before, {after} ms after; load {loadavg()}")
    results = [r for backend in args.backends.split(",") for r in done[backend]]
    report(results)
    print(json.dumps(results))
    print_figures(figures_of(results, (before, after), len(sizes) > 1))
    state.unlink(missing_ok=True)  # complete: the next run measures afresh


if __name__ == "__main__":
    asyncio.run(main())
