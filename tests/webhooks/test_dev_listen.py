"""`marketsync dev listen` as an integrator runs it (docs/decisions/0422): a real `marketsync serve` in dev mode, the
command as a subprocess, and the integrator's own receiver on loopback. Deliveries arrive verified and are forwarded
with their original headers (the receiver verifies them too); the subscription is deleted on SIGINT and SIGTERM,
also when the receiver was never up; a service outside dev mode is named as the reason it cannot work."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from marketsync_client import webhooks
from sqlalchemy import select

from marketsync.marketplaces.registry import compose_connectors
from marketsync.models.webhooks import WebhookSubscription
from marketsync.runtime import Runtime
from tests.conftest import test_settings as settings_for
from tests.support.databases import SqliteTemplate
from tests.support.factories import make_account, make_credential
from tests.support.processes import REPO_ROOT, free_port, process_env, spawn
from tests.webhooks.receiver import Receiver, serve_https
from tests.webhooks.support import fire

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def fake_dns() -> None:
    """Processes here resolve nothing: every URL is an IP literal (the package's autouse resolver is not needed)."""


@pytest.fixture
async def dev_rt(sqlite_template: SqliteTemplate, tmp_path: Path) -> AsyncIterator[Runtime]:
    """The database `make run` would use (SQLite), seen from the test: for the credential and to fire events."""
    settings = settings_for(
        sqlite_template.fresh(tmp_path), tmp_path / "var", webhook_allowed_networks="", webhook_retry_scale=0.001
    )
    runtime = compose_connectors(Runtime.create(settings))
    try:
        yield runtime
    finally:
        await runtime.close()


@asynccontextmanager
async def service(rt: Runtime, tmp_path: Path, *, dev_mode: bool = True) -> AsyncIterator[str]:
    """`marketsync serve` (workers included) on the test's database, as `make run` starts it."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    server = spawn(
        rt, "serve", "--port", str(port), log_path=tmp_path / f"serve-{port}.log",
        MARKETSYNC_DEV_MODE="true" if dev_mode else "false", MARKETSYNC_BASE_URL=base_url,
    )  # fmt: skip
    try:
        async with httpx.AsyncClient(base_url=base_url) as client:
            for _ in range(600):
                try:
                    if (await client.get("/readyz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("the service did not start")
        yield base_url
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


class DevListen:
    """`marketsync dev listen --json` as a subprocess; its JSON lines read as they come."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[dict[str, Any]] = []

    async def next(self, kind: str, timeout: float = 30.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                assert self.process.stdout is not None
                raw = await self.process.stdout.readline()
                if not raw:
                    raise AssertionError(f"dev listen ended before a {kind} line: {self.lines}")
                line = json.loads(raw)
                self.lines.append(line)
                if line["Kind"] == kind:
                    return line

    async def stop(self, sig: signal.Signals) -> int:
        self.process.send_signal(sig)
        async with asyncio.timeout(30):
            return await self.process.wait()


@asynccontextmanager
async def dev_listen(
    rt: Runtime, base_url: str, client_id: str, client_secret: str, *args: str
) -> AsyncIterator[DevListen]:
    env = process_env(
        rt, MARKETSYNC_BASE_URL=base_url, MARKETSYNC_CLIENT_ID=client_id, MARKETSYNC_CLIENT_SECRET=client_secret
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "marketsync", "dev", "listen", "--json", *args,
        cwd=REPO_ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        yield DevListen(process)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def credential(rt: Runtime) -> tuple[str, str, str]:
    """An account and a credential with WebhooksWrite only (all dev listen needs)."""
    account_id = await make_account(rt)
    made = await make_credential(rt, account_id, ["WebhooksWrite"])
    return account_id, made.client_id, made.client_secret


async def subscriptions_of(rt: Runtime, account_id: str) -> list[WebhookSubscription]:
    async with rt.db.read() as session:
        query = select(WebhookSubscription).where(WebhookSubscription.account_id == account_id)
        return list((await session.execute(query)).scalars().all())


async def test_a_delivery_goes_through_dev_listen_verified_and_the_subscription_goes_on_exit(
    dev_rt: Runtime, tmp_path: Path
) -> None:
    account_id, client_id, client_secret = await credential(dev_rt)
    async with (
        service(dev_rt, tmp_path) as base_url,
        serve_https(Receiver(), None) as receiver,
        dev_listen(
            dev_rt, base_url, client_id, client_secret,
            "--forward-to", f"http://127.0.0.1:{receiver.port}/my/hooks", "--send-test",
        ) as listening,
    ):  # fmt: skip
        ready = await listening.next("Ready")
        secret, subscription_id = ready["Secret"], ready["SubscriptionId"]
        assert ready["Url"].startswith("http://127.0.0.1:") and len(ready["EventTypes"]) == 6
        [subscribed] = await subscriptions_of(dev_rt, account_id)
        assert subscribed.id == subscription_id and subscribed.url == ready["Url"]

        # The test event, sent through the API (POST /api/webhooks/Test) once subscribed.
        sent = await listening.next("TestSent")
        delivered = await listening.next("Delivery")
        assert delivered["DeliveryId"] == sent["DeliveryId"] and delivered["Verified"] and delivered["IsTest"]
        assert (await listening.next("Forwarded"))["Status"] == 200
        # A real event, fired where the service fires them.
        await fire(dev_rt, account_id)
        real = await listening.next("Delivery")
        assert not real["IsTest"] and real["Event"] == "InventoryChanged" and '"changed"' in real["Body"]
        assert (await listening.next("Forwarded"))["Status"] == 200

        # The receiver got both, byte for byte with the original headers: its own verification passes.
        assert [r.path for r in receiver.received] == ["/my/hooks", "/my/hooks"]
        for request, line in zip(receiver.received, (delivered, real), strict=True):
            parsed = webhooks.construct_event(secret, request.headers, request.body)
            assert parsed.delivery_id == line["DeliveryId"] and parsed.is_test == line["IsTest"]
        assert receiver.received[0].headers["x-svc-test"] == "true"

        assert await listening.stop(signal.SIGTERM) == 0
        stopped = await listening.next("Stopped")
        assert stopped == {"Kind": "Stopped", "SubscriptionId": subscription_id, "Deleted": True}
    assert await subscriptions_of(dev_rt, account_id) == []


async def test_the_subscription_goes_on_ctrl_c_also_when_the_receiver_is_down(dev_rt: Runtime, tmp_path: Path) -> None:
    account_id, client_id, client_secret = await credential(dev_rt)
    closed_port = free_port()  # nothing listens there
    async with (
        service(dev_rt, tmp_path) as base_url,
        dev_listen(
            dev_rt, base_url, client_id, client_secret,
            "--forward-to", f"http://127.0.0.1:{closed_port}/hooks", "--events", "FeedOutcome", "--send-test",
        ) as listening,
    ):  # fmt: skip
        ready = await listening.next("Ready")
        assert ready["EventTypes"] == ["FeedOutcome"]
        assert (await listening.next("Delivery"))["Event"] == "FeedOutcome"
        unreachable = await listening.next("Forwarded")
        assert unreachable["Status"] is None and unreachable["Error"] == "ConnectError"
        # The service heard 502 and retries on its schedule (scaled down here): the same delivery comes again.
        again = await listening.next("Delivery")
        assert again["DeliveryId"] == unreachable["DeliveryId"] and again["Attempt"] == "2"
        assert len(await subscriptions_of(dev_rt, account_id)) == 1

        assert await listening.stop(signal.SIGINT) == 0
        assert (await listening.next("Stopped"))["Deleted"] is True
    assert await subscriptions_of(dev_rt, account_id) == []


async def test_a_service_outside_dev_mode_is_named_as_the_reason(dev_rt: Runtime, tmp_path: Path) -> None:
    account_id, client_id, client_secret = await credential(dev_rt)
    async with (
        service(dev_rt, tmp_path, dev_mode=False) as base_url,
        dev_listen(dev_rt, base_url, client_id, client_secret, "--forward-to", "http://127.0.0.1:9/hooks") as listening,
    ):
        async with asyncio.timeout(60):
            status = await listening.process.wait()
        assert listening.process.stderr is not None
        said = (await listening.process.stderr.read()).decode()
    assert status == 2 and "run it in dev mode (MARKETSYNC_DEV_MODE=true" in said and "Traceback" not in said
    assert await subscriptions_of(dev_rt, account_id) == []


async def test_dev_listen_needs_a_credential_and_a_forward_url(dev_rt: Runtime) -> None:
    async with dev_listen(dev_rt, "http://127.0.0.1:9", "", "", "--forward-to", "http://127.0.0.1:9/") as listening:
        assert await listening.process.wait() == 2
        assert listening.process.stderr is not None
        said = (await listening.process.stderr.read()).decode()
        assert "set MARKETSYNC_CLIENT_ID and MARKETSYNC_CLIENT_SECRET" in said
    async with dev_listen(dev_rt, "http://127.0.0.1:9", "id", "secret", "--forward-to", "ftp://x/") as listening:
        assert await listening.process.wait() == 2
        assert listening.process.stderr is not None
        assert "must be an absolute http(s) URL" in (await listening.process.stderr.read()).decode()
