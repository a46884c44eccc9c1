"""marketplaces/feeds.py, the one pipeline every feed job goes through, driven with a fake connector (no HTTP):
submitted once across retries, one poll policy, one mapping of marketplace failures."""

from __future__ import annotations

from decimal import Decimal

import httpx
import pytest

from marketsync.jobs import service as jobs_service
from marketsync.jobs.worker import Worker
from marketsync.marketplaces import feeds, service
from marketsync.marketplaces.connector import AuthorizationRevoked, Throttled, Unavailable
from marketsync.models import Job
from marketsync.runtime import Runtime
from tests.marketplaces import support
from tests.support.connectors import FakeConnector
from tests.support.factories import make_tenant


@pytest.mark.parametrize("settings_overrides", [{"job_lease_s": 30.0}])
async def test_a_throttled_poll_retries_without_submitting_twice(rt: Runtime, api: httpx.AsyncClient) -> None:
    fake = FakeConnector.install(rt, "P1")
    fake.fail_next("feed_result", Throttled(0.0))
    _, _, job_id = await support.queued_push(rt, api, "PIPE-1", price="11.00", quantity=6)

    await Worker(rt).drain()

    assert (await support.job(rt, job_id)).status == "Completed"
    assert fake.calls["submit_price_stock"] == 1  # the retry polled the feed it remembered
    assert fake.calls["feed_result"] == 2
    [(feed_id, lines)] = fake.submitted
    assert feed_id == job_id and len(lines) == 1
    assert (lines[0].price, lines[0].quantity) == (Decimal("11.00"), 6)


async def test_a_feed_still_processing_goes_back_to_the_queue_and_is_polled_again(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(feeds, "POLL_DELAYS_S", (0.0, 0.0))
    monkeypatch.setattr(feeds, "PROCESSING_RETRY_S", 0.0)
    fake = FakeConnector.install(rt, "P1")
    fake.feed_statuses = ["Processing", "Processing", "Processing", "Done"]
    _, _, job_id = await support.queued_push(rt, api, "PIPE-1", price="11.00", quantity=6)

    await Worker(rt).drain()

    job = await support.job(rt, job_id)
    assert job.status == "Completed" and job.recovery_count == 0
    assert fake.calls["submit_price_stock"] == 1 and fake.calls["feed_result"] == 4


async def test_an_outage_at_submission_retries_later(rt: Runtime, api: httpx.AsyncClient) -> None:
    fake = FakeConnector.install(rt, "P1")
    fake.fail_next("submit_price_stock", Unavailable("503"))
    _, _, job_id = await support.queued_push(rt, api, "PIPE-1", price="11.00", quantity=6)

    await Worker(rt).drain(timeout_s=5)

    job = await support.job(rt, job_id)
    assert job.status == "Published"  # back in the queue, run_after = now + UNAVAILABLE_RETRY_S
    assert job.run_after > rt.clock.now()
    assert fake.calls["submit_price_stock"] == 1 and fake.submitted == []


async def test_a_revoked_authorisation_is_recorded_on_the_connection_and_fails_the_push(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    fake = FakeConnector.install(rt, "P1")
    fake.fail_next("submit_price_stock", AuthorizationRevoked("revoked"))
    account_id, marketplace_id, job_id = await support.queued_push(rt, api, "PIPE-1", price="11.00", quantity=6)

    await Worker(rt).drain()

    job = await support.job(rt, job_id)
    assert job.status == "Failed" and "AuthorizationRevoked" in (job.failure_reason or "")
    async with rt.db.read() as session:
        connection = await service.get(session, account_id, marketplace_id)
    assert connection.requires_reauthorization is True and connection.is_healthy is False


@pytest.mark.parametrize("settings_overrides", [{"job_lease_s": 30.0}])
async def test_a_resumed_push_records_the_values_its_feed_carried_not_the_catalogues_new_ones(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """Found by the kill -9 proof: a push resumed after its feed was sent (a recovery after a crash, or a retry)
    recorded the catalogue's values of that moment as the marketplace's; the catalogue had moved on meanwhile, so the
    next push found nothing to send and the marketplace kept the old quantity for good."""
    fake = FakeConnector.install(rt, "P1")
    fake.fail_next("feed_result", Throttled(600.0))  # the feed is sent, then the job waits in the queue
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    connection = tenant.marketplace("P1")
    product = await support.listed_product(rt, connection, "DRIFT-1", price="10.00", quantity=5)
    await support.set_product_values(rt, product.id, None, 6)
    async with rt.db.transaction() as session:
        first = await jobs_service.enqueue_price_stock_push(
            session, rt.clock.now(), tenant.account_id, connection.id, [product.id]
        )
    await Worker(rt).drain(timeout_s=5)
    assert (await support.job(rt, first)).status == "Published"  # waiting out the throttle, its feed sent
    await support.set_product_values(rt, product.id, None, 7)  # the catalogue moves while it waits
    async with rt.db.transaction() as session:
        second = await jobs_service.enqueue_price_stock_push(
            session, rt.clock.now(), tenant.account_id, connection.id, [product.id]
        )
        throttled = await session.get(Job, first)
        assert throttled is not None and second != first
        throttled.run_after = rt.clock.now()

    await Worker(rt).drain()

    assert [(await support.job(rt, job_id)).status for job_id in (first, second)] == ["Completed", "Completed"]
    assert [[line.quantity for line in lines] for _, lines in fake.submitted] == [[6], [7]]
    listing = await support.our_listing(rt, connection, product.id)
    assert listing is not None and listing.marketplace_quantity == 7
