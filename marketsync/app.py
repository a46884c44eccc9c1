"""The application factory: routers of every domain, problem details, health, metrics, OpenAPI 3.1."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.routing import APIRoute
from sqlalchemy import text
from starlette.responses import JSONResponse, Response

from marketsync import __version__, observability, openapi
from marketsync.auth import endpoints as auth_endpoints
from marketsync.auth import usage
from marketsync.auth.dependencies import REQUEST_DEPENDENCIES
from marketsync.auth.scopes import ALL_SCOPES
from marketsync.catalog import endpoints as catalog_endpoints
from marketsync.console import pages as console_pages
from marketsync.console.render import error_page
from marketsync.http import lean_routes, operation_names
from marketsync.http.errors import install_error_handlers
from marketsync.http.middleware import RequestContextMiddleware
from marketsync.http.route_index import RouteIndex
from marketsync.inventory import endpoints as inventory_endpoints
from marketsync.jobs import endpoints as jobs_endpoints
from marketsync.marketplaces import endpoints as marketplaces_endpoints
from marketsync.marketplaces.registry import compose_connectors
from marketsync.orders import endpoints as orders_endpoints
from marketsync.runtime import Runtime
from marketsync.webhooks import endpoints as webhooks_endpoints

log = structlog.get_logger("marketsync.app")

ROUTERS = (
    auth_endpoints.router,
    orders_endpoints.router,
    inventory_endpoints.router,
    catalog_endpoints.router,
    marketplaces_endpoints.router,
    jobs_endpoints.router,
    webhooks_endpoints.router,
)


async def _write_credential_usage(rt: Runtime, stop: asyncio.Event) -> None:
    """The credentials' "last used", written in the background every few minutes and at the end (decision 0432)."""
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), usage.FLUSH_EVERY.total_seconds())
        try:
            await usage.flush(rt)
        except Exception:  # a database away for a moment: the notes of the next round carry the later hours
            log.warning("credential_usage_not_written", exc_info=True)


def create_app(rt: Runtime, *, run_workers: bool = False) -> FastAPI:
    compose_connectors(rt)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        stop = asyncio.Event()
        worker_task = None
        if run_workers:
            from marketsync.jobs.worker import Worker

            worker = Worker(rt)
            rt.extras["worker"] = worker
            worker_task = asyncio.create_task(worker.run(stop))
        usage_task = asyncio.create_task(_write_credential_usage(rt, stop))
        try:
            yield
        finally:
            stop.set()
            if worker_task is not None:
                await worker_task
            await usage_task

    app = FastAPI(
        title="marketsync",
        version=__version__,
        summary="Marketplace Inventory and Orders Service",
        lifespan=lifespan,
        docs_url=None,  # openapi.install_docs: Swagger UI from the service itself, no CDN
        redoc_url=None,
        # Observability is structlog + Prometheus (DESIGN.md section 2); FastAPI's OpenTelemetry hooks would
        # otherwise ask the OpenTelemetry API for its providers on every request (~3% of the fixed cost).
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.runtime = rt
    install_error_handlers(app)
    for router in ROUTERS:
        # The routes themselves, not include_router(): an included router is matched, then matched again inside
        # (~70 µs a request; docs/decisions/0013). The routes already carry their full paths and tags.
        app.router.routes.extend(router.routes)
    _add_operational_routes(app, rt)
    openapi.install_docs(app)
    # After the API's routes: an API request never walks the app's routes first.
    console_pages.install(app)
    lean_routes.install(app, REQUEST_DEPENDENCIES)
    # GET /api/orders/List is the List operation's (405, Allow: POST), never an order called "List" (decision 0338).
    operation_names.reserve(app.router.routes)
    RouteIndex.install(app)
    app.add_middleware(
        RequestContextMiddleware,
        max_body_bytes=rt.settings.max_body_bytes,
        body_timeout_s=rt.settings.request_body_timeout_s,
        requests_first=rt.db.requests_first,
        app_error_page=lambda status, message: error_page(status, message=message),
    )
    app.openapi = lambda: _openapi(app, rt)  # type: ignore[method-assign]
    return app


def _add_operational_routes(app: FastAPI, rt: Runtime) -> None:
    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> JSONResponse:
        try:
            async with rt.db.read() as session:
                await session.execute(text("SELECT 1"))
        except Exception:
            return JSONResponse({"status": "unavailable", "database": "unreachable"}, status_code=503)
        return JSONResponse({"status": "ok", "database": rt.db.dialect})

    if rt.settings.metrics:

        @app.get("/metrics", include_in_schema=False)
        async def metrics(request: Request) -> Response:
            if not observability.allowed(rt, request):
                return Response(status_code=401, headers={"WWW-Authenticate": 'Bearer realm="metrics"'})
            return await observability.metrics_response(rt)


def api_routes() -> list[APIRoute]:
    """Every route of the domain routers (each carries its full path: APIRouter applies its prefix on creation)."""
    return [route for router in ROUTERS for route in router.routes if isinstance(route, APIRoute)]


def required_scope(route: APIRoute) -> str | None:
    pending = list(route.dependant.dependencies)
    while pending:
        dependency = pending.pop()
        name = getattr(dependency.call, "__name__", "")
        if name.startswith("require_"):
            return name.removeprefix("require_")
        pending.extend(dependency.dependencies)
    return None


def _openapi(app: FastAPI, rt: Runtime) -> dict[str, Any]:
    if app.openapi_schema:
        return app.openapi_schema
    servers = [
        {"url": "/", "description": "The host that served this document"},
        {"url": rt.settings.base_url, "description": "This deployment's configured base URL"},
    ]
    schema = openapi.build(app, api_routes(), servers)
    schema["components"]["securitySchemes"] = {
        "oauth2": {
            "type": "oauth2",
            "flows": {"clientCredentials": {"tokenUrl": "/connect/token", "scopes": {s: s for s in ALL_SCOPES}}},
        }
    }
    scopes = {(r.path_format, m.lower()): required_scope(r) for r in api_routes() for m in (r.methods or ())}
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            scope = scopes.get((path, method))
            if scope is not None:
                operation["security"] = [{"oauth2": [scope]}]
    app.openapi_schema = schema
    return schema
