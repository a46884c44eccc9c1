"""The marketplace part of `marketsync demo`: listings at the sandboxes, orders on P1 and P2, health known."""

from __future__ import annotations

import httpx

from marketsync.marketplaces import demo
from marketsync.runtime import Runtime
from tests.marketplaces import support
from tests.support.factories import make_tenant


async def test_demo_seed_is_idempotent(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P2", "DE"), ("P3", "US"), ("P4", "FR")))
    connections = [tenant.marketplace(p) for p in ("P1", "P2", "P3", "P4")]
    products = {}
    for connection in connections:
        # Live in the listings map but unknown to a fresh sandbox.
        products[connection.id] = await support.listed_product(
            rt, connection, f"DEMO-{connection.platform}", at_marketplace=False, status="Live"
        )

    for _ in range(2):
        await demo.seed(rt, tenant.account_id, connections)

    downloaded = await support.events(rt, tenant.account_id, "OrdersDownloaded")
    assert sorted((e["payload"]["Platform"], e["payload"]["NewOrderCount"]) for e in downloaded) == [
        ("P1", 4),
        ("P2", 3),
    ]
    marketplaces = (await api.get("/api/marketplaces", headers=tenant.headers)).json()["Marketplaces"]
    assert {m["HealthStatus"] for m in marketplaces} == {"Healthy"}
    for connection in connections:
        remote = await support.sandbox_listings(rt, connection)
        sku = f"DEMO-{connection.platform}"
        assert list(remote) == [sku]
        ours = await support.our_listing(rt, connection, products[connection.id].id)
        assert ours is not None
        assert (ours.listing_id, ours.external_sku, ours.listing_url) == (
            remote[sku].listing_id,
            sku,
            remote[sku].listing_url,
        )
    assert await support.events(rt, tenant.account_id, "MarketplaceUnhealthy") == []
