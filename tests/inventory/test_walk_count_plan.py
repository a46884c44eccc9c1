"""The ModifiedSince walk's bounded count reads the index from where the walk stands (docs/decisions/0271), never a
sequential scan from the table's start, and counts what it counted before."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from marketsync.db import DriverReader
from marketsync.inventory import repository
from marketsync.models import Product
from marketsync.runtime import Runtime
from tests.support.bulk import insert_many
from tests.support.factories import make_account
from tests.support.plans import Explaining

START = datetime(2026, 1, 1, tzinfo=UTC)
PRODUCTS = 20_000


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
    stamps = [START + timedelta(seconds=i) for i in range(PRODUCTS)]
    async with rt.db.transaction() as session:
        await insert_many(
            session,
            Product,
            [
                {
                    "id": f"P{i:025d}",
                    "account_id": account_id,
                    "sku": f"W-{i}",
                    "sku_lower": f"w-{i}",
                    "quantity": 1,
                    "modified_at": stamp,
                    "created_at": stamp,
                }
                for i, stamp in enumerate(stamps)
            ],
        )
        await session.execute(text("ANALYZE products"))
    since = START + timedelta(seconds=12_000)
    count, plan = await bounded_count(rt, account_id, since, 1_000)
    assert count == 1_000
    assert "ix_products_account_modified" in plan and "Seq Scan" not in plan, plan
    count, _ = await bounded_count(rt, account_id, since, 10_000)
    assert count == PRODUCTS - 12_000
