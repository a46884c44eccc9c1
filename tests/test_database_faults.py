"""Database faults on PostgreSQL: connections terminated under the service, between requests and mid-request.
Requests answer 503 problem details with Retry-After, never a 500 and never a partial write; the service recovers by
itself within seconds. (Workers under the same fault: docs/reliability.md, an open finding.)"""

from __future__ import annotations

import asyncio

import asyncpg  # type: ignore[import-untyped]
import httpx
import pytest

from marketsync.db_fast import asyncpg_connect_args
from marketsync.runtime import Runtime
from tests.inventory.support import add_products, stored
from tests.support.factories import make_tenant


@pytest.fixture(params=["postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    """Terminating server connections is PostgreSQL's fault mode (SQLite is a file in the process)."""
    return str(request.param)


@pytest.fixture
def settings_overrides() -> dict[str, object]:
    return {"task_modules": "tests.support.tasks"}


async def _terminate_everything(rt: Runtime) -> int:
    """pg_terminate_backend on every other connection of the test database (what a PostgreSQL restart does)."""
    args, kwargs = asyncpg_connect_args(rt.db.url, rt.db.engine.dialect)
    admin = await asyncpg.connect(*args, **kwargs)
    try:
        return int(
            await admin.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
    finally:
        await admin.close()


def _unavailable_or_ok(response: httpx.Response) -> None:
    assert response.status_code in (200, 503), (response.status_code, response.text)
    if response.status_code == 503:
        assert response.headers["content-type"].startswith("application/problem+json")
        assert response.headers["retry-after"] == "1" and response.json()["code"] == "unavailable"


async def _recovers(api: httpx.AsyncClient, headers: dict[str, str], seconds: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline:
        response = await api.post("/api/products/List", json={"Limit": 5}, headers=headers)
        _unavailable_or_ok(response)
        if response.status_code == 200:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the service did not recover from lost connections")


async def test_requests_after_lost_connections_answer_503_then_the_service_recovers(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("MUG", "9.50", 4)])
    assert (await api.post("/api/products/List", json={}, headers=tenant.headers)).status_code == 200
    assert await _terminate_everything(rt) >= 1
    for _ in range(5):
        _unavailable_or_ok(await api.post("/api/products/List", json={"Limit": 5}, headers=tenant.headers))
    await _recovers(api, tenant.headers)


async def test_pushes_cut_mid_request_are_either_applied_whole_or_not_at_all(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api)
    skus = [f"SKU-{n}" for n in range(20)]
    await add_products(rt, tenant.account_id, [(sku, "1.00", 0) for sku in skus])
    answered: list[tuple[int, httpx.Response]] = []

    async def push(value: int) -> None:
        items = [{"Sku": sku, "Quantity": value} for sku in skus]
        response = await api.post("/api/inventory/price-quantity", json={"Items": items}, headers=tenant.headers)
        answered.append((value, response))

    pushes = [asyncio.create_task(push(value)) for value in range(1, 31)]
    for _ in range(3):
        await asyncio.sleep(0.05)
        await _terminate_everything(rt)
    await asyncio.gather(*pushes)
    for _value, response in answered:
        _unavailable_or_ok(response)
    await _recovers(api, tenant.headers)
    # One transaction per push: every SKU holds the same value, one of the pushes' (never a mix of two).
    quantities = {quantity for _price, quantity, _at in (await stored(rt, tenant.account_id)).values()}
    assert len(quantities) == 1
    [final] = quantities
    assert final == 0 or final in {value for value, response in answered if response.status_code in (200, 503)}
