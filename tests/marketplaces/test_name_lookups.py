"""A marketplace's host name is looked up on a few threads of the marketplaces' own, never on the event loop's default
pool (httpx's own connect would use `loop.getaddrinfo` there), and the lookup counts in the call's deadline.
socket.getaddrinfo is a stand-in (tests/support/system_dns.py): names resolve to 127.0.0.1 or not at all, and the
marketplace is the sandbox on loopback. Both databases."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import pytest

from marketsync.kit.lookups import LOOKUP_THREADS
from marketsync.marketplaces.connector import Unavailable, connector_for
from marketsync.marketplaces.sandbox.app import create_sandbox_app
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime
from tests.support.factories import make_tenant
from tests.support.server import serve
from tests.support.system_dns import SLOW, SystemDns, patch_system_dns

MARKETPLACE_HOST = "marketplace.example.test"
TIMEOUT_S = 1.0  # only failing calls wait for it; the good one answers from loopback


@pytest.fixture
async def sandbox_port(rt: Runtime) -> AsyncIterator[int]:
    async with serve(create_sandbox_app(rt)) as base_url:
        yield httpx.URL(base_url).port or 0


@pytest.fixture
def system_dns(monkeypatch: pytest.MonkeyPatch) -> Iterator[SystemDns]:
    yield from patch_system_dns(monkeypatch, MARKETPLACE_HOST)


async def _connection(rt: Runtime, api: httpx.AsyncClient) -> MarketplaceConnection:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    return tenant.marketplace("P1")


async def test_a_marketplace_host_name_is_looked_up_on_the_marketplaces_own_threads(
    rt: Runtime,
    api: httpx.AsyncClient,
    sandbox_port: int,
    system_dns: SystemDns,
    make_runtime: Callable[..., Runtime],
) -> None:
    connection = await _connection(rt, api)
    worker_rt = make_runtime(sandbox_url=f"http://{MARKETPLACE_HOST}:{sandbox_port}", marketplace_timeout_s=10)
    status = await connector_for(worker_rt, connection).check_authorization()
    assert status.ok, status
    [thread] = system_dns.lookups_of(MARKETPLACE_HOST)
    assert thread.name.startswith("lookups-marketplaces")


async def test_a_marketplace_with_slow_dns_is_unavailable_by_the_deadline_and_leaves_the_default_pool_free(
    rt: Runtime,
    api: httpx.AsyncClient,
    sandbox_port: int,
    system_dns: SystemDns,
    make_runtime: Callable[..., Runtime],
) -> None:
    connection = await _connection(rt, api)
    worker_rt = make_runtime(sandbox_url=f"http://{SLOW}:{sandbox_port}", marketplace_timeout_s=TIMEOUT_S)
    connector = connector_for(worker_rt, connection)
    loop = asyncio.get_running_loop()
    began = loop.time()
    # Twice as many calls as lookup threads: half of them wait in line for a thread, within their deadline too.
    results = await asyncio.gather(
        *(connector.pull_orders(None) for _ in range(2 * LOOKUP_THREADS)), return_exceptions=True
    )
    assert loop.time() - began < TIMEOUT_S + 3
    assert all(isinstance(r, Unavailable) for r in results), results
    probe = loop.time()
    async with asyncio.timeout(10):
        await asyncio.to_thread(lambda: None)  # the loop's default pool: a sign-in's password check
    assert loop.time() - probe < 1.0
    threads = system_dns.lookups_of(SLOW)
    assert len(threads) == LOOKUP_THREADS
    assert all(thread.name.startswith("lookups-marketplaces") for thread in threads)
