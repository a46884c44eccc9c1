"""The app's working tables with a million orders (issue 41, docs/decisions/0436-app-tables.md), over HTTP:

    .venv/bin/python -m bench.runs.orders_page [--orders 1000000] [--products 100000] [--jobs 100000]
                                               [--runs 40] [--backend sqlite|postgresql|both]

One account holds `--orders` orders on two marketplaces (P1 UK and P2 DE, alternately; one item each, 5,000 SKUs;
purchase dates in another order than their changes; every order's document stored, as the `orders.documents`
schedule keeps them), `--products` products (each listed on both sites) and `--jobs` jobs. Seeded in bulk (sqlite3
executemany, asyncpg COPY), once: a rerun reuses the database (var/bench/orders_page.db, PostgreSQL
`marketsync_bench_orders_page`). A `marketsync serve --no-workers` process serves it; one signed-in Owner reads each
page sequentially over one keep-alive connection: median and p99 of `--runs` requests after 3 warm-ups, the
response's status checked. What is timed is the whole request on loopback, an upper bound of the server's time.
Target: every page under 300 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import httpx

from bench.runs.orders_list import ITEM_COLUMNS, ORDER_COLUMNS, PG_ADMIN, VAR, item_rows, order_rows, served
from bench.support import BENCH_KEYS, print_figures
from marketsync import migrate
from marketsync.auth import repository as auth_repository
from marketsync.auth import service as auth_service
from marketsync.config import Settings
from marketsync.console.orders import ORDERS_REACH
from marketsync.kit.ids import new_id
from marketsync.marketplaces import service as marketplace_service
from marketsync.marketplaces.registry import compose_connectors
from marketsync.models.base import PRICE_SCALE
from marketsync.models.orders import Order, OrderItem
from marketsync.orders import schemas
from marketsync.people import service as people
from marketsync.runtime import Runtime

PG_DB = "marketsync_bench_orders_page"
ACCOUNT = "bench-orders-page"
CHUNK = 20_000
BASE = datetime(2025, 1, 1, tzinfo=UTC)
TARGET_MS = 300.0
DOCUMENT_COLUMNS = ["document", "customer_document", "document_version", "document_updated_at"]
PRODUCT_COLUMNS = ["id", "account_id", "sku", "sku_lower", "price", "quantity", "title", "modified_at", "created_at"]
LISTING_COLUMNS = [
    "id",
    "account_id",
    "product_id",
    "marketplace_id",
    "status",
    "attributes",
    "created_at",
    "updated_at",
]
JOB_COLUMNS = ["id", "account_id", "type", "status", "payload", "recovery_count", "run_after", "created_at",
               "updated_at", "failure_reason"]  # fmt: skip
JOB_TYPES = ("OrderPull", "ListingMirror", "PriceStockPush", "OrderWriteBack")
JOB_STATUSES = ("Completed", "Completed", "Completed", "Failed")


def _money(value: int) -> Decimal:
    return Decimal(value) / PRICE_SCALE


def with_documents(
    orders: list[tuple[Any, ...]], items: list[tuple[Any, ...]], total: int, sites: list[tuple[str, str, str]]
) -> list[tuple[Any, ...]]:
    """Each generated order on its site (alternately), purchased in another order than it changed, with the document
    the renderer makes of it (schemas.order_json, as a change stores it)."""
    rows = []
    for order_row, item_row in zip(orders, items, strict=True):
        values = dict(zip(ORDER_COLUMNS, order_row, strict=True))
        n = int(values["id"][1:])
        values["marketplace_id"], values["platform"], values["country"] = sites[n % len(sites)]
        if values["platform"] == "P2":
            values["currency"] = "EUR"
        purchased = BASE + timedelta(seconds=(n * 7919) % max(total, 1))
        values["purchase_date"] = (
            purchased.strftime("%Y-%m-%d %H:%M:%S.%f")
            if isinstance(values["updated_at"], str)
            else purchased.replace(tzinfo=None)
        )
        as_time = {
            k: (datetime.fromisoformat(v).replace(tzinfo=UTC) if isinstance(v, str) else v.replace(tzinfo=UTC))
            for k, v in values.items()
            if k in ("purchase_date", "marketplace_changed_at", "created_at", "updated_at")
        }
        order = Order(
            **{
                **values,
                **as_time,
                **{k: _money(values[k]) for k in ("items_total", "shipping_total", "tax_total", "refunded_total")},
            }
        )
        item_values = dict(zip(ITEM_COLUMNS, item_row, strict=True))
        item = OrderItem(
            **{
                **item_values,
                "unit_price": _money(item_values["unit_price"]),
                "refunded_amount": _money(item_values["refunded_amount"]),
            }
        )
        document, customer = schemas.order_document(schemas.order_json(order, [item], [], []))
        rows.append(
            (*(values[c] for c in ORDER_COLUMNS), document, customer, schemas.DOCUMENT_VERSION, values["updated_at"])
        )
    return rows


def product_rows(account_id: str, start: int, stop: int, as_text: bool) -> list[tuple[Any, ...]]:
    rows = []
    for n in range(start, stop):
        stamp = BASE + timedelta(seconds=n)
        stored: Any = stamp.strftime("%Y-%m-%d %H:%M:%S.%f") if as_text else stamp.replace(tzinfo=None)
        price = (999 + (n * 37) % 9000) * PRICE_SCALE // 100
        rows.append(
            (f"P{n:025d}", account_id, f"SKU-{n}", f"sku-{n}", price, (n * 13) % 500, f"Product {n}", stored, stored)
        )
    return rows


def listing_rows(
    account_id: str, sites: list[tuple[str, str, str]], start: int, stop: int, as_text: bool
) -> list[tuple[Any, ...]]:
    stored: Any = BASE.strftime("%Y-%m-%d %H:%M:%S.%f") if as_text else BASE.replace(tzinfo=None)
    return [(f"L{site}{n:024d}", account_id, f"P{n:025d}", sites[site][0], "Live", "{}", stored, stored)
            for n in range(start, stop) for site in range(len(sites))]  # fmt: skip


def job_rows(account_id: str, start: int, stop: int, as_text: bool) -> list[tuple[Any, ...]]:
    rows = []
    for n in range(start, stop):
        stamp = BASE + timedelta(minutes=n)
        stored: Any = stamp.strftime("%Y-%m-%d %H:%M:%S.%f") if as_text else stamp.replace(tzinfo=None)
        status = JOB_STATUSES[n % len(JOB_STATUSES)]
        reason = "the marketplace refused the feed" if status == "Failed" else None
        rows.append(
            (
                f"J{n:025d}",
                account_id,
                JOB_TYPES[n % len(JOB_TYPES)],
                status,
                "{}",
                0,
                stored,
                stored,
                stored,
                reason,
            )
        )
    return rows


async def seed(
    rt: Runtime, url: str, orders: int, products: int, jobs: int
) -> tuple[str, list[tuple[str, str, str]], float]:
    started = time.perf_counter()
    async with rt.db.transaction() as session:
        account = await auth_repository.get_account_by_name(session, ACCOUNT)
        if account is None:
            account = await auth_service.create_account(rt, session, ACCOUNT)
        connections = await marketplace_service.list_all(session, account.id)
        if not connections:
            connections = [
                await marketplace_service.connect(rt, session, account.id, p, c, pull_now=False)
                for p, c in (("P1", "UK"), ("P2", "DE"))
            ]
    account_id = account.id
    sites = sorted((c.id, c.platform, c.country) for c in connections)
    sites.sort(key=lambda site: site[1])
    tables: list[tuple[str, list[str], int, Any]] = [
        ("orders", ORDER_COLUMNS + DOCUMENT_COLUMNS, orders, None),
        ("products", PRODUCT_COLUMNS, products, lambda s, e, t: product_rows(account_id, s, e, t)),
        ("listings", LISTING_COLUMNS, products, lambda s, e, t: listing_rows(account_id, sites, s, e, t)),
        ("jobs", JOB_COLUMNS, jobs, lambda s, e, t: job_rows(account_id, s, e, t)),
    ]
    sqlite = rt.db.is_sqlite
    con: Any = sqlite3.connect(url.removeprefix("sqlite:///")) if sqlite else await asyncpg.connect(url)
    try:
        for table, columns, total, make in tables:
            query = f"SELECT count(*) FROM {table} WHERE account_id = " + ("?" if sqlite else "$1")
            have = con.execute(query, (account_id,)).fetchone()[0] if sqlite else await con.fetchval(query, account_id)
            per_row = len(sites) if table == "listings" else 1
            for start in range(have // per_row, total, CHUNK):
                stop = min(total, start + CHUNK)
                if table == "orders":
                    order_part = order_rows(account_id, sites[0][0], start, stop, sqlite)
                    item_part = item_rows(account_id, start, stop)
                    rows, extra = (
                        with_documents(order_part, item_part, total, sites),
                        [("order_items", ITEM_COLUMNS, item_part)],
                    )
                else:
                    rows, extra = make(start, stop, sqlite), []
                for name, names, part in [(table, columns, rows), *extra]:
                    if sqlite:
                        marks = ",".join("?" * len(names))
                        with con:
                            con.executemany(f"INSERT INTO {name} ({','.join(names)}) VALUES ({marks})", part)
                    else:
                        await con.copy_records_to_table(name, records=part, columns=names)
                print(f"  {table}: {stop:,} of {total:,}", flush=True)
        if sqlite:
            con.execute("ANALYZE")
        else:
            # One at a time: several statements in one call run in a transaction block, which VACUUM refuses.
            for table in ("orders", "order_items", "products", "listings", "jobs"):
                await con.execute(f"VACUUM ANALYZE {table}")
    finally:
        await con.close() if not sqlite else con.close()
    return account_id, sites, time.perf_counter() - started


def measure(
    client: httpx.Client, method: str, path: str, runs: int, data: dict[str, str] | None, status: int
) -> tuple[float, float]:
    for _ in range(3):
        response = client.request(method, path, data=data)
        assert response.status_code == status, (path, response.status_code, response.text[-600:])
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        client.request(method, path, data=data)
        samples.append(time.perf_counter() - started)
    samples.sort()
    return statistics.median(samples) * 1000, samples[min(len(samples) - 1, int(len(samples) * 0.99))] * 1000


async def bench_backend(
    backend: str, orders: int, products: int, jobs: int, runs: int
) -> tuple[list[str], list[dict[str, Any]]]:
    if backend == "sqlite":
        VAR.mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{VAR / 'orders_page.db'}"
    else:
        admin = await asyncpg.connect(PG_ADMIN)
        if not await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", PG_DB):
            await admin.execute(f'CREATE DATABASE "{PG_DB}"')
        await admin.close()
        url = f"postgresql://postgres@127.0.0.1:5432/{PG_DB}"
    settings = Settings(**BENCH_KEYS, database_url=url, var_dir=VAR, rate_limit="1000000/minute", log_level="WARNING")
    rt = compose_connectors(Runtime.create(settings))
    try:
        await migrate.upgrade(rt.db)
        account_id, sites, seeded_s = await seed(rt, url, orders, products, jobs)
        async with rt.db.transaction() as session:
            person = await people.create_user(rt, session, account_id, f"bench-{new_id().lower()}@example.com", "Owner")
            await auth_service.set_time_zone(session, account_id, "Europe/Berlin")
    finally:
        await rt.close()
    p2 = next(site[0] for site in sites if site[1] == "P2")
    lines = [f"{backend}: {orders:,} orders, {products:,} products, {jobs:,} jobs (seeded in {seeded_s:.0f} s)",
             "| page | p50 ms | p99 ms |", "|---|---|---|"]  # fmt: skip
    figures: list[dict[str, Any]] = []
    with served(url) as base, httpx.Client(base_url=base, timeout=60) as app:
        signed_in = app.post("/app/sign-in", data={"email": person.email, "password": person.password})
        assert signed_in.status_code == 303, signed_in.text
        csrf = app.get("/app/settings").text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        order_path = "/app/orders/" + app.get("/app/orders").text.split('href="/app/orders/', 1)[1].split('"', 1)[0]
        pages: list[tuple[str, str, str, dict[str, str] | None, int]] = [
            ("orders, newest change first, 1-50 of N", "GET", "/app/orders", None, 200),
            ("orders, the last page reached", "GET", f"/app/orders?offset={min(orders, ORDERS_REACH) - 50}", None, 200),
            ("orders by purchase date, oldest first", "GET", "/app/orders?sort=purchased&dir=asc", None, 200),
            ("orders by marketplace order id", "GET", "/app/orders?sort=order", None, 200),
            ("orders by status", "GET", "/app/orders?sort=status&dir=desc", None, 200),
            ("orders of one marketplace (half)", "GET", f"/app/orders?marketplace={p2}", None, 200),
            ("orders of one status", "GET", "/app/orders?status=Refunded", None, 200),
            ("orders purchased in one month", "GET", "/app/orders?from=2025-01-05&to=2025-02-04", None, 200),
            ("orders holding a SKU (200)", "GET", "/app/orders?q=sku-4321", None, 200),
            ("an order by its marketplace order id", "GET", f"/app/orders?q=MO-{orders // 2}", None, 303),
            (
                "orders of a customer (a post)",
                "POST",
                "/app/orders",
                {"csrf": csrf, "customer": f"buyer {orders // 3}"},
                200,
            ),
            ("an order's page with its actions", "GET", order_path, None, 200),
            ("catalogue, SKU order, 1-50 of N", "GET", "/app/catalogue", None, 200),
            ("catalogue by price, highest first", "GET", "/app/catalogue?sort=price&dir=desc", None, 200),
            ("catalogue by stock, last page", "GET", f"/app/catalogue?sort=stock&offset={products - 50}", None, 200),
            ("jobs, newest first, 1-50 of N", "GET", "/app/jobs", None, 200),
            ("jobs by type", "GET", "/app/jobs?sort=type", None, 200),
            ("failed jobs", "GET", "/app/jobs?status=Failed", None, 200),
        ]
        for name, method, path, data, status in pages:
            p50, p99 = measure(app, method, path, runs, data, status)
            lines.append(f"| {name} | {p50:.1f} | {p99:.1f} |")
            figures.append({"what": f"app page: {name} ({backend})", "ours": round(p50, 2), "p99_ms": round(p99, 2),
                            "floor": None, "floor_name": None, "ratio": None, "target": f"< {TARGET_MS:.0f} ms",
                            "unit": "ms"})  # fmt: skip
    return lines, figures


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orders", type=int, default=1_000_000)
    parser.add_argument("--products", type=int, default=100_000)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    args = parser.parse_args()
    figures: list[dict[str, Any]] = []
    for backend in ("sqlite", "postgresql") if args.backend == "both" else (args.backend,):
        lines, measured = await bench_backend(backend, args.orders, args.products, args.jobs, args.runs)
        figures += measured
        for line in lines:
            print(line, flush=True)
    print_figures(figures)


if __name__ == "__main__":
    asyncio.run(main())
