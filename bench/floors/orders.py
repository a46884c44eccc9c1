"""The floor of `POST /api/orders/List` (DESIGN.md §6): the least work any correct server does for one page of stored
order documents, served like marketsync (uvicorn, uvloop, httptools) with nothing of the service's code.

    FLOOR_DATABASE=sqlite:///path | postgresql://... FLOOR_HASH_KEY=... uvicorn bench.floors.orders:app --port N

A bearer check (a token table by SHA-256), the JSON body parsed with orjson (Limit, Cursor), one keyset query on a
table holding only account_id, updated_at, id and the document with the one index (account_id, updated_at, id), a
signed cursor for the next page (payload.mac, as the service's), and the page's bytes joined around the stored
documents: `{"Orders":[...],"NextCursor":...,"NextUpdatedSince":...}`. `create_schema_sql` builds its tables.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

SQLITE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS tokens (token_hash TEXT PRIMARY KEY, account_id TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS orders (account_id TEXT NOT NULL, updated_at TEXT NOT NULL, id TEXT NOT NULL, "
    "document BLOB NOT NULL)",
    "CREATE INDEX IF NOT EXISTS orders_keyset ON orders (account_id, updated_at, id)",
)
POSTGRES_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS floor_tokens (token_hash TEXT PRIMARY KEY, account_id TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS floor_orders (account_id TEXT NOT NULL, updated_at TIMESTAMP NOT NULL, "
    "id TEXT NOT NULL, document BYTEA NOT NULL)",
    "CREATE INDEX IF NOT EXISTS floor_orders_keyset ON floor_orders (account_id, updated_at, id)",
)
SETTLE = timedelta(seconds=5)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _stamp(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")


def _problem(status: int, code: str) -> Response:
    body = {"type": f"urn:service:error:{code}", "title": code, "status": status, "code": code, "errors": {}}
    return Response(orjson.dumps(body), status, media_type="application/problem+json")


class Floor:
    def __init__(self, url: str, key: bytes) -> None:
        self.url = url
        self.key = key
        self.postgres = url.startswith("postgresql")
        self.sqlite: sqlite3.Connection | None = None
        self.pool: Any = None

    async def open(self) -> None:
        if self.postgres:
            self.pool = await asyncpg.create_pool(self.url, min_size=2, max_size=4)
        else:
            self.sqlite = sqlite3.connect(self.url.removeprefix("sqlite:///"), isolation_level=None)
            self.sqlite.execute("PRAGMA journal_mode=WAL")

    async def close(self) -> None:
        if self.pool is not None:
            await self.pool.close()
        if self.sqlite is not None:
            self.sqlite.close()

    async def account_of(self, token: str) -> str | None:
        if self.sqlite is not None:
            row = self.sqlite.execute("SELECT account_id FROM tokens WHERE token_hash = ?", (token_hash(token),))
            found = row.fetchone()
            return None if found is None else str(found[0])
        value = await self.pool.fetchval("SELECT account_id FROM floor_tokens WHERE token_hash = $1", token_hash(token))
        return None if value is None else str(value)

    async def page(
        self, account_id: str, after: tuple[datetime, str] | None, high_water: datetime, limit: int
    ) -> list[tuple[datetime, str, bytes]]:
        if self.sqlite is not None:
            where = "account_id = ? AND updated_at <= ?"
            params: list[Any] = [account_id, high_water.strftime("%Y-%m-%d %H:%M:%S.%f")]
            if after is not None:
                where += " AND (updated_at, id) > (?, ?)"
                params += [after[0].strftime("%Y-%m-%d %H:%M:%S.%f"), after[1]]
            sql = f"SELECT updated_at, id, document FROM orders WHERE {where} ORDER BY updated_at, id LIMIT ?"
            rows = self.sqlite.execute(sql, [*params, limit]).fetchall()
            return [(datetime.fromisoformat(r[0]), r[1], r[2]) for r in rows]
        where = "account_id = $1 AND updated_at <= $2"
        args: list[Any] = [account_id, high_water]
        if after is not None:
            where += " AND (updated_at, id) > ($3, $4)"
            args += list(after)
        sql = (
            f"SELECT updated_at, id, document FROM floor_orders WHERE {where} ORDER BY updated_at, id "
            f"LIMIT ${len(args) + 1}"
        )
        records = await self.pool.fetch(sql, *args, limit)
        return [(r[0], r[1], bytes(r[2])) for r in records]

    def cursor(self, last: tuple[datetime, str], high_water: datetime) -> str:
        payload = orjson.dumps({"u": _stamp(last[0]), "i": last[1], "h": _stamp(high_water), "f": ""})
        return f"{_b64(payload)}.{_b64(hmac.new(self.key, payload, hashlib.sha256).digest())}"

    def read_cursor(self, text: str) -> tuple[tuple[datetime, str], datetime] | None:
        payload_text, _, mac_text = text.partition(".")
        try:
            payload, mac = _unb64(payload_text), _unb64(mac_text)
        except ValueError:
            return None
        if not hmac.compare_digest(mac, hmac.new(self.key, payload, hashlib.sha256).digest()):
            return None
        fields = orjson.loads(payload)
        return (_parse(fields["u"]), fields["i"]), _parse(fields["h"])


async def list_orders(request: Request) -> Response:
    floor: Floor = request.app.state.floor
    header = request.headers.get("authorization", "")
    account_id = await floor.account_of(header[7:]) if header.startswith("Bearer ") else None
    if account_id is None:
        return _problem(401, "unauthorized")
    body = orjson.loads(await request.body() or b"{}")
    limit = int(body.get("Limit", 50))
    after: tuple[datetime, str] | None = None
    if body.get("Cursor"):
        read = floor.read_cursor(body["Cursor"])
        if read is None:
            return _problem(400, "validation-failed")
        after, high_water = read
    else:
        high_water = datetime.now(UTC).replace(tzinfo=None)
    rows = await floor.page(account_id, after, high_water, limit + 1)
    more = len(rows) > limit
    del rows[limit:]
    next_cursor = floor.cursor((rows[-1][0], rows[-1][1]), high_water) if more else None
    tail = orjson.dumps({"NextCursor": next_cursor, "NextUpdatedSince": _stamp(high_water - SETTLE)})
    content = b"".join((b'{"Orders":[', b",".join(r[2] for r in rows), b"],", tail[1:]))
    return Response(content, media_type="application/json", headers={"cache-control": "no-store"})


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    floor = Floor(os.environ["FLOOR_DATABASE"], os.environ["FLOOR_HASH_KEY"].encode())
    await floor.open()
    app.state.floor = floor
    try:
        yield
    finally:
        await floor.close()


app = Starlette(routes=[Route("/api/orders/List", list_orders, methods=["POST"])], lifespan=lifespan)
