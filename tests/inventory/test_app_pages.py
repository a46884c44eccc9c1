"""The app's catalogue and imports over real HTTP: search by SKU, a product's page with its listings, price and stock
edited by hand through the API's write path (InventoryChanged writer MerchantPush, channel Api; marketplace pushes),
and a price/stock file imported by a worker with progress and the per-row report, resumable after a crash."""

from __future__ import annotations

import re
from decimal import Decimal

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.inventory import service
from marketsync.jobs.worker import Worker
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime
from tests.console.support import Browser, make_person, signed_in
from tests.inventory.support import (
    add_listing,
    add_products,
    inventory_events,
    jobs_of,
    payloads,
    stored,
    upload_file,
)
from tests.support.factories import make_tenant


async def test_search_finds_a_product_by_sku_whatever_its_case_and_its_page_lists_its_listings(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    ids = await add_products(rt, tenant.account_id, [("Blue/Mug-1", "9.50", 4), ("RED-2", "3.00", 0)])
    await add_listing(rt, tenant.account_id, ids["Blue/Mug-1"], tenant.marketplace("P1").id, status="Rejected")
    person = await signed_in(api, await make_person(rt, tenant.account_id, "Staff"))

    everything = await person.page("/app/catalogue")
    assert "1–2 of 2" in everything.text and "RED-2" in everything.text
    found = await person.client.get("/app/catalogue", params={"sku": "blue/mug-1"})
    assert "Blue/Mug-1</a>" in found.text and "RED-2" not in found.text  # SKUs starting with it: test_finding.py
    product = await person.client.get("/app/product", params={"sku": "Blue/Mug-1"})
    assert product.status_code == 200 and 'id="product-quantity">4<' in product.text
    assert "P1 UK" in product.text and "Rejected" in product.text and "/app/listings/" in product.text
    missing = await person.client.get("/app/product", params={"sku": "NOPE"})
    assert missing.status_code == 404
    await person.client.aclose()


async def _edit(person: Browser, sku: str, **values: str) -> httpx.Response:
    csrf = (await person.client.get("/app/product", params={"sku": sku})).text
    token = re.search(r'name="csrf" value="([^"]+)"', csrf).group(1)  # type: ignore[union-attr]
    return await person.client.post("/app/product", params={"sku": sku}, data={"csrf": token, **values})


async def test_a_hand_edit_goes_through_the_push_event_and_marketplace_jobs(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    ids = await add_products(rt, tenant.account_id, [("MUG", "9.50", 4)])
    await add_listing(rt, tenant.account_id, ids["MUG"], tenant.marketplace("P1").id)
    person = await signed_in(api, await make_person(rt, tenant.account_id, "Staff"))

    posted = await _edit(person, "MUG", quantity="7")
    assert posted.status_code == 303  # post/redirect/get: a reload of the page shown does not push again
    edited = await person.client.get(posted.headers["location"])
    assert edited.status_code == 200 and 'id="product-quantity">7<' in edited.text and "Saved." in edited.text
    assert "on its way to the marketplace holding this product" in edited.text and 'id="push-outcomes"' in edited.text
    assert (await stored(rt, tenant.account_id))["MUG"][:2] == (Decimal("9.50"), 7)
    [event] = payloads(await inventory_events(rt, tenant.account_id))
    assert event["source"] == {"writer": "MerchantPush", "channel": "Api", "userPlatformId": None}
    assert event["changed"] == [{"sku": "MUG", "price": None, "quantity": 7}]
    assert [job.type for job in await jobs_of(rt, tenant.account_id)] == ["PriceStockPush"]
    assert "Data Flow: Stock is owned by the marketplace" in edited.text  # the API's drift warning, shown

    reloaded = await person.client.get(posted.headers["location"])
    assert "Data Flow: Stock is owned by the marketplace" in reloaded.text
    assert len(await inventory_events(rt, tenant.account_id)) == 1 and len(await jobs_of(rt, tenant.account_id)) == 1

    same = await person.client.get((await _edit(person, "MUG", quantity="7")).headers["location"])
    assert "Nothing changed" in same.text and len(await inventory_events(rt, tenant.account_id)) == 1
    assert "Data Flow: Stock" in same.text and "on its way" not in same.text and 'id="push-outcomes"' not in same.text
    plain = await person.client.get("/app/product", params={"sku": "MUG"})  # the page itself says no outcome
    assert 'id="edit-outcome"' not in plain.text and "Data Flow: Stock" not in plain.text
    await person.client.aclose()


async def test_a_bad_hand_edit_names_its_fields_and_writes_nothing(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("MUG", "9.50", 4)])
    person = await signed_in(api, await make_person(rt, tenant.account_id))
    refused = await _edit(person, "MUG", price="9,99", quantity="-1")
    assert refused.status_code == 400 and 'id="error-Price"' in refused.text and 'id="error-Quantity"' in refused.text
    assert 'value="9,99"' in refused.text and 'value="-1"' in refused.text  # what was typed, to correct
    assert 'aria-describedby="error-Price"' in refused.text
    empty = await _edit(person, "MUG")
    assert empty.status_code == 400 and "Enter a price, a quantity or both." in empty.text
    assert (await stored(rt, tenant.account_id))["MUG"][:2] == (Decimal("9.50"), 4)
    assert await inventory_events(rt, tenant.account_id) == []
    await person.client.aclose()


async def test_an_uploaded_file_is_imported_by_a_worker_with_progress_and_a_per_row_report(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("A", "1.00", 1), ("B", "2.00", 2)])
    person = await signed_in(api, await make_person(rt, tenant.account_id))
    uploaded = await upload_file(person, b"\xef\xbb\xbfSku,Price,Quantity\nA,1.50,\nB,abc,3\nMISSING,1,1\n")
    assert uploaded.status_code == 303
    report_path = uploaded.headers["location"]
    queued = await person.page(report_path)
    assert 'id="import-status">Queued<' in queued.text and "hx-get" in queued.text  # refreshes itself

    await Worker(rt).drain()
    done = await person.page(report_path)
    assert 'id="import-status">Completed<' in done.text and "hx-get" not in done.text
    assert "3: 1 updated, 0 unchanged, 1 not found, 0 ambiguous, 0 failed, 1 invalid" in done.text
    assert "Price: Not a decimal number" in done.text and "No product carries this SKU." in done.text
    assert (await stored(rt, tenant.account_id))["A"][:2] == (Decimal("1.50"), 1)
    [event] = payloads(await inventory_events(rt, tenant.account_id))
    assert event["source"]["channel"] == "FileImport"  # the same import as the CLI's
    listing = await person.page("/app/imports")
    assert "stock.csv" in listing.text and "3 / 3" in listing.text
    await person.client.aclose()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"Name,Stock\nA,1\n", "Sku"),
        (b"\xff\xfeS\x00k\x00u\x00", "Line 1 is not UTF-8 text"),
        (b"\xef\xbb\xbfSku,Quantity\nA,1\nB\xe9,1\n", "Line 3 is not UTF-8 text"),
        (b"Sku,Quantity\nA,1\nB\x00,1\n", "Line 3 holds a NUL character"),
        (b"", "The file is empty"),
        # Not CSV: an unclosed quote took every later row into one cell (and one past 128 KiB was a 500); a value
        # after a closing quote read "1"2 as 12.
        (b'Sku,Price\nA,"12.50,3\nB,1\nC,2\n', "The row on line 2 is not valid CSV (unexpected end of data)"),
        (b'Sku,Price\nA,"12.50,3\n' + b"B,1\n" * 40_000, "line 2 is not valid CSV (field larger than field limit"),
        (b'Sku,Price\nA,1\nB,"1"2\nC,3\n', "The row on line 3 is not valid CSV"),
        (b'Sku,Price\nA,1\n\n\nB,"1"2\nC,3\n', "The row on line 5 is not valid CSV"),  # blank lines counted
    ],
)
async def test_a_file_that_is_no_price_list_is_refused_with_nothing_saved(
    rt: Runtime, api: httpx.AsyncClient, content: bytes, message: str
) -> None:
    tenant = await make_tenant(rt, api)
    person = await signed_in(api, await make_person(rt, tenant.account_id))
    refused = await upload_file(person, content)
    assert refused.status_code == 400 and 'id="error-File"' in refused.text and message in refused.text
    assert await jobs_of(rt, tenant.account_id) == []
    await person.client.aclose()


async def test_a_refused_upload_keeps_the_marketplaces_box_as_it_was_sent(rt: Runtime, api: httpx.AsyncClient) -> None:
    """The form comes back as sent: an unticked "Update the marketplaces" ticked again would push on resubmit."""
    tenant = await make_tenant(rt, api)
    person = await signed_in(api, await make_person(rt, tenant.account_id))
    box = re.compile(r'<input type="checkbox" name="propagate" value="1"( checked)?>')
    assert box.search((await person.page("/app/imports")).text).group(1)  # type: ignore[union-attr]
    unticked = await upload_file(person, b"Name,Stock\nA,1\n", propagate=False)
    assert unticked.status_code == 400 and box.search(unticked.text).group(1) is None  # type: ignore[union-attr]
    ticked = await upload_file(person, b"Name,Stock\nA,1\n")
    assert ticked.status_code == 400 and box.search(ticked.text).group(1)  # type: ignore[union-attr]
    await person.client.aclose()


async def test_a_file_name_with_a_nul_character_is_refused_with_nothing_saved(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """The file's name is the browser's text: a NUL in it reached the database (PostgreSQL text cannot hold one: a
    500 there; SQLite stored it). Refused as a NUL in any other field of a form is."""
    tenant = await make_tenant(rt, api)
    person = await signed_in(api, await make_person(rt, tenant.account_id))
    token = re.search(r'name="csrf" value="([^"]+)"', (await person.page("/app/imports")).text).group(1)  # type: ignore[union-attr]
    boundary = b"nul-boundary"
    body = (
        b"--" + boundary + b'\r\nContent-Disposition: form-data; name="csrf"\r\n\r\n' + token.encode() + b"\r\n"
        b"--" + boundary + b'\r\nContent-Disposition: form-data; name="file"; filename="st\x00ock.csv"\r\n'
        b"Content-Type: text/csv\r\n\r\nSku,Price,Quantity\nA,1.00,1\n\r\n--" + boundary + b"--\r\n"
    )
    headers = {"Content-Type": "multipart/form-data; boundary=" + boundary.decode()}
    refused = await person.client.post("/app/imports", content=body, headers=headers)
    assert refused.status_code == 400 and "NUL" in refused.text, refused.text[:300]
    assert await jobs_of(rt, tenant.account_id) == []
    await person.client.aclose()


async def test_an_import_interrupted_by_a_crash_resumes_after_its_last_committed_batch(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api)
    skus = [f"S{i:04d}" for i in range(1200)]
    await add_products(rt, tenant.account_id, [(sku, "1.00", 0) for sku in skus])
    content = ("Sku,Price,Quantity\n" + "".join(f"{sku},,5\n" for sku in skus)).encode()
    async with rt.db.transaction() as session:
        upload = await service.start_import(
            rt,
            session,
            tenant.account_id,
            "big.csv",
            service.checked_import_file(content),
            propagate=False,
            created_by=None,
        )

    class WorkerDied(Exception):
        pass

    batches: list[int] = []

    async def dies_after_two_batches(_session: AsyncSession, report: service.ImportReport, _line: int) -> None:
        batches.append(report.rows)
        if len(batches) == 3:
            raise WorkerDied  # the third batch's transaction rolls back with it

    with pytest.raises(WorkerDied):
        await service.run_import(rt, upload.id, dies_after_two_batches)
    assert sum(1 for _, (_, quantity, _) in (await stored(rt, tenant.account_id)).items() if quantity == 5) == 1000

    async def recorded(_session: AsyncSession, _report: service.ImportReport, _line: int) -> None:
        return None

    report = await service.run_import(rt, upload.id, recorded)
    assert report.rows == 1200 and report.counts["Updated"] == 1200 and report.counts["Unchanged"] == 0
    assert all(quantity == 5 for _, quantity, _ in (await stored(rt, tenant.account_id)).values())
    assert len(await inventory_events(rt, tenant.account_id)) == 3  # one per batch, none repeated


async def test_a_hand_edits_warnings_are_on_the_page_after_its_redirect(rt: Runtime, api: httpx.AsyncClient) -> None:
    """The edit answers with a redirect (decision 0341): the page it leads to says what the push said, the zero
    price P1 refuses and the connection that needs reconnecting included, derived again from the account's state."""
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    ids = await add_products(rt, tenant.account_id, [("MUG", "9.50", 4)])
    await add_listing(rt, tenant.account_id, ids["MUG"], tenant.marketplace("P1").id)
    async with rt.db.transaction() as session:
        connection = await session.get(MarketplaceConnection, tenant.marketplace("P1").id)
        assert connection is not None
        connection.requires_reauthorization = True
    person = await signed_in(api, await make_person(rt, tenant.account_id))
    posted = await _edit(person, "MUG", price="0")
    assert posted.status_code == 303
    shown = (await person.client.get(posted.headers["location"])).text
    assert "Saved." in shown and "on its way to the marketplace" in shown
    assert "refuses a price of zero" in shown and "needs to be reconnected" in shown
    assert "Data Flow: Stock" not in shown  # the stock was not sent
    await person.client.aclose()
