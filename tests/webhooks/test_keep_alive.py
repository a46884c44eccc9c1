"""A receiver that closes a connection as a delivery goes out (on a kept-alive one: its keep-alive timeout ran out
that moment, decision 0305). The request is sent once: its retry is the next scheduled attempt, logged as one. An
idle connection is not reused after 4 s, before a receiver's common 5 s idle timeout."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx

from marketsync.runtime import Runtime
from marketsync.webhooks.delivery import KEEP_ALIVE_EXPIRY_S
from tests.support.factories import Tenant, make_tenant
from tests.webhooks.conftest import Tls
from tests.webhooks.receiver import HOSTNAME
from tests.webhooks.support import attempts, fire, pump, subscribe, subscription_row


@dataclass
class ClosingReceiver:
    """HTTPS on loopback, by hand: it answers `answered_per_connection` requests on a connection, then reads the
    next one and closes the connection without a byte of an answer."""

    answered_per_connection: int
    port: int = 0
    connections: int = 0
    # (connection number, X-SVC-Delivery-Id, X-SVC-Attempt) of every request read, answered or not.
    requests: list[tuple[int, str, str]] = field(default_factory=list)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        connection = self.connections
        try:
            for answered in range(self.answered_per_connection + 1):
                head = await reader.readuntil(b"\r\n\r\n")
                headers = dict(
                    line.decode().lower().split(": ", 1) for line in head.split(b"\r\n")[1:] if b": " in line
                )
                await reader.readexactly(int(headers["content-length"]))
                self.requests.append((connection, headers["x-svc-delivery-id"], headers["x-svc-attempt"]))
                if answered == self.answered_per_connection:
                    break
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, ssl.SSLError):
                await writer.wait_closed()


@contextlib.asynccontextmanager
async def subscribed(
    rt: Runtime, api: httpx.AsyncClient, tls: Tls, answered_per_connection: int
) -> AsyncIterator[tuple[ClosingReceiver, Tenant, str]]:
    """A ClosingReceiver serving, and a new tenant's subscription to it: (receiver, tenant, subscription id)."""
    receiver = ClosingReceiver(answered_per_connection)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tls.cert_file)
    server = await asyncio.start_server(receiver.handle, "127.0.0.1", 0, ssl=context)
    receiver.port = server.sockets[0].getsockname()[1]
    async with server:
        tenant = await make_tenant(rt, api)
        subscription = await subscribe(api, tenant, f"https://{HOSTNAME}:{receiver.port}/hook")
        yield receiver, tenant, subscription["SubscriptionId"]


async def test_a_kept_connection_closed_under_a_delivery_is_not_sent_again_until_the_next_attempt(
    rt: Runtime, api: httpx.AsyncClient, tls: Tls
) -> None:
    async with subscribed(rt, api, tls, answered_per_connection=1) as (receiver, tenant, subscription_id):
        for delivered in (1, 2):  # one after the other: the second finds the first's connection kept alive
            await fire(rt, tenant.account_id)
            await pump(rt, lambda n=delivered: len({d for _, d, _ in receiver.requests}) >= n)
        await pump(rt, lambda: len(receiver.requests) >= 3)
        await pump(rt, lambda: True)
        logged = await attempts(rt, subscription_id)
        row = await subscription_row(rt, subscription_id)

    # The second delivery was read on the kept connection, which then closed unanswered: attempt 1 failed, and the
    # request went again only as attempt 2, scheduled and logged, on a new connection.
    [(_, first, _), (_, second, _), _] = receiver.requests
    assert first != second
    assert receiver.requests == [(1, first, "1"), (1, second, "1"), (2, second, "2")]
    assert [(a.attempt, a.outcome, a.status_code) for a in logged] == [
        (1, "Succeeded", 200),
        (1, "Retrying", None),
        (2, "Succeeded", 200),
    ]
    assert logged[1].error_class in {"ProtocolError", "NetworkError"}
    assert row is not None and row.consecutive_failures == 0


async def test_a_new_connection_closed_under_a_delivery_is_a_failed_attempt_sent_once(
    rt: Runtime, api: httpx.AsyncClient, tls: Tls
) -> None:
    async with subscribed(rt, api, tls, answered_per_connection=0) as (receiver, tenant, subscription_id):
        await fire(rt, tenant.account_id)
        await pump(rt, lambda: len(receiver.requests) >= 1)
        await pump(rt, lambda: True)
        logged = await attempts(rt, subscription_id)

    # One send per attempt (the spec's retries may have come by now): nothing says a new connection's request was
    # not read, so it is not sent again at once.
    assert len(receiver.requests) == receiver.connections == len(logged) >= 1
    assert [a.attempt for a in logged] == list(range(1, len(logged) + 1))
    assert {(a.outcome, a.status_code, a.error_class) for a in logged} == {("Retrying", None, "ProtocolError")}


async def test_an_idle_connection_is_not_reused_after_four_seconds(
    rt: Runtime, api: httpx.AsyncClient, tls: Tls
) -> None:
    async with subscribed(rt, api, tls, answered_per_connection=10) as (receiver, tenant, _):
        for delivered, idle_s in ((1, 0.0), (2, 0.5), (3, KEEP_ALIVE_EXPIRY_S + 0.3)):
            await asyncio.sleep(idle_s)
            await fire(rt, tenant.account_id)
            await pump(rt, lambda n=delivered: len(receiver.requests) >= n)

    # Kept after half a second; after 4 s idle (below a receiver's common 5 s timeout) a new connection.
    assert KEEP_ALIVE_EXPIRY_S < 5
    assert [connection for connection, _, _ in receiver.requests] == [1, 1, 2]
