"""Health: null until known, UnAuthorized on revocation, events only on an actual change of state."""

from __future__ import annotations

import httpx
import pytest

from marketsync.jobs.worker import Worker
from marketsync.marketplaces import service, tasks
from marketsync.marketplaces.schemas import MarketplacesOut
from marketsync.runtime import Runtime
from tests.marketplaces import support
from tests.marketplaces.sides import Side
from tests.support.factories import make_tenant


async def _marketplaces(api: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, dict[str, object]]:
    response = await api.get("/api/marketplaces", headers=headers)
    assert response.status_code == 200, response.text
    return {m["MarketplaceId"]: m for m in response.json()["Marketplaces"]}


async def test_health_is_null_until_known_then_healthy_silently(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P3", "US")))
    before = await _marketplaces(api, tenant.headers)
    for entry in before.values():
        assert entry["HealthStatus"] is None
        assert entry["LastPull"] == {"Status": "NeverRun", "TotalSkus": 0, "CurrentSku": 0}

    await tasks.health_checks(rt)

    after = await _marketplaces(api, tenant.headers)
    for entry in after.values():
        assert entry["HealthStatus"] == "Healthy"
        assert entry["IsHealthy"] is True
        assert entry["RequiresReauthorization"] is False
        assert entry["HealthStatusMessage"]
    # Nothing was broken, so nothing was restored.
    assert await support.events(rt, tenant.account_id) == []


@pytest.mark.parametrize("side", ["P1", "Amazon"], indirect=True)
async def test_revoked_authorisation_fires_once_and_only_restore_clears_it(
    rt: Runtime, api: httpx.AsyncClient, side: Side
) -> None:
    tenant = await make_tenant(rt, api)
    p1 = await side.connect(tenant.account_id)
    await tasks.health_checks(rt)
    await side.revoke(p1)

    for _ in range(3):  # repeated checks while broken never repeat the event
        await tasks.health_checks(rt)

    entry = (await _marketplaces(api, tenant.headers))[p1.id]
    assert entry["HealthStatus"] == "UnAuthorized"
    assert entry["RequiresReauthorization"] is True
    assert entry["IsHealthy"] is False
    fired = await support.events(rt, tenant.account_id)
    assert [e["type"] for e in fired] == ["MarketplaceUnhealthy"]
    assert fired[0]["payload"] == {
        "Marketplace": side.name,
        "Platform": side.platform,
        "UserPlatformId": p1.id,
        "Reason": "UnAuthorized",
        "Detail": entry["HealthStatusMessage"],
    }

    await side.restore(p1)  # the merchant reconnects in the app
    await tasks.health_checks(rt)
    await tasks.health_checks(rt)

    entry = (await _marketplaces(api, tenant.headers))[p1.id]
    assert entry["HealthStatus"] == "Healthy"
    assert entry["RequiresReauthorization"] is False
    assert entry["IsHealthy"] is True
    fired = await support.events(rt, tenant.account_id)
    assert [e["type"] for e in fired] == ["MarketplaceUnhealthy", "MarketplaceRestored"]
    assert set(fired[1]["payload"]) == {"Marketplace", "Platform", "UserPlatformId", "Reason", "Detail"}
    assert fired[1]["payload"]["Reason"] == "Healthy"


@pytest.mark.parametrize("side", ["P2", "Amazon"], indirect=True)
async def test_flapping_fires_each_change_exactly_once(rt: Runtime, api: httpx.AsyncClient, side: Side) -> None:
    tenant = await make_tenant(rt, api)
    p2 = await side.connect(tenant.account_id)
    for revoked in (True, True, False, False, True, False, True):
        await (side.revoke(p2) if revoked else side.restore(p2))
        await tasks.health_checks(rt)
    assert [e["type"] for e in await support.events(rt, tenant.account_id)] == [
        "MarketplaceUnhealthy",
        "MarketplaceRestored",
        "MarketplaceUnhealthy",
        "MarketplaceRestored",
        "MarketplaceUnhealthy",
    ]


@pytest.mark.parametrize("side", ["P1", "Amazon"], indirect=True)
async def test_a_push_meeting_revocation_flips_health_without_repeats(
    rt: Runtime, api: httpx.AsyncClient, side: Side
) -> None:
    tenant = await make_tenant(rt, api)
    p1 = await side.connect(tenant.account_id)
    product = await side.listed_product(p1, "REV-1")
    # The catalogue moved since the marketplace heard of it, so the pushes have a line to send (0047).
    await support.set_product_values(rt, product.id, None, 6)
    await side.revoke(p1)
    first = await support.enqueue(
        rt, tenant.account_id, "PriceStockPush", {"MarketplaceId": p1.id, "ProductIds": [product.id]}
    )
    second = await support.enqueue(
        rt, tenant.account_id, "PriceStockPush", {"MarketplaceId": p1.id, "ProductIds": [product.id]}
    )

    await Worker(rt).drain()
    await tasks.health_checks(rt)

    assert (await support.job(rt, first)).status == "Failed"
    assert (await support.job(rt, second)).status == "Failed"
    entry = (await _marketplaces(api, tenant.headers))[p1.id]
    assert entry["HealthStatus"] == "UnAuthorized"
    assert entry["RequiresReauthorization"] is True
    assert [e["type"] for e in await support.events(rt, tenant.account_id)] == ["MarketplaceUnhealthy"]


async def test_paused_connection_is_omitted_and_not_checked(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P4", "FR")))
    p1, p4 = tenant.marketplace("P1"), tenant.marketplace("P4")
    async with rt.db.transaction() as session:
        await service.pause(rt, session, tenant.account_id, p4.id)
    await support.update_seller(rt, p4, auth_revoked=True)

    await tasks.health_checks(rt)

    listed = await _marketplaces(api, tenant.headers)
    assert list(listed) == [p1.id]
    assert await support.events(rt, tenant.account_id) == []
    async with rt.db.transaction() as session:
        await service.resume(rt, session, tenant.account_id, p4.id)
    assert set(await _marketplaces(api, tenant.headers)) == {p1.id, p4.id}


async def test_the_list_shows_every_active_connection_exactly_as_stored(rt: Runtime, api: httpx.AsyncClient) -> None:
    """GET /api/marketplaces reads on the raw driver (docs/decisions/0250): each field is the stored value with its
    JSON type, connections in the order they were made, paused ones left out, and the body is MarketplacesOut."""
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P3", "US"), ("P2", "DE")))
    p1, p3, p2 = (tenant.marketplace(p) for p in ("P1", "P3", "P2"))
    await tasks.health_checks(rt)
    await support.update_seller(rt, p1, auth_revoked=True)
    await tasks.health_checks(rt)
    async with rt.db.transaction() as session:
        await service.pause(rt, session, tenant.account_id, p2.id)
        stored = {c.id: c for c in await service.list_all(session, tenant.account_id)}
    response = await api.get("/api/marketplaces", headers=tenant.headers)
    assert response.headers["content-type"] == "application/json"
    body = MarketplacesOut.model_validate_json(response.content)
    assert body.model_dump_json().encode() == response.content
    expected = [
        {
            "MarketplaceId": c.id,
            "Platform": c.platform,
            "Country": c.country,
            "HealthStatus": c.health_status,
            "HealthStatusMessage": c.health_status_message,
            "IsHealthy": c.is_healthy,
            "RequiresReauthorization": c.requires_reauthorization,
            "LastPull": {
                "Status": c.last_pull_status,
                "TotalSkus": c.last_pull_total_skus,
                "CurrentSku": c.last_pull_current_sku,
            },
        }
        for c in (stored[p1.id], stored[p3.id])
    ]
    assert response.json() == {"Marketplaces": expected}
    assert [m["IsHealthy"] for m in expected] == [False, True]
