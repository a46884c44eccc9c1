"""A marketplace call has one total deadline (MARKETSYNC_MARKETPLACE_TIMEOUT_S), from connecting to the answer's last
byte. httpx's timeout bounds each read on its own: a marketplace answering a byte at a time, each within it, used to
hold the call (and the PriceStockPush holding its connection's one-at-a-time queue) for as long as it kept dripping.
Now the call ends at its deadline as Unavailable, like a marketplace that does not answer, and the push goes back to
the queue; it completes once the marketplace behaves. Real HTTP on loopback, both databases."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from marketsync.jobs.types import JobStatus
from marketsync.jobs.worker import Worker
from marketsync.marketplaces import service as marketplaces
from marketsync.marketplaces.connector import PriceStockLine, Unavailable, connector_for
from marketsync.marketplaces.sandbox.app import create_sandbox_app
from marketsync.models import Job
from marketsync.runtime import Runtime
from tests.marketplaces import support
from tests.support.factories import make_tenant
from tests.support.server import serve

# The call deadline. Every good call (token, listings, the feed once it behaves) must answer within it too, also on
# a loaded 2-core machine (tests/marketplaces/test_hostile_marketplace.py found 0.5 s too tight).
TIMEOUT_S = 2.0
# A byte this often is well within httpx's per-read timeout (TIMEOUT_S): only a total deadline ends the call.
DRIP_EVERY_S = 0.4
# Without a total deadline the call would wait as long as the drip lasts: the tests give up at this bound (and fail).
GIVE_UP_S = 20.0


class Dripping:
    """ASGI stand-in in front of the sandbox: the next `drips` feed submissions are answered 200 with a byte every
    DRIP_EVERY_S for as long as the client stays connected (GIVE_UP_S at most); everything else passes through."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.drips = 0
        self.bytes_sent = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/v1/feeds" and scope["method"] == "POST" and self.drips:
            self.drips -= 1
            while (await receive()).get("more_body"):
                pass
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            for _ in range(int(GIVE_UP_S / DRIP_EVERY_S)):
                await send({"type": "http.response.body", "body": b" ", "more_body": True})
                self.bytes_sent += 1
                try:  # the request is read: the next message is the client going away
                    async with asyncio.timeout(DRIP_EVERY_S):
                        if (await receive())["type"] == "http.disconnect":
                            return
                except TimeoutError:
                    pass
            await send({"type": "http.response.body", "body": b"{}"})
            return
        await self.inner(scope, receive, send)


@pytest.fixture
async def dripping(rt: Runtime) -> AsyncIterator[tuple[Dripping, str]]:
    stand_in = Dripping(create_sandbox_app(rt))
    async with serve(stand_in) as base_url:  # type: ignore[arg-type]
        yield stand_in, base_url


async def test_a_call_answered_a_byte_at_a_time_ends_at_its_deadline_as_unavailable(
    rt: Runtime, api: httpx.AsyncClient, dripping: tuple[Dripping, str], make_runtime: Callable[..., Runtime]
) -> None:
    stand_in, base_url = dripping
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    worker_rt = make_runtime(sandbox_url=base_url, marketplace_timeout_s=TIMEOUT_S)
    connector = connector_for(worker_rt, tenant.marketplace("P1"))
    stand_in.drips = 1
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(Unavailable, match="did not answer within"):
        async with asyncio.timeout(GIVE_UP_S):
            await connector.submit_price_stock("feed-1", [PriceStockLine("DRIP-1", Decimal("1.00"), 1)])
    took = loop.time() - started
    assert TIMEOUT_S * 0.9 < took < TIMEOUT_S + 3  # the deadline, not the (endless) drip, ended it
    assert stand_in.bytes_sent >= 2  # the marketplace was answering, within every per-read timeout


async def test_a_push_meeting_a_dripping_marketplace_goes_back_to_the_queue_then_completes(
    rt: Runtime, api: httpx.AsyncClient, dripping: tuple[Dripping, str], make_runtime: Callable[..., Runtime]
) -> None:
    stand_in, base_url = dripping
    account_id, connection_id, job_id = await support.queued_push(rt, api, "DRIP-1")
    worker_rt = make_runtime(sandbox_url=base_url, marketplace_timeout_s=TIMEOUT_S)
    stand_in.drips = 1
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with asyncio.timeout(GIVE_UP_S):
        await Worker(worker_rt).drain(timeout_s=GIVE_UP_S)
    assert loop.time() - started < 12  # without a total deadline the drain waits out the drip
    job = await support.job(rt, job_id)
    assert job.status in (JobStatus.PUBLISHED, JobStatus.NOT_STARTED) and job.failure_reason is None, job.status

    async with rt.db.transaction() as session:  # the clock moves on to the retry
        await session.execute(
            update(Job).where(Job.id == job_id).values(run_after=rt.clock.now() - timedelta(seconds=1))
        )
    await Worker(worker_rt).drain(timeout_s=30)
    job = await support.job(rt, job_id)
    assert job.status == JobStatus.COMPLETED
    async with rt.db.read() as session:
        connection = await marketplaces.get(session, account_id, connection_id)
    [feed] = await support.sandbox_feeds(rt, connection)
    assert feed.client_feed_id == job_id and feed.processed == 1  # one feed, applied once
    [remote] = (await support.sandbox_listings(rt, connection)).values()
    assert (remote.price, remote.quantity, remote.feed_updates) == (Decimal("12.00"), 9, 1)
