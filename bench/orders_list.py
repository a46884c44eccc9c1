"""POST /api/orders/List with Limit 200 on a large order table, next to the same keyset query in plain SQL.

    .venv/bin/python -m bench.orders_list [--orders 1000000] [--runs 200] [--backend sqlite|postgresql|both]

Generates the orders once per database (bulk: sqlite3 executemany / asyncpg COPY), keeps the database
for later runs, then measures three pages (first page, a deep cursor page at the middle, an UpdatedSince
page near the end) three ways in the same run:
- plain: the keyset query alone, raw driver (sqlite3 / asyncpg), the floor;
- plain+items: the same plus the page's items query, raw driver (the data the endpoint needs);
- service: what the endpoint does in-process, without HTTP: read transaction, `orders.service.list_orders`
  and the response body (`OrderPage.json()`);
- http: the endpoint over loopback HTTP (uvicorn, bearer auth, orjson).
Each table row ends with the median ratios service/plain, HTTP/plain (the issue's target: 2x) and
service/(plain+items) (the endpoint against the raw queries for the same data).
Loopback only; bounded loops.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import httpx
import uvicorn

from marketsync import migrate
from marketsync.app import create_app
from marketsync.auth import service as auth_service
from marketsync.config import Settings
from marketsync.kit import jsonio
from marketsync.marketplaces import service as marketplace_service
from marketsync.models.base import PRICE_SCALE
from marketsync.orders import rules, schemas, service
from marketsync.runtime import Runtime

VAR = Path("var/bench")
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
PG_DB = "marketsync_bench_orders"
BASE_TIME = datetime(2025, 1, 1, tzinfo=UTC)
CHUNK = 50_000

ORDER_COLUMNS = [
    "id",
    "account_id",
    "marketplace_id",
    "platform",
    "country",
    "marketplace_order_id",
    "status",
    "marketplace_status",
    "purchase_date",
    "marketplace_changed_at",
    "currency",
    "items_total",
    "shipping_total",
    "tax_total",
    "refunded_total",
    "external_reference",
    "buyer_name",
    "buyer_email",
    "buyer_phone",
    "ship_name",
    "ship_line1",
    "ship_line2",
    "ship_city",
    "ship_region",
    "ship_postal_code",
    "ship_country_code",
    "ship_phone",
    "created_at",
    "updated_at",
]
ITEM_COLUMNS = [
    "id",
    "order_id",
    "account_id",
    "position",
    "marketplace_item_id",
    "sku",
    "title",
    "quantity",
    "unit_price",
    "status",
    "marketplace_status",
    "shipped_quantity",
    "cancelled_quantity",
    "refunded_quantity",
    "refunded_amount",
    "cancel_reason",
]
STATUSES = ("Unshipped", "Unshipped", "Shipped", "Shipped", "Shipped", "PartiallyShipped", "Cancelled", "Refunded")


def _id(n: int, prefix: str) -> str:
    """Deterministic 26-char ids that sort like the keys they are generated with."""
    return f"{prefix}{n:025d}"


def order_rows(account_id: str, marketplace_id: str, start: int, stop: int, as_text: bool) -> list[tuple[Any, ...]]:
    rows = []
    for n in range(start, stop):
        stamp = BASE_TIME + timedelta(seconds=n)
        stored: Any = stamp.strftime("%Y-%m-%d %H:%M:%S.%f") if as_text else stamp.replace(tzinfo=None)
        status = STATUSES[n % len(STATUSES)]
        rows.append(
            (
                _id(n, "O"),
                account_id,
                marketplace_id,
                "P1",
                "UK",
                f"MO-{n}",
                status,
                status,
                stored,
                stored,
                "GBP",
                2500 * PRICE_SCALE // 100,
                350 * PRICE_SCALE // 100,
                0,
                0,
                None,
                f"Buyer {n}",
                f"buyer{n}@example.test",
                None,
                f"Buyer {n}",
                f"{n} High Street",
                None,
                "London",
                "Greater London",
                "N1 9GU",
                "GB",
                None,
                stored,
                stored,
            )
        )
    return rows


def item_rows(account_id: str, start: int, stop: int) -> list[tuple[Any, ...]]:
    return [
        (
            _id(n, "I"),
            _id(n, "O"),
            account_id,
            0,
            f"MI-{n}",
            f"SKU-{n % 5000}",
            "Widget",
            1,
            2500 * PRICE_SCALE // 100,
            STATUSES[n % len(STATUSES)],
            "Unshipped",
            0,
            0,
            0,
            0,
            None,
        )
        for n in range(start, stop)
    ]


async def ensure_tenant(rt: Runtime) -> tuple[str, str, str, str]:
    """(account_id, marketplace_id, client_id, client_secret): the bench account, created once."""
    from marketsync.auth import repository as auth_repository
    from marketsync.marketplaces import repository as marketplace_repository

    async with rt.db.transaction() as session:
        account = await auth_repository.get_account_by_name(session, "bench-orders")
        if account is None:
            account = await auth_service.create_account(rt, session, "bench-orders")
        connection = await marketplace_repository.find(session, account.id, "P1", "UK")
        if connection is None:
            connection = await marketplace_service.connect(rt, session, account.id, "P1", "UK")
        credential = await auth_service.create_credential(rt, session, account.id, "bench", ["OrdersRead"])
    return account.id, connection.id, credential.client_id, credential.client_secret


async def generate(rt: Runtime, url: str, account_id: str, marketplace_id: str, total: int) -> float:
    started = time.perf_counter()
    if rt.db.is_sqlite:
        path = url.removeprefix("sqlite:///")
        con = sqlite3.connect(path)
        (have,) = con.execute("SELECT count(*) FROM orders WHERE account_id = ?", (account_id,)).fetchone()
        if have >= total:
            con.close()
            return 0.0
        con.execute("PRAGMA synchronous=OFF")
        order_sql = f"INSERT INTO orders ({','.join(ORDER_COLUMNS)}) VALUES ({','.join('?' * len(ORDER_COLUMNS))})"
        item_sql = f"INSERT INTO order_items ({','.join(ITEM_COLUMNS)}) VALUES ({','.join('?' * len(ITEM_COLUMNS))})"
        for start in range(have, total, CHUNK):
            stop = min(total, start + CHUNK)
            with con:
                con.executemany(order_sql, order_rows(account_id, marketplace_id, start, stop, True))
                con.executemany(item_sql, item_rows(account_id, start, stop))
        con.execute("ANALYZE")
        con.close()
    else:
        con = await asyncpg.connect(url)
        have = await con.fetchval("SELECT count(*) FROM orders WHERE account_id = $1", account_id)
        if have >= total:
            await con.close()
            return 0.0
        for start in range(have, total, CHUNK):
            stop = min(total, start + CHUNK)
            await con.copy_records_to_table(
                "orders", records=order_rows(account_id, marketplace_id, start, stop, False), columns=ORDER_COLUMNS
            )
            await con.copy_records_to_table(
                "order_items", records=item_rows(account_id, start, stop), columns=ITEM_COLUMNS
            )
        await con.execute("ANALYZE orders; ANALYZE order_items")
        await con.close()
    return time.perf_counter() - started


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


async def timed(fn: Callable[[], Awaitable[Any]], runs: int) -> tuple[float, float]:
    for _ in range(min(10, runs)):
        await fn()
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - started)
    return summary(samples)


class PlainSql:
    """The same keyset query (and the items query) through the raw driver."""

    def __init__(self, rt: Runtime, url: str) -> None:
        self.is_sqlite = rt.db.is_sqlite
        self.url = url
        self.sqlite: sqlite3.Connection | None = None
        self.pg: asyncpg.Connection | None = None

    async def open(self) -> None:
        if self.is_sqlite:
            self.sqlite = sqlite3.connect(self.url.removeprefix("sqlite:///"))
        else:
            self.pg = await asyncpg.connect(self.url)

    async def close(self) -> None:
        if self.sqlite is not None:
            self.sqlite.close()
        if self.pg is not None:
            await self.pg.close()

    async def page(
        self,
        account_id: str,
        since: datetime | None,
        after: tuple[datetime, str] | None,
        high_water: datetime,
        with_items: bool,
    ) -> int:
        where = ["account_id = {}", "updated_at <= {}"]
        params: list[Any] = [account_id, high_water]
        if since is not None:
            where.append("updated_at >= {}")
            params.append(since)
        if after is not None:
            where.append("(updated_at, id) > ({}, {})")
            params += list(after)
        sql = f"SELECT * FROM orders WHERE {' AND '.join(where)} ORDER BY updated_at, id LIMIT 201"
        if self.sqlite is not None:
            text_params = [
                p.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f") if isinstance(p, datetime) else p for p in params
            ]
            rows = self.sqlite.execute(sql.replace("{}", "?"), text_params).fetchall()
            if with_items:
                ids = [r[0] for r in rows]
                self.sqlite.execute(
                    f"SELECT * FROM order_items WHERE order_id IN ({','.join('?' * len(ids))}) "
                    "ORDER BY order_id, position",
                    ids,
                ).fetchall()
            return len(rows)
        assert self.pg is not None
        numbered = sql
        for i in range(1, len(params) + 1):
            numbered = numbered.replace("{}", f"${i}", 1)
        pg_params = [p.astimezone(UTC).replace(tzinfo=None) if isinstance(p, datetime) else p for p in params]
        pg_rows = await self.pg.fetch(numbered, *pg_params)
        if with_items:
            await self.pg.fetch(
                "SELECT * FROM order_items WHERE order_id = ANY($1::varchar[]) ORDER BY order_id, position",
                [r["id"] for r in pg_rows],
            )
        return len(pg_rows)


async def bench_backend(backend: str, total: int, runs: int) -> list[str]:
    if backend == "sqlite":
        VAR.mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{VAR / 'orders.db'}"
    else:
        admin = await asyncpg.connect(PG_ADMIN)
        if not await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", PG_DB):
            await admin.execute(f'CREATE DATABASE "{PG_DB}"')
        await admin.close()
        url = f"postgresql://postgres@127.0.0.1:5432/{PG_DB}"
    settings = Settings(database_url=url, var_dir=VAR, rate_limit="1000000/minute", log_level="WARNING")
    rt = Runtime.create(settings)
    lines = []
    try:
        await migrate.upgrade(rt.db)
        account_id, marketplace_id, client_id, client_secret = await ensure_tenant(rt)
        gen_s = await generate(rt, url, account_id, marketplace_id, total)
        lines.append(f"{backend}: {total:,} orders (+1 item each); generated in {gen_s:.1f} s (0 = reused)")

        high_water = BASE_TIME + timedelta(seconds=total + 10)
        middle = total // 2
        deep_after = (BASE_TIME + timedelta(seconds=middle), _id(middle, "O"))
        since = BASE_TIME + timedelta(seconds=int(total * 0.9))
        fingerprint = rules.filter_fingerprint(None, None, None, None, None)
        deep_cursor = rules.encode_cursor(rules.Cursor(deep_after[0], deep_after[1], high_water, fingerprint))
        cases: list[tuple[str, datetime | None, tuple[datetime, str] | None, dict[str, Any]]] = [
            ("first page", None, None, {"Limit": 200}),
            ("deep cursor page (middle)", None, deep_after, {"Limit": 200, "Cursor": deep_cursor}),
            ("UpdatedSince page (last 10%)", since, None, {"Limit": 200, "UpdatedSince": since.isoformat()}),
        ]

        plain = PlainSql(rt, url)
        await plain.open()
        config = uvicorn.Config(create_app(rt), host="127.0.0.1", port=0, log_config=None, access_log=False)
        server = uvicorn.Server(config)
        serving = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
                token_response = await client.post(
                    "/connect/token",
                    data={"grant_type": "client_credentials", "client_id": client_id, "client_secret": client_secret},
                )
                headers = {"Authorization": f"Bearer {token_response.json()['access_token']}"}
                lines.append(
                    "| page | plain keyset SQL | plain SQL + items | service (in-process) | HTTP endpoint "
                    "| service / plain | HTTP / plain | service / (plain + items) |"
                )
                lines.append("|---|---|---|---|---|---|---|---|")
                for name, case_since, after, body in cases:
                    # The first page's high-water is "now"; pin it for the plain query's equivalent.
                    hw = high_water if after is not None else datetime.now(UTC)

                    async def plain_only(s: Any = case_since, a: Any = after, h: datetime = hw) -> None:
                        assert await plain.page(account_id, s, a, h, with_items=False) == 201

                    async def plain_items(s: Any = case_since, a: Any = after, h: datetime = hw) -> None:
                        await plain.page(account_id, s, a, h, with_items=True)

                    # As the endpoint reads it: strict JSON (the model takes timestamps only as JSON strings).
                    request = schemas.read_list_body(jsonio.dumps(body))

                    async def in_process(r: schemas.ListOrdersRequest = request) -> None:
                        # As the endpoint reads it (a short read: docs/decisions/0012).
                        page = await rt.db.short_read(lambda session: service.list_orders(rt, session, account_id, r))
                        assert len(page.orders) == 200 and page.json()

                    async def over_http(b: dict[str, Any] = body) -> None:
                        response = await client.post("/api/orders/List", json=b, headers=headers)
                        assert response.status_code == 200, response.text

                    figures = [await timed(fn, runs) for fn in (plain_only, plain_items, in_process, over_http)]
                    cells = " | ".join(f"{median:.2f} / {p99:.2f}" for median, p99 in figures)
                    plain_median, items_median, svc_median, http_median = (median for median, _ in figures)
                    ratios = (
                        f"{svc_median / plain_median:.1f}x | {http_median / plain_median:.1f}x | "
                        f"{svc_median / items_median:.1f}x"
                    )
                    lines.append(f"| {name} | {cells} | {ratios} |")
        finally:
            server.should_exit = True
            await serving
            await plain.close()
    finally:
        await rt.close()
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orders", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    args = parser.parse_args()
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    print(f"POST /api/orders/List Limit 200; median / p99 ms over {args.runs} runs")
    for backend in backends:
        for line in await bench_backend(backend, args.orders, args.runs):
            print(line, flush=True)


if __name__ == "__main__":
    asyncio.run(main())
