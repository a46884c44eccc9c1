"""Helpers of the catalogue tests: products and listings straight into the database, pushes over HTTP."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import sqlalchemy as sa
from sqlalchemy import event, select, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from marketsync.kit import jsonio
from marketsync.kit.ids import new_id
from marketsync.models import Event, Job, Listing, Product
from marketsync.models.base import UTCDateTime
from marketsync.runtime import Runtime
from tests.console.support import Browser
from tests.support.factories import Tenant

PUSH = "/api/inventory/price-quantity"
# Accounts as migration 0001 made them: a migration's test fills a database at an older revision than the models'.
_ACCOUNTS_AT_0001 = sa.table("accounts", sa.column("id"), sa.column("name"), sa.column("created_at", UTCDateTime()))
FIXED_TIME = datetime(2026, 1, 1, tzinfo=UTC)


def product_rows(account_id: str, skus: list[str]) -> list[dict[str, Any]]:
    """Rows of `products` for a Core insert (quantity 1, one fixed time), e.g. to test what the schema enforces."""
    return [
        {"id": new_id(), "account_id": account_id, "sku": sku, "sku_lower": sku.lower(), "quantity": 1,
         "modified_at": FIXED_TIME, "created_at": FIXED_TIME}
        for sku in skus
    ]  # fmt: skip


async def insert_accounts(connection: AsyncConnection, account_ids: list[str]) -> None:
    """Accounts named by their ids, in a database at any revision."""
    rows = [{"id": account_id, "name": account_id, "created_at": FIXED_TIME} for account_id in account_ids]
    await connection.execute(_ACCOUNTS_AT_0001.insert(), rows)


async def add_products(
    rt: Runtime,
    account_id: str,
    specs: list[tuple[str, Decimal | str | None, int]],
    modified_at: datetime | None = None,
) -> dict[str, str]:
    """Products (sku, price, quantity), one microsecond apart like every real writer; returns sku -> id."""
    base = modified_at or rt.clock.now() - timedelta(days=1)
    ids: dict[str, str] = {}
    async with rt.db.transaction() as session:
        for index, (sku, price, quantity) in enumerate(specs):
            product = Product(
                id=new_id(),
                account_id=account_id,
                sku=sku,
                sku_lower=sku.lower(),
                price=Decimal(price) if price is not None else None,
                quantity=quantity,
                title=f"Product {sku}",
                modified_at=base + timedelta(microseconds=index),
                created_at=base,
            )
            session.add(product)
            ids[sku] = product.id
    return ids


async def add_listing(
    rt: Runtime,
    account_id: str,
    product_id: str,
    marketplace_id: str,
    *,
    listing_id: str | None = "L-1",
    status: str = "Live",
) -> None:
    now = rt.clock.now()
    async with rt.db.transaction() as session:
        session.add(
            Listing(
                id=new_id(),
                account_id=account_id,
                product_id=product_id,
                marketplace_id=marketplace_id,
                listing_id=listing_id,
                external_sku=f"EXT-{listing_id}" if listing_id else None,
                listing_url=f"https://listings.example/{listing_id}" if listing_id else None,
                category_id=None,
                attributes={},
                status=status,
                created_at=now,
                updated_at=now,
            )
        )


async def stored(rt: Runtime, account_id: str) -> dict[str, tuple[Decimal | None, int, datetime]]:
    async with rt.db.read() as session:
        rows = (await session.execute(select(Product).where(Product.account_id == account_id))).scalars().all()
        return {row.sku: (row.price, row.quantity, row.modified_at) for row in rows}


async def inventory_events(rt: Runtime, account_id: str) -> list[Event]:
    """InventoryChanged events in the order the changes happened (occurred_at is taken under the row locks)."""
    async with rt.db.read() as session:
        result = await session.execute(
            select(Event)
            .where(Event.account_id == account_id, Event.type == "InventoryChanged")
            .order_by(Event.occurred_at, Event.id)
        )
        return list(result.scalars().all())


def payloads(events: list[Event]) -> list[dict[str, Any]]:
    return [jsonio.loads(event.body) for event in events]


async def jobs_of(rt: Runtime, account_id: str) -> list[Job]:
    async with rt.db.read() as session:
        result = await session.execute(select(Job).where(Job.account_id == account_id).order_by(Job.id))
        return list(result.scalars().all())


async def push(api: httpx.AsyncClient, tenant: Tenant, items: list[dict[str, Any]], **extra: Any) -> httpx.Response:
    return await api.post(PUSH, json={"Items": items, **extra}, headers=tenant.headers)


async def push_ok(api: httpx.AsyncClient, tenant: Tenant, items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    response = await push(api, tenant, items, **extra)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def install_failure_trigger(rt: Runtime, sku: str) -> None:
    """Make any UPDATE of this SKU fail inside the database (a real per-row write failure)."""
    async with rt.db.transaction() as session:
        if rt.db.is_sqlite:
            await session.execute(
                text(
                    "CREATE TRIGGER inventory_test_fail BEFORE UPDATE ON products "
                    f"WHEN NEW.sku = '{sku}' BEGIN SELECT RAISE(ABORT, 'forced failure'); END"
                )
            )
        else:
            await session.execute(
                text(
                    "CREATE OR REPLACE FUNCTION inventory_test_fail() RETURNS trigger AS $$ BEGIN "
                    f"IF NEW.sku = '{sku}' THEN RAISE EXCEPTION 'forced failure'; END IF; RETURN NEW; END $$ "
                    "LANGUAGE plpgsql"
                )
            )
            await session.execute(
                text(
                    "CREATE TRIGGER inventory_test_fail BEFORE UPDATE ON products "
                    "FOR EACH ROW EXECUTE FUNCTION inventory_test_fail()"
                )
            )


async def drop_failure_trigger(rt: Runtime) -> None:
    async with rt.db.transaction() as session:
        if rt.db.is_sqlite:
            await session.execute(text("DROP TRIGGER IF EXISTS inventory_test_fail"))
        else:
            await session.execute(text("DROP TRIGGER IF EXISTS inventory_test_fail ON products"))
            await session.execute(text("DROP FUNCTION IF EXISTS inventory_test_fail()"))


async def upload_file(
    person: Browser, content: bytes, name: str = "stock.csv", *, propagate: bool = True
) -> httpx.Response:
    """A price list uploaded in the app, as a person would (the imports page's form, its CSRF token)."""
    token = re.search(r'name="csrf" value="([^"]+)"', (await person.page("/app/imports")).text).group(1)  # type: ignore[union-attr]
    data = {"csrf": token, **({"propagate": "1"} if propagate else {})}
    return await person.client.post("/app/imports", data=data, files={"file": (name, content, "text/csv")})


@contextmanager
def statements_of(rt: Runtime) -> Iterator[list[tuple[str, Any]]]:
    """Every statement the write engine runs inside the block, with its parameters."""
    seen: list[tuple[str, Any]] = []

    def keep(_conn: Connection, _cursor: Any, statement: str, parameters: Any, *_rest: Any) -> None:
        seen.append((statement, parameters))

    engine = rt.db.write_engine.sync_engine
    event.listen(engine, "before_cursor_execute", keep)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", keep)
