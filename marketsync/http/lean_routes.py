"""A direct call of the endpoint for API routes whose parameters need no resolving (docs/decisions/0250).

FastAPI's request handler does general work on every request whatever the route needs: two exit stacks, the
endpoint's context for error messages, the query string parsed, every parameter kind walked, a sub-solve per
dependency with its cache keys, a spare Response for dependencies. For the routes of this service it was ~35 µs
of the ~90 µs an authenticated request cost in process (docs/perf/foundation.md). Most of our endpoints take only
their caller (`caller: OrdersReader`), the runtime (`rt: RuntimeDep`), plain `str` path parameters and the `Request`
(they read their bodies themselves), and return a `Response`. For those, the route's ASGI app is replaced by one
that calls the same dependency functions and the endpoint directly, inside Starlette's own exception handling
(so every error is rendered by the same handlers). Any other route (a body model, query or header parameters, a
dependency of another kind, a return value FastAPI serialises), or an app with dependency overrides, keeps
FastAPI's handler unchanged. The signatures, and so the OpenAPI document, are untouched.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, get_type_hints

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette._exception_handler import wrap_app_handling_exceptions
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

_Resolver = tuple[str, str, Any]  # (parameter name, kind, detail)
_LEAN_MARK = "_marketsync_lean"


def _returns_response(endpoint: Callable[..., Any]) -> bool:
    try:
        returned = get_type_hints(endpoint).get("return")
    except Exception:
        return False
    return inspect.isclass(returned) and issubclass(returned, Response)


# What only FastAPI's solver fills: an endpoint with any of these keeps its stock route.
_SOLVED_ONLY_BY_FASTAPI = (
    "query_params",
    "header_params",
    "cookie_params",
    "body_params",
    "websocket_param_name",
    "http_connection_param_name",
    "response_param_name",
    "background_tasks_param_name",
    "security_scopes_param_name",
)
# A dependency the lean path calls takes the request alone: one with any of these needs the solver.
_DEPENDENCY_NEEDS_FASTAPI = (
    "dependencies",
    "path_params",
    "query_params",
    "header_params",
    "cookie_params",
    "body_params",
)


def _plan(route: APIRoute, request_dependencies: frozenset[Callable[..., Any]]) -> list[_Resolver] | None:
    """How to fill the endpoint's parameters without FastAPI's solver, or None if the route needs the solver."""
    dependant = route.dependant
    endpoint = dependant.call
    if endpoint is None or not inspect.iscoroutinefunction(endpoint) or not _returns_response(endpoint):
        return None
    if any(getattr(dependant, name) for name in _SOLVED_ONLY_BY_FASTAPI):
        return None
    plan: list[_Resolver] = []
    for sub in dependant.dependencies:
        if sub.name is None or sub.call not in request_dependencies or sub.request_param_name is None:
            return None
        if any(getattr(sub, name) for name in _DEPENDENCY_NEEDS_FASTAPI):
            return None
        plan.append((sub.name, "dependency", sub.call))
    for field in dependant.path_params:
        # A plain `str` path parameter is the matched text as it is (no constraint, no conversion to check).
        if field.field_info.annotation is not str or field.field_info.metadata:
            return None
        plan.append((field.name, "path", field.alias))
    if dependant.request_param_name:
        plan.append((dependant.request_param_name, "request", None))
    return plan


def _lean_app(stock: ASGIApp, endpoint: Callable[..., Awaitable[Response]], plan: list[_Resolver]) -> ASGIApp:
    dependencies = [(name, call) for name, kind, call in plan if kind == "dependency"]
    path_parameters = [(name, alias) for name, kind, alias in plan if kind == "path"]
    request_names = [name for name, kind, _ in plan if kind == "request"]

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["app"].dependency_overrides:  # tests that replace a dependency get FastAPI's solver
            await stock(scope, receive, send)
            return
        request = Request(scope, receive, send)

        async def run(scope: Scope, receive: Receive, send: Send) -> None:
            arguments: dict[str, Any] = {}
            for name, call in dependencies:  # in declaration order, as FastAPI solves them
                arguments[name] = await call(request)
            if path_parameters:
                matched = scope["path_params"]
                for name, alias in path_parameters:
                    arguments[name] = matched[alias]
            for name in request_names:
                arguments[name] = request
            response = await endpoint(**arguments)
            await response(scope, receive, send)

        await wrap_app_handling_exceptions(run, request)(scope, receive, send)

    return app


def install(app: FastAPI, request_dependencies: frozenset[Callable[..., Any]]) -> list[APIRoute]:
    """Give every eligible API route of `app` the direct call; returns the routes that have it.

    `request_dependencies` are the dependency functions that take only the Request (the scope checks, the runtime).
    Idempotent: the domain routers' routes are module-level and shared by every app built in one process.
    """
    lean: list[APIRoute] = []
    for route in app.router.routes:
        if not isinstance(route, APIRoute):
            continue
        if getattr(route, _LEAN_MARK, False):
            lean.append(route)
            continue
        plan = _plan(route, request_dependencies)
        if plan is None:
            continue
        endpoint = route.dependant.call
        assert endpoint is not None
        route.app = _lean_app(route.app, endpoint, plan)
        setattr(route, _LEAN_MARK, True)
        lean.append(route)
    return lean
