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
