"""Order pulls: P1 and P2 only, never paused ones, one OrdersDownloaded per pull that found new orders."""

from __future__ import annotations

import httpx
from sqlalchemy import select

from marketsync.jobs.worker import Worker
from marketsync.marketplaces import service
from marketsync.marketplaces.sandbox import state as sandbox_state
from marketsync.models import Job, MarketplaceConnection
from marketsync.orders import tasks
from marketsync.runtime import Runtime
from tests.marketplaces import support
from tests.support.factories import make_tenant


async def _orders_arrive(rt: Runtime, connection: MarketplaceConnection, count: int) -> list[str]:
    async with rt.db.transaction() as session:
        seller = await sandbox_state.ensure_seller(
            session, connection.id, connection.platform, connection.country, rt.clock.now()
        )
        return [o.order_id for o in await sandbox_state.orders_arrive(session, seller, rt.clock.now(), count)]


async def _pull_jobs(rt: Runtime, account_id: str) -> list[Job]:
    async with rt.db.read() as session:
        rows = await session.execute(select(Job).where(Job.account_id == account_id, Job.type == "OrderPull"))
        return list(rows.scalars())


async def test_schedule_enqueues_only_active_p1_p2_once(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P2", "DE"), ("P3", "US"), ("P4", "FR")))
    async with rt.db.transaction() as session:
        await service.pause(rt, session, tenant.account_id, tenant.marketplace("P2").id)

    await tasks.schedule_order_pulls(rt)
    await tasks.schedule_order_pulls(rt)  # one already queued: nothing more

    jobs = await _pull_jobs(rt, tenant.account_id)
    assert [job.payload for job in jobs] == [{"MarketplaceId": tenant.marketplace("P1").id}]
    assert jobs[0].status == "Published"


async def test_pull_stores_orders_and_fires_one_event_per_pull_with_new_orders(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P2", "DE")))
    p1 = tenant.marketplace("P1")
    await support.listed_product(rt, p1, "ORD-SKU", price="19.99", quantity=40)
    arrived = await _orders_arrive(rt, p1, 3)

    await tasks.schedule_order_pulls(rt)
    await Worker(rt).drain()

    fired = await support.events(rt, tenant.account_id, "OrdersDownloaded")
    assert [e["payload"] for e in fired] == [
        {"Marketplace": "P1 UK", "Platform": "P1", "Country": "UK", "NewOrderCount": 3, "UserPlatformId": p1.id}
    ]
    listed = await api.post("/api/orders/List", json={}, headers=tenant.headers)
    assert listed.status_code == 200, listed.text
    assert len(str(listed.text).split(arrived[0])) == 2  # stored once

    # A pull with nothing new is silent; the cursor means nothing is fetched again.
    await tasks.schedule_order_pulls(rt)
    await Worker(rt).drain()
    assert len(await support.events(rt, tenant.account_id, "OrdersDownloaded")) == 1
    assert {job.status for job in await _pull_jobs(rt, tenant.account_id)} == {"Completed"}

    await _orders_arrive(rt, p1, 2)
    await tasks.schedule_order_pulls(rt)
    await Worker(rt).drain()
    fired = await support.events(rt, tenant.account_id, "OrdersDownloaded")
    assert [e["payload"]["NewOrderCount"] for e in fired] == [3, 2]
    async with rt.db.read() as session:
        stored = await session.get(MarketplaceConnection, p1.id)
        assert stored is not None and stored.order_cursor == "5"


async def test_changed_orders_are_pulled_again_without_an_event(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    p1 = tenant.marketplace("P1")
    [order_id] = await _orders_arrive(rt, p1, 1)
    await tasks.schedule_order_pulls(rt)
    await Worker(rt).drain()
    # The buyer's item is shipped at the marketplace (an order update applied there).
    async with rt.db.transaction() as session:
        seller = await sandbox_state.ensure_seller(session, p1.id, "P1", "UK", rt.clock.now())
        feed = await sandbox_state.submit_feed(
            session,
            seller,
            rt.clock.now(),
            "ship-1",
            "OrderUpdates",
            [
                {
                    "Reference": "r1",
                    "MarketplaceOrderId": order_id,
                    "MarketplaceItemId": f"{1:07d}-1",
                    "Action": "Confirm",
                    "Details": {"TrackingNumber": "TRK1"},
                }
            ],
        )
        feed.polls_remaining = 0
        processed = await sandbox_state.poll_feed(session, seller, rt.clock.now(), feed.feed_id)
        assert processed.status == "Done" and processed.errors == []

    await tasks.schedule_order_pulls(rt)
    await Worker(rt).drain()

    assert [e["payload"]["NewOrderCount"] for e in await support.events(rt, tenant.account_id, "OrdersDownloaded")] == [
        1
    ]
    async with rt.db.read() as session:
        stored = await session.get(MarketplaceConnection, p1.id)
        assert stored is not None and stored.order_cursor == "2"  # the change moved the stream


async def test_paused_and_p3_p4_connections_are_never_pulled(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P3", "US")))
    p1, p3 = tenant.marketplace("P1"), tenant.marketplace("P3")
    await _orders_arrive(rt, p1, 2)
    await _orders_arrive(rt, p3, 2)
    async with rt.db.transaction() as session:
        await service.pause(rt, session, tenant.account_id, p1.id)
    queued_before_pause = await support.enqueue(rt, tenant.account_id, "OrderPull", {"MarketplaceId": p1.id})
    p3_job = await support.enqueue(rt, tenant.account_id, "OrderPull", {"MarketplaceId": p3.id})

    await tasks.schedule_order_pulls(rt)
    await Worker(rt).drain()

    assert (await support.job(rt, queued_before_pause)).status == "Cancelled"
    assert (await support.job(rt, p3_job)).status == "Cancelled"
    assert len(await _pull_jobs(rt, tenant.account_id)) == 2
    assert await support.events(rt, tenant.account_id) == []
