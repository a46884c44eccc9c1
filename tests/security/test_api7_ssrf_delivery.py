"""API7 Server Side Request Forgery, at delivery: a name that passed registration and then points elsewhere (DNS
rebinding), a name that changes between the check and the connection, and a receiver that redirects.

The receiver is an HTTPS server on 127.0.0.1 (allowed here through MARKETSYNC_WEBHOOK_ALLOWED_NETWORKS, as in
tests/webhooks); every other address is a hostile one, and the suite's connection guard (conftest.py) counts every
connection attempt: none may go anywhere but the receiver, the API and the database.
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
from tests.webhooks.conftest import Tls, receiver, tls
from tests.webhooks.receiver import HOSTNAME, Receiver
from tests.webhooks.support import attempts, fire, pump, subscribe

__all__ = ["receiver", "tls"]  # the HTTPS receiver and its certificates, as tests/webhooks uses them

REBOUND_TO = ["10.0.0.1", "169.254.169.254", "192.168.1.1", "0.0.0.0", "::1", "fd00::1", "::ffff:10.0.0.1",
              "64:ff9b::a9fe:a9fe"]  # fmt: skip


class ChangingResolver(StaticResolver):
    """Answers from its table, and counts what it is asked; the table may change between lookups."""

    def __init__(self, table: dict[str, list[str] | str]) -> None:
        super().__init__(table)
        self.asked: list[str] = []
        self.after_first: dict[str, list[IPAddress]] = {}

    async def resolve(self, host: str, port: int) -> list[IPAddress]:
        self.asked.append(host)
        answer = await super().resolve(host, port)
        if host in self.after_first:  # a rebinding name: the next lookup answers something else
            self.table[host] = self.after_first.pop(host)
        return answer

    def point(self, host: str, address: str) -> None:
        self.table[host] = StaticResolver({"x": address}).table["x"]


@pytest.fixture
def settings_overrides(tls: Tls) -> dict[str, Any]:
    return {
        "webhook_ca_bundle": tls.ca_file,
        "webhook_timeout_s": 1.5,
        "webhook_retry_scale": 0.0001,
        "webhook_allowed_networks": "127.0.0.0/8",
    }


@pytest.fixture
def resolver(rt: Runtime) -> ChangingResolver:
    changing = ChangingResolver({HOSTNAME: "127.0.0.1", "elsewhere.example.test": "169.254.169.254"})
    rt.extras[RESOLVER_KEY] = changing
    return changing


async def test_a_name_rebound_after_registration_is_refused_at_every_attempt_without_a_connection(
    rt: Runtime,
    api: httpx.AsyncClient,
    secrets_seen: SecretsSeen,
    connections: Connections,
    resolver: ChangingResolver,
    receiver: Receiver,
) -> None:
    tenant = await tenant_seen(rt, api, secrets_seen, "caller")
    secrets_seen.add("webhook secret", (await subscribe(api, tenant, receiver.url()))["Secret"])
    for address in REBOUND_TO:
        resolver.point(HOSTNAME, address)
        before = len(connections.attempts)
        refused_before = len(await attempts(rt))
        await fire(rt, tenant.account_id)
        await pump(rt, lambda: True)
        refused = (await attempts(rt))[refused_before:]
        assert refused and {(a.error_class, a.status_code) for a in refused} == {("AddressRefused", None)}, address
        assert [e for e in connections.attempts[before:] if e[0] == address or e[1] == receiver.port] == [], address
    assert receiver.received == []
    assert HOSTNAME not in connections.lookups  # only the injected resolver was asked


async def test_the_connection_goes_to_the_checked_address_even_if_the_name_changes_right_after(
    rt: Runtime,
    api: httpx.AsyncClient,
    secrets_seen: SecretsSeen,
    connections: Connections,
    resolver: ChangingResolver,
    receiver: Receiver,
) -> None:
    """Rebinding between check and connect: the name answers the receiver's address to the check and a private one
    to any later lookup. The delivery connects to the checked address and never looks the name up again."""
    tenant = await tenant_seen(rt, api, secrets_seen, "caller")
    secrets_seen.add("webhook secret", (await subscribe(api, tenant, receiver.url()))["Secret"])
    resolver.after_first[HOSTNAME] = StaticResolver({"x": "10.0.0.1"}).table["x"]
    asked_before = len(resolver.asked)
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 1)
    assert len(resolver.asked) - asked_before == 1  # one check, no second lookup at connect time
    assert receiver.received[0].headers["host"] == f"{HOSTNAME}:{receiver.port}"
    assert not [e for e in connections.attempts if e[0] == "10.0.0.1"]
    assert HOSTNAME not in connections.lookups


async def test_a_redirect_is_never_followed(
    rt: Runtime,
    api: httpx.AsyncClient,
    secrets_seen: SecretsSeen,
    connections: Connections,
    resolver: ChangingResolver,
    receiver: Receiver,
) -> None:
    """The receiver answers 302 to https://elsewhere.example.test/ (the metadata address): the attempt is recorded
    as a redirect, and the target is neither looked up nor connected to."""
    tenant = await tenant_seen(rt, api, secrets_seen, "caller")
    secrets_seen.add("webhook secret", (await subscribe(api, tenant, receiver.url()))["Secret"])
    receiver.script = [302]
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 1)
    [redirected, *_] = await attempts(rt)
    assert (redirected.status_code, redirected.error_class) == (302, "Redirect")
    assert "elsewhere.example.test" not in resolver.asked + connections.lookups
    assert not [e for e in connections.attempts if e[0] == "169.254.169.254"]
