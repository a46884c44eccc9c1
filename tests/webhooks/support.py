"""Helpers: subscribe through the API, fire events through the outbox, drive the delivery engine."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
from sqlalchemy import select

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
