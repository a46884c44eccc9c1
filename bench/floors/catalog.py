"""The floors of category search and product create (DESIGN.md section 6): the same HTTP operations done with the
least work any correct server must do, served like marketsync (one uvicorn process, uvloop, httptools), orjson,
the raw driver (sqlite3 in WAL mode / asyncpg), tables holding only the columns the operation needs and its indexes
(the text index, the tree order as primary key, the category id for the id match).

- POST /search: the body of POST /api/product-types/Search for one site's leaves (the generated P1 taxonomy of
  CATALOG_FLOOR_CATEGORIES categories; with CATALOG_FLOOR_SYNTHETIC=1, bench/tools/synthetic_taxonomy.py's of that
  size): `name_lower LIKE '%text%'` found through the one text index (SQLite: an FTS5 trigram table asked for
  the text's two rarest trigrams; PostgreSQL: a pg_trgm GIN index), or the walk of the position index; count and
  page in one statement; the same response body (ProductTypes with CategoryId, Title, Path; TotalCount).
- POST /create: the body of POST /api/products/Create: every attribute checked against the category's schema
  held in memory (code known, type, closed set), then in one transaction the product upserted on its SKU with its
  quantity and the listing's attributes, and a publish job inserted; the same response body.
No authentication (the bare request's cost is what it measures). Run by bench.runs.catalog_http:
    CATALOG_FLOOR_DB=sqlite:///path|postgresql://... python -m bench.floors.catalog PORT
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bench.tools import synthetic_taxonomy
from marketsync.catalog.taxonomy import AttributeSpec
from marketsync.marketplaces.sandbox import taxonomies as shipped

DB = os.environ.get("CATALOG_FLOOR_DB", "sqlite:///catalog-floor.db")
CATEGORIES = int(os.environ.get("CATALOG_FLOOR_CATEGORIES", "20000"))
POSTGRES = DB.startswith("postgresql")
LAPTOPS = shipped.ANCHOR_IDS["P1"]["Laptops"]

SYNTHETIC = os.environ.get("CATALOG_FLOOR_SYNTHETIC") == "1"
# The synthetic taxonomy has no schemas: the create's comes from the shipped one (its anchors' schemas are fixed).
taxonomy = shipped.generate("P1", 1, 2000 if SYNTHETIC else CATEGORIES)
SCHEMA: dict[str, AttributeSpec] = {a.code: a for a in (taxonomy.get(LAPTOPS).attributes or ()) if a.api_settable}  # type: ignore[union-attr]


def _leaves() -> list[tuple[str, str, str]]:
    """(category_id, name, path) of the site's leaves in tree order."""
    if SYNTHETIC:
        return [(c[0], c[2], c[3]) for c in synthetic_taxonomy.categories(CATEGORIES) if c[5]]
    return [(c.category_id, c.name, c.path) for c in taxonomy.leaves]


state: dict[str, Any] = {}


def _setup_sqlite(path: str) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    connection.executescript(
        "DROP TABLE IF EXISTS leaves; DROP TABLE IF EXISTS leaf_names; DROP TABLE IF EXISTS products;"
        "DROP TABLE IF EXISTS jobs;"
        "CREATE TABLE leaves (position INTEGER PRIMARY KEY, category_id TEXT UNIQUE, name TEXT, path TEXT);"
        "CREATE VIRTUAL TABLE leaf_names USING fts5(name_lower, tokenize = 'trigram case_sensitive 1');"
        "CREATE TABLE products (sku TEXT PRIMARY KEY, quantity INTEGER, category_id TEXT, attributes BLOB);"
        "CREATE TABLE jobs (id TEXT PRIMARY KEY, payload BLOB);"
    )
    leaves = _leaves()
    connection.execute("BEGIN")
    connection.executemany("INSERT INTO leaves VALUES (?, ?, ?, ?)", [(i, *leaf) for i, leaf in enumerate(leaves)])
    connection.executemany(
        "INSERT INTO leaf_names (rowid, name_lower) VALUES (?, ?)",
        [(i, name.lower()) for i, (_, name, _) in enumerate(leaves)],
    )
    connection.execute("COMMIT")
    # How many leaves hold each trigram, held in memory: a search asks the index for its text's two rarest.
    connection.execute("CREATE VIRTUAL TABLE temp.leaf_trigrams USING fts5vocab(main, leaf_names, row)")
    state["trigram_leaves"] = dict(connection.execute("SELECT term, doc FROM temp.leaf_trigrams").fetchall())
    return connection


async def _setup_postgres(url: str) -> Any:
    connection = await asyncpg.connect(url)
    await connection.execute(
        "CREATE EXTENSION IF NOT EXISTS pg_trgm;"
        "DROP TABLE IF EXISTS floor_leaves, floor_products, floor_jobs;"
        "CREATE TABLE floor_leaves (position integer PRIMARY KEY, category_id varchar(40), name varchar(200), "
        "name_lower varchar(200), path varchar(2000));"
        "CREATE TABLE floor_products (sku varchar(200) PRIMARY KEY, quantity integer, category_id varchar(40), "
        "attributes jsonb);"
        "CREATE TABLE floor_jobs (id varchar(40) PRIMARY KEY, payload jsonb);"
    )
    await connection.copy_records_to_table(
        "floor_leaves",
        records=[(i, category_id, name, name.lower(), path) for i, (category_id, name, path) in enumerate(_leaves())],
    )
    await connection.execute("CREATE INDEX floor_leaves_trgm ON floor_leaves USING gin (name_lower gin_trgm_ops)")
    await connection.execute("CREATE UNIQUE INDEX floor_leaves_id ON floor_leaves (category_id)")  # the id match
    await connection.execute("VACUUM ANALYZE floor_leaves")
    return connection


@contextlib.asynccontextmanager
async def lifespan(_: Starlette) -> AsyncIterator[None]:
    if POSTGRES:
        state["pg"] = await _setup_postgres(DB)
    else:
        state["sqlite"] = _setup_sqlite(DB.removeprefix("sqlite:///"))
    yield


def _pattern(needle: str) -> str:
    return "%" + needle.replace("/", "//").replace("%", "/%").replace("_", "/_") + "%"


async def search(request: Request) -> Response:
    body = orjson.loads(await request.body())
    text = (body.get("SearchText") or "").strip()
    limit, offset = int(body.get("Limit") or 50), int(body.get("Offset") or 0)
    needle = text.lower()
    if POSTGRES:
        if text:
            # OFFSET 0 keeps the trigram match apart: the plan kept for this prepared statement (the pattern
            # unknown) reads the trigram index instead of walking the primary key with a filter.
            hits = "(SELECT position FROM floor_leaves WHERE name_lower LIKE $1 ESCAPE '/' OFFSET 0)"
            args: list[Any] = [_pattern(needle)]
            if text.isdigit():
                hits = f"{hits} UNION SELECT position FROM floor_leaves WHERE category_id = $4"
                args.append(text)
            sql = (
                f"SELECT l.category_id, l.name, l.path, p.total FROM (SELECT position, count(*) OVER () AS total "
                f"FROM ({hits}) h ORDER BY position LIMIT $2 OFFSET $3) p JOIN floor_leaves l USING (position) "
                "ORDER BY l.position"
            )
            rows = await state["pg"].fetch(sql, args[0], limit, offset, *args[1:])
            total = rows[0][3] if rows else 0
        else:
            total = await state["pg"].fetchval("SELECT count(*) FROM floor_leaves")
            rows = await state["pg"].fetch(
                "SELECT category_id, name, path FROM floor_leaves ORDER BY position LIMIT $1 OFFSET $2", limit, offset
            )
    else:
        connection: sqlite3.Connection = state["sqlite"]
        if text:
            if len(needle) >= 3:
                hits = (
                    "SELECT rowid AS position FROM leaf_names WHERE name_lower MATCH ? AND name_lower LIKE ? ESCAPE '/'"
                )
                counts = state["trigram_leaves"]
                grams = {needle[start : start + 3] for start in range(len(needle) - 2)}
                rarest = sorted(grams, key=lambda gram: counts.get(gram, 0))[:2]
                query = " AND ".join('"' + gram.replace('"', '""') + '"' for gram in rarest)
                args = [query, _pattern(needle)]
            else:
                hits = "SELECT rowid AS position FROM leaf_names WHERE name_lower LIKE ? ESCAPE '/'"
                args = [_pattern(needle)]
            if text.isdigit():
                hits += " UNION SELECT position FROM leaves WHERE category_id = ?"
                args.append(text)
        if text:
            rows = connection.execute(
                "SELECT l.category_id, l.name, l.path, p.total FROM (SELECT position, count(*) OVER () AS total "
                f"FROM ({hits}) ORDER BY position LIMIT ? OFFSET ?) p JOIN leaves l USING (position) "
                "ORDER BY l.position",
                [*args, limit, offset],
            ).fetchall()
            total = rows[0][3] if rows else 0
        else:
            total = connection.execute("SELECT count(*) FROM leaves").fetchone()[0]
            rows = connection.execute(
                "SELECT category_id, name, path FROM leaves ORDER BY position LIMIT ? OFFSET ?", (limit, offset)
            ).fetchall()
    types = [{"CategoryId": r[0], "Title": r[1], "Path": r[2]} for r in rows]
    return Response(orjson.dumps({"ProductTypes": types, "TotalCount": total}), media_type="application/json")


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _check(spec: AttributeSpec, value: Any) -> Any:
    """The value as stored, or ValueError: the type and, for a closed set, a value of it (any case)."""
    if spec.type == "Boolean":
        if isinstance(value, bool):
            return value
        if value in ("true", "false"):
            return value == "true"
    elif spec.type == "Integer":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.isdigit():
            return int(value)
    elif spec.type == "Decimal":
        try:
            return str(Decimal(str(value)))
        except InvalidOperation:
            pass
    elif spec.type == "Date":
        if isinstance(value, str) and _DATE.match(value):
            return date.fromisoformat(value).isoformat()
    elif isinstance(value, str):
        if spec.is_closed_set:
            for allowed in spec.allowed_values:
                if allowed.value.lower() == value.lower():
                    return allowed.value
            raise ValueError("not in the set")
        return value
    raise ValueError(f"not a {spec.type}")


async def create(request: Request) -> Response:
    body = orjson.loads(await request.body())
    errors: dict[str, list[str]] = {}
    values: dict[str, Any] = {}
    for code, value in (body.get("Attributes") or {}).items():
        spec = SCHEMA.get(code)
        if spec is None:
            errors[f"Attributes.{code}"] = ["Unknown"]
            continue
        try:
            values[code] = _check(spec, value)
        except ValueError as exc:
            errors[f"Attributes.{code}"] = [str(exc)]
    if errors:
        return Response(orjson.dumps({"errors": errors}), status_code=400, media_type="application/problem+json")
    sku, quantity, category_id = body["Sku"], body.get("Quantity"), body.get("CategoryId")
    job_id = uuid.uuid4().hex
    attributes = orjson.dumps(values)
    payload = orjson.dumps({"Sku": sku, "MarketplaceId": body["MarketplaceId"]})
    upsert = (
        "INSERT INTO {t} (sku, quantity, category_id, attributes) VALUES ({p}) ON CONFLICT (sku) DO UPDATE SET "
        "quantity = excluded.quantity, category_id = excluded.category_id, attributes = excluded.attributes"
    )
    if POSTGRES:
        connection = state["pg"]
        async with connection.transaction():
            await connection.execute(
                upsert.format(t="floor_products", p="$1, $2, $3, $4"), sku, quantity, category_id, attributes.decode()
            )
            await connection.execute("INSERT INTO floor_jobs VALUES ($1, $2)", job_id, payload.decode())
    else:
        db: sqlite3.Connection = state["sqlite"]
        db.execute("BEGIN IMMEDIATE")
        db.execute(upsert.format(t="products", p="?, ?, ?, ?"), (sku, quantity, category_id, attributes))
        db.execute("INSERT INTO jobs VALUES (?, ?)", (job_id, payload))
        db.execute("COMMIT")
    answer = {
        "RequestId": uuid.uuid4().hex,
        "ProductId": sku,
        "Sku": sku,
        "ListingAction": "Create",
        "ExistingListingId": None,
        "JobId": job_id,
        "Warnings": [],
    }
    return Response(orjson.dumps(answer), media_type="application/json")


async def ready(_: Request) -> Response:
    return Response(b"{}", media_type="application/json")


app = Starlette(
    routes=[
        Route("/search", search, methods=["POST"]),
        Route("/create", create, methods=["POST"]),
        Route("/readyz", ready),
    ],
    lifespan=lifespan,
)

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", loop="uvloop", http="httptools")
