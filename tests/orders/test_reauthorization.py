"""A P1 connection that must be reauthorised: writes say so in Warnings, and the write-back waits for the
reconnection instead of ending Failed, then sends the change once the connection is healthy again."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import update

from marketsync.jobs.worker import Worker
from marketsync.marketplaces import service as marketplaces
from marketsync.marketplaces.sandbox import state as sandbox
from marketsync.models import Job, MarketplaceConnection
from marketsync.runtime import Runtime
from tests.orders.support import listed, pull_everything, sandbox_orders_arrive
from tests.support.factories import make_tenant


async def revoke_at_sandbox(rt: Runtime, connection: MarketplaceConnection, revoked: bool) -> None:
    async with rt.db.transaction() as session:
        seller = await sandbox.ensure_seller(
            session, connection.id, connection.platform, connection.country, rt.clock.now()
        )
        seller.auth_revoked = revoked


async def job_status(rt: Runtime, job_id: str) -> str:
    async with rt.db.read() as session:
        job = await session.get(Job, job_id, populate_existing=True)
        assert job is not None
        return job.status


async def make_runnable_now(rt: Runtime, job_ids: list[str]) -> None:
    async with rt.db.transaction() as session:
        await session.execute(update(Job).where(Job.id.in_(job_ids)).values(run_after=rt.clock.now()))


async def test_writes_to_an_unauthorised_p1_warn_and_wait_for_reconnection(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    connection = tenant.marketplace("P1")
    await sandbox_orders_arrive(rt, connection, 2)
    await pull_everything(rt, connection)
    first, second = await listed(api, tenant)

    async def confirm(order: dict[str, Any]) -> dict[str, object]:
        """Ship every item of the order."""
        items = [{"OrderItemId": item["OrderItemId"], "TrackingNumber": "T-1"} for item in order["Items"]]
        response = await api.post(
            "/api/orders/Confirm",
            json={"OrderItems": items},
            headers=tenant.headers,
        )
        assert response.status_code == 200, response.text
        body: dict[str, object] = response.json()
        return body

    # Revoked at the marketplace before anyone here noticed: no warning yet; the job meets the revocation,
    # records the connection's health, and goes back to the queue instead of failing.
    await revoke_at_sandbox(rt, connection, True)
    unnoticed = await confirm(first)
    assert unnoticed["Warnings"] == []
    [first_job] = unnoticed["JobIds"]  # type: ignore[misc]
    await Worker(rt).drain()
    assert await job_status(rt, first_job) == "Published"
    health = (await api.get("/api/marketplaces", headers=tenant.headers)).json()["Marketplaces"][0]
    assert health["RequiresReauthorization"] is True

    # Now the service knows: the write is saved, queued, and the response says what must happen.
    known = await confirm(second)
    [warning] = known["Warnings"]  # type: ignore[misc]
    assert "P1 UK" in warning and "reconnected" in warning and "reauthorised" in warning
    [second_job] = known["JobIds"]  # type: ignore[misc]
    await make_runnable_now(rt, [first_job, second_job])
    await Worker(rt).drain()
    assert [await job_status(rt, j) for j in (first_job, second_job)] == ["Published", "Published"]

    # Reconnected in the app: the next health check clears it and both changes go out.
    await revoke_at_sandbox(rt, connection, False)
    await marketplaces.check_health(rt, connection)
    await make_runnable_now(rt, [first_job, second_job])
    for _ in range(40):
        await Worker(rt).drain()
        statuses = [await job_status(rt, j) for j in (first_job, second_job)]
        if statuses == ["Completed", "Completed"]:
            break
        await make_runnable_now(rt, [first_job, second_job])  # still processing at the sandbox
    assert statuses == ["Completed", "Completed"]
    await pull_everything(rt, connection)
    assert [o["MarketplaceStatus"] for o in await listed(api, tenant)] == ["Shipped", "Shipped"]
