"""Helpers of the SDK tests: clients on the live test server (async, or sync driven from a worker thread),
transports that inject faults between the SDK and the server, and a check that nothing went unparsed."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from marketsync_client import AsyncClient, Client, RetryPolicy, WalkState
from pydantic import BaseModel

from marketsync.jobs.worker import Worker
from marketsync.runtime import Runtime
from tests.support.factories import Tenant

# Tests never wait for real backoff: a retry comes after at most 20 ms (Retry-After is still honoured).
FAST_RETRIES = RetryPolicy(max_attempts=5, backoff_s=0.01, max_backoff_s=0.02)


class ThreadedClient:
    """The sync `Client` driven from an async test: each call runs in a worker thread, because the server under
    test shares the test's event loop (a blocking call on the loop would wait for itself)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.client, name)
        if not callable(attribute):
            return attribute

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(attribute, *args, **kwargs)

        return call


async def collect(
    client: AsyncClient | ThreadedClient, method: str, *args: Any, **kwargs: Any
) -> tuple[list[Any], WalkState]:
    """Every item of one of the client's iterators, and the walk's state at the end."""
    if isinstance(client, ThreadedClient):

        def walk() -> tuple[list[Any], WalkState]:
            paged = getattr(client.client, method)(*args, **kwargs)
            return list(paged), paged.state

        return await asyncio.to_thread(walk)
    paged = getattr(client, method)(*args, **kwargs)
    return [item async for item in paged], paged.state


@dataclass
class Seen:
    """Every request the SDK sent and every status it got back, in order."""

    requests: list[httpx.Request] = field(default_factory=list)
    statuses: list[tuple[str, int, float]] = field(default_factory=list)  # (path, status, monotonic time)

    def paths(self, path: str) -> list[httpx.Request]:
        return [r for r in self.requests if r.url.path == path]


# "connect" (refused before sending), "lose" (applied, answer lost), or a status a proxy in front answers without
# passing the request on ("500", "502", "503" with Retry-After 0, "504": not applied).
Fault = str


def _proxy_answer(fault: str | None, request: httpx.Request) -> httpx.Response | None:
    if fault is None or not fault.isdigit():
        return None
    return httpx.Response(int(fault), headers={"Retry-After": "0"} if fault == "503" else {}, request=request)


class AsyncFaults(httpx.AsyncBaseTransport):
    """The real transport, with faults injected for requests to chosen paths (each fault used once)."""

    def __init__(self, seen: Seen, faults: dict[str, list[Fault]] | None = None) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.seen = seen
        self.faults = faults or {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.requests.append(request)
        planned = self.faults.get(request.url.path)
        fault = planned.pop(0) if planned else None
        if fault == "connect":
            raise httpx.ConnectError("connection refused (injected)", request=request)
        if (answered := _proxy_answer(fault, request)) is not None:
            return answered
        response = await self.inner.handle_async_request(request)
        await response.aread()
        self.seen.statuses.append((request.url.path, response.status_code, time.monotonic()))
        if fault == "lose":
            raise httpx.ReadError("connection reset after the request was processed (injected)", request=request)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class SyncFaults(httpx.BaseTransport):
    def __init__(self, seen: Seen, faults: dict[str, list[Fault]] | None = None) -> None:
        self.inner = httpx.HTTPTransport()
        self.seen = seen
        self.faults = faults or {}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.requests.append(request)
        planned = self.faults.get(request.url.path)
        fault = planned.pop(0) if planned else None
        if fault == "connect":
            raise httpx.ConnectError("connection refused (injected)", request=request)
        if (answered := _proxy_answer(fault, request)) is not None:
            return answered
        response = self.inner.handle_request(request)
        response.read()
        self.seen.statuses.append((request.url.path, response.status_code, time.monotonic()))
        if fault == "lose":
            raise httpx.ReadError("connection reset after the request was processed (injected)", request=request)
        return response

    def close(self) -> None:
        self.inner.close()


@contextlib.asynccontextmanager
async def sdk(
    api: httpx.AsyncClient,
    tenant: Tenant,
    flavour: str = "async",
    *,
    seen: Seen | None = None,
    faults: dict[str, list[Fault]] | None = None,
    client_secret: str | None = None,
    **options: Any,
) -> AsyncIterator[Any]:
    """An SDK client for `tenant` on the test server: `AsyncClient`, or with flavour "sync" a `ThreadedClient`."""
    seen = seen if seen is not None else Seen()
    settings: dict[str, Any] = {"base_url": str(api.base_url), "retry": FAST_RETRIES, **options}
    client_id, secret = tenant.credential.client_id, client_secret or tenant.credential.client_secret
    if flavour == "sync":
        sync_client = Client(
            client_id,
            secret,
            http_client=httpx.Client(transport=SyncFaults(seen, faults), timeout=30),
            **settings,
        )
        try:
            yield ThreadedClient(sync_client)
        finally:
            await asyncio.to_thread(sync_client._http.close)
        return
    async_client = AsyncClient(
        client_id,
        secret,
        http_client=httpx.AsyncClient(transport=AsyncFaults(seen, faults), timeout=30),
        **settings,
    )
    try:
        yield async_client
    finally:
        await async_client._http.aclose()


def assert_exact(model: BaseModel, where: str = "") -> None:
    """The SDK parsed every field the service sent: none left over in `model_extra`, at any depth."""
    where = where or type(model).__name__
    assert not model.model_extra, f"{where}: fields the SDK does not know: {sorted(model.model_extra)}"
    for name, value in model:
        for index, item in enumerate(value if isinstance(value, list) else [value]):
            if isinstance(item, BaseModel):
                assert_exact(item, f"{where}.{name}[{index}]" if isinstance(value, list) else f"{where}.{name}")


@contextlib.asynccontextmanager
async def draining_worker(rt: Runtime, every: float = 0.05) -> AsyncIterator[None]:
    """Workers running in the background (as `marketsync worker` would), so jobs complete while a test waits."""

    async def loop() -> None:
        while True:
            await Worker(rt).drain()
            await asyncio.sleep(every)

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def after(seconds: float) -> Callable[[], bool]:
    deadline = time.monotonic() + seconds
    return lambda: time.monotonic() >= deadline
