"""A real HTTPS webhook receiver on loopback (uvicorn + a trustme certificate) that records every request."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn

HOSTNAME = "hooks.example.test"
# An internationalised receiver name and its DNS (A-label) form.
IDN_HOST = "bücher.example.test"
IDN_ASCII = "xn--bcher-kva.example.test"

Behaviour = Callable[["Received"], Awaitable[int] | int]


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    path: str

    @property
    def delivery_id(self) -> str:
        return self.headers["x-svc-delivery-id"]

    @property
    def attempt(self) -> int:
        return int(self.headers["x-svc-attempt"])


@dataclass
class Receiver:
    port: int = 0
    received: list[Received] = field(default_factory=list)
    # Status per request, by default 200; a script is consumed first, then `behaviour` decides.
    script: list[int] = field(default_factory=list)
    behaviour: Behaviour | None = None
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    # The answer's body (default: "status N " repeated), and a pause before the end of that body.
    answer: bytes | None = None
    body_after_s: float = 0.0

    def url(self, path: str = "/hook", host: str = HOSTNAME) -> str:
        return f"https://{host}:{self.port}{path}"

    async def wait_for(self, count: int, timeout: float = 30.0) -> list[Received]:
        async with asyncio.timeout(timeout):
            while len(self.received) < count:
                self.arrived.clear()
                await self.arrived.wait()
        return self.received

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        request = Received(headers=headers, body=body, path=scope["path"])
        self.received.append(request)
        self.arrived.set()
        if self.script:
            status = self.script.pop(0)
        elif self.behaviour is not None:
            outcome = self.behaviour(request)
            status = await outcome if not isinstance(outcome, int) else outcome
        else:
            status = 200
        extra = [(b"location", b"https://elsewhere.example.test/")] if 300 <= status < 400 else []
        await send(
            {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain"), *extra]}
        )
        answer = self.answer if self.answer is not None else f"status {status} ".encode() * 200
        if self.body_after_s:  # the answer at once, the end of its body late
            await send({"type": "http.response.body", "body": answer, "more_body": True})
            await asyncio.sleep(self.body_after_s)
            answer = b" (late)"
        await send({"type": "http.response.body", "body": answer})


@contextlib.asynccontextmanager
async def serve_https(receiver: Receiver, certfile: str | None) -> AsyncIterator[Receiver]:
    """The receiver on a loopback port, over TLS with `certfile` (None: plain http, as a local dev receiver)."""
    tls = {"ssl_certfile": certfile, "ssl_keyfile": certfile} if certfile else {}
    config = uvicorn.Config(
        receiver,
        host="127.0.0.1",
        port=0,
        log_config=None,
        access_log=False,
        lifespan="on",
        ws="none",
        timeout_graceful_shutdown=1,
        **tls,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.005)
    receiver.port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield receiver
    finally:
        server.should_exit = True
        await task
