"""Metrics of the asynchronous side, read from the database when scraped: queue depth and age of the oldest ready
job per type, deliveries waiting, events not yet fanned out, disabled subscriptions, marketplace health, and the
database pools. Counters of what happened (job runs, delivery attempts and their latency, events dispatched) live
beside the code that counts them (jobs/run.py, webhooks/engine.py, middleware.py). Every process serves them:
the API on `/metrics` (MARKETSYNC_METRICS, MARKETSYNC_METRICS_TOKEN), `marketsync worker` on its own port."""

from __future__ import annotations

import hmac
from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST, Gauge, generate_latest
from sqlalchemy import text
from sqlalchemy.pool import AsyncAdaptedQueuePool, QueuePool
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from marketsync.jobs import service as jobs
from marketsync.marketplaces import service as marketplaces
from marketsync.runtime import Runtime
from marketsync.webhooks import service as webhooks

JOBS_OPEN = Gauge("marketsync_jobs_open", "Open jobs by type and status (queued, held, running)", ["type", "status"])
JOBS_OLDEST_READY = Gauge(
    "marketsync_jobs_oldest_ready_age_seconds", "Age of the oldest job ready to run and not yet claimed", ["type"]
)
DELIVERIES_PENDING = Gauge("marketsync_webhook_deliveries_pending", "Webhook deliveries waiting for an attempt")
EVENTS_UNDISPATCHED = Gauge("marketsync_events_undispatched", "Events recorded and not yet fanned out")
SUBSCRIPTIONS_DISABLED = Gauge("marketsync_webhook_subscriptions_disabled", "Subscriptions disabled after failures")
CONNECTIONS = Gauge(
    "marketsync_marketplace_connections",
    "Marketplace connections by platform, state and health",
    ["platform", "state", "health"],
)
DB_POOL = Gauge("marketsync_db_pool_connections", "Database pool connections by pool and use", ["pool", "use"])


async def refresh(rt: Runtime) -> None:
    """Set every gauge from the database (one short read transaction: four grouped counts)."""
    now = rt.clock.now()
    async with rt.db.read() as session:
        open_jobs = await jobs.queue_stats(session, now)
        delivery = await webhooks.stats(session)
        connections = await marketplaces.health_summary(session)
    JOBS_OPEN.clear()
    JOBS_OLDEST_READY.clear()
    oldest: dict[str, float] = {}
    for job_type, status, count, oldest_ready in open_jobs:
        JOBS_OPEN.labels(job_type, status).set(count)
        if oldest_ready is not None:
            age = max(0.0, (now - oldest_ready).total_seconds())
            oldest[job_type] = max(oldest.get(job_type, 0.0), age)
    for job_type, age in oldest.items():
        JOBS_OLDEST_READY.labels(job_type).set(age)
    DELIVERIES_PENDING.set(delivery["pending_deliveries"])
    EVENTS_UNDISPATCHED.set(delivery["undispatched_events"])
    SUBSCRIPTIONS_DISABLED.set(delivery["disabled_subscriptions"])
    CONNECTIONS.clear()
    for platform, state, healthy, needs_reauthorization, count in connections:
        health = "RequiresReauthorization" if needs_reauthorization else "Healthy" if healthy else "Unhealthy"
        CONNECTIONS.labels(platform, state, health).inc(count)
    DB_POOL.clear()
    for name, engine in (("read", rt.db.engine), ("write", rt.db.write_engine)):
        pool = engine.sync_engine.pool
        if isinstance(pool, QueuePool | AsyncAdaptedQueuePool):
            DB_POOL.labels(name, "in_use").set(pool.checkedout())
            DB_POOL.labels(name, "idle").set(pool.checkedin())
            DB_POOL.labels(name, "size").set(pool.size())


def allowed(rt: Runtime, request: Request) -> bool:
    """`/metrics` on the API port: off with MARKETSYNC_METRICS=false; with MARKETSYNC_METRICS_TOKEN, only for
    `Authorization: Bearer <token>` (compared in constant time)."""
    token = rt.settings.metrics_token
    if not token:
        return True
    sent = request.headers.get("authorization", "")
    return hmac.compare_digest(sent.encode(), f"Bearer {token}".encode())


async def metrics_response(rt: Runtime) -> Response:
    await refresh(rt)
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)


def worker_endpoints(rt: Runtime, health: Callable[[], dict[str, object]]) -> Starlette:
    """What `marketsync worker` serves on its own port: `/metrics` and `/healthz` (503 when its loop has stalled
    or the database is unreachable, so an orchestrator restarts it)."""

    async def metrics(_request: Request) -> Response:
        return await metrics_response(rt)

    async def healthz(_request: Request) -> Response:
        report = health()
        try:
            async with rt.db.read() as session:
                await session.execute(text("SELECT 1"))
        except Exception:
            report = {**report, "status": "unavailable", "database": "unreachable"}
        return JSONResponse(report, status_code=200 if report.get("status") == "ok" else 503)

    return Starlette(routes=[Route("/metrics", metrics), Route("/healthz", healthz)])
