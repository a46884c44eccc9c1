"""Products' one SKU index, unique on (account_id, sku_lower, sku) (migration 0022, docs/decisions/0299-one-sku-
index.md): an exact SKU is still unique within an account, its case variants still coexist, on both databases."""

from __future__ import annotations

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError

from marketsync import migrate
from marketsync.db import Database
from marketsync.models import Product
from marketsync.runtime import Runtime
from tests.inventory.support import insert_accounts, product_rows
from tests.support.databases import downgrade
from tests.support.factories import make_tenant

ACCOUNTS = ("ACCT0".ljust(26, "0"), "ACCT1".ljust(26, "0"))


async def test_an_exact_sku_is_unique_in_its_account_and_its_case_variants_coexist(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    first, second = [await make_tenant(rt, api) for _ in range(2)]
    async with rt.db.transaction() as session:
        await session.execute(insert(Product), product_rows(first.account_id, ["Ab-1", "AB-1"]))
        await session.execute(insert(Product), product_rows(second.account_id, ["Ab-1"]))  # another account's own
    with pytest.raises(IntegrityError):
        async with rt.db.transaction() as session:
            await session.execute(insert(Product), product_rows(first.account_id, ["Ab-1"]))


async def test_the_migration_keeps_every_product_and_goes_back(empty_url: str) -> None:
    db = Database(empty_url)
    try:
        await migrate.upgrade(db, "0021")
        async with db.write_engine.begin() as conn:
            await insert_accounts(conn, list(ACCOUNTS))
            rows = product_rows(ACCOUNTS[0], ["Sku-1", "SKU-1"]) + product_rows(ACCOUNTS[1], ["Sku-1"])
            await conn.execute(Product.__table__.insert(), rows)
        await migrate.upgrade(db)

        async with db.engine.connect() as conn:
            indexes = await conn.run_sync(
                lambda sync: {index["name"] for index in sa.inspect(sync).get_indexes("products")}
            )
            kept = (await conn.execute(sa.text("SELECT account_id, sku FROM products ORDER BY account_id, sku"))).all()
        assert "uq_products_account_sku_lower_sku" in indexes and "ix_products_account_sku_lower" not in indexes
        assert [tuple(row) for row in kept] == [(ACCOUNTS[0], "SKU-1"), (ACCOUNTS[0], "Sku-1"), (ACCOUNTS[1], "Sku-1")]
        with pytest.raises(IntegrityError):
            async with db.write_engine.begin() as conn:
                await conn.execute(Product.__table__.insert(), product_rows(ACCOUNTS[0], ["SKU-1"]))

        async with db.write_engine.connect() as conn:
            await conn.run_sync(downgrade, "0021")
            indexes = await conn.run_sync(
                lambda sync: {index["name"] for index in sa.inspect(sync).get_indexes("products")}
            )
        assert "ix_products_account_sku_lower" in indexes and "uq_products_account_sku_lower_sku" not in indexes
        with pytest.raises(IntegrityError):  # UNIQUE (account_id, sku) again on both databases
            async with db.write_engine.begin() as conn:
                await conn.execute(Product.__table__.insert(), product_rows(ACCOUNTS[0], ["SKU-1"]))
    finally:
        await db.dispose()
