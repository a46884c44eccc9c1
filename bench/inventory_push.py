"""Benchmark: the 500-SKU price/stock push on a 100,000-product catalogue, and a 10,000-row file import.

For SQLite and PostgreSQL, in one run:
  - the push end to end over real HTTP (uvicorn on loopback, bearer auth, JSON in and out), every SKU
    changing on every push: median and p99 ms per push, SKU updates per second;
  - the floor: the same 500 rows written by a plain SQL upsert (executemany, sorted by SKU, one
    transaction) with the bare driver (sqlite3 / asyncpg);
  - a 10,000-row CSV import end to end (parse, validate, 20 batches, events), in seconds.

Run:  .venv/bin/python -m bench.inventory_push [--pushes 60] [--products 100000] [--backends sqlite,postgresql]
PostgreSQL: MARKETSYNC_BENCH_PG_URL (default postgresql://postgres@127.0.0.1:5432/postgres); a scratch
database is created and dropped. Loopback only; bounded loops.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from sqlalchemy import select, text

from bench.support import BENCH_KEYS, create_scratch_pg, drop_scratch_pg, percentile, serve_runtime
from marketsync import connectors, migrate
from marketsync.auth import service as auth_service
from marketsync.auth.scopes import ALL_SCOPES
from marketsync.config import Settings
from marketsync.inventory import rules
from marketsync.inventory import service as inventory
from marketsync.kit.ids import new_id
from marketsync.logging import configure_logging
from marketsync.models import Product
from marketsync.models.base import money_to_storage
from marketsync.runtime import Runtime

BATCH = 500
WARMUP = 5


async def seed_catalogue(rt: Runtime, account_id: str, count: int) -> list[str]:
    base = datetime.now(UTC) - timedelta(days=1)
    skus = [f"BENCH-{i:07d}" for i in range(count)]
    times = rules.modification_times(base, count)
    table = Product.__table__
    for start in range(0, count, 10_000):
        async with rt.db.transaction() as session:
            await session.execute(
                table.insert(),
                [
                    {
                        "id": new_id(),
                        "account_id": account_id,
                        "sku": sku,
                        "sku_lower": sku.lower(),
                        "price": Decimal("10.00"),
                        "quantity": 10,
                        "title": f"Bench product {sku}",
                        "modified_at": times[start + offset],
                        "created_at": base,
                    }
                    for offset, sku in enumerate(skus[start : start + 10_000])
                ],
            )
    return skus


async def bench_push(rt: Runtime, base_url: str, token: str, skus: list[str], pushes: int) -> list[float]:
    rng = random.Random(7)
    timings: list[float] = []
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
        for round_number in range(WARMUP + pushes):
            chosen = rng.sample(skus, BATCH)
            # Distinct per round: every SKU's price and stock really change.
            items = [
                {"Sku": sku, "Price": 11 + round_number + (index % 100) / 100, "Quantity": 1000 + round_number}
                for index, sku in enumerate(chosen)
            ]
            started = time.perf_counter()
            response = await client.post(
                "/api/inventory/price-quantity", json={"Items": items, "PropagateToListings": False}, headers=headers
            )
            elapsed = (time.perf_counter() - started) * 1000
            body = response.json()
            assert response.status_code == 200 and body["Updated"] == BATCH, body
            if round_number >= WARMUP:
                timings.append(elapsed)
    return timings


UPSERT_SQLITE = (
    "INSERT INTO products (id, account_id, sku, sku_lower, price, quantity, title, modified_at, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?) ON CONFLICT (account_id, sku) DO UPDATE SET "
    "price = excluded.price, quantity = excluded.quantity, modified_at = excluded.modified_at"
)
UPSERT_PG = (
    "INSERT INTO products (id, account_id, sku, sku_lower, price, quantity, title, modified_at, created_at) "
    "VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $8) ON CONFLICT (account_id, sku) DO UPDATE SET "
    "price = excluded.price, quantity = excluded.quantity, modified_at = excluded.modified_at"
)


def floor_rows(account_id: str, chosen: list[str], round_number: int) -> list[tuple[Any, ...]]:
    now = datetime.now(UTC).replace(tzinfo=None)
    return [
        (
            new_id(),
            account_id,
            sku,
            sku.lower(),
            money_to_storage(Decimal(f"{500 + round_number}.25")),
            5000 + round_number,
            now,
            now,
        )
        for sku in sorted(chosen)
    ]


def bench_floor_sqlite(path: str, account_id: str, skus: list[str], pushes: int) -> list[float]:
    rng = random.Random(11)
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    timings = []
    try:
        for round_number in range(WARMUP + pushes):
            rows = floor_rows(account_id, rng.sample(skus, BATCH), round_number)
            rows = [(*row[:6], row[6].isoformat(sep=" "), row[7].isoformat(sep=" ")) for row in rows]
            started = time.perf_counter()
            connection.execute("BEGIN IMMEDIATE")
            connection.executemany(UPSERT_SQLITE, rows)
            connection.execute("COMMIT")
            if round_number >= WARMUP:
                timings.append((time.perf_counter() - started) * 1000)
    finally:
        connection.close()
    return timings


async def bench_floor_pg(url: str, account_id: str, skus: list[str], pushes: int) -> list[float]:
    rng = random.Random(11)
    connection = await asyncpg.connect(url)
    timings = []
    try:
        for round_number in range(WARMUP + pushes):
            rows = floor_rows(account_id, rng.sample(skus, BATCH), round_number)
            started = time.perf_counter()
            async with connection.transaction():
                await connection.executemany(UPSERT_PG, rows)
            if round_number >= WARMUP:
                timings.append((time.perf_counter() - started) * 1000)
    finally:
        await connection.close()
    return timings


async def bench_import(rt: Runtime, account_id: str, skus: list[str], directory: Path) -> tuple[float, int]:
    path = directory / "import-10000.csv"
    rng = random.Random(3)
    chosen = rng.sample(skus, 10_000)
    with path.open("w", encoding="utf-8") as handle:
        handle.write("Sku,Price,Quantity\n")
        for index, sku in enumerate(chosen):
            handle.write(f"{sku},{7 + index % 50}.{index % 100:02d},{index % 300}\n")
    started = time.perf_counter()
    report = await inventory.import_inventory_file(rt, account_id, path, propagate=False)
    elapsed = time.perf_counter() - started
    assert report.errors == [] and report.counts["Updated"] == 10_000, report.counts
    return elapsed, report.events


async def run_backend(backend: str, products: int, pushes: int, directory: Path) -> dict[str, Any]:
    scratch_pg = None
    if backend == "sqlite":
        url = f"sqlite:///{directory / 'bench.db'}"
    else:
        scratch_pg, url = await create_scratch_pg("ms_bench")
    settings = Settings(
        **BENCH_KEYS,
        database_url=url,
        var_dir=directory / "var",
        rate_limit="10000000/minute",
        log_level="WARNING",
    )
    rt = connectors.compose(Runtime.create(settings))
    try:
        await migrate.upgrade(rt.db)
        async with rt.db.transaction() as session:
            account = await auth_service.create_account(rt, session, f"bench-{uuid.uuid4().hex[:8]}")
            credential = await auth_service.create_credential(rt, session, account.id, "bench", list(ALL_SCOPES))
        started = time.perf_counter()
        skus = await seed_catalogue(rt, account.id, products)
        seeded_s = time.perf_counter() - started
        async with rt.db.transaction() as session:
            # Fresh bulk load: give the planner statistics now, as autovacuum would in production.
            await session.execute(text("ANALYZE products"))
        async with serve_runtime(rt) as base_url:
            async with httpx.AsyncClient(base_url=base_url) as client:
                response = await client.post(
                    "/connect/token",
                    data={
                        "grant_type": "client_credentials",
                        "client_id": credential.client_id,
                        "client_secret": credential.client_secret,
                    },
                )
                token = response.json()["access_token"]
            push_ms = await bench_push(rt, base_url, token, skus, pushes)
        if backend == "sqlite":
            floor_ms = await asyncio.to_thread(
                bench_floor_sqlite, str(directory / "bench.db"), account.id, skus, pushes
            )
        else:
            floor_ms = await bench_floor_pg(url.replace("postgresql://", "postgres://"), account.id, skus, pushes)
        import_s, events = await bench_import(rt, account.id, skus, directory)
        async with rt.db.read() as session:
            total = len((await session.execute(select(Product.id).where(Product.account_id == account.id))).all())
        assert total == products
        return {
            "backend": backend,
            "seed_s": seeded_s,
            "push_p50": statistics.median(push_ms),
            "push_p99": percentile(push_ms, 0.99),
            "floor_p50": statistics.median(floor_ms),
            "floor_p99": percentile(floor_ms, 0.99),
            "updates_per_s": BATCH / (statistics.median(push_ms) / 1000),
            "import_s": import_s,
            "import_events": events,
        }
    finally:
        await rt.close()
        if scratch_pg is not None:
            await drop_scratch_pg(scratch_pg)


async def main() -> None:
    configure_logging("WARNING")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--products", type=int, default=100_000)
    parser.add_argument("--pushes", type=int, default=60)
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="ms-bench-") as raw:
        for backend in args.backends.split(","):
            directory = Path(raw) / backend
            directory.mkdir()
            results.append(await run_backend(backend, args.products, args.pushes, directory))
    print(f"catalogue {args.products:,} products; {args.pushes} measured pushes of {BATCH} changed SKUs each\n")
    print(
        "| backend | push p50 ms | push p99 ms | SKU updates/s | plain upsert p50 ms | p99 ms | push / floor "
        "| 10,000-row import s | events |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['backend']} | {r['push_p50']:.1f} | {r['push_p99']:.1f} | {r['updates_per_s']:,.0f} "
            f"| {r['floor_p50']:.1f} | {r['floor_p99']:.1f} | {r['push_p50'] / r['floor_p50']:.1f}x "
            f"| {r['import_s']:.2f} | {r['import_events']} |"
        )


if __name__ == "__main__":
    asyncio.run(main())
