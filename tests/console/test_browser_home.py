"""The home page, the activity log and a credential's rotation in a real browser (Playwright on Debian's Chromium)
against a real server on loopback, on both databases (issue 41). Screenshots land in docs/app/
(MARKETSYNC_SCREENSHOTS=docs/app, taken on SQLite)."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest
from playwright.async_api import Page, expect

from marketsync.auth import usage
from marketsync.kit.clock import FrozenClock
from marketsync.kit.ids import new_id
from marketsync.models import Listing
from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.inventory.support import add_products
from tests.support import browser
from tests.support.activity import do_one_of_each
from tests.support.browser import browser_page, sign_in
from tests.support.factories import make_account, make_connection, make_tenant

NOW = datetime(2026, 3, 10, 12, 20, tzinfo=UTC)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(NOW)


async def _shot(rt: Runtime, page: Page, name: str) -> None:
    if rt.settings.database_url.startswith("sqlite"):
        await browser.screenshot(page, name)


async def test_the_home_page_leads_from_a_rejected_listing_to_its_page(rt: Runtime, api: httpx.AsyncClient) -> None:
    account_id = await make_account(rt)
    connection = await make_connection(rt, account_id, "P1", "UK")
    ids = await add_products(rt, account_id, [("MUG-RED", "9.50", 3)])
    async with rt.db.transaction() as session:
        session.add(
            Listing(
                id=new_id(), account_id=account_id, product_id=ids["MUG-RED"], marketplace_id=connection.id,
                attributes={}, status="Rejected", last_error="Images are required", created_at=rt.clock.now(),
                updated_at=rt.clock.now(),
            )
        )  # fmt: skip
    person = await make_person(rt, account_id, role="Staff")
    async with browser_page(str(api.base_url)) as page:
        await sign_in(page, person.email, person.password)  # lands on the home page
        await expect(page.locator("h1")).to_have_text("Home")
        await expect(page.locator("#attention-rejected")).to_contain_text("1 listing rejected by its marketplace")
        await expect(page.locator("#attention-unshipped")).to_contain_text("0 orders not shipped")
        await _shot(rt, page, "home")
        await page.get_by_role("link", name="Complete them on their listing pages").click()
        await expect(page.locator("#listings")).to_contain_text("Images are required")
        await page.get_by_role("link", name="Complete MUG-RED on P1 UK").click()
        await expect(page.locator("#listing-status")).to_have_text("Rejected")
        await page.get_by_role("link", name="Home").click()
        await expect(page.locator("#attention-summary")).to_contain_text("1 thing to look at")


async def _api_answers(api: httpx.AsyncClient, client_id: str, secret: str) -> int:
    """The token endpoint's status for the secret and, when it gives a token, the API's for a call with it."""
    form = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
    issued = await api.post("/connect/token", data=form)
    if issued.status_code != 200:
        return issued.status_code
    headers = {"Authorization": f"Bearer {issued.json()['access_token']}"}
    return (await api.post("/api/orders/List", json={}, headers=headers)).status_code


async def test_an_owner_rotates_a_credential_both_secrets_work_in_the_window_the_old_one_not_after(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    person = await make_person(rt, await make_account(rt))
    async with browser_page(str(api.base_url)) as page:
        page.on("dialog", lambda dialog: dialog.accept())  # the rotation asks first (data-confirm)
        await sign_in(page, person.email, person.password)
        await page.get_by_role("link", name="API credentials").click()
        await page.get_by_label("Name").fill("Warehouse ERP")
        await page.get_by_label("OrdersRead").check()
        await page.get_by_role("button", name="Create credential").click()
        client_id = await page.locator("#client-id").inner_text()
        old_secret = await page.locator("#client-secret").inner_text()
        assert await _api_answers(api, client_id, old_secret) == 200
        await usage.flush(rt)  # what the app's background loop does every few minutes
        await page.reload()
        await expect(page.locator("#credentials")).to_contain_text("2026-03-10 12:00")  # last used, to the hour

        # Rotate, keeping the old secret for an hour: the new one is shown once.
        await page.get_by_label("Old secret keeps working for").select_option(label="1 hour")
        await page.get_by_role("button", name="Rotate Warehouse ERP").click()
        await expect(page.locator("#created-title")).to_have_text("Credential “Warehouse ERP” rotated")
        new_secret = await page.locator("#client-secret").inner_text()
        assert new_secret != old_secret and await page.locator("#client-id").inner_text() == client_id
        await expect(page.locator("#credentials")).to_contain_text("the old secret works until 2026-03-10 13:20")
        await _shot(rt, page, "credentials-rotated")
        assert await _api_answers(api, client_id, old_secret) == 200  # in the window: both
        assert await _api_answers(api, client_id, new_secret) == 200

        clock.advance(hours=1, seconds=1)  # past the window
        assert await _api_answers(api, client_id, old_secret) == 401
        assert await _api_answers(api, client_id, new_secret) == 200
    async with browser_page(str(api.base_url)) as page:  # signed in again: the clock moved past the session
        await sign_in(page, person.email, person.password)
        await page.goto("/app/credentials")
        await expect(page.locator("#credentials")).not_to_contain_text("the old secret works until")


async def test_an_owner_reads_the_activity_log_of_each_kind_and_filters_it(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    owner = await make_person(rt, tenant.account_id)
    elsewhere = await signed_in(api, owner)  # the same Owner in another browser, doing one thing of each kind
    secrets = await do_one_of_each(rt, api, elsewhere, tenant.account_id, tenant.headers)
    await elsewhere.client.aclose()
    async with browser_page(str(api.base_url)) as page:
        await sign_in(page, owner.email, owner.password)
        await page.get_by_role("link", name="Activity").click()
        table = page.locator("#activity")
        for kind, what in (
            ("Hand edits", "Price: 9.50 → 12.00; Stock: 4 → 7"),
            ("API credentials", "Rotated: Warehouse ERP"),
            ("People", "Removed: packer@example.com"),
            ("Data Flow", "Price: Marketplace → Merchant"),
            ("Marketplaces", "Reauthorised: P1 UK"),
            ("Webhooks", "Sent a sample: https://hooks.example.com/in"),
            ("Customer data shown", f"Showed: {secrets['order']}"),
        ):
            await expect(table.locator("tr", has_text=kind).filter(has_text=what)).to_have_count(1)
        for name in ("created secret", "rotated secret", "password"):
            assert secrets[name] not in await page.content(), name
        await _shot(rt, page, "activity")
        await page.get_by_label("Kind").select_option(label="Marketplaces")
        await page.get_by_role("button", name="Show").click()
        await expect(table.locator("tbody tr")).to_have_count(6)
        await expect(table.locator("tbody tr", has_text="Marketplaces")).to_have_count(6)
        await page.get_by_label("Person").select_option(label=owner.email)
        await page.get_by_label("Kind").select_option(label="Every kind")
        await page.get_by_role("button", name="Show").click()
        await expect(table.locator("tbody tr")).to_have_count(17)


async def test_a_marketplace_offers_only_its_own_sites_and_destructive_buttons_look_it(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    person = await make_person(rt, await make_account(rt))
    async with browser_page(str(api.base_url)) as page:
        await sign_in(page, person.email, person.password)
        await page.get_by_role("link", name="Marketplaces").click()
        country = page.get_by_label("Country")
        await page.get_by_label("Marketplace").select_option("P3")
        offered = await country.locator("option").all_inner_texts()
        assert offered == ["US", "UK"]
        await page.get_by_label("Marketplace").select_option("P4")
        assert await country.locator("option").all_inner_texts() == ["FR", "IT", "ES"]
        await country.select_option("IT")
        await page.get_by_role("button", name="Connect and authorise").click()
        await page.wait_for_url("**/consent")
        await page.get_by_role("button", name="Allow").click()
        await expect(page.locator("#connections")).to_contain_text("P4 IT")
        disconnect = page.get_by_role("button", name="Disconnect P4 IT")
        red = "rgb(164, 0, 29)"
        assert await disconnect.evaluate("b => getComputedStyle(b).backgroundColor") == red
        pause = page.get_by_role("button", name="Pause P4 IT")
        assert await pause.evaluate("b => getComputedStyle(b).backgroundColor") != red
