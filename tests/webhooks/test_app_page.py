"""The app's webhook page over real HTTP and a real HTTPS receiver: create (secret once), the attempt log, resend
one delivery, recover failed deliveries since a time, send a sample to one subscription, replace a disabled one."""

from __future__ import annotations

import ipaddress
import re
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import func, select, update

from marketsync.kit import jsonio
from marketsync.models.webhooks import WebhookSubscription
from marketsync.runtime import Runtime
from marketsync.webhooks import payloads, rules
from marketsync.webhooks.ssrf import StaticResolver
from tests.console.support import Browser, make_person, posted_then_reloaded, signed_in
from tests.inventory.support import add_products
from tests.support.factories import Tenant, make_account, make_tenant
from tests.webhooks.receiver import HOSTNAME, Receiver
from tests.webhooks.support import attempts, deliveries, fire, pump, settle, subscribe, subscription_row

PAGE = "/app/webhooks"


async def test_a_subscription_created_in_the_app_shows_its_secret_once_and_signs_with_it(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant = await make_tenant(rt, api)
    person = await signed_in(api, await make_person(rt, tenant.account_id))
    posted = await person.post("/app/webhooks", {"url": receiver.url(), "event_InventoryChanged": "1"}, csrf_from=PAGE)
    assert posted.status_code == 303  # post/redirect/get (decision 0401)
    created = await person.page(posted.headers["location"])
    secret = re.search(r'id="signing-secret">([^<]+)<', created.text).group(1)  # type: ignore[union-attr]
    later = await person.page("/app/webhooks")
    assert receiver.url() in later.text and secret not in later.text  # never rendered twice

    await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 1)
    delivery = receiver.received[0]
    assert rules.verify(secret, delivery.headers, delivery.body, now=rt.clock.now())
    await person.client.aclose()


async def test_a_bad_subscription_form_names_its_fields(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    person = await signed_in(api, await make_person(rt, tenant.account_id))
    refused = await person.post("/app/webhooks", {"url": "http://10.0.0.1/hook"}, csrf_from=PAGE)
    assert refused.status_code == 400
    assert 'id="error-Url"' in refused.text and 'id="error-EventTypes"' in refused.text
    await person.client.aclose()


async def test_the_log_shows_each_attempt_and_resend_sends_the_same_delivery_again(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant = await make_tenant(rt, api)
    subscription = await subscribe(api, tenant, receiver.url())
    person = await signed_in(api, await make_person(rt, tenant.account_id))
    receiver.script = [500, 200]
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 2)
    log = await person.page("/app/webhooks")
    assert log.text.count('class="attempt-retrying"') == 1 and log.text.count('class="attempt-succeeded"') == 1
    assert "status 500" in log.text  # the response snippet

    delivery_id = receiver.received[0].delivery_id
    resent = await person.post(f"/app/webhooks/deliveries/{delivery_id}/resend", csrf_from=PAGE)
    assert resent.status_code == 303  # post/redirect/get: a reload never resends again
    assert 'id="notice"' in (await person.page(resent.headers["location"])).text
    await pump(rt, lambda: len(receiver.received) >= 3)
    again = receiver.received[2]
    assert again.delivery_id == delivery_id and again.body == receiver.received[0].body and again.attempt == 3
    one = await person.page(f"/app/webhooks?delivery={delivery_id}")
    assert one.text.count('<tr class="attempt-') == 3
    assert subscription["SubscriptionId"]
    await person.client.aclose()


async def test_a_resent_delivery_that_fails_again_is_final_and_counts_as_a_failed_delivery(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    """Decision 0122: "A failed manual attempt is final (no new backoff schedule) and counts as a failed delivery."
    A 500 at the resend's attempt 2 is within the schedule's length: it went back on the schedule."""
    tenant = await make_tenant(rt, api)
    subscription = await subscribe(api, tenant, receiver.url())
    person = await signed_in(api, await make_person(rt, tenant.account_id))
    receiver.script = [400, 500, 200]
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 1)
    await pump(rt, lambda: True)
    [failed] = await deliveries(rt)
    assert failed.status == "Failed" and not failed.resent
    await person.post(f"/app/webhooks/deliveries/{failed.id}/resend", csrf_from=PAGE)
    await pump(rt, lambda: len(receiver.received) >= 2)
    await pump(rt, lambda: True)
    [resent] = await deliveries(rt)
    assert (resent.status, resent.resent, resent.attempts) == ("Failed", True, 2)
    assert [(a.attempt, a.status_code, a.outcome, a.next_attempt_at) for a in await attempts(rt)] == [
        (1, 400, "Failed", None),
        (2, 500, "Failed", None),
    ]
    row = await subscription_row(rt, subscription["SubscriptionId"])
    assert row is not None and row.consecutive_failures == 2  # each failed delivery counts
    await settle(rt, 1.0)  # far past any scaled backoff (scale 0.0001)
    assert len(receiver.received) == 2  # never sent again on its own
    await person.client.aclose()


async def test_a_resend_of_a_delivery_still_retrying_keeps_its_schedule(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a finished delivery sent again gets one final attempt: a click to hurry a retrying one along must not end
    the retries it has left."""
    tenant = await make_tenant(rt, api)
    await subscribe(api, tenant, receiver.url())
    person = await signed_in(api, await make_person(rt, tenant.account_id))
    monkeypatch.setattr(rt.settings, "webhook_retry_scale", 1.0)  # the retry waits (minutes): a resend hurries it
    receiver.script = [500, 500, 200]
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 1)
    await pump(rt, lambda: True)
    [retrying] = await deliveries(rt)
    assert (retrying.status, retrying.resent, retrying.finished_at) == ("Pending", False, None)
    await person.post(f"/app/webhooks/deliveries/{retrying.id}/resend", csrf_from=PAGE)
    await pump(rt, lambda: len(receiver.received) >= 2)
    await pump(rt, lambda: True)
    [still] = await deliveries(rt)
    assert (still.status, still.resent) == ("Pending", False)  # its 500 is retried, not final
    assert [a.outcome for a in await attempts(rt)] == ["Retrying", "Retrying"]
    await person.client.aclose()


async def _disabled(rt: Runtime, api: httpx.AsyncClient, receiver: Receiver) -> tuple[Tenant, str, Browser]:
    """A subscription disabled by six consecutive failed deliveries, and its account's person in the app."""
    tenant = await make_tenant(rt, api)
    subscription = await subscribe(api, tenant, receiver.url(), ["InventoryChanged", "OrdersDownloaded"])
    person = await signed_in(api, await make_person(rt, tenant.account_id))
    receiver.behaviour = lambda _request: 400  # a 4xx is final: each delivery fails at its first attempt
    for _ in range(6):
        await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 6)
    row = await subscription_row(rt, subscription["SubscriptionId"])
    assert row is not None and not row.is_active  # six consecutive failed deliveries disable it
    return tenant, subscription["SubscriptionId"], person


async def test_a_disabled_subscription_is_replaced_by_a_new_one_with_a_new_secret_not_re_enabled(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant, disabled_id, person = await _disabled(rt, api, receiver)
    page = await person.page("/app/webhooks")
    assert "Disabled" in page.text and ">Replace</button>" in page.text and "Re-enable" not in page.text
    assert (await person.post(f"/app/webhooks/{disabled_id}/reenable", csrf_from=PAGE)).status_code == 404
    refused = await person.post(f"/app/webhooks/{disabled_id}/recover", {"since": "2026-01-01T00:00"}, csrf_from=PAGE)
    assert refused.status_code == 409 and "replace it" in refused.text

    posted = await person.post(f"/app/webhooks/{disabled_id}/replace", csrf_from=PAGE)
    assert posted.status_code == 303  # post/redirect/get (decision 0401)
    replaced = await person.page(posted.headers["location"])
    assert "Subscription replaced" in replaced.text
    secret = re.search(r'id="signing-secret">([^<]+)<', replaced.text).group(1)  # type: ignore[union-attr]
    assert await subscription_row(rt, disabled_id) is None  # deleted, not re-enabled
    listed = (await api.post("/api/webhooks/List", json={}, headers=tenant.headers)).json()["Subscriptions"]
    assert len(listed) == 1
    new = listed[0]
    assert new["SubscriptionId"] != disabled_id and new["IsActive"] and new["ConsecutiveFailures"] == 0
    assert new["Url"] == receiver.url() and new["EventTypes"] == ["InventoryChanged", "OrdersDownloaded"]
    assert secret not in (await person.page("/app/webhooks")).text  # the new secret is shown this once only

    receiver.behaviour = lambda _request: 200
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 7)
    delivery = receiver.received[6]
    assert rules.verify(secret, delivery.headers, delivery.body, now=rt.clock.now())  # signed with the new secret
    again = await person.post(f"/app/webhooks/{new['SubscriptionId']}/replace", csrf_from=PAGE)
    assert again.status_code == 409 and "Only a disabled subscription is replaced" in again.text
    await person.client.aclose()


async def test_a_disabled_subscription_offers_only_what_works_there_and_the_log_names_each_attempts_subscription(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    """Recover, Send a sample and Resend answer 409 on a disabled subscription: not offered there. The attempt log
    names the subscription and URL of each attempt."""
    tenant, disabled_id, person = await _disabled(rt, api, receiver)
    active = await subscribe(api, tenant, receiver.url("/other"), ["InventoryChanged"])
    page = (await person.page(PAGE)).text
    section = page[page.index(f'id="subscription-{disabled_id}"') :]
    section = section[: section.index("</section>")]
    assert f'action="/app/webhooks/{disabled_id}/replace"' in section
    assert f'action="/app/webhooks/{disabled_id}/delete"' in section
    assert "/recover" not in section and "/sample" not in section and "Send a sample" not in section
    mine = page[page.index(f'id="subscription-{active["SubscriptionId"]}"') :]
    assert "Send a sample" in mine[: mine.index("</section>")] and "Recover" in mine[: mine.index("</section>")]

    log = page[page.index('<table id="attempts"') :]
    assert '<th scope="col">Subscription</th><th scope="col">URL</th>' in log
    rows = re.findall(r'<tr class="attempt-failed">(.*?)</tr>', log, re.S)
    assert len(rows) == 6
    for row in rows:  # the disabled subscription's attempts: named, with their URL, and no Resend
        assert f'<a href="/app/webhooks?subscription={disabled_id}"><code>{disabled_id}</code></a>' in row
        assert f'<td data-label="URL" class="attempt-url"><code>{receiver.url()}</code></td>' in row
        assert "(disabled)" in row and "Resend" not in row
    await person.client.aclose()


async def test_a_replace_whose_url_is_refused_now_keeps_the_disabled_subscription(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver, fake_dns: StaticResolver
) -> None:
    _tenant, disabled_id, person = await _disabled(rt, api, receiver)
    fake_dns.table[HOSTNAME] = [ipaddress.ip_address("10.1.2.3")]  # the host moved to a private address
    refused = await person.post(f"/app/webhooks/{disabled_id}/replace", csrf_from=PAGE)
    assert refused.status_code == 400 and 'id="error-Url"' in refused.text and "signing-secret" not in refused.text
    row = await subscription_row(rt, disabled_id)
    assert row is not None and not row.is_active
    await person.client.aclose()


async def test_recover_resends_every_failed_delivery_since_a_time(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant = await make_tenant(rt, api)
    subscription_id = (await subscribe(api, tenant, receiver.url()))["SubscriptionId"]
    person = await signed_in(api, await make_person(rt, tenant.account_id))
    started = rt.clock.now() - timedelta(minutes=1)
    receiver.script = [400, 400, 400]  # final failures, short of the six that disable the subscription
    for _ in range(3):
        await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 3)

    since = started.strftime("%Y-%m-%dT%H:%M")
    recovered = await person.post(f"/app/webhooks/{subscription_id}/recover", {"since": since}, csrf_from=PAGE)
    assert recovered.status_code == 303
    assert "3 failed deliveries" in (await person.page(recovered.headers["location"])).text
    await pump(rt, lambda: len(receiver.received) >= 6)
    first_ids = {r.delivery_id for r in receiver.received[:3]}
    assert {r.delivery_id for r in receiver.received[3:]} == first_ids  # the same deliveries, resent

    bad = await person.post(f"/app/webhooks/{subscription_id}/recover", {"since": "yesterday"}, csrf_from=PAGE)
    assert bad.status_code == 400 and 'id="error-Since"' in bad.text
    # Beside the form that was sent, in its subscription's section, with what was typed still in the field.
    section = bad.text[bad.text.index(f'id="subscription-{subscription_id}"') :]
    section = section[: section.index("</section>")]
    assert 'id="error-Since"' in section and 'value="yesterday" aria-describedby="error-Since"' in section
    await person.client.aclose()


async def test_a_recover_since_utc_cannot_hold_is_a_400_beside_its_form(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    """`0001-01-01T00:00:00+00:01` is in year 0 in UTC: it answered 500 (an OverflowError)."""
    tenant = await make_tenant(rt, api)
    subscription_id = (await subscribe(api, tenant, receiver.url()))["SubscriptionId"]
    person = await signed_in(api, await make_person(rt, tenant.account_id))
    for since in ("0001-01-01T00:00:00+00:01", "9999-12-31T23:59:59-00:01", "9999-12-31T23:59:59.999999-23:59"):
        refused = await person.post(f"/app/webhooks/{subscription_id}/recover", {"since": since}, csrf_from=PAGE)
        assert refused.status_code == 400 and 'id="error-Since"' in refused.text, since
    for since in ("0001-01-01T00:00", "0001-01-01T00:00:00+00:00", "9999-12-31T23:59:59.999999+00:00"):
        answered = await person.post(f"/app/webhooks/{subscription_id}/recover", {"since": since}, csrf_from=PAGE)
        assert answered.status_code == 303, since
    await person.client.aclose()


async def test_a_sample_goes_to_one_subscription_looks_real_and_is_marked_a_sample(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    """Decision 0403: a sample InventoryChanged moves one SKU that names no product (it was `changed: []`); it is
    marked as a test (decision 0421) in its payload and on every attempt, resent too; a real delivery never is."""
    tenant = await make_tenant(rt, api)
    chosen = await subscribe(api, tenant, receiver.url("/chosen"), ["InventoryChanged", "OrdersDownloaded"])
    await subscribe(api, tenant, receiver.url("/other"), ["InventoryChanged"])
    person = await signed_in(api, await make_person(rt, tenant.account_id))
    sent = await person.post(
        f"/app/webhooks/{chosen['SubscriptionId']}/sample",
        {"event_type": "InventoryChanged"},
        csrf_from=PAGE,
    )
    assert sent.status_code == 303 and "A sample is on its way" in (await person.page(sent.headers["location"])).text
    await pump(rt, lambda: len(receiver.received) >= 1)
    await pump(rt, lambda: True)  # nothing else is due: the other subscription gets nothing
    assert [r.path for r in receiver.received] == ["/chosen"]
    body = jsonio.loads(receiver.received[0].body)
    assert body["changed"] == [{"sku": "SAMPLE-SKU", "price": 19.99, "quantity": 7}]
    assert body["totalChanged"] == 1 and body["truncated"] is False
    assert body["source"] == {"writer": "MerchantPush", "channel": "Api", "userPlatformId": None}
    assert receiver.received[0].headers["x-svc-event"] == "InventoryChanged"
    # Marked as a test as the API's POST /api/webhooks/Test marks it: one use case, one marker (decision 0421).
    assert body["isTest"] is True and receiver.received[0].headers["x-svc-test"] == "true"
    payloads.InventoryChanged.model_validate(body)  # the event's closed schema, its optional marker included

    resent = await person.post(f"/app/webhooks/deliveries/{receiver.received[0].delivery_id}/resend", csrf_from=PAGE)
    assert resent.status_code == 303
    await pump(rt, lambda: len(receiver.received) >= 2)
    assert receiver.received[1].headers["x-svc-test"] == "true"  # still marked when sent again
    await fire(rt, tenant.account_id)  # a real change
    await pump(rt, lambda: len(receiver.received) >= 4)
    assert all("x-svc-test" not in r.headers for r in receiver.received[2:])

    unsubscribed = await person.post(
        f"/app/webhooks/{chosen['SubscriptionId']}/sample", {"event_type": "FeedOutcome"}, csrf_from=PAGE
    )
    assert unsubscribed.status_code == 400 and 'id="error-EventType"' in unsubscribed.text
    await person.client.aclose()


async def test_another_accounts_subscription_and_delivery_are_not_found(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    theirs = await make_tenant(rt, api)
    subscription = await subscribe(api, theirs, receiver.url())
    await fire(rt, theirs.account_id)
    await pump(rt, lambda: len(receiver.received) >= 1)
    me = await signed_in(api, await make_person(rt, (await make_tenant(rt, api)).account_id))
    for action in ("replace", "recover", "sample", "delete"):
        response = await me.post(
            f"/app/webhooks/{subscription['SubscriptionId']}/{action}",
            {"since": "2026-01-01T00:00", "event_type": "InventoryChanged"},
            csrf_from=PAGE,
        )
        assert response.status_code == 404, action
    resend = await me.post(f"/app/webhooks/deliveries/{receiver.received[0].delivery_id}/resend", csrf_from=PAGE)
    assert resend.status_code == 404
    assert receiver.url() not in (await me.page("/app/webhooks")).text
    assert await subscription_row(rt, subscription["SubscriptionId"]) is not None
    await me.client.aclose()


async def test_a_stock_value_edited_in_the_app_reaches_a_subscriber_as_inventory_changed(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant = await make_tenant(rt, api)
    await subscribe(api, tenant, receiver.url())
    await add_products(rt, tenant.account_id, [("MUG", "9.50", 4)])
    person = await signed_in(api, await make_person(rt, tenant.account_id))
    page = await person.client.get("/app/product", params={"sku": "MUG"})
    token = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    edited = await person.client.post("/app/product", params={"sku": "MUG"}, data={"csrf": token, "quantity": "0"})
    assert edited.status_code == 303 and "Saved." in (await person.client.get(edited.headers["location"])).text
    await pump(rt, lambda: len(receiver.received) >= 1)
    body = jsonio.loads(receiver.received[0].body)
    assert body["source"] == {"writer": "MerchantPush", "channel": "Api", "userPlatformId": None}
    assert body["changed"] == [{"sku": "MUG", "price": None, "quantity": 0}]
    await person.client.aclose()


async def test_a_deliverys_own_log_shows_the_whole_stored_response_the_full_log_its_start(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    """The log cut every response at 200 characters, even on one delivery's page: the receiver's error message
    (what a merchant opens the log for) past that point was stored but never shown."""
    tenant = await make_tenant(rt, api)
    await subscribe(api, tenant, receiver.url())
    person = await signed_in(api, await make_person(rt, tenant.account_id))
    receiver.script = [500]
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 1)
    stored = ("status 500 " * 200)[: rules.SNIPPET_BYTES]  # what the receiver answered, as far as it is kept

    log = await person.page("/app/webhooks")
    assert f'<code class="snippet">{stored[:200]}…</code>' in log.text and stored not in log.text
    delivery_id = receiver.received[0].delivery_id
    assert f'<a href="/app/webhooks?delivery={delivery_id}">the whole response</a>' in log.text
    one = await person.page(f"/app/webhooks?delivery={delivery_id}")
    assert f'<code class="snippet">{stored}</code>' in one.text
    await person.client.aclose()


async def _subscriptions(rt: Runtime, account_id: str) -> int:
    async with rt.db.read() as session:
        query = select(func.count()).where(WebhookSubscription.account_id == account_id)
        return int((await session.execute(query)).scalar_one())


async def test_a_new_or_replacing_subscriptions_secret_is_shown_once_and_a_reload_creates_nothing(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    """Decision 0401: post/redirect/get, the secret shown once by the page after the redirect."""
    account_id = await make_account(rt)
    person = await signed_in(api, await make_person(rt, account_id, "Staff"))
    form = {"url": receiver.url(), "event_InventoryChanged": "1"}
    first, reloaded = await posted_then_reloaded(person, "/app/webhooks", form, "/app/webhooks")
    secret = re.search(r'id="signing-secret">([^<]+)<', first)
    assert secret is not None and "Subscription created" in first
    assert secret.group(1) not in reloaded and 'id="reveal-gone"' in reloaded
    assert await _subscriptions(rt, account_id) == 1

    # Disabled, then replaced: the new secret once too, and a reload replaces nothing more.
    async with rt.db.transaction() as session:
        await session.execute(update(WebhookSubscription).values(is_active=False, disabled_reason="test"))
    async with rt.db.read() as session:
        [old_id] = (await session.execute(select(WebhookSubscription.id))).scalars()
    first, reloaded = await posted_then_reloaded(person, f"/app/webhooks/{old_id}/replace", {}, "/app/webhooks")
    new_secret = re.search(r'id="signing-secret">([^<]+)<', first)
    assert new_secret is not None and "Subscription replaced" in first and new_secret.group(1) != secret.group(1)
    assert new_secret.group(1) not in reloaded and 'id="reveal-gone"' in reloaded
    assert await _subscriptions(rt, account_id) == 1
    await person.client.aclose()
