"""API7 Server Side Request Forgery, at registration: a corpus of hostile webhook URLs, every one refused (400 on
`Url`) with ZERO connections made and no name looked up by the system resolver.

Names resolve through an injected resolver that records what it is asked (nothing ever reaches DNS); addresses
written in any form a resolver would also read (decimal, octal, hex, short, trailing dot, IDN digits) are refused
as the address they are, without asking it. No network is allowed here (MARKETSYNC_WEBHOOK_ALLOWED_NETWORKS empty),
so loopback is refused like every other private address.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from marketsync.runtime import Runtime
from marketsync.webhooks.rules import IPAddress
from marketsync.webhooks.ssrf import RESOLVER_KEY, StaticResolver
from tests.security.conftest import Connections, SecretsSeen
from tests.security.support import tenant_seen
from tests.support.factories import problem

# Names the injected resolver knows, each resolving to addresses deliveries must never reach.
HOSTILE_DNS: dict[str, list[str] | str] = {
    "localhost": "127.0.0.1",
    "internal.example.test": "10.1.2.3",
    "metadata.example.test": "169.254.169.254",
    "router.example.test": "192.168.1.1",
    "docker.example.test": "172.17.0.1",
    "cgnat.example.test": "100.64.1.1",
    "zero.example.test": "0.0.0.0",
    "v6-loopback.example.test": "::1",
    "v6-ula.example.test": "fd00::2",
    "v6-linklocal.example.test": "fe80::1",
    "v6-mapped.example.test": "::ffff:10.0.0.1",
    "nat64.example.test": "64:ff9b::a9fe:a9fe",
    "teredo.example.test": "2001::1",
    "sixtofour.example.test": "2002:c0a8:101::1",
    "mixed.example.test": ["93.184.215.14", "192.168.1.10"],  # one public, one private: refused
    "bench.example.test": "198.18.0.1",
    "multicast.example.test": "224.0.0.251",
}

# (url, what it tries). At least 40; every one must be refused.
CORPUS: list[tuple[str, str]] = [
    ("https://127.0.0.1/hook", "loopback"),
    ("https://2130706433/hook", "loopback, decimal"),
    ("https://0x7f000001/hook", "loopback, hex"),
    ("https://0x7f.0x0.0x0.0x1/hook", "loopback, hex parts"),
    ("https://0177.0.0.1/hook", "loopback, octal"),
    ("https://017700000001/hook", "loopback, octal whole"),
    ("https://127.1/hook", "loopback, short form"),
    ("https://127.0.0.1./hook", "loopback, trailing dot"),
    ("https://0/hook", "0.0.0.0 as one number"),
    ("https://0.0.0.0/hook", "unspecified"),
    ("https://169.254.169.254/latest/meta-data/", "cloud metadata"),
    ("https://2852039166/latest/meta-data/", "cloud metadata, decimal"),
    ("https://0xa9fea9fe/latest/meta-data/", "cloud metadata, hex"),
    ("https://0251.0376.0251.0376/", "cloud metadata, octal"),
    ("https://10.0.0.1/hook", "private"),
    ("https://172.16.0.1/hook", "private"),
    ("https://192.168.0.1/hook", "private"),
    ("https://100.64.0.1/hook", "CGNAT"),
    ("https://224.0.0.1/hook", "multicast"),
    ("https://255.255.255.255/hook", "broadcast"),
    ("https://[::1]/hook", "IPv6 loopback"),
    ("https://[::]/hook", "IPv6 unspecified"),
    ("https://[::ffff:127.0.0.1]/hook", "IPv4-mapped loopback"),
    ("https://[::ffff:7f00:1]/hook", "IPv4-mapped loopback, hex"),
    ("https://[0:0:0:0:0:ffff:a9fe:a9fe]/hook", "IPv4-mapped metadata"),
    ("https://[::127.0.0.1]/hook", "IPv4-compatible loopback"),
    ("https://[64:ff9b::7f00:1]/hook", "NAT64 of loopback"),
    ("https://[64:ff9b::a9fe:a9fe]/hook", "NAT64 of metadata"),
    ("https://[2002:7f00:1::1]/hook", "6to4 of loopback"),
    ("https://[2001::53aa:64c:0:0]/hook", "Teredo"),
    ("https://[fe80::1%25eth0]/hook", "link-local with a zone"),
    ("https://[fd12:3456::1]/hook", "unique local"),
    ("https://[ff02::1]/hook", "IPv6 multicast"),
    ("https://localhost/hook", "a name for loopback"),
    ("https://localhost./hook", "a name for loopback, trailing dot"),
    ("https://internal.example.test/hook", "a name resolving to a private address"),
    ("https://metadata.example.test/hook", "a name resolving to the metadata address"),
    ("https://router.example.test./hook", "a private name, trailing dot"),
    ("https://docker.example.test/hook", "a name resolving to a container bridge"),
    ("https://cgnat.example.test/hook", "a name resolving to CGNAT"),
    ("https://zero.example.test/hook", "a name resolving to 0.0.0.0"),
    ("https://v6-loopback.example.test/hook", "a name resolving to ::1"),
    ("https://v6-ula.example.test/hook", "a name resolving to a unique local address"),
    ("https://v6-linklocal.example.test/hook", "a name resolving to link-local"),
    ("https://v6-mapped.example.test/hook", "a name resolving to IPv4-mapped private"),
    ("https://nat64.example.test/hook", "a name resolving to NAT64 of metadata"),
    ("https://teredo.example.test/hook", "a name resolving to Teredo"),
    ("https://sixtofour.example.test/hook", "a name resolving to 6to4 of a private address"),
    ("https://mixed.example.test/hook", "one public and one private address"),
    ("https://bench.example.test/hook", "a name resolving to the benchmarking range"),
    ("https://multicast.example.test/hook", "a name resolving to multicast"),
    ("https://INTERNAL.Example.Test/hook", "a private name in capitals"),
    ("https://nowhere.example.test/hook", "a name that does not resolve"),
    ("https://good.example.test@127.0.0.1/hook", "userinfo: the host is 127.0.0.1"),
    ("https://good.example.test:pw@169.254.169.254/", "userinfo with a password"),
    ("https://127.0.0.1#@good.example.test/hook", "a fragment hiding the real host"),
    ("https://127.0.0.1\\@good.example.test/hook", "a backslash before @"),
    ("https://good.example.test%40127.0.0.1/hook", "an escaped @ in the host"),
    ("https://①②⑦.⓪.⓪.①/hook", "loopback in circled digits (IDN mapping)"),
    ("https://127。0。0。1/hook", "loopback with ideographic full stops"),
    ("https://ｌｏｃａｌｈｏｓｔ/hook", "localhost in full-width letters"),
    ("https://1.2.3.4.5/hook", "a number-only host that is no address"),
    ("http://127.0.0.1/hook", "plain http"),
    ("file:///etc/passwd", "another scheme"),
    ("gopher://127.0.0.1:6379/_INFO", "another scheme"),
    ("https:///hook", "no host"),
]
# Hosts of the corpus that are addresses: refused without asking any resolver.
NAMES_ASKED = {name.lower() for name in HOSTILE_DNS} | {"router.example.test.", "nowhere.example.test", "localhost."}


class RecordingResolver(StaticResolver):
    def __init__(self, table: dict[str, list[str] | str]) -> None:
        super().__init__(table)
        self.asked: list[str] = []

    async def resolve(self, host: str, port: int) -> list[IPAddress]:
        self.asked.append(host)
        return await super().resolve(host.removesuffix("."), port)


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"webhook_allowed_networks": ""}


@pytest.fixture
def resolver(rt: Runtime) -> RecordingResolver:
    recording = RecordingResolver(HOSTILE_DNS)
    rt.extras[RESOLVER_KEY] = recording
    return recording


def test_the_corpus_holds_at_least_forty_distinct_urls() -> None:
    urls = [url for url, _ in CORPUS]
    assert len(set(urls)) == len(urls) >= 40


async def test_every_hostile_webhook_url_is_refused_without_a_connection(
    rt: Runtime,
    api: httpx.AsyncClient,
    secrets_seen: SecretsSeen,
    connections: Connections,
    resolver: RecordingResolver,
) -> None:
    tenant = await tenant_seen(rt, api, secrets_seen, "caller")
    server = (api.base_url.host, api.base_url.port)
    database_port = rt.db.engine.url.port
    before = len(connections.attempts)
    for url, tries in CORPUS:
        response = await api.post(
            "/api/webhooks/Create", json={"Url": url, "EventTypes": ["FeedOutcome"]}, headers=tenant.headers
        )
        assert response.status_code == 400, (url, tries, response.text)
        assert list(problem(response)["errors"]) == ["Url"], (url, tries)
    # The only connections made were this test's own requests to the API and the service's to its database.
    made = connections.attempts[before:]
    assert all(endpoint == server or endpoint[1] == database_port for endpoint in made), made
    assert not any(host.rstrip(".").lower() in NAMES_ASKED for host in connections.lookups)
    # Addresses, however written, were refused as addresses: the resolver was asked only names.
    assert {host.lower() for host in resolver.asked} <= NAMES_ASKED, resolver.asked
    listed = await api.post("/api/webhooks/List", json={}, headers=tenant.headers)
    assert listed.json()["Subscriptions"] == []
