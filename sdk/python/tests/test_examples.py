"""The SDK's examples run against the demo tenant of `make run` (here on the test server), as a reader would
run them: as scripts, with the credentials in the environment."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import httpx
import pytest
from marketsync_client import webhooks

from marketsync.demo import run_demo
from marketsync.runtime import Runtime
from tests.support.sdk import draining_worker

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture
async def demo_env(rt: Runtime, api: httpx.AsyncClient) -> dict[str, str]:
    demo = await run_demo(rt)
    return {
        **os.environ,
        "MARKETSYNC_CLIENT_ID": demo["client_id"],
        "MARKETSYNC_CLIENT_SECRET": demo["client_secret"],
        "MARKETSYNC_BASE_URL": str(api.base_url),
    }


async def run(example: str, env: dict[str, str], *args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLES / example),
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, stderr.decode()
    return stdout.decode()


async def test_the_examples_run_against_the_demo_tenant(rt: Runtime, demo_env: dict[str, str]) -> None:
    tour = await run("tour.py", demo_env)
    assert "marketplace P1 UK" in tour and "catalogue:" in tour and "orders waiting to ship:" in tour
    assert "at its own quantity: Unchanged" in tour

    async with draining_worker(rt):
        created = await run("create_product.py", demo_env, "--sku", "SDK-EXAMPLE-1")
        shipped = await run("ship_orders.py", demo_env, "--reference", "ERP-7")
    assert "SDK-EXAMPLE-1: Create, publish job" in created and "publish job Completed" in created
    assert ": Shipped" in shipped and "reference ERP-7 attached" in shipped

    reconciled = await run("reconcile.py", demo_env)
    assert "first pass:" in reconciled and "1 changed" in reconciled and "walk:" in reconciled


async def test_the_example_receiver_verifies_acknowledges_and_applies(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLES / "webhook_receiver.py"),
        "--port",
        "0",
        "--secret",
        "s3cret",
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    try:
        port = json.loads(await asyncio.wait_for(process.stdout.readline(), 30))["listening"]
        body = json.dumps(
            {
                "occurredAt": "2026-01-01T00:00:00.000Z",
                "source": {"writer": "MerchantPush", "channel": "FileImport", "userPlatformId": None},
                "changed": [{"sku": "A", "price": 2.5, "quantity": 0}],
                "truncated": False,
                "totalChanged": 1,
            }
        ).encode()
        now = int(time.time())
        headers = {
            "X-SVC-Signature": webhooks.sign("s3cret", now, body),
            "X-SVC-Timestamp": str(now),
            "X-SVC-Event": "InventoryChanged",
            "X-SVC-Delivery-Id": "D-1",
            "X-SVC-Attempt": "1",
            "Content-Type": "application/json",
        }
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            assert (await http.post("/hook", content=body, headers=headers)).status_code == 200
            assert (await http.post("/hook", content=body, headers=headers)).status_code == 200  # a retry
            forged = {**headers, "X-SVC-Signature": webhooks.sign("guess", now, body)}
            assert (await http.post("/hook", content=body, headers=forged)).status_code == 401
        first = json.loads(await asyncio.wait_for(process.stdout.readline(), 30))
        second = json.loads(await asyncio.wait_for(process.stdout.readline(), 30))
        assert first == {
            "delivery": "D-1",
            "event": "InventoryChanged",
            "applied": [{"sku": "A", "price": "2.5", "quantity": 0}],
        }
        assert second["applied"] == []  # the retry changed nothing
    finally:
        process.terminate()
        await process.wait()
