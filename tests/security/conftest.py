"""The OWASP API Security Top 10 suite's fixtures (README.md in this directory maps API1..API10 to the tests).

Every test of the suite runs under two guards:
- `connections`: every outgoing connection attempt of the process is counted by address, and one to an address
  outside loopback is refused before a packet leaves (so a failing SSRF check can never reach anything);
- `leak_scan`: after the test, every value of every table of its database and every log line it produced are
  searched for the secrets and tokens the test saw (client secrets, access tokens, webhook secrets, passwords,
  session tokens) and the logs for customer data (tests/security/test_secret_scan.py's rule, applied to the whole
  suite).
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from marketsync.runtime import Runtime
from tests.orders.support import BUYER_EMAIL, BUYER_NAME, BUYER_PHONE, STREET
from tests.support.scan import CUSTOMER_TABLES, every_value

CUSTOMER_DATA = (BUYER_NAME, BUYER_EMAIL, BUYER_PHONE, STREET)
# An access token as it would appear if one were written out (the service's tokens start with mst_).
TOKEN_SHAPE = re.compile(r"mst_[A-Za-z0-9_\-]{20,}")


def _endpoint_of(address: Any) -> tuple[str, int] | None:
    if isinstance(address, tuple) and len(address) >= 2:
        return str(address[0]), int(address[1])
    return None  # a Unix socket


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return host == "localhost"


class NonLoopbackConnectionRefused(OSError):
    """Raised instead of connecting anywhere but loopback: the suite never sends a packet elsewhere."""


@dataclass
class Connections:
    """Connection attempts (host, port) and system name lookups of this process, made through sockets or asyncio
    (httpx, anyio, asyncpg, uvicorn's clients all end in one of these)."""

    attempts: list[tuple[str, int]] = field(default_factory=list)
    lookups: list[str] = field(default_factory=list)

    def outside_loopback(self) -> list[tuple[str, int]]:
        return [attempt for attempt in self.attempts if not _is_loopback(attempt[0])]

    def note(self, endpoint: tuple[str, int] | None) -> None:
        if endpoint is None:
            return
        self.attempts.append(endpoint)
        if not _is_loopback(endpoint[0]):
            raise NonLoopbackConnectionRefused(f"the test suite never connects outside loopback ({endpoint[0]})")


@pytest.fixture(autouse=True)
def connections(monkeypatch: pytest.MonkeyPatch) -> Iterator[Connections]:
    seen = Connections()
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_sock_connect = asyncio.BaseEventLoop.sock_connect  # type: ignore[attr-defined]
    real_create_connection = asyncio.BaseEventLoop.create_connection
    real_getaddrinfo = socket.getaddrinfo
    real_loop_getaddrinfo = asyncio.BaseEventLoop.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        seen.note(_endpoint_of(address))
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        seen.note(_endpoint_of(address))
        return int(real_connect_ex(self, address))

    async def sock_connect(self: asyncio.AbstractEventLoop, sock: socket.socket, address: Any) -> None:
        seen.note(_endpoint_of(address))
        await real_sock_connect(self, sock, address)

    async def create_connection(self: asyncio.AbstractEventLoop, *args: Any, **kwargs: Any) -> Any:
        host = kwargs.get("host", args[1] if len(args) > 1 else None)
        port = kwargs.get("port", args[2] if len(args) > 2 else None)
        if host is not None and kwargs.get("sock") is None:
            seen.note((str(host), int(port or 0)))
        return await real_create_connection(self, *args, **kwargs)  # type: ignore[arg-type]

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        seen.lookups.append(str(host))
        return real_getaddrinfo(host, *args, **kwargs)

    async def loop_getaddrinfo(self: asyncio.AbstractEventLoop, host: Any, *args: Any, **kwargs: Any) -> Any:
        seen.lookups.append(str(host))
        return await real_loop_getaddrinfo(self, host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(asyncio.BaseEventLoop, "sock_connect", sock_connect)
    monkeypatch.setattr(asyncio.BaseEventLoop, "create_connection", create_connection)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", loop_getaddrinfo)
    yield seen
    assert seen.outside_loopback() == [], "a connection outside loopback was attempted"


@dataclass
class SecretsSeen:
    """Secrets and tokens a test handled: none may be stored or logged in clear."""

    values: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, value: str) -> None:
        assert value, name
        self.values[name] = value


@pytest.fixture
def secrets_seen() -> SecretsSeen:
    return SecretsSeen()


@pytest.fixture(autouse=True)
async def leak_scan(rt: Runtime, secrets_seen: SecretsSeen, capsys: pytest.CaptureFixture[str]) -> AsyncIterator[None]:
    yield
    database = await every_value(rt)
    for table, values in database.items():
        for name, secret in secrets_seen.values.items():
            assert secret not in values, f"{name} in clear in table {table}"
        if table not in CUSTOMER_TABLES:
            for datum in CUSTOMER_DATA:
                assert datum not in values, f"customer data in table {table}"
    logs = capsys.readouterr().err
    for name, secret in secrets_seen.values.items():
        assert secret not in logs, f"{name} in the logs"
    assert TOKEN_SHAPE.search(logs) is None, "an access token in the logs"
    for datum in CUSTOMER_DATA:
        assert datum not in logs, "customer data in the logs"
