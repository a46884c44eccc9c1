"""Pages say things in words for people: no operator command for a large file, no internal names ("writer
MerchantPush, channel Api", "ListingPublish", "NeverRun", an import's "NotFound") in what a page shows (decisions 0402,
0404)."""

from __future__ import annotations

import html
import re

import httpx

from marketsync.jobs import service as jobs_service
from marketsync.jobs.types import ListingMirrorPayload, ListingPublishPayload, PriceStockPushPayload
from marketsync.jobs.worker import Worker
from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.inventory.support import add_products, upload_file
from tests.support.factories import make_tenant

INTERNAL = (
    *("MerchantPush", "channel Api", "ListingPublish", "PriceStockPush", "ListingMirror", "NeverRun", "InProcess"),
    *("JobId", "NotFound"),
)


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


async def test_an_import_report_counts_its_rows_in_words(rt: Runtime, api: httpx.AsyncClient) -> None:
    """It counted "Updated 1, Unchanged 0, NotFound 1, ...": the API's result names."""
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("MUG", "9.50", 4)])
    person = await signed_in(api, await make_person(rt, tenant.account_id, "Staff"))
    uploaded = await upload_file(person, b"Sku,Price,Quantity\nMUG,1.50,\nMISSING,1,1\nMUG-2,abc,3\n")
    assert uploaded.status_code == 303
    await Worker(rt).drain()
    page = (await person.page(uploaded.headers["location"])).text
    counts = re.search(r'<dd id="import-counts">(.*?)</dd>', page)
    assert counts is not None
    assert counts.group(1) == "3: 1 updated, 0 unchanged, 1 not found, 0 ambiguous, 0 failed, 1 invalid, 0 superseded"
    for name in INTERNAL:
        assert re.search(rf"\b{name}\b", shown_text(page)) is None, name
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
