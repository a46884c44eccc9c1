"""Task handlers and schedules of the orders domain: order pulls (P1, P2), write-backs, stored documents.

OrderPull pulls orders changed since the connection's cursor, stores them and moves the cursor, in one
transaction with the job's end state and the OrdersDownloaded event.

OrderWriteBack sends confirmed, cancelled and refunded items to the marketplace (P1 kinds only). Its payload
(`OrderWriteBackPayload`) is written in the transaction that recorded the change. It is safe to run again after a
worker crash: the feed goes through marketplaces/feeds.py, which submits it once and remembers it in the job, and
its outcome (with any FeedOutcome event) is recorded once, with the job's end state.

A connection that must be reauthorised (RequiresReauthorization, or the marketplace answering with
AuthorizationRevoked, which is recorded on the connection's health exactly as the price/stock push does)
does not fail a write-back: the change is already saved here and was promised to the caller, so the job goes
back to the queue and retries every health-check interval until the merchant has reconnected.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import structlog

from marketsync.jobs.registry import schedule, task
from marketsync.jobs.run import JobRun, RetryLater
from marketsync.jobs.types import JobStatus, JobType, OrderPullPayload, OrderWriteBackPayload
from marketsync.kinds import kind_of
from marketsync.marketplaces import events, feeds
from marketsync.marketplaces import service as marketplaces
from marketsync.marketplaces.connector import AuthorizationRevoked, MarketplaceOrder, OrderUpdateLine, connector_for
from marketsync.orders import repository, service
from marketsync.runtime import Runtime

log = structlog.get_logger("marketsync.orders.tasks")

ORDER_PAGE = 100
MAX_ORDER_PAGES = 20  # at most 2,000 orders per pull; the cursor carries the rest to the next one
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


@schedule("orders.pulls", interval_s=lambda s: s.order_pull_interval_s)
async def schedule_order_pulls(rt: Runtime) -> None:
    # Only kinds whose orders are pulled (P1, P2): P3 and P4 orders are managed in their own admin.
    await marketplaces.enqueue_for_active_connections(
        rt,
        JobType.ORDER_PULL,
        lambda c: OrderPullPayload(MarketplaceId=c.id) if kind_of(c.platform).orders_pulled else None,
    )


@dataclass(frozen=True)
class PullOutcome:
    status: JobStatus
    new_orders: int = 0
    pulled: int = 0


@task(JobType.ORDER_PULL)
async def pull_orders(rt: Runtime, job: JobRun) -> PullOutcome:
    """Pull orders changed since the connection's cursor, store them, keep the cursor; one event per pull."""
    connection = await marketplaces.usable_connection(rt, job)
    if connection is None:
        return PullOutcome(JobStatus.CANCELLED)
    if not kind_of(connection.platform).orders_pulled:
        async with rt.db.transaction() as session:
            await job.finish(session, JobStatus.CANCELLED, f"{connection.platform} orders are not pulled")
        return PullOutcome(JobStatus.CANCELLED)
    connector = connector_for(rt, connection)
    cursor = connection.order_cursor
    orders: list[MarketplaceOrder] = []
    for _ in range(MAX_ORDER_PAGES):
        page = await feeds.call(rt, connection, connector.pull_orders(cursor, ORDER_PAGE))
        orders.extend(page.orders)
        cursor = page.next_cursor or cursor
        if len(page.orders) < ORDER_PAGE:
            break
    async with rt.db.transaction() as session:
        current = await repository.connection(session, job.account_id, connection.id, for_update=True)
        if current is None:
            await job.finish(session, JobStatus.CANCELLED, "connection disconnected")
            return PullOutcome(JobStatus.CANCELLED)
        new_orders = await service.ingest_pulled_orders(rt, session, current, orders) if orders else 0
        current.order_cursor = cursor
        if new_orders > 0:
            events.orders_downloaded(rt, session, current, new_orders)
        await job.finish(session, JobStatus.COMPLETED)
    log.info("orders_pulled", marketplace_id=connection.id, pulled=len(orders), new=new_orders)
    return PullOutcome(JobStatus.COMPLETED, new_orders, len(orders))


@task(JobType.ORDER_WRITE_BACK)
async def order_write_back(rt: Runtime, job: JobRun) -> None:
    args = job.args(OrderWriteBackPayload)
    async with rt.db.read() as session:
        connection = await repository.connection(session, job.account_id, args.MarketplaceId)
    if connection is None:
        log.warning("order_write_back_disconnected", job_id=job.job_id, marketplace_id=args.MarketplaceId)
        return
    if connection.requires_reauthorization:
        raise RetryLater(_reauthorization_wait_s(rt), "waiting for the marketplace to be reauthorised")
    lines = [
        OrderUpdateLine(
            reference=line.Reference,
            marketplace_order_id=line.MarketplaceOrderId,
            marketplace_item_id=line.MarketplaceItemId,
            action=line.Action,
            details=dict(line.Details),
        )
        for line in args.Lines
    ]
    connector = connector_for(rt, connection)
    try:
        result = await feeds.submit_and_await(
            rt, job, connection, lambda: connector.send_order_updates(feed_id=job.job_id, lines=lines)
        )
    except AuthorizationRevoked as exc:
        log.warning("order_write_back_unauthorised", job_id=job.job_id, marketplace_id=args.MarketplaceId)
        raise RetryLater(_reauthorization_wait_s(rt), "marketplace authorisation revoked") from exc
    async with rt.db.transaction() as session:
        current = await repository.connection(session, job.account_id, args.MarketplaceId)
        if current is not None and result.status == "Rejected":
            events.feed_outcome(rt, session, current, "Order updates", "Rejected", result.status, len(lines))
        elif current is not None and result.errors:
            events.feed_outcome(
                rt, session, current, "Order updates", "ProcessedWithErrors", result.status, len(result.errors)
            )
        # The change is recorded here whatever the marketplace said; the outcome is told by FeedOutcome.
        await job.finish(session, JobStatus.COMPLETED)
    log.info(
        "order_write_back_finished",
        job_id=job.job_id,
        lines=len(lines),
        outcome=result.status,
        failed_references=[error.reference for error in result.errors],
    )


def _reauthorization_wait_s(rt: Runtime) -> float:
    """Come back after the next health check, which is what notices a reconnection."""
    return max(1.0, rt.settings.health_check_interval_s)
