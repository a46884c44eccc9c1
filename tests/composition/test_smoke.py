from __future__ import annotations

import httpx

from marketsync.runtime import Runtime
from tests.support.factories import make_tenant


async def test_token_then_marketplaces(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P2", "DE")))
    response = await api.get("/api/marketplaces", headers=tenant.headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert [m["Platform"] for m in body["Marketplaces"]] == ["P1", "P2"]
    assert body["Marketplaces"][0]["HealthStatus"] is None
    assert response.headers["x-request-id"]
