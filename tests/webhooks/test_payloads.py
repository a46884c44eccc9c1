"""All six events reach subscribers with the spec section 6 fields, as the bytes recorded when they fired."""

from __future__ import annotations

import json

import httpx

from marketsync.marketplaces import events
from marketsync.runtime import Runtime
from marketsync.webhooks import verify
from marketsync.webhooks.outbox import EVENT_TYPES
from tests.support.factories import make_tenant
from tests.webhooks.receiver import Receiver
from tests.webhooks.support import INVENTORY_PAYLOAD, fire, pump, subscribe

FIELDS = {
    "OrdersDownloaded": {"Marketplace", "Platform", "Country", "NewOrderCount", "UserPlatformId"},
    "ListingPublished": {"JourneyId", "UserPlatformId", "PublishedCount", "FailedCount"},
    "FeedOutcome": {"Marketplace", "UserPlatformId", "FeedKind", "Outcome", "Status", "FailedCount"},
    "MarketplaceUnhealthy": {"Marketplace", "Platform", "UserPlatformId", "Reason", "Detail"},
    "MarketplaceRestored": {"Marketplace", "Platform", "UserPlatformId", "Reason", "Detail"},
    "InventoryChanged": {"occurredAt", "source", "changed", "truncated", "totalChanged"},
}


async def test_every_event_is_delivered_with_its_spec_fields(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    connection = tenant.marketplace("P1")
    created = await subscribe(api, tenant, receiver.url(), list(EVENT_TYPES))
    async with rt.db.transaction() as session:
        events.orders_downloaded(rt, session, connection, 3)
        events.listing_published(rt, session, connection, "J1", 4, 1)
        events.feed_outcome(rt, session, connection, "Price & stock", "ProcessedWithErrors", "Done", 2)
        events.health_changed(rt, session, connection, "MarketplaceUnhealthy", "UnAuthorized", "token revoked")
        events.health_changed(rt, session, connection, "MarketplaceRestored", "Healthy", "reconnected")
    await fire(rt, tenant.account_id, "InventoryChanged", INVENTORY_PAYLOAD)
    await pump(rt, lambda: len(receiver.received) >= 6)

    by_event = {r.headers["x-svc-event"]: r for r in receiver.received}
    assert set(by_event) == set(EVENT_TYPES)
    for name, request in by_event.items():
        assert verify(created["Secret"], request.headers, request.body)
        assert set(json.loads(request.body)) == FIELDS[name], name
    assert json.loads(by_event["OrdersDownloaded"].body)["UserPlatformId"] == connection.id
    assert json.loads(by_event["FeedOutcome"].body)["Outcome"] == "ProcessedWithErrors"
    assert len({r.delivery_id for r in receiver.received}) == 6
