"""Webhook test fixtures: a trustme CA trusted through webhook_ca_bundle, a fake resolver, an HTTPS receiver.

No test resolves a real name or sends a packet outside loopback: the resolver is a static table mapping
the test host names to 127.0.0.1 (allowed through MARKETSYNC_WEBHOOK_ALLOWED_NETWORKS=127.0.0.0/8) or to
private/reserved addresses that must be refused before any connection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import trustme

from marketsync.runtime import Runtime
from marketsync.webhooks.delivery import HTTP_KEY
from marketsync.webhooks.ssrf import RESOLVER_KEY, StaticResolver
from tests.webhooks.receiver import HOSTNAME, IDN_ASCII, Receiver, serve_https

FAKE_DNS = {
    HOSTNAME: "127.0.0.1",
    "other.example.test": "127.0.0.1",
    IDN_ASCII: "127.0.0.1",  # bücher.example.test: only its DNS form is ever looked up
    "private.example.test": "10.1.2.3",
    "cgnat.example.test": "100.64.0.9",
    "linklocal.example.test": "169.254.169.254",
    "mixed.example.test": ["127.0.0.1", "192.168.1.10"],
    "ula.example.test": "fd00::1",
    "mapped.example.test": "::ffff:127.0.0.1",
    "nat64.example.test": "64:ff9b::a01:203",
    "docs.example.test": "2001:db8::1",
    "multicast.example.test": "224.0.0.1",
    "public.example.test": "93.184.215.14",
}


@dataclass(frozen=True)
class Tls:
    ca_file: str
    cert_file: str  # names only: a pass proves verification against the name, not the connected IP
    ip_cert_file: str  # 127.0.0.1 only, for IP-literal URLs (subprocess workers resolve nothing)


@pytest.fixture(scope="session")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    directory = tmp_path_factory.mktemp("webhook-tls")
    ca = trustme.CA()
    ca_file, cert_file, ip_cert_file = directory / "ca.pem", directory / "server.pem", directory / "ip.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    ca.issue_cert(HOSTNAME, "other.example.test", IDN_ASCII).private_key_and_cert_chain_pem.write_to_path(
        str(cert_file)
    )
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(ip_cert_file))
    return Tls(str(ca_file), str(cert_file), str(ip_cert_file))


@pytest.fixture
def settings_overrides(tls: Tls) -> dict[str, Any]:
    return {
        "webhook_ca_bundle": tls.ca_file,
        "webhook_timeout_s": 1.5,
        "webhook_retry_scale": 0.0001,
        "webhook_allowed_networks": "127.0.0.0/8",
    }


@pytest.fixture(autouse=True)
def fake_dns(rt: Runtime) -> StaticResolver:
    resolver = StaticResolver(FAKE_DNS)
    rt.extras[RESOLVER_KEY] = resolver
    return resolver


@pytest.fixture
async def receiver(tls: Tls, rt: Runtime) -> AsyncIterator[Receiver]:
    async with serve_https(Receiver(), tls.cert_file) as running:
        yield running
        # Close the delivery pools' keep-alive connections so the receiver shuts down without waiting.
        http = rt.extras.pop(HTTP_KEY, None)
        if http is not None:
            await http.aclose()
