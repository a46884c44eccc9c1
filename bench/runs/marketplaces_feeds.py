"""Marketplace-side figures: a 500-SKU price/stock feed end to end, a health check, a 1,000-listing mirror.

Everything runs in-process against the sandbox marketplaces (httpx ASGITransport), on SQLite and on
PostgreSQL (loopback). The DESIGN.md section 6 floor for a 500-row write (sqlite3 executemany upsert
into a 100k-row table) is measured in the same run for comparison.

    .venv/bin/python -m bench.runs.marketplaces_feeds [--runs 5] [--mirror-listings 1000]

The last line is a FIGURES line (bench/support.py print_figures) for make bench: the feed on PostgreSQL against the
same feed on SQLite (target <= 1.5x), the mirror of 1,000 listings per backend (target <= 300 ms); the p99 column
holds the slowest of the runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlalchemy import text

from bench.support import cpu_probe_ms, print_figures, scratch_database
from marketsync import migrate
from marketsync.auth import service as auth_service
from marketsync.config import Settings
from marketsync.jobs import service as jobs_service
from marketsync.jobs.types import JobPayload, JobStatus, ListingMirrorPayload, PriceStockPushPayload
from marketsync.kit.ids import new_id
from marketsync.marketplaces import feeds, service
from marketsync.marketplaces.registry import compose_connectors
from marketsync.marketplaces.sandbox import state as sandbox_state
from marketsync.models import Listing, MarketplaceConnection, Product
from marketsync.runtime import Runtime

SKUS = 500
MIRROR_LISTINGS = 1000


def sqlite_floor(runs: int) -> float:
    """500-row executemany upsert into a 100k-row table (WAL), milliseconds p50."""
    with tempfile.TemporaryDirectory() as directory:
        db = sqlite3.connect(Path(directory) / "floor.db")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE t (sku TEXT PRIMARY KEY, price INTEGER, quantity INTEGER)")
        db.executemany("INSERT INTO t VALUES (?, ?, ?)", ((f"S{i:06d}", i, i) for i in range(100_000)))
        db.commit()
        timings = []
        for run in range(runs):
            rows = sorted((f"S{i * 97 % 100_000:06d}", run, run) for i in range(SKUS))
            start = time.perf_counter()
            db.executemany(
                "INSERT INTO t VALUES (?, ?, ?) ON CONFLICT(sku) DO UPDATE SET price=excluded.price, "
                "quantity=excluded.quantity",
                rows,
            )
            db.commit()
            timings.append((time.perf_counter() - start) * 1000)
        db.close()
    return statistics.median(timings)


async def _setup(rt: Runtime, listings: int) -> tuple[MarketplaceConnection, list[str]]:
    async with rt.db.transaction() as session:
        account = await auth_service.create_account(rt, session, f"bench-{new_id()}")
        connection = await service.connect(rt, session, account.id, "P1", "UK")
        now = rt.clock.now()
        seller = await sandbox_state.ensure_seller(session, connection.id, "P1", "UK", now)
        products = []
        for index in range(listings):
            sku = f"BENCH-{index:05d}"
            products.append(
                Product(
                    id=new_id(),
                    account_id=account.id,
                    sku=sku,
                    sku_lower=sku.lower(),
                    price=Decimal("10.00"),
                    quantity=5,
                    title=sku,
                    modified_at=now,
                    created_at=now,
                )
            )
        session.add_all(products)
        known = [sandbox_state.KnownListing(p.sku, None, None, p.title, None, Decimal("10.00"), 5) for p in products]
        remote = await sandbox_state.seed_listings(session, seller, now, known)
        session.add_all(
            Listing(
                id=new_id(),
                account_id=account.id,
                product_id=p.id,
                marketplace_id=connection.id,
                listing_id=remote[p.sku].listing_id,
                external_sku=p.sku,
                listing_url=remote[p.sku].listing_url,
                attributes={},
                status="Live",
                marketplace_price=Decimal("10.00"),
                marketplace_quantity=5,
                created_at=now,
                updated_at=now,
            )
            for p in products
        )
    return connection, [p.id for p in products]


async def _run_job(rt: Runtime, account_id: str, payload: JobPayload) -> float:
    """Enqueue the job, then time it run through the worker's own path (claim, handler, end state)."""
    async with rt.db.transaction() as session:
        job = jobs_service.enqueue(session, rt.clock.now(), account_id, payload)
    start = time.perf_counter()
    status, _ = await jobs_service.run_now(rt, job.id)
    elapsed = (time.perf_counter() - start) * 1000
    assert status == JobStatus.COMPLETED, status
    return elapsed


async def measure(url: str, runs: int, mirror_listings: int) -> dict[str, float]:
    rt = compose_connectors(
        Runtime.create(Settings(database_url=url, encryption_keys="b1:" + "A" * 43, secret_hash_key="B" * 43))
    )
    try:
        await migrate.upgrade(rt.db)
        connection, product_ids = await _setup(rt, max(SKUS, mirror_listings))
        if not rt.db.is_sqlite:
            # Statistics of the freshly seeded tables, as autovacuum gathers them within a minute of a change that
            # size; without them PostgreSQL plans the sandbox's row updates on the wrong index (a 1,000-entry scan
            # each: most of the 1.4 s this figure once was).
            async with rt.db.engine.connect() as conn:
                await (await conn.execution_options(isolation_level="AUTOCOMMIT")).execute(text("ANALYZE"))
        # A feed's poll loop sleeps between polls; that wait is the marketplace's, not ours.
        feeds.POLL_DELAYS_S = (0.0,) * len(feeds.POLL_DELAYS_S)
        feed, health, mirror = [], [], []
        for run in range(runs):
            async with rt.db.transaction() as session:
                for product in (await session.execute(Product.__table__.select().limit(SKUS))).all():
                    await session.execute(
                        Product.__table__.update().where(Product.id == product.id).values(quantity=100 + run)
                    )
            push = PriceStockPushPayload(MarketplaceId=connection.id, ProductIds=product_ids[:SKUS])
            feed.append(await _run_job(rt, connection.account_id, push))
            mirror.append(await _run_job(rt, connection.account_id, ListingMirrorPayload(MarketplaceId=connection.id)))
        for _ in range(runs * 10):
            start = time.perf_counter()
            await service.check_health(rt, connection)
            health.append((time.perf_counter() - start) * 1000)
        return {
            "feed_500_ms_p50": statistics.median(feed),
            "mirror_ms_p50": statistics.median(mirror),
            "feed_500_ms_max": max(feed),
            "mirror_ms_max": max(mirror),
            "health_check_ms_p50": statistics.median(health),
        }
    finally:
        await rt.close()


def figures(results: dict[str, dict[str, float]], mirror_listings: int) -> list[dict[str, Any]]:
    """The FIGURES entries: the feed on PostgreSQL against the same feed on SQLite, the mirror per backend."""
    out: list[dict[str, Any]] = []
    if "sqlite" in results and "postgresql" in results:
        sqlite, postgresql = results["sqlite"], results["postgresql"]
        out.append(
            {"what": f"{SKUS}-SKU price/stock feed end to end, sandbox in process, p50 (PostgreSQL against SQLite)",
             "ours": round(postgresql["feed_500_ms_p50"], 1), "p99_ms": round(postgresql["feed_500_ms_max"], 1),
             "floor": None, "reference": round(sqlite["feed_500_ms_p50"], 1),
             "reference_name": "ours, the same feed on SQLite, same run",
             "ratio": round(postgresql["feed_500_ms_p50"] / sqlite["feed_500_ms_p50"], 2),
             "target": "PostgreSQL <= 1.5x SQLite (issue 15 item 6)", "unit": "ms"}
        )  # fmt: skip
    mirror_target = "<= 300 ms (issue 15 item 6)" if mirror_listings == MIRROR_LISTINGS else "none (item 6: 1,000)"
    for backend, measured in results.items():
        out.append(
            {"what": f"mirror of {mirror_listings:,} listings, sandbox in process, p50 ({backend})",
             "ours": round(measured["mirror_ms_p50"], 1), "p99_ms": round(measured["mirror_ms_max"], 1),
             "floor": None, "ratio": None, "target": mirror_target, "unit": "ms"}
        )  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--mirror-listings", type=int, default=MIRROR_LISTINGS, help="listings the mirror reads")
    args = parser.parse_args()
    probe_before = cpu_probe_ms()
    print(f"floor: sqlite3 executemany 500-row upsert into 100k rows: {sqlite_floor(args.runs):.1f} ms p50")
    results: dict[str, dict[str, float]] = {}
    for backend in args.backends.split(","):
        with scratch_database(backend) as url:
            results[backend] = asyncio.run(measure(url, args.runs, args.mirror_listings))
        print(backend, " ".join(f"{k}={v:.1f}" for k, v in results[backend].items()))
    print(f"CPU probe {probe_before} ms before, {cpu_probe_ms()} ms after; load average {os.getloadavg()[0]:.2f}")
    print_figures(figures(results, args.mirror_listings))


if __name__ == "__main__":
    main()
