"""Order test factories: MarketplaceOrder values built with keyword defaults, and ingestion helpers."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, get_args

import httpx
import orjson
import sqlalchemy as sa
from pydantic import BaseModel
from sqlalchemy import select

from marketsync.jobs.worker import Worker
from marketsync.marketplaces.connector import MarketplaceOrder, MarketplaceOrderItem, PostalAddress, connector_for
from marketsync.marketplaces.sandbox import state as sandbox
from marketsync.models import Event, Job, MarketplaceConnection
from marketsync.orders import schemas, service
from marketsync.runtime import Runtime
from tests.support.factories import Tenant, make_tenant

_sequence = itertools.count(1)
BUYER_NAME = "Ada Lovelace-Byron"
BUYER_EMAIL = "ada.buyer@example.test"
BUYER_PHONE = "+44 20 7946 0001"
STREET = "12 Analytical Engine Row"


def pulled_item(
    *,
    item_id: str | None = None,
    sku: str = "SKU-1",
    quantity: int = 2,
    unit_price: str = "10.00",
    status: str = "Unshipped",
    title: str = "Widget",
) -> MarketplaceOrderItem:
    return MarketplaceOrderItem(
        marketplace_item_id=item_id or f"MI-{next(_sequence)}",
        sku=sku,
        title=title,
        quantity=quantity,
        unit_price=Decimal(unit_price),
        status=status,
    )


def pulled_order(
    *,
    order_id: str | None = None,
    status: str = "Unshipped",
    items: list[MarketplaceOrderItem] | None = None,
    currency: str = "GBP",
    changed_at: datetime | None = None,
    buyer_name: str = BUYER_NAME,
    shipping_total: str = "3.50",
    tax_total: str = "0",
    purchase_date: datetime | None = None,
) -> MarketplaceOrder:
    stamp = changed_at or datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    return MarketplaceOrder(
        marketplace_order_id=order_id or f"MO-{next(_sequence)}",
        status=status,
        purchase_date=purchase_date or datetime(2026, 1, 1, 11, 0, tzinfo=UTC),
        changed_at=stamp,
        currency=currency,
        items=items if items is not None else [pulled_item(status=status)],
        buyer_name=buyer_name,
        buyer_email=BUYER_EMAIL,
        buyer_phone=BUYER_PHONE,
        shipping_address=PostalAddress(
            name=buyer_name,
            line1=STREET,
            line2=None,
            city="London",
            region="Greater London",
            postal_code="N1 9GU",
            country_code="GB",
            phone=BUYER_PHONE,
        ),
        shipping_total=Decimal(shipping_total),
        tax_total=Decimal(tax_total),
    )


async def ingest(rt: Runtime, connection: MarketplaceConnection, *orders: MarketplaceOrder) -> int:
    async with rt.db.transaction() as session:
        return await service.ingest_pulled_orders(rt, session, connection, list(orders))


async def order_by_marketplace_id(
    api: httpx.AsyncClient, headers: dict[str, str], marketplace_order_id: str, *, customer: bool = False
) -> dict[str, Any]:
    response = await api.post("/api/orders/List", json={"Limit": 200, "IncludeCustomerData": customer}, headers=headers)
    assert response.status_code == 200, response.text
    found = [o for o in response.json()["Orders"] if o["MarketplaceOrderId"] == marketplace_order_id]
    assert len(found) == 1, response.json()
    return found[0]


async def ingest_one(
    rt: Runtime, api: httpx.AsyncClient, headers: dict[str, str], connection: MarketplaceConnection, **kw: Any
) -> dict[str, Any]:
    """Ingest one pulled order and return it as the API shows it."""
    pulled = pulled_order(**kw)
    await ingest(rt, connection, pulled)
    return await order_by_marketplace_id(api, headers, pulled.marketplace_order_id)


async def stored_documents(rt: Runtime) -> dict[str, tuple[bytes | None, bytes | None, int, bool]]:
    """Every order's stored (document, customer_document, document_version, stamped at its updated_at), by id."""
    async with rt.db.read() as session:
        result = await session.execute(
            sa.text(
                "SELECT id, document, customer_document, document_version,"
                " (document_updated_at IS NOT NULL AND document_updated_at = updated_at) FROM orders ORDER BY id"
            )
        )
        return {
            order_id: (bytes(d) if d else None, bytes(c) if c else None, v, bool(stamped))
            for order_id, d, c, v, stamped in result
        }


async def rendered_documents(rt: Runtime, order_ids: list[str]) -> dict[str, tuple[bytes, bytes]]:
    """What the renderer makes of the orders' rows now."""
    if not order_ids:
        return {}
    async with rt.db.read() as session:
        return await service.render_documents(session, order_ids)


async def assert_documents_current(rt: Runtime) -> None:
    """Every order's stored document is current, byte-identical to a fresh render of its rows, and exactly what
    the OpenAPI document's Order model says (every field it names, no other, each of its type)."""
    stored = await stored_documents(rt)
    rendered = await rendered_documents(rt, list(stored))
    for order_id, (document, customer, version, stamped) in stored.items():
        assert version == schemas.DOCUMENT_VERSION and stamped, order_id
        assert (document, customer) == rendered[order_id], order_id
        assert document is not None and customer is not None
        whole = orjson.loads(schemas.with_customer(document, customer))
        schemas.OrderOut.model_validate(whole)
        assert_fields_match(schemas.OrderOut, whole, order_id)


def assert_fields_match(model: type[BaseModel], value: dict[str, Any], where: str) -> None:
    """The JSON object has exactly the model's fields, recursively through nested models and lists of them."""
    assert set(value) == set(model.model_fields), f"{where}: {sorted(set(value) ^ set(model.model_fields))}"
    for name, info in model.model_fields.items():
        nested = [t for t in (info.annotation, *get_args(info.annotation)) if isinstance(t, type)]
        nested += [a for t in get_args(info.annotation) for a in get_args(t) if isinstance(a, type)]
        for candidate in nested:
            if issubclass(candidate, BaseModel) and value[name] is not None:
                children = value[name] if isinstance(value[name], list) else [value[name]]
                for child in children:
                    assert_fields_match(candidate, child, f"{where}.{name}")


COUNTRY = {"P1": "UK", "P2": "DE", "P3": "US", "P4": "FR"}


async def tenant_with(rt: Runtime, api: httpx.AsyncClient, *platforms: str) -> Tenant:
    return await make_tenant(rt, api, marketplaces=tuple((p, COUNTRY[p]) for p in platforms))


async def jobs_of(rt: Runtime, account_id: str) -> list[Job]:
    async with rt.db.read() as session:
        return list((await session.execute(select(Job).where(Job.account_id == account_id))).scalars())


async def post(
    api: httpx.AsyncClient, tenant: Tenant, path: str, body: dict[str, Any], **headers: str
) -> httpx.Response:
    return await api.post(f"/api/orders/{path}", json=body, headers={**tenant.headers, **headers})


def item_ids(order: dict[str, Any]) -> list[str]:
    return [item["OrderItemId"] for item in order["Items"]]


async def sandbox_orders_arrive(rt: Runtime, connection: MarketplaceConnection, count: int) -> None:
    async with rt.db.transaction() as session:
        seller = await sandbox.ensure_seller(
            session, connection.id, connection.platform, connection.country, rt.clock.now()
        )
        await sandbox.orders_arrive(session, seller, rt.clock.now(), count)


async def set_feed_fault(rt: Runtime, connection: MarketplaceConnection, mode: str) -> None:
    async with rt.db.transaction() as session:
        seller = await sandbox.ensure_seller(
            session, connection.id, connection.platform, connection.country, rt.clock.now()
        )
        sandbox.set_feed_fault(seller, mode)


async def pull_everything(rt: Runtime, connection: MarketplaceConnection) -> int:
    """What the OrderPull job does, done inline: page through the sandbox and ingest."""
    connector = connector_for(rt, connection)
    cursor, new = None, 0
    while True:
        page = await connector.pull_orders(cursor)
        async with rt.db.transaction() as session:
            new += await service.ingest_pulled_orders(rt, session, connection, page.orders)
        if page.next_cursor is None or not page.orders:
            return new
        cursor = page.next_cursor


async def run_job(rt: Runtime, job_id: str) -> Job:
    for _ in range(60):
        await Worker(rt).drain()
        async with rt.db.read() as session:
            job = await session.get(Job, job_id)
        assert job is not None
        if job.status in ("Completed", "Failed", "Cancelled"):
            return job
        await asyncio.sleep(0.25)  # requeued with RetryLater: wait for its run_after
    raise AssertionError("the write-back job did not finish")


async def feed_outcomes(rt: Runtime, account_id: str) -> list[dict[str, Any]]:
    async with rt.db.read() as session:
        rows = await session.execute(
            select(Event).where(Event.account_id == account_id, Event.type == "FeedOutcome").order_by(Event.id)
        )
        return [orjson.loads(event.body) for event in rows.scalars()]


async def listed(api: httpx.AsyncClient, tenant: Tenant) -> list[dict[str, Any]]:
    response = await api.post("/api/orders/List", json={"Limit": 200}, headers=tenant.headers)
    assert response.status_code == 200, response.text
    orders: list[dict[str, Any]] = response.json()["Orders"]
    return orders


async def confirm(api: httpx.AsyncClient, tenant: Tenant, item_id: str) -> str:
    response = await api.post(
        "/api/orders/Confirm",
        json={"OrderItems": [{"OrderItemId": item_id, "CarrierCode": "RM", "TrackingNumber": f"T-{item_id[-6:]}"}]},
        headers=tenant.headers,
    )
    assert response.status_code == 200, response.text
    [job_id] = response.json()["JobIds"]
    return str(job_id)
