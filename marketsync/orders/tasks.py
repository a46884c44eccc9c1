"""OrderWriteBack: send confirmed, cancelled and refunded items to the marketplace (P1 kinds only).

The job's payload is {"MarketplaceId", "Action", "Lines": [{"Reference", "MarketplaceOrderId",
"MarketplaceItemId", "Action", "Details"}]}, written in the transaction that recorded the change.
The handler is safe to run again after a worker crash: the feed is submitted with the job id as its
idempotency key, and its outcome (with any FeedOutcome event) is recorded once, in one transaction,
in the order_feeds row.

A connection that must be reauthorised (RequiresReauthorization, or the marketplace answering with
AuthorizationRevoked, which is recorded on the connection's health exactly as the price/stock push does)
does not fail the job: the change is already saved here and was promised to the caller, so the job goes
back to the queue and retries every health-check interval until the merchant has reconnected.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal, cast

import structlog

from marketsync.jobs.registry import schedule, task
from marketsync.jobs.run import JobRun, RetryLater
from marketsync.marketplaces import events
from marketsync.marketplaces import service as marketplaces
from marketsync.marketplaces.connector import (
    AuthorizationRevoked,
    Connector,
    FeedResult,
    OrderUpdateLine,
    Throttled,
    Unavailable,
    connector_for,
)
from marketsync.models.orders import OrderFeed
from marketsync.orders import repository, service
from marketsync.orders.service import WRITE_BACK_JOB
from marketsync.runtime import Runtime

log = structlog.get_logger("marketsync.orders.tasks")

POLL_ATTEMPTS = 10
POLL_INTERVAL_S = 0.2
PROCESSING_RETRY_S = 1.0
UNAVAILABLE_RETRY_S = 5.0
DOCUMENTS_INTERVAL_S = 30.0
DOCUMENTS_BUDGET_S = 20.0  # below the interval, which is the schedule's lease


@schedule("orders.documents", interval_s=lambda _settings: DOCUMENTS_INTERVAL_S)
async def refresh_documents(rt: Runtime) -> None:
    """Store a current document for orders that lack one (after an upgrade or a renderer change),
    batch by batch, each in its own transaction, until none is left or the time budget is spent.
    Reads never wait for this: a page renders such orders from their rows (docs/decisions/0066)."""
    deadline = asyncio.get_running_loop().time() + DOCUMENTS_BUDGET_S
    refreshed = 0
    while asyncio.get_running_loop().time() < deadline:
        async with rt.db.transaction() as session:
            stored = await service.refresh_stale_documents(session)
        refreshed += stored
        if stored < service.RENDER_BATCH:
            break
    if refreshed:
        log.info("order_documents_refreshed", orders=refreshed)


def update_lines(payload: dict[str, Any]) -> list[OrderUpdateLine]:
    return [
        OrderUpdateLine(
            reference=str(line["Reference"]),
            marketplace_order_id=str(line["MarketplaceOrderId"]),
            marketplace_item_id=str(line["MarketplaceItemId"]),
            action=cast(Literal["Confirm", "Cancel", "Refund"], line["Action"]),
            details=dict(line.get("Details") or {}),
        )
        for line in payload.get("Lines", [])
    ]


@task(WRITE_BACK_JOB)
async def order_write_back(rt: Runtime, job: JobRun) -> None:
    marketplace_id = str(job.payload["MarketplaceId"])
    async with rt.db.read() as session:
        connection = await repository.connection(session, job.account_id, marketplace_id)
        feed = await repository.order_feed(session, job.job_id)
    if feed is not None and feed.status != "Submitted":
        return  # finished by an earlier run of this job
    if connection is None:
        log.warning("order_write_back_disconnected", job_id=job.job_id, marketplace_id=marketplace_id)
        return
    if connection.requires_reauthorization:
        raise RetryLater(_reauthorization_wait_s(rt), "waiting for the marketplace to be reauthorised")
    lines = update_lines(job.payload)
    connector = connector_for(rt, connection)
    try:
        marketplace_feed_id = feed.marketplace_feed_id if feed is not None else None
        if marketplace_feed_id is None:
            marketplace_feed_id = await connector.send_order_updates(feed_id=job.job_id, lines=lines)
            await _record_submission(rt, job, marketplace_id, marketplace_feed_id)
        result = await _await_result(connector, marketplace_feed_id)
    except Throttled as exc:
        raise RetryLater(exc.retry_after_s, "marketplace throttled the order feed") from exc
    except Unavailable as exc:
        raise RetryLater(UNAVAILABLE_RETRY_S, "marketplace unavailable") from exc
    except AuthorizationRevoked as exc:
        await marketplaces.note_authorization_revoked(rt, connection.id)
        log.warning("order_write_back_unauthorised", job_id=job.job_id, marketplace_id=marketplace_id)
        raise RetryLater(_reauthorization_wait_s(rt), "marketplace authorisation revoked") from exc
    if result.status == "Processing":
        raise RetryLater(PROCESSING_RETRY_S, "order feed still processing")

    async with rt.db.transaction() as session:
        feed = await repository.order_feed(session, job.job_id)
        if feed is None or feed.status != "Submitted":
            return
        connection = await repository.connection(session, job.account_id, marketplace_id)
        feed.finished_at = rt.clock.now()
        if result.status == "Rejected":
            feed.status, feed.failed_count = "Rejected", len(lines)
            if connection is not None:
                events.feed_outcome(rt, session, connection, "Order updates", "Rejected", result.status, len(lines))
        elif result.errors:
            feed.status, feed.failed_count = "ProcessedWithErrors", len(result.errors)
            if connection is not None:
                events.feed_outcome(
                    rt, session, connection, "Order updates", "ProcessedWithErrors", result.status, len(result.errors)
                )
        else:
            feed.status = "Done"
    log.info(
        "order_write_back_finished",
        job_id=job.job_id,
        lines=len(lines),
        outcome=feed.status,
        failed_references=[error.reference for error in result.errors],
    )


def _reauthorization_wait_s(rt: Runtime) -> float:
    """Come back after the next health check, which is what notices a reconnection."""
    return max(1.0, rt.settings.health_check_interval_s)


async def _record_submission(rt: Runtime, job: JobRun, marketplace_id: str, marketplace_feed_id: str) -> None:
    async with rt.db.transaction() as session:
        feed = await repository.order_feed(session, job.job_id)
        if feed is None:
            session.add(
                OrderFeed(
                    job_id=job.job_id,
                    account_id=job.account_id,
                    marketplace_id=marketplace_id,
                    marketplace_feed_id=marketplace_feed_id,
                    status="Submitted",
                    failed_count=0,
                    created_at=rt.clock.now(),
                    finished_at=None,
                )
            )
        else:
            feed.marketplace_feed_id = marketplace_feed_id


async def _await_result(connector: Connector, marketplace_feed_id: str) -> FeedResult:
    """The sandbox (like real marketplaces) processes feeds asynchronously: poll briefly, then requeue."""
    result = await connector.feed_result(marketplace_feed_id)
    for _ in range(POLL_ATTEMPTS):
        if result.status != "Processing":
            break
        await asyncio.sleep(POLL_INTERVAL_S)
        result = await connector.feed_result(marketplace_feed_id)
    return result
