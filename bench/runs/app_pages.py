"""The app's pages next to the API read behind each, over HTTP in the same run:

    .venv/bin/python -m bench.runs.app_pages [--orders 1000000] [--products 100000] [--attempts 100000]
                                        [--runs 200] [--backend sqlite|postgresql|both]

One account holds 1,000,000 orders (generated as bench/runs/orders_list.py does, documents stored), 100,000 products
and 100,000 webhook delivery attempts. A `marketsync serve --no-workers` process serves it; one signed-in person
(a session cookie) reads each page and one credential reads the API, sequentially over one keep-alive connection:
- catalogue: `GET /app/catalogue` (50 products with their listings, the total) vs `POST /api/products/List` Limit 50;
- orders: `GET /app/orders` (the first 50 orders) vs `POST /api/orders/List` Limit 50;
- webhook log: `GET /app/webhooks` (100 newest attempts, the subscriptions) vs `POST /api/webhooks/List` (the log
  has no API read; the page adds the log query to it).
Median and p99 of `--runs` requests after 10 warm-ups. Loopback only; bounded loops.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import httpx
from sqlalchemy import func, insert, select

from bench.runs.orders_list import PG_ADMIN, VAR, ensure_tenant, generate, served, store_documents
from bench.support import BENCH_KEYS
from marketsync import migrate
from marketsync.auth import service as auth
from marketsync.auth.scopes import ALL_SCOPES
from marketsync.config import Settings
from marketsync.kit.ids import new_id
from marketsync.marketplaces.registry import compose_connectors
from marketsync.models import Event, Product
from marketsync.models.webhooks import WebhookAttempt, WebhookSubscription
from marketsync.people import service as people
from marketsync.runtime import Runtime

PG_DB = "marketsync_bench_orders"  # shared with bench/runs/orders_list.py: its million orders are reused
CHUNK = 5_000
BASE = datetime(2025, 1, 1, tzinfo=UTC)


async def _count(rt: Runtime, column: Any, where: Any) -> int:
    async with rt.db.read() as session:
        return int((await session.execute(select(func.count(column)).where(where))).scalar_one())


async def seed_products(rt: Runtime, account_id: str, total: int) -> None:
    have = await _count(rt, Product.id, Product.account_id == account_id)
    for start in range(have, total, CHUNK):
        rows = [
            {
                "id": new_id(), "account_id": account_id, "sku": f"SKU-{n:07d}", "sku_lower": f"sku-{n:07d}",
                "price": Decimal("9.99"), "quantity": n % 50, "title": f"Product {n}",
                "modified_at": BASE + timedelta(seconds=n), "created_at": BASE,
            }
            for n in range(start, min(total, start + CHUNK))
        ]  # fmt: skip
        async with rt.db.transaction() as session:
            await session.execute(insert(Product), rows)


async def seed_attempts(rt: Runtime, account_id: str, total: int) -> None:
    async with rt.db.transaction() as session:
        subscription = (
            await session.execute(select(WebhookSubscription).where(WebhookSubscription.account_id == account_id))
        ).scalar_one_or_none()
        if subscription is None:
            subscription = WebhookSubscription(
                id=new_id(), account_id=account_id, url="https://hooks.example.com/bench",
                event_types=["InventoryChanged"], secret_encrypted="k0:unused", is_active=True, consecutive_failures=0,
                created_at=BASE,
            )  # fmt: skip
            session.add(subscription)
            session.add(Event(id=new_id(), account_id=account_id, type="InventoryChanged", body=b"{}",
                              occurred_at=BASE, dispatched_at=BASE))  # fmt: skip
    have = await _count(rt, WebhookAttempt.id, WebhookAttempt.account_id == account_id)
    for start in range(have, total, CHUNK):
        rows = [
            {
                "id": new_id(), "account_id": account_id, "subscription_id": subscription.id, "delivery_id": new_id(),
                "event_id": new_id(), "event_type": "InventoryChanged", "attempt": 1 + n % 7,
                "started_at": datetime.now(UTC) - timedelta(seconds=total - n), "duration_ms": 20 + n % 300,
                "status_code": 200 if n % 5 else 503, "outcome": "Succeeded" if n % 5 else "Retrying",
                "error_class": None if n % 5 else "HttpStatus", "error_detail": None,
                "response_snippet": "ok" if n % 5 else "Service Unavailable", "next_attempt_at": None,
            }
            for n in range(start, min(total, start + CHUNK))
        ]  # fmt: skip
        async with rt.db.transaction() as session:
            await session.execute(insert(WebhookAttempt), rows)


def measure(client: httpx.Client, method: str, path: str, runs: int, **kwargs: Any) -> tuple[float, float]:
    for _ in range(10):
        response = client.request(method, path, **kwargs)
        assert response.status_code == 200, (path, response.status_code, response.text[:300])
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        client.request(method, path, **kwargs)
        samples.append(time.perf_counter() - started)
    samples.sort()
    return statistics.median(samples) * 1000, samples[min(len(samples) - 1, int(len(samples) * 0.99))] * 1000


async def bench_backend(backend: str, orders: int, products: int, attempts: int, runs: int) -> list[str]:
    if backend == "sqlite":
        VAR.mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{VAR / 'orders.db'}"
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
        account_id, _marketplace_id, _client_id, _client_secret = await ensure_tenant(rt)
        started = time.perf_counter()
        await generate(rt, url, account_id, _marketplace_id, orders)
        await store_documents(rt)
        await seed_products(rt, account_id, products)
        await seed_attempts(rt, account_id, attempts)
        async with rt.db.transaction() as session:
            person = await people.create_user(rt, session, account_id, f"bench-{new_id().lower()}@example.com", "Owner")
            credential = await auth.create_credential(rt, session, account_id, "bench-app-pages", list(ALL_SCOPES))
        seeded_s = time.perf_counter() - started
    finally:
        await rt.close()
    lines = [f"{backend}: {orders:,} orders, {products:,} products, {attempts:,} attempts (seeded in {seeded_s:.0f} s)"]
    with served(url) as base, httpx.Client(base_url=base, timeout=60) as app, httpx.Client(base_url=base) as api:
        signed_in = app.post("/app/sign-in", data={"email": person.email, "password": person.password})
        assert signed_in.status_code == 303, signed_in.text
        token = api.post(
            "/connect/token",
            data={
                "grant_type": "client_credentials",
                "client_id": credential.client_id,
                "client_secret": credential.client_secret,
            },
        ).json()["access_token"]
        api.headers["Authorization"] = f"Bearer {token}"
        Request = tuple[str, str, dict[str, Any]]
        pairs: list[tuple[str, Request, Request]] = [
            ("catalogue (100,000 products)", ("GET", "/app/catalogue", {}),
             ("POST", "/api/products/List", {"json": {"Limit": 50}})),
            ("orders (1,000,000 orders)", ("GET", "/app/orders", {}),
             ("POST", "/api/orders/List", {"json": {"Limit": 50}})),
            ("webhook log (100,000 attempts)", ("GET", "/app/webhooks", {}),
             ("POST", "/api/webhooks/List", {"json": {}})),
        ]  # fmt: skip
        lines.append("| page | app page p50 / p99 ms | API read p50 / p99 ms | API read | page / API |")
        lines.append("|---|---|---|---|---|")
        for name, (page_method, page_path, page_kw), (api_method, api_path, api_kw) in pairs:
            page_p50, page_p99 = measure(app, page_method, page_path, runs, **page_kw)
            api_p50, api_p99 = measure(api, api_method, api_path, runs, **api_kw)
            lines.append(
                f"| {name} | {page_p50:.2f} / {page_p99:.2f} | {api_p50:.2f} / {api_p99:.2f} | "
                f"`{api_method} {api_path}` | {page_p50 / api_p50:.1f}x |"
            )
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orders", type=int, default=1_000_000)
    parser.add_argument("--products", type=int, default=100_000)
    parser.add_argument("--attempts", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    args = parser.parse_args()
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    for backend in backends:
        for line in await bench_backend(backend, args.orders, args.products, args.attempts, args.runs):
            print(line, flush=True)


if __name__ == "__main__":
    asyncio.run(main())
