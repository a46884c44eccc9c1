"""Every JSON route of the API answers a bad body the same way (marketsync.http.bodies), over real HTTP on both
databases: too large, not JSON by its Content-Type, not UTF-8, not JSON, not an object, a key given twice, NaN or
Infinity, a lone surrogate, an unknown field, no body where one is needed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute

from marketsync.app import create_app
from marketsync.http import bodies
from marketsync.runtime import Runtime
from tests.support.factories import make_tenant, problem

MAX_BODY_BYTES = 4096
UNKNOWN_FIELD = "Unknown field; field names are case-exact."

# Every JSON route, and whether it takes no body at all (only optional fields: read as `{}`).
JSON_ROUTES = {
    "/api/inventory/price-quantity": False,
    "/api/products/List": True,
    "/api/products/Create": False,
    "/api/product-types/Search": False,
    "/api/orders/List": True,
    "/api/orders/Confirm": False,
    "/api/orders/Cancel": False,
    "/api/orders/Refund": False,
    "/api/orders/Update": False,
    "/api/webhooks/Create": False,
    "/api/webhooks/List": True,
    "/api/webhooks/Delete": False,
    "/api/webhooks/Test": False,
}

# (body bytes, the errors of the 400)
BAD_BODIES: list[tuple[bytes, dict[str, list[str]]]] = [
    (b'{"Sku": "\xff"}', {"body": [bodies.NOT_UTF8]}),
    (b'{"Sku": ', {"body": [bodies.NOT_JSON]}),
    (b'{"Limit": NaN}', {"body": [bodies.NOT_JSON]}),
    (b'{"Limit": -Infinity}', {"body": [bodies.NOT_JSON]}),
    (b"[" * 4000, {"body": [bodies.NOT_JSON]}),  # deeper than the parser's stack, under the size limit
    (b"[]", {"body": [bodies.NOT_AN_OBJECT]}),
    (b'"{}"', {"body": [bodies.NOT_AN_OBJECT]}),
    (b"null", {"body": [bodies.NOT_AN_OBJECT]}),
    (
        b'{"Zz": 1, "Yy": {"A": [{"B": 1, "B": 2}]}, "Zz": 2}',
        {"Zz": [bodies.DUPLICATE_KEY], "Yy.A[0].B": [bodies.DUPLICATE_KEY]},
    ),
    (b'{"Zz": "\\ud800"}', {"body": [bodies.LONE_SURROGATE]}),
]


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"max_body_bytes": MAX_BODY_BYTES}


def test_the_table_names_every_json_route_of_the_app(rt: Runtime) -> None:
    posted = {
        route.path
        for route in create_app(rt).routes
        if isinstance(route, APIRoute) and route.path.startswith("/api/") and "POST" in route.methods
    }
    assert posted == set(JSON_ROUTES)


@pytest.mark.parametrize("path", sorted(JSON_ROUTES))
async def test_a_bad_body_gets_the_same_answer_on_every_route(rt: Runtime, api: httpx.AsyncClient, path: str) -> None:
    tenant = await make_tenant(rt, api)
    json_headers = {**tenant.headers, "Content-Type": "application/json"}

    async def post(content: bytes | AsyncIterator[bytes], headers: dict[str, str] = json_headers) -> httpx.Response:
        return await api.post(path, content=content, headers=headers)

    for content, errors in BAD_BODIES:
        response = await post(content)
        assert response.status_code == 400, (content[:40], response.text)
        assert problem(response)["errors"] == errors, content[:40]

    unknown = await post(b'{"Unknown": 1, "sku": "x"}')
    assert unknown.status_code == 400
    found = problem(unknown)["errors"]
    assert (found["Unknown"], found["sku"]) == ([UNKNOWN_FIELD], [UNKNOWN_FIELD])

    empty = await post(b" \n")
    if JSON_ROUTES[path]:
        assert empty.status_code == 200, empty.text
    else:
        assert empty.status_code == 400
        assert problem(empty)["errors"] == {"body": [bodies.REQUIRED]}

    too_large = await post(b'{"Zz": "' + b"x" * MAX_BODY_BYTES + b'"}')

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"Zz": "'
        for _ in range(MAX_BODY_BYTES // 1024 + 1):
            yield b"x" * 1024
        yield b'"}'

    too_large_streamed = await post(chunks())
    for response in (too_large, too_large_streamed):
        assert response.status_code == 413, response.text
        assert response.json()["code"] == "payload-too-large"

    not_json = await post(b"{}", {**tenant.headers, "Content-Type": "text/plain"})
    assert not_json.status_code == 415
    assert not_json.json()["code"] == "unsupported-media-type"
