"""A TCP proxy on loopback that can make the network go silent, for database-fault tests.

`silence()` keeps every connection it carries open but from then on drops what passes either way: what a network
partition, a dropped NAT or firewall entry or a host that lost power does to a client. pg_terminate_backend cannot
show this (the server closes the socket and the client is told at once). Connections opened after `silence()` are
carried normally, as when the network comes back but the old connections' state is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from sqlalchemy.engine import make_url


@dataclass
class _Carried:
    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter
    silent: bool = False
    pipes: list[asyncio.Task[None]] = field(default_factory=list)


class SilentNetwork:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target_host = target_host
        self.target_port = target_port
        self.port = 0
        self.opened = 0  # connections carried so far
        self._carried: list[_Carried] = []
        self._server: asyncio.Server | None = None

    def url_for(self, database_url: str) -> str:
        """`database_url` with its host and port replaced by this proxy's."""
        return make_url(database_url).set(host="127.0.0.1", port=self.port).render_as_string(hide_password=False)

    def silence(self) -> int:
        """Every connection carried now goes silent for good; returns how many."""
        for carried in self._carried:
            carried.silent = True
        return len(self._carried)

    async def _pipe(self, carried: _Carried, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await source.read(65536):
                if not carried.silent:
                    sink.write(data)
                    await sink.drain()
        if not carried.silent:  # a silent network tells nobody that the other side closed
            sink.close()

    async def _carry(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(self.target_host, self.target_port)
        except OSError:
            client_writer.close()
            return
        self.opened += 1
        carried = _Carried(client_writer, upstream_writer)
        carried.pipes = [
            asyncio.create_task(self._pipe(carried, client_reader, upstream_writer)),
            asyncio.create_task(self._pipe(carried, upstream_reader, client_writer)),
        ]
        self._carried.append(carried)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._carry, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for carried in self._carried:
            for pipe in carried.pipes:
                pipe.cancel()
            carried.client.close()
            carried.upstream.close()
        for carried in self._carried:
            await asyncio.gather(*carried.pipes, return_exceptions=True)
        self._carried.clear()


@asynccontextmanager
async def silent_network_to(database_url: str) -> AsyncIterator[SilentNetwork]:
    """A SilentNetwork in front of the PostgreSQL server of `database_url` (loopback only)."""
    url = make_url(database_url)
    host = url.host or "127.0.0.1"
    assert host in ("127.0.0.1", "localhost", "::1"), "tests talk to loopback only"
    network = SilentNetwork(host, url.port or 5432)
    await network.start()
    try:
        yield network
    finally:
        await network.close()
