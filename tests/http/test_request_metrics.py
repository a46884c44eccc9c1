"""Per-request metrics (the middleware keeps each label set's children): every request is counted and timed."""

from __future__ import annotations

import re

import httpx

from marketsync.runtime import Runtime


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
