"""The webhook log in the app (issue 41 point 6, docs/decisions/0438-webhook-log-body-and-filters.md): one delivery's
page shows the body it sent, byte for byte as the receiver got it and as it was signed; the attempts filter by
event type and by subscription; another account's delivery shows nothing."""

from __future__ import annotations

import html
import re

import httpx

from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.support.factories import make_tenant
from tests.webhooks.receiver import Receiver
from tests.webhooks.support import fire, pump, subscribe

ATTEMPT_ROW = re.compile(r'<tr class="attempt-')


async def test_a_deliverys_body_is_shown_as_signed_and_the_log_filters_by_event_type_and_subscription(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant = await make_tenant(rt, api)
    inventory = await subscribe(api, tenant, receiver.url("/inventory"), ["InventoryChanged"])
    orders = await subscribe(api, tenant, receiver.url("/orders"), ["OrdersDownloaded", "InventoryChanged"])
    person = await signed_in(api, await make_person(rt, tenant.account_id, "Staff"))
    await fire(rt, tenant.account_id)  # InventoryChanged: to both subscriptions
    await fire(rt, tenant.account_id, "OrdersDownloaded", {"MarketplaceId": "M", "Count": 3})  # to the second only
    await pump(rt, lambda: len(receiver.received) >= 3)

    everything = await person.page("/app/webhooks")
    assert len(ATTEMPT_ROW.findall(everything.text)) == 3
    by_type = await person.client.get("/app/webhooks", params={"event_type": "OrdersDownloaded"})
    assert len(ATTEMPT_ROW.findall(by_type.text)) == 1 and '<option value="OrdersDownloaded" selected>' in by_type.text
    by_subscription = await person.client.get("/app/webhooks", params={"subscription": inventory["SubscriptionId"]})
    assert len(ATTEMPT_ROW.findall(by_subscription.text)) == 1
    both = await person.client.get(
        "/app/webhooks", params={"subscription": orders["SubscriptionId"], "event_type": "InventoryChanged"}
    )
    assert len(ATTEMPT_ROW.findall(both.text)) == 1
    unknown = await person.client.get("/app/webhooks", params={"event_type": "Nope"})
    assert unknown.status_code == 400 and 'id="error-event_type"' in unknown.text

    received = next(r for r in receiver.received if r.headers.get("x-svc-event") == "OrdersDownloaded")
    one = await person.client.get("/app/webhooks", params={"delivery": received.delivery_id})
    shown = re.search(r'<pre id="delivery-body"><code>(.*?)</code></pre>', one.text, re.S)
    assert shown is not None and html.unescape(shown.group(1)).encode() == received.body  # byte for byte
    assert len(ATTEMPT_ROW.findall(one.text)) == 1

    stranger = await signed_in(api, await make_person(rt, (await make_tenant(rt, api)).account_id))
    theirs = await stranger.client.get("/app/webhooks", params={"delivery": received.delivery_id})
    assert 'id="delivery-body-gone"' in theirs.text and "OrdersDownloaded" not in theirs.text.split("<table")[1]
    await person.client.aclose()
    await stranger.client.aclose()
