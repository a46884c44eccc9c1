"""Hostile push bodies (issue 14's outside probe): each a clean 4xx, nothing written."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from marketsync.runtime import Runtime
from tests.inventory.support import PUSH, add_products, stored
from tests.support.factories import make_tenant, problem


@pytest.mark.parametrize("raw_sku", ['"\\ud800"', '"A\\udfffB"', '"\\ud83d"'])
async def test_a_lone_surrogate_sku_is_a_400(rt: Runtime, api: httpx.AsyncClient, raw_sku: str) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("SKU-1", "9.99", 3)])
    before = await stored(rt, tenant.account_id)
    body = '{"Items": [{"Sku": "SKU-1", "Quantity": 5}, {"Sku": ' + raw_sku + ', "Quantity": 1}]}'
    response = await api.post(PUSH, content=body, headers={**tenant.headers, "Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    assert "body" in problem(response)["errors"]
    assert await stored(rt, tenant.account_id) == before


async def test_a_valid_surrogate_pair_is_text(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    body = '{"Items": [{"Sku": "GIFT-\\ud83c\\udf81", "Quantity": 1}]}'
    response = await api.post(PUSH, content=body, headers={**tenant.headers, "Content-Type": "application/json"})
    assert response.status_code == 200, response.text
    assert response.json()["Results"] == [{"Sku": "GIFT-\U0001f381", "Result": "NotFound"}]


@pytest.mark.parametrize("settings_overrides", [{"max_body_bytes": 4096}])
@pytest.mark.parametrize("route", [PUSH, "/api/orders/List", "/api/products/List"])
async def test_an_oversized_chunked_body_is_a_413_on_every_route(
    rt: Runtime, api: httpx.AsyncClient, route: str
) -> None:
    tenant = await make_tenant(rt, api)

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"Items": ['
        for number in range(200):
            yield b'{"Sku": "SKU-%d", "Quantity": 1},' % number
        yield b'{"Sku": "LAST", "Quantity": 1}]}'

    response = await api.post(route, content=chunks(), headers={**tenant.headers, "Content-Type": "application/json"})
    assert response.status_code == 413, response.text
    assert problem(response)["code"] == "payload-too-large"
