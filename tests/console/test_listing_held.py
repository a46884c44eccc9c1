"""Decision 0400: a listing's page tells before saving what its category needs (attributes, images, policies); a
save that leaves any of it unfilled publishes nothing (the marketplace would reject it, taking a Live listing
down) and is held, said so; attributes, images and policies are saved and republished in one step."""

from __future__ import annotations

import re

import httpx
from sqlalchemy import select

from marketsync.catalog.listings import rules
from marketsync.models import Job, Listing
from marketsync.models.sandbox import SandboxListing
from marketsync.runtime import Runtime
from tests.catalog.support import anchor_id, create, create_payload, load_taxonomies, run_jobs
from tests.console.support import Browser, make_person, signed_in
from tests.support.factories import Tenant, make_tenant

SHIRT = {
    "attribute_Title": "Plain tee",
    "attribute_Brand": "Northwind",
    "attribute_Condition": "NEW",
    "attribute_Size": "M",
    "attribute_Colour": "BLACK",
}


async def _live_p1_listing_without_category(rt: Runtime, api: httpx.AsyncClient) -> tuple[Tenant, str]:
    await load_taxonomies(rt, ("P1",))
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    created = await create(api, tenant, {"Sku": "TEE-P1", "Quantity": 3, "MarketplaceId": tenant.marketplace("P1").id})
    assert created.status_code == 200, created.text
    await run_jobs(rt)
    listing = await _listing(rt, tenant.account_id)
    assert listing.status == "Live" and listing.category_id is None
    return tenant, listing.id


async def _listing(rt: Runtime, account_id: str) -> Listing:
    async with rt.db.read() as session:
        [listing] = (await session.execute(select(Listing).where(Listing.account_id == account_id))).scalars()
    return listing


async def _job_ids(rt: Runtime, account_id: str) -> set[str]:
    async with rt.db.read() as session:
        return set((await session.execute(select(Job.id).where(Job.account_id == account_id))).scalars())


def _view_of(html: str) -> str:
    found = re.search(r'name="view" value="([^"]+)"', html)
    assert found is not None, html[:2000]
    return found.group(1)


async def _save(person: Browser, listing_id: str, category: str, data: dict[str, str]) -> httpx.Response:
    page = await person.page(f"/app/listings/{listing_id}?category={category}")
    form = {"category": category, "view": _view_of(page.text), **data}
    return await person.post(f"/app/listings/{listing_id}/attributes", form, csrf_from=f"/app/listings/{listing_id}")


async def test_a_live_listing_stays_live_until_its_new_category_has_everything_then_goes_out_in_one_step(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """The audit's major finding: saving T-Shirts and its attributes on a Live P1 listing published it without the
    images the category needs; the marketplace rejected it ("Missing Images") while the page said "nothing"."""
    tenant, listing_id = await _live_p1_listing_without_category(rt, api)
    shirts = anchor_id("P1", "T-Shirts")
    owner = await signed_in(api, await make_person(rt, tenant.account_id))

    # Before saving: what the chosen category needs, beside the attributes; the images field is in the same form.
    chosen = await owner.page(f"/app/listings/{listing_id}?category={shirts}")
    assert re.search(r'<dd id="listing-needs">images — <span class="bad">missing: images</span>', chosen.text)
    needs = re.search(r'<p id="category-needs">(.*?)</p>', chosen.text, re.S)
    assert needs is not None and "marked (required), and images" in needs.group(1)
    form = chosen.text[chosen.text.index('id="listing-form"') :]
    assert form.index('id="images"') < form.index("</form>")  # one form, one step
    assert "(required in this category)" in form

    # Saved without images: nothing is sent, the listing stays Live as it is, and the page says why.
    jobs_before = await _job_ids(rt, tenant.account_id)
    held = await _save(owner, listing_id, shirts, SHIRT)
    assert held.status_code == 303 and held.headers["location"] == f"/app/listings/{listing_id}?saved=held"
    assert await _job_ids(rt, tenant.account_id) == jobs_before
    listing = await _listing(rt, tenant.account_id)
    assert listing.status == "Live" and listing.category_id is None and listing.attributes == {}
    assert (listing.app_fields or {})["Held"]["CategoryId"] == shirts
    shown = await owner.page(held.headers["location"])
    notice = re.search(r'<p class="card bad" role="status" id="listing-held">(.*?)</p>', shown.text, re.S)
    assert notice is not None and "Saved, not published yet" in notice.group(1)
    assert "until images are filled in" in notice.group(1) and "stays Live" in notice.group(1)
    assert 'value="Plain tee"' in shown.text and _view_of(shown.text)  # the held values, in the held category
    await run_jobs(rt)
    assert (await _listing(rt, tenant.account_id)).status == "Live"

    # A bad image line refuses the whole form: nothing held changes, nothing is sent.
    refused = await _save(owner, listing_id, shirts, {**SHIRT, "images": "http://plain.example.com/tee.jpg"})
    assert refused.status_code == 400 and 'id="error-Images[0]"' in refused.text
    assert await _job_ids(rt, tenant.account_id) == jobs_before

    # The images filled in, the rest as held: saved and republished together, once.
    done = await _save(owner, listing_id, shirts, {"images": "https://img.example.com/tee.jpg", "policy_Return": ""})
    assert done.status_code == 303 and "?republished=" in done.headers["location"], done.text
    assert len(await _job_ids(rt, tenant.account_id) - jobs_before) == 1
    await run_jobs(rt)
    listing = await _listing(rt, tenant.account_id)
    assert listing.status == "Live" and listing.category_id == shirts and listing.last_error is None
    assert listing.attributes["Title"] == "Plain tee" and "Held" not in (listing.app_fields or {})
    assert (listing.app_fields or {})["Images"] == ["https://img.example.com/tee.jpg"]
    async with rt.db.read() as session:
        at_marketplace = (
            await session.execute(select(SandboxListing).where(SandboxListing.sku == "TEE-P1"))
        ).scalar_one()
    assert at_marketplace.category_id == shirts
    page = await owner.page(f"/app/listings/{listing_id}")
    assert 'id="listing-held"' not in page.text and "missing:" not in page.text
    await owner.client.aclose()


async def test_attributes_and_images_saved_together_from_the_start_publish_at_once(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant, listing_id = await _live_p1_listing_without_category(rt, api)
    shirts = anchor_id("P1", "T-Shirts")
    staff = await signed_in(api, await make_person(rt, tenant.account_id, "Staff"))
    saved = await _save(staff, listing_id, shirts, {**SHIRT, "images": "https://img.example.com/a.jpg\n\n"})
    assert saved.status_code == 303 and "?republished=" in saved.headers["location"]
    await run_jobs(rt)
    listing = await _listing(rt, tenant.account_id)
    assert listing.status == "Live" and listing.category_id == shirts
    await staff.client.aclose()


async def _rejected_tee(rt: Runtime, api: httpx.AsyncClient) -> tuple[Tenant, Listing]:
    await load_taxonomies(rt, ("P2",))
    tenant = await make_tenant(rt, api, marketplaces=(("P2", "DE"),))
    created = await create(api, tenant, await create_payload(api, tenant, "P2", "T-Shirts", "TEE-APP"))
    assert created.status_code == 200
    await run_jobs(rt)
    listing = await _listing(rt, tenant.account_id)
    assert listing.status == "Rejected"
    return tenant, listing


async def test_images_and_policies_saved_without_what_the_category_needs_are_kept_and_nothing_is_sent(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant, listing = await _rejected_tee(rt, api)
    owner = await signed_in(api, await make_person(rt, tenant.account_id))
    jobs_before = await _job_ids(rt, tenant.account_id)
    kept = await owner.post(
        f"/app/listings/{listing.id}", {"policy_Return": "RET-30"}, csrf_from=f"/app/listings/{listing.id}"
    )
    assert kept.status_code == 303 and kept.headers["location"] == f"/app/listings/{listing.id}?saved=held"
    assert await _job_ids(rt, tenant.account_id) == jobs_before
    stored = await _listing(rt, tenant.account_id)
    assert stored.status == "Rejected" and (stored.app_fields or {})["BusinessPolicy"] == {"Return": "RET-30"}
    shown = await owner.page(kept.headers["location"])
    assert "Saved, not sent to the marketplace: this category still needs images" in shown.text
    assert 'value="RET-30"' in shown.text
    await owner.client.aclose()


async def test_a_rejected_listing_says_it_is_completed_on_its_page_here_and_links_it(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant, listing = await _rejected_tee(rt, api)
    assert "seller tools" in (listing.last_error or "")  # what the marketplace says, shown as it says it
    owner = await signed_in(api, await make_person(rt, tenant.account_id))
    product = await owner.page("/app/product?sku=TEE-APP")
    link = re.search(rf'<a href="/app/listings/{listing.id}" id="listing-{listing.id}-fix">([^<]+)</a>', product.text)
    assert link is not None and "listing page here" in link.group(1)
    page = await owner.page(f"/app/listings/{listing.id}")
    fix = re.search(r'<dd id="listing-fix">(.*?)</dd>', page.text, re.S)
    assert fix is not None and "not in the marketplace's seller tools" in fix.group(1)
    assert 'fill in images in <a href="#app-fields">' in fix.group(1) and 'id="app-fields"' in page.text
    await owner.client.aclose()


async def test_a_failed_listing_publish_names_each_refused_listing_and_what_was_missing(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant, _ = await _rejected_tee(rt, api)
    async with rt.db.read() as session:
        [job] = (
            await session.execute(select(Job).where(Job.account_id == tenant.account_id, Job.type == "ListingPublish"))
        ).scalars()
    assert job.status == "Failed" and job.failure_reason is not None
    assert job.failure_reason.startswith("no listing published: TEE-APP: Missing Images"), job.failure_reason
    owner = await signed_in(api, await make_person(rt, tenant.account_id))
    page = await owner.page(f"/app/jobs/{job.id}")
    assert "TEE-APP: Missing Images" in page.text
    await owner.client.aclose()


def test_a_publish_failure_reason_names_a_few_listings_and_counts_the_rest() -> None:
    refused = [(f"SKU-{n}", "Missing BusinessPolicy") for n in range(7)]
    reason = rules.publish_failure_reason(refused, "")
    assert reason.startswith("no listing published: SKU-0: Missing BusinessPolicy; SKU-1: ")
    assert "SKU-4" in reason and "SKU-5" not in reason and reason.endswith("; and 2 more listing(s)")
    assert rules.publish_failure_reason([], "feed refused: bad XML") == "no listing published: feed refused: bad XML"
