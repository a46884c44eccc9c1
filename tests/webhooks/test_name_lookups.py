"""Webhook host names are looked up on a few threads of the deliveries' own, never on the event loop's default pool.

A lookup cannot be interrupted: an attempt's deadline ends the attempt, not getaddrinfo. On the default pool, a
subscriber whose DNS answers slowly left a blocked thread behind each attempt, and an unrelated `asyncio.to_thread`
job (the app's password checks; the SQLite writer hand-off runs there too) waited 4.5 s. socket.getaddrinfo is a
stand-in here (tests/support/system_dns.py): no name is resolved for real and no packet leaves loopback."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import pytest

from marketsync.kit.lookups import LOOKUP_THREADS
from marketsync.runtime import Runtime
from marketsync.webhooks import delivery, ssrf
from tests.support.system_dns import SLOW, SystemDns, patch_system_dns
from tests.webhooks.receiver import HOSTNAME, Receiver

DEADLINE_S = 1.5  # webhook_timeout_s of tests/webhooks/conftest.py


@pytest.fixture
def system_dns(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> Iterator[SystemDns]:
    rt.extras.pop(ssrf.RESOLVER_KEY)  # the system resolver, over the stand-in
    yield from patch_system_dns(monkeypatch, HOSTNAME)


async def _thread_pool_wait() -> float:
    """How long a job on the loop's default thread pool waits to run (what a sign-in's password check waits for)."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    async with asyncio.timeout(10):
        await asyncio.to_thread(lambda: None)
    return loop.time() - began


async def test_a_subscriber_with_slow_dns_leaves_the_default_thread_pool_free(
    rt: Runtime, system_dns: SystemDns
) -> None:
    loop = asyncio.get_running_loop()
    began = loop.time()
    results = await asyncio.gather(*(delivery.attempt(rt, f"https://{SLOW}/hook", {}, b"{}") for _ in range(12)))
    assert loop.time() - began < DEADLINE_S + 3
    assert {(r.error_class, r.error_detail) for r in results} == {
        ("Timeout", "the host name did not resolve within the deadline")
    }
    assert await _thread_pool_wait() < 1.0
    # The lookups that started are on the webhooks' threads, at most LOOKUP_THREADS of them; the others waited in
    # line and, their attempts over, were dropped before they took a thread.
    threads = system_dns.lookups_of(SLOW)
    assert len(threads) == LOOKUP_THREADS
    assert all(thread.name.startswith("lookups-webhooks") for thread in threads)


async def test_with_every_lookup_thread_busy_a_delivery_waits_for_one_within_its_deadline(
    rt: Runtime, system_dns: SystemDns, receiver: Receiver
) -> None:
    slow = [asyncio.create_task(delivery.attempt(rt, f"https://{SLOW}/hook", {}, b"{}")) for _ in range(LOOKUP_THREADS)]
    async with asyncio.timeout(5):
        while len(system_dns.lookups_of(SLOW)) < LOOKUP_THREADS:
            await asyncio.sleep(0.01)

    loop = asyncio.get_running_loop()
    began = loop.time()
    waited = await delivery.attempt(rt, receiver.url(), {}, b"{}")
    assert loop.time() - began < DEADLINE_S + 3
    assert (waited.error_class, waited.error_detail) == ("Timeout", "the host name did not resolve within the deadline")
    assert system_dns.lookups_of(HOSTNAME) == [] and receiver.received == []  # dropped in line, never looked up

    system_dns.released.set()  # the slow resolver answers at last
    await asyncio.gather(*slow)
    delivered = await delivery.attempt(rt, receiver.url(), {}, b"{}")
    assert delivered.status_code == 200, delivered
    [thread] = system_dns.lookups_of(HOSTNAME)
    assert thread.name.startswith("lookups-webhooks")
    assert len(receiver.received) == 1


async def test_the_lookup_threads_stop_with_the_runtime(
    system_dns: SystemDns, make_runtime: Callable[..., Runtime]
) -> None:
    other = make_runtime()
    assert [str(a) for a in await ssrf.resolver_of(other).resolve(HOSTNAME, 443)] == ["127.0.0.1"]
    [thread] = system_dns.lookups_of(HOSTNAME)
    assert thread.is_alive()
    await other.close()
    async with asyncio.timeout(5):
        while thread.is_alive():
            await asyncio.sleep(0.01)
