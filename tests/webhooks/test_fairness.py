"""One slow receiver does not hold every delivery slot (decision 0317): at most PER_SUBSCRIPTION_CLAIMS deliveries
of a subscription are in flight, and a run with slots to spare claims other subscriptions' deliveries within
CLAIM_POLL_S while the slow ones stall."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from marketsync.jobs.worker import Worker
from marketsync.runtime import Runtime
from marketsync.webhooks.repository import PER_SUBSCRIPTION_CLAIMS
from tests.support.factories import make_tenant
from tests.webhooks.receiver import Received, Receiver
from tests.webhooks.support import attempts, fire, subscribe

SLOW_BACKLOG = 12


@pytest.fixture
def settings_overrides(settings_overrides: dict[str, Any]) -> dict[str, Any]:
    # Room for the stall: the slow receiver answers once released, within one attempt's deadline.
    return {**settings_overrides, "webhook_timeout_s": 8.0}


class StallingReceiver:
    """/slow holds every request until released, counting how many it holds at once; /fast answers at once."""

    def __init__(self) -> None:
        self.released = asyncio.Event()
        self.holding = 0
        self.most_held = 0
        self.held_four = asyncio.Event()

    async def __call__(self, request: Received) -> int:
        if request.path != "/slow":
            return 200
        self.holding += 1
        self.most_held = max(self.most_held, self.holding)
        if self.holding >= PER_SUBSCRIPTION_CLAIMS:
            self.held_four.set()
        try:
            await self.released.wait()
        finally:
            self.holding -= 1
        return 200


async def test_a_stalled_receiver_holds_four_slots_and_another_subscription_is_delivered_promptly(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    stalling = StallingReceiver()
    receiver.behaviour = stalling
    tenant = await make_tenant(rt, api)
    slow = await subscribe(api, tenant, receiver.url("/slow"), ["InventoryChanged"])
    fast = await subscribe(api, tenant, receiver.url("/fast"), ["OrdersDownloaded"])
    stop = asyncio.Event()
    running = asyncio.create_task(Worker(rt).run(stop))
    try:
        for _ in range(SLOW_BACKLOG):
            await fire(rt, tenant.account_id)
        await asyncio.wait_for(stalling.held_four.wait(), 10)

        # The slow receiver now holds its four; the worker's other slots are free for another subscription.
        fired = asyncio.get_running_loop().time()
        for _ in range(3):
            await fire(rt, tenant.account_id, "OrdersDownloaded", {"NewOrderCount": 1})
        async with asyncio.timeout(5):  # within the slow attempts' deadline: they are still held
            while len([r for r in receiver.received if r.path == "/fast"]) < 3:
                await asyncio.sleep(0.01)
        fast_within_s = asyncio.get_running_loop().time() - fired
        held_meanwhile = stalling.holding
        slow_sent_meanwhile = len([r for r in receiver.received if r.path == "/slow"])

        stalling.released.set()
        async with asyncio.timeout(20):
            while len(await attempts(rt, slow["SubscriptionId"])) < SLOW_BACKLOG:
                await asyncio.sleep(0.05)
    finally:
        stalling.released.set()
        stop.set()
        await running

    assert held_meanwhile == slow_sent_meanwhile == PER_SUBSCRIPTION_CLAIMS  # still stalled: no slot beyond four
    # Without waiting for the stalled attempts (held until released); the bound leaves room for a loaded machine.
    assert fast_within_s < 3.0
    assert stalling.most_held == PER_SUBSCRIPTION_CLAIMS
    slow_log = await attempts(rt, slow["SubscriptionId"])
    fast_log = await attempts(rt, fast["SubscriptionId"])
    assert [a.outcome for a in fast_log] == ["Succeeded"] * 3
    assert [(a.attempt, a.outcome) for a in slow_log] == [(1, "Succeeded")] * SLOW_BACKLOG
