"""All catalogue queries: products, listings, Data Flow.

The push path reads and locks the batch's products in one statement, then writes the changed ones in
one executemany; no ORM unit of work and no per-SKU round trip on the happy path.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import BigInteger, String, Table, any_, bindparam, func, select, text, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import defer

from marketsync.db import dialect_of, insert_for
from marketsync.inventory.rules import DATA_KINDS, DATA_OWNERS, DataKind, DataOwner, StoredProduct
from marketsync.kinds import ConnectionState
from marketsync.models import Account, Listing, MarketplaceConnection, Product
from marketsync.models.base import UTCDateTime, money_to_storage
from marketsync.models.inventory import DataFlow, InventoryImport

_PRODUCTS = Product.__table__
assert isinstance(_PRODUCTS, Table)


@dataclass(frozen=True)
class ProductWrite:
    """The full new values of one locked product row (unmoved values are written back unchanged)."""

    id: str
    price: Decimal | None
    quantity: int
    modified_at: datetime


@dataclass(frozen=True)
class ListingView:
    product_id: str
    platform: str
    country: str
    listing_id: str | None
    external_sku: str | None
    listing_url: str | None


def _one_of(session: AsyncSession, column: Any, values: Collection[str]) -> Any:
    """`column IN (...)`; on PostgreSQL `column = ANY(:array)`: one parameter, one cached plan for any size."""
    if dialect_of(session) == "postgresql":
        return column == any_(bindparam(None, list(values), type_=ARRAY(String())))
    return column.in_(list(values))


def _stored(rows: Sequence[Any]) -> list[StoredProduct]:
    return [StoredProduct(id=row.id, sku=row.sku, price=row.price, quantity=row.quantity) for row in rows]


async def lock_products_by_sku_keys(
    session: AsyncSession, account_id: str, keys: Collection[str]
) -> list[StoredProduct]:
    """Every product whose SKU matches one of the keys case-insensitively, locked until commit.

    Locks are taken in id order, the same order every inventory writer uses, so concurrent batches
    over the same SKUs queue instead of deadlocking (PostgreSQL; SQLite already has one writer).
    """
    if not keys:
        return []
    result = await session.execute(
        select(Product.id, Product.sku, Product.price, Product.quantity)
        .where(Product.account_id == account_id, _one_of(session, Product.sku_lower, keys))
        .order_by(Product.id)
        .with_for_update()
    )
    return _stored(result.all())


async def lock_products_by_id(session: AsyncSession, account_id: str, ids: Collection[str]) -> list[StoredProduct]:
    if not ids:
        return []
    result = await session.execute(
        select(Product.id, Product.sku, Product.price, Product.quantity)
        .where(Product.account_id == account_id, _one_of(session, Product.id, ids))
        .order_by(Product.id)
        .with_for_update()
    )
    return _stored(result.all())


_WRITE_VALUES = (
    update(_PRODUCTS)
    .where(_PRODUCTS.c.id == bindparam("b_id"))
    .values(
        price=bindparam("b_price", type_=BigInteger()),
        quantity=bindparam("b_quantity"),
        modified_at=bindparam("b_modified_at", type_=UTCDateTime()),
    )
)


# PostgreSQL: the whole batch in one statement over unnest'ed arrays (DESIGN §6: the fastest form).
_PG_WRITE_VALUES = text(
    "UPDATE products AS p SET price = v.price, quantity = v.quantity, modified_at = v.modified_at "
    "FROM unnest(CAST(:ids AS VARCHAR[]), CAST(:prices AS BIGINT[]), CAST(:quantities AS INTEGER[]), "
    "CAST(:times AS TIMESTAMP[])) AS v(id, price, quantity, modified_at) WHERE p.id = v.id"
)


def write_time(value: Any) -> datetime:
    """A UTC instant as stored (naive UTC), for statements that bypass the column type."""
    assert isinstance(value, datetime)
    return value.astimezone(UTC).replace(tzinfo=None)


async def write_product_values(session: AsyncSession, writes: Sequence[ProductWrite]) -> set[str]:
    """Write the batch in one statement (id order); returns the ids whose write failed.

    The batch runs inside a savepoint. If any row fails, the savepoint is rolled back and the rows are
    retried one by one, each in its own savepoint, so one bad row never stops the others (spec §4,
    rule 4) and never aborts the caller's transaction.
    """
    if not writes:
        return set()
    params = [
        {
            "b_id": write.id,
            "b_price": money_to_storage(write.price),
            "b_quantity": write.quantity,
            "b_modified_at": write.modified_at,
        }
        for write in sorted(writes, key=lambda w: w.id)
    ]
    connection = await session.connection()
    try:
        async with connection.begin_nested():
            if dialect_of(session) == "postgresql":
                await connection.execute(
                    _PG_WRITE_VALUES,
                    {
                        "ids": [row["b_id"] for row in params],
                        "prices": [row["b_price"] for row in params],
                        "quantities": [row["b_quantity"] for row in params],
                        "times": [write_time(row["b_modified_at"]) for row in params],
                    },
                )
            else:
                await connection.execute(_WRITE_VALUES, params)
        return set()
    except DBAPIError as exc:
        if exc.connection_invalidated:
            raise  # the database went away: not one SKU's failure (the request answers 503, nothing written)
    failed: set[str] = set()
    for row in params:
        try:
            async with connection.begin_nested():
                await connection.execute(_WRITE_VALUES, row)
        except DBAPIError as exc:
            if exc.connection_invalidated:
                raise
            failed.add(str(row["b_id"]))
    return failed


@dataclass(frozen=True)
class ListedOn:
    """A product listed (marketplace listing id known) on an active connection, with that connection's state."""

    marketplace_id: str
    product_id: str
    platform: str
    country: str
    requires_reauthorization: bool


async def listed_connections(session: AsyncSession, account_id: str, product_ids: Collection[str]) -> list[ListedOn]:
    """Every listing of these products on an active connection.

    Only listings that exist at the marketplace (their listing id is known) receive price/stock pushes.
    """
    if not product_ids:
        return []
    result = await session.execute(
        select(
            Listing.marketplace_id,
            Listing.product_id,
            MarketplaceConnection.platform,
            MarketplaceConnection.country,
            MarketplaceConnection.requires_reauthorization,
        )
        .join(MarketplaceConnection, MarketplaceConnection.id == Listing.marketplace_id)
        .where(
            Listing.account_id == account_id,
            _one_of(session, Listing.product_id, product_ids),
            Listing.listing_id.is_not(None),
            MarketplaceConnection.account_id == account_id,
            MarketplaceConnection.state == ConnectionState.ACTIVE,
        )
        .order_by(Listing.marketplace_id, Listing.product_id)
    )
    return [
        ListedOn(row.marketplace_id, row.product_id, row.platform, row.country, bool(row.requires_reauthorization))
        for row in result.all()
    ]


# --- reads -----------------------------------------------------------------------------------------


async def products_by_sku_key(session: AsyncSession, account_id: str, key: str) -> list[Product]:
    result = await session.execute(
        select(Product).where(Product.account_id == account_id, Product.sku_lower == key).order_by(Product.id)
    )
    return list(result.scalars().all())


def _list_filter(account_id: str, key: str | None, modified_since: datetime | None) -> list[Any]:
    conditions: list[Any] = [Product.account_id == account_id]
    if key is not None:
        conditions.append(Product.sku_lower == key)
    if modified_since is not None:
        # Inclusive: a walk resumed at the last LastModifiedDate repeats that product, never skips one.
        conditions.append(Product.modified_at >= modified_since)
    return conditions


async def list_products(
    session: AsyncSession,
    account_id: str,
    *,
    key: str | None,
    modified_since: datetime | None,
    limit: int,
    offset: int,
) -> list[Product]:
    query = select(Product).where(*_list_filter(account_id, key, modified_since))
    if modified_since is not None:
        query = query.order_by(Product.modified_at, Product.id)
    else:
        query = query.order_by(Product.id)
    result = await session.execute(query.limit(limit).offset(offset))
    return list(result.scalars().all())


async def count_products(
    session: AsyncSession, account_id: str, *, key: str | None, modified_since: datetime | None
) -> int:
    result = await session.execute(
        select(func.count()).select_from(Product).where(*_list_filter(account_id, key, modified_since))
    )
    return int(result.scalar_one())


async def listings_of(session: AsyncSession, account_id: str, product_ids: Collection[str]) -> list[ListingView]:
    """The listings of a page of products, in one query (no N+1)."""
    if not product_ids:
        return []
    result = await session.execute(
        select(
            Listing.product_id,
            MarketplaceConnection.platform,
            MarketplaceConnection.country,
            Listing.listing_id,
            Listing.external_sku,
            Listing.listing_url,
        )
        .join(MarketplaceConnection, MarketplaceConnection.id == Listing.marketplace_id)
        .where(
            Listing.account_id == account_id,
            Listing.product_id.in_(product_ids),
            Listing.listing_id.is_not(None),
        )
        .order_by(Listing.product_id, MarketplaceConnection.platform, MarketplaceConnection.country)
    )
    return [
        ListingView(
            product_id=row.product_id,
            platform=row.platform,
            country=row.country,
            listing_id=row.listing_id,
            external_sku=row.external_sku,
            listing_url=row.listing_url,
        )
        for row in result.all()
    ]


# --- Data Flow -------------------------------------------------------------------------------------


async def data_flows(session: AsyncSession, account_id: str) -> dict[DataKind, DataOwner]:
    result = await session.execute(select(DataFlow.kind, DataFlow.owner).where(DataFlow.account_id == account_id))
    owners: dict[DataKind, DataOwner] = {}
    for kind, owner in result.all():
        if kind in DATA_KINDS and owner in DATA_OWNERS:
            owners[kind] = owner
    return owners


async def set_data_flow(
    session: AsyncSession, account_id: str, kind: DataKind, owner: DataOwner, now: datetime
) -> None:
    statement = insert_for(session, DataFlow.__table__).values(
        account_id=account_id, kind=kind, owner=owner, updated_at=now
    )
    await session.execute(
        statement.on_conflict_do_update(index_elements=["account_id", "kind"], set_={"owner": owner, "updated_at": now})
    )


async def account_exists(session: AsyncSession, account_id: str) -> bool:
    result = await session.execute(select(Account.id).where(Account.id == account_id))
    return result.scalar_one_or_none() is not None


# -- the listing mirror (inventory/tasks.py) --------------------------------------------------------------


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


async def connection_for_update(session: AsyncSession, marketplace_id: str) -> MarketplaceConnection | None:
    """The connection row, locked: the mirror's LastPull progress is written with each page."""
    query = select(MarketplaceConnection).where(MarketplaceConnection.id == marketplace_id).with_for_update()
    return (await session.execute(query)).scalar_one_or_none()


# -- imports uploaded in the app ---------------------------------------------------------------------------


async def import_by_id(session: AsyncSession, import_id: str, account_id: str | None = None) -> InventoryImport | None:
    query = select(InventoryImport).where(InventoryImport.id == import_id)
    if account_id is not None:
        query = query.where(InventoryImport.account_id == account_id)
    return (await session.execute(query)).scalar_one_or_none()


async def recent_imports(session: AsyncSession, account_id: str, limit: int) -> Sequence[InventoryImport]:
    # The file itself stays in the database: a list of imports does not load it.
    result = await session.execute(
        select(InventoryImport)
        .options(defer(InventoryImport.content))
        .where(InventoryImport.account_id == account_id)
        .order_by(InventoryImport.created_at.desc(), InventoryImport.id.desc())
        .limit(limit)
    )
    return result.scalars().all()


async def save_import_progress(session: AsyncSession, import_id: str, last_line: int, report: dict[str, Any]) -> None:
    await session.execute(
        update(InventoryImport).where(InventoryImport.id == import_id).values(last_line=last_line, report=report)
    )
