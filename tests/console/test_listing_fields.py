"""A listing warned about what the API cannot carry (images) goes live once a person fills it in the app."""

from __future__ import annotations

import re

import httpx
from sqlalchemy import select

from marketsync.models import Listing
from marketsync.runtime import Runtime
from tests.catalog.support import create, create_payload, load_taxonomies, run_jobs
from tests.console.support import make_person, signed_in
from tests.support.factories import make_tenant


async def _rejected_tee(rt: Runtime, api: httpx.AsyncClient) -> tuple[str, str]:
    await load_taxonomies(rt, ("P2",))
    tenant = await make_tenant(rt, api, marketplaces=(("P2", "DE"),))
    created = await create(api, tenant, await create_payload(api, tenant, "P2", "T-Shirts", "TEE-APP"))
    assert created.status_code == 200 and created.json()["Warnings"]
    await run_jobs(rt)
    async with rt.db.read() as session:
        [listing] = (await session.execute(select(Listing).where(Listing.account_id == tenant.account_id))).scalars()
    assert listing.status == "Rejected" and "Images" in (listing.last_error or "")
    return tenant.account_id, listing.id


async def test_filling_images_in_the_app_makes_the_listing_go_live(rt: Runtime, api: httpx.AsyncClient) -> None:
    account_id, listing_id = await _rejected_tee(rt, api)
    owner = await signed_in(api, await make_person(rt, account_id))
    page = await owner.page(f"/app/listings/{listing_id}")
    assert page.status_code == 200 and "missing: images" in page.text

    saved = await owner.post(
        f"/app/listings/{listing_id}",
        {"images": "https://img.example.com/tee-front.jpg\nhttps://img.example.com/tee-back.jpg"},
        csrf_from=f"/app/listings/{listing_id}",
    )
    assert saved.status_code == 303  # post/redirect/get: a reload never republishes again
    shown = await owner.page(saved.headers["location"])
    assert "republishing" in shown.text
    job_id = re.search(r"republishing \(job <code>([^<]+)</code>\)", shown.text).group(1)  # type: ignore[union-attr]
    await run_jobs(rt)

    live = await owner.page(f"/app/listings/{listing_id}")
    assert '<dd id="listing-status">Live</dd>' in live.text and "missing:" not in live.text
    async with rt.db.read() as session:
        listing = await session.get(Listing, listing_id)
    assert listing is not None and listing.listing_id and listing.journey_id is None
    assert (listing.app_fields or {})["Images"] == [
        "https://img.example.com/tee-front.jpg",
        "https://img.example.com/tee-back.jpg",
    ]
    job = await owner.page("/app/jobs")
    assert job_id in job.text
    await owner.client.aclose()


async def test_bad_fields_are_named_beside_the_field_and_nothing_is_republished(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    account_id, listing_id = await _rejected_tee(rt, api)
    owner = await signed_in(api, await make_person(rt, account_id))
    refused = await owner.post(
        f"/app/listings/{listing_id}",
        {
            "images": "http://insecure.example.com/a.jpg\nhttps://ok.example.com/b.jpg\nnot a url",
            "policy_Payment": "x" * 101,
        },
        csrf_from=f"/app/listings/{listing_id}",
    )
    assert refused.status_code == 400
    assert 'id="error-Images[0]"' in refused.text and 'id="error-BusinessPolicy.Payment"' in refused.text
    # Each bad line says which it is, and the text area is described by each message.
    assert ">Line 1 (http://insecure.example.com/a.jpg): An https URL" in refused.text
    assert ">Line 3 (not a url): An https URL" in refused.text and 'id="error-Images[1]"' not in refused.text
    assert 'aria-describedby="error-Images[0] error-Images[2]"' in refused.text
    # What was typed stays in the form, to be corrected rather than typed again.
    assert (
        "http://insecure.example.com/a.jpg\nhttps://ok.example.com/b.jpg\nnot a url</textarea>" in refused.text
        and f'value="{"x" * 101}"' in refused.text
    )
    async with rt.db.read() as session:
        listing = await session.get(Listing, listing_id)
    assert listing is not None and listing.status == "Rejected" and not listing.app_fields
    await owner.client.aclose()


async def test_another_accounts_listing_is_not_found(rt: Runtime, api: httpx.AsyncClient) -> None:
    _, listing_id = await _rejected_tee(rt, api)
    from tests.support.factories import make_account

    stranger = await signed_in(api, await make_person(rt, await make_account(rt)))
    assert (await stranger.page(f"/app/listings/{listing_id}")).status_code == 404
    await stranger.client.aclose()
