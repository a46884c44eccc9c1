"""Deliveries made by real workers: an in-process Worker, and a subprocess worker killed with SIGKILL
mid-delivery whose delivery another worker completes (same Delivery-Id, same bytes)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import httpx

from marketsync.jobs.worker import Worker
from marketsync.runtime import Runtime
from marketsync.webhooks import verify
from tests.support.factories import make_tenant
from tests.webhooks.conftest import Tls
from tests.webhooks.receiver import Received, Receiver, serve_https
from tests.webhooks.support import attempts, deliveries, fire, pump, subscribe


async def test_a_running_worker_fans_out_and_delivers(rt: Runtime, api: httpx.AsyncClient, receiver: Receiver) -> None:
    tenant = await make_tenant(rt, api)
    inventory = await subscribe(api, tenant, receiver.url("/inventory"), ["InventoryChanged"])
    feeds = await subscribe(api, tenant, receiver.url("/feeds"), ["FeedOutcome", "InventoryChanged"])
    await subscribe(api, tenant, receiver.url("/orders"), ["OrdersDownloaded"])
    receiver.script = [500]  # the first request fails once and is retried by the worker
    stop = asyncio.Event()
    running = asyncio.create_task(Worker(rt).run(stop))
    try:
        await fire(rt, tenant.account_id)
        await receiver.wait_for(3)
    finally:
        stop.set()
        await running
    by_path: dict[str, list[Received]] = {}
    for request in receiver.received:
        by_path.setdefault(request.path, []).append(request)
    assert set(by_path) == {"/inventory", "/feeds"}  # /orders did not name InventoryChanged
    assert verify(inventory["Secret"], by_path["/inventory"][-1].headers, by_path["/inventory"][-1].body)
    assert verify(feeds["Secret"], by_path["/feeds"][-1].headers, by_path["/feeds"][-1].body)
    assert not verify(feeds["Secret"], by_path["/inventory"][-1].headers, by_path["/inventory"][-1].body)
    ids = {r.delivery_id for r in receiver.received}
    assert len(ids) == 2  # one logical delivery per subscription; the retry kept its id


async def test_worker_killed_mid_delivery_loses_nothing(
    rt: Runtime, api: httpx.AsyncClient, tls: Tls, tmp_path: Path
) -> None:
    release = asyncio.Event()

    async def hold_first(request: Received) -> int:
        if request.attempt == 1:
            await release.wait()  # the worker is killed while this request is open
        return 200

    # A subprocess cannot use the injected resolver, so the URL is an IP literal (no resolution at all)
    # inside the allowed networks, served with a certificate for that IP.
    async with serve_https(Receiver(behaviour=hold_first), tls.ip_cert_file) as receiver:
        tenant = await make_tenant(rt, api)
        created = await subscribe(api, tenant, receiver.url(host="127.0.0.1"))
        await fire(rt, tenant.account_id)
        settings = rt.settings
        env = {
            **os.environ,
            "MARKETSYNC_DATABASE_URL": settings.database_url,
            "MARKETSYNC_VAR_DIR": str(tmp_path / "worker-var"),
            "MARKETSYNC_ENCRYPTION_KEYS": settings.encryption_keys or "",
            "MARKETSYNC_SECRET_HASH_KEY": settings.secret_hash_key or "",
            "MARKETSYNC_WEBHOOK_CA_BUNDLE": tls.ca_file,
            "MARKETSYNC_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
            "MARKETSYNC_WEBHOOK_TIMEOUT_S": "2",
            "MARKETSYNC_JOB_LEASE_S": "1",
            "MARKETSYNC_WORKER_POLL_S": "0.05",
            "MARKETSYNC_ORDER_PULL_INTERVAL_S": "3600",
            "MARKETSYNC_LOG_LEVEL": "WARNING",
        }
        with open(tmp_path / "worker.log", "wb") as log:
            worker = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "marketsync", "worker", env=env, stdout=log, stderr=log
            )
            try:
                await receiver.wait_for(1, timeout=60)
            finally:
                worker.send_signal(signal.SIGKILL)
                await worker.wait()
        assert worker.returncode == -signal.SIGKILL
        [held] = await deliveries(rt)
        assert held.status == "Pending" and held.lease_owner is not None and held.attempts == 1

        # Another worker takes the delivery over once the dead worker's lease expires.
        await pump(rt, lambda: len(receiver.received) >= 2, worker_id="rescuer")
        release.set()
        first, second = receiver.received[:2]
        assert second.delivery_id == first.delivery_id == held.id
        assert second.body == first.body
        assert (first.attempt, second.attempt) == (1, 2)
        assert verify(created["Secret"], second.headers, second.body)
        await pump(rt, lambda: True, worker_id="rescuer")
        [done] = await deliveries(rt)
        assert done.status == "Succeeded"
        logged = await attempts(rt)
        assert [(a.attempt, a.outcome, a.error_class) for a in logged] == [
            (1, "Abandoned", "WorkerLost"),
            (2, "Succeeded", None),
        ]
