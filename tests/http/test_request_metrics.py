"""Per-request metrics (the middleware keeps each label set's children): every request is counted and timed."""

from __future__ import annotations

import asyncio
import re

import httpx
import orjson
import pytest

from marketsync.runtime import Runtime
from tests.support.factories import make_tenant


def sample(metrics: str, name: str, labels: str) -> float:
    match = re.search(rf"^{re.escape(name)}\{{{re.escape(labels)}\}} (\S+)$", metrics, re.M)
    return float(match.group(1)) if match else 0.0


async def test_each_request_counts_once_under_its_route_and_status(rt: Runtime, api: httpx.AsyncClient) -> None:
    before = (await api.get("/metrics")).text
    for _ in range(3):
        assert (await api.get("/api/marketplaces")).status_code == 401
    assert (await api.get("/healthz")).status_code == 200
    after = (await api.get("/metrics")).text
    unauthorised = 'method="GET",route="/api/marketplaces",status="401"'
    timed = 'method="GET",route="/api/marketplaces"'
    healthy = 'method="GET",route="/healthz",status="200"'
    assert (
        sample(after, "marketsync_http_requests_total", unauthorised)
        - sample(before, "marketsync_http_requests_total", unauthorised)
        == 3
    )
    assert (
        sample(after, "marketsync_http_request_seconds_count", timed)
        - sample(before, "marketsync_http_request_seconds_count", timed)
        == 3
    )
    assert (
        sample(after, "marketsync_http_requests_total", healthy)
        - sample(before, "marketsync_http_requests_total", healthy)
        == 1
    )


async def test_a_method_outside_the_known_ones_is_one_label(rt: Runtime, api: httpx.AsyncClient) -> None:
    """The method label was the request's own text: under a server that accepts any token as a method (uvicorn on
    h11, without httptools), each invented method was a new series kept for the life of the process (unbounded
    memory, a /metrics that grows with every request). Unknown methods share one label."""
    from marketsync.app import create_app

    invented = [f"X{index}ZZ" for index in range(5)]
    before = (await api.get("/metrics")).text
    transport = httpx.ASGITransport(app=create_app(rt))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as direct:
        for method in invented:
            assert (await direct.request(method, "/api/marketplaces")).status_code in (401, 405)
    after = (await api.get("/metrics")).text
    assert not any(f'method="{method}"' in after for method in invented)
    other = 'method="OTHER",route="/api/marketplaces"'
    assert (
        sample(after, "marketsync_http_request_seconds_count", other)
        - sample(before, "marketsync_http_request_seconds_count", other)
        == 5
    )


async def _sent_in_part_then_gone(base_url: str, path: str, headers: dict[str, str], part: bytes, length: int) -> None:
    """A raw client: the request line, the headers and part of a body of `length` bytes, then the connection closed."""
    url = httpx.URL(base_url)
    _reader, writer = await asyncio.open_connection(url.host, url.port)
    head = "".join(f"{name}: {value}\r\n" for name, value in {**headers, "Content-Length": str(length)}.items())
    writer.write(f"POST {path} HTTP/1.1\r\nHost: {url.host}\r\n{head}\r\n".encode() + part)
    await writer.drain()
    await asyncio.sleep(0.05)  # the server is reading the body
    writer.close()
    await writer.wait_closed()


async def _counted(api: httpx.AsyncClient, labels: str, at_least: float) -> str:
    """/metrics once the requests under `labels` reach `at_least` (the server notices a closed connection later)."""
    for _ in range(200):
        metrics = (await api.get("/metrics")).text
        if sample(metrics, "marketsync_http_requests_total", labels) >= at_least:
            return metrics
        await asyncio.sleep(0.025)
    raise AssertionError(f"{labels} never reached {at_least}")


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/api/inventory/price-quantity", "application/json"),  # the API reads its body itself
        ("/app/sign-in", "application/x-www-form-urlencoded"),  # the app's forms
        ("/connect/token", "application/x-www-form-urlencoded"),
    ],
)
async def test_a_client_gone_mid_body_is_logged_as_such_and_never_counted_a_server_error(
    rt: Runtime, api: httpx.AsyncClient, capsys: pytest.CaptureFixture[str], path: str, content_type: str
) -> None:
    """It was logged at error level as `unhandled_error` with a traceback, and counted as a 500."""
    tenant = await make_tenant(rt, api)
    headers = {"Content-Type": content_type, **tenant.headers}
    gone, failed = (f'method="POST",route="{path}",status="{status}"' for status in (499, 500))
    before = (await api.get("/metrics")).text
    capsys.readouterr()

    await _sent_in_part_then_gone(str(api.base_url), path, headers, b'{"Items": [{"Sku": "A", "Pri', 4096)

    after = await _counted(api, gone, sample(before, "marketsync_http_requests_total", gone) + 1)
    assert sample(after, "marketsync_http_requests_total", failed) == sample(
        before, "marketsync_http_requests_total", failed
    )
    logged = [orjson.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    assert not [line for line in logged if line["level"] in ("error", "critical") or "exception" in line], logged
    [disconnected] = [line for line in logged if line["event"] == "client_disconnected"]
    assert disconnected["level"] == "info" and disconnected["path"] == path
    [access] = [line for line in logged if line["event"] == "request" and line.get("path") == path]
    assert access["status"] == 499
