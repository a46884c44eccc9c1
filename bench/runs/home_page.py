"""The app's home page and activity log with 1,000,000 orders and 100,000 products in the account (issue 41):

    .venv/bin/python -m bench.runs.home_page [--orders 1000000] [--products 100000] [--entries 200000]
                                             [--runs 100] [--backend sqlite|postgresql|both]

Seeded fast with bulk SQL (orders as bench/orders_list.py generates them, 3 in 8 awaiting shipment; products and a
listing each with its images filled in, 1% Rejected and 0.5% with a change held for its fill-ins; 2,000 failed
jobs; `--entries` activity entries of two people over every kind), in a database of its own (var/bench/home.db,
marketsync_bench_home), reused by the next run. A `marketsync serve --no-workers` process serves it; one signed-in
Owner reads, sequentially over one keep-alive connection, `GET /app/` (eight counts, each one indexed query),
`GET /app/activity` (the newest 50), the log filtered by person and by kind, and an older page. Median and p99 of
`--runs` requests after 10 warm-ups, timed at the client on loopback (the server's time plus a loopback round trip).
Target: < 300 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import httpx
from sqlalchemy import func, insert, select, text

from bench.runs.orders_list import PG_ADMIN, VAR, ensure_tenant, generate, served
from bench.support import BENCH_KEYS, print_figures
from marketsync import migrate
from marketsync.config import Settings
from marketsync.kit.ids import new_id
from marketsync.marketplaces.registry import compose_connectors
from marketsync.models import Job, Listing, Product
from marketsync.models.activity import ActivityEntry
from marketsync.people import service as people
from marketsync.runtime import Runtime

PG_DB = "marketsync_bench_home"
CHUNK = 5_000
BASE = datetime(2025, 1, 1, tzinfo=UTC)
TARGET_MS = 300.0
KINDS = [kind.value for kind in people.ActivityKind]


async def _count(rt: Runtime, model: Any, account_id: str) -> int:
    async with rt.db.read() as session:
        return int(
            (
                await session.execute(select(func.count()).select_from(model).where(model.account_id == account_id))
            ).scalar_one()
        )


async def _insert(rt: Runtime, model: Any, rows: list[dict[str, Any]]) -> None:
    async with rt.db.transaction() as session:
        await session.execute(insert(model), rows)


async def seed_products_and_listings(rt: Runtime, account_id: str, marketplace_id: str, total: int) -> None:
    """`total` products with a listing each on the account's connection: 1% Rejected, 0.5% waiting for fill-ins."""
    held = {"Held": {"CategoryId": "C1", "ProductTypeViewId": "V1", "Attributes": {}, "AppAttributes": {}}}
    images = {"Images": ["https://img.example/front.jpg"]}  # filled in the app, as a marketplace needing images asks
    have = await _count(rt, Product, account_id)
    for start in range(have, total, CHUNK):
        numbers = range(start, min(total, start + CHUNK))
        products = [
            {
                "id": f"P{n:025d}", "account_id": account_id, "sku": f"SKU-{n:07d}", "sku_lower": f"sku-{n:07d}",
                "price": Decimal("9.99"), "quantity": n % 50, "title": f"Product {n}",
                "modified_at": BASE + timedelta(seconds=n), "created_at": BASE,
            }
            for n in numbers
        ]  # fmt: skip
        listings = [
            {
                "id": f"L{n:025d}", "account_id": account_id, "product_id": f"P{n:025d}",
                "marketplace_id": marketplace_id,
                "listing_id": f"ML-{n}", "attributes": {}, "status": "Rejected" if n % 100 == 0 else "Live",
                "last_error": "Images are required" if n % 100 == 0 else None,
                "app_fields": held if n % 200 == 1 else images, "created_at": BASE, "updated_at": BASE,
            }
            for n in numbers
        ]  # fmt: skip
        await _insert(rt, Product, products)
        await _insert(rt, Listing, listings)


async def seed_failed_jobs(rt: Runtime, account_id: str, now: datetime, total: int = 2_000) -> None:
    if await _count(rt, Job, account_id) >= total:
        return
    rows = [
        {
            "id": new_id(), "account_id": account_id, "type": "PriceStockPush", "status": "Failed", "payload": {},
            "run_after": now - timedelta(minutes=n), "created_at": now - timedelta(minutes=n),
            "updated_at": now - timedelta(minutes=n), "finished_at": now - timedelta(minutes=n),
            "failure_reason": "The marketplace said no", "recovery_count": 0,
        }
        for n in range(total)  # the newest within the last 7 days, the rest before
    ]  # fmt: skip
    await _insert(rt, Job, rows)


async def seed_activity(
    rt: Runtime, account_id: str, people_of: list[tuple[str, str]], now: datetime, total: int
) -> None:
    have = await _count(rt, ActivityEntry, account_id)
    for start in range(have, total, CHUNK):
        rows = []
        for n in range(start, min(total, start + CHUNK)):
            user_id, email = people_of[n % len(people_of)]
            rows.append(
                {
                    "id": f"A{n:025d}", "account_id": account_id, "user_id": user_id, "actor": email,
                    "kind": KINDS[n % len(KINDS)], "action": "Edited", "subject": f"SKU-{n % 100_000:07d}",
                    "details": {"Price": "9.50 → 12.00"}, "created_at": now - timedelta(seconds=total - n),
                }
            )  # fmt: skip
        await _insert(rt, ActivityEntry, rows)


def measure(client: httpx.Client, path: str, runs: int) -> tuple[float, float]:
    for _ in range(10):
        response = client.get(path)
        assert response.status_code == 200, (path, response.status_code, response.text[:300])
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        client.get(path)
        samples.append(time.perf_counter() - started)
    samples.sort()
    return statistics.median(samples) * 1000, samples[min(len(samples) - 1, int(len(samples) * 0.99))] * 1000


async def bench_backend(
    backend: str, orders: int, products: int, entries: int, runs: int
) -> tuple[list[str], list[dict[str, Any]]]:
    if backend == "sqlite":
        VAR.mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{VAR / 'home.db'}"
    else:
        admin = await asyncpg.connect(PG_ADMIN)
        if not await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", PG_DB):
            await admin.execute(f'CREATE DATABASE "{PG_DB}"')
        await admin.close()
        url = f"postgresql://postgres@127.0.0.1:5432/{PG_DB}"
    settings = Settings(**BENCH_KEYS, database_url=url, var_dir=VAR, rate_limit="1000000/minute", log_level="WARNING")
    rt = compose_connectors(Runtime.create(settings))
    now = datetime.now(UTC)
    try:
        await migrate.upgrade(rt.db)
        account_id, marketplace_id, _client_id, _client_secret = await ensure_tenant(rt)
        started = time.perf_counter()
        await generate(rt, url, account_id, marketplace_id, orders)
        await seed_products_and_listings(rt, account_id, marketplace_id, products)
        await seed_failed_jobs(rt, account_id, now)
        async with rt.db.transaction() as session:
            owner = await people.create_user(rt, session, account_id, f"bench-{new_id().lower()}@example.com", "Owner")
        async with rt.db.read() as session:
            everyone = await people.activity_people(session, account_id)
        await seed_activity(rt, account_id, everyone[:2], now, entries)
        async with rt.db.transaction() as session:  # the planners' statistics of the rows just inserted
            for table in ("listings", "jobs", "activity_entries", "products", "orders"):
                await session.execute(text(f"ANALYZE {table}"))
        seeded_s = time.perf_counter() - started
    finally:
        await rt.close()
    seeded = f"{orders:,} orders, {products:,} products and listings, {entries:,} activity entries"
    lines = [f"{backend}: {seeded} (seeded in {seeded_s:.0f} s)"]
    figures: list[dict[str, Any]] = []
    with served(url) as base, httpx.Client(base_url=base, timeout=60) as app:
        signed_in = app.post("/app/sign-in", data={"email": owner.email, "password": owner.password})
        assert signed_in.status_code == 303, signed_in.text
        home = app.get("/app/").text
        counts = dict(re.findall(r'id="attention-([a-z-]+)-what"><strong class="count">([\d,+]+)<', home))
        lines.append(f"counts: {counts}")
        first = app.get("/app/activity").text
        older = re.search(r'href="(/app/activity\?before=[^"]+)">Older', first)
        assert older is not None
        pages = [
            ("home page (8 counts)", "/app/"),
            ("activity log, newest 50", "/app/activity"),
            ("activity log, one person", f"/app/activity?who={everyone[0][0]}"),
            ("activity log, one kind", "/app/activity?kind=HandEdit"),
            ("activity log, an older page", older.group(1).replace("&amp;", "&")),
        ]
        lines.append("| page | p50 / p99 ms | target |")
        lines.append("|---|---|---|")
        for name, path in pages:
            p50, p99 = measure(app, path, runs)
            lines.append(f"| {name} | {p50:.2f} / {p99:.2f} | < {TARGET_MS:.0f} ms |")
            figures.append(
                {"what": f"app {name} ({backend}, {orders:,} orders, {products:,} products)", "ours": round(p50, 2),
                 "p99": round(p99, 2), "floor": None, "floor_name": None, "ratio": None,
                 "target": f"< {TARGET_MS:.0f} ms", "unit": "ms"}
            )  # fmt: skip
    return lines, figures


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orders", type=int, default=1_000_000)
    parser.add_argument("--products", type=int, default=100_000)
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    args = parser.parse_args()
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    figures: list[dict[str, Any]] = []
    for backend in backends:
        lines, measured = await bench_backend(backend, args.orders, args.products, args.entries, args.runs)
        for line in lines:
            print(line, flush=True)
        figures.extend(measured)
    print_figures(figures)


if __name__ == "__main__":
    asyncio.run(main())
