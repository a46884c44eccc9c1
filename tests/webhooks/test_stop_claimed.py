"""A delete or a disabling stops deliveries a worker has claimed but not yet sent (decision 0316): right before
sending, the worker looks at the subscription's state (read at most STATE_FRESH_S before) and drops them, with no
attempt logged and their attempt number taken back. Attempts already on the wire finish and are logged Discarded."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from marketsync.runtime import Runtime
from marketsync.webhooks import engine, repository
from marketsync.webhooks.states import STATE_FRESH_S
from tests.support.factories import Tenant, make_tenant
from tests.webhooks.receiver import Received, Receiver
from tests.webhooks.support import attempts, deliveries, fire, subscribe

SLOTS = 2  # a worker with two slots: two attempts on the wire, two more claimed ahead and waiting


@pytest.fixture
def settings_overrides(settings_overrides: dict[str, Any]) -> dict[str, Any]:
    return {**settings_overrides, "webhook_timeout_s": 8.0}  # the held requests do not time out


async def deliver_with_a_stop_in_between(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver, stop: Callable[[Tenant, str], Awaitable[None]]
) -> tuple[str, list[Received]]:
    """Four deliveries to a receiver that holds every request; `stop` runs while two are on the wire and two are
    claimed but waiting for a slot; then the receiver answers. The subscription id and what the receiver got."""
    released = asyncio.Event()

    async def hold(request: Received) -> int:
        await released.wait()
        return 200

    receiver.behaviour = hold
    tenant = await make_tenant(rt, api)
    subscription_id = (await subscribe(api, tenant, receiver.url()))["SubscriptionId"]
    for _ in range(2 * SLOTS):
        await fire(rt, tenant.account_id)
    await engine.fan_out(rt)
    delivering = asyncio.create_task(engine.deliver_due(rt, "w1", concurrency=SLOTS))
    await receiver.wait_for(SLOTS)
    await stop(tenant, subscription_id)
    await asyncio.sleep(STATE_FRESH_S)  # whatever the worker read before the stop is now too old to be used
    released.set()
    await asyncio.wait_for(delivering, 10)
    await asyncio.sleep(0.1)  # time for a wrongly sent request to arrive
    return subscription_id, list(receiver.received)


async def test_a_delete_drops_the_deliveries_claimed_and_not_yet_sent(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    async def delete(tenant: Tenant, subscription_id: str) -> None:
        deleted = await api.post(
            "/api/webhooks/Delete", json={"SubscriptionId": subscription_id}, headers=tenant.headers
        )
        assert deleted.status_code == 200, deleted.text

    subscription_id, received = await deliver_with_a_stop_in_between(rt, api, receiver, delete)

    assert len(received) == SLOTS  # the two waiting for a slot never went out
    logged = await attempts(rt, subscription_id)
    assert sorted(a.delivery_id for a in logged) == sorted(r.delivery_id for r in received)
    assert {(a.attempt, a.outcome) for a in logged} == {(1, "Discarded")}
    assert await deliveries(rt) == []


async def test_a_disabling_drops_the_deliveries_claimed_and_not_yet_sent(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    async def disable(_tenant: Tenant, subscription_id: str) -> None:
        async with rt.db.transaction() as session:
            await repository.disable_subscription(session, subscription_id, rt.clock.now(), "disabled by the test")

    subscription_id, received = await deliver_with_a_stop_in_between(rt, api, receiver, disable)

    assert len(received) == SLOTS
    sent = {r.delivery_id for r in received}
    logged = await attempts(rt, subscription_id)
    assert sorted(a.delivery_id for a in logged) == sorted(sent)
    assert {(a.attempt, a.outcome) for a in logged} == {(1, "Discarded")}
    rows = await deliveries(rt)
    assert {d.status for d in rows} == {"Cancelled"} and len(rows) == 2 * SLOTS
    # The dropped ones were never attempted: their attempt number is free for a recovery's attempt 1.
    assert sorted((d.id in sent, d.attempts) for d in rows) == [(False, 0), (False, 0), (True, 1), (True, 1)]
    assert all(d.lease_owner is None for d in rows)
