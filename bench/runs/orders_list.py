"""POST /api/orders/List with Limit 200 on a large order table, next to the same keyset query in plain SQL.

    .venv/bin/python -m bench.runs.orders_list [--orders 1000000] [--runs 200] [--seconds 5]
                                          [--backend sqlite|postgresql|both]

Generates the orders once per database (bulk: sqlite3 executemany / asyncpg COPY, then their stored documents
through the same code the `orders.documents` schedule runs), keeps the database for later runs, then measures
three pages (first page, a deep cursor page at the middle, an UpdatedSince page near the end) in the same run:
- plain keyset SQL: the page query the service sends (keyset on (updated_at, id), each order's stored
  document and whether it is current; docs/decisions/0066-order-documents.md), raw driver (sqlite3 /
  asyncpg): the floor;
- plain rows + items: the order columns and the items query, raw driver (what a page would read without
  stored documents; the previous design's floor, for reference);
- service: what the endpoint does in-process, without HTTP: the driver read, `orders.service.list_orders`
  and the response body (`OrderPage.json()`);
- bare HTTP, same bytes: a bare FastAPI POST on uvicorn answering with the page's response bytes, wrk over one
  loopback connection: what HTTP alone costs for a response of this size (the HTTP floor);
- HTTP endpoint: the endpoint of a separate `marketsync serve --no-workers` process (uvloop, logs at INFO as
  deployed), driven the same way (sequential requests, so latency, not queueing).
Each table row ends with the median ratios service/plain, HTTP/plain (the issue's target: 2x) and
HTTP/(plain + bare HTTP), the endpoint against its two floors together.
Loopback only; bounded loops.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import httpx

from bench.support import BENCH_KEY_ENV, BENCH_KEYS, free_port, process, wrk
from marketsync import migrate
from marketsync.auth import service as auth_service
from marketsync.config import Settings
from marketsync.kit import jsonio
from marketsync.marketplaces import service as marketplace_service
from marketsync.marketplaces.registry import compose_connectors
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
# What the previous design read per page: the order columns of the wire shape, then the items.
ROW_COLUMNS = [
    "id",
    "marketplace_order_id",
    "marketplace_id",
    "platform",
    "country",
    "status",
    "marketplace_status",
    "purchase_date",
    "updated_at",
    "created_at",
    "currency",
    "items_total",
    "shipping_total",
    "tax_total",
    "refunded_total",
    "external_reference",
    "ship_region",
    "ship_country_code",
]
ITEM_READ_COLUMNS = [
    "id",
    "marketplace_item_id",
    "sku",
    "title",
    "quantity",
    "unit_price",
    "status",
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


async def store_documents(rt: Runtime) -> float:
    """Store every order's document through the code the `orders.documents` schedule runs, in big batches."""
    started = time.perf_counter()
    stored = 0
    while True:
        async with rt.db.transaction() as session:
            done = await service.refresh_stale_documents(session, limit=5000)
        stored += done
        if done == 0:
            break
        if stored % 100_000 < 5000:
            print(f"  documents stored: {stored:,}", flush=True)
    return time.perf_counter() - started if stored else 0.0


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
    """The page query (and the previous design's row + items queries) through the raw driver."""

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
        documents: bool,
    ) -> int:
        """One keyset page: each order's stored document, or (documents=False) its columns plus its items."""
        where = ["account_id = {}", "updated_at <= {}"]
        params: list[Any] = [account_id, high_water]
        if since is not None:
            where.append("updated_at >= {}")
            params.append(since)
        if after is not None:
            where.append("(updated_at, id) > ({}, {})")
            params += list(after)
        current = f"(document_version = {schemas.DOCUMENT_VERSION} AND document_updated_at = updated_at)"
        columns = f"id, updated_at, {current}, document" if documents else ", ".join(ROW_COLUMNS)
        sql = f"SELECT {columns} FROM orders WHERE {' AND '.join(where)} ORDER BY updated_at, id LIMIT 201"
        items_sql = (
            f"SELECT {', '.join(ITEM_READ_COLUMNS)} FROM order_items WHERE order_id IN ({{}})"
            " ORDER BY order_id, position"
        )
        if self.sqlite is not None:
            text_params = [
                p.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f") if isinstance(p, datetime) else p for p in params
            ]
            rows = self.sqlite.execute(sql.replace("{}", "?"), text_params).fetchall()
            if not documents:
                ids = [r[0] for r in rows]
                self.sqlite.execute(items_sql.format(",".join("?" * len(ids))), ids).fetchall()
            return len(rows)
        assert self.pg is not None
        numbered = sql
        for i in range(1, len(params) + 1):
            numbered = numbered.replace("{}", f"${i}", 1)
        pg_params = [p.astimezone(UTC).replace(tzinfo=None) if isinstance(p, datetime) else p for p in params]
        pg_rows = await self.pg.fetch(numbered, *pg_params)
        if not documents:
            await self.pg.fetch(items_sql.format("SELECT unnest($1::varchar[])"), [r["id"] for r in pg_rows])
        return len(pg_rows)


LIST_LUA = """
wrk.method = "POST"
wrk.body = '{body}'
wrk.headers["Content-Type"] = "application/json"
"""


@contextlib.contextmanager
def served(url: str) -> Iterator[str]:
    """`marketsync serve --no-workers` on the bench database (its keys in VAR), as deployed."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MARKETSYNC_")}
    env.update(
        {
            **BENCH_KEY_ENV,
            "MARKETSYNC_DATABASE_URL": url,
            "MARKETSYNC_VAR_DIR": str(VAR.resolve()),
            "MARKETSYNC_RATE_LIMIT": "100000000/minute",
        }
    )
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "marketsync", "serve", "--no-workers", "--port", str(port)]
    with process(command, env, f"{base}/readyz"):
        yield base


def bare_http_floor(response_body: bytes, request_body: dict[str, Any], seconds: int) -> tuple[float, float]:
    """wrk over one connection against a bare FastAPI POST answering with the same bytes: HTTP alone."""
    with tempfile.NamedTemporaryFile(suffix=".json") as body_file:
        body_file.write(response_body)
        body_file.flush()
        port = free_port()
        command = [
            sys.executable,
            "-m",
            "uvicorn",
            "bench.floors.bare_app:app",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ]
        with process(command, {**os.environ, "BARE_BODY_FILE": body_file.name}, f"http://127.0.0.1:{port}/"):
            floor = wrk(
                f"http://127.0.0.1:{port}/body",
                seconds=seconds,
                connections=1,
                lua=LIST_LUA.format(body=jsonio.dumps(request_body).decode()),
            )
    return floor["p50_ms"], floor["p99_ms"]


async def bench_backend(backend: str, total: int, runs: int, seconds: int) -> list[str]:
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
    lines = []
    try:
        await migrate.upgrade(rt.db)
        account_id, marketplace_id, client_id, client_secret = await ensure_tenant(rt)
        gen_s = await generate(rt, url, account_id, marketplace_id, total)
        render_s = await store_documents(rt)
        lines.append(
            f"{backend}: {total:,} orders (+1 item each); rows generated in {gen_s:.1f} s, "
            f"documents stored in {render_s:.1f} s (0 = reused)"
        )

        high_water = BASE_TIME + timedelta(seconds=total + 10)
        middle = total // 2
        deep_after = (BASE_TIME + timedelta(seconds=middle), _id(middle, "O"))
        since = BASE_TIME + timedelta(seconds=int(total * 0.9))
        fingerprint = rules.filter_fingerprint(None, None, None, None, None)
        deep_cursor = rules.encode_cursor(
            rules.Cursor(deep_after[0], deep_after[1], high_water, fingerprint), rt.settings.hash_key, account_id
        )
        cases: list[tuple[str, datetime | None, tuple[datetime, str] | None, dict[str, Any]]] = [
            ("first page", None, None, {"Limit": 200}),
            ("deep cursor page (middle)", None, deep_after, {"Limit": 200, "Cursor": deep_cursor}),
            ("UpdatedSince page (last 10%)", since, None, {"Limit": 200, "UpdatedSince": since.isoformat()}),
        ]

        plain = PlainSql(rt, url)
        await plain.open()
        try:
            with served(url) as base:
                token = httpx.post(
                    f"{base}/connect/token",
                    data={"grant_type": "client_credentials", "client_id": client_id, "client_secret": client_secret},
                ).json()["access_token"]
                lines.append(
                    "| page | plain keyset SQL | plain rows + items | service (in-process) | bare HTTP, same bytes "
                    "| HTTP endpoint | service / plain | HTTP / plain | HTTP / (plain + bare HTTP) |"
                )
                lines.append("|---|---|---|---|---|---|---|---|---|")
                for name, case_since, after, body in cases:
                    # The first page's high-water is "now"; pin it for the plain query's equivalent.
                    hw = high_water if after is not None else datetime.now(UTC)

                    async def plain_documents(s: Any = case_since, a: Any = after, h: datetime = hw) -> None:
                        assert await plain.page(account_id, s, a, h, documents=True) == 201

                    async def plain_rows(s: Any = case_since, a: Any = after, h: datetime = hw) -> None:
                        await plain.page(account_id, s, a, h, documents=False)

                    # As the endpoint reads it: strict JSON (the model takes timestamps only as JSON strings).
                    request = schemas.read_list_body(jsonio.dumps(body))

                    async def in_process(r: schemas.ListOrdersRequest = request) -> None:
                        # As the endpoint reads it (a driver read: docs/decisions/0066).
                        page = await rt.db.driver_read(lambda reader: service.list_orders(rt, reader, account_id, r))
                        assert len(page.documents) == 200 and page.json()

                    figures = [await timed(fn, runs) for fn in (plain_documents, plain_rows, in_process)]
                    check = httpx.post(
                        f"{base}/api/orders/List", json=body, headers={"Authorization": f"Bearer {token}"}
                    )
                    assert check.status_code == 200 and len(check.json()["Orders"]) == 200, check.text
                    figures.append(bare_http_floor(check.content, body, seconds))
                    over_http = wrk(
                        f"{base}/api/orders/List",
                        seconds=seconds,
                        connections=1,
                        headers={"Authorization": f"Bearer {token}"},
                        lua=LIST_LUA.format(body=jsonio.dumps(body).decode()),
                    )
                    assert not over_http["non_2xx"], over_http
                    figures.append((over_http["p50_ms"], over_http["p99_ms"]))
                    cells = " | ".join(f"{median:.2f} / {p99:.2f}" for median, p99 in figures)
                    plain_median, _rows, svc_median, bare_median, http_median = (median for median, _ in figures)
                    ratios = (
                        f"{svc_median / plain_median:.1f}x | {http_median / plain_median:.1f}x | "
                        f"{http_median / (plain_median + bare_median):.1f}x"
                    )
                    lines.append(f"| {name} | {cells} | {ratios} |")
        finally:
            await plain.close()
    finally:
        await rt.close()
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orders", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seconds", type=int, default=5, help="wrk duration per page over HTTP")
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    args = parser.parse_args()
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    print(f"POST /api/orders/List Limit 200; median / p99 ms ({args.runs} runs in-process, {args.seconds} s of wrk)")
    for backend in backends:
        for line in await bench_backend(backend, args.orders, args.runs, args.seconds):
            print(line, flush=True)


if __name__ == "__main__":
    asyncio.run(main())
