"""The PriceStockPush queue of a connection (found by the kill -9 proof, bench/drills/kill9.py): pushes coalescing into
the queued job at the same moment both keep their products; a job that already ran never absorbs new products; and
a connection's pushes run one at a time, in the order they were queued."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from marketsync.db._wakeups import wants_wake_up
from marketsync.jobs import repository
from marketsync.jobs import service as job_service
from marketsync.jobs.types import JobStatus, JobType, PriceStockPushPayload
from marketsync.runtime import Runtime
from tests.support.factories import make_account, make_connection


async def _payload(rt: Runtime, job_id: str) -> PriceStockPushPayload:
    async with rt.db.read() as session:
        job = await repository.get_any(session, job_id)
        assert job is not None
        return PriceStockPushPayload.of(job.payload)


async def _products(rt: Runtime, job_id: str) -> list[str]:
    """What the job sends when it runs: its payload's products, then those pushes added while it was queued."""
    async with rt.db.read() as session:
        job = await repository.get_any(session, job_id)
        assert job is not None
        return await job_service.price_stock_push_products(session, job_id, PriceStockPushPayload.of(job.payload))


async def test_two_pushes_coalescing_at_once_both_keep_their_products(rt: Runtime) -> None:
    account_id = await make_account(rt)
    connection = await make_connection(rt, account_id, "P1", "UK")
    async with rt.db.transaction() as session:
        job_id = await job_service.enqueue_price_stock_push(session, rt.clock.now(), account_id, connection.id, ["P-0"])
    first_extended, release_first = asyncio.Event(), asyncio.Event()

    async def first() -> str:
        async with rt.db.transaction() as session:
            found = await job_service.enqueue_price_stock_push(
                session, rt.clock.now(), account_id, connection.id, ["P-A"]
            )
            first_extended.set()
            await release_first.wait()  # holds its transaction open while the second push arrives
            return found

    async def second() -> str:
        await first_extended.wait()
        async with rt.db.transaction() as session:
            return await job_service.enqueue_price_stock_push(
                session, rt.clock.now(), account_id, connection.id, ["P-B"]
            )

    running = asyncio.gather(first(), second())
    await asyncio.sleep(0.3)
    release_first.set()
    assert await running == [job_id, job_id]
    assert await _products(rt, job_id) == ["P-0", "P-A", "P-B"]
    assert (await _payload(rt, job_id)).ProductIds == ["P-0"]  # the additions are rows of their own (0304)


async def test_a_push_job_that_already_ran_absorbs_no_new_products(rt: Runtime) -> None:
    account_id = await make_account(rt)
    connection = await make_connection(rt, account_id, "P1", "UK")
    async with rt.db.transaction() as session:
        ran = await job_service.enqueue_price_stock_push(session, rt.clock.now(), account_id, connection.id, ["P-0"])
    async with rt.db.transaction() as session:  # claimed, sent its feed, throttled: back in the queue
        now = rt.clock.now()
        claimed = await repository.claim_next(session, "w", now, 30, [JobType.PRICE_STOCK_PUSH])
        assert claimed is not None and claimed[0].id == ran
        await repository.requeue(session, ran, "w", now, now)
    async with rt.db.transaction() as session:
        fresh = await job_service.enqueue_price_stock_push(session, rt.clock.now(), account_id, connection.id, ["P-1"])
    assert fresh != ran
    assert await _products(rt, ran) == ["P-0"] and await _products(rt, fresh) == ["P-1"]


async def test_a_connections_pushes_run_one_at_a_time_in_queue_order(rt: Runtime) -> None:
    account_id = await make_account(rt)
    uk = await make_connection(rt, account_id, "P1", "UK")
    de = await make_connection(rt, account_id, "P2", "DE")
    async with rt.db.transaction() as session:
        first = await job_service.enqueue_price_stock_push(session, rt.clock.now(), account_id, uk.id, ["P-0"])
    async with rt.db.transaction() as session:
        now = rt.clock.now()
        claimed = await repository.claim_next(session, "w1", now, 30, [JobType.PRICE_STOCK_PUSH])
        assert claimed is not None and claimed[0].id == first
    async with rt.db.transaction() as session:  # queued behind the running one (it no longer coalesces)
        second = await job_service.enqueue_price_stock_push(session, rt.clock.now(), account_id, uk.id, ["P-1"])
        other = await job_service.enqueue_price_stock_push(session, rt.clock.now(), account_id, de.id, ["P-2"])
    async with rt.db.transaction() as session:
        now = rt.clock.now()
        taken = await repository.claim_next(session, "w2", now, 30, [JobType.PRICE_STOCK_PUSH])
        assert taken is not None and taken[0].id == other  # the other connection's push, not the second one
        assert await repository.claim_next(session, "w2", now, 30, [JobType.PRICE_STOCK_PUSH]) is None
        await repository.finish(session, first, "w1", now, JobStatus.COMPLETED, None)
    async with rt.db.transaction() as session:
        taken = await repository.claim_next(session, "w2", rt.clock.now(), 30, [JobType.PRICE_STOCK_PUSH])
        assert taken is not None and taken[0].id == second


async def test_a_push_that_started_and_went_back_to_the_queue_stays_ahead_of_newer_ones(rt: Runtime) -> None:
    """Its feed may be at the marketplace already: a newer push overtaking it (its run_after is later once throttled)
    would have its outcome recorded before the older feed's (found by the kill -9 proof)."""
    account_id = await make_account(rt)
    uk = await make_connection(rt, account_id, "P1", "UK")
    async with rt.db.transaction() as session:
        first = await job_service.enqueue_price_stock_push(session, rt.clock.now(), account_id, uk.id, ["P-0"])
    async with rt.db.transaction() as session:  # ran, sent its feed, throttled for 60 s
        now = rt.clock.now()
        claimed = await repository.claim_next(session, "w1", now, 30, [JobType.PRICE_STOCK_PUSH])
        assert claimed is not None and claimed[0].id == first
        await repository.requeue(session, first, "w1", now, now + timedelta(seconds=60))
    async with rt.db.transaction() as session:
        second = await job_service.enqueue_price_stock_push(session, rt.clock.now(), account_id, uk.id, ["P-1"])
    assert second != first
    async with rt.db.transaction() as session:
        assert await repository.claim_next(session, "w2", rt.clock.now(), 30, [JobType.PRICE_STOCK_PUSH]) is None
    async with rt.db.transaction() as session:
        later = rt.clock.now() + timedelta(seconds=61)
        taken = await repository.claim_next(session, "w2", later, 30, [JobType.PRICE_STOCK_PUSH])
        assert taken is not None and taken[0].id == first


async def test_one_push_to_several_connections_coalesces_each_as_its_queue_allows(rt: Runtime) -> None:
    """The push's enqueue handles every connection in a fixed number of statements (docs/decisions/0260): per
    connection a queued job is extended, a queued full resync takes the products as it is, a job that ran gets a
    new one behind it, and a connection with none queued gets a new one."""
    account_id = await make_account(rt)
    queued, resync, ran, idle = [
        await make_connection(rt, account_id, platform, country)
        for platform, country in (("P1", "UK"), ("P2", "DE"), ("P3", "US"), ("P4", "FR"))
    ]
    async with rt.db.transaction() as session:
        ran_id = await job_service.enqueue_price_stock_push(session, rt.clock.now(), account_id, ran.id, ["P-0"])
    async with rt.db.transaction() as session:  # it ran, sent its feed, went back to the queue
        now = rt.clock.now()
        claimed = await repository.claim_next(session, "w", now, 30, [JobType.PRICE_STOCK_PUSH])
        assert claimed is not None and claimed[0].id == ran_id
        await repository.requeue(session, ran_id, "w", now, now)
    async with rt.db.transaction() as session:
        now = rt.clock.now()
        queued_id = await job_service.enqueue_price_stock_push(session, now, account_id, queued.id, ["P-5", "P-1"])
        resync_job = job_service.enqueue(
            session, now, account_id, PriceStockPushPayload(MarketplaceId=resync.id, AllListings=True)
        )
    per_connection = {c.id: ["P-3", "P-1"] for c in (queued, resync, ran, idle)}
    async with rt.db.transaction() as session:
        job_ids = await job_service.enqueue_price_stock_pushes(session, rt.clock.now(), account_id, per_connection)
        assert wants_wake_up(session)  # new jobs were queued: the workers hear of them as this commits

    by_connection = dict(zip(sorted(per_connection), job_ids, strict=True))
    assert by_connection[queued.id] == queued_id and by_connection[resync.id] == resync_job.id
    assert by_connection[ran.id] not in (ran_id, queued_id) and by_connection[idle.id] not in (ran_id, queued_id)
    assert await _products(rt, queued_id) == ["P-1", "P-5", "P-3"]  # appended, each product once
    assert (await _payload(rt, resync_job.id)).AllListings and await _products(rt, ran_id) == ["P-0"]
    for connection in (ran, idle):
        async with rt.db.read() as session:
            job = await repository.get_any(session, by_connection[connection.id])
        assert job is not None and job.status == JobStatus.PUBLISHED and job.started_at is None
        assert job.payload == {"MarketplaceId": connection.id, "ProductIds": ["P-1", "P-3"]}
        assert (job.type, job.marketplace_id, job.account_id) == (JobType.PRICE_STOCK_PUSH, connection.id, account_id)
        assert (job.progress_done, job.progress_total, job.recovery_count) == (0, 2, 0)
        assert job.run_after == job.created_at == job.updated_at
    async with rt.db.read() as session:
        extended = await repository.get_any(session, queued_id)
    # While queued, the total counts the job's products, each once: P-1, named by both pushes, was not added again
    # (0461).
    assert extended is not None and (extended.progress_done, extended.progress_total) == (0, 3)
