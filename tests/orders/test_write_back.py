"""Write-back to P1 end to end, against the sandbox marketplace: orders arrive there, are pulled in,
confirmed here, and the OrderWriteBack job carries the change back; per-item errors and rejected feeds
raise FeedOutcome with FeedKind "Order updates"."""

from __future__ import annotations

import httpx

from marketsync.runtime import Runtime
from tests.orders.support import (
    confirm,
    feed_outcomes,
    listed,
    pull_everything,
    run_job,
    sandbox_orders_arrive,
    set_feed_fault,
)
from tests.support.factories import make_tenant


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
