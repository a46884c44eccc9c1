"""Helpers: subscribe through the API, fire events through the outbox, drive the delivery engine."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import httpx
from sqlalchemy import insert, select

from marketsync.kit.ids import new_id
from marketsync.models import Event
from marketsync.models.webhooks import WebhookAttempt, WebhookDelivery, WebhookSubscription
from marketsync.runtime import Runtime
from marketsync.webhooks import engine
from marketsync.webhooks.outbox import record_event
from tests.support.factories import Tenant

INVENTORY_PAYLOAD: dict[str, Any] = {
    "occurredAt": "2026-01-01T00:00:00.000Z",
    "source": {"writer": "MerchantPush", "channel": "Api", "userPlatformId": None},
    "changed": [{"sku": "SKU-1", "price": 12.5, "quantity": None}],
    "truncated": False,
    "totalChanged": 1,
}


async def subscribe(
    api: httpx.AsyncClient, tenant: Tenant, url: str, event_types: list[str] | None = None
) -> dict[str, Any]:
    response = await api.post(
        "/api/webhooks/Create",
        json={"Url": url, "EventTypes": event_types or ["InventoryChanged"]},
        headers=tenant.headers,
    )
    assert response.status_code == 200, response.text
    subscription: dict[str, Any] = response.json()["Subscription"]
    return subscription


async def fire(rt: Runtime, account_id: str, event_type: str = "InventoryChanged", payload: Any = None) -> str:
    async with rt.db.transaction() as session:
        event = record_event(session, account_id, event_type, payload or INVENTORY_PAYLOAD, rt.clock.now())
        return event.id


async def pump(rt: Runtime, until: Callable[[], bool], timeout: float = 30.0, worker_id: str = "test-worker") -> None:
    """Run the fan-out and delivery pollers (as a worker cycle does) until `until()` holds."""
    async with asyncio.timeout(timeout):
        while True:
            await engine.fan_out(rt)
            await engine.deliver_due(rt, worker_id)
            if until():
                return
            await asyncio.sleep(0.005)


async def settle(rt: Runtime, seconds: float) -> None:
    """Keep the engine running a while (longer than any remaining scaled backoff) to show nothing more happens."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    await pump(rt, lambda: loop.time() > deadline, timeout=seconds + 10)


async def attempts(rt: Runtime, subscription_id: str | None = None) -> list[WebhookAttempt]:
    async with rt.db.read() as session:
        query = select(WebhookAttempt).order_by(WebhookAttempt.started_at, WebhookAttempt.attempt)
        if subscription_id:
            query = query.where(WebhookAttempt.subscription_id == subscription_id)
        return list((await session.execute(query)).scalars().all())


async def deliveries(rt: Runtime) -> list[WebhookDelivery]:
    async with rt.db.read() as session:
        return list((await session.execute(select(WebhookDelivery).order_by(WebhookDelivery.id))).scalars().all())


async def subscription_row(rt: Runtime, subscription_id: str) -> WebhookSubscription | None:
    async with rt.db.read() as session:
        result = await session.execute(select(WebhookSubscription).where(WebhookSubscription.id == subscription_id))
        return result.scalar_one_or_none()


# Rows inserted a batch at a time when a test or the claim benchmark queues a large backlog.
QUEUE_BATCH = 10_000


async def add_subscription(rt: Runtime, account_id: str, now: datetime, name: str | None = None) -> str:
    """An active subscription inserted directly (no URL check, no secret a claim would read)."""
    subscription_id = new_id()
    async with rt.db.transaction() as session:
        session.add(
            WebhookSubscription(
                id=subscription_id,
                account_id=account_id,
                url=f"https://hooks.example.test/{name or subscription_id}",
                event_types=["InventoryChanged"],
                secret_encrypted="not-used-by-a-claim",
                is_active=True,
                consecutive_failures=0,
                created_at=now,
            )
        )
    return subscription_id


async def queue_due(rt: Runtime, account_id: str, subscription_id: str, due_at: Sequence[datetime]) -> list[str]:
    """Pending deliveries (and their events) inserted directly, due at the given times; their ids in that order."""
    ids: list[str] = []
    for start in range(0, len(due_at), QUEUE_BATCH):
        times = due_at[start : start + QUEUE_BATCH]
        events = [
            {
                "id": new_id(),
                "account_id": account_id,
                "type": "InventoryChanged",
                "body": b"{}",
                "occurred_at": at,
                "dispatched_at": at,
            }
            for at in times
        ]
        rows = [
            {
                "id": new_id(),
                "account_id": account_id,
                "subscription_id": subscription_id,
                "event_id": event["id"],
                "event_type": "InventoryChanged",
                "status": "Pending",
                "attempts": 0,
                "next_attempt_at": at,
                "created_at": at,
            }
            for event, at in zip(events, times, strict=True)
        ]
        async with rt.db.transaction() as session:
            await session.execute(insert(Event), events)
            await session.execute(insert(WebhookDelivery), rows)
        ids += [row["id"] for row in rows]
    return ids
