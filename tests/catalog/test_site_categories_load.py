"""A connection authorised on a site with no category tree yet queues the load of that site's tree (decision 0221,
amended): before, search answered nothing and a create with a CategoryId was a 404 there until an operator ran
`marketsync admin taxonomy import`, and P2-P4 need a CategoryId, so nothing could be created."""

from __future__ import annotations

import httpx

from marketsync.catalog.taxonomy import service as catalog
from marketsync.jobs.types import JobType
from marketsync.jobs.worker import Worker
from marketsync.marketplaces import service as marketplaces
from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.inventory.support import jobs_of
from tests.support.factories import make_tenant


async def _search(api: httpx.AsyncClient, headers: dict[str, str], marketplace_id: str) -> int:
    found = await api.post("/api/product-types/Search", json={"MarketplaceId": marketplace_id}, headers=headers)
    assert found.status_code == 200, found.text
    return int(found.json()["TotalCount"])


async def test_the_first_connection_to_a_site_loads_its_categories_and_the_next_one_finds_them(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    first, second = await make_tenant(rt, api), await make_tenant(rt, api)
    async with rt.db.transaction() as session:
        connection = await marketplaces.connect(rt, session, first.account_id, "P3", "UK")
        job_id = await catalog.load_categories_if_missing(rt, session, connection)
    assert job_id is not None
    assert await _search(api, first.headers, connection.id) == 0  # queued, not loaded in the connect

    await Worker(rt).drain()
    [job] = [job for job in await jobs_of(rt, first.account_id) if job.type != JobType.LISTING_MIRROR]  # 0404's pull
    assert (job.id, job.type, job.status) == (job_id, JobType.TAXONOMY_LOAD, "Completed")
    assert await _search(api, first.headers, connection.id) > 0

    async with rt.db.transaction() as session:
        other = await marketplaces.connect(rt, session, second.account_id, "P3", "UK")
        assert await catalog.load_categories_if_missing(rt, session, other) is None  # the site has its tree
    assert await _search(api, second.headers, other.id) == await _search(api, first.headers, connection.id)


async def test_consent_in_the_app_queues_the_load_and_a_disconnect_before_it_runs_loads_nothing(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api)
    owner = await signed_in(api, await make_person(rt, tenant.account_id))
    started = await owner.post("/app/marketplaces", {"platform": "P2", "country": "IT"})
    marketplace_id = started.headers["location"].split("/")[3]
    assert await jobs_of(rt, tenant.account_id) == []  # nothing before the merchant allows access
    allowed = await owner.post(f"/app/marketplaces/{marketplace_id}/consent", {"decision": "allow"})
    assert allowed.status_code == 303
    queued = await jobs_of(rt, tenant.account_id)
    assert sorted(job.type for job in queued) == [JobType.LISTING_MIRROR, JobType.TAXONOMY_LOAD]  # 0404's first pull

    async with rt.db.transaction() as session:
        await marketplaces.disconnect(rt, session, tenant.account_id, marketplace_id)
    await Worker(rt).drain()
    assert {job.status for job in await jobs_of(rt, tenant.account_id)} == {"Cancelled"}  # queued work goes with it
    async with rt.db.transaction() as session:
        again = await marketplaces.connect(rt, session, tenant.account_id, "P2", "IT")
        assert await catalog.load_categories_if_missing(rt, session, again) is not None  # still none loaded
    await owner.client.aclose()
