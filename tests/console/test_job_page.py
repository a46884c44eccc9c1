"""A job's page in the app (docs/decisions/0311): its state, progress, result and the failure reason the API never
shows, refreshing itself while the job runs; the jobs list finds a job by its JobId; an unknown or another
account's JobId is the app's 404 page."""

from __future__ import annotations

import html
import re

import httpx
from sqlalchemy import update

from marketsync.db._fast import DriverSql
from marketsync.jobs import registry
from marketsync.jobs import service as jobs_service
from marketsync.jobs.run import JobRun
from marketsync.jobs.types import JobPayload, PriceStockPushPayload
from marketsync.jobs.worker import Worker
from marketsync.models import Job
from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.inventory.support import add_products
from tests.support.factories import make_account, make_tenant
from tests.support.plans import plan_of

REASON = "the marketplace refused the feed: currency mismatch"


class JobPageExplodes(JobPayload):
    job_type = "Test.JobPageExplodes"


async def _enqueue(rt: Runtime, account_id: str, payload: JobPayload, progress_total: int | None = None) -> str:
    async with rt.db.transaction() as session:
        return jobs_service.enqueue(session, rt.clock.now(), account_id, payload, progress_total=progress_total).id


async def test_a_failed_jobs_page_shows_its_state_result_and_the_reason_the_api_omits(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    @registry.task(JobPageExplodes.job_type)
    async def explodes(_rt: Runtime, _job: JobRun) -> None:
        raise RuntimeError(REASON)

    tenant = await make_tenant(rt, api)
    job_id = await _enqueue(rt, tenant.account_id, JobPageExplodes())
    await Worker(rt).drain()
    staff = await signed_in(api, await make_person(rt, tenant.account_id, "Staff"))
    listed = await staff.page("/app/jobs")
    assert f'href="/app/jobs/{job_id}"' in listed.text and 'id="find"' in listed.text

    shown = await staff.page(f"/app/jobs/{job_id}")
    assert shown.status_code == 200
    assert '<dd id="job-status">Failed</dd>' in shown.text and "Test.JobPageExplodes" in shown.text  # no words known
    assert 'id="job-result"' in shown.text and ">Failed</span>" in shown.text
    assert f'<dd id="job-failure-reason" class="bad">RuntimeError: {REASON}</dd>' in shown.text
    assert "hx-get" not in shown.text  # complete: no more refreshing
    from_api = await api.get(f"/api/jobs/{job_id}", headers=tenant.headers)
    assert from_api.json()["Status"] == "Failed" and REASON not in from_api.text  # the app's only
    await staff.client.aclose()


async def test_a_running_jobs_page_shows_its_progress_and_refreshes_until_it_ends(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    marketplace = tenant.marketplace("P1")
    job_id = await _enqueue(
        rt, tenant.account_id, PriceStockPushPayload(MarketplaceId=marketplace.id, AllListings=True), 10
    )
    async with rt.db.transaction() as session:
        await session.execute(update(Job).where(Job.id == job_id).values(status="InProcess", progress_done=4))
    owner = await signed_in(api, await make_person(rt, tenant.account_id))
    shown = await owner.page(f"/app/jobs/{job_id}")
    assert '<dd id="job-status">Running</dd>' in shown.text and "4 of 10" in shown.text
    assert "Not finished yet" in shown.text and f'hx-get="/app/jobs/{job_id}"' in shown.text
    assert "P1 UK" in shown.text and "full resync" in shown.text
    partial = await owner.client.get(f"/app/jobs/{job_id}", headers={"HX-Request": "true"})
    assert partial.text.lstrip().startswith("<section") and "<html" not in partial.text  # the live part alone

    async with rt.db.transaction() as session:
        await session.execute(update(Job).where(Job.id == job_id).values(status="Completed", progress_done=10))
    done = await owner.client.get(f"/app/jobs/{job_id}", headers={"HX-Request": "true"})
    assert "10 of 10" in done.text and ">Succeeded</span>" in done.text and "hx-get" not in done.text
    assert "failure-reason" not in done.text
    await owner.client.aclose()


async def test_the_find_box_opens_a_job_and_an_unknown_or_other_accounts_job_is_the_apps_404(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    mine = await make_account(rt)
    my_job = await _enqueue(rt, mine, JobPageExplodes())
    their_job = await _enqueue(rt, await make_account(rt), JobPageExplodes())
    me = await signed_in(api, await make_person(rt, mine))

    found = await me.client.get("/app/jobs", params={"find": f"  {my_job} "})
    assert found.status_code == 303 and found.headers["location"] == f"/app/jobs/{my_job}"
    assert (await me.page(found.headers["location"])).status_code == 200
    empty = await me.client.get("/app/jobs", params={"find": "  "})
    assert empty.status_code == 400 and 'id="error-JobId"' in empty.text

    unknown = await me.page("/app/jobs/01ABCDEFGHJKMNPQRSTVWXYZ00")
    theirs = await me.page(f"/app/jobs/{their_job}")
    assert unknown.status_code == theirs.status_code == 404
    assert theirs.text == unknown.text and their_job not in theirs.text  # nothing tells the two apart
    assert 'role="alert"' in theirs.text and theirs.headers["content-type"].startswith("text/html")
    odd = await me.client.get("/app/jobs", params={"find": "a/b?c#d"})
    assert odd.headers["location"] == "/app/jobs/a%2Fb%3Fc%23d"  # one path segment, never another page
    # An id with a slash is answered as an id, never the generic "No such page." (the route once stopped at "/").
    for shown in (await me.page(odd.headers["location"]), await me.page("/app/jobs/abc/def")):
        assert shown.status_code == 404 and "No job with this id." in shown.text and "No such page." not in shown.text
    assert (await me.page("/app/jobs/")).headers["location"] == "/app/jobs"
    await me.client.aclose()


async def test_the_jobs_list_finds_an_old_failure_under_recurring_work_and_pages_without_gaps(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """Sixty listing mirrors after one failed push: the latest 50 alone never showed the failure
    (docs/decisions/0331-job-list-filters.md)."""
    mine, theirs = await make_account(rt), await make_account(rt)
    failed = await _enqueue(rt, mine, JobPageExplodes())
    their_failure = await _enqueue(rt, theirs, JobPageExplodes())
    mirrors = [await _enqueue(rt, mine, JobPageExplodes()) for _ in range(60)]
    async with rt.db.transaction() as session:
        await session.execute(
            update(Job).where(Job.id.in_([failed, their_failure])).values(status="Failed", failure_reason=REASON)
        )
        await session.execute(update(Job).where(Job.id.in_(mirrors)).values(status="Completed", type="ListingMirror"))
    staff = await signed_in(api, await make_person(rt, mine, "Staff"))

    first = await staff.page("/app/jobs")
    assert failed not in first.text and first.text.count('<tr id="job-') == 50
    assert '<span class="range" id="range">1–50 of 61</span>' in first.text  # decision 0436
    older = re.search(r'href="(/app/jobs\?offset=50)" rel="next">Next</a>', first.text)
    assert older is not None
    second = await staff.page(html.unescape(older.group(1)))
    assert second.status_code == 200 and failed in second.text and 'rel="next"' not in second.text
    shown = re.findall(r'<tr id="job-([0-9A-Z]+)"', first.text + second.text)
    assert sorted(shown) == sorted([failed, *mirrors])  # every job once: no gap, no repeat across the pages

    only_failed = await staff.page("/app/jobs?status=Failed")
    assert re.findall(r'<tr id="job-([0-9A-Z]+)"', only_failed.text) == [failed]  # not another account's
    assert REASON in only_failed.text and '<option value="Failed" selected>' in only_failed.text
    mirrors_only = await staff.page("/app/jobs?status=Completed&type=ListingMirror")
    assert mirrors_only.text.count('<tr id="job-') == 50
    assert 'href="/app/jobs?status=Completed&amp;type=ListingMirror&amp;offset=50" rel="next"' in mirrors_only.text
    by_type = await staff.page("/app/jobs?sort=type")  # ListingMirror before Test.JobPageExplodes
    assert re.findall(r'<tr id="job-([0-9A-Z]+)"', by_type.text)[0] in mirrors
    assert (
        re.findall(r'<tr id="job-([0-9A-Z]+)"', (await staff.page("/app/jobs?sort=created&dir=asc")).text)[0] == failed
    )
    none = await staff.page("/app/jobs?status=Cancelled")
    assert none.status_code == 200 and "No jobs match." in none.text

    wrong = await staff.page("/app/jobs?status=Broken&type=Nope")
    assert wrong.status_code == 400 and 'id="error-Status"' in wrong.text and 'id="error-Type"' in wrong.text
    for lost in ("offset=-1", "offset=next", "sort=price", "dir=up"):
        refused = await staff.page(f"/app/jobs?{lost}")
        assert refused.status_code == 400 and f'id="error-{lost.split("=")[0]}"' in refused.text, lost
    await staff.client.aclose()


async def _failed_push(rt: Runtime, account_id: str, marketplace_id: str, product_ids: list[str]) -> str:
    async with rt.db.transaction() as session:
        job_id = await jobs_service.enqueue_price_stock_push(session, rt.clock.now(), account_id, marketplace_id, [])
        await session.execute(
            update(Job)
            .where(Job.id == job_id)
            .values(
                status="Failed",
                failure_reason=REASON,
                payload=PriceStockPushPayload(MarketplaceId=marketplace_id, ProductIds=product_ids).stored(),
            )
        )
    return job_id


async def test_a_failed_push_is_pushed_again_from_its_page_as_a_new_job_with_the_same_products(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """Saving the same values again in the app is "Unchanged" and pushes nothing: a failed push left the marketplace
    stale with no way back but pausing and resuming (docs/decisions/0332-push-again.md)."""
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    marketplace = tenant.marketplace("P1")
    products = await add_products(rt, tenant.account_id, [("MUG", "9.50", 4), ("CUP", "3.00", 1)])
    failed = await _failed_push(rt, tenant.account_id, marketplace.id, sorted(products.values()))
    staff = await signed_in(api, await make_person(rt, tenant.account_id, "Staff"))
    shown = await staff.page(f"/app/jobs/{failed}")
    assert 'id="job-push-again"' in shown.text

    refused = await staff.client.post(f"/app/jobs/{failed}/push-again", data={"csrf": "forged"})
    assert refused.status_code == 403
    pushed = await staff.post(f"/app/jobs/{failed}/push-again", csrf_from=f"/app/jobs/{failed}")
    assert pushed.status_code == 303
    again_id = pushed.headers["location"].split("?")[0].rsplit("/", 1)[1]
    assert pushed.headers["location"] == f"/app/jobs/{again_id}?again={failed}" and again_id != failed
    async with rt.db.read() as session:
        again = await jobs_service.get_job(session, tenant.account_id, again_id)
        old = await jobs_service.get_job(session, tenant.account_id, failed)
        pushed_products = await jobs_service.price_stock_push_products(
            session, again.id, PriceStockPushPayload.of(again.payload)
        )
    assert again.type == "PriceStockPush" and again.status == "Published" and again.marketplace_id == marketplace.id
    assert sorted(pushed_products) == sorted(products.values())
    assert old.status == "Failed" and old.failure_reason == REASON  # history stays
    landed = await staff.page(pushed.headers["location"])
    assert 'id="notice"' in landed.text and f'href="/app/jobs/{failed}"' in landed.text
    assert 'id="job-push-again"' not in landed.text  # the new job is queued, not failed
    await staff.client.aclose()


async def test_push_again_is_refused_for_a_paused_marketplace_another_job_type_and_another_account(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    marketplace = tenant.marketplace("P1")
    products = await add_products(rt, tenant.account_id, [("MUG", "9.50", 4)])
    failed = await _failed_push(rt, tenant.account_id, marketplace.id, list(products.values()))
    exploded = await _enqueue(rt, tenant.account_id, JobPageExplodes())
    async with rt.db.transaction() as session:
        await session.execute(update(Job).where(Job.id == exploded).values(status="Failed"))
    owner = await signed_in(api, await make_person(rt, tenant.account_id))
    other = await signed_in(api, await make_person(rt, await make_account(rt)))

    assert 'id="job-push-again"' not in (await owner.page(f"/app/jobs/{exploded}")).text
    wrong_type = await owner.post(f"/app/jobs/{exploded}/push-again", csrf_from=f"/app/jobs/{exploded}")
    assert wrong_type.status_code == 409 and "Only a price and stock push" in wrong_type.text
    theirs = await other.post(f"/app/jobs/{failed}/push-again", csrf_from="/app/jobs")
    assert theirs.status_code == 404

    assert (await owner.post(f"/app/marketplaces/{marketplace.id}/pause")).status_code == 303
    paused = await owner.post(f"/app/jobs/{failed}/push-again", csrf_from=f"/app/jobs/{failed}")
    assert paused.status_code == 409 and "P1 UK is paused; resume it" in paused.text
    assert 'role="alert"' in paused.text and f"Job {failed}" in paused.text  # the job's page, with why
    async with rt.db.read() as session:
        listed = await jobs_service.recent_jobs(session, tenant.account_id, job_type="PriceStockPush")
    assert [job.id for job in listed if job.status != "Cancelled"] == [failed]  # nothing queued by the refusals
    await owner.client.aclose()
    await other.client.aclose()


async def test_the_jobs_list_filtered_by_status_reads_its_own_index(rt: Runtime) -> None:
    """The page of one status, newest first (jobs.repository.recent with a status), is one range of
    ix_jobs_account_status (migration 0029): with (account_id, created_at) alone, "Failed" read every job the
    account kept to find a few."""
    sql = DriverSql(not rt.db.is_sqlite)
    query = (
        f"SELECT id FROM jobs WHERE account_id = {sql.bind('A')} AND status = {sql.bind('Failed')} "
        "ORDER BY created_at DESC, id DESC LIMIT 50"
    )
    plan = await plan_of(rt, query, sql.params)
    assert "ix_jobs_account_status" in plan, plan
    assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan  # the index's order is the page's
