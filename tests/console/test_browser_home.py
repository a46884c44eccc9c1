"""The home page, the activity log and a credential's rotation in a real browser (Playwright on Debian's Chromium)
against a real server on loopback, on both databases (issue 41). Screenshots land in docs/app/
(MARKETSYNC_SCREENSHOTS=docs/app, taken on SQLite)."""

from __future__ import annotations

import httpx
from playwright.async_api import Page, expect

from marketsync.kit.ids import new_id
from marketsync.models import Listing
from marketsync.runtime import Runtime
from tests.console.support import make_person
from tests.inventory.support import add_products
from tests.support import browser
from tests.support.browser import browser_page, sign_in
from tests.support.factories import make_account, make_connection


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
        await page.get_by_role("link", name="1 listing rejected by its marketplace").click()
        await expect(page.locator("#listings")).to_contain_text("Images are required")
        await page.get_by_role("link", name="Complete MUG-RED on P1 UK").click()
        await expect(page.locator("#listing-status")).to_have_text("Rejected")
        await page.get_by_role("link", name="Home").click()
        await expect(page.locator("#attention-summary")).to_contain_text("1 thing to look at")
