"""A stand-in for socket.getaddrinfo, for tests of the system resolver's threads. No name is looked up for real.

Names ending in `.test` are the stand-in's: SLOW blocks its thread until the test releases it (a resolver waiting on
an authoritative server that answers late), names in `answers` resolve to 127.0.0.1, every other `.test` name fails.
Anything else (the test database's host) goes to the real getaddrinfo, as before.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

SLOW = "slow-dns.example.test"


class SystemDns:
    def __init__(self, real: Any, answers: set[str]) -> None:
        self.real = real
        self.answers = answers
        self.released = threading.Event()
        self.asked: list[tuple[str, threading.Thread]] = []  # (name, the thread that looked it up)

    def __call__(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode("ascii") if isinstance(host, bytes) else host  # anyio asks with the IDNA-encoded name
        if not (isinstance(name, str) and name.endswith(".test")):
            return self.real(host, port, *args, **kwargs)
        self.asked.append((name, threading.current_thread()))
        if name == SLOW:
            self.released.wait(60)
        elif name in self.answers:
            return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("127.0.0.1", int(port or 0)))]
        raise socket.gaierror(socket.EAI_NONAME, "not resolved in this test")

    def lookups_of(self, host: str) -> list[threading.Thread]:
        return [thread for name, thread in self.asked if name == host]


def patch_system_dns(monkeypatch: pytest.MonkeyPatch, *answers: str) -> Iterator[SystemDns]:
    """For a fixture: socket.getaddrinfo is the stand-in until the test ends; SLOW's threads are released then."""
    dns = SystemDns(socket.getaddrinfo, set(answers))
    monkeypatch.setattr(socket, "getaddrinfo", dns)
    try:
        yield dns
    finally:
        dns.released.set()
