"""All marketplace-connection queries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, cast

from sqlalchemy import Integer, Table, bindparam, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.models import Job, Listing, MarketplaceConnection, Product
from marketsync.models.base import Money, UTCDateTime

# Ids per IN (...) list: well under both backends' bound-parameter limits.
_CHUNK = 500


async def list_active(session: AsyncSession, account_id: str) -> Sequence[MarketplaceConnection]:
    result = await session.execute(
        select(MarketplaceConnection)
        .where(MarketplaceConnection.account_id == account_id, MarketplaceConnection.state == "Active")
        .order_by(MarketplaceConnection.created_at, MarketplaceConnection.id)
    )
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
        select(MarketplaceConnection).where(MarketplaceConnection.state == "Active").order_by(MarketplaceConnection.id)
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


async def open_jobs_for(
    session: AsyncSession, account_id: str, marketplace_id: str, statuses: Sequence[str], job_type: str | None = None
) -> list[Job]:
    """Jobs of the account, in the given statuses, whose payload names this marketplace connection."""
    query = select(Job).where(Job.account_id == account_id, Job.status.in_(statuses))
    if job_type is not None:
        query = query.where(Job.type == job_type)
    jobs = (await session.execute(query)).scalars().all()
    return [job for job in jobs if (job.payload or {}).get("MarketplaceId") == marketplace_id]


async def claim_job(session: AsyncSession, job_id: str, worker_id: str, now: datetime, lease_s: float) -> Job | None:
    """Take one specific queued job (an operator's "run it now"); None when a worker already has it."""
    result = await session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status.in_(("NotStarted", "Published")))
        .values(
            status="InProcess",
            lease_owner=worker_id,
            lease_expires_at=now + timedelta(seconds=lease_s),
            started_at=now,
            updated_at=now,
        )
        .returning(Job)
    )
    return result.scalar_one_or_none()


async def job_by_id(session: AsyncSession, job_id: str) -> Job | None:
    return await session.get(Job, job_id)


@dataclass(frozen=True)
class ListingLine:
    """A published listing's catalogue values next to what the marketplace is known to hold (None: unknown)."""

    external_sku: str
    price: Decimal | None
    quantity: int
    listing_row_id: str
    held_price: Decimal | None
    held_quantity: int | None


async def listing_lines(
    session: AsyncSession, marketplace_id: str, product_ids: Sequence[str] | None
) -> list[ListingLine]:
    """The connection's published listings (external SKU known) with catalogue and marketplace values."""
    base = (
        select(
            Listing.external_sku,
            Product.price,
            Product.quantity,
            Listing.id,
            Listing.marketplace_price,
            Listing.marketplace_quantity,
        )
        .join(Product, Product.id == Listing.product_id)
        .where(Listing.marketplace_id == marketplace_id, Listing.external_sku.is_not(None))
    )
    results = []
    if product_ids is None:
        results.append(await session.execute(base))
    else:
        unique = sorted(set(product_ids))
        for start in range(0, len(unique), _CHUNK):
            results.append(await session.execute(base.where(Listing.product_id.in_(unique[start : start + _CHUNK]))))
    rows = [ListingLine(str(r[0]), r[1], r[2], r[3], r[4], r[5]) for result in results for r in result.all()]
    rows.sort(key=lambda row: row.external_sku)
    return rows


async def record_marketplace_values(
    session: AsyncSession, values: Sequence[tuple[str, Decimal | None, int | None]], now: datetime
) -> None:
    """After a feed was applied: the values the marketplace now holds, per listing row id (one executemany)."""
    if not values:
        return
    table = cast(Table, Listing.__table__)
    statement = (
        update(table)
        .where(table.c.id == bindparam("m_id"))
        .values(
            marketplace_price=func.coalesce(bindparam("m_price", type_=Money()), table.c.marketplace_price),
            marketplace_quantity=func.coalesce(bindparam("m_quantity", type_=Integer()), table.c.marketplace_quantity),
            updated_at=bindparam("m_now", type_=UTCDateTime()),
        )
    )
    await session.execute(
        statement,
        [
            {"m_id": row_id, "m_price": price, "m_quantity": quantity, "m_now": now}
            for row_id, price, quantity in sorted(values, key=lambda v: v[0])
        ],
    )


async def listings_for_mirror(
    session: AsyncSession, marketplace_id: str, listing_ids: Sequence[str]
) -> dict[str, Listing]:
    if not listing_ids:
        return {}
    result = await session.execute(
        select(Listing).where(Listing.marketplace_id == marketplace_id, Listing.listing_id.in_(set(listing_ids)))
    )
    return {row.listing_id: row for row in result.scalars() if row.listing_id is not None}


async def listings_by_product(
    session: AsyncSession, marketplace_id: str, product_ids: Sequence[str]
) -> dict[str, Listing]:
    if not product_ids:
        return {}
    result = await session.execute(
        select(Listing).where(Listing.marketplace_id == marketplace_id, Listing.product_id.in_(set(product_ids)))
    )
    return {row.product_id: row for row in result.scalars()}


async def products_by_sku(session: AsyncSession, account_id: str, skus: Sequence[str]) -> list[Product]:
    """Products whose SKU matches any of `skus` case-insensitively (exact matches are picked by the caller)."""
    if not skus:
        return []
    lowered = {sku.lower() for sku in skus}
    result = await session.execute(
        select(Product).where(Product.account_id == account_id, Product.sku_lower.in_(lowered))
    )
    return list(result.scalars())


async def products_by_id(session: AsyncSession, product_ids: Sequence[str]) -> dict[str, Product]:
    if not product_ids:
        return {}
    result = await session.execute(select(Product).where(Product.id.in_(set(product_ids))))
    return {row.id: row for row in result.scalars()}


async def live_listings(session: AsyncSession, marketplace_id: str) -> list[tuple[Listing, Product]]:
    result = await session.execute(
        select(Listing, Product)
        .join(Product, Product.id == Listing.product_id)
        .where(Listing.marketplace_id == marketplace_id, Listing.status == "Live")
        .order_by(Product.sku)
    )
    return [(row[0], row[1]) for row in result.all()]


async def remember_in_payload(
    session: AsyncSession, job_id: str, worker_id: str, payload: dict[str, Any], now: datetime
) -> bool:
    """Keep a running job's progress marker (e.g. the marketplace's feed id) across retries."""
    result = await session.execute(
        update(Job)
        .where(Job.id == job_id, Job.lease_owner == worker_id, Job.status == "InProcess")
        .values(payload=payload, updated_at=now)
    )
    return bool(getattr(result, "rowcount", 0))
