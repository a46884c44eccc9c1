"""The claim and its 100 ms poll look only at the subscriptions with Pending deliveries (docs/decisions/0322, 0325):
with thousands of idle subscriptions sorting before the one with work, the poll's plan reads a subscription's row
only by its id, one probe for each subscription with Pending deliveries, never a walk over every subscription; and a
subscription not active is still skipped (0316)."""

from __future__ import annotations

import re
from datetime import timedelta

from sqlalchemy import text, update

from marketsync.db import DriverReader
from marketsync.kit.ids import new_id
from marketsync.models.webhooks import WebhookSubscription
from marketsync.runtime import Runtime
from marketsync.webhooks import repository
from marketsync.webhooks.repository import PER_SUBSCRIPTION_CLAIMS
from tests.support.bulk import insert_many
from tests.support.factories import make_account
from tests.support.plans import Explaining
from tests.webhooks.support import add_subscription, queue_due

IDLE = 2_000
LEASE_S = 30.0
LIMIT = 32


def walks_subscriptions(plan: str, postgres: bool) -> list[str]:
    """The plan's reads of webhook_subscriptions that are not one probe by a pending subscription's id."""
    lines = plan.splitlines()
    if not postgres:
        return [line for line in lines if re.match(r"\s*SCAN s\b", line)]
    walks = []
    for at, line in enumerate(lines):
        if "on webhook_subscriptions" in line:
            condition = lines[at + 1] if at + 1 < len(lines) else ""
            if "Index Cond" not in condition or "pending" not in condition:
                walks.append(line)
    return walks


async def test_idle_subscriptions_are_not_read_and_an_inactive_one_is_skipped(rt: Runtime) -> None:
    account_id = await make_account(rt)
    now = rt.clock.now()
    # Created first, so their (time-ordered) ids sort before the subscriptions with work.
    async with rt.db.transaction() as session:
        await insert_many(
            session,
            WebhookSubscription,
            [
                {
                    "id": new_id(),
                    "account_id": account_id,
                    "url": f"https://hooks.example.test/idle-{i}",
                    "event_types": ["InventoryChanged"],
                    "secret_encrypted": "not-used-by-a-claim",
                    "is_active": True,
                    "consecutive_failures": 0,
                    "created_at": now,
                }
                for i in range(IDLE)
            ],
        )
    inactive = await add_subscription(rt, account_id, now, "inactive")
    busy = await add_subscription(rt, account_id, now, "busy")
    # The inactive subscription's deliveries are the oldest: a claim that did not skip it would take them first.
    await queue_due(rt, account_id, inactive, [now - timedelta(hours=1)] * 3)
    queued = await queue_due(rt, account_id, busy, [now - timedelta(seconds=s) for s in range(6, 0, -1)])
    async with rt.db.transaction() as session:
        await session.execute(
            update(WebhookSubscription).where(WebhookSubscription.id == inactive).values(is_active=False)
        )
        if not rt.db.is_sqlite:  # as autovacuum would after this many inserts
            await session.execute(text("ANALYZE webhook_subscriptions"))
            await session.execute(text("ANALYZE webhook_deliveries"))

    async def poll(reader: DriverReader) -> tuple[bool, str]:
        explaining = Explaining(reader)
        return await repository.any_claimable(explaining, now), explaining.plans[0]

    claimable, plan = await rt.db.driver_read(poll)
    assert claimable
    assert walks_subscriptions(plan, not rt.db.is_sqlite) == [], plan

    async with rt.db.transaction() as session:
        claimed, _ = await repository.claim_due(session, "worker-1", now, LEASE_S, LIMIT)
    assert [c.id for c in claimed] == queued[:PER_SUBSCRIPTION_CLAIMS]
    # The busy subscription is at its cap, the inactive one is never claimable.
    assert not await repository.has_claimable_deliveries(rt.db, now)
