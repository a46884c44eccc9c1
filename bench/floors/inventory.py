"""Floor apps (DESIGN.md §6): the least work any correct server does for the catalogue's hot operations, served
like marketsync (uvicorn, uvloop, httptools), with the raw driver and tables holding only the columns the
operations need. Same requests, same response bodies as the service; nothing of the service's code is used.

    FLOOR_DATABASE=sqlite:///path | postgresql://... uvicorn bench.floors.inventory:app --port N

Operations:
  - POST /api/inventory/price-quantity: bearer lookup, parse (orjson), collapse repeats, match SKUs
    case-insensitively, write what differs, answer Results and counts. SQLite: one SELECT of the batch and one
    executemany inside BEGIN IMMEDIATE; PostgreSQL: one statement over unnest'ed arrays.
  - POST /api/products/List: a ModifiedSince walk's keyset page (Offset 0), or without ModifiedSince an Offset page
    in the table's own order (its integer key); TotalCount (counting at most 10,000 with ModifiedSince, as the
    service does), the page's listings.
  - GET /api/products/{sku}: the product by SKU (case-insensitive, exact casing first, 409 on ambiguity) with its
    listings.

`create_schema` and `seed` build the floor's tables (used by bench/runs/inventory_http.py).
"""

from __future__ import annotations

import base64
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

SQLITE_SCHEMA = (
    "CREATE TABLE tokens (token_hash TEXT PRIMARY KEY, account_id TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE products (id INTEGER PRIMARY KEY, sku TEXT NOT NULL, sku_lower TEXT NOT NULL, price INTEGER, "
    "quantity INTEGER NOT NULL, modified_at TEXT NOT NULL)",
    "CREATE INDEX products_sku_lower ON products (sku_lower)",
    "CREATE INDEX products_modified ON products (modified_at, id)",
    "CREATE TABLE listings (product_id INTEGER NOT NULL, platform TEXT NOT NULL, country TEXT NOT NULL, "
    "listing_id TEXT, external_sku TEXT, listing_url TEXT)",
    "CREATE INDEX listings_product ON listings (product_id)",
)
POSTGRES_SCHEMA = (
    "CREATE TABLE tokens (token_hash TEXT PRIMARY KEY, account_id TEXT NOT NULL)",
    "CREATE TABLE products (id BIGINT PRIMARY KEY, sku TEXT NOT NULL, sku_lower TEXT NOT NULL, price BIGINT, "
    "quantity INTEGER NOT NULL, modified_at TIMESTAMP NOT NULL)",
    "CREATE INDEX products_sku_lower ON products (sku_lower)",
    "CREATE INDEX products_modified ON products (modified_at, id)",
    "CREATE TABLE listings (product_id BIGINT NOT NULL, platform TEXT NOT NULL, country TEXT NOT NULL, "
    "listing_id TEXT, external_sku TEXT, listing_url TEXT)",
    "CREATE INDEX listings_product ON listings (product_id)",
)
PRICE_SCALE = 10_000
# Commits within this window share one checkpoint, as the service's (marketsync/db/_wal_checkpoints.py, decision 0470).
CHECKPOINT_COALESCE_S = 0.2
# A ModifiedSince page counts at most this many products (the service's rule, docs/decisions/0241).
COUNT_AHEAD = 10_000
EMPTY_OUTCOMES = {"Updated": 0, "Unchanged": 0, "NotFound": 0, "Ambiguous": 0, "Failed": 0}


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def wire_time(value: datetime) -> str:
    return value.isoformat(timespec="microseconds") + "Z"


def request_id() -> str:
    return base64.b32encode(os.urandom(16)).decode()[:26]


def problem(status: int, code: str) -> Response:
    body = {"type": f"urn:service:error:{code}", "title": code, "status": status, "code": code}
    return Response(orjson.dumps(body), status, media_type="application/problem+json")


def json_response(body: Any) -> Response:
    return Response(orjson.dumps(body), media_type="application/json")


class SqliteFloor:
    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        # As the service does (decisions 0275, 0470): no commit runs the WAL checkpoint, a thread does it after, the
        # commits of CHECKPOINT_COALESCE_S sharing one.
        self.db.execute("PRAGMA wal_autocheckpoint=10000")
        self.committed = threading.Event()
        threading.Thread(target=self._checkpoints, args=(path,), daemon=True).start()

    def _checkpoints(self, path: str) -> None:
        db = sqlite3.connect(path, isolation_level=None)
        while True:
            self.committed.wait()
            time.sleep(CHECKPOINT_COALESCE_S)
            self.committed.clear()
            db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    async def account(self, token: str) -> str | None:
        row = self.db.execute("SELECT account_id FROM tokens WHERE token_hash = ?", (token_hash(token),)).fetchone()
        return None if row is None else str(row[0])

    async def push(self, latest: dict[str, tuple[str, int | None, int | None]]) -> tuple[set[str], set[str]]:
        """(matched keys, updated keys) for the batch {sku_lower: (sku, scaled price, quantity)}."""
        keys = sorted(latest)
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            rows = db.execute(
                f"SELECT id, sku_lower, price, quantity FROM products WHERE sku_lower IN ({','.join('?' * len(keys))})",
                keys,
            ).fetchall()
            now = datetime.now(UTC).replace(tzinfo=None)
            writes = []
            updated = set()
            for product_id, key, price, quantity in rows:
                _, new_price, new_quantity = latest[key]
                price_moved = new_price is not None and new_price != price
                quantity_moved = new_quantity is not None and new_quantity != quantity
                if price_moved or quantity_moved:
                    updated.add(key)
                    writes.append(
                        (
                            new_price if price_moved else price,
                            new_quantity if quantity_moved else quantity,
                            wire_time(now + timedelta(microseconds=len(writes))),
                            product_id,
                        )
                    )
            db.executemany("UPDATE products SET price = ?, quantity = ?, modified_at = ? WHERE id = ?", writes)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self.committed.set()
        return {row[1] for row in rows}, updated

    async def page(self, since: str | None, limit: int, offset: int) -> tuple[list[tuple[Any, ...]], int]:
        db = self.db
        db.execute("BEGIN")
        try:
            if since is None:
                rows = db.execute(
                    "SELECT id, sku, quantity, modified_at FROM products ORDER BY id LIMIT ? OFFSET ?", (limit, offset)
                )
                page = rows.fetchall()
                total = db.execute("SELECT count(*) FROM products").fetchone()[0]
            else:
                page = db.execute(
                    "SELECT id, sku, quantity, modified_at FROM products WHERE modified_at >= ? "
                    "ORDER BY modified_at, id LIMIT ?",
                    (since, limit),
                ).fetchall()
                total = db.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM products WHERE modified_at >= ? LIMIT ?)", (since, COUNT_AHEAD)
                ).fetchone()[0]
            listings = self._listings([row[0] for row in page])
        finally:
            db.execute("COMMIT")
        return [(sku, quantity, modified, listings.get(pid, [])) for pid, sku, quantity, modified in page], total

    def _listings(self, ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
        found: dict[int, list[dict[str, Any]]] = {}
        if not ids:
            return found
        rows = self.db.execute(
            "SELECT product_id, platform, country, listing_id, external_sku, listing_url FROM listings "
            f"WHERE product_id IN ({','.join('?' * len(ids))}) ORDER BY product_id, platform, country",
            list(ids),
        )
        for product_id, platform, country, listing_id, external_sku, url in rows:
            found.setdefault(product_id, []).append(
                {"Platform": platform, "Country": country, "ListingId": listing_id, "ExternalSku": external_sku,
                 "ListingUrl": url}
            )  # fmt: skip
        return found

    async def product(self, sku: str) -> tuple[str, int, list[dict[str, Any]]] | str:
        rows = self.db.execute("SELECT id, sku, quantity FROM products WHERE sku_lower = ?", (sku.lower(),)).fetchall()
        chosen = choose(rows, sku)
        if isinstance(chosen, str):
            return chosen
        return chosen[1], chosen[2], self._listings([chosen[0]]).get(chosen[0], [])


class PostgresFloor:
    PUSH = (
        "WITH v AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::int[]) "
        "WITH ORDINALITY AS v(key, price, quantity, n)), "
        "u AS (UPDATE products p SET price = coalesce(v.price, p.price), quantity = coalesce(v.quantity, p.quantity),"
        " modified_at = $4::timestamp + v.n * interval '1 microsecond' FROM v "
        "WHERE p.sku_lower = v.key AND ((v.price IS NOT NULL AND v.price IS DISTINCT FROM p.price) "
        "OR (v.quantity IS NOT NULL AND v.quantity <> p.quantity)) RETURNING p.sku_lower) "
        "SELECT v.key, p.id IS NOT NULL, EXISTS (SELECT 1 FROM u WHERE u.sku_lower = v.key) "
        "FROM v LEFT JOIN products p ON p.sku_lower = v.key"
    )

    def __init__(self, url: str) -> None:
        self.url = url
        self.pool: Any = None

    async def open(self) -> None:
        self.pool = await asyncpg.create_pool(self.url, min_size=2, max_size=4)

    async def account(self, token: str) -> str | None:
        value = await self.pool.fetchval("SELECT account_id FROM tokens WHERE token_hash = $1", token_hash(token))
        return None if value is None else str(value)

    async def push(self, latest: dict[str, tuple[str, int | None, int | None]]) -> tuple[set[str], set[str]]:
        keys = sorted(latest)
        rows = await self.pool.fetch(
            self.PUSH,
            keys,
            [latest[key][1] for key in keys],
            [latest[key][2] for key in keys],
            datetime.now(UTC).replace(tzinfo=None),
        )
        return {row[0] for row in rows if row[1]}, {row[0] for row in rows if row[2]}

    async def page(self, since: datetime | None, limit: int, offset: int) -> tuple[list[tuple[Any, ...]], int]:
        async with self.pool.acquire() as connection, connection.transaction(isolation="repeatable_read"):
            if since is None:
                page = await connection.fetch(
                    "SELECT id, sku, quantity, modified_at FROM products ORDER BY id LIMIT $1 OFFSET $2", limit, offset
                )
                total = await connection.fetchval("SELECT count(*) FROM products")
            else:
                page = await connection.fetch(
                    "SELECT id, sku, quantity, modified_at FROM products WHERE modified_at >= $1 "
                    "ORDER BY modified_at, id LIMIT $2",
                    since,
                    limit,
                )
                total = await connection.fetchval(
                    # In index order, as the service counts (a sequential scan from the table's start otherwise).
                    "SELECT count(*) FROM (SELECT 1 FROM products WHERE modified_at >= $1 ORDER BY modified_at "
                    "LIMIT $2) AS bounded",
                    since,
                    COUNT_AHEAD,
                )
            listings = await self._listings(connection, [row[0] for row in page])
        return [(r[1], r[2], wire_time(r[3]), listings.get(r[0], [])) for r in page], total

    @staticmethod
    async def _listings(connection: Any, ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
        found: dict[int, list[dict[str, Any]]] = {}
        if not ids:
            return found
        rows = await connection.fetch(
            "SELECT product_id, platform, country, listing_id, external_sku, listing_url FROM listings "
            "WHERE product_id = ANY($1::bigint[]) ORDER BY product_id, platform, country",
            list(ids),
        )
        for product_id, platform, country, listing_id, external_sku, url in rows:
            found.setdefault(product_id, []).append(
                {"Platform": platform, "Country": country, "ListingId": listing_id, "ExternalSku": external_sku,
                 "ListingUrl": url}
            )  # fmt: skip
        return found

    async def product(self, sku: str) -> tuple[str, int, list[dict[str, Any]]] | str:
        async with self.pool.acquire() as connection:
            rows = await connection.fetch("SELECT id, sku, quantity FROM products WHERE sku_lower = $1", sku.lower())
            chosen = choose(rows, sku)
            if isinstance(chosen, str):
                return chosen
            listings = await self._listings(connection, [chosen[0]])
        return chosen[1], chosen[2], listings.get(chosen[0], [])


def choose(rows: Sequence[Any], sku: str) -> Any:
    if not rows:
        return "not-found"
    for row in rows:
        if row[1] == sku:
            return row
    return rows[0] if len(rows) == 1 else "conflict"


FLOOR: Any = None


def scaled(price: Any) -> int | None:
    # orjson gives a float; every valid price has at most 15 significant digits, so rounding is exact.
    return None if price is None else round(price * PRICE_SCALE)


async def push(request: Request) -> Response:
    account = await FLOOR.account(request.headers.get("authorization", "")[7:])
    if account is None:
        return problem(401, "unauthorized")
    body = orjson.loads(await request.body())
    items = body["Items"]
    latest: dict[str, tuple[str, int | None, int | None]] = {}
    for item in items:
        sku = item["Sku"]
        key = sku.lower()
        latest.pop(key, None)  # a repeat collapses to its last occurrence, in that occurrence's place
        latest[key] = (sku, scaled(item.get("Price")), item.get("Quantity"))
    matched, updated = await FLOOR.push(latest)
    results = []
    counts = dict(EMPTY_OUTCOMES)
    for key, (sku, _, _) in latest.items():
        outcome = "Updated" if key in updated else "Unchanged" if key in matched else "NotFound"
        counts[outcome] += 1
        results.append({"Sku": sku, "Result": outcome})
    return json_response({"RequestId": request_id(), "Results": results, **counts, "JobIds": [], "Warnings": []})


async def list_products(request: Request) -> Response:
    if await FLOOR.account(request.headers.get("authorization", "")[7:]) is None:
        return problem(401, "unauthorized")
    body = orjson.loads(await request.body() or b"{}")
    since_text = body.get("ModifiedSince")
    since: Any = None
    if since_text is not None:
        moment = datetime.fromisoformat(since_text).astimezone(UTC).replace(tzinfo=None)
        since = wire_time(moment) if isinstance(FLOOR, SqliteFloor) else moment
    page, total = await FLOOR.page(since, body.get("Limit") or 50, body.get("Offset") or 0)
    products = [
        {"Sku": sku, "Quantity": quantity, "LastModifiedDate": modified, "Listings": listings}
        for sku, quantity, modified, listings in page
    ]
    return json_response({"Products": products, "TotalCount": total})


async def get_product(request: Request) -> Response:
    if await FLOOR.account(request.headers.get("authorization", "")[7:]) is None:
        return problem(401, "unauthorized")
    found = await FLOOR.product(request.path_params["sku"])
    if found == "not-found":
        return problem(404, "not-found")
    if found == "conflict":
        return problem(409, "conflict")
    sku, quantity, listings = found
    return json_response({"Product": {"Sku": sku, "Quantity": quantity, "Listings": listings}})


async def ready(request: Request) -> Response:
    return json_response({})


@asynccontextmanager
async def lifespan(_app: Starlette) -> AsyncIterator[None]:
    global FLOOR
    url = os.environ["FLOOR_DATABASE"]
    if url.startswith("sqlite:///"):
        FLOOR = SqliteFloor(url.removeprefix("sqlite:///"))
    else:
        FLOOR = PostgresFloor(url)
        await FLOOR.open()
    yield


app = Starlette(
    routes=[
        Route("/readyz", ready),
        Route("/api/inventory/price-quantity", push, methods=["POST"]),
        Route("/api/products/List", list_products, methods=["POST"]),
        Route("/api/products/{sku:path}", get_product),
    ],
    lifespan=lifespan,
)
