"""Observability: the asynchronous side's metrics (queue depth and age, job outcomes, deliveries, marketplace health,
pools) on the API's /metrics and on a worker's own port with its health endpoint; /metrics can be turned off or
protected; log lines name the account and credential, never a secret."""

from __future__ import annotations

import asyncio
import re
import signal
from typing import Any

import httpx
import pytest

from marketsync.jobs import service as job_service
from marketsync.jobs.types import payload_for
from marketsync.runtime import Runtime
from tests.support import tasks as test_tasks
from tests.support.factories import make_account, make_connection, make_tenant
from tests.support.processes import free_port, spawn


def sample(metrics: str, name: str, labels: str = "") -> float | None:
    pattern = rf"^{re.escape(name)}{{{re.escape(labels)}}} (\S+)$" if labels else rf"^{re.escape(name)} (\S+)$"
    match = re.search(pattern, metrics, re.M)
    return float(match.group(1)) if match else None


@pytest.fixture
def settings_overrides() -> dict[str, object]:
    return {"task_modules": "tests.support.tasks"}


async def _enqueue(rt: Runtime, account_id: str, **payload: Any) -> str:
    async with rt.db.transaction() as session:
        return job_service.enqueue(session, rt.clock.now(), account_id, payload_for(test_tasks.SLOW_EFFECT, payload)).id


async def test_metrics_show_queue_depth_age_and_marketplace_health(rt: Runtime, api: httpx.AsyncClient) -> None:
    account_id = await make_account(rt)
    for _ in range(3):
        await _enqueue(rt, account_id)
    await make_connection(rt, account_id, "P1", "UK")
    await asyncio.sleep(0.05)
    metrics = (await api.get("/metrics")).text
    assert sample(metrics, "marketsync_jobs_open", 'status="Published",type="Test.SlowEffect"') == 3
    age = sample(metrics, "marketsync_jobs_oldest_ready_age_seconds", 'type="Test.SlowEffect"')
    assert age is not None and 0 < age < 60
    assert sample(metrics, "marketsync_marketplace_connections", 'health="Healthy",platform="P1",state="Active"') == 1
    for name in ("marketsync_webhook_deliveries_pending", "marketsync_events_undispatched",
                 "marketsync_webhook_subscriptions_disabled"):  # fmt: skip
        assert sample(metrics, name) is not None, name
    assert sample(metrics, "marketsync_db_pool_connections", 'pool="read",use="size"') is not None


@pytest.mark.parametrize("settings_overrides", [{"metrics_token": "scrape-token-0123456789"}])
async def test_metrics_can_be_protected_by_a_token(rt: Runtime, api: httpx.AsyncClient) -> None:
    assert (await api.get("/metrics")).status_code == 401
    wrong = await api.get("/metrics", headers={"Authorization": "Bearer scrape-token-0000000000"})
    assert wrong.status_code == 401
    right = await api.get("/metrics", headers={"Authorization": "Bearer scrape-token-0123456789"})
    assert right.status_code == 200 and "marketsync_db_pool_connections" in right.text


@pytest.mark.parametrize("settings_overrides", [{"metrics": False}])
async def test_metrics_can_be_turned_off_on_the_api_port(rt: Runtime, api: httpx.AsyncClient) -> None:
    assert (await api.get("/metrics")).status_code == 404


@pytest.mark.slow
async def test_a_worker_serves_metrics_and_health_on_its_own_port(rt: Runtime, tmp_path: Any) -> None:
    port = free_port()
    account_id = await make_account(rt)
    worker = spawn(
        rt, "worker", log_path=tmp_path / "worker.log",
        MARKETSYNC_WORKER_METRICS_PORT=str(port), MARKETSYNC_TASK_MODULES="tests.support.tasks",
    )  # fmt: skip
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            health = None
            for _ in range(200):
                try:
                    health = await client.get("/healthz")
                    if health.status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
            assert health is not None and health.status_code == 200 and health.json()["status"] == "ok"
            job_id = await _enqueue(rt, account_id)
            for _ in range(100):
                if await job_service.job_status(rt, job_id) == "Completed":
                    break
                await asyncio.sleep(0.1)
            metrics = (await client.get("/metrics")).text
            assert sample(metrics, "marketsync_job_runs_total", 'outcome="Completed",type="Test.SlowEffect"') == 1
            assert sample(metrics, "marketsync_jobs_open", 'status="Published",type="Test.SlowEffect"') is None
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
    assert worker.returncode == 0


async def test_log_lines_name_the_account_and_credential_never_the_token(
    rt: Runtime, api: httpx.AsyncClient, capsys: pytest.CaptureFixture[str]
) -> None:
    tenant = await make_tenant(rt, api)
    capsys.readouterr()
    assert (await api.get("/api/marketplaces", headers=tenant.headers)).status_code == 200
    logged = capsys.readouterr().err
    [line] = [line for line in logged.splitlines() if '"path":"/api/marketplaces"' in line]
    assert f'"account_id":"{tenant.account_id}"' in line
    assert f'"credential_id":"{tenant.credential.credential_id}"' in line
    assert tenant.token not in logged and tenant.credential.client_secret not in logged
