"""Webhooks in a real browser (Playwright on Debian's Chromium) against a real HTTPS receiver on loopback: subscribe
(the secret once), edit a stock value by hand and receive its InventoryChanged, then resend and recover deliveries."""

from __future__ import annotations

import httpx
from playwright.async_api import expect

from marketsync.kit import jsonio
from marketsync.runtime import Runtime
from marketsync.webhooks import rules
from tests.console.support import make_person
from tests.inventory.support import add_products
from tests.support import browser
from tests.support.browser import PHONE, browser_page, sign_in
from tests.support.factories import make_tenant
from tests.webhooks.receiver import Receiver
from tests.webhooks.support import fire, pump, subscribe


async def test_a_merchant_subscribes_edits_stock_and_resends_and_recovers_deliveries(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("MUG", "9.50", 4)])
    person = await make_person(rt, tenant.account_id)
    screenshots = rt.settings.database_url.startswith("sqlite")
    async with browser_page(str(api.base_url)) as page:
        await sign_in(page, person.email, person.password)
        await page.get_by_role("link", name="Webhooks").click()
        await page.get_by_label("HTTPS URL of your receiver").fill(receiver.url())
        await page.get_by_label("InventoryChanged").check()
        await page.get_by_role("button", name="Subscribe").click()
        secret = await page.locator("#signing-secret").inner_text()

        # A stock value edited by hand reaches the subscriber, signed with the secret shown once.
        await page.get_by_role("link", name="Catalogue").click()
        await page.get_by_role("link", name="MUG").click()
        await page.get_by_label("Stock").fill("0")
        await page.get_by_role("button", name="Save").click()
        await expect(page.locator("#product-quantity")).to_have_text("0")
        await pump(rt, lambda: len(receiver.received) >= 1)
        edit = receiver.received[0]
        assert rules.verify(secret, edit.headers, edit.body, now=rt.clock.now())
        assert jsonio.loads(edit.body)["changed"] == [{"sku": "MUG", "price": None, "quantity": 0}]

        # A delivery the receiver refused (final 4xx), resent from the log: same delivery id and bytes.
        receiver.script = [400]
        await fire(rt, tenant.account_id)
        await pump(rt, lambda: len(receiver.received) >= 2)
        refused = receiver.received[1]
        await page.get_by_role("link", name="Webhooks").click()
        await expect(page.locator("#attempts")).to_contain_text("Failed")
        if screenshots:
            await browser.screenshot(page, "webhooks")
        await page.get_by_role("button", name=f"Resend delivery {refused.delivery_id}").first.click()
        await expect(page.locator("#notice")).to_contain_text("sent again")
        await pump(rt, lambda: len(receiver.received) >= 3)
        assert receiver.received[2].delivery_id == refused.delivery_id and receiver.received[2].body == refused.body

        # Recover every failed delivery since a time.
        receiver.script = [400]
        # The form takes minutes: the minute the failure began in, never the one after it (read after the
        # failure, at hh:mm:59.9 it was already the next minute, and Recover found nothing).
        since = rt.clock.now().strftime("%Y-%m-%dT%H:%M")
        await fire(rt, tenant.account_id)
        await pump(rt, lambda: len(receiver.received) >= 4)
        await page.goto("/app/webhooks")
        await page.locator('input[name="since"]').first.fill(since)
        await page.get_by_role("button", name="Recover").click()
        await expect(page.locator("#notice")).to_contain_text("1 failed deliveries")
        await pump(rt, lambda: len(receiver.received) >= 5)
        assert receiver.received[4].delivery_id == receiver.received[3].delivery_id


async def test_a_disabled_subscription_offers_only_replace_and_delete_and_the_log_names_subscription_and_url(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    """What works on a disabled subscription is all it offers (Recover and Send a sample answered 409); each attempt
    names its subscription and URL; the attempt log is usable on a 375 px phone."""
    tenant = await make_tenant(rt, api)
    disabled = await subscribe(api, tenant, receiver.url("/broken"))
    receiver.behaviour = lambda _request: 400  # six final failures disable it
    for _ in range(6):
        await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 6)
    active = await subscribe(api, tenant, receiver.url("/working"))
    person = await make_person(rt, tenant.account_id, "Staff")
    async with browser_page(str(api.base_url)) as page:
        await sign_in(page, person.email, person.password)
        await page.get_by_role("link", name="Webhooks").click()
        broken = page.locator(f"#subscription-{disabled['SubscriptionId']}")
        await expect(broken).to_contain_text("Disabled")
        await expect(broken.get_by_role("button", name="Replace the disabled subscription")).to_be_visible()
        await expect(broken.get_by_role("button", name="Delete the subscription")).to_be_visible()
        await expect(broken.get_by_role("button", name="Send a sample")).to_have_count(0)
        await expect(broken.get_by_role("button", name="Recover")).to_have_count(0)
        working = page.locator(f"#subscription-{active['SubscriptionId']}")
        await expect(working.get_by_role("button", name="Send a sample")).to_be_visible()

        log = page.locator("#attempts")
        await expect(log.locator("thead")).to_contain_text("Subscription")
        await expect(log.locator("thead")).to_contain_text("URL")
        await expect(log.locator("td.attempt-url").first).to_have_text(receiver.url("/broken"))
        await expect(log.locator("td.attempt-subscription").first).to_contain_text(disabled["SubscriptionId"])
        await expect(log.get_by_role("button", name="Resend")).to_have_count(0)  # 409 on a disabled subscription
    async with browser_page(str(api.base_url), PHONE) as phone:
        await sign_in(phone, person.email, person.password)
        await phone.goto("/app/webhooks")
        scroll, client = await phone.locator("#attempts").evaluate("t => [t.scrollWidth, t.clientWidth]")
        assert scroll <= client  # nothing of the log cut off at 375 px
        assert await phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        if rt.settings.database_url.startswith("sqlite"):
            await browser.screenshot(phone, "webhooks-phone")
