"""All marketplace-connection queries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.db import Database, DriverSql, KeyedRead, session_driver, session_reader
from marketsync.kinds import ConnectionState, ListingStatus
from marketsync.marketplaces import statements
from marketsync.models import Listing, MarketplaceConnection, Product
from marketsync.models.base import money_to_storage

# Ids per IN (...) list: well under both backends' bound-parameter limits.
_CHUNK = 500


# GET /api/marketplaces on the raw driver (docs/decisions/0250): the same rows, in the same order, as list_all's
# active ones in creation order; concurrent requests share a round trip on PostgreSQL.
_ACTIVE_FOR_API = """
SELECT account_id, id, platform, country, health_status, health_status_message, is_healthy, requires_reauthorization,
       last_pull_status, last_pull_total_skus, last_pull_current_sku
FROM marketplace_connections WHERE account_id {match} AND state = '{active}' ORDER BY account_id, created_at, id
"""
_ACTIVE_BY_ACCOUNT = KeyedRead(
    _ACTIVE_FOR_API.format(match="= ?", active=ConnectionState.ACTIVE.value),
    _ACTIVE_FOR_API.format(match="= ANY($1::varchar[])", active=ConnectionState.ACTIVE.value),
)


async def active_for_api(db: Database, account_id: str) -> list[dict[str, Any]]:
    """The account's active connections as spec section 2 shows them (MarketplaceOut's fields, in its order)."""
    return [
        {
            "MarketplaceId": row[1],
            "Platform": row[2],
            "Country": row[3],
            "HealthStatus": row[4],
            "HealthStatusMessage": row[5],
            "IsHealthy": bool(row[6]),
            "RequiresReauthorization": bool(row[7]),
            "LastPull": {"Status": row[8], "TotalSkus": row[9], "CurrentSku": row[10]},
        }
        for row in await db.rows_by_key(_ACTIVE_BY_ACCOUNT, account_id)
    ]


async def list_of(session: AsyncSession, account_id: str) -> Sequence[MarketplaceConnection]:
    """Every connection of the account, paused ones included (the app lists them all)."""
    query = select(MarketplaceConnection).where(MarketplaceConnection.account_id == account_id)
    result = await session.execute(query.order_by(MarketplaceConnection.platform, MarketplaceConnection.country))
    return result.scalars().all()


async def get(session: AsyncSession, account_id: str, marketplace_id: str) -> MarketplaceConnection | None:
    result = await session.execute(
        select(MarketplaceConnection).where(
            MarketplaceConnection.id == marketplace_id, MarketplaceConnection.account_id == account_id
        )
    )
    return result.scalar_one_or_none()


async def find(session: AsyncSession, account_id: str, platform: str, country: str) -> MarketplaceConnection | None:
    result = await session.execute(
        select(MarketplaceConnection).where(
            MarketplaceConnection.account_id == account_id,
            MarketplaceConnection.platform == platform,
            MarketplaceConnection.country == country,
        )
    )
    return result.scalar_one_or_none()


async def list_all_active(session: AsyncSession) -> Sequence[MarketplaceConnection]:
    """Every active connection of every account (schedules fan out from this)."""
    result = await session.execute(
        select(MarketplaceConnection)
        .where(MarketplaceConnection.state == ConnectionState.ACTIVE)
        .order_by(MarketplaceConnection.id)
    )
    return result.scalars().all()


async def get_by_id(
    session: AsyncSession, marketplace_id: str, *, for_update: bool = False
) -> MarketplaceConnection | None:
    """A connection by id alone (tasks carry the account in the job; the id is unique)."""
    query = select(MarketplaceConnection).where(MarketplaceConnection.id == marketplace_id)
    if for_update:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()


@dataclass(frozen=True, slots=True)
class ListingLine:
    """A published listing's catalogue values next to what the marketplace is known to hold (None: unknown), prices
    in storage units (`Money`'s scaled integers: compared as they are, read as decimals only when sent)."""

    external_sku: str
    price_units: int | None
    quantity: int
    listing_row_id: str
    held_price_units: int | None
    held_quantity: int | None


_LISTING_LINES = (
    "SELECT l.external_sku, p.price, p.quantity, l.id, l.marketplace_price, l.marketplace_quantity "
    "FROM listings AS l JOIN products AS p ON p.id = l.product_id "
    "WHERE l.marketplace_id = {0} AND l.external_sku IS NOT NULL"
)


async def listing_lines(
    session: AsyncSession, marketplace_id: str, product_ids: Sequence[str] | None
) -> list[ListingLine]:
    """The connection's published listings (external SKU known) with catalogue and marketplace values, sorted by
    external SKU. On the raw driver: a feed reads 500 (all of a connection's for a resync), and SQLAlchemy's
    per-row result processing cost the event loop the workers share with the API."""
    reader = await session_reader(session)
    chunks: list[Sequence[str] | None] = [None]
    if product_ids is not None:
        unique = sorted(set(product_ids))
        chunks = [unique[start : start + _CHUNK] for start in range(0, len(unique), _CHUNK)]
    lines: list[ListingLine] = []
    for chunk in chunks:
        sql = DriverSql(reader.postgres)
        statement = _LISTING_LINES.format(sql.bind(marketplace_id))
        if chunk is not None:
            # Both sides of the join by id: given only the listings' ids, PostgreSQL hashed the whole products table
            # (a scan that grows with the catalogue: 12 ms a feed at 100,000 products, against 4 ms).
            statement += " AND " + sql.bind_in("l.product_id", chunk) + " AND " + sql.bind_in("p.id", chunk)
        # Each chunk's lines built as it arrives: a coalesced feed's thousands, built at the end, were one stretch of
        # the event loop a request in flight waited behind (docs/decisions/0303).
        rows = await reader.fetch(statement, sql.params)
        lines += [ListingLine(str(r[0]), r[1], r[2], r[3], r[4], r[5]) for r in rows]
    lines.sort(key=lambda line: line.external_sku)
    return lines


async def record_marketplace_values(
    session: AsyncSession, values: Sequence[tuple[str, Decimal | None, int | None]], now: datetime
) -> None:
    """After a feed was applied: the values the marketplace now holds, per listing row id. One statement on the raw
    driver (SQLite: a row at a time), in id order (two runs of one connection's pushes lock the same rows in the same
    order): a feed writes 500, and SQLAlchemy's per-row parameter processing cost the event loop the workers share
    with the API; a statement per row cost PostgreSQL a core beside the API's pushes (0468)."""
    if not values:
        return
    driver = await session_driver(session)
    stamp = DriverSql(driver.postgres).time_value(now)
    await driver.execute_rows(
        statements.RECORD_MARKETPLACE_VALUES.text(driver.postgres),
        [
            (money_to_storage(price), quantity, stamp, row_id)
            for row_id, price, quantity in sorted(values, key=lambda v: v[0])
        ],
    )


async def live_listings(session: AsyncSession, marketplace_id: str) -> list[tuple[Listing, Product]]:
    result = await session.execute(
        select(Listing, Product)
        .join(Product, Product.id == Listing.product_id)
        .where(Listing.marketplace_id == marketplace_id, Listing.status == ListingStatus.LIVE)
        .order_by(Product.sku)
    )
    return [(row[0], row[1]) for row in result.all()]


async def health_summary(session: AsyncSession) -> list[tuple[str, str, bool, bool, int]]:
    """(platform, state, healthy, needs reauthorisation, count) over every connection, for the metrics."""
    result = await session.execute(
        select(
            MarketplaceConnection.platform,
            MarketplaceConnection.state,
            MarketplaceConnection.is_healthy,
            MarketplaceConnection.requires_reauthorization,
            func.count(),
        ).group_by(
            MarketplaceConnection.platform,
            MarketplaceConnection.state,
            MarketplaceConnection.is_healthy,
            MarketplaceConnection.requires_reauthorization,
        )
    )
    return [(p, s, bool(h), bool(r), int(c)) for p, s, h, r, c in result.all()]


async def connections_needing_attention(session: AsyncSession, account_id: str) -> tuple[int, int]:
    """(needing reauthorisation, otherwise unhealthy) of the account's authorised connections, in one read."""
    reauthorise = MarketplaceConnection.requires_reauthorization.is_(True)
    query = select(
        func.count().filter(reauthorise),
        func.count().filter(~reauthorise, MarketplaceConnection.is_healthy.is_(False)),
    ).where(
        MarketplaceConnection.account_id == account_id,
        MarketplaceConnection.state != ConnectionState.AWAITING_CONSENT,
    )
    row = (await session.execute(query)).one()
    return int(row[0]), int(row[1])
