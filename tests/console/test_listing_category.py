"""A P1 listing created through the API without a category (spec: create rule 5) gets its category and attribute
values in the app: the category search, the category's schema as a form, the API create's validation, one republish."""

from __future__ import annotations

import re
from typing import Any

import httpx
from sqlalchemy import select

from marketsync.models import Job, Listing
from marketsync.models.sandbox import SandboxListing
from marketsync.runtime import Runtime
from tests.catalog.support import anchor_id, create, load_taxonomies, run_jobs, schema
from tests.console.support import Browser, make_person, signed_in
from tests.support.factories import Tenant, make_account, make_tenant

PHONE = {
    "attribute_Title": "Acme Phone 12",
    "attribute_Brand": "Acme",
    "attribute_Condition": "NEW",
    "attribute_Model": "AP-12",
    "attribute_StorageCapacityGb": "128",
    "attribute_ScreenSizeIn": "6.10",
    "attribute_ReleaseDate": "2024-09-01",
    "attribute_BatteriesIncluded": "true",
    "attribute_PromotionRate": "5",  # app-managed: the API refuses it, the app sets it
}


async def _p1_listing_without_category(rt: Runtime, api: httpx.AsyncClient) -> tuple[Tenant, str]:
    await load_taxonomies(rt, ("P1",))
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    created = await create(
        api, tenant, {"Sku": "PHONE-P1", "Quantity": 3, "MarketplaceId": tenant.marketplace("P1").id}
    )
    assert created.status_code == 200, created.text
    await run_jobs(rt)
    listing = await _listing(rt, tenant.account_id)
    assert listing.category_id is None and listing.attributes == {} and listing.product_type_view_id is None
    return tenant, listing.id


async def _listing(rt: Runtime, account_id: str) -> Listing:
    async with rt.db.read() as session:
        [listing] = (await session.execute(select(Listing).where(Listing.account_id == account_id))).scalars()
    return listing


async def _jobs(rt: Runtime, account_id: str) -> list[tuple[str, str]]:
    async with rt.db.read() as session:
        rows = await session.execute(select(Job.id, Job.type).where(Job.account_id == account_id))
        return [(job_id, job_type) for job_id, job_type in rows.all()]


async def _save(person: Browser, listing_id: str, category: str, view: str, values: dict[str, str]) -> httpx.Response:
    page = f"/app/listings/{listing_id}?category={category}"
    return await person.post(
        f"/app/listings/{listing_id}/attributes", {"category": category, "view": view, **values}, csrf_from=page
    )


def _view_of(html: str) -> str:
    found = re.search(r'name="view" value="([^"]+)"', html)
    assert found is not None, html[:2000]
    return found.group(1)


async def test_a_p1_listing_gets_its_category_and_attributes_in_the_app(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant, listing_id = await _p1_listing_without_category(rt, api)
    phones = anchor_id("P1", "Smartphones")
    owner = await signed_in(api, await make_person(rt, tenant.account_id))

    # No category: the page offers the category search.
    plain = await owner.page(f"/app/listings/{listing_id}")
    assert plain.status_code == 200
    assert '<dd id="listing-category">none yet</dd>' in plain.text and 'id="q"' in plain.text
    assert 'action="/app/listings/' + listing_id + '/attributes"' not in plain.text  # no schema form before a choice

    # The search is the API's: the same leaves, paged.
    found = await owner.page(f"/app/listings/{listing_id}?q=smartphones")
    api_found = await api.post(
        "/api/product-types/Search",
        json={"MarketplaceId": tenant.marketplace("P1").id, "SearchText": "smartphones", "Limit": 20},
        headers=tenant.headers,
    )
    for category in api_found.json()["ProductTypes"]:
        assert f"?category={category['CategoryId']}" in found.text
    assert f"?category={phones}" in found.text
    walk = await owner.page(f"/app/listings/{listing_id}?q=")
    total = (await api.post(
        "/api/product-types/Search", json={"MarketplaceId": tenant.marketplace("P1").id}, headers=tenant.headers
    )).json()["TotalCount"]  # fmt: skip
    assert f"Categories 1–20 of {total}" in walk.text and 'id="categories-next"' in walk.text
    second = await owner.page(f"/app/listings/{listing_id}?q=&offset=20")
    assert f"Categories 21–40 of {total}" in second.text and 'id="categories-previous"' in second.text

    # Choosing one shows its whole schema: API-settable and app-managed attributes, required marked, closed sets.
    chosen = await owner.page(f"/app/listings/{listing_id}?category={phones}")
    api_schema = await schema(api, tenant, "P1", phones)
    view = _view_of(chosen.text)
    assert view == api_schema["ProductTypeViewId"]
    for attribute in api_schema["Attributes"]:
        assert f'id="attribute_{attribute["Code"]}"' in chosen.text
    assert 'id="attribute_PromotionRate"' in chosen.text and "set only in the app" in chosen.text
    assert re.search(r'for="attribute_Title">Title <span class="required">\(required\)</span>', chosen.text)
    assert (
        '<select id="attribute_StorageCapacityGb"' in chosen.text
        and '<option value="512">512 GB</option>' in chosen.text
    )
    assert '<select id="attribute_BatteriesIncluded"' in chosen.text
    assert 'list="values_Brand"' in chosen.text  # a custom-values attribute: suggestions and free text

    # A bad submission: every bad field named beside it, what was typed kept, nothing stored, no job.
    jobs_before = await _jobs(rt, tenant.account_id)
    refused = await _save(
        owner,
        listing_id,
        phones,
        view,
        {
            **PHONE,
            "attribute_Title": "",
            "attribute_StorageCapacityGb": "100",
            "attribute_ScreenSizeIn": "6,1",
            "attribute_ReleaseDate": "2024-13-01",
            "attribute_BatteryLifeHours": "ten",
        },
    )
    assert refused.status_code == 400
    for code in ("Title", "StorageCapacityGb", "ScreenSizeIn", "ReleaseDate", "BatteryLifeHours"):
        assert f'id="error-Attributes.{code}"' in refused.text, code
    assert 'id="error-Attributes.Title" role="alert">Required.' in refused.text
    assert 'value="6,1"' in refused.text and 'value="2024-13-01"' in refused.text and 'value="ten"' in refused.text
    assert '<option value="100" selected>100</option>' in refused.text and 'value="Acme Phone 12"' not in refused.text
    assert 'value="AP-12"' in refused.text
    listing = await _listing(rt, tenant.account_id)
    assert listing.category_id is None and listing.attributes == {} and not (listing.app_fields or {}).get("Attributes")
    assert await _jobs(rt, tenant.account_id) == jobs_before

    # A good one: the category (with the schema endpoint's view id), the values, exactly one publish job.
    saved = await _save(owner, listing_id, phones, view, PHONE)
    assert saved.status_code == 303, saved.text
    new_jobs = [job for job in await _jobs(rt, tenant.account_id) if job not in jobs_before]
    assert [job_type for _, job_type in new_jobs] == ["ListingPublish"]
    assert saved.headers["location"] == f"/app/listings/{listing_id}?republished={new_jobs[0][0]}"
    listing = await _listing(rt, tenant.account_id)
    assert listing.category_id == phones and listing.product_type_view_id == api_schema["ProductTypeViewId"]
    assert listing.attributes == {
        "Title": "Acme Phone 12",
        "Brand": "ACME",  # a suggestion's own code, as the API stores it
        "Condition": "NEW",
        "Model": "AP-12",
        "StorageCapacityGb": 128,
        "ScreenSizeIn": "6.1",
        "ReleaseDate": "2024-09-01",
        "BatteriesIncluded": True,
    }
    assert (listing.app_fields or {})["Attributes"] == {"PromotionRate": "5"}
    assert listing.status == "Pending" and listing.journey_id == new_jobs[0][0]

    # The worker publishes it; the sandbox P1 marketplace accepts it with its category and attributes.
    await run_jobs(rt)
    shown = await owner.page(f"/app/listings/{listing_id}")
    assert '<dd id="listing-status">Live</dd>' in shown.text
    assert "Electronics &gt; Mobile Phones &gt; Phones &gt; Smartphones" in shown.text and 'id="q"' not in shown.text
    assert 'value="Acme Phone 12"' in shown.text and '<option value="128" selected>' in shown.text
    assert 'value="5"' in shown.text  # the app-managed value
    async with rt.db.read() as session:
        at_marketplace = (
            await session.execute(select(SandboxListing).where(SandboxListing.sku == "PHONE-P1"))
        ).scalar_one()
    assert at_marketplace.category_id == phones
    assert at_marketplace.attributes["Model"] == "AP-12" and at_marketplace.attributes["PromotionRate"] == "5"

    # Later edits are partial updates: values held count as present; a bad one still refuses the whole form.
    jobs_before = await _jobs(rt, tenant.account_id)
    refused = await _save(
        owner, listing_id, phones, view, {"attribute_Brand": "Northwind Hardware", "attribute_Model": ""}
    )
    assert refused.status_code == 400 and 'id="error-Attributes.Model"' in refused.text
    assert 'value="Northwind Hardware"' in refused.text
    assert (await _listing(rt, tenant.account_id)).attributes["Brand"] == "ACME"
    assert await _jobs(rt, tenant.account_id) == jobs_before
    edited = await _save(
        owner, listing_id, phones, view, {"attribute_Brand": "Northwind Hardware", "attribute_Colour": "blue"}
    )
    assert edited.status_code == 303
    assert len(await _jobs(rt, tenant.account_id)) == len(jobs_before) + 1
    listing = await _listing(rt, tenant.account_id)
    assert listing.attributes["Brand"] == "Northwind Hardware" and listing.attributes["Colour"] == "BLUE"
    assert listing.attributes["Title"] == "Acme Phone 12" and listing.attributes["StorageCapacityGb"] == 128
    assert (listing.app_fields or {})["Attributes"] == {"PromotionRate": "5"}
    await run_jobs(rt)
    assert '<dd id="listing-status">Live</dd>' in (await owner.page(f"/app/listings/{listing_id}")).text
    await owner.client.aclose()


async def test_staff_may_choose_a_category_and_another_account_may_not(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant, listing_id = await _p1_listing_without_category(rt, api)
    phones = anchor_id("P1", "Smartphones")
    staff = await signed_in(api, await make_person(rt, tenant.account_id, role="Staff"))
    view = _view_of((await staff.page(f"/app/listings/{listing_id}?category={phones}")).text)

    stranger = await signed_in(api, await make_person(rt, await make_account(rt)))
    assert (await stranger.page(f"/app/listings/{listing_id}?category={phones}")).status_code == 404
    assert (await stranger.page(f"/app/listings/{listing_id}?q=phone")).status_code == 404
    refused = await stranger.post(f"/app/listings/{listing_id}/attributes", {"category": phones, "view": view, **PHONE})
    assert refused.status_code == 404
    assert (await _listing(rt, tenant.account_id)).category_id is None

    assert (await _save(staff, listing_id, phones, view, PHONE)).status_code == 303
    assert (await _listing(rt, tenant.account_id)).category_id == phones
    await staff.client.aclose()
    await stranger.client.aclose()


async def test_a_category_that_is_not_a_leaf_of_this_marketplace_is_named_beside_the_category(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant, listing_id = await _p1_listing_without_category(rt, api)
    owner = await signed_in(api, await make_person(rt, tenant.account_id))
    unknown = await owner.page(f"/app/listings/{listing_id}?category=999")
    assert (
        unknown.status_code == 200 and 'id="error-CategoryId"' in unknown.text and "attribute_Title" not in unknown.text
    )
    phones = anchor_id("P1", "Smartphones")
    view = _view_of((await owner.page(f"/app/listings/{listing_id}?category={phones}")).text)
    jobs_before = await _jobs(rt, tenant.account_id)
    posted: dict[str, Any] = {**PHONE}
    stale = await _save(owner, listing_id, "999", view, posted)
    assert stale.status_code == 400 and 'id="error-CategoryId"' in stale.text
    assert "999 is not a category of P1 UK" in stale.text
    assert await _jobs(rt, tenant.account_id) == jobs_before
    assert (await _listing(rt, tenant.account_id)).category_id is None
    await owner.client.aclose()


async def test_a_listing_that_has_a_category_keeps_it_whatever_the_address_or_the_form_says(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """Decision 0345: the page edits the values of the category a listing holds; an address or a form naming another
    category once showed and saved it, moving a live listing."""
    tenant, listing_id = await _p1_listing_without_category(rt, api)
    phones, laptops = anchor_id("P1", "Smartphones"), anchor_id("P1", "Laptops")
    owner = await signed_in(api, await make_person(rt, tenant.account_id))
    view = _view_of((await owner.page(f"/app/listings/{listing_id}?category={phones}")).text)
    assert (await _save(owner, listing_id, phones, view, PHONE)).status_code == 303
    jobs_before = await _jobs(rt, tenant.account_id)

    other = await owner.page(f"/app/listings/{listing_id}?category={laptops}")
    assert other.status_code == 200 and _view_of(other.text) == view and 'value="Acme Phone 12"' in other.text
    moved = await _save(owner, listing_id, laptops, view, PHONE)
    assert moved.status_code == 400 and 'id="error-CategoryId"' in moved.text and "it stays" in moved.text
    assert (await _listing(rt, tenant.account_id)).category_id == phones
    assert await _jobs(rt, tenant.account_id) == jobs_before
    await owner.client.aclose()
