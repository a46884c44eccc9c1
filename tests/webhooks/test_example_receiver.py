"""The example receiver in examples/ (stdlib only) accepts real deliveries, de-duplicates retries on the
Delivery-Id, applies only differences, and refuses what does not verify."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from marketsync_client.webhooks import sign
from sqlalchemy import update

from marketsync.models.webhooks import WebhookDelivery
from marketsync.runtime import Runtime
from marketsync.webhooks import engine
from tests.support.factories import make_tenant
from tests.webhooks.conftest import Tls
from tests.webhooks.receiver import HOSTNAME
from tests.webhooks.support import attempts, fire, pump, subscribe

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "webhook_receiver.py"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Example:
    """The example receiver as a subprocess; each processed delivery is one JSON line on its stdout."""

    def __init__(self) -> None:
        self.process: asyncio.subprocess.Process | None = None

    async def start(self, port: int, secret: str, certfile: str, state: Path) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(EXAMPLE),
            "--port",
            str(port),
            # One argument: a secret is URL-safe base64 and may start with "-", which argparse would read as an option.
            f"--secret={secret}",
            "--certfile",
            certfile,
            "--state",
            str(state),
            stdout=asyncio.subprocess.PIPE,
        )
        assert (await self.line())["listening"] == port

    async def line(self) -> dict[str, Any]:
        assert self.process is not None and self.process.stdout is not None
        parsed: dict[str, Any] = json.loads(await asyncio.wait_for(self.process.stdout.readline(), 30))
        return parsed


@pytest.fixture
async def example() -> AsyncIterator[Example]:
    running = Example()
    yield running
    if running.process is not None:
        running.process.terminate()
        await running.process.wait()


async def test_example_receiver_processes_once_and_applies_only_differences(
    rt: Runtime, api: httpx.AsyncClient, example: Example, tls: Tls, tmp_path: Path
) -> None:
    tenant = await make_tenant(rt, api)
    port = free_port()
    created = await subscribe(api, tenant, f"https://{HOSTNAME}:{port}/hook")
    await example.start(port, created["Secret"], tls.cert_file, tmp_path / "receiver.db")

    payload = {
        "occurredAt": "2026-01-01T00:00:00.000Z",
        "source": {"writer": "MerchantPush", "channel": "FileImport", "userPlatformId": None},
        "changed": [{"sku": "A", "price": 9.5, "quantity": 0}, {"sku": "B", "price": None, "quantity": 3}],
        "truncated": False,
        "totalChanged": 2,
    }
    await fire(rt, tenant.account_id, payload=payload)
    await pump(rt, lambda: True)
    first = await example.line()
    assert first["event"] == "InventoryChanged"
    assert first["applied"] == [{"sku": "A", "price": "9.5", "quantity": 0}, {"sku": "B", "quantity": 3}]

    # The same values again (another event): nothing differs from what it holds, nothing is applied.
    await fire(rt, tenant.account_id, payload=payload)
    await pump(rt, lambda: True)
    assert (await example.line())["applied"] == []

    # A retry of the first delivery (same id, same bytes) is acknowledged and skipped as a duplicate.
    first_attempt = (await attempts(rt))[0]
    async with rt.db.transaction() as session:
        await session.execute(
            update(WebhookDelivery)
            .where(WebhookDelivery.id == first_attempt.delivery_id)
            .values(status="Pending", next_attempt_at=rt.clock.now(), finished_at=None)
        )
    await engine.deliver_due(rt, "retry-worker")
    assert await example.line() == {"delivery": first["delivery"], "event": "InventoryChanged", "duplicate": True}
    assert [a.status_code for a in await attempts(rt)] == [200, 200, 200]

    # Anything that does not verify is refused with 401 before any processing.
    async with httpx.AsyncClient(verify=False) as client:
        forged = await client.post(
            f"https://127.0.0.1:{port}/hook",
            content=b"{}",
            headers={"X-SVC-Timestamp": "1", "X-SVC-Signature": "v1=00", "X-SVC-Delivery-Id": "x"},
        )
    assert forged.status_code == 401


def load_example() -> Any:
    spec = importlib.util.spec_from_file_location("example_webhook_receiver", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_verifier_refuses_non_ascii_digits_instead_of_failing() -> None:
    receiver = load_example()
    body, now = b"{}", 1_700_000_000
    signed = {"X-SVC-Timestamp": str(now), "X-SVC-Signature": sign("secret", now, body)}
    assert receiver.verify("secret", signed, body, now=now)
    # "²" passes str.isdigit() but not int(): refused (401), not an exception that drops the connection.
    assert receiver.verify("secret", {**signed, "X-SVC-Timestamp": "\u00b2"}, body, now=now) is False


def test_example_worker_compares_exact_prices_and_survives_a_failed_delivery(tmp_path: Path) -> None:
    receiver = load_example()
    store = receiver.Store(str(tmp_path / "receiver.db"))

    def changed(price: str, delivery_id: str) -> dict[str, Any]:
        line = b'{"sku": "A", "price": ' + price.encode() + b', "quantity": 1}'
        body = b'{"source": {"channel": "Api"}, "changed": [' + line + b"]}"
        return dict(receiver.process_safely(store, delivery_id, "InventoryChanged", body, False))

    assert changed("10.50", "d1")["applied"] == [{"sku": "A", "price": "10.50", "quantity": 1}]
    # 10.5 is the price it holds: no difference (a float or text comparison would call it one).
    assert changed("10.5", "d2")["applied"] == []
    assert changed("0.30000000000000001", "d3")["applied"] == [{"sku": "A", "price": "0.30000000000000001"}]

    # A delivery that fails is reported and rolled back; the worker goes on with the next one.
    failed = receiver.process_safely(store, "d4", "InventoryChanged", b'{"changed": [{"price": 1}]}', False)
    assert failed["delivery"] == "d4" and failed["error"].startswith("KeyError")
    assert changed("11", "d4")["applied"] == [{"sku": "A", "price": "11"}]  # d4 was not recorded as processed
