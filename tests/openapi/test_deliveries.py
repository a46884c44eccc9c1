"""Real deliveries of the six events (signed HTTPS POSTs to the loopback receiver) match the document's `webhooks`
section: the body against the event's closed payload schema, every delivery header against its parameter."""

from __future__ import annotations

import json

import httpx

from marketsync.jobs.worker import Worker
from marketsync.marketplaces import tasks as marketplace_tasks
from marketsync.orders import tasks as order_tasks
from marketsync.runtime import Runtime
from marketsync.webhooks import verify
from marketsync.webhooks.outbox import EVENT_TYPES
from tests.catalog.support import run_jobs
from tests.marketplaces.support import update_seller
from tests.orders.support import sandbox_orders_arrive, set_feed_fault
from tests.support.factories import make_tenant
from tests.support.openapi import problems
from tests.webhooks.receiver import Receiver
from tests.webhooks.support import pump, subscribe


async def test_every_delivery_matches_the_webhooks_section(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    document = (await api.get("/openapi.json")).json()
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    connection = tenant.marketplace("P1")
    created = await subscribe(api, tenant, receiver.url(), list(EVENT_TYPES))

    # Every event from what really causes it: a create and its publish job (ListingPublished), a push
    # (InventoryChanged), a propagated push the marketplace answers with item errors (FeedOutcome), orders arriving
    # at the marketplace and the scheduled pull (OrdersDownloaded), an authorisation revoked and restored at the
    # marketplace, seen by the health checks (MarketplaceUnhealthy, MarketplaceRestored).
    create = {"Sku": "TEE-1", "MarketplaceId": connection.id, "Quantity": 2}
    response = await api.post("/api/products/Create", json=create, headers=tenant.headers)
    assert response.status_code == 200, response.text
    await run_jobs(rt)
    push = {"Items": [{"Sku": "TEE-1", "Price": 12.5, "Quantity": 0}], "PropagateToListings": False}
    response = await api.post("/api/inventory/price-quantity", json=push, headers=tenant.headers)
    assert response.json()["Updated"] == 1
    await set_feed_fault(rt, connection, "item-errors")
    push = {"Items": [{"Sku": "TEE-1", "Quantity": 7}]}
    response = await api.post("/api/inventory/price-quantity", json=push, headers=tenant.headers)
    assert response.json()["JobIds"], response.text
    await run_jobs(rt)
    await set_feed_fault(rt, connection, "none")
    await sandbox_orders_arrive(rt, connection, 2)
    await order_tasks.schedule_order_pulls(rt)
    await Worker(rt).drain()
    await marketplace_tasks.health_checks(rt)
    await update_seller(rt, connection, auth_revoked=True)
    await marketplace_tasks.health_checks(rt)
    await update_seller(rt, connection, auth_revoked=False)
    await marketplace_tasks.health_checks(rt)

    def every_event_arrived() -> bool:
        return {r.headers["x-svc-event"] for r in receiver.received} == set(EVENT_TYPES)

    await pump(rt, every_event_arrived)
    for request in receiver.received:
        event = request.headers["x-svc-event"]
        operation = document["webhooks"][event]["post"]
        assert verify(created["Secret"], request.headers, request.body)
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        assert problems(document, schema, json.loads(request.body)) == [], event
        for parameter in operation["parameters"]:
            value = request.headers.get(parameter["name"].lower())
            if value is None and not parameter["required"]:  # X-SVC-Test: on a test event's deliveries only
                continue
            assert value is not None, (event, parameter["name"])
            assert problems(document, parameter["schema"], value) == [], (event, parameter["name"], value)
    assert {json.loads(r.body)["Outcome"] for r in receiver.received if r.headers["x-svc-event"] == "FeedOutcome"} == {
        "ProcessedWithErrors"
    }
    inventory = [json.loads(r.body) for r in receiver.received if r.headers["x-svc-event"] == "InventoryChanged"]
    assert {"sku": "TEE-1", "price": 12.5, "quantity": 0} in [
        change for body in inventory for change in body["changed"]
    ]
