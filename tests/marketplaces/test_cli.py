"""The operator commands of DESIGN.md section 5, run as separate processes on the test database:
what they change is seen by this process (the "running server") at its next cycle."""

from __future__ import annotations

from pathlib import Path

import httpx

from marketsync.marketplaces import tasks
from marketsync.runtime import Runtime
from tests.marketplaces import support
from tests.marketplaces.support import cli
from tests.support.factories import make_tenant


async def test_sandbox_commands_drive_the_marketplace(
    rt: Runtime, api: httpx.AsyncClient, database_url: str, tmp_path: Path
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    p1 = tenant.marketplace("P1")
    ids = ["--account", tenant.account_id, "--marketplace", p1.id]

    arrived = await cli(database_url, tmp_path, "sandbox", "orders-arrive", *ids, "--count", "3")
    assert arrived["Created"] == 3 and len(arrived["OrderIds"]) == 3

    pulled = await cli(database_url, tmp_path, "admin", "pull-orders", *ids)
    assert pulled["Status"] == "Completed" and pulled["NewOrderCount"] == 3
    assert [e["payload"]["NewOrderCount"] for e in await support.events(rt, tenant.account_id)] == [3]

    assert (await cli(database_url, tmp_path, "sandbox", "revoke-auth", *ids))["AuthRevoked"] is True
    await tasks.health_checks(rt)  # the running service's next cycle
    entry = (await api.get("/api/marketplaces", headers=tenant.headers)).json()["Marketplaces"][0]
    assert entry["HealthStatus"] == "UnAuthorized" and entry["RequiresReauthorization"] is True
    restored = await cli(database_url, tmp_path, "sandbox", "restore-auth", *ids)
    assert restored["HealthEvent"] == "MarketplaceRestored"
    assert [e["type"] for e in await support.events(rt, tenant.account_id)][-2:] == [
        "MarketplaceUnhealthy",
        "MarketplaceRestored",
    ]

    held = await cli(
        database_url, tmp_path, "sandbox", "set", *ids, "--sku", "CLI-1", "--price", "4.25", "--quantity", "8"
    )
    assert (held["Sku"], held["Price"], held["Quantity"]) == ("CLI-1", "4.25", 8)

    fault = await cli(database_url, tmp_path, "sandbox", "feed-fault", *ids, "--mode", "reject")
    assert fault["FeedFault"] == "reject"
    assert (await support.seller(rt, p1)).feed_fault == "reject"
    refused = await cli(database_url, tmp_path, "sandbox", "feed-fault", *ids, "--mode", "sometimes", expect_rc=1)
    assert refused["error"] == "validation-failed" and "Mode" in refused["errors"]


async def test_pause_resume_disconnect_commands(
    rt: Runtime, api: httpx.AsyncClient, database_url: str, tmp_path: Path
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P2", "DE"),))
    p2 = tenant.marketplace("P2")
    ids = ["--account", tenant.account_id, "--marketplace", p2.id]

    assert (await cli(database_url, tmp_path, "admin", "marketplace", "pause", *ids))["State"] == "Paused"
    assert (await api.get("/api/marketplaces", headers=tenant.headers)).json()["Marketplaces"] == []
    resumed = await cli(database_url, tmp_path, "admin", "marketplace", "resume", *ids)
    assert resumed["State"] == "Active" and len(resumed["JobIds"]) == 2
    gone = await cli(database_url, tmp_path, "admin", "marketplace", "disconnect", *ids)
    assert gone["Disconnected"] is True and gone["CancelledJobs"] == 2
    assert {(await support.job(rt, j)).status for j in resumed["JobIds"]} == {"Cancelled"}
    assert (await api.get("/api/marketplaces", headers=tenant.headers)).json()["Marketplaces"] == []
