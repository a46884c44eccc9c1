"""Route lookup by the path's leading literal segments instead of trying every route in turn.

Starlette (and FastAPI's router) try each route's regular expression in order until one matches: ~0.7 µs a route,
so a request for one of the last of ~90 routes (the API, the app's pages, /docs, /metrics) paid ~65 µs before its
endpoint ran (docs/decisions/0250-request-fixed-cost-2.md). Here the routes are bucketed by the first two literal
segments of their path (`/api/orders/{OrderId}` under ("api", "orders"); `/api/{x}` under ("api",); a route that
starts with a parameter, or is not a path route, under ()). A request only tries the routes of its own buckets, in
their original order, through FastAPI's own router: a route outside them cannot match, so the route chosen, its
path parameters and the 405 answer are the same. When none of them matches at all (a 404, a trailing-slash
redirect, a route added after the index was built), the request goes to the full router, which then behaves exactly
as before.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRouter
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import Receive, Scope, Send

_Key = tuple[str, ...]
_DEPTH = 2


def _route_key(route: BaseRoute) -> _Key:
    path = getattr(route, "path", None) if isinstance(route, Route | Mount) else None
    if not isinstance(path, str) or not path.startswith("/"):
        return ()
    key: list[str] = []
    for segment in path[1:].split("/")[:_DEPTH]:
        if "{" in segment:
            break
        key.append(segment)
    return tuple(key)


class RouteIndex:
    """The router's dispatch (Router.middleware_stack), with the candidates of each bucket looked up in a dict."""

    def __init__(self, router: APIRouter) -> None:
        self._router = router
        self._fallback = router.middleware_stack
        self._indexed: tuple[int, int] | None = None
        self._dispatchers: dict[_Key, APIRouter] = {}
        self._buckets: dict[_Key, list[tuple[int, BaseRoute]]] = {}

    @classmethod
    def install(cls, app: FastAPI) -> None:
        """Call once every route is added (later routes still work: they rebuild the index)."""
        router = app.router
        # A router with middleware of its own keeps its dispatch (the index would go around that middleware).
        if router.middleware_stack == router.app:
            router.middleware_stack = cls(router)

    def _current(self) -> None:
        routes = self._router.routes
        version = (id(routes), len(routes))
        if version == self._indexed:
            return
        buckets: dict[_Key, list[tuple[int, BaseRoute]]] = {}
        for position, route in enumerate(routes):
            buckets.setdefault(_route_key(route), []).append((position, route))
        self._buckets, self._dispatchers, self._indexed = buckets, {}, version

    def _dispatcher(self, path: str) -> APIRouter:
        segments = path[1:].split("/", _DEPTH)[:_DEPTH]
        # The most specific bucket key that exists stands for the request (so the cache holds at most one entry per
        # bucket, whatever paths are sent).
        keys = [tuple(segments[:depth]) for depth in range(len(segments), -1, -1)]
        own = next(key for key in keys if key in self._buckets or key == ())
        found = self._dispatchers.get(own)
        if found is None:
            chosen = sorted(
                (entry for key in keys if len(key) <= len(own) for entry in self._buckets.get(key, ())),
                key=lambda entry: entry[0],
            )
            # What matches none of them goes to the full router (its `default`).
            found = self._dispatchers[own] = APIRouter(
                routes=[route for _, route in chosen], redirect_slashes=False, default=self._fallback
            )
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("root_path"):
            await self._fallback(scope, receive, send)
            return
        self._current()
        scope.setdefault("router", self._router)
        await self._dispatcher(scope["path"]).app(scope, receive, send)


def bucket_key(path: str) -> Any:
    """The bucket a route of this path goes in (for tests)."""
    return _route_key(Route(path, endpoint=lambda: None))
