"""Retry classification, disabling, deletion and the per-attempt SSRF guard (real clock, scale 0.0001)."""

from __future__ import annotations

import asyncio
import socket

import httpx

from marketsync.runtime import Runtime
from marketsync.webhooks import verify
from marketsync.webhooks.ssrf import StaticResolver
from tests.support.factories import make_tenant
from tests.webhooks.receiver import HOSTNAME, Received, Receiver
from tests.webhooks.support import attempts, deliveries, fire, pump, settle, subscribe, subscription_row


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def delivery_statuses(rt: Runtime) -> list[str]:
    return [d.status for d in await deliveries(rt)]


async def test_400_is_not_retried(rt: Runtime, api: httpx.AsyncClient, receiver: Receiver) -> None:
    tenant = await make_tenant(rt, api)
    created = await subscribe(api, tenant, receiver.url())
    receiver.script = [400]
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 1)
    await settle(rt, 0.3)  # > the first scaled backoff steps
    assert len(receiver.received) == 1
    assert await delivery_statuses(rt) == ["Failed"]
    [logged] = await attempts(rt)
    assert (logged.status_code, logged.outcome, logged.error_class) == (400, "Failed", "HttpStatus")
    row = await subscription_row(rt, created["SubscriptionId"])
    assert row is not None and row.consecutive_failures == 1


async def test_408_429_5xx_and_redirects_are_retried_until_success(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant = await make_tenant(rt, api)
    created = await subscribe(api, tenant, receiver.url())
    receiver.script = [408, 429, 500, 301, 503]
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 6)
    requests = receiver.received
    assert [r.attempt for r in requests] == [1, 2, 3, 4, 5, 6]
    assert len({r.delivery_id for r in requests}) == 1 and len({r.body for r in requests}) == 1
    assert all(verify(created["Secret"], r.headers, r.body) for r in requests)
    await pump(rt, lambda: True)
    assert await delivery_statuses(rt) == ["Succeeded"]
    assert [a.outcome for a in await attempts(rt)] == ["Retrying"] * 5 + ["Succeeded"]
    row = await subscription_row(rt, created["SubscriptionId"])
    assert row is not None and row.consecutive_failures == 0 and row.last_success_at is not None


async def test_timeouts_are_retried(rt: Runtime, api: httpx.AsyncClient, receiver: Receiver) -> None:
    tenant = await make_tenant(rt, api)
    await subscribe(api, tenant, receiver.url())

    async def slow_first(request: Received) -> int:
        if request.attempt == 1:
            await asyncio.sleep(rt.settings.webhook_timeout_s + 1)  # past the receiver deadline
        return 200

    receiver.behaviour = slow_first
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 2)
    await pump(rt, lambda: True)
    first, second = await attempts(rt)
    assert (first.status_code, first.error_class, first.outcome) == (None, "Timeout", "Retrying")
    assert first.duration_ms < (rt.settings.webhook_timeout_s + 1) * 1000
    assert (second.status_code, second.outcome) == (200, "Succeeded")


async def test_a_2xx_in_time_is_a_success_though_its_body_ends_late(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    """Spec section 6: "The receiver must answer any 2xx within 10 seconds": the status is the answer. A body still
    coming at the deadline is logged as far as it came; the delivery is not sent again."""
    tenant = await make_tenant(rt, api)
    await subscribe(api, tenant, receiver.url())
    receiver.answer, receiver.body_after_s = b"accepted", rt.settings.webhook_timeout_s + 1
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 1)
    await pump(rt, lambda: True)
    [logged] = await attempts(rt)
    assert (logged.status_code, logged.outcome, logged.error_class) == (200, "Succeeded", None)
    assert logged.response_snippet == "accepted"
    assert logged.duration_ms < (rt.settings.webhook_timeout_s + 1) * 1000
    assert await delivery_statuses(rt) == ["Succeeded"] and len(receiver.received) == 1


async def test_an_answer_holding_nul_bytes_is_logged_and_ends_the_delivery(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    """PostgreSQL's text holds no U+0000: a receiver's binary answer once made the attempt unrecordable, and the
    delivery was sent again each time its lease expired. Bytes that are not UTF-8 are marked, within 1 KiB."""
    tenant = await make_tenant(rt, api)
    await subscribe(api, tenant, receiver.url())
    receiver.answer = b"ok\x00\x01" + b"\xff" * 2000
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 1)
    await pump(rt, lambda: True)
    [logged] = await attempts(rt)
    assert (logged.status_code, logged.outcome) == (200, "Succeeded")
    snippet = logged.response_snippet
    assert snippet is not None and snippet.startswith("ok\ufffd\x01\ufffd") and "\x00" not in snippet
    assert len(snippet.encode()) <= 1024
    assert await delivery_statuses(rt) == ["Succeeded"] and len(receiver.received) == 1


async def test_refused_connections_are_retried(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    created = await subscribe(api, tenant, f"https://{HOSTNAME}:{closed_port()}/hook")
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: True)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20

    async def made(count: int) -> bool:
        return len(await attempts(rt)) >= count

    while not await made(3) and loop.time() < deadline:
        await pump(rt, lambda: True)
        await asyncio.sleep(0.01)
    logged = await attempts(rt)
    assert [a.attempt for a in logged[:3]] == [1, 2, 3]
    assert all(a.error_class == "ConnectError" and a.outcome == "Retrying" for a in logged[:3])
    assert all(a.status_code is None for a in logged)
    await api.post("/api/webhooks/Delete", json={"SubscriptionId": created["SubscriptionId"]}, headers=tenant.headers)


async def test_disabled_after_six_failed_deliveries_then_silent(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant = await make_tenant(rt, api)
    created = await subscribe(api, tenant, receiver.url())
    # A success in between resets the count: 2 failures, 1 success, then 6 failures.
    receiver.script = [400, 400, 200, 400, 400, 400, 400, 400, 400]
    for expected in range(1, 10):
        await fire(rt, tenant.account_id)
        await pump(rt, lambda n=expected: len(receiver.received) >= n)  # type: ignore[misc]
        await pump(rt, lambda: True)
        row = await subscription_row(rt, created["SubscriptionId"])
        assert row is not None
        assert row.consecutive_failures == [1, 2, 0, 1, 2, 3, 4, 5, 6][expected - 1]
        assert row.is_active is (expected < 9)

    listed = (await api.post("/api/webhooks/List", json={}, headers=tenant.headers)).json()["Subscriptions"]
    [entry] = listed
    assert entry["IsActive"] is False and entry["ConsecutiveFailures"] == 6
    assert entry["DisabledDate"] is not None and entry["LastSuccessDate"] is not None
    assert "6 consecutive failed deliveries" in entry["DisabledReason"]

    await fire(rt, tenant.account_id)
    await settle(rt, 0.3)
    assert len(receiver.received) == 9  # silent: no delivery, no notification
    assert len(await deliveries(rt)) == 9  # the new event was not even queued for it


async def test_disabling_cancels_queued_retries(rt: Runtime, api: httpx.AsyncClient, receiver: Receiver) -> None:
    tenant = await make_tenant(rt, api)
    created = await subscribe(api, tenant, receiver.url())

    def answer(request: Received) -> int:
        return 500 if request.body.startswith(b'{"retry"') else 400

    receiver.behaviour = answer
    await fire(rt, tenant.account_id, payload={"retry": True})
    await pump(rt, lambda: len(receiver.received) >= 1)
    for _ in range(6):
        await fire(rt, tenant.account_id)
    await pump(rt, lambda: sum(r.body.startswith(b'{"occurredAt"') for r in receiver.received) >= 6)
    row = await subscription_row(rt, created["SubscriptionId"])
    assert row is not None and not row.is_active
    statuses = await delivery_statuses(rt)
    assert statuses.count("Failed") == 6 and statuses.count("Cancelled") == 1
    seen = len(receiver.received)
    await settle(rt, 0.3)
    assert len(receiver.received) == seen


async def test_delete_stops_queued_retries_at_once(rt: Runtime, api: httpx.AsyncClient, receiver: Receiver) -> None:
    tenant = await make_tenant(rt, api)
    created = await subscribe(api, tenant, receiver.url())
    receiver.behaviour = lambda _request: 503
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 2)
    assert await delivery_statuses(rt) == ["Pending"]  # a retry is queued
    response = await api.post(
        "/api/webhooks/Delete", json={"SubscriptionId": created["SubscriptionId"]}, headers=tenant.headers
    )
    assert response.status_code == 200
    assert await deliveries(rt) == []
    await settle(rt, 0.5)  # well past the next scaled backoff steps
    assert len(receiver.received) == 2
    assert len(await attempts(rt)) == 2  # the log outlives the subscription (30 days)


async def test_every_attempt_rechecks_the_address_and_never_connects_to_a_refused_one(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver, fake_dns: StaticResolver
) -> None:
    tenant = await make_tenant(rt, api)
    await subscribe(api, tenant, receiver.url())
    # The name now resolves to a private address (DNS rebinding): refused before any connection.
    original = fake_dns.table[HOSTNAME]
    fake_dns.table[HOSTNAME] = StaticResolver({"x": "10.9.9.9"}).table["x"]
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: True)
    refused = await attempts(rt)
    assert refused
    assert {(a.error_class, a.outcome, a.status_code) for a in refused} == {("AddressRefused", "Retrying", None)}
    assert receiver.received == []
    fake_dns.table[HOSTNAME] = original
    await pump(rt, lambda: len(receiver.received) >= 1)
    assert receiver.received[0].attempt == len(refused) + 1
