"""A claim reads no further than each subscription's first due deliveries (docs/decisions/0322): one subscription's
large due backlog neither holds back another subscription's deliveries nor lifts its own cap of
PER_SUBSCRIPTION_CLAIMS in flight, across claimers (decision 0317)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import httpx

from marketsync.runtime import Runtime
from marketsync.webhooks import repository
from marketsync.webhooks.repository import PER_SUBSCRIPTION_CLAIMS, ClaimedDelivery
from tests.support.factories import make_tenant
from tests.webhooks.support import add_subscription, queue_due

BACKLOG = 2_000
LEASE_S = 30.0
LIMIT = 32


async def claim(rt: Runtime, worker_id: str, now: datetime) -> list[ClaimedDelivery]:
    async with rt.db.transaction() as session:
        claimed, _ = await repository.claim_due(session, worker_id, now, LEASE_S, LIMIT)
    return claimed


async def test_a_large_backlog_of_one_subscription_leaves_the_next_claim_to_another(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api)
    now = rt.clock.now()
    flooded = await add_subscription(rt, tenant.account_id, now, "flooded")
    other = await add_subscription(rt, tenant.account_id, now, "other")
    # The backlog is due first (oldest), the other subscription's deliveries after all of it.
    backlog = await queue_due(rt, tenant.account_id, flooded, [now - timedelta(hours=1)] * BACKLOG)
    others = await queue_due(rt, tenant.account_id, other, [now - timedelta(seconds=1)] * 2)

    first = await claim(rt, "worker-1", now)

    # In claim order (due time, then id): the backlog's first four, then every one of the other subscription.
    assert [c.id for c in first] == sorted(backlog)[:PER_SUBSCRIPTION_CLAIMS] + sorted(others)
    assert not await repository.has_claimable_deliveries(rt.db, now)

    # Another claimer finds the flooded subscription at its cap and the other's new deliveries (within its own cap)
    # claimable at once.
    more = await queue_due(rt, tenant.account_id, other, [now] * 2)
    assert await repository.has_claimable_deliveries(rt.db, now)
    second = await claim(rt, "worker-2", now)
    assert sorted(c.id for c in second) == sorted(more)

    # Both workers' leases expire (they died): the next claim takes them over, and no more of the backlog.
    later = now + timedelta(seconds=LEASE_S + 1)
    async with rt.db.transaction() as session:
        taken, abandoned = await repository.claim_due(session, "worker-3", later, LEASE_S, LIMIT)
    assert [c.id for c in taken] == sorted(backlog)[:PER_SUBSCRIPTION_CLAIMS] + sorted(others) + sorted(more)
    assert [a.delivery_id for a in abandoned] == [c.id for c in taken]


async def test_two_claimers_at_once_lease_at_most_four_of_a_backlog(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    now = rt.clock.now()
    flooded = await add_subscription(rt, tenant.account_id, now, "flooded")
    backlog = await queue_due(rt, tenant.account_id, flooded, [now - timedelta(minutes=5)] * BACKLOG)
    first_claimed = asyncio.Event()

    async def hold_the_claim_open() -> list[ClaimedDelivery]:
        # Claims, then keeps its transaction (and on PostgreSQL its row locks) open while the other claims.
        async with rt.db.transaction() as session:
            claimed, _ = await repository.claim_due(session, "worker-1", now, LEASE_S, LIMIT)
            first_claimed.set()
            await asyncio.sleep(0.3)
        return claimed

    async def claim_meanwhile() -> list[ClaimedDelivery]:
        await first_claimed.wait()
        return await claim(rt, "worker-2", now)  # PostgreSQL: SKIP LOCKED; SQLite: waits for the writer

    one, two = await asyncio.gather(hold_the_claim_open(), claim_meanwhile())

    assert [c.id for c in one] == sorted(backlog)[:PER_SUBSCRIPTION_CLAIMS]
    assert two == []
    assert not await repository.has_claimable_deliveries(rt.db, now)
