"""The SDK's standalone verifier (marketsync_client.webhooks) against real signed deliveries from the service:
every event verifies and parses into its typed model; each refusal case is refused with its reason."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
from datetime import UTC, datetime
from decimal import Decimal

import httpx
import pytest
from marketsync_client import webhooks
from marketsync_client.webhooks import Refusal, VerificationError

from marketsync.marketplaces import events
from marketsync.runtime import Runtime
from marketsync.webhooks.outbox import EVENT_TYPES
from tests.support.factories import make_tenant
from tests.webhooks.receiver import Received, Receiver
from tests.webhooks.support import fire, pump, subscribe

INVENTORY = {
    "occurredAt": "2026-03-01T12:30:45.123Z",
    "source": {"writer": "MasterMirror", "channel": "Marketplace", "userPlatformId": "MP-1"},
    "changed": [
        {"sku": "SKU-1", "price": 19.99, "quantity": None},
        {"sku": "SKU-2", "price": None, "quantity": 0},
        {"sku": "SKU-3", "price": 0.1, "quantity": 7},
    ],
    "truncated": False,
    "totalChanged": 3,
}


async def one_delivery(rt: Runtime, api: httpx.AsyncClient, receiver: Receiver) -> tuple[str, Received]:
    tenant = await make_tenant(rt, api)
    secret = (await subscribe(api, tenant, receiver.url()))["Secret"]
    await fire(rt, tenant.account_id, "InventoryChanged", INVENTORY)
    await pump(rt, lambda: len(receiver.received) >= 1)
    return secret, receiver.received[0]


async def test_every_event_verifies_and_parses_into_its_model(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    connection = tenant.marketplace("P1")
    secret = (await subscribe(api, tenant, receiver.url(), list(EVENT_TYPES)))["Secret"]
    async with rt.db.transaction() as session:
        events.orders_downloaded(rt, session, connection, 3)
        events.listing_published(rt, session, connection, "J1", 4, 1)
        events.feed_outcome(rt, session, connection, "Price & stock", "ProcessedWithErrors", "Done", 2)
        events.health_changed(rt, session, connection, "MarketplaceUnhealthy", "UnAuthorized", "token revoked")
        events.health_changed(rt, session, connection, "MarketplaceRestored", "Healthy", "reconnected")
    await fire(rt, tenant.account_id, "InventoryChanged", INVENTORY)
    await pump(rt, lambda: len(receiver.received) >= 6)

    assert set(webhooks.EVENT_TYPES) == set(EVENT_TYPES)
    by_event = {r.headers["x-svc-event"]: r for r in receiver.received}
    parsed: dict[str, webhooks.Delivery] = {}
    for request in receiver.received:
        assert webhooks.verify(secret, request.headers, request.body)
        delivery = webhooks.construct_event(secret, request.headers, request.body)
        assert delivery.delivery_id == request.delivery_id and delivery.attempt == 1
        assert delivery.timestamp == int(request.headers["x-svc-timestamp"])
        parsed[delivery.event_type] = delivery
        # The model carries every field of the payload under its exact wire name.
        assert {f.name for f in dataclasses.fields(delivery.event)} == set(json.loads(request.body))
    assert set(parsed) == set(EVENT_TYPES)

    assert parsed["OrdersDownloaded"].event == webhooks.OrdersDownloaded(
        Marketplace=json.loads(by_event["OrdersDownloaded"].body)["Marketplace"],
        Platform="P1",
        Country="UK",
        NewOrderCount=3,
        UserPlatformId=connection.id,
    )
    assert parsed["ListingPublished"].event == webhooks.ListingPublished("J1", connection.id, 4, 1)
    feed = parsed["FeedOutcome"].event
    assert isinstance(feed, webhooks.FeedOutcome)
    assert (feed.FeedKind, feed.Outcome, feed.Status, feed.FailedCount) == (
        "Price & stock",
        "ProcessedWithErrors",
        "Done",
        2,
    )
    unhealthy, restored = parsed["MarketplaceUnhealthy"].event, parsed["MarketplaceRestored"].event
    assert isinstance(unhealthy, webhooks.MarketplaceUnhealthy) and isinstance(restored, webhooks.MarketplaceRestored)
    assert (unhealthy.Reason, unhealthy.Detail, restored.Reason) == ("UnAuthorized", "token revoked", "Healthy")

    inventory = parsed["InventoryChanged"].event
    assert isinstance(inventory, webhooks.InventoryChanged)
    assert inventory.occurredAt == datetime(2026, 3, 1, 12, 30, 45, 123000, tzinfo=UTC)
    assert inventory.source == webhooks.InventorySource("MasterMirror", "Marketplace", "MP-1")
    # Exact decimals (never 19.989999...), and null kept apart from 0.
    assert inventory.changed == (
        webhooks.SkuChange("SKU-1", Decimal("19.99"), None),
        webhooks.SkuChange("SKU-2", None, 0),
        webhooks.SkuChange("SKU-3", Decimal("0.1"), 7),
    )
    assert (inventory.truncated, inventory.totalChanged) == (False, 3)


async def test_refusals_carry_their_reason(rt: Runtime, api: httpx.AsyncClient, receiver: Receiver) -> None:
    secret, request = await one_delivery(rt, api, receiver)
    headers, body = request.headers, request.body
    ts = int(headers["x-svc-timestamp"])

    def refused(
        reason: Refusal,
        *,
        key: str = secret,
        sent: dict[str, str] = headers,
        raw: bytes = body,
        now: float | None = None,
    ) -> None:
        with pytest.raises(VerificationError) as caught:
            webhooks.verify_or_raise(key, sent, raw, now)
        assert caught.value.reason is reason
        assert not webhooks.verify(key, sent, raw, now)

    # The edges of the 300-second window are inside it, either way.
    assert webhooks.verify_or_raise(secret, headers, body, now=ts + 300) == ts
    assert webhooks.verify(secret, headers, body, now=ts - 300)
    assert webhooks.verify(secret, headers, body, now=datetime.fromtimestamp(ts + 299, UTC))
    refused(Refusal.TIMESTAMP_TOO_OLD, now=ts + 301)
    refused(Refusal.TIMESTAMP_IN_FUTURE, now=ts - 301)

    refused(Refusal.SIGNATURE_MISMATCH, key="another-secret")
    refused(Refusal.SIGNATURE_MISMATCH, raw=body + b" ")
    refused(Refusal.SIGNATURE_MISMATCH, raw=body.replace(b"SKU-1", b"SKU-9"))
    # Re-serialised JSON is not the raw body: refused even though it means the same.
    refused(Refusal.SIGNATURE_MISMATCH, raw=json.dumps(json.loads(body)).encode())
    # The signature copied onto another timestamp.
    refused(Refusal.SIGNATURE_MISMATCH, sent={**headers, "x-svc-timestamp": str(ts + 1)})
    # Signed with the raw secret instead of the derived key.
    raw_secret_sig = "v1=" + hmac.new(secret.encode(), f"{ts}.".encode() + body, hashlib.sha256).hexdigest()
    refused(Refusal.SIGNATURE_MISMATCH, sent={**headers, "x-svc-signature": raw_secret_sig})

    signature = headers["x-svc-signature"]
    refused(Refusal.UNSUPPORTED_SCHEME, sent={**headers, "x-svc-signature": "v2=" + signature[3:]})
    refused(Refusal.UNSUPPORTED_SCHEME, sent={**headers, "x-svc-signature": signature[3:]})
    # A scheme being replaced: one matching v1 among several signatures verifies.
    assert webhooks.verify(secret, {**headers, "x-svc-signature": f"v2=abc, {signature}"}, body)

    refused(Refusal.MISSING_SIGNATURE, sent={k: v for k, v in headers.items() if k != "x-svc-signature"})
    refused(Refusal.MISSING_TIMESTAMP, sent={k: v for k, v in headers.items() if k != "x-svc-timestamp"})
    for bad in ("-5", "1e9", "١٧٠٠٠٠٠٠٠٠", " ", "12.5"):
        reason = Refusal.MISSING_TIMESTAMP if not bad.strip() else Refusal.MALFORMED_TIMESTAMP
        refused(reason, sent={**headers, "x-svc-timestamp": bad})


async def test_a_receiver_moving_between_subscriptions_accepts_either_secret(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    secret, request = await one_delivery(rt, api, receiver)
    assert webhooks.verify(["old-secret", secret], request.headers, request.body)
    assert not webhooks.verify(["old-secret", "older-secret"], request.headers, request.body)
    # Header names in any case and bytes (as ASGI servers hand them over) are accepted.
    raw_headers = {k.upper().encode(): v.encode() for k, v in request.headers.items()}
    assert webhooks.verify(secret, raw_headers, bytearray(request.body))
    assert webhooks.parse_delivery(raw_headers, request.body).delivery_id == request.delivery_id
