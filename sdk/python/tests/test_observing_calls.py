"""What an integrator sees of the SDK's calls: retries through 500, 502 and 504 where a call is safe to repeat (as
through 503), a keyed push applied once whatever is retried, the raw response of a call (`with_raw_response`), and
one DEBUG line per attempt on the `marketsync_client` logger that never carries a token or a secret."""

from __future__ import annotations

import asyncio
import logging
from decimal import Decimal
from typing import Any

import httpx
import pytest
from marketsync_client import Client, RawResponse, ServerError

from marketsync.runtime import Runtime
from tests.inventory.support import add_products, inventory_events, stored
from tests.support.factories import make_tenant
from tests.support.sdk import Seen, ThreadedClient, sdk

PUSH = "/api/inventory/price-quantity"
PRODUCTS = "/api/products/List"


async def raw(client: Any, method: str, *args: Any, **kwargs: Any) -> RawResponse[Any]:
    """`with_raw_response` on the async client, or on the sync one in a worker thread (as the tests drive it)."""
    if isinstance(client, ThreadedClient):
        sync: Client = client.client
        return await asyncio.to_thread(lambda: sync.with_raw_response(getattr(sync, method), *args, **kwargs))
    result: RawResponse[Any] = await client.with_raw_response(getattr(client, method), *args, **kwargs)
    return result


@pytest.mark.parametrize("status", ["500", "502", "504"])
async def test_reads_and_keyed_writes_are_retried_through_server_errors_and_unkeyed_writes_are_not(
    rt: Runtime, api: httpx.AsyncClient, status: str
) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("P-1", "1.00", 1)])
    seen = Seen()
    async with sdk(api, tenant, seen=seen, faults={PRODUCTS: [status, status], PUSH: [status, status]}) as client:
        assert (await client.list_products()).TotalCount == 1
        assert len(seen.paths(PRODUCTS)) == 3
        keyed = await client.push_price_quantity([{"Sku": "P-1", "Quantity": 4}], idempotency_key="retry-1")
        assert keyed.Updated == 1 and len(seen.paths(PUSH)) == 3
        assert all(request.headers["idempotency-key"] == "retry-1" for request in seen.paths(PUSH))
    async with sdk(api, tenant, seen=seen, faults={PUSH: [status]}) as client:
        with pytest.raises(ServerError) as failed:
            await client.push_price_quantity([{"Sku": "P-1", "Quantity": 5}])  # no key: it may have been applied
        assert failed.value.status == int(status) and len(seen.paths(PUSH)) == 4


async def test_a_keyed_push_whose_answer_was_lost_is_retried_and_applied_once(
    rt: Runtime, api: httpx.AsyncClient, flavour: str
) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("P-1", "1.00", 1)])
    seen = Seen()
    async with sdk(api, tenant, flavour, seen=seen, faults={PUSH: ["lose"]}) as client:
        answer = await raw(
            client, "push_price_quantity", [{"Sku": "P-1", "Price": Decimal("2.50")}], idempotency_key="p-1"
        )

    assert [status for path, status, _ in seen.statuses if path == PUSH] == [200, 200]
    assert answer.attempts == 2 and answer.replayed and answer.headers["idempotent-replayed"] == "true"
    assert answer.parsed.Results[0].Result == "Updated"  # the first answer, stored: not "Unchanged"
    assert (await stored(rt, tenant.account_id))["P-1"][0] == Decimal("2.50")
    assert len(await inventory_events(rt, tenant.account_id)) == 1


async def test_the_raw_response_of_a_call_gives_its_status_and_headers(
    rt: Runtime, api: httpx.AsyncClient, flavour: str
) -> None:
    tenant = await make_tenant(rt, api)
    async with sdk(api, tenant, flavour) as client:
        listed = await raw(client, "list_marketplaces")
        fresh = await raw(client, "push_price_quantity", [{"Sku": "NONE", "Quantity": 1}], idempotency_key="k-1")
        with pytest.raises(TypeError, match="made no call to the API"):
            await raw(client, "iter_orders")  # an iterator calls the API only as it is walked
    assert listed.parsed == [] and listed.status_code == 200 and listed.attempts == 1
    assert listed.request_id and listed.request_id == listed.headers["x-request-id"]
    assert listed.headers["ratelimit-policy"] and not listed.replayed
    assert fresh.parsed.NotFound == 1 and not fresh.replayed and "idempotent-replayed" not in fresh.headers


async def test_each_attempt_is_one_debug_line_without_a_token_or_a_secret(
    rt: Runtime, api: httpx.AsyncClient, flavour: str, caplog: pytest.LogCaptureFixture
) -> None:
    tenant = await make_tenant(rt, api)
    caplog.set_level(logging.DEBUG, logger="marketsync_client")
    async with sdk(api, tenant, flavour, faults={PRODUCTS: ["502"]}) as client:
        token = (await client.fetch_token()).access_token
        await client.list_products()
        await client.push_price_quantity([{"Sku": "NONE", "Quantity": 1}])

    lines = [record for record in caplog.records if record.name == "marketsync_client"]
    assert all(record.levelno == logging.DEBUG for record in lines)
    described = [(r.method, r.path, r.status, r.attempt) for r in lines]  # type: ignore[attr-defined]
    assert described == [
        ("POST", "/connect/token", 200, 1),
        ("POST", PRODUCTS, 502, 1),
        ("POST", PRODUCTS, 200, 2),
        ("POST", PUSH, 200, 1),
    ]
    answered = [r for r in lines if r.status == 200 and r.path != "/connect/token"]  # type: ignore[attr-defined]
    assert all(r.request_id and r.request_id in r.getMessage() for r in answered)  # type: ignore[attr-defined]
    assert all(isinstance(r.elapsed_ms, float) and " ms " in r.getMessage() for r in lines)  # type: ignore[attr-defined]
    everything = " ".join(f"{r.getMessage()} {vars(r)}" for r in lines)
    for secret in (token, tenant.token, tenant.credential.client_secret):
        assert secret not in everything
