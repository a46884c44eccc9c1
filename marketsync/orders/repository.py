"""All order queries. Every query is scoped by account.

The API's reads (a page of 200 orders is on the hot path) run hand-written SQL on a raw driver connection
(`db.DriverReader`): one keyset query returning each order's stored document (docs/decisions/0066-order-documents.md)
as a `DocumentRow`. Rendering a document, and every write, loads ORM entities.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple, cast

from sqlalchemy import Table, bindparam, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.db import DriverReader, DriverSql, dialect_of
from marketsync.models import MarketplaceConnection
from marketsync.models.orders import Order, OrderItem, OrderRefundLine, OrderShipment
from marketsync.orders import statements

# ---------------------------------------------------------------- reads (API)


class DocumentRow(NamedTuple):
    """One order of a page: its stored document, and whether that document is current (decision 0066).

    `current` is true when the stored document is of the renderer's version and was rendered at the order's
    present last-changed time; otherwise the order is rendered from its rows.
    """

    id: str
    updated_at: str  # storage text (see key_time)
    current: bool
    document: bytes | None
    customer_document: bytes | None


def key_time(value: str) -> datetime:
    return datetime.fromisoformat(value).replace(tzinfo=UTC)


async def _fetch(reader: DriverReader, sql: DriverSql, text: str) -> list[DocumentRow]:
    # The driver's rows have DocumentRow's columns in its order; not rebuilt one by one (200 per page), they are
    # read by unpacking or, for one row, through DocumentRow._make.
    return cast(list[DocumentRow], await reader.fetch(text, sql.params))


# A page reads each order's stored document (docs/decisions/0066-order-documents.md): the keyset query returns
# the bytes the response is made of, as DocumentRow columns.


def _document_columns(sql: DriverSql, version: int, include_customer: bool) -> str:
    current = f"orders.document_version = {sql.bind(version)} AND orders.document_updated_at = orders.updated_at"
    columns = [
        "orders.id",
        statements.UPDATED_AT_TEXT.text(sql.postgres),
        f"({current})",
        "orders.document",
        # Personal data: only read when the caller asked for customer data.
        "orders.customer_document" if include_customer else "NULL",
    ]
    return ", ".join(columns)


async def page_of_documents(
    reader: DriverReader,
    account_id: str,
    *,
    order_ids: Collection[str] | None,
    statuses: Collection[str] | None,
    changed_since: datetime | None,
    changed_before: datetime | None,
    after: tuple[datetime, str] | None,
    high_water: datetime,
    limit: int,
    include_customer: bool,
    version: int,
) -> list[DocumentRow]:
    """One keyset page of document rows in (updated_at, id) order, bounded above by the walk's high-water time.

    The conditions keep the shape `account_id = ? AND updated_at ... ORDER BY updated_at, id`, a range
    walk of ix_orders_account_updated (or ix_orders_account_status_updated with OrderStatuses).
    """
    sql = DriverSql(reader.postgres)
    columns = _document_columns(sql, version, include_customer)
    where = [f"orders.account_id = {sql.bind(account_id)}", f"orders.updated_at <= {sql.bind_time(high_water)}"]
    if order_ids is not None:
        where.append(sql.bind_in("orders.id", order_ids))
    if statuses is not None:
        where.append(sql.bind_in("orders.status", statuses))
    if changed_since is not None:
        where.append(f"orders.updated_at >= {sql.bind_time(changed_since)}")
    if changed_before is not None:
        where.append(f"orders.updated_at < {sql.bind_time(changed_before)}")
    if after is not None:
        where.append(f"(orders.updated_at, orders.id) > ({sql.bind_time(after[0])}, {sql.bind(after[1])})")
    conditions = " AND ".join(where)
    limit_to = sql.bind(limit)
    # Qualified names: ORDER BY must walk the index on the stored column, not sort the selected text.
    text = (
        f"SELECT {columns} FROM orders WHERE {conditions} "  # noqa: S608
        f"ORDER BY orders.updated_at, orders.id LIMIT {limit_to}"
    )
    return await _fetch(reader, sql, text)


async def document_by_id(
    reader: DriverReader, account_id: str, order_id: str, *, include_customer: bool, version: int
) -> DocumentRow | None:
    sql = DriverSql(reader.postgres)
    columns = _document_columns(sql, version, include_customer)
    conditions = f"orders.account_id = {sql.bind(account_id)} AND orders.id = {sql.bind(order_id)}"
    text = f"SELECT {columns} FROM orders WHERE {conditions}"  # noqa: S608
    rows = await _fetch(reader, sql, text)
    return rows[0] if rows else None


async def documents_by_marketplace_order_id(
    reader: DriverReader, account_id: str, marketplace_order_id: str, *, limit: int, version: int
) -> list[DocumentRow]:
    """The account's orders carrying this marketplace order id (one a marketplace at most), by id, without customer
    data: one seek of ix_orders_account_marketplace_order (migration 0026)."""
    sql = DriverSql(reader.postgres)
    columns = _document_columns(sql, version, include_customer=False)
    conditions = (
        f"orders.account_id = {sql.bind(account_id)} AND orders.marketplace_order_id = {sql.bind(marketplace_order_id)}"
    )
    text = f"SELECT {columns} FROM orders WHERE {conditions} ORDER BY orders.id LIMIT {sql.bind(limit)}"  # noqa: S608
    return await _fetch(reader, sql, text)


@dataclass(frozen=True)
class TableFilters:
    """The app's orders table (docs/decisions/0436-app-tables.md): each filter narrows, None is no filter."""

    marketplace_id: str | None = None
    statuses: Collection[str] | None = None
    purchased_from: datetime | None = None  # inclusive
    purchased_before: datetime | None = None  # exclusive
    # The marketplace's order id exactly, or a SKU of an item (letter case ignored).
    order_id_or_sku: str | None = None
    # The customer's name, letter case ignored (personal data: only from a person's explicit search).
    customer_name: str | None = None


# The sortable columns of the app's orders table; each is (account_id, column, id) in one index, so a sorted page is
# one bounded walk of it (migration 0038).
TABLE_SORTS = {
    "changed": ("orders.updated_at",),
    "purchased": ("orders.purchase_date",),
    "order": ("orders.marketplace_order_id",),
    # Then by last change: the order of ix_orders_account_status_updated, which the sort walks instead of sorting.
    "status": ("orders.status", "orders.updated_at"),
}


def _table_conditions(sql: DriverSql, account_id: str, filters: TableFilters) -> str:
    where = [f"orders.account_id = {sql.bind(account_id)}"]
    if filters.marketplace_id is not None:
        where.append(f"orders.marketplace_id = {sql.bind(filters.marketplace_id)}")
    if filters.statuses is not None:
        where.append(sql.bind_in("orders.status", filters.statuses))
    if filters.purchased_from is not None:
        where.append(f"orders.purchase_date >= {sql.bind_time(filters.purchased_from)}")
    if filters.purchased_before is not None:
        where.append(f"orders.purchase_date < {sql.bind_time(filters.purchased_before)}")
    if filters.order_id_or_sku is not None:
        text = filters.order_id_or_sku
        # Two index seeks (ix_orders_account_marketplace_order, ix_order_items_sku_lower) merged by a UNION, never a
        # scan: PostgreSQL cannot plan `marketplace_order_id = ? OR id IN (...)` as two seeks and walked the account's
        # orders instead (2.2 s with a million, docs/decisions/0439-orders-table-speed.md).
        where.append(
            f"orders.id IN (SELECT orders.id FROM orders WHERE orders.account_id = {sql.bind(account_id)} "  # noqa: S608
            f"AND orders.marketplace_order_id = {sql.bind(text)} UNION SELECT order_items.order_id "
            f"FROM order_items WHERE order_items.account_id = {sql.bind(account_id)} "
            f"AND lower(order_items.sku) = {sql.bind(text.lower())})"
        )
    if filters.customer_name is not None:
        where.append(f"lower(orders.buyer_name) = {sql.bind(filters.customer_name.lower())}")
    return " AND ".join(where)


async def table_page(
    reader: DriverReader,
    account_id: str,
    filters: TableFilters,
    *,
    sort: str,
    descending: bool,
    limit: int,
    offset: int,
    version: int,
) -> list[DocumentRow]:
    """One page of the app's orders table, sorted by `sort` (a TABLE_SORTS key) then id: one statement. The inner
    select walks the sort's index (ids only, so a deep OFFSET skips index entries, not rows); the outer one reads
    the page's documents."""
    sql = DriverSql(reader.postgres)
    direction = "DESC" if descending else "ASC"
    order_by = ", ".join(f"{column} {direction}" for column in (*TABLE_SORTS[sort], "orders.id"))
    columns = _document_columns(sql, version, include_customer=False)  # first: SQLite's ? bind in text order
    conditions = _table_conditions(sql, account_id, filters)
    text = (
        f"SELECT {columns} FROM orders JOIN (SELECT orders.id AS page_id FROM orders WHERE {conditions} "  # noqa: S608
        f"ORDER BY {order_by} LIMIT {sql.bind(limit)} OFFSET {sql.bind(offset)}) AS page ON page.page_id = orders.id "
        f"ORDER BY {order_by}"
    )
    return await _fetch(reader, sql, text)


async def table_count(reader: DriverReader, account_id: str, filters: TableFilters, *, at_most: int) -> int:
    """How many orders the table's filters hold, counted up to `at_most` + 1 (more than `at_most` is said as such):
    one count over the filters' index, bounded whatever the account's size (a million index entries take SQLite a
    quarter of a second and more; docs/decisions/0436-app-tables.md)."""
    sql = DriverSql(reader.postgres)
    conditions = _table_conditions(sql, account_id, filters)
    bounded = f"SELECT 1 FROM orders WHERE {conditions} LIMIT {sql.bind(at_most + 1)}"  # noqa: S608
    rows = await reader.fetch(f"SELECT count(*) FROM ({bounded}) AS counted", sql.params)  # noqa: S608
    return int(rows[0][0])


async def orders_for_documents(
    session: AsyncSession, order_ids: Collection[str]
) -> list[tuple[Order, list[OrderItem], list[OrderShipment], list[OrderRefundLine]]]:
    """Orders by id with everything their document holds, as entities (rendering happens on writes; a read
    renders only an order whose stored document is out of date)."""
    ids = sorted(set(order_ids))
    if not ids:
        return []
    orders = (await session.execute(select(Order).where(Order.id.in_(ids)).order_by(Order.id))).scalars().all()
    items: dict[str, list[OrderItem]] = defaultdict(list)
    query = select(OrderItem).where(OrderItem.order_id.in_(ids)).order_by(OrderItem.order_id, OrderItem.position)
    for item in (await session.execute(query)).scalars():
        items[item.order_id].append(item)
    shipments: dict[str, list[OrderShipment]] = defaultdict(list)
    query_shipments = (
        select(OrderShipment)
        .where(OrderShipment.order_id.in_(ids))
        .order_by(OrderShipment.created_at, OrderShipment.id)
    )
    for shipment in (await session.execute(query_shipments)).scalars():
        shipments[shipment.order_id].append(shipment)
    lines: dict[str, list[OrderRefundLine]] = defaultdict(list)
    query_lines = (
        select(OrderRefundLine)
        .where(OrderRefundLine.order_id.in_(ids))
        .order_by(OrderRefundLine.created_at, OrderRefundLine.id)
    )
    for line in (await session.execute(query_lines)).scalars():
        lines[line.order_id].append(line)
    return [(order, items[order.id], shipments[order.id], lines[order.id]) for order in orders]


_ORDERS = Order.__table__
assert isinstance(_ORDERS, Table)
# Core (not ORM) executemany: the entity never holds the documents.
_STORE_DOCUMENT = (
    update(_ORDERS)
    .where(_ORDERS.c.id == bindparam("b_id"))
    .values(
        document=bindparam("b_document"),
        customer_document=bindparam("b_customer_document"),
        document_version=bindparam("b_version"),
        # The stamp is copied in SQL: exactly the stored value, whatever each driver makes of timestamps.
        document_updated_at=_ORDERS.c.updated_at,
    )
)


async def store_documents(session: AsyncSession, documents: Sequence[tuple[str, bytes, bytes]], version: int) -> None:
    """(order id, document, customer_document) written in the caller's transaction (one executemany)."""
    if documents:
        await session.execute(
            _STORE_DOCUMENT,
            [
                {"b_id": order_id, "b_document": document, "b_customer_document": customer, "b_version": version}
                for order_id, document, customer in documents
            ],
        )


async def lock_stale_documents(session: AsyncSession, version: int, limit: int) -> list[str]:
    """Up to `limit` orders whose document is missing (version 0) or older than `version`: a range of
    ix_orders_document_version that stops at `limit`.

    Locked on PostgreSQL (skipping rows a writer holds: it stores their document itself), so a render
    can never overwrite a newer document; SQLite's single writer already serialises the two.
    """
    query = select(Order.id).where(Order.document_version < version).limit(limit)
    if dialect_of(session) == "postgresql":
        query = query.with_for_update(skip_locked=True)
    return list((await session.execute(query)).scalars())


# ---------------------------------------------------------------- writes (ORM entities)


async def orders_by_marketplace_ids(
    session: AsyncSession, account_id: str, marketplace_id: str, marketplace_order_ids: Collection[str]
) -> dict[str, Order]:
    """Pulled orders already stored, locked like `lock_orders` (in id order on PostgreSQL): a re-pull merges into
    the latest committed state, never over a Confirm or Update committed meanwhile."""
    if not marketplace_order_ids:
        return {}
    query = (
        select(Order)
        .where(
            Order.account_id == account_id,
            Order.marketplace_id == marketplace_id,
            Order.marketplace_order_id.in_(list(marketplace_order_ids)),
        )
        .order_by(Order.id)
        .execution_options(populate_existing=True)
    )
    if dialect_of(session) == "postgresql":
        query = query.with_for_update()
    result = await session.execute(query)
    return {order.marketplace_order_id: order for order in result.scalars()}


async def items_of_orders(session: AsyncSession, order_ids: Collection[str]) -> dict[str, list[OrderItem]]:
    grouped: dict[str, list[OrderItem]] = defaultdict(list)
    if not order_ids:
        return grouped
    result = await session.execute(
        select(OrderItem)
        .where(OrderItem.order_id.in_(list(order_ids)))
        .order_by(OrderItem.order_id, OrderItem.position)
        .execution_options(populate_existing=True)
    )
    for item in result.scalars():
        grouped[item.order_id].append(item)
    return grouped


async def order_ids_of_items(session: AsyncSession, account_id: str, item_ids: Collection[str]) -> dict[str, str]:
    """OrderItemId -> its order's id, for the caller's account only (unknown ids are simply absent)."""
    if not item_ids:
        return {}
    result = await session.execute(
        select(OrderItem.id, OrderItem.order_id).where(
            OrderItem.account_id == account_id, OrderItem.id.in_(list(item_ids))
        )
    )
    return {item_id: order_id for item_id, order_id in result.all()}


async def lock_orders(session: AsyncSession, account_id: str, order_ids: Collection[str]) -> dict[str, Order]:
    """Load orders for a change, locking their rows on PostgreSQL in id order (no lock-order deadlocks).

    On SQLite the single writer connection (BEGIN IMMEDIATE) already serialises every write transaction.
    """
    if not order_ids:
        return {}
    query = (
        select(Order)
        .where(Order.account_id == account_id, Order.id.in_(sorted(order_ids)))
        .order_by(Order.id)
        .execution_options(populate_existing=True)
    )
    if dialect_of(session) == "postgresql":
        query = query.with_for_update()
    result = await session.execute(query)
    return {order.id: order for order in result.scalars()}


async def connections_by_id(
    session: AsyncSession, account_id: str, marketplace_ids: Collection[str]
) -> dict[str, MarketplaceConnection]:
    if not marketplace_ids:
        return {}
    result = await session.execute(
        select(MarketplaceConnection).where(
            MarketplaceConnection.account_id == account_id, MarketplaceConnection.id.in_(list(marketplace_ids))
        )
    )
    return {connection.id: connection for connection in result.scalars()}


async def connection(
    session: AsyncSession, account_id: str, marketplace_id: str, *, for_update: bool = False
) -> MarketplaceConnection | None:
    query = select(MarketplaceConnection).where(
        MarketplaceConnection.account_id == account_id, MarketplaceConnection.id == marketplace_id
    )
    if for_update:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()


async def unshipped_before(
    session: AsyncSession, account_id: str, statuses: Collection[str], cutoff: datetime, at_most: int
) -> int:
    """The account's orders of `statuses` bought before `cutoff`, counted up to `at_most + 1`: ranges of
    ix_orders_account_status_purchased, read no further than that."""
    found = select(Order.id).where(
        Order.account_id == account_id, Order.status.in_(statuses), Order.purchase_date < cutoff
    )
    query = select(func.count()).select_from(found.limit(at_most + 1).subquery())
    return int((await session.execute(query)).scalar_one())
