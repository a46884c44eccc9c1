"""All order queries. Every query is scoped by account.

Reads for the API (a page of 200 orders is on the hot path) run hand-written SQL on a raw driver connection
(`db.DriverReader`) and return plain tuples: no ORM entities, no per-value type processing.
A page is one keyset query returning each order's stored document (docs/decisions/0066-order-documents.md).
Rendering a document reads the order's rows: the order and its items in one query (a LEFT JOIN), then
shipments and refund lines only for orders that have any. Writes load ORM entities.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.db import DriverReader, dialect_of
from marketsync.kit.clock import iso
from marketsync.models import MarketplaceConnection
from marketsync.models.orders import Order, OrderItem

# ---------------------------------------------------------------- reads (API)

# Positional columns of the read tuples; schemas.order_json unpacks them in this order.
ORDER_COLUMNS = (
    "id",
    "marketplace_order_id",
    "marketplace_id",
    "platform",
    "country",
    "status",
    "marketplace_status",
    "purchase_date",
    "updated_at",
    "created_at",
    "currency",
    "items_total",
    "shipping_total",
    "tax_total",
    "refunded_total",
    "external_reference",
    "ship_region",
    "ship_country_code",
)
# Personal data: only selected when the caller asked for customer data.
CUSTOMER_COLUMNS = (
    "buyer_name",
    "buyer_email",
    "buyer_phone",
    "ship_name",
    "ship_line1",
    "ship_line2",
    "ship_city",
    "ship_postal_code",
    "ship_phone",
)
ITEM_COLUMNS = (
    "id",
    "marketplace_item_id",
    "sku",
    "title",
    "quantity",
    "unit_price",
    "status",
    "shipped_quantity",
    "cancelled_quantity",
    "refunded_quantity",
    "refunded_amount",
    "cancel_reason",
)
SHIPMENT_COLUMNS = (
    "id",
    "order_item_id",
    "quantity",
    "ship_date",
    "carrier_code",
    "carrier_name",
    "service_level",
    "tracking_number",
)
REFUND_LINE_COLUMNS = ("refund_id", "reason", "currency", "created_at", "order_item_id", "quantity", "amount")

_ORDER_ID = ORDER_COLUMNS.index("id")
_ORDER_REFUNDED_TOTAL = ORDER_COLUMNS.index("refunded_total")
_ITEM_SHIPPED = ITEM_COLUMNS.index("shipped_quantity")

Row = Sequence[Any]


# Timestamp columns are read as UTCDateTime's SQLite storage text, "YYYY-MM-DD HH:MM:SS.ffffff", on both
# backends (PostgreSQL formats them with to_char): turning that into the wire form is a slice, far cheaper
# than datetime.isoformat() on 800 values a page.
TIME_COLUMNS = frozenset({"purchase_date", "updated_at", "created_at", "ship_date"})
_POSTGRES_TIME_TEXT = "YYYY-MM-DD HH24:MI:SS.US"


@dataclass
class OrderRows:
    """Orders in page order, each with its items, plus the shipments and refund lines of those that have any.

    Timestamps are storage text (`wire_time` gives the wire string, `key_time` the exact datetime);
    money is the stored integer (ten-thousandths).
    """

    orders: list[tuple[Row, list[Row]]]
    shipments: dict[str, list[Row]] = field(default_factory=dict)
    refund_lines: dict[str, list[Row]] = field(default_factory=dict)


def wire_time(value: str) -> str:
    """Storage text to the wire form of iso(): milliseconds (truncated, as iso() does) and Z."""
    if len(value) == 26:
        return f"{value[:10]}T{value[11:23]}Z"
    return iso(key_time(value))


def key_time(value: str) -> datetime:
    return datetime.fromisoformat(value).replace(tzinfo=UTC)


class _Sql:
    """Parameters collected in the driver's own placeholder style ($n for asyncpg, ? for sqlite3).

    The SQL texts below only interpolate this module's column/table names and these placeholders
    (hence the S608 waivers); every value is a bound parameter.
    """

    def __init__(self, postgres: bool) -> None:
        self.postgres = postgres
        self.params: list[Any] = []

    def bind(self, value: Any) -> str:
        self.params.append(value)
        return f"${len(self.params)}" if self.postgres else "?"

    def bind_time(self, value: datetime) -> str:
        """A timestamp as UTCDateTime stores it: naive UTC (text with microseconds on SQLite)."""
        naive = value.astimezone(UTC).replace(tzinfo=None)
        return self.bind(naive if self.postgres else naive.isoformat(sep=" ", timespec="microseconds"))

    def column(self, table: str, name: str) -> str:
        """A selected column under its own name; timestamps as storage text (see TIME_COLUMNS)."""
        if self.postgres and name in TIME_COLUMNS:
            return f"to_char({table}.{name}, '{_POSTGRES_TIME_TEXT}') AS {name}"
        return f"{table}.{name}"

    def bind_in(self, column: str, values: Collection[str]) -> str:
        if self.postgres:
            return f"{column} = ANY({self.bind(list(values))}::varchar[])"
        return f"{column} IN ({', '.join(self.bind(value) for value in values)})"


async def _fetch(reader: DriverReader, sql: _Sql, text: str) -> list[Row]:
    return await reader.fetch(text, sql.params)


# A page reads each order's stored document (docs/decisions/0066-order-documents.md): the keyset query returns
# the bytes the response is made of. Positional columns of the document rows:
# DOCUMENT_CURRENT is true when the stored document is of `version` and was rendered at the order's present
# last-changed time (a change that did not store one leaves it false: the order is rendered from its rows).
DOCUMENT_ID, DOCUMENT_UPDATED_AT, DOCUMENT_CURRENT, DOCUMENT, CUSTOMER_DOCUMENT = range(5)


def _document_columns(sql: _Sql, version: int, include_customer: bool) -> str:
    current = f"orders.document_version = {sql.bind(version)} AND orders.document_updated_at = orders.updated_at"
    columns = [
        "orders.id",
        sql.column("orders", "updated_at"),
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
    changed_from: datetime | None,
    changed_to: datetime | None,
    after: tuple[datetime, str] | None,
    high_water: datetime,
    limit: int,
    include_customer: bool,
    version: int,
) -> list[Row]:
    """One keyset page of document rows in (updated_at, id) order, bounded above by the walk's high-water time.

    The conditions keep the shape `account_id = ? AND updated_at ... ORDER BY updated_at, id`, a range
    walk of ix_orders_account_updated (or ix_orders_account_status_updated with OrderStatuses).
    """
    sql = _Sql(reader.postgres)
    columns = _document_columns(sql, version, include_customer)
    where = [f"orders.account_id = {sql.bind(account_id)}", f"orders.updated_at <= {sql.bind_time(high_water)}"]
    if order_ids is not None:
        where.append(sql.bind_in("orders.id", order_ids))
    if statuses is not None:
        where.append(sql.bind_in("orders.status", statuses))
    if changed_from is not None:
        where.append(f"orders.updated_at >= {sql.bind_time(changed_from)}")
    if changed_to is not None:
        where.append(f"orders.updated_at <= {sql.bind_time(changed_to)}")
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
) -> Row | None:
    sql = _Sql(reader.postgres)
    columns = _document_columns(sql, version, include_customer)
    conditions = f"orders.account_id = {sql.bind(account_id)} AND orders.id = {sql.bind(order_id)}"
    text = f"SELECT {columns} FROM orders WHERE {conditions}"  # noqa: S608
    rows = await _fetch(reader, sql, text)
    return rows[0] if rows else None


async def orders_to_render(reader: DriverReader, order_ids: Collection[str]) -> OrderRows:
    """Orders by id with everything their document holds (customer data included), from the tables."""
    sql = _Sql(reader.postgres)
    page = f"SELECT {{columns}} FROM orders WHERE {sql.bind_in('orders.id', order_ids)}"  # noqa: S608
    return await _orders_with_children(reader, sql, page, include_customer=True)


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


async def _orders_with_children(reader: DriverReader, sql: _Sql, page: str, include_customer: bool) -> OrderRows:
    """The orders `page` selects joined with their items (one query), then shipments/refunds if any."""
    order_columns = ORDER_COLUMNS + CUSTOMER_COLUMNS if include_customer else ORDER_COLUMNS
    width = len(order_columns)
    selected = ", ".join([*(f"o.{name}" for name in order_columns), *(f"i.{name}" for name in ITEM_COLUMNS)])
    page_columns = ", ".join([*(sql.column("orders", name) for name in order_columns), "orders.updated_at AS page_key"])
    text = (
        f"SELECT {selected} FROM ({page.format(columns=page_columns)}) AS o "  # noqa: S608
        "LEFT JOIN order_items AS i ON i.order_id = o.id ORDER BY o.page_key, o.id, i.position"
    )
    orders: list[tuple[Row, list[Row]]] = []
    # A shipment always ships units and a refund always raises RefundedTotal, so orders without either
    # (a page of fresh orders) cost no further query.
    shipped: set[str] = set()
    last_id = ""
    items: list[Row] = []
    for row in await _fetch(reader, sql, text):
        order_id: str = row[_ORDER_ID]
        if order_id != last_id:
            last_id = order_id
            items = []
            orders.append((row[:width], items))
        if row[width] is not None:
            items.append(row[width:])
            if row[width + _ITEM_SHIPPED]:
                shipped.add(order_id)
    result = OrderRows(orders)
    if shipped:
        result.shipments = await _children(reader, "order_shipments", SHIPMENT_COLUMNS, shipped)
    refunded = [order[_ORDER_ID] for order, _ in orders if order[_ORDER_REFUNDED_TOTAL] > 0]
    if refunded:
        result.refund_lines = await _children(reader, "order_refund_lines", REFUND_LINE_COLUMNS, refunded)
    return result


async def _children(
    reader: DriverReader, table: str, columns: Sequence[str], order_ids: Collection[str]
) -> dict[str, list[Row]]:
    """Rows of a child table per order id, oldest first (created_at, id)."""
    sql = _Sql(reader.postgres)
    selected = ", ".join(sql.column(table, name) for name in columns)
    condition = sql.bind_in(f"{table}.order_id", order_ids)
    order = f"{table}.created_at, {table}.id"
    text = f"SELECT {table}.order_id, {selected} FROM {table} WHERE {condition} ORDER BY {order}"  # noqa: S608
    grouped: dict[str, list[Row]] = defaultdict(list)
    for row in await _fetch(reader, sql, text):
        grouped[row[0]].append(row[1:])
    return grouped


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
