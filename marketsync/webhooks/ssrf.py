"""The SSRF guard: resolve a webhook host once, check every address, and pin the connection to a checked one.

Used at registration and before every delivery attempt. The resolver is injectable (rt.extras[RESOLVER_KEY])
so tests never resolve a real name; IP-literal hosts skip resolution and go through the same address policy.
The system resolver looks names up on the webhooks' own few threads (kit/lookups.py, decision 0346), never on the
event loop's default pool: a subscriber whose DNS is slow delays only other webhook lookups.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from marketsync.kit.lookups import NameLookups
from marketsync.kit.lookups import lookups_of as shared_lookups
from marketsync.runtime import Runtime
from marketsync.webhooks import rules
from marketsync.webhooks.rules import IPAddress

RESOLVER_KEY = "webhooks.resolver"


class AddressRefused(Exception):
    """The host resolves (or is) an address deliveries must not reach. The message names no address."""


class ResolutionFailed(Exception):
    """The host name did not resolve."""


class Resolver(Protocol):
    async def resolve(self, host: str, port: int) -> list[IPAddress]: ...


class SystemResolver:
    """The operating system's resolver (getaddrinfo), on `lookups`' threads. When they are all busy a lookup waits
    for one; the caller's deadline bounds that wait as it bounds the lookup."""

    def __init__(self, lookups: NameLookups) -> None:
        self.lookups = lookups

    async def resolve(self, host: str, port: int) -> list[IPAddress]:
        try:
            infos = await self.lookups.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
        except (socket.gaierror, UnicodeError) as exc:
            raise ResolutionFailed(str(exc)) from None
        addresses: list[IPAddress] = []
        for _family, _type, _proto, _canon, sockaddr in infos:
            address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
            if address not in addresses:
                addresses.append(address)
        if not addresses:
            raise ResolutionFailed("no addresses")
        return addresses


class StaticResolver:
    """A fixed name → addresses map (tests, the benchmark). Unknown names fail: nothing is ever looked up."""

    def __init__(self, table: Mapping[str, list[str] | str]) -> None:
        self.table = {
            name.lower(): [ipaddress.ip_address(a) for a in ([v] if isinstance(v, str) else v)]
            for name, v in table.items()
        }

    async def resolve(self, host: str, port: int) -> list[IPAddress]:
        try:
            return list(self.table[host.lower()])
        except KeyError:
            raise ResolutionFailed(f"{host} is not in the static table") from None


def lookups_of(rt: Runtime) -> NameLookups:
    """The runtime's lookup threads for webhook hosts."""
    return shared_lookups(rt, "webhooks")


def resolver_of(rt: Runtime) -> Resolver:
    injected = rt.extras.get(RESOLVER_KEY)
    return injected if injected is not None else SystemResolver(lookups_of(rt))


@dataclass(frozen=True)
class Target:
    """Where to connect: the checked address, with the original host for SNI, Host and certificate checks."""

    url: str
    host: str
    port: int
    address: IPAddress
    is_ip_literal: bool

    @property
    def host_header(self) -> str:
        """The Host header in its DNS form: an internationalised name goes on the wire as its A-labels."""
        parts = urlsplit(self.url)
        if self.is_ip_literal:
            return parts.netloc.rpartition("@")[2]
        return self.host if parts.port is None else f"{self.host}:{parts.port}"


async def check(rt: Runtime, url: str) -> Target:
    """Resolve and check every address (refuse if any is refused); raise AddressRefused or ResolutionFailed."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    dev_mode = rt.settings.dev_mode
    plain_http = parts.scheme.lower() == "http"
    # Plain http goes out only in dev mode, and only to loopback (checked on the addresses below): a subscription
    # made in dev mode is refused at delivery by a process that runs without it.
    if parts.scheme.lower() != "https" and not (dev_mode and plain_http):
        raise AddressRefused("plain http is delivered only to loopback, in dev mode")
    port = parts.port or (80 if plain_http else 443)
    allowed = rt.settings.allowed_webhook_networks
    if dev_mode:
        allowed = [*allowed, *rules.DEV_MODE_NETWORKS]
    literal = rules.parse_ip_literal(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            host = rules.ascii_host(host)
        except ValueError:
            raise ResolutionFailed("not a valid domain name") from None
        # A name whose DNS form is an address (①②⑦.⓪.⓪.①, 127。0。0。1) is that address: no resolver is asked.
        literal = rules.parse_ip_literal(host)
        addresses = [literal] if literal is not None else await resolver_of(rt).resolve(host, port)
        if not addresses:
            raise ResolutionFailed(host)
    for address in addresses:
        reason = rules.address_refusal(address, allowed)
        if reason is not None:
            raise AddressRefused(f"the host resolves to a {reason} address")
        if plain_http and not address.is_loopback:
            raise AddressRefused("plain http is delivered only to loopback, in dev mode")
    return Target(url=url, host=host, port=port, address=addresses[0], is_ip_literal=literal is not None)
