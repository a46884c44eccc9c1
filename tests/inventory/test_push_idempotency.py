"""The push honours an Idempotency-Key as the other writes do (docs/decisions/0410): a repeat replays the stored
answer, another body under the same key is a 422, a repeat while the first runs a 409. It was silently ignored: two
different bodies sent with one key were both applied. Without a key the push writes nothing more than before."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from marketsync.inventory import endpoints as inventory_endpoints
from marketsync.models import IdempotencyRecord
from marketsync.runtime import Runtime
from tests.inventory.support import add_products, inventory_events, statements_of, stored
from tests.support.factories import Tenant, make_tenant, problem

PUSH = "/api/inventory/price-quantity"


async def _push(api: httpx.AsyncClient, tenant: Tenant, items: list[dict[str, Any]], key: str | None) -> httpx.Response:
    headers = {**tenant.headers, **({"Idempotency-Key": key} if key is not None else {})}
    return await api.post(PUSH, json={"Items": items}, headers=headers)


async def test_a_repeat_under_its_key_replays_the_answer_and_applies_once(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("A-1", "10.00", 5)])
    first = await _push(api, tenant, [{"Sku": "A-1", "Quantity": 7}], "push-1")
    assert first.status_code == 200 and "idempotent-replayed" not in first.headers
    await add_products(rt, tenant.account_id, [("B-2", "1.00", 1)])  # the account moves on meanwhile

    again = await _push(api, tenant, [{"Sku": "A-1", "Quantity": 7}], "push-1")

    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
    assert again.content == first.content  # the stored answer: "Updated" and the first RequestId, not "Unchanged"
    assert again.json()["Results"] == [{"Sku": "A-1", "Result": "Updated"}]
    assert len(await inventory_events(rt, tenant.account_id)) == 1


async def test_another_body_under_a_used_key_is_a_422_and_applies_nothing(rt: Runtime, api: httpx.AsyncClient) -> None:
    """The probe: two different bodies with one key were both applied."""
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("A-1", "10.00", 5)])
    assert (await _push(api, tenant, [{"Sku": "A-1", "Quantity": 7}], "push-2")).status_code == 200

    other = await _push(api, tenant, [{"Sku": "A-1", "Quantity": 9}], "push-2")

    assert other.status_code == 422 and problem(other)["code"] == "idempotency-key-reused"
    assert (await stored(rt, tenant.account_id))["A-1"][:2] == (Decimal("10.00"), 7)
    # A key is the account's own: another account may use the same one.
    neighbour = await make_tenant(rt, api)
    await add_products(rt, neighbour.account_id, [("A-1", "10.00", 5)])
    assert (await _push(api, neighbour, [{"Sku": "A-1", "Quantity": 9}], "push-2")).status_code == 200


async def test_a_repeat_while_the_first_runs_is_a_409_then_replays(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("A-1", "10.00", 5)])
    pushing, release = asyncio.Event(), asyncio.Event()
    push_committed = inventory_endpoints.service.push_price_quantity_committed

    async def held(*args: Any, **kwargs: Any) -> Any:  # the server shares the test's loop
        pushing.set()
        await release.wait()
        return await push_committed(*args, **kwargs)

    monkeypatch.setattr(inventory_endpoints.service, "push_price_quantity_committed", held)
    first = asyncio.create_task(_push(api, tenant, [{"Sku": "A-1", "Quantity": 7}], "push-3"))
    await asyncio.wait_for(pushing.wait(), 30)

    try:
        running = await asyncio.wait_for(_push(api, tenant, [{"Sku": "A-1", "Quantity": 7}], "push-3"), 10)
    finally:
        release.set()

    assert running.status_code == 409 and problem(running)["code"] == "idempotency-in-flight"
    assert (await first).status_code == 200
    replayed = await _push(api, tenant, [{"Sku": "A-1", "Quantity": 7}], "push-3")
    assert replayed.headers["idempotent-replayed"] == "true" and replayed.content == (await first).content


async def test_a_push_that_fails_frees_its_key(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("A-1", "10.00", 5)])
    push_committed = inventory_endpoints.service.push_price_quantity_committed
    calls: list[int] = []

    async def failing_once(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the database went away mid-push")
        return await push_committed(*args, **kwargs)

    monkeypatch.setattr(inventory_endpoints.service, "push_price_quantity_committed", failing_once)
    assert (await _push(api, tenant, [{"Sku": "A-1", "Quantity": 7}], "push-4")).status_code == 500
    retried = await _push(api, tenant, [{"Sku": "A-1", "Quantity": 7}], "push-4")
    assert retried.status_code == 200 and "idempotent-replayed" not in retried.headers
    assert (await stored(rt, tenant.account_id))["A-1"][1] == 7


async def test_a_bad_key_is_named_beside_the_bodys_problems_and_nothing_is_applied(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("A-1", "10.00", 5)])
    both = await _push(api, tenant, [{"Sku": "A-1", "Quantity": -1}], "k" * 256)
    assert both.status_code == 400
    assert set(problem(both)["errors"]) == {"Idempotency-Key", "Items[0].Quantity"}
    alone = await _push(api, tenant, [{"Sku": "A-1", "Quantity": 7}], "k" * 256)
    assert alone.status_code == 400 and set(problem(alone)["errors"]) == {"Idempotency-Key"}
    assert (await stored(rt, tenant.account_id))["A-1"][1] == 5


async def test_a_push_without_a_key_writes_nothing_for_idempotency(rt: Runtime, api: httpx.AsyncClient) -> None:
    """The push's hot path (docs/decisions/0240): no claim, no stored answer, no statement about keys."""
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("A-1", "10.00", 5)])
    with statements_of(rt) as seen:
        assert (await _push(api, tenant, [{"Sku": "A-1", "Quantity": 7}], None)).status_code == 200
    assert not [statement for statement, _ in seen if "idempotency" in statement.lower()]
    assert await _records(rt) == []
    with statements_of(rt) as seen:
        assert (await _push(api, tenant, [{"Sku": "A-1", "Quantity": 8}], "push-5")).status_code == 200
    assert [statement for statement, _ in seen if "idempotency" in statement.lower()]  # the check sees the claim
    assert [record.key for record in await _records(rt)] == ["push-5"]


async def _records(rt: Runtime) -> list[IdempotencyRecord]:
    async with rt.db.read() as session:
        return list((await session.execute(select(IdempotencyRecord))).scalars())
