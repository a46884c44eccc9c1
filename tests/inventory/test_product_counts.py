"""Each account's number of products, kept by the database's triggers (migration 0021, docs/decisions/0298-product-
counts.md): the exact TotalCount of a products page without ModifiedSince, without reading the catalogue. Whatever
writes products is counted, in its own transaction; on both databases."""

from __future__ import annotations

import asyncio

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy import delete, insert, select

from marketsync import migrate
from marketsync.db import Database, insert_for
from marketsync.models import Account, Product
from marketsync.models.inventory import ProductCount
from marketsync.runtime import Runtime
from tests.inventory.support import add_products, insert_accounts, product_rows
from tests.support.databases import downgrade
from tests.support.factories import make_tenant

ACCOUNTS = ("ACCT0".ljust(26, "0"), "ACCT1".ljust(26, "0"))


async def _kept_and_counted(rt: Runtime) -> tuple[dict[str, int], dict[str, int]]:
    """(the counts the triggers keep, the products counted one by one), per account."""
    async with rt.db.read() as session:
        kept_rows = await session.execute(select(ProductCount.account_id, ProductCount.products))
        counted_rows = await session.execute(select(Product.account_id, sa.func.count()).group_by(Product.account_id))
        kept = {account_id: products for account_id, products in kept_rows}
        counted = {account_id: products for account_id, products in counted_rows}
    return kept, counted


async def _total_count(api: httpx.AsyncClient, headers: dict[str, str]) -> int:
    response = await api.post("/api/products/List", json={"Limit": 1}, headers=headers)
    assert response.status_code == 200, response.text
    return int(response.json()["TotalCount"])


async def test_every_insert_and_delete_is_counted_for_its_account(rt: Runtime, api: httpx.AsyncClient) -> None:
    first, second, empty = [await make_tenant(rt, api) for _ in range(3)]
    await add_products(rt, first.account_id, [(f"A-{i}", "1", 1) for i in range(5)])  # one row at a time
    async with rt.db.transaction() as session:  # one statement, two accounts' rows
        rows = product_rows(first.account_id, ["B-1", "B-2"]) + product_rows(second.account_id, ["C-1", "C-2", "C-3"])
        await session.execute(insert(Product), rows)
    async with rt.db.transaction() as session:
        await session.execute(delete(Product).where(Product.sku.in_(["A-0", "A-1", "C-1"])))
    async with rt.db.transaction() as session:  # an upsert counts what it inserts, not what it skips (the demo's)
        upsert = insert_for(session, Product.__table__).on_conflict_do_nothing(
            index_elements=["account_id", "sku_lower", "sku"]
        )
        await session.execute(upsert, product_rows(second.account_id, ["C-2", "C-4"]))
    with pytest.raises(RuntimeError):  # a rolled-back insert counts nothing
        async with rt.db.transaction() as session:
            await session.execute(insert(Product), product_rows(first.account_id, ["D-1"]))
            raise RuntimeError

    expected = {first.account_id: 5, second.account_id: 3}
    assert await _kept_and_counted(rt) == (expected, expected)
    assert await _total_count(api, first.headers) == 5
    assert await _total_count(api, second.headers) == 3
    assert await _total_count(api, empty.headers) == 0, "an account without products has no row: 0"

    async with rt.db.transaction() as session:  # an account's deletion takes its count along
        await session.execute(delete(Account).where(Account.id == second.account_id))
    assert await _kept_and_counted(rt) == ({first.account_id: 5}, {first.account_id: 5})


async def test_concurrent_inserts_of_one_account_are_all_counted(rt: Runtime, api: httpx.AsyncClient) -> None:
    """The second transaction's count waits for the first's (its row lock on PostgreSQL, the one writer on SQLite)
    and adds to it."""
    tenant = await make_tenant(rt, api)
    inserted = asyncio.Event()

    async def first() -> None:
        async with rt.db.transaction() as session:
            await session.execute(insert(Product), product_rows(tenant.account_id, ["F-1", "F-2", "F-3"]))
            inserted.set()
            await asyncio.sleep(0.2)

    async def second() -> None:
        await inserted.wait()
        async with rt.db.transaction() as session:
            await session.execute(insert(Product), product_rows(tenant.account_id, ["S-1", "S-2"]))

    await asyncio.gather(first(), second())
    assert await _kept_and_counted(rt) == ({tenant.account_id: 5}, {tenant.account_id: 5})
    assert await _total_count(api, tenant.headers) == 5


async def test_the_migration_counts_the_products_already_there_and_goes_back(empty_url: str) -> None:
    db = Database(empty_url)
    try:
        await migrate.upgrade(db, "0020")
        products = Product.__table__
        async with db.write_engine.begin() as conn:
            await insert_accounts(conn, list(ACCOUNTS))
            await conn.execute(products.insert(), product_rows(ACCOUNTS[0], ["X-1", "X-2"]))
            await conn.execute(products.insert(), product_rows(ACCOUNTS[1], ["Y-1"]))
        await migrate.upgrade(db)
        async with db.engine.connect() as conn:
            kept = (await conn.execute(sa.text("SELECT account_id, products FROM product_counts"))).all()
        assert sorted(tuple(row) for row in kept) == [(ACCOUNTS[0], 2), (ACCOUNTS[1], 1)]

        async with db.write_engine.connect() as conn:
            await conn.run_sync(downgrade, "0020")
            await conn.execute(products.insert(), product_rows(ACCOUNTS[1], ["Y-2"]))  # no trigger is left
            tables = await conn.run_sync(lambda sync: sa.inspect(sync).get_table_names())
            await conn.commit()
        assert "product_counts" not in tables
    finally:
        await db.dispose()
