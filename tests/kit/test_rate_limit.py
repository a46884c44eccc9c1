"""Per-credential rate limit on every /api route, job polling included (spec section 8, DESIGN.md section 4)."""

from __future__ import annotations

import os
from collections.abc import Callable

import httpx
import pytest
import redis.asyncio as aioredis

from marketsync.app import create_app
from marketsync.runtime import Runtime
from tests.support.factories import make_tenant, problem
from tests.support.server import serve

REDIS_URL = os.environ.get("MARKETSYNC_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
UNKNOWN_JOB = "/api/jobs/01ABCDEFGHJKMNPQRSTVWXYZ00"


def rate_headers_ok(response: httpx.Response, limit: int, remaining: int) -> None:
    assert response.headers["ratelimit-policy"] == f'"credential";q={limit};w=60'
    assert response.headers["ratelimit"].startswith(f'"credential";r={remaining};t=')


@pytest.mark.parametrize("settings_overrides", [{"rate_limit": "3/minute"}])
async def test_job_polling_is_rate_limited_with_headers(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    for remaining in (2, 1, 0):
        response = await api.get(UNKNOWN_JOB, headers=tenant.headers)
        assert response.status_code == 404
        rate_headers_ok(response, 3, remaining)
    limited = await api.get(UNKNOWN_JOB, headers=tenant.headers)
    assert limited.status_code == 429
    assert problem(limited)["code"] == "rate-limited"
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    rate_headers_ok(limited, 3, 0)
    # Another credential has its own budget.
    other = await make_tenant(rt, api)
    assert (await api.get("/api/marketplaces", headers=other.headers)).status_code == 200


@pytest.mark.parametrize("settings_overrides", [{"rate_limit": "2/minute"}])
async def test_budget_spans_routes(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    assert (await api.get("/api/marketplaces", headers=tenant.headers)).status_code == 200
    assert (await api.get(UNKNOWN_JOB, headers=tenant.headers)).status_code == 404
    assert (await api.get("/api/marketplaces", headers=tenant.headers)).status_code == 429


async def redis_or_skip() -> None:
    client = aioredis.from_url(REDIS_URL)
    try:
        await client.ping()
    except (OSError, aioredis.ConnectionError) as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"Redis is required in CI and unreachable at {REDIS_URL}: {exc}")
        pytest.skip(f"Redis unreachable at {REDIS_URL}: {exc}")
    finally:
        await client.aclose()


async def test_two_api_processes_share_one_budget_through_redis(
    rt: Runtime, api: httpx.AsyncClient, make_runtime: Callable[..., Runtime]
) -> None:
    await redis_or_skip()
    tenant = await make_tenant(rt, api)
    # Two independent API 'processes' (own runtime, limiter and server) on one database and one Redis.
    first, second = (make_runtime(rate_limit="4/minute", redis_url=REDIS_URL) for _ in range(2))
    try:
        async with (
            serve(create_app(first)) as url_a,
            serve(create_app(second)) as url_b,
            httpx.AsyncClient(base_url=url_a) as a,
            httpx.AsyncClient(base_url=url_b) as b,
        ):
            statuses = []
            for client in (a, b, a, b, a, b):
                statuses.append((await client.get("/api/marketplaces", headers=tenant.headers)).status_code)
        assert statuses == [200, 200, 200, 200, 429, 429]
    finally:
        for runtime in (first, second):
            await runtime.close()
