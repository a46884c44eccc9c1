"""The deploy topology without containers: `marketsync db upgrade` once, two `serve --no-workers` and two `worker`
processes on loopback against PostgreSQL and Redis (compose.yaml's services, as processes). API-level checks go
through both API processes: a token from one works on the other, a push made through one is carried out by a worker
and read back through the other, the rate limit is one budget across processes (Redis), and both workers answer
their health and metrics endpoints."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from marketsync.runtime import Runtime
from tests.inventory.support import add_listing, add_products
from tests.support.factories import fetch_token, make_account, make_connection, make_credential
from tests.support.processes import free_port, process_env, spawn

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture(params=["postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    """The scale-out topology is PostgreSQL's (SQLite is one process: `marketsync serve`)."""
    return str(request.param)


@pytest.fixture
def redis_up() -> None:
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError:
        if os.environ.get("CI"):
            raise
        pytest.skip("Redis is not running on 127.0.0.1:6379 (the topology shares its rate limit there)")


@pytest.fixture
def topology(rt: Runtime, redis_up: None, tmp_path: Path) -> Iterator[tuple[list[str], list[str]]]:
    common = {
        "MARKETSYNC_REDIS_URL": REDIS_URL,
        "MARKETSYNC_MIGRATE_ON_START": "false",
        "MARKETSYNC_RATE_LIMIT": "10/minute",
        "MARKETSYNC_WORKER_POLL_S": "0.5",
    }
    upgrade = subprocess.run(
        [sys.executable, "-m", "marketsync", "db", "upgrade", "--json"],
        env=process_env(rt, **common), capture_output=True, timeout=120,
    )  # fmt: skip
    assert upgrade.returncode == 0, upgrade.stderr.decode()
    apis = [free_port(), free_port()]
    worker_ports = [free_port(), free_port()]
    processes = [
        spawn(rt, "serve", "--no-workers", "--port", str(port), log_path=tmp_path / f"api-{port}.log", **common)
        for port in apis
    ] + [
        spawn(
            rt, "worker", log_path=tmp_path / f"worker-{port}.log", MARKETSYNC_WORKER_METRICS_PORT=str(port), **common
        )
        for port in worker_ports
    ]
    try:
        yield [f"http://127.0.0.1:{port}" for port in apis], [f"http://127.0.0.1:{port}" for port in worker_ports]
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(timeout=30)


async def _ready(url: str, path: str) -> None:
    async with httpx.AsyncClient(timeout=2) as client:
        for _ in range(300):
            try:
                if (await client.get(f"{url}{path}")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError(f"{url}{path} never answered 200")


@pytest.mark.slow
async def test_two_api_processes_and_two_workers_share_one_service(
    rt: Runtime, topology: tuple[list[str], list[str]]
) -> None:
    apis, workers = topology
    for url in apis:
        await _ready(url, "/readyz")
    for url in workers:
        await _ready(url, "/healthz")

    account_id = await make_account(rt)
    connection = await make_connection(rt, account_id, "P1", "UK")
    ids = await add_products(rt, account_id, [("MUG", "9.50", 4)])
    await add_listing(rt, account_id, ids["MUG"], connection.id)
    credential = await make_credential(rt, account_id, ["InventoryRead", "InventoryWrite"])
    async with (
        httpx.AsyncClient(base_url=apis[0], timeout=30) as first,
        httpx.AsyncClient(base_url=apis[1], timeout=30) as second,
    ):
        token = await fetch_token(first, credential.client_id, credential.client_secret)
        headers = {"Authorization": f"Bearer {token}"}
        pushed = await second.post(
            "/api/inventory/price-quantity",
            json={"Items": [{"Sku": "MUG", "Quantity": 7}], "PropagateToListings": True},
            headers=headers,
        )
        assert pushed.status_code == 200, pushed.text
        [job_id] = pushed.json()["JobIds"]
        for _ in range(200):
            job = (await first.get(f"/api/jobs/{job_id}", headers=headers)).json()
            if job["IsComplete"]:
                break
            await asyncio.sleep(0.1)
        # Carried out by a worker (the sandbox refuses a listing it never published: Failed is an outcome too).
        assert job["IsComplete"] and job["Status"] in ("Completed", "Failed"), job
        product = (await first.get("/api/products/MUG", headers=headers)).json()
        assert product["Product"]["Quantity"] == 7

        # One rate-limit budget across both API processes (10/minute, shared through Redis).
        limited = await make_credential(rt, account_id, ["InventoryRead"])
        limited_token = await fetch_token(second, limited.client_id, limited.client_secret)
        statuses = [
            (await (first if n % 2 else second).get(
                "/api/marketplaces", headers={"Authorization": f"Bearer {limited_token}"}
            )).status_code
            for n in range(14)
        ]  # fmt: skip
        assert statuses.count(200) + statuses.count(403) == 10 and statuses[10:] == [429] * 4, statuses

    ran = 0.0
    async with httpx.AsyncClient(timeout=5) as client:
        for url in workers:
            metrics = (await client.get(f"{url}/metrics")).text
            assert "marketsync_jobs_open" in metrics or "marketsync_job_runs_total" in metrics
            ran += sum(
                float(line.rsplit(" ", 1)[1])
                for line in metrics.splitlines()
                if line.startswith("marketsync_job_runs_total{") and 'type="PriceStockPush"' in line
            )
    assert ran == 1  # carried out once, by one of the two workers
