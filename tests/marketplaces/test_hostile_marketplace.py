"""A hostile marketplace over real HTTP: a stand-in in front of the sandbox that stops answering, answers garbage or
a document of the wrong shape, or drops the connection mid-feed. A push job never hangs past its deadline, never
fails for it and never applies a row twice: it goes back to the queue (a retry), and completes once the
marketplace behaves."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from marketsync.jobs import service as jobs_service
from marketsync.jobs.types import JobStatus
from marketsync.jobs.worker import Worker
from marketsync.marketplaces import service as marketplaces
from marketsync.marketplaces.connector import Unavailable
from marketsync.marketplaces.sandbox.app import create_sandbox_app
from marketsync.marketplaces.sandbox.connector import SandboxConnector
from marketsync.models import Job, MarketplaceConnection
from marketsync.runtime import Runtime
from tests.marketplaces import support
from tests.support.server import serve

# The worker's marketplace call deadline. Every good call (token, listings, the feed once the fault has passed) must
# answer within it too, also while the suite runs on several workers of a 2-core machine: 0.5 s was too tight there.
TIMEOUT_S = 2.0


class Hostile:
    """ASGI stand-in: the next scripted faults apply to feed calls (submit and poll), then it passes through."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.faults: list[str] = []
        self.feed_calls = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/v1/feeds") and self.faults:
            self.feed_calls += 1
            fault = self.faults.pop(0)
            if fault == "silent":
                await asyncio.sleep(TIMEOUT_S * 2)  # longer than the client waits
            if fault == "drop":
                raise ConnectionResetError("dropped mid-feed")  # uvicorn closes the connection: no response
            body = {"garbage": b"<html>502 Bad Gateway</html>", "wrong-shape": b'{"Feed": "no id here"}'}.get(fault)
            if body is not None:
                await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/html")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.inner(scope, receive, send)


@pytest.fixture
async def hostile(rt: Runtime) -> AsyncIterator[tuple[Hostile, str]]:
    stand_in = Hostile(create_sandbox_app(rt))
    async with serve(stand_in) as base_url:  # type: ignore[arg-type]
        yield stand_in, base_url


async def _due_now(rt: Runtime, job_id: str) -> None:
    """The clock moves on to the retry (the worker requeued it for later)."""
    async with rt.db.transaction() as session:
        await session.execute(
            update(Job).where(Job.id == job_id).values(run_after=rt.clock.now() - timedelta(seconds=1))
        )


@pytest.mark.parametrize("fault", ["silent", "garbage", "wrong-shape", "drop"])
async def test_a_misbehaving_marketplace_sends_the_push_back_to_the_queue_then_it_completes(
    rt: Runtime,
    api: httpx.AsyncClient,
    hostile: tuple[Hostile, str],
    make_runtime: Callable[..., Runtime],
    fault: str,
) -> None:
    stand_in, base_url = hostile
    account_id, connection_id, job_id = await support.queued_push(rt, api, "HOSTILE-1")
    worker_rt = make_runtime(sandbox_url=base_url, marketplace_timeout_s=TIMEOUT_S)
    stand_in.faults = [fault]
    loop = asyncio.get_running_loop()
    started = loop.time()
    await Worker(worker_rt).drain(timeout_s=20)
    assert loop.time() - started < 10  # nothing hangs: the call's deadline, then back to the queue
    async with rt.db.read() as session:
        job = await jobs_service.get_job(session, account_id, job_id)
    assert job.status in (JobStatus.PUBLISHED, JobStatus.NOT_STARTED) and job.failure_reason is None, job.status

    await _due_now(rt, job_id)
    await Worker(worker_rt).drain(timeout_s=20)
    async with rt.db.read() as session:
        job = await jobs_service.get_job(session, account_id, job_id)
    assert job.status == JobStatus.COMPLETED
    async with rt.db.read() as session:
        connection = await marketplaces.get(session, account_id, connection_id)
    [feed] = await support.sandbox_feeds(rt, connection)
    assert feed.client_feed_id == job_id and feed.processed == 1  # one feed, applied once
    [remote] = (await support.sandbox_listings(rt, connection)).values()
    assert (remote.price, remote.quantity, remote.feed_updates) == (Decimal("12.00"), 9, 1)


@pytest.mark.parametrize("stamp", ["0001-01-01T00:00:00+00:01", "9999-12-31T23:59:59-00:01"])
async def test_an_order_time_utc_cannot_hold_is_an_unusable_answer_never_an_overflow(stamp: str) -> None:
    """A marketplace's order page is input too: its time was stored as sent and overflowed converting to UTC."""
    order = {
        "OrderId": "O-1", "Status": "Unshipped", "PurchaseDate": stamp, "LastChanged": "2026-01-01T00:00:00Z",
        "Currency": "GBP", "Items": [],
    }  # fmt: skip

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"Orders": [order], "NextCursor": None})

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer), base_url="http://marketplace.test") as client:
        connector = SandboxConnector(client, MarketplaceConnection(id="c-1", platform="P1", country="UK"), 5.0)
        with pytest.raises(Unavailable, match="unexpected order page"):
            await connector.pull_orders(None)
        order["PurchaseDate"] = "0001-01-01T00:00:00Z"  # the earliest UTC holds is read, in UTC
        [read] = (await connector.pull_orders(None)).orders
        assert read.purchase_date == datetime(1, 1, 1, tzinfo=UTC)
