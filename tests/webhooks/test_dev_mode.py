"""Dev mode (docs/decisions/0420): webhooks may reach loopback, over plain http too, for `marketsync dev listen`.
Refused at start on PostgreSQL, with a base URL that is not loopback, and for `serve` on a non-loopback host; outside
the mode the SSRF guard is exactly as strict as before (plain http refused at create and at every delivery)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from marketsync.app import create_app
from marketsync.config import Settings
from marketsync.marketplaces.registry import compose_connectors
from marketsync.runtime import Runtime
from marketsync.webhooks.ssrf import RESOLVER_KEY, StaticResolver
from tests.conftest import TEST_ENCRYPTION_KEYS, TEST_HASH_KEY
from tests.conftest import test_settings as settings_for
from tests.support.databases import SqliteTemplate
from tests.support.factories import make_tenant, problem
from tests.support.processes import REPO_ROOT
from tests.support.server import serve
from tests.webhooks.receiver import Receiver, serve_https
from tests.webhooks.support import attempts, fire, pump, subscribe

DEV_DNS = {
    "localhost": ["127.0.0.1", "::1"],
    "hooks.example.test": "127.0.0.1",
    "private.example.test": "10.1.2.3",
    "public.example.test": "93.184.215.14",
}


@pytest.fixture(autouse=True)
def fake_dns() -> None:
    """This module's runtimes get their own static resolver (the package's autouse one would open `rt`)."""


@pytest.fixture
async def dev_rt(sqlite_template: SqliteTemplate, tmp_path: Path) -> AsyncIterator[Runtime]:
    """A runtime in dev mode on SQLite, with no allowed networks: whatever reaches loopback, dev mode allowed."""
    settings = settings_for(
        sqlite_template.fresh(tmp_path), tmp_path / "var", dev_mode=True, webhook_allowed_networks="",
        webhook_timeout_s=2.0,
    )  # fmt: skip
    runtime = compose_connectors(Runtime.create(settings))
    runtime.extras[RESOLVER_KEY] = StaticResolver(DEV_DNS)
    try:
        yield runtime
    finally:
        await runtime.close()


@pytest.fixture
async def dev_api(dev_rt: Runtime) -> AsyncIterator[httpx.AsyncClient]:
    async with serve(create_app(dev_rt)) as base_url, httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        yield client


@pytest.fixture
async def plain_receiver() -> AsyncIterator[Receiver]:
    async with serve_https(Receiver(), None) as running:
        yield running


# --- refusals at start ---------------------------------------------------------------------------------------


def _settings(**values: Any) -> Settings:
    return Settings(encryption_keys=TEST_ENCRYPTION_KEYS, secret_hash_key=TEST_HASH_KEY, **values)


@pytest.mark.parametrize(
    "base_url", ["http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000", "http://127.0.0.2"]
)
def test_dev_mode_is_accepted_on_sqlite_with_a_loopback_base_url(base_url: str, tmp_path: Path) -> None:
    assert _settings(database_url=f"sqlite:///{tmp_path}/x.db", base_url=base_url, dev_mode=True).dev_mode


@pytest.mark.parametrize(
    ("database_url", "base_url", "refusal"),
    [
        ("postgresql://root@127.0.0.1:5432/test", "http://127.0.0.1:8000", "refused on PostgreSQL"),
        ("postgres://root@127.0.0.1/test", "http://127.0.0.1:8000", "refused on PostgreSQL"),
        ("sqlite:///x.db", "https://api.example.com", "needs a loopback base URL"),
        ("sqlite:///x.db", "http://10.0.0.5:8000", "needs a loopback base URL"),
        ("sqlite:///x.db", "http://127.0.0.1.example.com", "needs a loopback base URL"),
        ("sqlite:///x.db", "http://0.0.0.0:8000", "needs a loopback base URL"),
    ],
)
def test_dev_mode_is_refused_on_postgresql_or_with_a_public_base_url(
    database_url: str, base_url: str, refusal: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        _settings(database_url=database_url, base_url=base_url, dev_mode=True)
    [error] = refused.value.errors()
    assert error["loc"] == ("dev_mode",) and refusal in error["msg"]
    assert not _settings(database_url=database_url, base_url=base_url, dev_mode=False).dev_mode


def _marketsync(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MARKETSYNC_")}
    environment.update({"PYTHONPATH": str(REPO_ROOT), **env})
    return subprocess.run(
        [sys.executable, "-m", "marketsync", *args],
        cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_processes_refuse_dev_mode_at_start_naming_the_setting(tmp_path: Path) -> None:
    on_postgresql = _marketsync(
        "serve", "--port", "1",
        MARKETSYNC_DEV_MODE="true", MARKETSYNC_DATABASE_URL="postgresql://root@127.0.0.1:5432/test",
        MARKETSYNC_ENCRYPTION_KEYS=TEST_ENCRYPTION_KEYS, MARKETSYNC_SECRET_HASH_KEY=TEST_HASH_KEY,
    )  # fmt: skip
    assert on_postgresql.returncode == 2 and "Traceback" not in on_postgresql.stderr
    assert "MARKETSYNC_DEV_MODE: refused on PostgreSQL" in on_postgresql.stderr
    public = _marketsync(
        "worker",
        MARKETSYNC_DEV_MODE="true", MARKETSYNC_DATABASE_URL=f"sqlite:///{tmp_path}/x.db",
        MARKETSYNC_BASE_URL="https://api.example.com",
    )  # fmt: skip
    assert public.returncode == 2 and "MARKETSYNC_DEV_MODE: refused with MARKETSYNC_BASE_URL" in public.stderr
    # Serving beyond this machine would let others' credentials subscribe to its loopback services.
    everywhere = _marketsync(
        "serve", "--host", "0.0.0.0", "--port", "1",
        MARKETSYNC_DEV_MODE="true", MARKETSYNC_DATABASE_URL=f"sqlite:///{tmp_path}/x.db",
    )  # fmt: skip
    assert everywhere.returncode == 2 and "refused with --host 0.0.0.0" in everywhere.stderr
    assert not (tmp_path / "x.db").exists()  # refused before anything was opened


# --- what dev mode allows, and what it does not ----------------------------------------------------------------


async def test_dev_mode_delivers_over_plain_http_to_loopback(
    dev_rt: Runtime, dev_api: httpx.AsyncClient, plain_receiver: Receiver
) -> None:
    tenant = await make_tenant(dev_rt, dev_api)
    port = plain_receiver.port
    for url in (f"http://127.0.0.1:{port}/ip", f"http://localhost:{port}/name", f"http://[::1]:{port}/v6"):
        await subscribe(dev_api, tenant, url)
    tls = await subscribe(dev_api, tenant, f"https://hooks.example.test:{port}/tls")
    await fire(dev_rt, tenant.account_id)
    await pump(dev_rt, lambda: len(plain_receiver.received) >= 2)
    assert {r.path for r in plain_receiver.received} >= {"/ip", "/name"}  # ::1 only where this host has IPv6
    # https to a loopback name is allowed too: it fails only because this receiver speaks plain http.
    [first] = (await _first_attempts(dev_rt, tls["SubscriptionId"]))[:1]
    assert first.error_class not in (None, "AddressRefused")


async def test_dev_mode_still_refuses_everything_but_loopback(
    dev_rt: Runtime, dev_api: httpx.AsyncClient, plain_receiver: Receiver
) -> None:
    tenant = await make_tenant(dev_rt, dev_api)

    async def create(url: str) -> httpx.Response:
        return await dev_api.post(
            "/api/webhooks/Create", json={"Url": url, "EventTypes": ["InventoryChanged"]}, headers=tenant.headers
        )

    for refused_shape in ("http://hooks.example.test/", "http://public.example.test/", "http://10.1.2.3/"):
        answer = await create(refused_shape)
        assert answer.status_code == 400, refused_shape
        assert "http only to a loopback host in dev mode" in problem(answer)["errors"]["Url"][0]
    for refused_address in ("https://private.example.test/", "https://10.1.2.3/", "https://[::ffff:127.0.0.1]/"):
        answer = await create(refused_address)
        assert answer.status_code == 400 and "private or reserved" in problem(answer)["errors"]["Url"][0]
    assert (await create("https://public.example.test/")).status_code == 200

    # A name that looks local but resolves elsewhere is refused at delivery (every attempt checks the address).
    subscription = await subscribe(dev_api, tenant, f"http://localhost:{plain_receiver.port}/")
    dev_rt.extras[RESOLVER_KEY] = StaticResolver({**DEV_DNS, "localhost": "10.1.2.3"})
    await fire(dev_rt, tenant.account_id)
    logged = await _first_attempts(dev_rt, subscription["SubscriptionId"])
    assert logged[0].error_class == "AddressRefused" and plain_receiver.received == []


async def test_outside_dev_mode_plain_http_is_refused_at_create_and_at_delivery(
    dev_rt: Runtime, dev_api: httpx.AsyncClient, plain_receiver: Receiver, tmp_path: Path
) -> None:
    """A subscription made in dev mode is never delivered by a process without it, even where the loopback network
    is allowed (as in the tests' default settings): plain http only ever goes out in dev mode."""
    tenant = await make_tenant(dev_rt, dev_api)
    subscription = await subscribe(dev_api, tenant, f"http://127.0.0.1:{plain_receiver.port}/")
    strict_settings = settings_for(
        dev_rt.settings.database_url, tmp_path / "var", webhook_allowed_networks="127.0.0.0/8"
    )
    strict = compose_connectors(Runtime.create(strict_settings))
    try:
        async with serve(create_app(strict)) as base_url, httpx.AsyncClient(base_url=base_url) as strict_api:
            refused = await strict_api.post(
                "/api/webhooks/Create",
                json={"Url": f"http://127.0.0.1:{plain_receiver.port}/", "EventTypes": ["InventoryChanged"]},
                headers=tenant.headers,
            )
            assert refused.status_code == 400
            assert problem(refused)["errors"]["Url"] == ["Must be an absolute https URL (scheme https)."]
        await fire(strict, tenant.account_id)
        logged = await _first_attempts(strict, subscription["SubscriptionId"])
        assert logged[0].error_class == "AddressRefused" and "plain http" in (logged[0].error_detail or "")
        assert plain_receiver.received == []
    finally:
        await strict.close()


async def _first_attempts(rt: Runtime, subscription_id: str) -> list[Any]:
    """Drive the engine until the subscription has an attempt in the log; its attempts."""
    found: list[Any] = []
    async with asyncio.timeout(30):
        while not found:
            await pump(rt, lambda: True)
            found = await attempts(rt, subscription_id)
    return found
