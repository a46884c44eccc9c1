"""Order use cases: ingest pulled orders, list/read, confirm/cancel/refund (with write-back), update.

Every change moves the order's last-changed time (`updated_at`), and only a real change does.
Writes validate the whole batch before applying anything: the body's shape errors (read leniently, see
schemas.read_write_body) and every existence and state refusal of every item whose OrderItemId is
well-formed come back together in ONE ValidationFailed keyed `OrderItems[i].<Field>`, and nothing is
applied (the edge rolls the transaction back).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.db import DriverReader
from marketsync.http.bodies import Checked
from marketsync.http.errors import NotFound, ValidationFailed
from marketsync.http.requestid import current_request_id
from marketsync.jobs.service import enqueue
from marketsync.jobs.types import OrderWriteBackPayload
from marketsync.kinds import ConnectionState, kind_of, marketplace_name
from marketsync.kit.clock import iso
from marketsync.kit.ids import new_id
from marketsync.marketplaces.connector import MarketplaceOrder, MarketplaceOrderItem
from marketsync.models import MarketplaceConnection
from marketsync.models.orders import Order, OrderItem, OrderRefundLine, OrderShipment
from marketsync.orders import repository, rules, schemas
from marketsync.runtime import Runtime

__all__ = [
    "AWAITING_SHIPMENT",
    "RENDER_BATCH",
    "OrderPage",
    "OrderTable",
    "TableFilters",
    "cancel",
    "confirm",
    "get_order",
    "ingest_pulled_orders",
    "list_orders",
    "order_table",
    "refresh_stale_documents",
    "refund",
    "refuse_list",
    "render_documents",
    "store_documents",
    "unshipped_before",
    "update",
]


log = structlog.get_logger("marketsync.orders")

# NextUpdatedSince overlaps the walk by this much: a change stamped just before the walk began but
# committed after its first page is still found by the next walk.
SETTLE = timedelta(seconds=60)
ZERO = Decimal("0")


def _touch(order: Order, now: datetime) -> None:
    """Move the last-changed time forward, strictly, even if the clock has not moved."""
    order.updated_at = max(now, order.updated_at + timedelta(microseconds=1))


def _figures(item: OrderItem) -> rules.ItemFigures:
    return rules.ItemFigures(
        quantity=item.quantity,
        unit_price=item.unit_price,
        shipped=item.shipped_quantity,
        cancelled=item.cancelled_quantity,
        refunded_quantity=item.refunded_quantity,
        refunded_amount=item.refunded_amount,
    )


def _recompute(order: Order, items: Sequence[OrderItem]) -> None:
    pending = rules.is_pending_at_marketplace(order.marketplace_status)
    for item in items:
        item.status = rules.item_status(_figures(item), order_pending=pending)
    order.status = rules.order_status([item.status for item in items], pending=pending)
    order.items_total = sum((item.unit_price * item.quantity for item in items), ZERO)
    order.refunded_total = sum((item.refunded_amount for item in items), ZERO)


def _pending(order: Order) -> bool:
    return rules.is_pending_at_marketplace(order.marketplace_status)


# ---------------------------------------------------------------- ingestion (called by the OrderPull job)


_ORDER_FIELDS = (
    "marketplace_status",
    "purchase_date",
    "marketplace_changed_at",
    "currency",
    "shipping_total",
    "tax_total",
    "buyer_name",
    "buyer_email",
    "buyer_phone",
    "ship_name",
    "ship_line1",
    "ship_line2",
    "ship_city",
    "ship_region",
    "ship_postal_code",
    "ship_country_code",
    "ship_phone",
)
_ITEM_FIELDS = (
    "sku",
    "title",
    "quantity",
    "unit_price",
    "marketplace_status",
    "shipped_quantity",
    "cancelled_quantity",
)


def _pulled_order_values(pulled: MarketplaceOrder) -> dict[str, Any]:
    address = pulled.shipping_address
    return {
        "marketplace_status": pulled.status,
        "purchase_date": pulled.purchase_date,
        "marketplace_changed_at": pulled.changed_at,
        "currency": pulled.currency.upper(),
        "shipping_total": pulled.shipping_total,
        "tax_total": pulled.tax_total,
        "buyer_name": pulled.buyer_name,
        "buyer_email": pulled.buyer_email,
        "buyer_phone": pulled.buyer_phone,
        "ship_name": address.name,
        "ship_line1": address.line1,
        "ship_line2": address.line2,
        "ship_city": address.city,
        "ship_region": address.region,
        "ship_postal_code": address.postal_code,
        "ship_country_code": address.country_code,
        "ship_phone": address.phone,
    }


def _snapshot(obj: Any, names: Sequence[str]) -> tuple[Any, ...]:
    return tuple(getattr(obj, name) for name in names)


async def ingest_pulled_orders(
    rt: Runtime, session: AsyncSession, connection: MarketplaceConnection, orders: list[MarketplaceOrder]
) -> int:
    """Upsert pulled orders by (account, connection, marketplace order id); return how many were NEW.

    A changed order is updated and its last-changed time moves; an identical re-pull changes nothing.
    Runs inside the caller's transaction (the OrderPull job fires OrdersDownloaded in the same one).
    """
    latest: dict[str, MarketplaceOrder] = {}
    for pulled in orders:
        latest[pulled.marketplace_order_id] = pulled  # a repeated order collapses to its last occurrence
    existing = await repository.orders_by_marketplace_ids(session, connection.account_id, connection.id, list(latest))
    items_by_order = await repository.items_of_orders(session, [order.id for order in existing.values()])
    now = rt.clock.now()  # after the locks: a change committed while we waited is older than ours
    new_count = 0
    changed: set[str] = set()
    for marketplace_order_id, pulled in latest.items():
        order = existing.get(marketplace_order_id)
        if order is None:
            changed.add(_insert_pulled(session, connection, pulled, now))
            new_count += 1
        elif _merge_pulled(session, order, items_by_order.get(order.id, []), pulled):
            _touch(order, now)
            changed.add(order.id)
    await session.flush()
    await store_documents(session, changed)
    log.info("orders_ingested", marketplace_id=connection.id, pulled=len(latest), new=new_count)
    return new_count


def _insert_pulled(
    session: AsyncSession, connection: MarketplaceConnection, pulled: MarketplaceOrder, now: datetime
) -> str:
    """Add a new order with its items; return its id."""
    order = Order(
        id=new_id(),
        account_id=connection.account_id,
        marketplace_id=connection.id,
        platform=connection.platform,
        country=connection.country,
        marketplace_order_id=pulled.marketplace_order_id,
        external_reference=None,
        created_at=now,
        updated_at=now,
        **_pulled_order_values(pulled),
    )
    items: list[OrderItem] = []
    for position, pulled_item in enumerate(_distinct_items(pulled.items)):
        item = _new_item(order, position, pulled_item)
        shipped, cancelled = rules.pulled_counters(_figures(item), pulled_item.status, pulled.status)
        item.shipped_quantity, item.cancelled_quantity = shipped, cancelled
        items.append(item)
    _recompute(order, items)
    session.add(order)
    session.add_all(items)
    return order.id


def _distinct_items(items: Sequence[MarketplaceOrderItem]) -> list[MarketplaceOrderItem]:
    latest = {item.marketplace_item_id: item for item in items}
    return list(latest.values())


def _new_item(order: Order, position: int, pulled: MarketplaceOrderItem) -> OrderItem:
    return OrderItem(
        id=new_id(),
        order_id=order.id,
        account_id=order.account_id,
        position=position,
        marketplace_item_id=pulled.marketplace_item_id,
        sku=pulled.sku,
        title=pulled.title,
        quantity=pulled.quantity,
        unit_price=pulled.unit_price,
        status=rules.UNSHIPPED,
        marketplace_status=pulled.status,
        shipped_quantity=0,
        cancelled_quantity=0,
        refunded_quantity=0,
        refunded_amount=ZERO,
        cancel_reason=None,
    )


def _merge_pulled(session: AsyncSession, order: Order, items: list[OrderItem], pulled: MarketplaceOrder) -> bool:
    """Apply a re-pulled order; True when anything stored actually changed."""
    before = (
        _snapshot(order, (*_ORDER_FIELDS, "status", "items_total")),
        [_snapshot(item, (*_ITEM_FIELDS, "status")) for item in items],
    )
    for name, value in _pulled_order_values(pulled).items():
        setattr(order, name, value)
    by_marketplace_id = {item.marketplace_item_id: item for item in items}
    for pulled_item in _distinct_items(pulled.items):
        item = by_marketplace_id.get(pulled_item.marketplace_item_id)
        if item is None:
            item = _new_item(order, len(items), pulled_item)
            items.append(item)
            session.add(item)
        item.sku, item.title, item.unit_price = pulled_item.sku, pulled_item.title, pulled_item.unit_price
        item.quantity = max(pulled_item.quantity, item.shipped_quantity + item.cancelled_quantity)
        item.marketplace_status = pulled_item.status
        shipped, cancelled = rules.pulled_counters(_figures(item), pulled_item.status, pulled.status)
        item.shipped_quantity, item.cancelled_quantity = shipped, cancelled
    _recompute(order, items)
    after = (
        _snapshot(order, (*_ORDER_FIELDS, "status", "items_total")),
        [_snapshot(item, (*_ITEM_FIELDS, "status")) for item in items],
    )
    return before != after


# ---------------------------------------------------------------- reads


@dataclass(frozen=True)
class OrderPage:
    documents: list[bytes]  # each order's JSON, as stored (docs/decisions/0066-order-documents.md)
    next_cursor: str | None
    next_updated_since: datetime

    def json(self) -> bytes:
        """The List response body (schemas.OrderListOut) around the stored documents: nothing is re-serialised."""
        return schemas.list_body(self.documents, self.next_cursor, iso(self.next_updated_since))


FOREIGN_CURSOR = "Not a cursor this service issued to this account; start a new walk without Cursor."
OTHER_FILTERS = (
    "This cursor belongs to a walk with other filters; send the same filters, or start a new walk without Cursor."
)
_FILTERS = ("ServiceOrderIDs", "OrderStatuses", "UpdatedSince", "FromDate", "ToDate")


def _cursor_of(rt: Runtime, account_id: str, text: str, fingerprint: str | None) -> rules.Cursor | str:
    """The decoded Cursor, or what is wrong with it. `fingerprint`: the walk's filters, None when one of them is
    malformed (named by its own shape error): whether the cursor belongs to them is then not checked."""
    try:
        cursor = rules.decode_cursor(text, rt.settings.hash_key, account_id)
    except ValueError:
        return FOREIGN_CURSOR
    if fingerprint is not None and cursor.fingerprint != fingerprint:
        return OTHER_FILTERS
    return cursor


def refuse_list(rt: Runtime, account_id: str, body: Checked[schemas.ListOrdersRequest]) -> None:
    """A List body with a shape error: its 400 names a bad Cursor too (spec section 7: one 400 names every bad
    field)."""
    text = body.fields.get("Cursor")
    problems: Problems = {}
    if text is not None:
        well_formed = all(name in body.fields for name in _FILTERS)  # optional: absent ones are there as None
        fingerprint = rules.filter_fingerprint(*(body.fields.get(name) for name in _FILTERS)) if well_formed else None
        cursor = _cursor_of(rt, account_id, text, fingerprint)
        if isinstance(cursor, str):
            problems["Cursor"] = [cursor]
    body.refuse(problems)


async def list_orders(
    rt: Runtime, reader: DriverReader, account_id: str, request: schemas.ListOrdersRequest
) -> OrderPage:
    fingerprint = rules.filter_fingerprint(
        request.ServiceOrderIDs, request.OrderStatuses, request.UpdatedSince, request.FromDate, request.ToDate
    )
    after: tuple[datetime, str] | None = None
    if request.Cursor is None:
        high_water = rt.clock.now()
    else:
        cursor = _cursor_of(rt, account_id, request.Cursor, fingerprint)
        if isinstance(cursor, str):
            raise ValidationFailed(errors={"Cursor": [cursor]})
        high_water, after = cursor.high_water, (cursor.last_updated_at, cursor.last_id)
    bounds = rules.changed_bounds(request.UpdatedSince, request.FromDate, request.ToDate)
    rows = await repository.page_of_documents(
        reader,
        account_id,
        order_ids=request.ServiceOrderIDs,
        statuses=request.OrderStatuses,
        changed_since=bounds.since,
        changed_before=bounds.before,
        after=after,
        high_water=high_water,
        limit=request.Limit + 1,
        include_customer=request.IncludeCustomerData,
        version=schemas.DOCUMENT_VERSION,
    )
    has_more = len(rows) > request.Limit
    del rows[request.Limit :]
    next_cursor = None
    if has_more:
        last = repository.DocumentRow._make(rows[-1])
        last_updated_at = repository.key_time(last.updated_at)
        next_cursor = rules.encode_cursor(
            rules.Cursor(last_updated_at, last.id, high_water, fingerprint), rt.settings.hash_key, account_id
        )
    documents = await _documents(rt, rows, include_customer=request.IncludeCustomerData)
    return OrderPage(documents, next_cursor, high_water - SETTLE)


async def get_order(
    rt: Runtime, reader: DriverReader, account_id: str, order_id: str, *, include_customer: bool
) -> bytes:
    """The order's JSON document (schemas.OrderOut), exactly as List shows it."""
    row = await repository.document_by_id(
        reader, account_id, order_id, include_customer=include_customer, version=schemas.DOCUMENT_VERSION
    )
    if row is None:
        raise NotFound("No order with this id.")
    return (await _documents(rt, [row], include_customer=include_customer))[0]


async def find_by_marketplace_order_id(
    rt: Runtime, reader: DriverReader, account_id: str, marketplace_order_id: str, *, limit: int = 50
) -> list[bytes]:
    """The documents of the account's orders with this marketplace order id (the spec's MarketplaceOrderId, exact),
    on any of its marketplaces, without customer data: the app's find box."""
    rows = await repository.documents_by_marketplace_order_id(
        reader, account_id, marketplace_order_id, limit=limit, version=schemas.DOCUMENT_VERSION
    )
    return await _documents(rt, rows, include_customer=False)


TableFilters = repository.TableFilters  # the app's orders table: its filters, as the console builds them


# The app's orders table counts up to this many; beyond, it says "more than" (docs/decisions/0436-app-tables.md).
TABLE_COUNT_MAX = 100_000


@dataclass(frozen=True)
class OrderTable:
    """A page of the app's orders table and how many orders its filters hold (TABLE_COUNT_MAX + 1: more than
    TABLE_COUNT_MAX)."""

    documents: list[bytes]
    total: int


async def order_table(
    rt: Runtime,
    reader: DriverReader,
    account_id: str,
    filters: repository.TableFilters,
    *,
    sort: str,
    descending: bool,
    limit: int,
    offset: int,
) -> OrderTable:
    """The app's orders table (docs/decisions/0436-app-tables.md): a page sorted by one of
    repository.TABLE_SORTS and the count of everything the filters hold, one statement each; without customer
    data, whatever the filters."""
    rows = await repository.table_page(
        reader, account_id, filters, sort=sort, descending=descending, limit=limit, offset=offset,
        version=schemas.DOCUMENT_VERSION,
    )  # fmt: skip
    total = await repository.table_count(reader, account_id, filters, at_most=TABLE_COUNT_MAX)
    return OrderTable(await _documents(rt, rows, include_customer=False), total)


async def _documents(rt: Runtime, rows: Sequence[repository.DocumentRow], *, include_customer: bool) -> list[bytes]:
    """The wire JSON of each document row; a row without a current document is rendered from its tables."""
    stale = [row[0] for row in rows if not row[2]]
    rendered: dict[str, tuple[bytes, bytes]] = {}
    if stale:  # rare: after an upgrade, or a change made by a process running older code
        async with rt.db.read() as session:
            rendered = await render_documents(session, stale)
    documents = []
    for order_id, _updated_at, current, stored, stored_customer in rows:
        document, customer = (stored, stored_customer) if current else rendered[order_id]
        assert document is not None  # a current row always has its document
        if include_customer:
            assert customer is not None  # selected (and stored with every document) when customer data is asked
            document = schemas.with_customer(document, customer)
        documents.append(document)
    return documents


async def render_documents(session: AsyncSession, order_ids: Sequence[str]) -> dict[str, tuple[bytes, bytes]]:
    """(document, customer_document) of each order, from its rows."""
    return {
        order.id: schemas.order_document(schemas.order_json(order, items, shipments, refund_lines))
        for order, items, shipments, refund_lines in await repository.orders_for_documents(session, order_ids)
    }


RENDER_BATCH = 500


async def store_documents(session: AsyncSession, order_ids: Collection[str]) -> None:
    """Store the current document of each order; every change calls this in its own transaction, after flushing."""
    ordered = sorted(order_ids)
    for start in range(0, len(ordered), RENDER_BATCH):
        rendered = await render_documents(session, ordered[start : start + RENDER_BATCH])
        documents = [(order_id, document, customer) for order_id, (document, customer) in rendered.items()]
        await repository.store_documents(session, documents, schemas.DOCUMENT_VERSION)


async def refresh_stale_documents(session: AsyncSession, limit: int = RENDER_BATCH) -> int:
    """Store documents for up to `limit` orders that have none or an older version; return how many."""
    stale = await repository.lock_stale_documents(session, schemas.DOCUMENT_VERSION, limit)
    await store_documents(session, stale)
    return len(stale)


# ---------------------------------------------------------------- writes


@dataclass
class _Batch:
    """The orders and items one write request touches, loaded and locked."""

    orders: dict[str, Order]
    items: dict[str, OrderItem]
    items_by_order: dict[str, list[OrderItem]]
    # Per batch position, the item whose state is checked: None when the id is malformed (its shape error
    # names it), unknown, or repeated (the first occurrence is checked).
    resolved: list[OrderItem | None]


Problems = dict[str, list[str]]
_ITEM_KEY = re.compile(r"^OrderItems\[(\d+)\]")


def _add(problems: Problems, key: str, message: str) -> None:
    messages = problems.setdefault(key, [])
    if message not in messages:
        messages.append(message)


def _refuse_if_any(shape_errors: Mapping[str, Sequence[str]], problems: Problems) -> None:
    """One 400 with every shape error and every refusal: top-level fields first, then item by item."""
    if not shape_errors and not problems:
        return
    merged: Problems = {}
    for errors in (shape_errors, problems):
        for key, messages in errors.items():
            for message in messages:
                _add(merged, key, message)

    def position(key: str) -> tuple[int, int, str]:
        match = _ITEM_KEY.match(key)
        return (1, int(match[1]), key) if match else (0, 0, "")

    raise ValidationFailed(errors=dict(sorted(merged.items(), key=lambda entry: position(entry[0]))))


async def _load_batch(
    session: AsyncSession, account_id: str, lines: Sequence[Mapping[str, Any]]
) -> tuple[_Batch, Problems]:
    """Resolve every well-formed OrderItemId (unknown or repeated ones are named), lock their orders,
    then read the items fresh under that lock."""
    problems: Problems = {}
    item_ids: list[str | None] = [line.get("OrderItemId") for line in lines]
    order_of = await repository.order_ids_of_items(session, account_id, {i for i in item_ids if i is not None})
    seen: set[str] = set()
    checked: list[str | None] = []
    for index, item_id in enumerate(item_ids):
        if item_id is None:
            checked.append(None)
            continue
        if item_id not in order_of:
            _add(problems, f"OrderItems[{index}].OrderItemId", "No order item with this id.")
            checked.append(None)
        elif item_id in seen:
            _add(problems, f"OrderItems[{index}].OrderItemId", "This item appears more than once in the batch.")
            checked.append(None)
        else:
            checked.append(item_id)
        seen.add(item_id)
    orders = await repository.lock_orders(session, account_id, set(order_of.values()))
    items_by_order = await repository.items_of_orders(session, list(orders))
    items = {item.id: item for group in items_by_order.values() for item in group}
    resolved = [items.get(item_id) if item_id is not None else None for item_id in checked]
    return _Batch(orders, items, items_by_order, resolved), problems


async def _plan_write_back(
    session: AsyncSession, account_id: str, orders: Sequence[Order], action: str
) -> tuple[dict[str, MarketplaceConnection], list[str]]:
    """Connections that will receive the change, and a warning for every platform that will not."""
    connections = await repository.connections_by_id(session, account_id, {o.marketplace_id for o in orders})
    sending: dict[str, MarketplaceConnection] = {}
    warnings: list[str] = []
    for marketplace_id in sorted({o.marketplace_id for o in orders}):
        order = next(o for o in orders if o.marketplace_id == marketplace_id)
        name = marketplace_name(order.platform, order.country)
        connection = connections.get(marketplace_id)
        if not kind_of(order.platform).order_write_back:
            warnings.append(
                f"{order.platform}: order changes are not sent to {name}; the {action} is stored in this service "
                f"only. Apply it in {order.platform}'s own tools."
            )
        elif connection is None:
            warnings.append(
                f"{order.platform}: {name} is no longer connected; the {action} is stored in this service only. "
                f"Apply it in {order.platform}'s own tools."
            )
        elif connection.state != ConnectionState.ACTIVE:
            warnings.append(
                f"{order.platform}: {name} is paused; the {action} is stored in this service only and is not sent. "
                f"Apply it in {order.platform}'s own tools."
            )
        elif connection.requires_reauthorization:
            # Queued all the same: the OrderWriteBack job waits for the reconnection instead of failing.
            warnings.append(
                f"{order.platform}: {name} must be reconnected in the app; the {action} is saved and will be sent "
                "once it is reauthorised."
            )
            sending[marketplace_id] = connection
        else:
            sending[marketplace_id] = connection
    return sending, warnings


def _enqueue_write_backs(
    rt: Runtime,
    session: AsyncSession,
    account_id: str,
    action: str,
    sending: dict[str, MarketplaceConnection],
    lines_by_marketplace: dict[str, list[dict[str, Any]]],
) -> list[str]:
    job_ids = []
    now = rt.clock.now()
    for marketplace_id, lines in sorted(lines_by_marketplace.items()):
        if marketplace_id not in sending or not lines:
            continue
        payload = OrderWriteBackPayload.model_validate(
            {"MarketplaceId": marketplace_id, "Action": action, "Lines": lines}
        )
        job = enqueue(session, now, account_id, payload)
        job_ids.append(job.id)
    return job_ids


def _line(order: Order, item: OrderItem, action: str, details: dict[str, Any]) -> dict[str, Any]:
    return {
        "Reference": item.id,
        "MarketplaceOrderId": order.marketplace_order_id,
        "MarketplaceItemId": item.marketplace_item_id,
        "Action": action,
        "Details": details,
    }


def _preview(warnings: list[str]) -> dict[str, Any]:
    """What a write would answer, before anything is applied: its Warnings (the platforms that will not receive it)."""
    return {"RequestId": current_request_id(), "Warnings": warnings, "JobIds": [], "Items": []}


def _item_results(batch: _Batch, item_ids: Sequence[str]) -> list[dict[str, Any]]:
    return [
        {"OrderItemId": item_id, "ServiceOrderID": batch.items[item_id].order_id, "Status": batch.items[item_id].status}
        for item_id in item_ids
    ]


def _finish(rt: Runtime, batch: _Batch, touched_orders: set[str]) -> None:
    now = rt.clock.now()
    for order_id in touched_orders:
        order = batch.orders[order_id]
        _recompute(order, batch.items_by_order[order_id])
        _touch(order, now)


async def _complete_write(
    rt: Runtime,
    session: AsyncSession,
    account_id: str,
    batch: _Batch,
    item_ids: Sequence[str],
    touched_orders: set[str],
    action: str,
    sending: dict[str, MarketplaceConnection],
    lines_by_marketplace: dict[str, list[dict[str, Any]]],
    warnings: list[str],
) -> dict[str, Any]:
    """The common end of Confirm, Cancel and Refund: orders recomputed and touched, write-backs enqueued in the
    same transaction, and the response every order write carries."""
    _finish(rt, batch, touched_orders)
    job_ids = _enqueue_write_backs(rt, session, account_id, action, sending, lines_by_marketplace)
    await session.flush()
    await store_documents(session, touched_orders)
    return {
        "RequestId": current_request_id(),
        "Warnings": warnings,
        "JobIds": job_ids,
        "Items": _item_results(batch, item_ids),
    }


async def confirm(
    rt: Runtime,
    session: AsyncSession,
    account_id: str,
    body: schemas.WriteBody[schemas.ConfirmRequest],
    *,
    apply: bool = True,
) -> dict[str, Any]:
    """`apply=False`: every check and the Warnings, nothing applied (the app's question before the change)."""
    batch, problems = await _load_batch(session, account_id, body.items)
    now = rt.clock.now()
    for index, (entry, checked) in enumerate(zip(body.items, batch.resolved, strict=True)):
        if checked is None:
            continue
        order = batch.orders[checked.order_id]
        if refusal := rules.refuse_confirm(_figures(checked), order_pending=_pending(order)):
            _add(problems, f"OrderItems[{index}].{refusal.field}", refusal.message)
        if entry.get("ShipDate") is not None:
            refusal = rules.refuse_ship_date(entry["ShipDate"], purchase_date=order.purchase_date, now=now)
            if refusal:
                _add(problems, f"OrderItems[{index}].{refusal.field}", refusal.message)
        if "CarrierCode" in entry and "TrackingNumber" in entry:  # both well-formed (a bad one is named already)
            refusal = rules.refuse_shipment_details(
                write_back=kind_of(order.platform).order_write_back,
                marketplace=marketplace_name(order.platform, order.country),
                carrier_code=entry["CarrierCode"],
                tracking_number=entry["TrackingNumber"],
            )
            if refusal:
                _add(problems, f"OrderItems[{index}].{refusal.field}", refusal.message)
    _refuse_if_any(body.errors, problems)
    request = body.valid()
    item_ids = [line.OrderItemId for line in request.OrderItems]

    sending, warnings = await _plan_write_back(
        session, account_id, [batch.orders[batch.items[i].order_id] for i in item_ids], "confirmation"
    )
    if not apply:
        return _preview(warnings)
    lines: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in request.OrderItems:
        item = batch.items[line.OrderItemId]
        order = batch.orders[item.order_id]
        quantity = _figures(item).unshipped
        ship_date = line.ShipDate or now
        session.add(
            OrderShipment(
                id=new_id(),
                order_id=order.id,
                order_item_id=item.id,
                quantity=quantity,
                ship_date=ship_date,
                carrier_code=line.CarrierCode,
                carrier_name=line.CarrierName,
                service_level=line.ServiceLevel,
                tracking_number=line.TrackingNumber,
                created_at=now,
            )
        )
        item.shipped_quantity += quantity
        lines[order.marketplace_id].append(
            _line(
                order,
                item,
                "Confirm",
                {
                    "Quantity": quantity,
                    "ShipDate": iso(ship_date),
                    "CarrierCode": line.CarrierCode,
                    "CarrierName": line.CarrierName,
                    "ServiceLevel": line.ServiceLevel,
                    "TrackingNumber": line.TrackingNumber,
                },
            )
        )
    touched = {batch.items[i].order_id for i in item_ids}
    result = await _complete_write(
        rt, session, account_id, batch, item_ids, touched, "Confirm", sending, lines, warnings
    )
    log.info("orders_confirmed", items=len(item_ids), jobs=len(result["JobIds"]))
    return result


async def cancel(
    rt: Runtime,
    session: AsyncSession,
    account_id: str,
    body: schemas.WriteBody[schemas.CancelRequest],
    *,
    apply: bool = True,
) -> dict[str, Any]:
    batch, problems = await _load_batch(session, account_id, body.items)
    for index, (entry, checked) in enumerate(zip(body.items, batch.resolved, strict=True)):
        if checked is None:
            continue
        # None: omitted (every unshipped unit), or malformed and named already: the item's state is checked.
        quantity = entry.get("Quantity")
        refusal = rules.refuse_cancel(
            _figures(checked), quantity, order_pending=_pending(batch.orders[checked.order_id])
        )
        if refusal:
            _add(problems, f"OrderItems[{index}].{refusal.field}", refusal.message)
    _refuse_if_any(body.errors, problems)
    request = body.valid()
    item_ids = [line.OrderItemId for line in request.OrderItems]

    sending, warnings = await _plan_write_back(
        session, account_id, [batch.orders[batch.items[i].order_id] for i in item_ids], "cancellation"
    )
    if not apply:
        return _preview(warnings)
    lines: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in request.OrderItems:
        item = batch.items[line.OrderItemId]
        order = batch.orders[item.order_id]
        quantity = line.Quantity if line.Quantity is not None else _figures(item).unshipped
        item.cancelled_quantity += quantity
        item.cancel_reason = request.CancelReason
        lines[order.marketplace_id].append(
            _line(order, item, "Cancel", {"Quantity": quantity, "CancelReason": request.CancelReason})
        )
    touched = {batch.items[i].order_id for i in item_ids}
    result = await _complete_write(
        rt, session, account_id, batch, item_ids, touched, "Cancel", sending, lines, warnings
    )
    log.info("orders_cancelled", items=len(item_ids), jobs=len(result["JobIds"]))
    return result


async def refund(
    rt: Runtime,
    session: AsyncSession,
    account_id: str,
    body: schemas.WriteBody[schemas.RefundRequest],
    *,
    apply: bool = True,
) -> dict[str, Any]:
    batch, problems = await _load_batch(session, account_id, body.items)
    currency = body.fields.get("Currency")  # None when malformed: named already
    for index, (entry, checked) in enumerate(zip(body.items, batch.resolved, strict=True)):
        if checked is None:
            continue
        order = batch.orders[checked.order_id]
        if currency is not None and order.currency != currency:
            # Named under Currency; the item's own amount and quantity are still checked (one 400 names all).
            _add(
                problems,
                "Currency",
                f"OrderItems[{index}] belongs to an order in {order.currency}; "
                "a refund is made in the order's currency.",
            )
        amount, quantity = entry.get("Amount"), entry.get("Quantity")
        if amount is None or quantity is None:  # malformed and named already: only the order's state is checked
            if _pending(order):
                _add(problems, f"OrderItems[{index}].Amount", rules.REFUND_OF_PENDING)
            continue
        for refusal in rules.refund_refusals(_figures(checked), quantity, amount, order_pending=_pending(order)):
            _add(problems, f"OrderItems[{index}].{refusal.field}", refusal.message)
    _refuse_if_any(body.errors, problems)
    request = body.valid()
    item_ids = [line.OrderItemId for line in request.OrderItems]

    now = rt.clock.now()
    sending, warnings = await _plan_write_back(
        session, account_id, [batch.orders[batch.items[i].order_id] for i in item_ids], "refund"
    )
    if not apply:
        return _preview(warnings)
    refund_ids: dict[str, str] = {}
    refund_amounts: dict[str, Decimal] = defaultdict(lambda: ZERO)
    lines: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in request.OrderItems:
        item = batch.items[line.OrderItemId]
        order = batch.orders[item.order_id]
        refund_id = refund_ids.setdefault(order.id, new_id())
        refund_amounts[order.id] += line.Amount
        session.add(
            OrderRefundLine(
                id=new_id(),
                refund_id=refund_id,
                order_id=order.id,
                order_item_id=item.id,
                quantity=line.Quantity,
                amount=line.Amount,
                reason=request.Reason,
                currency=request.Currency,
                created_at=now,
            )
        )
        item.refunded_quantity += line.Quantity
        item.refunded_amount += line.Amount
        lines[order.marketplace_id].append(
            _line(
                order,
                item,
                "Refund",
                {
                    "RefundId": refund_id,
                    "Reason": request.Reason,
                    "Currency": request.Currency,
                    "Amount": str(line.Amount),
                    "Quantity": line.Quantity,
                },
            )
        )
    result = await _complete_write(
        rt, session, account_id, batch, item_ids, set(refund_ids), "Refund", sending, lines, warnings
    )
    log.info("orders_refunded", items=len(item_ids), refunds=len(refund_ids), jobs=len(result["JobIds"]))
    return {
        **result,
        "Refunds": [
            {
                "RefundId": refund_id,
                "ServiceOrderID": order_id,
                "Amount": refund_amounts[order_id],
                "Currency": request.Currency,
            }
            for order_id, refund_id in refund_ids.items()
        ],
    }


async def update(
    rt: Runtime, session: AsyncSession, account_id: str, body: schemas.WriteBody[schemas.UpdateRequest]
) -> dict[str, Any]:
    """Attach the caller's external reference: local bookkeeping, nothing is sent to a marketplace.

    An unknown order alone is a 404; together with a shape error (or a bad Idempotency-Key) it is named in the same
    400.
    """
    if body.errors:
        problems: Problems = {}
        order_id = body.fields.get("ServiceOrderID")
        if order_id is not None and not await repository.lock_orders(session, account_id, [order_id]):
            _add(problems, "ServiceOrderID", "No order with this id.")
        _refuse_if_any(body.errors, problems)
    request = body.valid()
    order = (await repository.lock_orders(session, account_id, [request.ServiceOrderID])).get(request.ServiceOrderID)
    if order is None:
        raise NotFound("No order with this id.")
    if order.external_reference != request.ExternalReference:
        order.external_reference = request.ExternalReference
        _touch(order, rt.clock.now())
        await session.flush()
        await store_documents(session, [order.id])
    return {
        "RequestId": current_request_id(),
        "Warnings": [],
        "ServiceOrderID": order.id,
        "ExternalReference": order.external_reference,
    }


# Bought, paid for, not (wholly) shipped yet.
AWAITING_SHIPMENT = (rules.UNSHIPPED, rules.PARTIALLY_SHIPPED)


async def unshipped_before(session: AsyncSession, account_id: str, cutoff: datetime, at_most: int) -> int:
    """How many of the account's orders bought before `cutoff` still await shipment, counted up to `at_most + 1`."""
    return await repository.unshipped_before(session, account_id, AWAITING_SHIPMENT, cutoff, at_most)
