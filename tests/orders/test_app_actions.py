"""An order's actions in the app (docs/decisions/0437-order-actions-in-the-app.md), over real HTTP on both
databases: confirm, cancel and refund through the API's own use case and checks; each asks first (a page, no script)
and applies nothing until answered; the answer applies once under the form's token whatever a double submit sends;
P1's change is sent (an OrderWriteBack job), P2's is stored and the page shows the spec's warning naming P2."""

from __future__ import annotations

import re
from typing import Any

import httpx

from marketsync.runtime import Runtime
from tests.console.support import Browser, csrf_of, make_person, signed_in
from tests.orders.support import (
    ingest,
    jobs_of,
    order_by_marketplace_id,
    pulled_item,
    pulled_order,
    tenant_with,
)
from tests.support.factories import Tenant

KEY = re.compile(r'name="key" value="([^"]+)"')


async def _order(rt: Runtime, api: httpx.AsyncClient, platform: str, order_id: str) -> tuple[Tenant, Browser, str]:
    tenant = await tenant_with(rt, api, platform)
    items = [pulled_item(sku="MUG", quantity=2, unit_price="10.00"), pulled_item(sku="CUP", quantity=1)]
    await ingest(rt, tenant.marketplace(platform), pulled_order(order_id=order_id, items=items))
    person = await signed_in(api, await make_person(rt, tenant.account_id, "Staff"))
    found = await person.client.get("/app/orders", params={"q": order_id})
    assert found.status_code == 303
    return tenant, person, found.headers["location"]


async def _form(person: Browser, path: str) -> dict[str, str]:
    shown = await person.page(path)
    found = KEY.search(shown.text)
    assert found is not None, shown.text[:1500]
    return {"csrf": csrf_of(shown), "key": found.group(1)}


async def _api_order(api: httpx.AsyncClient, tenant: Tenant, order_id: str) -> dict[str, Any]:
    return await order_by_marketplace_id(api, tenant.headers, order_id)


async def test_a_p1_confirmation_asks_first_then_is_sent_once_whatever_a_double_submit_sends(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant, person, path = await _order(rt, api, "P1", "MO-P1")
    order = await _api_order(api, tenant, "MO-P1")
    items = [item["OrderItemId"] for item in order["Items"]]
    form = {**await _form(person, path), "CarrierCode": "DHL", "TrackingNumber": "TRACK-1"}
    sent: dict[str, Any] = {**form, "item": items}

    question = await person.client.post(f"{path}/confirm", data=sent)
    assert question.status_code == 200 and "This cannot be undone." in question.text
    assert "It is sent to P1 UK." in question.text and 'name="step" value="apply"' in question.text
    assert {item["Status"] for item in (await _api_order(api, tenant, "MO-P1"))["Items"]} == {"Unshipped"}
    assert not [job for job in await jobs_of(rt, tenant.account_id) if job.type == "OrderWriteBack"]

    answered = {**sent, "step": "apply"}
    first = await person.client.post(f"{path}/confirm", data=answered)
    again = await person.client.post(f"{path}/confirm", data=answered)  # a double submit
    assert first.status_code == again.status_code == 303
    assert first.headers["location"] == again.headers["location"] == f"{path}?done=confirm&key={form['key']}"
    after = await _api_order(api, tenant, "MO-P1")
    assert {item["Status"] for item in after["Items"]} == {"Shipped"} and len(after["Shipments"]) == 2
    assert after["Shipments"][0]["TrackingNumber"] == "TRACK-1"
    write_backs = [job for job in await jobs_of(rt, tenant.account_id) if job.type == "OrderWriteBack"]
    assert len(write_backs) == 1  # sent once
    outcome = await person.page(first.headers["location"])
    assert "Shipment confirmed." in outcome.text and "It is on its way to P1 UK" in outcome.text
    assert f'href="/app/jobs/{write_backs[0].id}"' in outcome.text and 'class="bad warning"' not in outcome.text
    await person.client.aclose()


async def test_a_p2_cancellation_is_stored_and_the_page_shows_the_warning_naming_p2(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant, person, path = await _order(rt, api, "P2", "MO-P2")
    order = await _api_order(api, tenant, "MO-P2")
    mug = next(item["OrderItemId"] for item in order["Items"] if item["Sku"] == "MUG")
    page = await person.page(path)
    assert 'id="not-sent"' in page.text and "receives no order changes from this service" in page.text
    sent = {**await _form(person, path), "CancelReason": "OutOfStock", "item": mug, f"quantity-{mug}": "1"}

    question = await person.client.post(f"{path}/cancel", data=sent)
    assert question.status_code == 200 and "This cannot be undone." in question.text
    assert "P2: order changes are not sent to P2 DE" in question.text
    answered = await person.client.post(f"{path}/cancel", data={**sent, "step": "apply"})
    assert answered.status_code == 303
    outcome = await person.page(answered.headers["location"])
    assert "Items cancelled." in outcome.text and "P2: order changes are not sent to P2 DE" in outcome.text
    after = await _api_order(api, tenant, "MO-P2")
    cancelled = next(item for item in after["Items"] if item["OrderItemId"] == mug)
    assert cancelled["CancelledQuantity"] == 1 and cancelled["CancelReason"] == "OutOfStock"
    assert not [job for job in await jobs_of(rt, tenant.account_id) if job.type == "OrderWriteBack"]
    await person.client.aclose()


async def test_a_refund_is_checked_by_the_apis_rules_beside_its_item_then_applied(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant, person, path = await _order(rt, api, "P2", "MO-REFUND")
    order = await _api_order(api, tenant, "MO-REFUND")
    mug = next(item["OrderItemId"] for item in order["Items"] if item["Sku"] == "MUG")
    form = await _form(person, path)
    too_much = await person.client.post(f"{path}/refund", data={**form, "Reason": "Goodwill", f"amount-{mug}": "99"})
    assert too_much.status_code == 400 and f'id="error-item-{mug}"' in too_much.text and "MUG: " in too_much.text
    nothing = await person.client.post(f"{path}/refund", data={**form, "Reason": "Goodwill"})
    assert nothing.status_code == 400 and "Choose at least one item." in nothing.text
    bad_reason = await person.client.post(f"{path}/refund", data={**form, "Reason": "Whim", f"amount-{mug}": "5"})
    assert bad_reason.status_code == 400 and 'id="error-Reason"' in bad_reason.text

    sent = {**form, "Reason": "ItemDamaged", f"amount-{mug}": "7.50", f"quantity-{mug}": "0"}
    question = await person.client.post(f"{path}/refund", data=sent)
    assert question.status_code == 200 and "7.50" in question.text and "This cannot be undone." in question.text
    answered = await person.client.post(f"{path}/refund", data={**sent, "step": "apply"})
    assert answered.status_code == 303
    again = await person.client.post(f"{path}/refund", data={**sent, "step": "apply"})
    assert again.status_code == 303
    after = await _api_order(api, tenant, "MO-REFUND")
    assert after["RefundedTotal"] == 7.5 and len(after["Refunds"]) == 1  # refunded once
    changed = await person.client.post(f"{path}/refund", data={**sent, f"amount-{mug}": "1", "step": "apply"})
    assert changed.status_code == 422 and "This form was sent already" in changed.text  # same token, other change
    await person.client.aclose()


async def test_p1_refuses_a_shipment_without_carrier_or_tracking_before_asking(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant, person, path = await _order(rt, api, "P1", "MO-NOTRACK")
    order = await _api_order(api, tenant, "MO-NOTRACK")
    sent = {**await _form(person, path), "item": order["Items"][0]["OrderItemId"]}
    refused = await person.client.post(f"{path}/confirm", data=sent)
    assert refused.status_code == 400 and 'id="error-TrackingNumber"' in refused.text
    assert "needs a CarrierCode or a TrackingNumber" in refused.text
    applied = await person.client.post(f"{path}/confirm", data={**sent, "step": "apply"})
    assert applied.status_code == 400  # the answer is checked again: nothing is applied
    assert (await _api_order(api, tenant, "MO-NOTRACK"))["Shipments"] == []
    await person.client.aclose()


async def test_another_orders_item_a_forged_form_and_an_unknown_action_change_nothing(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant, person, path = await _order(rt, api, "P2", "MO-MINE")
    await ingest(rt, tenant.marketplace("P2"), pulled_order(order_id="MO-OTHER"))
    other = (await _api_order(api, tenant, "MO-OTHER"))["Items"][0]["OrderItemId"]
    form = await _form(person, path)
    sent = {**form, "CancelReason": "OutOfStock", "item": other}
    for step in ("", "apply"):
        refused = await person.client.post(f"{path}/cancel", data={**sent, "step": step})
        assert refused.status_code == 400 and "Only this order" in refused.text
    assert (await _api_order(api, tenant, "MO-OTHER"))["Items"][0]["CancelledQuantity"] == 0
    forged = await person.client.post(f"{path}/cancel", data={**sent, "csrf": "forged", "item": ""})
    assert forged.status_code == 403
    assert (await person.client.post(f"{path}/explode", data=form)).status_code == 404
    await person.client.aclose()
