"""Decision 0404: a connection just authorised pulls its listings at once (the operator's connect, the app's
consent; every kind), not at the schedule's next turn up to 15 minutes later; the app words the pull's states."""

from __future__ import annotations

import re

import httpx

from marketsync.jobs.types import JobType
from marketsync.jobs.worker import Worker
from marketsync.kinds import SANDBOX_KINDS
from marketsync.marketplaces import service as marketplaces
from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.inventory.support import jobs_of
from tests.support.factories import make_account, make_tenant


async def test_a_connect_queues_the_first_listing_pull_for_every_sandbox_kind(rt: Runtime) -> None:
    """Amazon's first pull needs its simulator: tests/marketplaces/amazon/test_health_and_mirror.py."""
    account_id = await make_account(rt)
    connected = {}
    for platform, kind in SANDBOX_KINDS.items():
        async with rt.db.transaction() as session:
            connection = await marketplaces.connect(rt, session, account_id, platform, kind.sites[0])
            connected[connection.id] = platform
            assert await marketplaces.start_first_pull(rt, session, connection) is None  # one at a time
    mirrors = [job for job in await jobs_of(rt, account_id) if job.type == JobType.LISTING_MIRROR]
    assert sorted(job.marketplace_id for job in mirrors) == sorted(connected)  # one each, queued at once

    await Worker(rt).drain()
    async with rt.db.read() as session:
        pulled = {c.platform: c.last_pull_status for c in await marketplaces.list_all(session, account_id)}
    assert pulled == dict.fromkeys(SANDBOX_KINDS, "Completed")


async def test_consent_in_the_app_starts_the_first_pull_and_the_page_words_its_states(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api)
    owner = await signed_in(api, await make_person(rt, tenant.account_id))
    started = await owner.post("/app/marketplaces", {"platform": "P3", "country": "US"})
    marketplace_id = started.headers["location"].split("/")[3]
    assert [job.type for job in await jobs_of(rt, tenant.account_id)] == []  # nothing before consent
    assert (await owner.post(f"/app/marketplaces/{marketplace_id}/consent", {"decision": "allow"})).status_code == 303
    assert JobType.LISTING_MIRROR in [job.type for job in await jobs_of(rt, tenant.account_id)]

    def pull_cell(html: str) -> str:
        found = re.search(
            rf'<td data-label="Last listing pull" id="marketplace-{marketplace_id}-pull">(.*?)</td>', html, re.S
        )
        assert found is not None, html[:3000]
        return " ".join(found.group(1).split())

    waiting = (await owner.page("/app/marketplaces")).text
    assert pull_cell(waiting) == "Not pulled yet: the first pull starts now" and "NeverRun" not in waiting
    await Worker(rt).drain()
    done = (await owner.page("/app/marketplaces")).text
    assert pull_cell(done) == '<span class="ok">Done</span>: 0 listings at the marketplace'
    await owner.client.aclose()
