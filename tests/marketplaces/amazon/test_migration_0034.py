"""Migration 0034: a connection's credential columns, and an order cursor of any length on PostgreSQL; existing
connections and their listings are untouched (on SQLite no table is rebuilt: its DROP would cascade to the
listings). Run on both databases, each in a database of its own."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from marketsync import migrate
from marketsync.db import Database
from marketsync.models import Listing, MarketplaceConnection
from marketsync.models.base import UTCDateTime
from tests.support.databases import downgrade

NOW = datetime(2026, 1, 1, tzinfo=UTC)


async def test_existing_connections_and_listings_survive_and_the_cursor_takes_a_long_next_token(
    empty_url: str,
) -> None:
    db = Database(empty_url)
    try:
        await migrate.upgrade(db, "0035")
        async with db.write_engine.begin() as conn:
            await conn.execute(
                sa.insert(
                    sa.table("accounts", sa.column("id"), sa.column("name"), sa.column("created_at", UTCDateTime()))
                ),
                [{"id": "A1", "name": "a", "created_at": NOW}],
            )
            await conn.execute(
                sa.insert(
                    sa.table(
                        "marketplace_connections",
                        *(sa.column(c) for c in _CONNECTION),
                        sa.column("created_at", UTCDateTime()),
                    )
                ),
                [{**_CONNECTION, "created_at": NOW}],
            )
            await conn.execute(
                sa.insert(
                    sa.table(
                        "products",
                        *(sa.column(c) for c in ("id", "account_id", "sku", "sku_lower", "quantity")),
                        sa.column("modified_at", UTCDateTime()),
                        sa.column("created_at", UTCDateTime()),
                    )
                ),
                [{"id": "P1", "account_id": "A1", "sku": "S", "sku_lower": "s", "quantity": 0,
                  "modified_at": NOW, "created_at": NOW}],
            )  # fmt: skip
            await conn.execute(
                sa.insert(
                    sa.table(
                        "listings",
                        *(sa.column(c) for c in _LISTING),
                        sa.column("created_at", UTCDateTime()),
                        sa.column("updated_at", UTCDateTime()),
                    )
                ),
                [{**_LISTING, "created_at": NOW, "updated_at": NOW}],
            )

        await migrate.upgrade(db)

        long_cursor = '{"After":"2026-01-01T00:00:00.000Z","NextToken":"' + "x" * 2000 + '"}'
        async with db.write_engine.begin() as conn:
            await conn.execute(
                sa.update(MarketplaceConnection.__table__).values(
                    order_cursor=long_cursor, seller_id="A2SELLER", credential="k1:sealed"
                )
            )
        async with db.engine.connect() as conn:
            assert (await conn.execute(sa.select(sa.func.count()).select_from(Listing.__table__))).scalar_one() == 1
            row = (await conn.execute(sa.select(MarketplaceConnection.__table__))).mappings().one()
            assert (row["order_cursor"], row["seller_id"], row["credential"]) == (long_cursor, "A2SELLER", "k1:sealed")

        async with db.write_engine.connect() as conn:
            await conn.run_sync(downgrade, "0035")
        async with db.engine.connect() as conn:
            assert (await conn.execute(sa.text("SELECT count(*) FROM listings"))).scalar_one() == 1
            names = {c["name"] for c in await conn.run_sync(_columns)}
            assert "credential" not in names and "seller_id" not in names
    finally:
        await db.dispose()


def _columns(connection: sa.Connection) -> list[dict[str, object]]:
    return list(sa.inspect(connection).get_columns("marketplace_connections"))  # type: ignore[arg-type]


_CONNECTION = {
    "id": "C1",
    "account_id": "A1",
    "platform": "P1",
    "country": "UK",
    "state": "Active",
    "health_status_message": "",
    "is_healthy": True,
    "requires_reauthorization": False,
    "last_pull_status": "NeverRun",
    "last_pull_total_skus": 0,
    "last_pull_current_sku": 0,
    "order_cursor": "5",
}
_LISTING = {
    "id": "L1",
    "account_id": "A1",
    "product_id": "P1",
    "marketplace_id": "C1",
    "category_id": "300",
    "attributes": "{}",
    "status": "Live",
}
