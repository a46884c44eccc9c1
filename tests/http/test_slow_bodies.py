"""A request whose body never arrives, or drips in, is answered 408 once MARKETSYNC_REQUEST_BODY_TIMEOUT_S has passed
since it began, and its connection is closed: it held the connection for as long as the client liked (40 s and
more in the probe). Many such clients at once do not keep real requests waiting. Real uvicorn on loopback; the slow
clients are raw sockets."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from marketsync.runtime import Runtime
from tests.support.factories import make_tenant

DEADLINE_S = 4.0
SLOW_PATHS = (
    ("/api/inventory/price-quantity", "application/json", True),
    ("/app/sign-in", "application/x-www-form-urlencoded", False),
    ("/connect/token", "application/x-www-form-urlencoded", False),
)

pytestmark = pytest.mark.parametrize("settings_overrides", [{"request_body_timeout_s": DEADLINE_S}])


class SlowClient:
    """Sends the request line, the headers and the first bytes of a 4 KiB body; the rest never comes (or drips)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def start(cls, base_url: str, path: str, headers: dict[str, str]) -> SlowClient:
        url = httpx.URL(base_url)
        reader, writer = await asyncio.open_connection(url.host, url.port)
        lines = "".join(f"{name}: {value}\r\n" for name, value in {**headers, "Content-Length": "4096"}.items())
        writer.write(f"POST {path} HTTP/1.1\r\nHost: {url.host}\r\n{lines}\r\n".encode() + b'{"Items": [')
        await writer.drain()
        return cls(reader, writer)

    async def drip(self) -> None:
        """A byte every 200 ms: each arrives well within any per-read timeout, the whole body never does."""
        while not self.writer.is_closing():
            await asyncio.sleep(0.2)
            self.writer.write(b" ")
            try:
                await self.writer.drain()
            except ConnectionError:
                return

    def answered(self) -> bool:
        return len(self.reader._buffer) > 0 or self.reader.at_eof()  # type: ignore[attr-defined]

    async def answer_then_closed(self, within_s: float) -> bytes:
        """Everything the server sent until it closed the connection."""
        try:
            return await asyncio.wait_for(self.reader.read(), within_s)
        except ConnectionResetError:
            # A dripping client's bytes, unread when the server closed, make the kernel reset the connection, and
            # a reset may discard the 408 before the client reads it (RFC 9112 §9.6): ended by the server all the same.
            return b""
        finally:
            self.writer.close()


async def test_bodies_that_never_arrive_are_answered_408_and_real_requests_go_on_meanwhile(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api)
    loop = asyncio.get_running_loop()
    began = loop.time()
    slow: list[SlowClient] = []
    for index in range(90):
        path, media, authorised = SLOW_PATHS[index % len(SLOW_PATHS)]
        headers: dict[str, Any] = {"Content-Type": media, **(tenant.headers if authorised else {})}
        slow.append(await SlowClient.start(str(api.base_url), path, headers))
    dripping = slow[-10:]
    drips = [asyncio.create_task(client.drip()) for client in dripping]

    # Real requests, on the API and the app, are answered while every slow client still holds its connection.
    for _ in range(5):
        listed = await api.post("/api/products/List", json={}, headers=tenant.headers)
        assert listed.status_code == 200
        assert (await api.get("/app/sign-in")).status_code == 200
        pushed = await api.post(
            "/api/inventory/price-quantity", json={"Items": [{"Sku": "A", "Quantity": 1}]}, headers=tenant.headers
        )
        assert pushed.status_code == 200
    assert loop.time() - began < DEADLINE_S  # all of them answered long before the slow clients' deadline
    assert not any(client.answered() for client in slow)  # and not by giving up on the slow clients early
    answers = await asyncio.gather(*(client.answer_then_closed(DEADLINE_S + 20) for client in slow))
    for task in drips:
        task.cancel()

    quiet, dripped = answers[: -len(dripping)], answers[-len(dripping) :]
    assert all(answer.startswith(b"HTTP/1.1 408 ") for answer in quiet), {a[:40] for a in quiet}
    assert all(b"connection: close" in answer.lower() for answer in quiet)
    assert all(answer == b"" or answer.startswith(b"HTTP/1.1 408 ") for answer in dripped), {a[:40] for a in dripped}
    assert loop.time() - began >= DEADLINE_S
    problem = answers[0].split(b"\r\n\r\n", 1)[1]
    assert b'"code":"request-timeout"' in problem and b"did not arrive within 4 s" in problem
    assert b"<title>Too slow" in answers[1]  # the app's own page
    assert b'"error":"invalid_request"' in answers[2]  # the token endpoint's own error shape


async def test_a_body_that_arrives_in_time_is_read_whatever_its_pace(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)

    async def paced() -> Any:
        yield b'{"Items": [{"Sku": "A",'
        await asyncio.sleep(DEADLINE_S / 2)
        yield b' "Quantity": 1}]}'

    response = await api.post(
        "/api/inventory/price-quantity",
        content=paced(),
        headers={"Content-Type": "application/json", **tenant.headers},
    )
    assert response.status_code == 200, response.text
