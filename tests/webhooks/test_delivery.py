"""Signed delivery to a real HTTPS receiver on loopback, and what `verify` accepts and refuses."""

from __future__ import annotations

import hashlib
import hmac
import time

import httpx

from marketsync.runtime import Runtime
from marketsync.webhooks import verify
from tests.support.factories import make_tenant
from tests.webhooks.receiver import HOSTNAME, Receiver
from tests.webhooks.support import attempts, fire, pump, subscribe, subscription_row


async def test_delivery_is_signed_pinned_and_verifiable(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant = await make_tenant(rt, api)
    subscription = await subscribe(api, tenant, receiver.url(), ["InventoryChanged", "OrdersDownloaded"])
    secret = subscription["Secret"]
    event_id = await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 1)

    [request] = receiver.received
    headers = request.headers
    assert verify(secret, headers, request.body)
    assert headers["host"] == f"{HOSTNAME}:{receiver.port}"
    assert headers["x-svc-event"] == "InventoryChanged"
    assert headers["x-svc-attempt"] == "1"
    assert headers["x-svc-signature"].startswith("v1=")
    assert headers["x-svc-signature"][3:] == headers["x-svc-signature"][3:].lower()
    assert abs(int(headers["x-svc-timestamp"]) - time.time()) < 60
    assert headers["content-type"] == "application/json"
    assert request.body.startswith(b'{"occurredAt"')

    await pump(rt, lambda: True)
    row = await subscription_row(rt, subscription["SubscriptionId"])
    assert row is not None and row.last_success_at is not None and row.consecutive_failures == 0
    [logged] = await attempts(rt)
    assert (logged.status_code, logged.outcome, logged.event_id) == (200, "Succeeded", event_id)
    assert logged.response_snippet is not None and len(logged.response_snippet.encode()) <= 1024


async def test_verify_refuses_tampering_wrong_keys_and_stale_or_future_timestamps(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant = await make_tenant(rt, api)
    secret = (await subscribe(api, tenant, receiver.url()))["Secret"]
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 1)
    [request] = receiver.received
    headers, body = request.headers, request.body
    ts = int(headers["x-svc-timestamp"])

    assert verify(secret, headers, body, now=ts + 300)
    assert verify(secret, headers, body, now=ts - 300)
    assert not verify(secret, headers, body + b" ")
    assert not verify(secret, headers, body.replace(b"SKU-1", b"SKU-2"))
    assert not verify("another-secret", headers, body)
    assert not verify(secret, headers, body, now=ts + 301)  # stale
    assert not verify(secret, headers, body, now=ts - 301)  # from the future

    # Signed with the raw secret (the short example's mistake), not the derived key: refused.
    raw = "v1=" + hmac.new(secret.encode(), f"{ts}.".encode() + body, hashlib.sha256).hexdigest()
    assert not verify(secret, {**headers, "x-svc-signature": raw}, body)
    # A signature copied onto another timestamp: refused.
    assert not verify(secret, {**headers, "x-svc-timestamp": str(ts + 1)}, body)
    missing = {k: v for k, v in headers.items() if k != "x-svc-signature"}
    assert not verify(secret, missing, body)
    # A hostile timestamp is refused, never raised on: digits int() refuses, more digits than a Unix time has.
    for hostile in ("17²", "١٧٠٠٠٠٠٠٠٠", "1" * 5000, "-1", "+1700000000", ""):
        assert not verify(secret, {**headers, "x-svc-timestamp": hostile}, body, now=ts)
