"""One delivery attempt over HTTPS: pinned to the checked address, SNI/Host of the original name, no redirects,
a total deadline, and at most a small snippet of the response read."""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime

import certifi
import httpx

from marketsync.config import Settings
from marketsync.runtime import Runtime
from marketsync.webhooks import rules, ssrf

HTTP_KEY = "webhooks.http"
USER_AGENT = "marketsync-webhooks/1"
MAX_POOLED_HOSTS = 256
CONNECTIONS_PER_HOST = 16  # a worker's attempts in flight (engine.DELIVERY_CONCURRENCY)
# An idle connection is dropped after 4 s, before common receivers' 5 s idle timeout: a request written onto a
# connection the receiver is closing gets no answer, and is not sent again within the attempt (decision 0305).
KEEP_ALIVE_EXPIRY_S = 4.0

# httpx logs every request URL at INFO; receivers' URLs may carry their own tokens in the query string.
logging.getLogger("httpx").setLevel(logging.WARNING)


@dataclass(frozen=True)
class AttemptResult:
    started_at: datetime
    duration_ms: int
    status_code: int | None
    error_class: str | None
    error_detail: str | None
    snippet: str | None

    @property
    def summary(self) -> str:
        if self.status_code is not None:
            return f"HTTP {self.status_code}"
        return self.error_class or "error"


class DeliveryHttp:
    """HTTP clients for deliveries: per receiver host name, up to CONNECTIONS_PER_HOST clients kept idle between
    attempts, each holding one keep-alive connection, lent to one attempt at a time.

    Pools are per host name because requests go to an IP: one shared pool keyed by IP could reuse a TLS
    connection made for one name (its SNI and certificate) for another name on the same address. One connection
    per client because httpcore looks at every connection of a pool (a readability check of each socket) on every
    request and every response close: with 16 in one pool that was a third of an attempt's CPU time.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.ssl_context = ssl.create_default_context(cafile=certifi.where())
        if settings.webhook_ca_bundle:
            self.ssl_context.load_verify_locations(cafile=settings.webhook_ca_bundle)
        self._idle: dict[str, list[httpx.AsyncClient]] = {}
        self._closed = False

    def _new_client(self) -> httpx.AsyncClient:
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1, keepalive_expiry=KEEP_ALIVE_EXPIRY_S)
        return httpx.AsyncClient(
            # retries=0: the transport never opens a connection again on its own. The only retry of a delivery is
            # the engine's scheduled attempt, logged as one.
            transport=httpx.AsyncHTTPTransport(verify=self.ssl_context, limits=limits, retries=0),
            trust_env=False,  # never an environment proxy: the connection must go to the checked address
            follow_redirects=False,
            timeout=httpx.Timeout(self.settings.webhook_timeout_s),
        )

    @asynccontextmanager
    async def client(self, host: str) -> AsyncIterator[httpx.AsyncClient]:
        """A client for one exchange with `host`: an idle one (its last exchange was answered) or a new one. A client
        whose exchange failed is closed."""
        key = host.lower()
        idle = self._idle.get(key)
        if idle is None and len(self._idle) < MAX_POOLED_HOSTS and not self._closed:
            idle = self._idle[key] = []
        client = idle.pop() if idle else self._new_client()
        try:
            yield client
        except BaseException:
            await client.aclose()
            raise
        if idle is not None and len(idle) < CONNECTIONS_PER_HOST and not self._closed:
            idle.append(client)
        else:  # beyond the hosts or connections kept: used once
            await client.aclose()

    async def post(self, target: ssrf.Target, headers: dict[str, str], body: bytes, deadline: float) -> tuple[int, str]:
        """POST once to the checked address by `deadline` (loop time): the status and the start of the answer
        (SNIPPET_BYTES at most). Raises TimeoutError when no status came by then.

        Sent once, whatever happens: a request that got no answer may still have been read and acted on, so it is
        never sent again here, not even when a kept-alive connection closed under it (decision 0305)."""
        async with self.client(target.host) as client:
            return await _exchange(client, target, headers, body, deadline)

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, {}
        for clients in idle.values():
            for client in clients:
                await client.aclose()


def http_of(rt: Runtime) -> DeliveryHttp:
    existing = rt.extras.get(HTTP_KEY)
    if isinstance(existing, DeliveryHttp):
        return existing
    created = DeliveryHttp(rt.settings)
    rt.extras[HTTP_KEY] = created
    return created


async def _exchange(
    client: httpx.AsyncClient, target: ssrf.Target, headers: dict[str, str], body: bytes, deadline: float
) -> tuple[int, str]:
    async with asyncio.timeout_at(deadline):
        response = await client.send(_pinned_request(client, target, headers, body), stream=True)
    try:
        snippet = await _snippet(response, deadline)
    finally:
        await response.aclose()
    return response.status_code, snippet


async def _snippet(response: httpx.Response, deadline: float) -> str:
    """The start of the answer, as much of it as came by the deadline: the status is the receiver's answer (a 2xx
    within the deadline is a success), the body only goes to the attempt log."""
    read = bytearray()
    try:
        async with asyncio.timeout_at(deadline):
            async for chunk in response.aiter_raw():
                read.extend(chunk)
                if len(read) >= rules.SNIPPET_BYTES:
                    break
    except (TimeoutError, httpx.HTTPError):
        pass
    text = storable(bytes(read[: rules.SNIPPET_BYTES]).decode("utf-8", errors="replace"))
    # Each byte that is not UTF-8 became a 3-byte mark: cut again to SNIPPET_BYTES, at a character boundary.
    return text.encode()[: rules.SNIPPET_BYTES].decode("utf-8", errors="ignore")


def storable(text: str) -> str:
    """A receiver's text as a database keeps it: PostgreSQL's text holds no U+0000 (the attempt would never be
    recorded, and the delivery sent again each time its lease expired)."""
    return text.replace("\x00", "\ufffd")


def _pinned_request(
    client: httpx.AsyncClient, target: ssrf.Target, headers: dict[str, str], body: bytes
) -> httpx.Request:
    url = httpx.URL(target.url).copy_with(host=str(target.address))
    extensions = {} if target.is_ip_literal else {"sni_hostname": target.host}
    return client.build_request(
        "POST",
        url,
        content=body,
        headers={**headers, "Host": target.host_header, "User-Agent": USER_AGENT},
        extensions=extensions,
    )


def _error_class(exc: BaseException) -> str:
    if isinstance(exc, (TimeoutError, httpx.TimeoutException)):
        return "Timeout"
    if isinstance(exc, httpx.ConnectError):
        cause = exc.__context__ or exc.__cause__
        return "TlsError" if isinstance(cause, ssl.SSLError) or "SSL" in str(exc) else "ConnectError"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "ProtocolError"
    if isinstance(exc, httpx.NetworkError):
        return "NetworkError"
    return "TransportError"


async def attempt(rt: Runtime, url: str, headers: dict[str, str], body: bytes) -> AttemptResult:
    """Check the address (SSRF guard, every attempt), then POST within the deadline. Never raises for I/O."""
    started_at = rt.clock.now()
    began = time.perf_counter()

    def result(
        status: int | None, error_class: str | None, detail: str | None, snippet: str | None = None
    ) -> AttemptResult:
        elapsed = int((time.perf_counter() - began) * 1000)
        return AttemptResult(started_at, elapsed, status, error_class, detail and storable(detail[:500]), snippet)

    # One deadline for the whole attempt, name resolution included: a slow resolver must not stretch it.
    deadline = asyncio.get_running_loop().time() + rt.settings.webhook_timeout_s
    try:
        async with asyncio.timeout_at(deadline):
            target = await ssrf.check(rt, url)
    except ssrf.AddressRefused as exc:
        return result(None, "AddressRefused", str(exc))
    except ssrf.ResolutionFailed:
        return result(None, "DnsFailure", "the host name did not resolve")
    except TimeoutError:
        return result(None, "Timeout", "the host name did not resolve within the deadline")

    try:
        status, text = await http_of(rt).post(target, headers, body, deadline)
        if 200 <= status < 300:
            return result(status, None, None, text)
        error_class = "Redirect" if 300 <= status < 400 else "HttpStatus"
        detail = f"HTTP {status}" + (" (redirects are not followed)" if error_class == "Redirect" else "")
        return result(status, error_class, detail, text)
    except (TimeoutError, httpx.HTTPError, httpx.InvalidURL) as exc:
        return result(None, _error_class(exc), f"{type(exc).__name__}: {exc}")
