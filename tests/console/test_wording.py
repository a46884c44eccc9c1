"""Pages say things in words for people: no operator command for a large file, no internal names ("writer
MerchantPush, channel Api", "ListingPublish", "NeverRun") in what a page shows (decisions 0402, 0404)."""

from __future__ import annotations

import html
import re

import httpx

from marketsync.jobs import service as jobs_service
from marketsync.jobs.types import ListingMirrorPayload, ListingPublishPayload, PriceStockPushPayload
from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.inventory.support import add_products
from tests.support.factories import make_tenant

INTERNAL = ("MerchantPush", "channel Api", "ListingPublish", "PriceStockPush", "ListingMirror", "NeverRun", "InProcess")


def shown_text(page: str) -> str:
    """What a person reads: the text between tags (attribute values, such as a filter's option values, left out)."""
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]*>", " ", page))


async def test_pages_show_words_not_internal_names(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    await add_products(rt, tenant.account_id, [("MUG", "9.50", 4)])
    marketplace_id = tenant.marketplace("P1").id
    async with rt.db.transaction() as session:
        now = rt.clock.now()
        job_ids = [
            jobs_service.enqueue(session, now, tenant.account_id, payload).id
            for payload in (
                ListingPublishPayload(MarketplaceId=marketplace_id, ListingIds=[], JourneyId="J"),
                PriceStockPushPayload(MarketplaceId=marketplace_id, AllListings=True),
                ListingMirrorPayload(MarketplaceId=marketplace_id),
            )
        ]
    person = await signed_in(api, await make_person(rt, tenant.account_id))
    pages = ["/app/marketplaces", "/app/jobs", "/app/product?sku=MUG", "/app/imports", "/app/webhooks"]
    for path in pages + [f"/app/jobs/{job_id}" for job_id in job_ids]:
        text = shown_text((await person.page(path)).text)
        for name in INTERNAL:  # a webhook event's name (ListingPublished) is what a subscriber receives: words too
            assert re.search(rf"\b{name}\b", text) is None, (path, name)
    jobs = shown_text((await person.page("/app/jobs")).text)
    assert "Listing publish" in jobs and "Price and stock push" in jobs and "Listing pull" in jobs and "Queued" in jobs
    await person.client.aclose()


async def test_the_imports_page_says_what_a_merchant_can_do_with_a_larger_file(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api)
    person = await signed_in(api, await make_person(rt, tenant.account_id, "Staff"))
    page = (await person.page("/app/imports")).text
    assert "marketsync admin" not in page and "import-inventory" not in page  # an operator's command
    larger = re.search(r'<p id="larger-files">(.*?)</p>', page, re.S)
    assert larger is not None
    said = " ".join(larger.group(1).split())
    assert "split it into parts of up to 2.0 MB, each starting with the same header line" in said
    assert "through the API" in said
    await person.client.aclose()
