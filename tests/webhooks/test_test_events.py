"""POST /api/webhooks/Test and the SDK's send_test_webhook: a test event for one subscription, signed and delivered
like any other, marked as a test in its payload and its headers (docs/decisions/0421); real events never are."""

from __future__ import annotations

import json

import httpx
import pytest
from marketsync_client import webhooks
from sqlalchemy import update

from marketsync.models.webhooks import WebhookSubscription
from marketsync.runtime import Runtime
from tests.support.factories import make_tenant, problem
from tests.support.sdk import sdk
from tests.webhooks.receiver import Receiver
from tests.webhooks.support import attempts, fire, pump, subscribe


async def test_a_test_event_is_signed_delivered_and_marked(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant = await make_tenant(rt, api)
    subscription = await subscribe(api, tenant, receiver.url(), ["OrdersDownloaded", "InventoryChanged"])
    other = await subscribe(api, tenant, receiver.url("/other"), ["OrdersDownloaded", "InventoryChanged"])

    sent = await api.post(
        "/api/webhooks/Test", json={"SubscriptionId": subscription["SubscriptionId"]}, headers=tenant.headers
    )
    assert sent.status_code == 200, sent.text
    answer = sent.json()
    assert set(answer) == {"SubscriptionId", "EventType", "DeliveryId", "RequestId", "Warnings"}
    # No EventType: the subscription's first.
    assert answer["SubscriptionId"] == subscription["SubscriptionId"] and answer["EventType"] == "OrdersDownloaded"
    assert answer["RequestId"] == sent.headers["x-request-id"] and answer["Warnings"] == []
    chosen = await api.post(
        "/api/webhooks/Test",
        json={"SubscriptionId": subscription["SubscriptionId"], "EventType": "InventoryChanged"},
        headers=tenant.headers,
    )
    assert chosen.status_code == 200 and chosen.json()["EventType"] == "InventoryChanged"

    await pump(rt, lambda: len(receiver.received) >= 2)
    assert {r.path for r in receiver.received} == {"/hook"}  # that subscription only, never fanned out
    by_event = {r.headers["x-svc-event"]: r for r in receiver.received}
    assert by_event["OrdersDownloaded"].delivery_id == answer["DeliveryId"]
    for event_type, marker in (("OrdersDownloaded", "IsTest"), ("InventoryChanged", "isTest")):
        request = by_event[event_type]
        assert request.headers["x-svc-test"] == "true"
        assert json.loads(request.body)[marker] is True
        delivery = webhooks.construct_event(subscription["Secret"], request.headers, request.body)
        assert delivery.is_test and delivery.event_type == event_type
        assert webhooks.construct_event(subscription["Secret"], request.headers, request.body).attempt == 1
    logged = await attempts(rt, subscription["SubscriptionId"])
    assert [a.outcome for a in logged] == ["Succeeded", "Succeeded"]
    assert await attempts(rt, other["SubscriptionId"]) == []


async def test_real_events_carry_no_test_marker(rt: Runtime, api: httpx.AsyncClient, receiver: Receiver) -> None:
    tenant = await make_tenant(rt, api)
    subscription = await subscribe(api, tenant, receiver.url())
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 1)
    [request] = receiver.received
    assert "x-svc-test" not in request.headers
    assert not {"isTest", "IsTest"} & set(json.loads(request.body))
    assert not webhooks.construct_event(subscription["Secret"], request.headers, request.body).is_test


async def test_refusals_name_what_is_wrong(rt: Runtime, api: httpx.AsyncClient, receiver: Receiver) -> None:
    tenant = await make_tenant(rt, api)
    subscription = await subscribe(api, tenant, receiver.url(), ["InventoryChanged"])
    subscription_id = subscription["SubscriptionId"]

    async def send(body: object, headers: dict[str, str] | None = None) -> httpx.Response:
        return await api.post("/api/webhooks/Test", json=body, headers=headers or tenant.headers)

    not_received = await send({"SubscriptionId": subscription_id, "EventType": "OrdersDownloaded"})
    assert not_received.status_code == 400
    assert "does not receive OrdersDownloaded" in problem(not_received)["errors"]["EventType"][0]
    unknown_event = await send({"SubscriptionId": subscription_id, "EventType": "OrderShipped"})
    assert unknown_event.status_code == 400 and "Unknown event type" in problem(unknown_event)["errors"]["EventType"][0]
    unknown = await send({"SubscriptionId": "01JD2QS0T1U2V3W4X5Y6Z7A8B9"})
    assert unknown.status_code == 404 and problem(unknown)["code"] == "not-found"
    # One 400 names every bad field: an unknown subscription beside a bad EventType, or beside a shape error.
    both = await send({"SubscriptionId": "01JD2QS0T1U2V3W4X5Y6Z7A8B9", "EventType": "OrderShipped"})
    assert both.status_code == 400 and set(problem(both)["errors"]) == {"SubscriptionId", "EventType"}
    shaped = await send({"SubscriptionId": "01JD2QS0T1U2V3W4X5Y6Z7A8B9", "EventType": 5})
    assert shaped.status_code == 400 and set(problem(shaped)["errors"]) == {"SubscriptionId", "EventType"}
    missing = await send({"Extra": 1})
    assert missing.status_code == 400 and set(problem(missing)["errors"]) == {"SubscriptionId", "Extra"}

    # Another account's subscription is not found; a credential without WebhooksWrite is refused.
    stranger = await make_tenant(rt, api)
    assert (await send({"SubscriptionId": subscription_id}, stranger.headers)).status_code == 404
    reader = await make_tenant(rt, api, scopes=["OrdersRead"])
    scoped = await send({"SubscriptionId": subscription_id}, reader.headers)
    assert scoped.status_code == 403 and problem(scoped)["code"] == "insufficient-scope"

    # A disabled subscription is silent (spec section 3): 409, replace it first.
    async with rt.db.transaction() as session:
        await session.execute(
            update(WebhookSubscription).where(WebhookSubscription.id == subscription_id).values(is_active=False)
        )
    disabled = await send({"SubscriptionId": subscription_id})
    assert disabled.status_code == 409 and problem(disabled)["code"] == "conflict"
    await pump(rt, lambda: True)
    assert receiver.received == []  # nothing refused was queued


@pytest.mark.parametrize("flavour", ["async", "sync"])
async def test_the_sdk_sends_a_test_event(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver, flavour: str
) -> None:
    tenant = await make_tenant(rt, api)
    async with sdk(api, tenant, flavour) as client:
        created = await client.create_webhook(receiver.url(), ["FeedOutcome", "MarketplaceRestored"])
        secret = created.Subscription.Secret
        sent = await client.send_test_webhook(created.Subscription.SubscriptionId, "MarketplaceRestored")
        first = await client.send_test_webhook(created.Subscription.SubscriptionId)
    assert (sent.EventType, first.EventType) == ("MarketplaceRestored", "FeedOutcome")
    await pump(rt, lambda: len(receiver.received) >= 2)
    deliveries = {r.delivery_id: webhooks.construct_event(secret, r.headers, r.body) for r in receiver.received}
    assert set(deliveries) == {sent.DeliveryId, first.DeliveryId}
    assert all(d.is_test for d in deliveries.values())
    restored = deliveries[sent.DeliveryId].event
    assert isinstance(restored, webhooks.MarketplaceRestored)
