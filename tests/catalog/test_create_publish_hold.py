"""A created product's ListingPublish is held `propagation_hold_s`, and the creates that follow within it join the job
(docs/decisions/0460): a client creating products in a loop sends the marketplace one feed a second per connection,
and each create's JobId is the journey its listing's ListingPublished names."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import select

from marketsync.jobs import service as jobs_service
from marketsync.jobs.worker import Worker
from marketsync.kit.clock import Clock, FrozenClock
from marketsync.models import Listing
from marketsync.runtime import Runtime
from tests.catalog.support import create, events_of, run_jobs
from tests.support.factories import Tenant, make_tenant


@pytest.fixture
def clock() -> Clock:
    return FrozenClock()


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"propagation_hold_s": 1.0}


async def _create(api: httpx.AsyncClient, tenant: Tenant, sku: str) -> str:
    response = await create(api, tenant, {"Sku": sku, "MarketplaceId": tenant.marketplace("P1").id, "Quantity": 3})
    assert response.status_code == 200, response.text
    job_id: str = response.json()["JobId"]
    return job_id


async def _job(api: httpx.AsyncClient, tenant: Tenant, job_id: str) -> dict[str, Any]:
    job: dict[str, Any] = (await api.get(f"/api/jobs/{job_id}", headers=tenant.headers)).json()
    return job


async def _listings(rt: Runtime, account_id: str) -> list[Listing]:
    async with rt.db.read() as session:
        return list((await session.execute(select(Listing).where(Listing.account_id == account_id))).scalars())


async def test_creates_within_the_hold_join_one_publish_which_runs_once_it_passes(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    first = await _create(api, tenant, "JOIN-A")
    clock.advance(seconds=0.5)
    second = await _create(api, tenant, "JOIN-B")
    assert second == first

    await Worker(rt).drain()  # the hold has not passed: nothing is taken
    queued = await _job(api, tenant, first)
    assert queued["Status"] == "Published" and (queued["ProgressDone"], queued["ProgressTotal"]) == (0, 2)
    pending = await _listings(rt, tenant.account_id)
    assert {(listing.status, listing.journey_id) for listing in pending} == {("Pending", first)}

    clock.advance(seconds=0.5)
    await run_jobs(rt)
    done = await _job(api, tenant, first)
    assert done["Status"] == "Completed" and (done["ProgressDone"], done["ProgressTotal"]) == (2, 2)
    live = await _listings(rt, tenant.account_id)
    assert len(live) == 2 and all(listing.status == "Live" and listing.listing_id for listing in live)
    assert await events_of(rt, tenant.account_id, "ListingPublished") == [
        {"JourneyId": first, "UserPlatformId": tenant.marketplace("P1").id, "PublishedCount": 2, "FailedCount": 0}
    ]

    after = await _create(api, tenant, "JOIN-C")  # the job ran: the next create queues another
    assert after != first


async def test_a_held_publish_takes_creates_up_to_a_feed_of_its_size(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs_service, "MAX_JOINED_LISTINGS", 2)
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    skus = ("FULL-A", "FULL-B", "FULL-C", "FULL-B", "FULL-D", "FULL-E")
    job_ids = [await _create(api, tenant, sku) for sku in skus]
    assert job_ids[0] == job_ids[1] != job_ids[2] == job_ids[4]  # the full job's successor takes the next create
    assert job_ids[3] == job_ids[1]  # a SKU queued already: its listing stays in the job that holds it
    assert len({job_ids[0], job_ids[2], job_ids[5]}) == 3
    assert [(await _job(api, tenant, job_id))["ProgressTotal"] for job_id in job_ids[1:3] + job_ids[5:]] == [2, 2, 1]


async def test_a_publish_a_worker_has_taken_is_not_joined(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    first = await _create(api, tenant, "TAKEN-A")
    clock.advance(seconds=1)
    await run_jobs(rt)
    assert (await _job(api, tenant, first))["Status"] == "Completed"
    second = await _create(api, tenant, "TAKEN-B")
    assert second != first and (await _job(api, tenant, second))["ProgressTotal"] == 1
