"""Benchmark: a 10,000-row price/stock file import on a 100,000-product catalogue (SQLite and PostgreSQL).

The 500-SKU push is measured over HTTP against its floor by bench/runs/inventory_http.py (bench/floors/inventory.py).
This module used to time the push next to an in-process `executemany` upsert into the service's own products table
(all its indexes, no HTTP, no parsing, no response): a second implementation of our own cost, not the floor of the
operation (DESIGN.md §6), so that comparison is gone; `seed_products` stays for the benchmarks that need a catalogue.

  - a 10,000-row CSV import end to end (parse, validate, 20 batches, events), in seconds, through
    `inventory.service.import_inventory_file` (what `marketsync admin import-inventory` runs, without process start).

Run:  .venv/bin/python -m bench.runs.inventory_push [--products 100000] [--backends sqlite,postgresql]
PostgreSQL: MARKETSYNC_BENCH_PG_URL; a scratch database is created and dropped. Loopback only; bounded loops.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlalchemy import select, text

from bench.support import BENCH_KEYS, create_scratch_pg, drop_scratch_pg
from marketsync import migrate
from marketsync.auth import service as auth_service
from marketsync.config import Settings
from marketsync.http.logs import configure_logging
from marketsync.inventory import rules
from marketsync.inventory import service as inventory
from marketsync.kit.ids import new_id
from marketsync.marketplaces.registry import compose_connectors
from marketsync.models import Product
from marketsync.runtime import Runtime

BATCH = 500
WARMUP = 5


async def seed_products(rt: Runtime, account_id: str, count: int) -> list[str]:
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


async def run_backend(backend: str, products: int, directory: Path) -> dict[str, Any]:
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
    rt = compose_connectors(Runtime.create(settings))
    try:
        await migrate.upgrade(rt.db)
        async with rt.db.transaction() as session:
            account = await auth_service.create_account(rt, session, f"bench-{uuid.uuid4().hex[:8]}")
        started = time.perf_counter()
        skus = await seed_products(rt, account.id, products)
        seeded_s = time.perf_counter() - started
        if not rt.db.is_sqlite:
            async with rt.db.transaction() as session:
                # Fresh bulk load: PostgreSQL's autovacuum would analyse it. A deployment's SQLite file never gets
                # statistics, and the import must plan well without them (docs/decisions/0296).
                await session.execute(text("ANALYZE products"))
        import_s, events = await bench_import(rt, account.id, skus, directory)
        async with rt.db.read() as session:
            total = len((await session.execute(select(Product.id).where(Product.account_id == account.id))).all())
        assert total == products
        return {"backend": backend, "seed_s": seeded_s, "import_s": import_s, "import_events": events}
    finally:
        await rt.close()
        if scratch_pg is not None:
            await drop_scratch_pg(scratch_pg)


async def main() -> None:
    configure_logging("WARNING")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--products", type=int, default=100_000)
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="ms-bench-") as raw:
        for backend in args.backends.split(","):
            directory = Path(raw) / backend
            directory.mkdir()
            results.append(await run_backend(backend, args.products, directory))
    print(f"catalogue {args.products:,} products\n")
    print("| backend | 10,000-row import s | events |")
    print("|---|---|---|")
    for r in results:
        print(f"| {r['backend']} | {r['import_s']:.2f} | {r['import_events']} |")


if __name__ == "__main__":
    asyncio.run(main())
