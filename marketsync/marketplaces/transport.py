"""The HTTP transport of marketplace calls: host names resolved on the marketplaces' own lookup threads.

httpx (through httpcore and anyio) resolves a host name with `loop.getaddrinfo`, on the event loop's default thread
pool, which the process also uses for password checks and the SQLite writer hand-off. A marketplace host whose DNS
answers slowly would keep one of those threads per call long after the call's deadline ended it. Here the name is
resolved on `NameLookups` threads of the marketplaces' own (decision 0346), then the connection goes to a resolved
address (TLS still checks the host name: httpcore passes the URL's host as SNI and for verification).

The total deadline of a call (`MARKETSYNC_MARKETPLACE_TIMEOUT_S`) is the connector's: it covers this lookup too.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable

import httpcore
import httpx

from marketsync.kit.lookups import NameLookups
from marketsync.kit.lookups import lookups_of as shared_lookups
from marketsync.runtime import Runtime

SocketOption = tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]  # httpcore's


def lookups_of(rt: Runtime) -> NameLookups:
    """The runtime's lookup threads for marketplace hosts."""
    return shared_lookups(rt, "marketplaces")


class LookupBackend(httpcore.AsyncNetworkBackend):
    """httpcore's asyncio backend, but a host name is resolved on `lookups` and the addresses are tried in order."""

    def __init__(self, lookups: NameLookups) -> None:
        self.lookups = lookups
        self.inner = httpcore.AnyIOBackend()

    async def _addresses(self, host: str, port: int, timeout: float | None) -> list[str]:
        try:
            return [str(ipaddress.ip_address(host))]
        except ValueError:
            pass
        try:
            async with asyncio.timeout(timeout):
                infos = await self.lookups.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"{host} did not resolve in time") from None
        except (OSError, UnicodeError) as exc:  # socket.gaierror is an OSError
            raise httpcore.ConnectError(f"{host} did not resolve: {exc}") from None
        addresses: list[str] = []
        for _family, _type, _proto, _canon, sockaddr in infos:
            address = str(sockaddr[0])
            if address not in addresses:
                addresses.append(address)
        if not addresses:
            raise httpcore.ConnectError(f"{host} resolved to no address")
        return addresses

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await self._addresses(host, port, timeout)
        for address in addresses[:-1]:
            try:
                return await self.inner.connect_tcp(address, port, timeout, local_address, socket_options)
            except httpcore.ConnectError:
                continue  # the next address
        return await self.inner.connect_tcp(addresses[-1], port, timeout, local_address, socket_options)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[SocketOption] | None = None
    ) -> httpcore.AsyncNetworkStream:
        return await self.inner.connect_unix_socket(path, timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class LookupTransport(httpx.AsyncHTTPTransport):
    """httpx's transport (its connection pool, limits and error mapping), connecting through `LookupBackend`.
    A transport of its own means no environment proxy: marketplace calls connect directly."""

    def __init__(self, lookups: NameLookups, limits: httpx.Limits | None = None) -> None:
        limits = limits or httpx.Limits(max_connections=100, max_keepalive_connections=20)  # httpx's defaults
        super().__init__(limits=limits)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=LookupBackend(lookups),
        )
