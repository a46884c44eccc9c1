"""Direct endpoint calls (http/lean_routes.py, docs/decisions/0250): the hot routes take them, and their answers are
FastAPI's own, byte for byte, for success and for every refusal the caller or the endpoint can cause."""

from __future__ import annotations

import httpx
from fastapi.routing import APIRoute

from marketsync.app import create_app
from marketsync.runtime import Runtime
from tests.support.factories import make_tenant
from tests.support.server import serve

HOT = {
    ("GET", "/api/marketplaces"),
    ("GET", "/api/products/{sku:path}"),
    ("POST", "/api/inventory/price-quantity"),
    ("POST", "/api/orders/List"),
    ("POST", "/api/orders/Refund"),
    ("POST", "/api/products/Create"),
}
# Headers that differ between two answers to the same request whatever handles them.
VOLATILE = {"x-request-id", "date", "ratelimit", "ratelimit-policy"}


def _stable(response: httpx.Response) -> tuple[int, dict[str, str], bytes]:
    headers = {k: v for k, v in response.headers.items() if k not in VOLATILE}
    return response.status_code, headers, response.content


async def test_the_hot_routes_are_called_directly(rt: Runtime) -> None:
    app = create_app(rt)
    lean = {
        (method, route.path)
        for route in app.router.routes
        if isinstance(route, APIRoute) and getattr(route, "_marketsync_lean", False)
        for method in route.methods
    }
    assert lean >= HOT


async def test_direct_calls_answer_as_fastapi_does(rt: Runtime) -> None:
    direct = create_app(rt)
    solved = create_app(rt)
    # With any dependency override the routes hand the request to FastAPI's own handler.
    solved.dependency_overrides[object] = object
    async with serve(direct) as direct_url, serve(solved) as solved_url:
        async with httpx.AsyncClient(base_url=direct_url) as api:
            tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
            reader = await make_tenant(rt, api, scopes=("OrdersRead",))
        requests: list[tuple[str, str, dict[str, str], bytes | None]] = [
            ("GET", "/api/marketplaces", tenant.headers, None),
            ("GET", "/api/marketplaces", {}, None),  # 401
            ("GET", "/api/marketplaces", {"Authorization": "Bearer mst_forged"}, None),  # 401 invalid_token
            ("GET", "/api/marketplaces", reader.headers, None),  # 403 scope
            ("GET", "/api/products/NO-SUCH-SKU", tenant.headers, None),  # 404
            ("POST", "/api/orders/List", tenant.headers, b'{"Limit": 0}'),  # 400 naming the field
            ("POST", "/api/orders/List", tenant.headers, b"{not json"),  # 400 body
            ("POST", "/api/inventory/price-quantity", tenant.headers, b'{"Items": [{"Sku": "X", "Quantity": -1}]}'),
        ]
        async with httpx.AsyncClient(base_url=direct_url) as a, httpx.AsyncClient(base_url=solved_url) as b:
            for method, path, headers, body in requests:
                sent = {**headers, "X-Request-Id": "lean-or-solved-1"}  # the same id in both problem bodies
                if body is not None:
                    sent["Content-Type"] = "application/json"
                first = await a.request(method, path, headers=sent, content=body)
                second = await b.request(method, path, headers=sent, content=body)
                assert _stable(first) == _stable(second), (method, path)
                assert first.status_code in (200, 400, 401, 403, 404), first.text
