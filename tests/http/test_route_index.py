"""The route index (http/route_index.py) chooses exactly the route, status and path parameters of FastAPI's own
linear matching, for every route of the application, every method, and the paths that match none."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi import APIRouter, FastAPI
from starlette.routing import Mount, Route

from marketsync.app import create_app
from marketsync.http.route_index import RouteIndex, bucket_key
from marketsync.runtime import Runtime

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
UNMATCHED = (
    "/",
    "/nope",
    "/api",
    "/api/",
    "/api/orders/",  # trailing slash: the full router's redirect
    "/api/orders/List/extra",
    "/api/unknown/thing",
    "/app",
    "/app/",
    "/app/static/app.css",
    "/app/static/missing.js",
    "/docs/",
    "/openapi.json/",
)


def concrete_paths(app: FastAPI) -> list[str]:
    paths = list(UNMATCHED)
    for route in app.router.routes:
        if isinstance(route, Route | Mount):
            paths.append(re.sub(r"\{[^}]+\}", "X01", route.path))
            paths.append(re.sub(r"\{[^}]+\}", "ab-cd", route.path) + "/")
    return sorted(set(paths))


async def dispatch(app: FastAPI, method: str, path: str) -> tuple[int, Any, Any]:
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"test"), (b"content-type", b"application/json"), (b"content-length", b"2")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    status: list[int] = []
    messages = [{"type": "http.request", "body": b"{}", "more_body": False}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    await app(scope, receive, send)
    route = scope.get("route")
    return status[0], getattr(route, "path", None), scope.get("path_params")


@pytest.mark.parametrize("backend", ["sqlite"])
async def test_the_index_chooses_what_linear_matching_chooses(rt: Runtime) -> None:
    indexed = create_app(rt)
    linear = create_app(rt)
    assert isinstance(indexed.router.middleware_stack, RouteIndex)
    linear.router.middleware_stack = linear.router.app  # FastAPI's own matching, route after route
    compared = 0
    for path in concrete_paths(linear):
        for method in METHODS:
            # Unauthenticated, without a session: every answer is decided before any write.
            assert await dispatch(indexed, method, path) == await dispatch(linear, method, path), (method, path)
            compared += 1
    assert compared > 400


@pytest.mark.parametrize("backend", ["sqlite"])
async def test_routes_added_after_the_index_was_built_are_found(rt: Runtime) -> None:
    app = create_app(rt)
    assert (await dispatch(app, "GET", "/api/marketplaces"))[0] == 401  # the index is built
    extra = APIRouter()

    @extra.get("/api/marketplaces/{MarketplaceId}/extra")
    async def later(MarketplaceId: str) -> dict[str, str]:
        return {"id": MarketplaceId}

    @extra.get("/api/marketplaces")
    async def shadowed() -> dict[str, str]:
        return {}

    app.router.routes.extend(extra.routes)
    assert await dispatch(app, "GET", "/api/marketplaces/M1/extra") == (
        200,
        "/api/marketplaces/{MarketplaceId}/extra",
        {"MarketplaceId": "M1"},
    )
    # Appended after the original: the original still wins, as in linear order.
    assert (await dispatch(app, "GET", "/api/marketplaces"))[0] == 401


def test_bucket_keys_stop_at_the_first_parameter() -> None:
    assert bucket_key("/api/orders/{OrderId}") == ("api", "orders")
    assert bucket_key("/api/{Thing}/x") == ("api",)
    assert bucket_key("/{anything}") == ()
    assert bucket_key("/healthz") == ("healthz",)
