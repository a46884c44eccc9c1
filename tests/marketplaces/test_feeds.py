"""Outbound price & stock feeds: clean feeds are silent, rejected and per-item-error feeds raise FeedOutcome,
throttling is honoured, a worker killed mid-feed is recovered without a row applied twice."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from decimal import Decimal

import httpx
import pytest
from sqlalchemy import update

from marketsync.jobs import repository as jobs_repository
from marketsync.jobs.run import JobRun, LeaseLost
from marketsync.jobs.worker import Worker
from marketsync.kit.clock import Clock, FrozenClock
from marketsync.marketplaces import feeds, service, tasks
from marketsync.models import Job, MarketplaceConnection
from marketsync.runtime import Runtime
from tests.marketplaces import support
from tests.marketplaces.sides import Side
from tests.support.factories import Tenant, make_tenant


@pytest.fixture
def clock() -> Clock:
    return FrozenClock()


async def _three_listed(rt: Runtime, connection: MarketplaceConnection) -> list[str]:
    """Three listed products whose catalogue values moved since the marketplace last heard of them."""
    ids = []
    for index, sku in enumerate(("FEED-A", "FEED-B", "FEED-C")):
        product = await support.listed_product(rt, connection, sku, price="10.00", quantity=5)
        await support.set_product_values(rt, product.id, Decimal("12.50") + index, 7 + index)
        ids.append(product.id)
    return ids


async def _push(rt: Runtime, tenant: Tenant, connection: MarketplaceConnection, ids: list[str]) -> str:
    return await support.enqueue(
        rt, tenant.account_id, "PriceStockPush", {"MarketplaceId": connection.id, "ProductIds": ids}
    )


async def _claimed_run(rt: Runtime, tenant: Tenant, job_id: str, worker_id: str) -> JobRun:
    """The queued push claimed by `worker_id`, as the worker would run it."""
    async with rt.db.transaction() as session:
        claimed = await jobs_repository.claim_next(
            session, worker_id, rt.clock.now(), rt.settings.job_lease_s, ["PriceStockPush"]
        )
    assert claimed is not None and claimed[0].id == job_id
    return JobRun(
        rt=rt,
        job_id=job_id,
        account_id=tenant.account_id,
        type="PriceStockPush",
        payload=dict(claimed[0].payload),
        worker_id=worker_id,
    )


async def _job_json(api: httpx.AsyncClient, tenant: Tenant, job_id: str) -> dict[str, object]:
    response = await api.get(f"/api/jobs/{job_id}", headers=tenant.headers)
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


async def _three_listed_at(side: Side, connection: MarketplaceConnection) -> list[str]:
    """Three products listed at the side's marketplace whose catalogue values moved since it last heard of them."""
    ids = []
    for index, sku in enumerate(("FEED-A", "FEED-B", "FEED-C")):
        product = await side.listed_product(connection, sku, price="10.00", quantity=5)
        await support.set_product_values(side.rt, product.id, Decimal("12.50") + index, 7 + index)
        ids.append(product.id)
    return ids


@pytest.mark.parametrize("side", ["P1", "Amazon"], indirect=True)
async def test_clean_feed_is_silent_and_reaches_the_marketplace(
    rt: Runtime, api: httpx.AsyncClient, side: Side
) -> None:
    tenant = await make_tenant(rt, api)
    p1 = await side.connect(tenant.account_id)
    ids = await _three_listed_at(side, p1)
    job_id = await _push(rt, tenant, p1, ids)

    await Worker(rt).drain()

    job = await _job_json(api, tenant, job_id)
    assert job["Status"] == "Completed" and job["IsSuccessful"] is True and job["IsComplete"] is True
    assert (job["ProgressDone"], job["ProgressTotal"]) == (3, 3)
    assert job["RecoveryCount"] == 0
    assert [await side.held(p1, s) for s in ("FEED-A", "FEED-B", "FEED-C")] == [
        (Decimal("12.50"), 7),
        (Decimal("13.50"), 8),
        (Decimal("14.50"), 9),
    ]
    ours = await support.our_listing(rt, p1, ids[0])
    assert ours is not None and (ours.marketplace_price, ours.marketplace_quantity) == (Decimal("12.50"), 7)
    assert await support.events(rt, tenant.account_id) == []


@pytest.mark.parametrize("side", ["P2", "Amazon"], indirect=True)
async def test_rejected_feed_raises_feed_outcome_and_fails_the_job(
    rt: Runtime, api: httpx.AsyncClient, side: Side
) -> None:
    tenant = await make_tenant(rt, api)
    p2 = await side.connect(tenant.account_id)
    ids = await _three_listed_at(side, p2)
    await side.reject_feeds(p2)
    job_id = await _push(rt, tenant, p2, ids)

    await Worker(rt).drain()

    job = await _job_json(api, tenant, job_id)
    assert job["Status"] == "Failed" and job["IsComplete"] is True and job["IsSuccessful"] is False
    assert (job["ProgressDone"], job["ProgressTotal"]) == (0, 3)
    assert "failure" not in str(job).lower()
    fired = await support.events(rt, tenant.account_id)
    assert fired == [
        {
            "type": "FeedOutcome",
            "payload": {
                "Marketplace": side.name,
                "UserPlatformId": p2.id,
                "FeedKind": "Price & stock",
                "Outcome": "Rejected",
                "Status": "Rejected",
                "FailedCount": 3,
            },
        }
    ]
    assert [await side.held(p2, s) for s in ("FEED-A", "FEED-B", "FEED-C")] == [(Decimal("10.00"), 5)] * 3


@pytest.mark.parametrize("side", ["P2", "Amazon"], indirect=True)
async def test_item_errors_raise_feed_outcome_and_complete_the_job(
    rt: Runtime, api: httpx.AsyncClient, side: Side
) -> None:
    tenant = await make_tenant(rt, api)
    p2 = await side.connect(tenant.account_id)
    ids = await _three_listed_at(side, p2)
    await side.refuse_lines(p2, ["FEED-A", "FEED-C"])  # lines 1 and 3
    job_id = await _push(rt, tenant, p2, ids)

    await Worker(rt).drain()

    job = await _job_json(api, tenant, job_id)
    assert job["Status"] == "Completed"
    assert (job["ProgressDone"], job["ProgressTotal"]) == (1, 3)
    fired = await support.events(rt, tenant.account_id)
    assert [e["payload"] for e in fired] == [
        {
            "Marketplace": side.name,
            "UserPlatformId": p2.id,
            "FeedKind": "Price & stock",
            "Outcome": "ProcessedWithErrors",
            "Status": "Done",
            "FailedCount": 2,
        }
    ]
    assert [await side.held(p2, s) for s in ("FEED-A", "FEED-B", "FEED-C")] == [
        (Decimal("10.00"), 5),
        (Decimal("13.50"), 8),
        (Decimal("10.00"), 5),
    ]
    # Our record of what the marketplace holds follows only the applied line.
    assert (await support.our_listing(rt, p2, ids[0])).marketplace_price == Decimal("10.00")  # type: ignore[union-attr]
    assert (await support.our_listing(rt, p2, ids[1])).marketplace_price == Decimal("13.50")  # type: ignore[union-attr]


@pytest.mark.parametrize("side", ["P2", "Amazon"], indirect=True)
async def test_a_feed_whose_every_line_is_refused_fails_the_job(
    rt: Runtime, api: httpx.AsyncClient, side: Side
) -> None:
    tenant = await make_tenant(rt, api)
    p2 = await side.connect(tenant.account_id)
    product = await side.listed_product(p2, "FEED-ONE", price="10.00", quantity=5)
    await support.set_product_values(rt, product.id, Decimal("11.00"), 6)
    await side.refuse_lines(p2, ["FEED-ONE"])  # the first (only) line
    job_id = await _push(rt, tenant, p2, [product.id])

    await Worker(rt).drain()

    job = await _job_json(api, tenant, job_id)
    assert (job["Status"], job["IsComplete"], job["IsSuccessful"]) == ("Failed", True, False)
    assert (job["ProgressDone"], job["ProgressTotal"]) == (0, 1)
    fired = await support.events(rt, tenant.account_id)
    assert [(e["payload"]["Outcome"], e["payload"]["FailedCount"]) for e in fired] == [("ProcessedWithErrors", 1)]
    ours = await support.our_listing(rt, p2, product.id)
    assert ours is not None and ours.marketplace_price == Decimal("10.00")
    assert await side.held(p2, "FEED-ONE") == (Decimal("10.00"), 5)


@pytest.mark.parametrize("side", ["P2", "Amazon"], indirect=True)
async def test_a_throttled_feed_goes_back_to_the_queue_and_is_sent_once_later(
    rt: Runtime, api: httpx.AsyncClient, side: Side
) -> None:
    clock = rt.clock
    assert isinstance(clock, FrozenClock)
    tenant = await make_tenant(rt, api)
    p2 = await side.connect(tenant.account_id)
    ids = await _three_listed_at(side, p2)
    await side.throttle_next_feed(p2)
    job_id = await _push(rt, tenant, p2, ids)

    await Worker(rt).drain()

    waiting = await support.job(rt, job_id)
    assert waiting.status == "Published"  # back in the queue, not failed
    assert waiting.run_after > clock.now()
    assert waiting.failure_reason is None and waiting.recovery_count == 0
    assert await side.feeds_received(p2) == 0

    for _ in range(12):
        clock.advance(seconds=2)
        await Worker(rt).drain()
        if (await support.job(rt, job_id)).status != "Published":
            break
    assert (await support.job(rt, job_id)).status == "Completed"
    assert await side.feeds_received(p2) == 1
    assert await side.held(p2, "FEED-A") == (Decimal("12.50"), 7)
    assert await support.events(rt, tenant.account_id) == []


async def test_throttling_is_honoured_not_counted_as_failure(rt: Runtime, api: httpx.AsyncClient) -> None:
    clock = rt.clock
    assert isinstance(clock, FrozenClock)
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    p1 = tenant.marketplace("P1")
    ids = await _three_listed(rt, p1)
    # One request every two seconds, none available now.
    await support.update_seller(
        rt, p1, bucket_capacity=1.0, bucket_refill_per_s=0.5, bucket_tokens=0.0, bucket_at=clock.now()
    )
    job_id = await _push(rt, tenant, p1, ids)

    await Worker(rt).drain()

    waiting = await support.job(rt, job_id)
    assert waiting.status == "Published"  # back in the queue, not failed
    assert (waiting.run_after - clock.now()).total_seconds() == 2.0  # Retry-After honoured
    assert waiting.failure_reason is None and waiting.recovery_count == 0
    assert await support.sandbox_feeds(rt, p1) == []

    statuses = []
    for _ in range(12):
        clock.advance(seconds=2)
        await Worker(rt).drain()
        statuses.append((await support.job(rt, job_id)).status)
        if statuses[-1] != "Published":
            break
    assert statuses[-1] == "Completed"
    assert "Failed" not in statuses
    assert len(statuses) > 1  # it needed several windows of the budget
    feeds = await support.sandbox_feeds(rt, p1)
    assert len(feeds) == 1 and feeds[0].client_feed_id == job_id
    remote = await support.sandbox_listings(rt, p1)
    assert {row.feed_updates for row in remote.values()} == {1}
    assert await support.events(rt, tenant.account_id) == []


class Killed(BaseException):
    """The worker process dies (nothing in the handler may catch it)."""


@pytest.mark.parametrize("dies", ["before the marketplace processed the feed", "after the feed was applied"])
async def test_worker_killed_mid_feed_is_recovered_without_a_row_twice(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch, dies: str
) -> None:
    clock = rt.clock
    assert isinstance(clock, FrozenClock)
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    p1 = tenant.marketplace("P1")
    ids = await _three_listed(rt, p1)
    job_id = await _push(rt, tenant, p1, ids)

    real_submit_and_await = feeds.submit_and_await
    calls = 0

    async def dying_submit_and_await(
        rt_: Runtime, job: JobRun, connection: MarketplaceConnection, submit: Callable[[], Awaitable[str]]
    ) -> object:
        nonlocal calls
        calls += 1
        if calls == 1:
            if dies == "after the feed was applied":
                await real_submit_and_await(rt_, job, connection, submit)
            else:  # submitted and remembered, never polled
                await job.remember({"MarketplaceFeedId": await submit()})
            raise Killed
        return await real_submit_and_await(rt_, job, connection, submit)

    monkeypatch.setattr(feeds, "submit_and_await", dying_submit_and_await)
    run = await _claimed_run(rt, tenant, job_id, "worker-that-dies")
    with pytest.raises(Killed):
        await tasks.push_price_stock(rt, run)
    assert (await support.job(rt, job_id)).status == "InProcess"

    clock.advance(seconds=rt.settings.job_lease_s + 1)  # its lease runs out
    await Worker(rt).drain()

    job = await _job_json(api, tenant, job_id)
    assert job["Status"] == "Completed"
    assert job["RecoveryCount"] == 1
    assert (job["ProgressDone"], job["ProgressTotal"]) == (3, 3)
    sent = await support.sandbox_feeds(rt, p1)
    assert len(sent) == 1 and len(sent[0].lines) == 3
    remote = await support.sandbox_listings(rt, p1)
    assert {sku: row.feed_updates for sku, row in remote.items()} == {"FEED-A": 1, "FEED-B": 1, "FEED-C": 1}
    assert remote["FEED-C"].price == Decimal("14.50") and remote["FEED-C"].quantity == 9
    assert await support.events(rt, tenant.account_id) == []


def _recorded_chunks(monkeypatch: pytest.MonkeyPatch, size: int) -> list[int]:
    """Record a feed's values `size` at a time; the returned list gets the size of each recording."""
    monkeypatch.setattr(tasks, "RECORD_CHUNK", size)
    return support.chunk_sizes(
        monkeypatch, tasks.repository, "record_marketplace_values", lambda _session, values, _now: len(values)
    )


async def test_a_feed_larger_than_a_chunk_records_every_value_a_chunk_per_transaction(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    p1 = tenant.marketplace("P1")
    ids = await _three_listed(rt, p1)
    job_id = await _push(rt, tenant, p1, ids)
    sizes = _recorded_chunks(monkeypatch, 2)

    await Worker(rt).drain()

    assert sizes == [2, 1]  # the last chunk in the job's last transaction
    job = await _job_json(api, tenant, job_id)
    assert job["Status"] == "Completed" and (job["ProgressDone"], job["ProgressTotal"]) == (3, 3)
    recorded = [await support.our_listing(rt, p1, product_id) for product_id in ids]
    assert [(row.marketplace_price, row.marketplace_quantity) for row in recorded if row is not None] == [
        (Decimal("12.50"), 7),
        (Decimal("13.50"), 8),
        (Decimal("14.50"), 9),
    ]


async def test_a_run_that_lost_its_lease_records_no_value_of_its_feed(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another worker recovered the job while this run waited for its feed: that worker records the feed's values;
    this run's would land after a later push's and tell a wrong story of what the marketplace holds."""
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    p1 = tenant.marketplace("P1")
    ids = await _three_listed(rt, p1)
    job_id = await _push(rt, tenant, p1, ids)
    sizes = _recorded_chunks(monkeypatch, 2)
    real_submit_and_await = feeds.submit_and_await

    async def recovered_meanwhile(
        rt_: Runtime, job: JobRun, connection: MarketplaceConnection, submit: Callable[[], Awaitable[str]]
    ) -> object:
        result = await real_submit_and_await(rt_, job, connection, submit)
        async with rt.db.transaction() as session:
            await session.execute(update(Job).where(Job.id == job_id).values(lease_owner="the-recovering-worker"))
        return result

    monkeypatch.setattr(feeds, "submit_and_await", recovered_meanwhile)
    run = await _claimed_run(rt, tenant, job_id, "worker-that-lost")

    with pytest.raises(LeaseLost):
        await tasks.push_price_stock(rt, run)

    assert sizes == [2]  # its first chunk, rolled back
    for product_id in ids:
        row = await support.our_listing(rt, p1, product_id)
        assert row is not None and (row.marketplace_price, row.marketplace_quantity) == (Decimal("10.00"), 5)
    assert (await support.sandbox_listings(rt, p1))["FEED-A"].price == Decimal("12.50")  # the feed was applied


async def test_paused_connection_is_never_pushed(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    p1 = tenant.marketplace("P1")
    ids = await _three_listed(rt, p1)
    async with rt.db.transaction() as session:
        await service.pause(rt, session, tenant.account_id, p1.id)
    job_id = await _push(rt, tenant, p1, ids)

    await Worker(rt).drain()

    assert (await _job_json(api, tenant, job_id))["Status"] == "Cancelled"
    assert await support.sandbox_feeds(rt, p1) == []
    assert {row.price for row in (await support.sandbox_listings(rt, p1)).values()} == {Decimal("10.00")}

    async with rt.db.transaction() as session:
        resync = await service.resume(rt, session, tenant.account_id, p1.id)
    await Worker(rt).drain()
    # Resuming sends everything the pause held back, once.
    assert [(await support.job(rt, j)).status for j in resync] == ["Completed", "Completed"]
    remote = await support.sandbox_listings(rt, p1)
    assert remote["FEED-A"].price == Decimal("12.50") and remote["FEED-A"].feed_updates == 1


async def test_disconnect_cancels_queued_jobs_and_removes_listings(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P2", "DE")))
    p1, p2 = tenant.marketplace("P1"), tenant.marketplace("P2")
    ids = await _three_listed(rt, p1)
    queued = await _push(rt, tenant, p1, ids)
    other = await support.enqueue(rt, tenant.account_id, "OrderPull", {"MarketplaceId": p2.id})

    async with rt.db.transaction() as session:
        cancelled = await service.disconnect(rt, session, tenant.account_id, p1.id)

    assert cancelled == 1
    assert (await support.job(rt, queued)).status == "Cancelled"
    assert (await support.job(rt, other)).status == "Published"
    assert await support.our_listing(rt, p1, ids[0]) is None
    response = await api.get("/api/marketplaces", headers=tenant.headers)
    assert [m["MarketplaceId"] for m in response.json()["Marketplaces"]] == [p2.id]
    await Worker(rt).drain()
    assert await support.sandbox_feeds(rt, p1) == []


async def _api_push(api: httpx.AsyncClient, tenant: Tenant, items: list[dict[str, object]]) -> dict[str, object]:
    response = await api.post("/api/inventory/price-quantity", json={"Items": items}, headers=tenant.headers)
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


async def test_a_feed_line_carries_only_what_differs_and_a_zero_price_never_blocks_stock(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    p1 = tenant.marketplace("P1")
    product = await support.listed_product(rt, p1, "ZERO-1", price="10.00", quantity=5)

    # Only the quantity moved: the line carries no price.
    await _api_push(api, tenant, [{"Sku": "ZERO-1", "Quantity": 6}])
    await Worker(rt).drain()
    [feed] = await support.sandbox_feeds(rt, p1)
    assert [(line["Price"], line["Quantity"]) for line in feed.lines] == [(None, 6)]

    # Price 0 is saved, the push warns that P1 refuses it, and the stock still reaches the marketplace.
    body = await _api_push(api, tenant, [{"Sku": "ZERO-1", "Price": 0, "Quantity": 7}])
    assert body["Updated"] == 1
    warnings = [w for w in body["Warnings"] if isinstance(w, str) and "Price 0" in w]  # type: ignore[union-attr]
    assert len(warnings) == 1 and "ZERO-1" in warnings[0] and "P1 UK" in warnings[0]
    await Worker(rt).drain()
    [job_id] = body["JobIds"]  # type: ignore[misc]
    job = await _job_json(api, tenant, str(job_id))
    assert (job["Status"], job["ProgressDone"], job["ProgressTotal"]) == ("Completed", 1, 1)
    remote = (await support.sandbox_listings(rt, p1))["ZERO-1"]
    assert (remote.price, remote.quantity) == (Decimal("10.00"), 7)

    # Later stock pushes keep flowing while the stored price stays 0.
    body = await _api_push(api, tenant, [{"Sku": "ZERO-1", "Quantity": 8}])
    await Worker(rt).drain()
    assert (await support.sandbox_listings(rt, p1))["ZERO-1"].quantity == 8
    assert not [w for w in body["Warnings"] if "Price 0" in str(w)]  # type: ignore[union-attr]
    ours = await support.our_listing(rt, p1, product.id)
    assert ours is not None and (ours.marketplace_price, ours.marketplace_quantity) == (Decimal("10.00"), 8)
    assert await support.events(rt, tenant.account_id, "FeedOutcome") == []


async def test_a_feed_line_carries_the_stored_price_exactly(rt: Runtime, api: httpx.AsyncClient) -> None:
    """The feed's lines are read on the raw driver (prices in storage units): what is sent is the exact decimal."""
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    p1 = tenant.marketplace("P1")
    product = await support.listed_product(rt, p1, "EXACT-1", price="10.00", quantity=5)
    for price, sent in (("19.9999", "19.9999"), ("12.5", "12.50"), ("7", "7.00")):
        await _api_push(api, tenant, [{"Sku": "EXACT-1", "Price": float(price)}])
        await Worker(rt).drain()
        feeds = await support.sandbox_feeds(rt, p1)
        assert [(line["Price"], line["Quantity"]) for line in feeds[-1].lines] == [(sent, None)]
        assert (await support.sandbox_listings(rt, p1))["EXACT-1"].price == Decimal(price)
        ours = await support.our_listing(rt, p1, product.id)
        assert ours is not None and ours.marketplace_price == Decimal(price)


async def test_a_push_to_a_connection_needing_reauthorisation_warns_and_catches_up_once_restored(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P2", "DE")))
    p1, p2 = tenant.marketplace("P1"), tenant.marketplace("P2")
    await support.listed_product(rt, p1, "AUTH-1", price="10.00", quantity=5)
    await tasks.health_checks(rt)
    await support.update_seller(rt, p1, auth_revoked=True)
    await tasks.health_checks(rt)  # P1 UK is now UnAuthorized, RequiresReauthorization true

    body = await _api_push(api, tenant, [{"Sku": "AUTH-1", "Quantity": 9}])
    reauth = [w for w in body["Warnings"] if "reconnected" in str(w)]  # type: ignore[union-attr]
    assert len(reauth) == 1 and "P1 UK" in str(reauth[0])
    await Worker(rt).drain()
    [job_id] = body["JobIds"]  # type: ignore[misc]
    assert (await _job_json(api, tenant, str(job_id)))["Status"] == "Failed"

    # A push that reaches only healthy connections carries no such warning.
    await support.listed_product(rt, p2, "AUTH-2", price="10.00", quantity=5)
    other = await _api_push(api, tenant, [{"Sku": "AUTH-2", "Quantity": 3}])
    assert not [w for w in other["Warnings"] if "reconnected" in str(w)]  # type: ignore[union-attr]

    # The merchant reconnects: the restore sends what P1 UK missed.
    await support.update_seller(rt, p1, auth_revoked=False)
    await tasks.health_checks(rt)
    await Worker(rt).drain()
    assert (await support.sandbox_listings(rt, p1))["AUTH-1"].quantity == 9
