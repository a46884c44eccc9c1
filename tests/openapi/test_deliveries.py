"""Real deliveries of the six events (signed HTTPS POSTs to the loopback receiver) match the document's `webhooks`
section: the body against the event's closed payload schema, every delivery header against its parameter."""

from __future__ import annotations

import json

import httpx

from marketsync.marketplaces import events
from marketsync.runtime import Runtime
from marketsync.webhooks import verify
from marketsync.webhooks.outbox import EVENT_TYPES
from tests.catalog.support import run_jobs
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

    # InventoryChanged and ListingPublished from the API's own writes: a create, its publish job, a push.
    create = {"Sku": "TEE-1", "MarketplaceId": connection.id, "Quantity": 2}
    response = await api.post("/api/products/Create", json=create, headers=tenant.headers)
    assert response.status_code == 200, response.text
    await run_jobs(rt)
    push = {"Items": [{"Sku": "TEE-1", "Price": 12.5, "Quantity": 0}], "PropagateToListings": False}
    response = await api.post("/api/inventory/price-quantity", json=push, headers=tenant.headers)
    assert response.json()["Updated"] == 1
    # The marketplace-side events, built by the code the order pull, feeds and health checks use.
    async with rt.db.transaction() as session:
        events.orders_downloaded(rt, session, connection, 3)
        events.feed_outcome(rt, session, connection, "Price & stock", "ProcessedWithErrors", "Done", 2)
        events.health_changed(rt, session, connection, "MarketplaceUnhealthy", "UnAuthorized", "token revoked")
        events.health_changed(rt, session, connection, "MarketplaceRestored", "Healthy", "reconnected")

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
            assert value is not None, (event, parameter["name"])
            assert problems(document, parameter["schema"], value) == [], (event, parameter["name"], value)
    inventory = [json.loads(r.body) for r in receiver.received if r.headers["x-svc-event"] == "InventoryChanged"]
    assert {"sku": "TEE-1", "price": 12.5, "quantity": 0} in [
        change for body in inventory for change in body["changed"]
    ]
