"""Write-back to P1 end to end, against the sandbox marketplace: orders arrive there, are pulled in,
confirmed here, and the OrderWriteBack job carries the change back; per-item errors and rejected feeds
raise FeedOutcome with FeedKind "Order updates"."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import orjson
from sqlalchemy import select

from marketsync.marketplaces.connector import connector_for
from marketsync.marketplaces.sandbox import state as sandbox
from marketsync.models import Event, Job, MarketplaceConnection
from marketsync.orders import service
from marketsync.runtime import Runtime
from marketsync.worker import Worker
from tests.support.factories import Tenant, make_tenant


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


async def test_confirm_reaches_the_p1_sandbox(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    connection = tenant.marketplace("P1")
    await sandbox_orders_arrive(rt, connection, 3)
    assert await pull_everything(rt, connection) == 3
    orders = await listed(api, tenant)
    assert len(orders) == 3
    target = orders[0]
    for item in target["Items"]:
        job = await run_job(rt, await confirm(api, tenant, item["OrderItemId"]))
        assert job.status == "Completed", job.failure_reason

    # The marketplace now reports the items shipped; pulling again agrees with what we hold.
    await pull_everything(rt, connection)
    after = next(o for o in await listed(api, tenant) if o["ServiceOrderID"] == target["ServiceOrderID"])
    assert after["Status"] == "Shipped"
    assert after["MarketplaceStatus"] == "Shipped"
    assert await feed_outcomes(rt, tenant.account_id) == []  # a clean feed is silent


async def test_item_errors_and_rejections_raise_feed_outcome(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    connection = tenant.marketplace("P1")
    await sandbox_orders_arrive(rt, connection, 2)
    await pull_everything(rt, connection)
    first, second = await listed(api, tenant)

    await set_feed_fault(rt, connection, "item-errors")
    job = await run_job(rt, await confirm(api, tenant, first["Items"][0]["OrderItemId"]))
    assert job.status == "Completed"
    await set_feed_fault(rt, connection, "reject")
    job = await run_job(rt, await confirm(api, tenant, second["Items"][0]["OrderItemId"]))
    assert job.status == "Completed"

    outcomes = await feed_outcomes(rt, tenant.account_id)
    assert [(o["FeedKind"], o["Outcome"], o["FailedCount"]) for o in outcomes] == [
        ("Order updates", "ProcessedWithErrors", 1),
        ("Order updates", "Rejected", 1),
    ]
    assert all(o["UserPlatformId"] == connection.id and o["Marketplace"] == "P1 UK" for o in outcomes)
    # Running the finished job again (an operator's "run now") does nothing: it is no longer queued.
    from marketsync.jobs import service as jobs_service

    status, _ = await jobs_service.run_now(rt, job.id)
    assert status == "Completed"
    assert len(await feed_outcomes(rt, tenant.account_id)) == 2
