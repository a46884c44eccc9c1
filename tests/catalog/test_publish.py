"""Publishing: the ListingPublish job against the sandbox marketplaces, its events and the listings map."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from sqlalchemy import select

from marketsync.marketplaces.sandbox import state as sandbox_state
from marketsync.models import Listing
from marketsync.runtime import Runtime
from tests.catalog.support import create, create_payload, events_of, load_taxonomies, run_jobs
from tests.inventory.support import PUSH
from tests.support.factories import Tenant, make_tenant


async def _tenant(rt: Runtime, api: httpx.AsyncClient) -> Tenant:
    await load_taxonomies(rt, ("P2",))
    return await make_tenant(rt, api, marketplaces=(("P2", "DE"),))


async def _listings(rt: Runtime, account_id: str) -> list[Listing]:
    async with rt.db.read() as session:
        return list((await session.execute(select(Listing).where(Listing.account_id == account_id))).scalars())


async def test_publish_fills_the_listings_map_and_fires_listing_published(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await _tenant(rt, api)
    payload = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1", Quantity=2)
    created = (await create(api, tenant, payload)).json()
    await run_jobs(rt)

    job = (await api.get(f"/api/jobs/{created['JobId']}", headers=tenant.headers)).json()
    assert job["Status"] == "Completed" and job["IsSuccessful"] is True
    assert (job["ProgressDone"], job["ProgressTotal"]) == (1, 1)
    [listing] = await _listings(rt, tenant.account_id)
    assert listing.status == "Live" and listing.journey_id is None
    assert listing.listing_id and listing.external_sku and listing.listing_url
    assert await events_of(rt, tenant.account_id, "ListingPublished") == [
        {
            "JourneyId": created["JobId"],
            "UserPlatformId": tenant.marketplace("P2").id,
            "PublishedCount": 1,
            "FailedCount": 0,
        }
    ]
    assert await events_of(rt, tenant.account_id, "FeedOutcome") == []  # a clean feed is silent

    product = await api.get("/api/products/PHONE-1", headers=tenant.headers)
    if product.status_code == 200:  # the inventory read shows the listings map
        [entry] = product.json()["Product"]["Listings"]
        assert entry["ListingId"] == listing.listing_id

    revised = (await create(api, tenant, payload)).json()
    assert revised["ListingAction"] == "Revise" and revised["ExistingListingId"] == listing.listing_id
    await run_jobs(rt)
    [again] = await _listings(rt, tenant.account_id)
    assert again.listing_id == listing.listing_id  # revised in place, not a second listing


async def test_item_rejection_for_an_off_api_requirement_raises_feed_outcome(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await _tenant(rt, api)
    payload = await create_payload(api, tenant, "P2", "T-Shirts", "TEE-1")
    created = await create(api, tenant, payload)
    assert created.json()["Warnings"]
    await run_jobs(rt)
    [listing] = await _listings(rt, tenant.account_id)
    assert listing.status == "Rejected" and listing.listing_id is None
    assert listing.last_error and "Images" in listing.last_error
    # Its only listing was refused: the job did not succeed (docs/decisions/0082).
    job = (await api.get(f"/api/jobs/{created.json()['JobId']}", headers=tenant.headers)).json()
    assert (job["Status"], job["IsComplete"], job["IsSuccessful"]) == ("Failed", True, False)
    assert (job["ProgressDone"], job["ProgressTotal"]) == (0, 1)
    published = await events_of(rt, tenant.account_id, "ListingPublished")
    assert [(e["PublishedCount"], e["FailedCount"]) for e in published] == [(0, 1)]
    [outcome] = await events_of(rt, tenant.account_id, "FeedOutcome")
    assert outcome["FeedKind"] == "Product listing"
    assert outcome["Outcome"] == "ProcessedWithErrors"
    assert outcome["FailedCount"] == 1
    assert outcome["UserPlatformId"] == tenant.marketplace("P2").id


async def test_a_rejected_feed_raises_feed_outcome_rejected(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await _tenant(rt, api)
    connection = tenant.marketplace("P2")
    async with rt.db.transaction() as session:
        seller = await sandbox_state.ensure_seller(session, connection.id, "P2", "DE", rt.clock.now())
        sandbox_state.set_feed_fault(seller, "reject")
    payload = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1")
    created = await create(api, tenant, payload)
    assert created.status_code == 200
    await run_jobs(rt)
    [listing] = await _listings(rt, tenant.account_id)
    assert listing.status == "Rejected" and listing.listing_id is None
    job = (await api.get(f"/api/jobs/{created.json()['JobId']}", headers=tenant.headers)).json()
    assert (job["Status"], job["IsSuccessful"], job["ProgressDone"], job["ProgressTotal"]) == ("Failed", False, 0, 1)
    [outcome] = await events_of(rt, tenant.account_id, "FeedOutcome")
    assert (outcome["Outcome"], outcome["FeedKind"], outcome["FailedCount"]) == ("Rejected", "Product listing", 1)
    published = await events_of(rt, tenant.account_id, "ListingPublished")
    assert [(e["PublishedCount"], e["FailedCount"]) for e in published] == [(0, 1)]


async def test_a_recovered_publish_run_records_nothing_twice(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker dies after the marketplace applied the feed but before the outcome was recorded: the run that
    recovers the job polls the feed it remembered (no second submission) and records the outcome once."""
    from marketsync.catalog.listings import publish as service
    from marketsync.jobs import repository as jobs_repository
    from marketsync.jobs.run import JobRun
    from marketsync.jobs.worker import Worker

    class Killed(Exception):
        pass

    tenant = await _tenant(rt, api)
    payload = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1")
    created = (await create(api, tenant, payload)).json()
    async with rt.db.transaction() as session:
        claimed = await jobs_repository.claim_next(session, "dying", rt.clock.now(), 0.2, ["ListingPublish"])
        assert claimed is not None
        run = JobRun.of(rt, claimed[0], "dying")
    real_record = service._record_outcome

    async def dies(*args: object, **kwargs: object) -> None:
        raise Killed

    monkeypatch.setattr(service, "_record_outcome", dies)
    with pytest.raises(Killed):
        await service.publish_journey(rt, run)
    monkeypatch.setattr(service, "_record_outcome", real_record)
    assert run.state["MarketplaceFeedId"]  # remembered before the run died

    await asyncio.sleep(0.3)  # the dead worker's lease runs out
    await Worker(rt).drain()
    job = (await api.get(f"/api/jobs/{created['JobId']}", headers=tenant.headers)).json()
    assert (job["Status"], job["RecoveryCount"]) == ("Completed", 1)
    assert len(await events_of(rt, tenant.account_id, "ListingPublished")) == 1
    [listing] = await _listings(rt, tenant.account_id)
    assert listing.status == "Live" and listing.listing_id


async def test_a_publish_meeting_revoked_authorisation_fails_and_flips_health(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await _tenant(rt, api)
    connection = tenant.marketplace("P2")
    async with rt.db.transaction() as session:
        seller = await sandbox_state.ensure_seller(session, connection.id, "P2", "DE", rt.clock.now())
        seller.auth_revoked = True
    payload = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1")
    created = await create(api, tenant, payload)
    assert created.status_code == 200
    await run_jobs(rt)

    job = (await api.get(f"/api/jobs/{created.json()['JobId']}", headers=tenant.headers)).json()
    assert (job["Status"], job["IsSuccessful"], job["ProgressDone"], job["ProgressTotal"]) == ("Failed", False, 0, 1)
    published = await events_of(rt, tenant.account_id, "ListingPublished")
    assert [(e["PublishedCount"], e["FailedCount"]) for e in published] == [(0, 1)]
    [unhealthy] = await events_of(rt, tenant.account_id, "MarketplaceUnhealthy")
    assert unhealthy["Reason"] == "UnAuthorized"
    marketplaces = (await api.get("/api/marketplaces", headers=tenant.headers)).json()["Marketplaces"]
    assert [m["RequiresReauthorization"] for m in marketplaces] == [True]


async def _held_by_marketplace(rt: Runtime, connection_id: str, sku: str) -> tuple[object, object]:
    async with rt.db.read() as session:
        remote = await sandbox_state.listing_by_sku(session, connection_id, sku)
        assert remote is not None
        return remote.price, remote.quantity


@pytest.mark.parametrize("revise", [False, True], ids=["new-listing", "revision"])
async def test_a_push_between_feed_and_record_is_brought_to_the_marketplace(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch, revise: bool
) -> None:
    """A push of the SKU lands after the publish feed was built and before its outcome is recorded (forced by a
    hook, no timing): the listing records the values the feed carried, and a PriceStockPush brings the marketplace
    to the pushed ones (docs/decisions/0307)."""
    from marketsync.catalog.listings import publish as service
    from marketsync.jobs.types import JobType
    from marketsync.models import Job

    tenant = await _tenant(rt, api)
    connection_id = tenant.marketplace("P2").id
    payload = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1", Quantity=2)
    assert (await create(api, tenant, payload)).status_code == 200
    if revise:
        await run_jobs(rt)  # live first: the next create revises it
        assert (await create(api, tenant, payload)).status_code == 200
    real_submit = service.feeds.submit_and_await
    pushed: list[httpx.Response] = []

    async def submit_then_push(*args: object, **kwargs: object) -> object:
        result = await real_submit(*args, **kwargs)  # type: ignore[arg-type]
        if not pushed:  # the publish's feed is applied: a push arrives now
            items = [{"Sku": "PHONE-1", "Quantity": 9}]
            pushed.append(await api.post(PUSH, json={"Items": items}, headers=tenant.headers))
        return result

    monkeypatch.setattr(service.feeds, "submit_and_await", submit_then_push)
    await run_jobs(rt)

    assert [response.json()["Results"][0]["Result"] for response in pushed] == ["Updated"]
    assert (await _held_by_marketplace(rt, connection_id, "PHONE-1"))[1] == 9  # converged
    [listing] = await _listings(rt, tenant.account_id)
    assert listing.marketplace_quantity == 9  # recorded by the PriceStockPush that sent it
    async with rt.db.read() as session:
        pushes = list(
            (
                await session.execute(
                    select(Job.status).where(Job.account_id == tenant.account_id, Job.type == JobType.PRICE_STOCK_PUSH)
                )
            ).scalars()
        )
    assert pushes and all(status == "Completed" for status in pushes)


async def test_a_publish_records_the_values_its_feed_carried(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the feed and the record the catalogue moved: the listing holds the feed's values, not the catalogue's,
    and the convergence push is queued in the same transaction (nothing run yet)."""
    from marketsync.catalog.listings import publish as service
    from marketsync.jobs import repository as jobs_repository
    from marketsync.jobs.run import JobRun
    from marketsync.models import Job

    tenant = await _tenant(rt, api)
    payload = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1", Quantity=2)
    created = (await create(api, tenant, payload)).json()
    real_submit = service.feeds.submit_and_await

    async def submit_then_push(*args: object, **kwargs: object) -> object:
        result = await real_submit(*args, **kwargs)  # type: ignore[arg-type]
        items = [{"Sku": "PHONE-1", "Quantity": 7}]
        assert (await api.post(PUSH, json={"Items": items}, headers=tenant.headers)).status_code == 200
        return result

    monkeypatch.setattr(service.feeds, "submit_and_await", submit_then_push)
    async with rt.db.transaction() as session:
        claimed = await jobs_repository.claim_next(session, "one", rt.clock.now(), 30.0, ["ListingPublish"])
        assert claimed is not None
    run = JobRun.of(rt, claimed[0], "one")
    await service.publish_journey(rt, run)

    assert run.state[service.PUBLISHED_VALUES] == {(await _listings(rt, tenant.account_id))[0].id: [None, 2]}
    [listing] = await _listings(rt, tenant.account_id)
    assert (listing.status, listing.marketplace_quantity) == ("Live", 2)
    assert (await _held_by_marketplace(rt, tenant.marketplace("P2").id, "PHONE-1"))[1] == 2
    async with rt.db.read() as session:
        types = (await session.execute(select(Job.type).where(Job.account_id == tenant.account_id))).scalars()
        assert sorted(types) == ["ListingPublish", "PriceStockPush"]
    assert created["JobId"] == claimed[0].id
