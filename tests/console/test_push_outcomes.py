"""Decision 0402: after a hand edit, the product page shows each marketplace push's outcome as it arrives (it
refreshes itself until every push has ended), not "the marketplaces are updated"; a push job's page says what
really reached the marketplace, never "1 pushed" beside a failure."""

from __future__ import annotations

import asyncio
import re
from urllib.parse import parse_qs, urlsplit

import httpx
from sqlalchemy import select

from marketsync.marketplaces import service as marketplaces
from marketsync.models import Job
from marketsync.runtime import Runtime
from tests.catalog.support import create, create_payload, load_taxonomies, run_jobs
from tests.console.support import Browser, make_person, signed_in
from tests.inventory.support import add_products
from tests.marketplaces import support as marketplace_support
from tests.support.factories import Tenant, make_account, make_tenant


async def _listed_on_p1_and_p2(rt: Runtime, api: httpx.AsyncClient) -> Tenant:
    await load_taxonomies(rt, ("P1", "P2"))
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P2", "DE")))
    for platform in ("P1", "P2"):
        created = await create(api, tenant, await create_payload(api, tenant, platform, "Smartphones", "PHONE-1"))
        assert created.status_code == 200, created.text
    await run_jobs(rt)
    async with rt.db.read() as session:
        p2 = await marketplaces.get(session, tenant.account_id, tenant.marketplace("P2").id)
    await marketplace_support.update_seller(rt, p2, feed_fault="reject")  # P2 DE refuses the next feed whole
    return tenant


async def _until_ended(rt: Runtime, job_ids: list[str]) -> None:
    """The worker run until these jobs have ended (a busy machine may take more than one drain)."""
    for _ in range(30):
        await run_jobs(rt)
        async with rt.db.read() as session:
            statuses = set((await session.execute(select(Job.status).where(Job.id.in_(job_ids)))).scalars())
        if statuses <= {"Completed", "Failed", "Cancelled"}:
            return
        await asyncio.sleep(0.5)
    raise AssertionError(f"jobs still open: {statuses}")


async def _edit(person: Browser, sku: str, **values: str) -> httpx.Response:
    page = (await person.client.get("/app/product", params={"sku": sku})).text
    token = re.search(r'name="csrf" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    return await person.client.post("/app/product", params={"sku": sku}, data={"csrf": token, **values})


def _outcome(html: str, job_id: str) -> str:
    found = re.search(rf'<li id="push-{job_id}">(.*?)</li>', html, re.S)
    assert found is not None, html[:3000]
    return " ".join(found.group(1).split())


async def test_each_pushs_outcome_shows_on_the_product_page_as_it_arrives(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await _listed_on_p1_and_p2(rt, api)
    person = await signed_in(api, await make_person(rt, tenant.account_id, "Staff"))
    posted = await _edit(person, "PHONE-1", price="21.50")
    assert posted.status_code == 303
    job_ids = parse_qs(urlsplit(posted.headers["location"]).query)["jobs"][0].split(",")
    async with rt.db.read() as session:
        pushes = {
            job.marketplace_id: job.id
            for job in (await session.execute(select(Job).where(Job.id.in_(job_ids)))).scalars()
        }
    p1, p2 = pushes[tenant.marketplace("P1").id], pushes[tenant.marketplace("P2").id]

    shown = await person.page(posted.headers["location"])
    assert "each one's outcome shows below as it arrives" in shown.text and "are updated" not in shown.text
    assert 'hx-get="/app/product?' in shown.text  # refreshes itself while a push runs
    assert _outcome(shown.text, p1).startswith("P1 UK: sending…") and _outcome(shown.text, p2).startswith("P2 DE:")

    await _until_ended(rt, [p1, p2])
    partial = await person.client.get(posted.headers["location"], headers={"HX-Request": "true"})
    assert partial.text.lstrip().startswith('<section id="push-outcomes"') and "<html" not in partial.text
    assert _outcome(partial.text, p1).startswith('P1 UK: <span class="ok">updated</span>')
    failed = _outcome(partial.text, p2)
    assert failed.startswith('P2 DE: <span class="bad">not updated</span>: feed') and "rejected" in failed
    assert f'href="/app/jobs/{p2}"' in failed and "hx-get" not in partial.text  # every push ended: no more polls

    # The failed push's own page says nothing reached the marketplace, never "1 pushed".
    job_page = (await person.page(f"/app/jobs/{p2}")).text
    products = re.search(r'<dd id="job-products">(.*?)</dd>', job_page, re.S)
    assert products is not None and "1 product: none reached the marketplace" in " ".join(products.group(1).split())
    assert "pushed" not in products.group(1) and '<dd id="job-type">Price and stock push</dd>' in job_page
    done = re.search(r'<dd id="job-products">(.*?)</dd>', (await person.page(f"/app/jobs/{p1}")).text, re.S)
    assert done is not None and "the marketplace took 1 of 1 change" in done.group(1)
    await person.client.aclose()


async def test_another_accounts_job_ids_in_the_address_show_nothing(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await _listed_on_p1_and_p2(rt, api)
    owner = await signed_in(api, await make_person(rt, tenant.account_id))
    location = (await _edit(owner, "PHONE-1", quantity="2")).headers["location"]
    other = await make_account(rt)
    await add_products(rt, other, [("PHONE-1", "1.00", 1)])
    stranger = await signed_in(api, await make_person(rt, other))
    shown = await stranger.page(location)
    assert shown.status_code == 200 and 'id="push-outcomes"' not in shown.text and "P2 DE" not in shown.text
    bad = await owner.page(location.replace("jobs=", "jobs=%3Cb%3E,"))  # not an id: left out
    assert bad.status_code == 200 and "&lt;b&gt;" not in bad.text and "<b>" not in bad.text
    await owner.client.aclose()
    await stranger.client.aclose()
