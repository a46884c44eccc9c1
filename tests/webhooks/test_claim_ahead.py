"""Deliveries claimed ahead of a free slot (docs/decisions/0245): a worker that stops hands back the deliveries it
claimed but never attempted, so they are due again at once with their attempt number unused and nothing logged."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx
import pytest

from marketsync.runtime import Runtime
from marketsync.webhooks import engine, repository
from marketsync.webhooks.delivery import HTTP_KEY
from tests.support.factories import make_tenant
from tests.webhooks.conftest import Tls
from tests.webhooks.receiver import Received, Receiver, serve_https
from tests.webhooks.support import attempts, deliveries, fire, pump, subscribe, subscription_row

EXTRA = 4  # deliveries beyond the slots: claimed ahead, never attempted before the stop


@pytest.fixture
def settings_overrides(tls: Tls) -> dict[str, Any]:
    # A deadline long enough that no held request times out (and frees a slot) before the stop.
    return {"webhook_ca_bundle": tls.ca_file, "webhook_timeout_s": 20.0, "webhook_allowed_networks": "127.0.0.0/8"}


async def test_a_stopped_worker_hands_back_the_deliveries_it_never_attempted(
    rt: Runtime, api: httpx.AsyncClient, tls: Tls
) -> None:
    release = asyncio.Event()

    async def hold(request: Received) -> int:
        await release.wait()
        return 200

    async with serve_https(Receiver(behaviour=hold), tls.cert_file) as receiver:
        tenant = await make_tenant(rt, api)
        # Enough subscriptions for every delivery to be claimable at once (at most 4 a subscription, 0317).
        for index in range((engine.DELIVERY_CONCURRENCY + EXTRA) // repository.PER_SUBSCRIPTION_CLAIMS):
            await subscribe(api, tenant, receiver.url(f"/{index}"))
        for _ in range(repository.PER_SUBSCRIPTION_CLAIMS):
            await fire(rt, tenant.account_id)
        await engine.fan_out(rt)
        stopping = asyncio.create_task(engine.deliver_due(rt, "stopping-worker"))
        try:
            await receiver.wait_for(engine.DELIVERY_CONCURRENCY)
        finally:
            stopping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stopping
        rows = await deliveries(rt)
        in_flight = [d for d in rows if d.lease_owner == "stopping-worker"]
        handed_back = [d for d in rows if d.lease_owner is None]
        # Attempts under way keep their lease (taken over when it expires, as after a crash)...
        assert len(in_flight) == engine.DELIVERY_CONCURRENCY
        assert all(d.attempts == 1 and d.status == "Pending" for d in in_flight)
        # ... the rest were never attempted: due again now, their attempt number unused, no log line.
        assert len(handed_back) == EXTRA
        assert all(d.attempts == 0 and d.status == "Pending" and d.lease_expires_at is None for d in handed_back)
        assert await attempts(rt) == []
        assert {r.delivery_id for r in receiver.received}.isdisjoint({d.id for d in handed_back})

        # Another worker delivers them at once, as attempt 1 (no lease to wait for).
        release.set()
        wanted = {d.id for d in handed_back}
        await pump(
            rt,
            lambda: wanted <= {r.delivery_id for r in receiver.received if r.attempt == 1},
            worker_id="next-worker",
        )
        http = rt.extras.pop(HTTP_KEY, None)
        if http is not None:
            await http.aclose()


async def test_an_attempt_whose_delivery_was_cancelled_meanwhile_is_logged_and_moves_nothing(
    rt: Runtime, api: httpx.AsyncClient, tls: Tls
) -> None:
    release = asyncio.Event()

    async def hold(request: Received) -> int:
        await release.wait()
        return 200

    async with serve_https(Receiver(behaviour=hold), tls.cert_file) as receiver:
        tenant = await make_tenant(rt, api)
        created = await subscribe(api, tenant, receiver.url())
        await fire(rt, tenant.account_id)
        await engine.fan_out(rt)
        delivering = asyncio.create_task(engine.deliver_due(rt, "w1"))
        await receiver.wait_for(1)
        # The subscription is disabled while the attempt is on the wire: its Pending delivery becomes Cancelled.
        async with rt.db.transaction() as session:
            await repository.disable_subscription(
                session, created["SubscriptionId"], rt.clock.now(), "disabled by the test"
            )
        release.set()
        assert await delivering == 1
        [row] = await deliveries(rt)
        assert row.status == "Cancelled" and row.lease_owner is None
        [logged] = await attempts(rt)
        assert (logged.attempt, logged.status_code, logged.outcome, logged.next_attempt_at) == (
            1,
            200,
            "Discarded",
            None,
        )
        subscription = await subscription_row(rt, created["SubscriptionId"])
        assert subscription is not None and subscription.last_success_at is None
        http = rt.extras.pop(HTTP_KEY, None)
        if http is not None:
            await http.aclose()
