"""All order queries. Every query is scoped by account.

Reads for the API return Core rows (attribute access by column name) because a page of 200 orders with
their items is on the hot path; writes load ORM entities.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.db import dialect_of
from marketsync.models import MarketplaceConnection
from marketsync.models.orders import Order, OrderFeed, OrderItem, OrderRefundLine, OrderShipment

ORDERS = Order.__table__
ITEMS = OrderItem.__table__
SHIPMENTS = OrderShipment.__table__
REFUND_LINES = OrderRefundLine.__table__


# ---------------------------------------------------------------- reads (API)


async def page_of_orders(
    session: AsyncSession,
    account_id: str,
    *,
    order_ids: Collection[str] | None,
    statuses: Collection[str] | None,
    changed_from: datetime | None,
    changed_to: datetime | None,
    after: tuple[datetime, str] | None,
    high_water: datetime,
    limit: int,
) -> Sequence[Row[Any]]:
    """One keyset page in (updated_at, id) order, bounded above by the walk's high-water time."""
    query = select(ORDERS).where(ORDERS.c.account_id == account_id, ORDERS.c.updated_at <= high_water)
    if order_ids is not None:
        query = query.where(ORDERS.c.id.in_(list(order_ids)))
    if statuses is not None:
        query = query.where(ORDERS.c.status.in_(list(statuses)))
    if changed_from is not None:
        query = query.where(ORDERS.c.updated_at >= changed_from)
    if changed_to is not None:
        query = query.where(ORDERS.c.updated_at <= changed_to)
    if after is not None:
        query = query.where(tuple_(ORDERS.c.updated_at, ORDERS.c.id) > tuple_(*after))
    query = query.order_by(ORDERS.c.updated_at, ORDERS.c.id).limit(limit)
    return (await session.execute(query)).all()


async def order_row(session: AsyncSession, account_id: str, order_id: str) -> Row[Any] | None:
    query = select(ORDERS).where(ORDERS.c.account_id == account_id, ORDERS.c.id == order_id)
    return (await session.execute(query)).first()


async def children_of(
    session: AsyncSession, orders: Sequence[Row[Any]]
) -> tuple[dict[str, list[Row[Any]]], dict[str, list[Row[Any]]], dict[str, list[Row[Any]]]]:
    """Items, shipments and refund lines of a page of orders: at most three queries, whatever the page size.

    Shipments are only looked up for orders with a shipped unit, refund lines only for orders with a
    refund (a shipment always ships units; a refund always raises RefundedTotal), so a page of fresh
    orders costs one query.
    """
    items: dict[str, list[Row[Any]]] = defaultdict(list)
    shipments: dict[str, list[Row[Any]]] = defaultdict(list)
    refunds: dict[str, list[Row[Any]]] = defaultdict(list)
    if not orders:
        return items, shipments, refunds
    for row in await session.execute(
        select(ITEMS).where(ITEMS.c.order_id.in_([o.id for o in orders])).order_by(ITEMS.c.order_id, ITEMS.c.position)
    ):
        items[row.order_id].append(row)
    shipped = [o.id for o in orders if any(item.shipped_quantity for item in items.get(o.id, ()))]
    if shipped:
        for row in await session.execute(
            select(SHIPMENTS).where(SHIPMENTS.c.order_id.in_(shipped)).order_by(SHIPMENTS.c.created_at, SHIPMENTS.c.id)
        ):
            shipments[row.order_id].append(row)
    refunded = [o.id for o in orders if o.refunded_total > 0]
    if refunded:
        for row in await session.execute(
            select(REFUND_LINES)
            .where(REFUND_LINES.c.order_id.in_(refunded))
            .order_by(REFUND_LINES.c.created_at, REFUND_LINES.c.id)
        ):
            refunds[row.order_id].append(row)
    return items, shipments, refunds


# ---------------------------------------------------------------- writes (ORM entities)


async def orders_by_marketplace_ids(
    session: AsyncSession, account_id: str, marketplace_id: str, marketplace_order_ids: Collection[str]
) -> dict[str, Order]:
    if not marketplace_order_ids:
        return {}
    result = await session.execute(
        select(Order).where(
            Order.account_id == account_id,
            Order.marketplace_id == marketplace_id,
            Order.marketplace_order_id.in_(list(marketplace_order_ids)),
        )
    )
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


async def connection(session: AsyncSession, account_id: str, marketplace_id: str) -> MarketplaceConnection | None:
    return (await connections_by_id(session, account_id, [marketplace_id])).get(marketplace_id)


async def order_feed(session: AsyncSession, job_id: str) -> OrderFeed | None:
    return await session.get(OrderFeed, job_id, populate_existing=True)
