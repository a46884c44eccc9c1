"""All catalogue queries: products, listings, Data Flow.

The push path reads and locks the batch's products in one statement, then writes the changed ones in
one executemany; no ORM unit of work and no per-SKU round trip on the happy path.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, NamedTuple

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy import BigInteger, String, Table, and_, any_, bindparam, func, or_, select, text, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import defer

from marketsync.db import (
    POSTGRES_UNAVAILABLE,
    DriverReader,
    DriverSql,
    dialect_of,
    hold_locks_requests_take,
    insert_for,
    older_than,
    session_driver,
)
from marketsync.inventory import statements
from marketsync.inventory.rules import (
    DATA_KINDS,
    DATA_OWNERS,
    DataKind,
    DataOwner,
    RowAddress,
    StoredProduct,
    modification_times,
    prefix_end,
)
from marketsync.kinds import ConnectionState
from marketsync.models import Account, Listing, MarketplaceConnection, Product
from marketsync.models.base import PRICE_DECIMAL_PLACES, UTCDateTime
from marketsync.models.base import money_to_storage as storage_price
from marketsync.models.inventory import DataFlow, InventoryImport, ProductCount

_PRODUCTS = Product.__table__
assert isinstance(_PRODUCTS, Table)


class ProductWrite(NamedTuple):
    """The full new values of one locked product row (unmoved values are written back unchanged)."""

    id: str
    price: Decimal | None
    quantity: int
    address: RowAddress | None = None  # where the lock read found the row (SQLite's rowid, PostgreSQL's ctid)


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


def stored_price(value: int | None) -> Decimal | None:
    """A stored (scaled BIGINT) price as the exact Decimal it stands for (compared by value, never shown)."""
    return None if value is None else Decimal(value).scaleb(-PRICE_DECIMAL_PLACES)


async def lock_products_by_sku_keys(
    session: AsyncSession, account_id: str, keys: Collection[str]
) -> list[StoredProduct]:
    """Every product whose SKU matches one of the keys case-insensitively, locked until commit.

    Locks are taken in id order, the same order every inventory writer uses, so concurrent batches
    over the same SKUs queue instead of deadlocking (PostgreSQL; SQLite already has one writer).
    One statement on the raw driver, in the session's transaction (the push's hot path).
    """
    if not keys:
        return []
    driver = await session_driver(session)
    sql = statements.LOCK_PRODUCTS_BY_SKU_KEYS.text(driver.postgres, len(keys))
    rows = await driver.fetch(sql, (account_id, list(keys)) if driver.postgres else (account_id, *keys))
    if rows:
        await hold_locks_requests_take(session)  # a background push's (a file import's) locks are a request's too
    return [StoredProduct(id, sku, stored_price(price), quantity, at) for id, sku, price, quantity, at in rows]


async def products_of_sku_keys(session: AsyncSession, account_id: str, keys: Collection[str]) -> list[StoredProduct]:
    """Every product whose SKU matches one of the keys case-insensitively, read without locks."""
    result = await session.execute(
        select(Product.id, Product.sku, Product.price, Product.quantity).where(
            Product.account_id == account_id, Product.sku_lower.in_(list(keys))
        )
    )
    return [StoredProduct(id, sku, price, quantity) for id, sku, price, quantity in result]


async def lock_products_by_id(session: AsyncSession, account_id: str, ids: Collection[str]) -> list[StoredProduct]:
    if not ids:
        return []
    result = await session.execute(
        select(Product.id, Product.sku, Product.price, Product.quantity)
        .where(Product.account_id == account_id, _one_of(session, Product.id, ids))
        .order_by(Product.id)
        .with_for_update()
    )
    rows = result.all()
    if rows:
        await hold_locks_requests_take(session)
    return _stored(rows)


_WRITE_VALUES = (
    update(_PRODUCTS)
    .where(_PRODUCTS.c.id == bindparam("b_id"))
    .values(
        price=bindparam("b_price", type_=BigInteger()),
        quantity=bindparam("b_quantity"),
        modified_at=bindparam("b_modified_at", type_=UTCDateTime()),
    )
)


# PostgreSQL's form of _WRITE_VALUES: the whole batch in one statement over unnest'ed arrays.
_WRITE_VALUES_UNNESTED = text(statements.WRITE_PRODUCT_VALUES_IN_SAVEPOINT.text(postgres=True))


def write_time(value: Any) -> datetime:
    """A UTC instant as stored (naive UTC), for statements that bypass the column type."""
    assert isinstance(value, datetime)
    if value.tzinfo is UTC:
        return value.replace(tzinfo=None)
    return value.astimezone(UTC).replace(tzinfo=None)


class BatchWriteFailed(Exception):
    """The push's one-statement write failed for some row: its transaction must be rolled back and the push run
    again with each row in its own savepoint (`write_product_values(..., isolate=True)`)."""


async def write_product_values(
    session: AsyncSession, writes: Sequence[ProductWrite], modified_from: datetime, *, isolate: bool | None = None
) -> set[str]:
    """Write the batch; returns the ids whose write failed. The writes' LastModifiedDate are
    `rules.modification_times(modified_from, len(writes))`, in the order given.

    `isolate=False` (the push's first attempt): one statement on the raw driver, no savepoint; if any row fails,
    BatchWriteFailed (the caller rolls back and runs again with `isolate=True`). `isolate=True`: each row in its
    own savepoint (in id order), so one bad row never stops the others (spec §4, rule 4) nor aborts the caller's
    transaction. `None` (writers that share their transaction with other work: the mirror, product create): the batch
    in a savepoint, falling back to row by row if it fails.
    """
    if not writes:
        return set()
    if isolate is False:
        await _write_batch_raw(session, writes, modified_from)
        return set()
    timed = zip(writes, modification_times(modified_from, len(writes)), strict=True)
    params = [
        {
            "b_id": write.id,
            "b_price": storage_price(write.price),
            "b_quantity": write.quantity,
            "b_modified_at": modified_at,
        }
        for write, modified_at in sorted(timed, key=lambda pair: pair[0].id)
    ]
    connection = await session.connection()
    if isolate is None:
        try:
            async with connection.begin_nested():
                if dialect_of(session) == "postgresql":
                    await connection.execute(
                        _WRITE_VALUES_UNNESTED,
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


async def _write_batch_raw(session: AsyncSession, writes: Sequence[ProductWrite], modified_from: datetime) -> None:
    """The batch in one statement. Rows need no order here: the lock read holds them all already (PostgreSQL; SQLite
    has one writer)."""
    driver = await session_driver(session)
    times = stored_modification_times(modified_from, len(writes), driver.postgres)
    try:
        by_address = all(w.address is not None for w in writes)
        if driver.postgres:
            columns = (
                [write.id for write in writes],
                [storage_price(write.price) for write in writes],
                [write.quantity for write in writes],
                times,
            )
            if by_address:
                _every_row_found(
                    await driver.execute(
                        statements.WRITE_PRODUCT_ROWIDS.text(driver.postgres), ([w.address for w in writes], *columns)
                    ),
                    writes,
                )
            else:
                await driver.execute(statements.WRITE_PRODUCT_ROWS.text(driver.postgres), columns)
        elif by_address:
            timed = zip(writes, times, strict=True)
            rows = [(storage_price(w.price), w.quantity, t, w.address, w.id) for w, t in timed]
            _every_row_found(
                await driver.executemany(statements.WRITE_PRODUCT_ROWIDS.text(driver.postgres), rows), writes
            )
        else:
            await driver.executemany(
                statements.WRITE_PRODUCT_ROWS.text(driver.postgres),
                [(storage_price(w.price), w.quantity, t, w.id) for w, t in zip(writes, times, strict=True)],
            )
    except POSTGRES_UNAVAILABLE:
        raise  # the database went away: not one SKU's failure (the request answers 503, nothing written)
    except (sqlite3.Error, asyncpg.PostgresError) as exc:
        raise BatchWriteFailed(str(exc)) from exc


def _every_row_found(written: int | None, writes: Sequence[ProductWrite]) -> None:
    """A write by address found every row it was given, or the batch goes again by id, isolated. Never expected: a
    row the lock read holds keeps its address (docs/decisions/0466); were it ever moved, no write is lost."""
    if written != len(writes):
        raise BatchWriteFailed(f"{written} of {len(writes)} locked rows found at their address")


def stored_modification_times(start: datetime, count: int, postgres: bool) -> list[datetime] | list[str]:
    """`rules.modification_times(start, count)` as the column stores them, built directly (the push writes 500):
    naive UTC datetimes, or SQLite's text, where only the microseconds differ within `start`'s second."""
    naive = write_time(start)
    if postgres:
        return [naive + timedelta(microseconds=step) for step in range(count)]
    first = naive.microsecond
    within = min(count, 1_000_000 - first)
    head = naive.strftime("%Y-%m-%d %H:%M:%S.")
    texts = [f"{head}{micro:06d}" for micro in range(first, first + within)]
    later = (naive + timedelta(microseconds=step) for step in range(within, count))  # past the second
    texts.extend(moment.isoformat(sep=" ", timespec="microseconds") for moment in later)
    return texts


def sqlite_time(value: datetime) -> str:
    """A UTC instant as SQLite stores it (naive UTC text with microseconds: sorts as text)."""
    return write_time(value).isoformat(sep=" ", timespec="microseconds")


class ListedOn(NamedTuple):
    """An active connection of the account and the products (sorted ids) of a push listed on it."""

    platform: str
    country: str
    requires_reauthorization: bool
    product_ids: list[str]


async def listed_on_active_connections(
    session: AsyncSession, account_id: str, product_ids: Collection[str]
) -> dict[str, ListedOn]:
    """The account's active connections listing any of these products, by connection id, with those products
    (their listing id known: they exist at the marketplace, and only those receive price/stock pushes). One
    statement on the raw driver (the push's hot path)."""
    if not product_ids:
        return {}
    driver = await session_driver(session)
    active = ConnectionState.ACTIVE.value
    sql = statements.LISTED_ON_ACTIVE_CONNECTIONS.text(driver.postgres, len(product_ids))
    if driver.postgres:
        rows = await driver.fetch(sql, (account_id, list(product_ids), active))
        return {row[0]: ListedOn(row[1], row[2], bool(row[3]), sorted(row[4])) for row in rows}
    rows = await driver.fetch(sql, (account_id, *product_ids, account_id, active))
    # ids are ULIDs: no commas
    return {row[0]: ListedOn(row[1], row[2], bool(row[3]), sorted(row[4].split(","))) for row in rows}


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
        query = query.order_by(text(OFFSET_PAGE_ORDER))  # as the API pages
    result = await session.execute(query.limit(limit).offset(offset))
    return list(result.scalars().all())


# The app's catalogue table: its sortable columns. SKU and last change walk their index ((account_id, sku_lower, sku),
# (account_id, modified_at, id)); price and stock have none (every push moves them: docs/decisions/0457) and are sorted
# whole, ids first (the console offers them up to console.catalogue.SORT_BY_VALUE_MAX_PRODUCTS).
TABLE_SORTS = {
    "sku": (Product.sku_lower, Product.sku),
    "price": (Product.price, Product.id),
    "stock": (Product.quantity, Product.id),
    "changed": (Product.modified_at, Product.id),
}
SORTED_WHOLE = frozenset(("price", "stock"))


async def table_of_products(
    session: AsyncSession, account_id: str, *, sort: str, descending: bool, limit: int, offset: int
) -> list[Product]:
    """A page of the app's catalogue sorted by `sort` (TABLE_SORTS): one walk of that column's index, or for price and
    stock a sort of the account's (id, value) pairs, the page's rows read by id after it (a deep page then skips
    pairs, not rows: a third of the time at 100,000 products on SQLite)."""
    order = [column.desc() if descending else column.asc() for column in TABLE_SORTS[sort]]
    account = Product.account_id == account_id
    if sort in SORTED_WHOLE:
        page_ids = select(Product.id).where(account).order_by(*order).limit(limit).offset(offset)
        query = select(Product).where(account, Product.id.in_(page_ids)).order_by(*order)
    else:
        query = select(Product).where(account).order_by(*order).limit(limit).offset(offset)
    return list((await session.execute(query)).scalars())


async def products_with_key_prefix(
    session: AsyncSession, account_id: str, prefix: str, *, after: tuple[str, str] | None, limit: int
) -> list[Product]:
    """Up to `limit` products whose sku_lower starts with `prefix` (a lower-cased key), in the order of the unique
    index on (account_id, sku_lower, sku), after the (sku_lower, sku) of a previous page's last product: one range
    of that index, read no further than the page (docs/decisions/0336-catalogue-search.md). The range is right
    because sku_lower compares in code point order on both backends: SQLite's BINARY, PostgreSQL's COLLATE "C" of
    the column (migration 0027)."""
    conditions: list[Any] = [Product.account_id == account_id, Product.sku_lower >= prefix]
    if (end := prefix_end(prefix)) is not None:
        conditions.append(Product.sku_lower < end)
    if after is not None:
        after_key, after_sku = after
        conditions.append(
            or_(Product.sku_lower > after_key, and_(Product.sku_lower == after_key, Product.sku > after_sku))
        )
    query = select(Product).where(*conditions).order_by(text(OFFSET_PAGE_ORDER)).limit(limit)
    return list((await session.execute(query)).scalars().all())


async def count_products(
    session: AsyncSession, account_id: str, *, key: str | None, modified_since: datetime | None
) -> int:
    if key is None and modified_since is None:  # kept by the triggers (docs/decisions/0298-product-counts.md)
        kept = await session.scalar(select(ProductCount.products).where(ProductCount.account_id == account_id))
        return int(kept or 0)
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
    """Who owns each kind the merchant set (one small read on the raw driver: every push asks)."""
    driver = await session_driver(session)
    rows = await driver.fetch(statements.DATA_FLOW_OWNERS.text(driver.postgres), (account_id,))
    owners: dict[DataKind, DataOwner] = {}
    for kind, owner in rows:
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


# -- the listing mirror (inventory/mirror.py) -------------------------------------------------------------


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


async def recent_imports(
    session: AsyncSession, account_id: str, limit: int, *, before: tuple[datetime, str] | None = None
) -> Sequence[InventoryImport]:
    """Newest first; `before` is the (created_at, id) of the last import of the previous page."""
    # The file itself stays in the database: a list of imports does not load it.
    query = select(InventoryImport).options(defer(InventoryImport.content))
    query = query.where(InventoryImport.account_id == account_id)
    if before is not None:
        query = query.where(older_than(InventoryImport.created_at, InventoryImport.id, before))
    query = query.order_by(InventoryImport.created_at.desc(), InventoryImport.id.desc()).limit(limit)
    return (await session.execute(query)).scalars().all()


async def save_import_progress(session: AsyncSession, import_id: str, last_line: int, report: dict[str, Any]) -> None:
    await session.execute(
        update(InventoryImport).where(InventoryImport.id == import_id).values(last_line=last_line, report=report)
    )


# -- the API's catalogue reads on the raw driver (db.driver_read: one snapshot, no session) ----------------------


# Without ModifiedSince a page is in SKU order ignoring case, then exact SKU: the order of the unique index on
# (account_id, sku_lower, sku), so an Offset page reads its offset and sorts nothing, whatever the catalogue's size
# and the database's statistics (docs/decisions/0297-offset-pages-in-sku-order.md).
OFFSET_PAGE_ORDER = "sku_lower, sku"


def _read_filter(sql: DriverSql, account_id: str, key: str | None, modified_since: datetime | None) -> str:
    where = f"account_id = {sql.bind(account_id)}"
    if key is not None:
        where += f" AND sku_lower = {sql.bind(key)}"
    if modified_since is not None:
        # Inclusive: a walk resumed at the last LastModifiedDate repeats that product, never skips one.
        where += f" AND modified_at >= {sql.bind_time(modified_since)}"
    return where


async def page_of_products(
    reader: DriverReader,
    account_id: str,
    *,
    key: str | None,
    modified_since: datetime | None,
    limit: int,
    offset: int,
) -> list[Sequence[Any]]:
    """(id, sku, quantity, modified_at) of one page: oldest change first with `modified_since`, else by SKU."""
    sql = DriverSql(reader.postgres)
    text_ = page_of_products_sql(sql, account_id, key=key, modified_since=modified_since, limit=limit, offset=offset)
    return await reader.fetch(text_, sql.params)


def page_of_products_sql(
    sql: DriverSql,
    account_id: str,
    *,
    key: str | None,
    modified_since: datetime | None,
    limit: int,
    offset: int,
    columns: str = "id, sku, quantity, modified_at",
) -> str:
    where = _read_filter(sql, account_id, key, modified_since)
    return (
        f"SELECT {columns} FROM products WHERE {where} ORDER BY {_page_order(modified_since)} "  # noqa: S608
        f"LIMIT {sql.bind(limit)} OFFSET {sql.bind(offset)}"
    )


def _page_order(modified_since: datetime | None) -> str:
    return "modified_at, id" if modified_since is not None else OFFSET_PAGE_ORDER


async def count_of_products(
    reader: DriverReader, account_id: str, *, key: str | None, modified_since: datetime | None, at_most: int | None
) -> int:
    """How many products match the filter; with `at_most`, counting stops there (the count is then a lower bound:
    docs/decisions/0241-walk-total-count.md)."""
    sql = DriverSql(reader.postgres)
    rows = await reader.fetch(_count_sql(sql, account_id, key, modified_since, at_most), sql.params)
    return int(rows[0][0])


def _count_sql(
    sql: DriverSql, account_id: str, key: str | None, modified_since: datetime | None, at_most: int | None
) -> str:
    if key is None and modified_since is None:
        # Every product of the account: the count the triggers keep (docs/decisions/0298-product-counts.md).
        return (
            "SELECT coalesce((SELECT products FROM product_counts "  # noqa: S608
            f"WHERE account_id = {sql.bind(account_id)}), 0)"
        )
    where = _read_filter(sql, account_id, key, modified_since)
    if at_most is None:
        return f"SELECT count(*) FROM products WHERE {where}"  # noqa: S608
    # In index order: the count reads at most `at_most` entries of (account_id, modified_at, id) from where the walk
    # stands. Unordered, PostgreSQL counted with a sequential scan from the table's start whenever most rows matched,
    # skipping every older row first (docs/decisions/0271-walk-count-in-index-order.md).
    return (
        f"SELECT count(*) FROM (SELECT 1 FROM products WHERE {where} ORDER BY modified_at "  # noqa: S608
        f"LIMIT {sql.bind(at_most)}) AS bounded"
    )


def page_statement_sql(
    sql: DriverSql,
    account_id: str,
    *,
    key: str | None,
    modified_since: datetime | None,
    limit: int,
    offset: int,
    at_most: int | None,
) -> str:
    """PostgreSQL: a products List page, its TotalCount and the page's listings in one statement, hence one snapshot
    and one round trip (docs/decisions/0342-products-page-statement.md). The rows come in no order and are of three
    kinds, told apart by which columns are set: the count (the first column, the rest NULL); a product (its position
    on the page from 1, sku, quantity, modified_at); a listing (its product's position, then the columns of
    `listing_document`). A page's products are each one row, whatever their listings: nothing is repeated and
    nothing sorted past the page's own index order."""
    chosen = page_of_products_sql(
        sql,
        account_id,
        key=key,
        modified_since=modified_since,
        limit=limit,
        offset=offset,
        columns="id, sku, sku_lower, quantity, modified_at",
    )
    # Numbered after the LIMIT, in the order the page was read in (so nothing is sorted again): numbered before it,
    # an Offset page also numbered every row it skipped (+2.3 ms a page at Offsets 0-9,800 of 100,000 products).
    page = (
        "SELECT id, sku, quantity, modified_at, "  # noqa: S608
        f"row_number() OVER (ORDER BY {_page_order(modified_since)}) AS position FROM ({chosen}) AS chosen"
    )
    count = _count_sql(sql, account_id, key, modified_since, at_most)
    # Each product's listings by one probe of its id, in every plan, then their connections: OFFSET 0 keeps the
    # lateral subquery from being flattened into a join the planner costs on its own. The generic plan a prepared
    # statement gets after five runs, not knowing the LIMIT, hashed every listing of the account (15 ms at 40,000
    # listings); with the connections inside the subquery, a probe per product and connection (4.8 ms against
    # 3.4 ms at 4,000,000 listings: docs/decisions/0342).
    listed = _listed_where(sql.bind(account_id), "l.product_id = p.id")
    listings = (
        "SELECT l.marketplace_id, l.listing_id, l.external_sku, l.listing_url FROM listings l "  # noqa: S608
        f"WHERE {listed} OFFSET 0"
    )
    return (
        f"WITH page AS MATERIALIZED ({page}) "  # noqa: S608
        f"SELECT ({count}), NULL::bigint, NULL::varchar, NULL::integer, NULL::timestamp, "
        "NULL::varchar, NULL::varchar, NULL::varchar, NULL::varchar, NULL::varchar "
        "UNION ALL SELECT NULL, position, sku, quantity, modified_at, NULL, NULL, NULL, NULL, NULL FROM page "
        "UNION ALL SELECT NULL, p.position, NULL, NULL, NULL, c.platform, c.country, x.listing_id, x.external_sku, "
        f"x.listing_url FROM page p CROSS JOIN LATERAL ({listings}) AS x "
        "JOIN marketplace_connections c ON c.id = x.marketplace_id"
    )


async def page_statement(
    reader: DriverReader,
    account_id: str,
    *,
    key: str | None,
    modified_since: datetime | None,
    limit: int,
    offset: int,
    at_most: int | None,
) -> list[Sequence[Any]]:
    """The rows of `page_statement_sql` (PostgreSQL only: SQLite reads the three in one transaction of a local
    file)."""
    sql = DriverSql(postgres=True)
    text_ = page_statement_sql(
        sql, account_id, key=key, modified_since=modified_since, limit=limit, offset=offset, at_most=at_most
    )
    return await reader.fetch(text_, sql.params)


async def products_of_key(reader: DriverReader, account_id: str, key: str) -> list[Sequence[Any]]:
    """(id, sku, quantity) of the products whose SKU matches the key case-insensitively, by id."""
    sql = DriverSql(reader.postgres)
    text_ = (
        f"SELECT id, sku, quantity FROM products WHERE account_id = {sql.bind(account_id)} "  # noqa: S608
        f"AND sku_lower = {sql.bind(key)} ORDER BY id"
    )
    return await reader.fetch(text_, sql.params)


def _listings_of_sql(account: str, products: str) -> str:
    """The listings at a marketplace (spec §2 Listing's columns, by product) of the account bound as `account` and
    the products the condition `products` on `l.product_id` names, unordered. Both are bound by the caller, in this
    order (SQLite's placeholders are positional)."""
    return (
        "SELECT l.product_id, c.platform, c.country, l.listing_id, l.external_sku, l.listing_url "  # noqa: S608
        "FROM listings l JOIN marketplace_connections c ON c.id = l.marketplace_id "
        f"WHERE {_listed_where(account, products)}"
    )


def _listed_where(account: str, products: str) -> str:
    """The listings a catalogue read sends: the account's (bound as `account`), of the products the condition
    `products` on `l.product_id` names, existing at their marketplace (a listing id)."""
    return f"l.account_id = {account} AND {products} AND l.listing_id IS NOT NULL"


def listing_document(
    platform: str, country: str, listing_id: str, external_sku: str, listing_url: str
) -> dict[str, Any]:
    """A Listing (spec §2) as sent, from the columns `_listings_of_sql` reads."""
    return {
        "Platform": platform,
        "Country": country,
        "ListingId": listing_id,
        "ExternalSku": external_sku,
        "ListingUrl": listing_url,
    }


def listing_documents_sql(sql: DriverSql, account_id: str, product_ids: Collection[str]) -> str:
    """Through listings (account_id, product_id), as statements.LISTED_ON_ACTIVE_CONNECTIONS (planned by SQLite
    without statistics through the account's column alone, GET of one product read every listing of the account:
    105 ms at 400,000 listings)."""
    account = sql.bind(account_id)
    listings = _listings_of_sql(account, sql.bind_in("l.product_id", product_ids))
    return f"{listings} ORDER BY l.product_id, c.platform, c.country"


async def listing_documents(
    reader: DriverReader, account_id: str, product_ids: Collection[str]
) -> dict[str, list[dict[str, Any]]]:
    """The listings (spec §2 Listing, as sent) of these products, in one query, by product."""
    listings: dict[str, list[dict[str, Any]]] = {}
    if not product_ids:
        return listings
    sql = DriverSql(reader.postgres)
    text_ = listing_documents_sql(sql, account_id, product_ids)
    for product_id, *columns in await reader.fetch(text_, sql.params):
        document = listing_document(*columns)
        found = listings.get(product_id)
        if found is None:
            listings[product_id] = [document]
        else:
            found.append(document)
    return listings


# The rows of an import's report that were not applied (ImportReport.view()'s counters).
_NOT_APPLIED = ("Failed", "NotFound", "Ambiguous", "Invalid")


async def imports_with_failed_rows(session: AsyncSession, account_id: str, since: datetime, at_most: int) -> int:
    """The account's imports since `since` whose report has rows not applied, counted up to `at_most + 1`: a range
    of ix_inventory_imports_account_created, each report's counters read in the database."""
    not_applied = sum(
        (func.coalesce(InventoryImport.report[name].as_integer(), 0) for name in _NOT_APPLIED[1:]),
        func.coalesce(InventoryImport.report[_NOT_APPLIED[0]].as_integer(), 0),
    )
    found = select(InventoryImport.id).where(
        InventoryImport.account_id == account_id, InventoryImport.created_at >= since, not_applied > 0
    )
    query = select(func.count()).select_from(found.limit(at_most + 1).subquery())
    return int((await session.execute(query)).scalar_one())
