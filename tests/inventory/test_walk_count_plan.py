"""The ModifiedSince walk's bounded count reads the index from where the walk stands (docs/decisions/0271), never a
sequential scan from the table's start, and counts what it counted before; a page's listings are index probes in
every plan of the page statement (docs/decisions/0342)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from marketsync.db import DriverReader
from marketsync.db._fast import DriverSql
from marketsync.inventory import repository
from marketsync.models import Listing, Product
from marketsync.runtime import Runtime
from tests.support.bulk import insert_many
from tests.support.factories import make_account, make_connection
from tests.support.plans import Explaining

START = datetime(2026, 1, 1, tzinfo=UTC)
PRODUCTS = 20_000


def _products(account_id: str, count: int) -> list[dict[str, object]]:
    """`count` products of the account changed one second apart from START, ids in change order."""
    return [
        {
            "id": f"P{i:025d}",
            "account_id": account_id,
            "sku": f"W-{i}",
            "sku_lower": f"w-{i}",
            "quantity": 1,
            "modified_at": START + timedelta(seconds=i),
            "created_at": START + timedelta(seconds=i),
        }
        for i in range(count)
    ]


async def bounded_count(rt: Runtime, account_id: str, since: datetime, at_most: int) -> tuple[int, str]:
    async def work(reader: DriverReader) -> tuple[int, str]:
        explaining = Explaining(reader)
        count = await repository.count_of_products(
            explaining, account_id, key=None, modified_since=since, at_most=at_most
        )
        return count, explaining.plans[0]

    return await rt.db.driver_read(work)


async def test_the_bounded_count_reads_the_index_from_the_walk_position(rt: Runtime) -> None:
    """Products stored in change order, most of them changed after `since`: the count of a walk standing at the
    12,000th change reads the index there (PostgreSQL planned a sequential scan over the 12,000 older rows)."""
    account_id = await make_account(rt)
    async with rt.db.transaction() as session:
        await insert_many(session, Product, _products(account_id, PRODUCTS))
        await session.execute(text("ANALYZE products"))
    since = START + timedelta(seconds=12_000)
    count, plan = await bounded_count(rt, account_id, since, 1_000)
    assert count == 1_000
    assert "ix_products_account_modified" in plan and "Seq Scan" not in plan, plan
    count, _ = await bounded_count(rt, account_id, since, 10_000)
    assert count == PRODUCTS - 12_000


async def test_the_page_statement_probes_the_pages_listings_in_its_generic_plan(rt: Runtime) -> None:
    """asyncpg prepares the page statement; after five runs PostgreSQL may keep a generic plan, which does not know
    the LIMIT. Without the fence of decision 0342 that plan hashed every listing of the account (15 ms at 40,000
    listings); each product's listings must stay an index probe whatever the plan."""
    if rt.db.is_sqlite:
        pytest.skip("PostgreSQL only: SQLite reads the page in three statements and prepares no generic plan")
    account_id = await make_account(rt)
    connections = [(await make_connection(rt, account_id, "P1", country)).id for country in ("UK", "DE", "FR")]
    count = 4_000
    async with rt.db.transaction() as session:
        await insert_many(session, Product, _products(account_id, count))
        await insert_many(
            session,
            Listing,
            [
                {
                    "id": f"L{i:020d}{n}",
                    "account_id": account_id,
                    "product_id": f"P{i:025d}",
                    "marketplace_id": marketplace,
                    "listing_id": f"X-{i}-{n}",
                    "status": "Live",
                    "attributes": {},
                    "created_at": START,
                    "updated_at": START,
                }
                for i in range(count)
                for n, marketplace in enumerate(connections)
            ],
        )
        await session.execute(text("ANALYZE products"))
        await session.execute(text("ANALYZE listings"))
    for since, offset, at_most in ((START, 0, 10_000), (None, 1_000, None)):
        sql = DriverSql(postgres=True)
        statement = repository.page_statement_sql(
            sql, account_id, key=None, modified_since=since, limit=200, offset=offset, at_most=at_most
        )
        async with rt.db.transaction() as session:
            connection = await session.connection()
            await connection.exec_driver_sql("SET LOCAL plan_cache_mode = force_generic_plan")
            await connection.exec_driver_sql(f"PREPARE generic_page AS {statement}")
            try:
                arguments = ", ".join(_literal(value) for value in sql.params)
                rows = await connection.exec_driver_sql(f"EXPLAIN EXECUTE generic_page({arguments})")
                plan = "\n".join(str(row[0]) for row in rows)
            finally:
                await connection.exec_driver_sql("DEALLOCATE generic_page")
        # Probed by each product of the page (through either index holding product_id), never read whole and hashed.
        assert "Seq Scan on listings" not in plan, plan
        assert re.search(r"Index Scan using \w+ on listings l .*\n.*Index Cond: .*= \(p\.id\)", plan), plan


def _literal(value: object) -> str:
    """A test's own value as an SQL literal (ids, timestamps and numbers it made itself)."""
    if isinstance(value, datetime):
        return f"'{value.replace(tzinfo=None).isoformat(sep=' ')}'"
    return f"'{value}'" if isinstance(value, str) else str(value)
