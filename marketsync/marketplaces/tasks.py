"""Task handlers and schedules of the marketplace side.

Schedules: health checks, order pulls (P1/P2), listing mirrors. Jobs: OrderPull, ListingMirror,
PriceStockPush. Every handler talks to the marketplace outside any transaction, then records what
happened, its events and the job's end state in ONE transaction: if the job's lease was lost meanwhile
(another worker recovered it) that transaction rolls back, so no event is ever recorded twice.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.jobs import repository as jobs_repository
from marketsync.jobs import service as jobs_service
from marketsync.jobs.registry import schedule, task
from marketsync.jobs.run import JobRun, LeaseLost, RetryLater
from marketsync.kit.ids import new_id
from marketsync.marketplaces import events, repository, rules, service
from marketsync.marketplaces.connector import (
    AuthorizationRevoked,
    FeedResult,
    MarketplaceListing,
    MarketplaceOrder,
    PriceStockLine,
    Throttled,
    Unavailable,
    connector_for,
)
from marketsync.marketplaces.kinds import kind_of
from marketsync.models import Listing, MarketplaceConnection, Product
from marketsync.runtime import Runtime

log = structlog.get_logger("marketsync.marketplaces")

ORDER_PULL = "OrderPull"
LISTING_MIRROR = "ListingMirror"
PRICE_STOCK_PUSH = "PriceStockPush"
ORDER_PAGE = 100
MAX_ORDER_PAGES = 20  # at most 2,000 orders per pull; the cursor carries the rest to the next one
LISTING_PAGE = 200
FEED_POLLS = 40
FEED_POLL_INTERVAL_S = 0.05
UNAVAILABLE_RETRY_S = 60.0
OPEN = ("NotStarted", "Published", "InProcess")
FEED_MARKER = "MarketplaceFeedId"

# LastPull.Status values of the listing mirror.
PULL_IN_PROGRESS, PULL_COMPLETED, PULL_FAILED = "InProgress", "Completed", "Failed"


class FeedRejected(Exception):
    """The marketplace rejected a whole feed: the job ends Failed (its reason visible only in the app)."""


# -- shared helpers --------------------------------------------------------------------------------------


async def finish(rt: Runtime, session: AsyncSession, job: JobRun, status: str, reason: str | None = None) -> None:
    """End the job inside the caller's transaction, with the changes and events it made.

    When the lease is gone (another worker recovered the job) the whole transaction is undone.
    """
    if not await jobs_repository.finish(session, job.job_id, job.worker_id, rt.clock.now(), status, reason):
        raise LeaseLost(job.job_id)


async def _set_progress(rt: Runtime, session: AsyncSession, job: JobRun, done: int | None, total: int | None) -> None:
    job.progress_done, job.progress_total = done, total
    if not await jobs_repository.set_progress(session, job.job_id, job.worker_id, rt.clock.now(), done, total):
        raise LeaseLost(job.job_id)


async def _usable_connection(rt: Runtime, job: JobRun) -> MarketplaceConnection | None:
    """The job's connection if it may be used now; otherwise the job is Cancelled and None returned.

    A paused connection is neither pulled nor pushed; a disconnected one no longer exists.
    """
    marketplace_id = str(job.payload.get("MarketplaceId") or "")
    async with rt.db.read() as session:
        connection = await repository.get(session, job.account_id, marketplace_id)
    if connection is not None and connection.state == service.ACTIVE:
        return connection
    reason = "connection paused" if connection is not None else "connection disconnected"
    async with rt.db.transaction() as session:
        await finish(rt, session, job, "Cancelled", reason)
    log.info("marketplace_job_cancelled", job_id=job.job_id, type=job.type, reason=reason)
    return None


async def _marketplace_call(rt: Runtime, connection: MarketplaceConnection, call: Awaitable[Any]) -> Any:
    """Map marketplace failures to job outcomes: throttling and outages retry later, revocation fails."""
    try:
        return await call
    except Throttled as exc:
        raise RetryLater(exc.retry_after_s, "marketplace throttled") from exc
    except Unavailable as exc:
        raise RetryLater(UNAVAILABLE_RETRY_S, str(exc)) from exc
    except AuthorizationRevoked:
        await service.note_authorization_revoked(rt, connection.id)
        raise


# -- schedules -------------------------------------------------------------------------------------------


@schedule("marketplaces.health", interval_s=lambda s: s.health_check_interval_s)
async def health_checks(rt: Runtime) -> None:
    async with rt.db.read() as session:
        connections = list(await repository.list_all_active(session))
    for connection in connections:
        try:
            await service.check_health(rt, connection)
        except Exception:
            log.exception("health_check_failed", marketplace_id=connection.id)


async def _enqueue_per_connection(
    rt: Runtime, job_type: str, wanted: Callable[[MarketplaceConnection], bool]
) -> list[str]:
    """One job per active connection, unless one is already queued or running for it."""
    created = []
    async with rt.db.transaction() as session:
        now = rt.clock.now()
        for connection in await repository.list_all_active(session):
            if not wanted(connection):
                continue
            if await repository.open_jobs_for(session, connection.account_id, connection.id, OPEN, job_type):
                continue
            job = jobs_service.enqueue(session, now, connection.account_id, job_type, {"MarketplaceId": connection.id})
            created.append(job.id)
    return created


@schedule("marketplaces.order_pulls", interval_s=lambda s: s.order_pull_interval_s)
async def schedule_order_pulls(rt: Runtime) -> None:
    # Only kinds whose orders are pulled (P1, P2): P3 and P4 orders are managed in their own admin.
    await _enqueue_per_connection(rt, ORDER_PULL, lambda c: kind_of(c.platform).orders_pulled)


@schedule("marketplaces.listing_mirror", interval_s=lambda s: s.listing_mirror_interval_s)
async def schedule_listing_mirrors(rt: Runtime) -> None:
    await _enqueue_per_connection(rt, LISTING_MIRROR, lambda c: True)


# -- order pulls -----------------------------------------------------------------------------------------

IngestFn = Callable[[Runtime, AsyncSession, MarketplaceConnection, list[MarketplaceOrder]], Awaitable[int]]


def _ingest_function() -> IngestFn:
    """The orders domain stores pulled orders; it owns the order tables."""
    orders_service = importlib.import_module("marketsync.orders.service")
    ingest: IngestFn = orders_service.ingest_pulled_orders
    return ingest


@dataclass(frozen=True)
class PullOutcome:
    status: str
    new_orders: int = 0
    pulled: int = 0


async def pull_orders(rt: Runtime, job: JobRun) -> PullOutcome:
    """Pull orders changed since the connection's cursor, store them, keep the cursor; one event per pull."""
    connection = await _usable_connection(rt, job)
    if connection is None:
        return PullOutcome("Cancelled")
    if not kind_of(connection.platform).orders_pulled:
        async with rt.db.transaction() as session:
            await finish(rt, session, job, "Cancelled", f"{connection.platform} orders are not pulled")
        return PullOutcome("Cancelled")
    connector = connector_for(rt, connection)
    cursor = connection.order_cursor
    orders: list[MarketplaceOrder] = []
    for _ in range(MAX_ORDER_PAGES):
        page = await _marketplace_call(rt, connection, connector.pull_orders(cursor, ORDER_PAGE))
        orders.extend(page.orders)
        cursor = page.next_cursor or cursor
        if len(page.orders) < ORDER_PAGE:
            break
    ingest = _ingest_function()
    async with rt.db.transaction() as session:
        current = await repository.get_by_id(session, connection.id, for_update=True)
        if current is None:
            await finish(rt, session, job, "Cancelled", "connection disconnected")
            return PullOutcome("Cancelled")
        new_orders = await ingest(rt, session, current, orders) if orders else 0
        current.order_cursor = cursor
        if new_orders > 0:
            events.orders_downloaded(rt, session, current, new_orders)
        await finish(rt, session, job, "Completed")
    log.info("orders_pulled", marketplace_id=connection.id, pulled=len(orders), new=new_orders)
    return PullOutcome("Completed", new_orders, len(orders))


@task(ORDER_PULL)
async def order_pull_task(rt: Runtime, job: JobRun) -> None:
    await pull_orders(rt, job)


# -- listing & stock mirror ------------------------------------------------------------------------------


async def _set_last_pull(rt: Runtime, marketplace_id: str, status: str, total: int | None = None) -> None:
    async with rt.db.transaction() as session:
        connection = await repository.get_by_id(session, marketplace_id, for_update=True)
        if connection is None:
            return
        connection.last_pull_status = status
        if total is not None:
            connection.last_pull_total_skus, connection.last_pull_current_sku = total, 0


def _match_product(listing: MarketplaceListing, candidates: list[Product]) -> Product | None:
    """The catalogue product a marketplace listing stands for: exact SKU first, else a unique case match."""
    skus = (listing.sku, listing.external_sku)
    for sku in skus:
        exact = [p for p in candidates if p.sku == sku]
        if exact:
            return exact[0]
    for sku in skus:
        folded = [p for p in candidates if p.sku_lower == sku.lower()]
        if len(folded) == 1:
            return folded[0]
    return None


async def _mirror_page(
    rt: Runtime, session: AsyncSession, connection: MarketplaceConnection, page: list[MarketplaceListing]
) -> int:
    """Record one page in the listings map; where the marketplace owns a kind, overwrite the catalogue.

    Returns how many SKUs of the catalogue moved.
    """
    inventory = importlib.import_module("marketsync.inventory.service")
    now = rt.clock.now()
    by_listing_id = await repository.listings_for_mirror(session, connection.id, [item.listing_id for item in page])
    products = await repository.products_by_sku(
        session, connection.account_id, [sku for item in page for sku in (item.sku, item.external_sku)]
    )
    known_products = await repository.products_by_id(session, [row.product_id for row in by_listing_id.values()])
    matched: list[tuple[MarketplaceListing, Product]] = []
    for item in page:
        row = by_listing_id.get(item.listing_id)
        product = known_products.get(row.product_id) if row is not None else _match_product(item, products)
        if product is not None:
            matched.append((item, product))
    by_product = await repository.listings_by_product(session, connection.id, [p.id for _, p in matched])
    for item, product in matched:
        row = by_listing_id.get(item.listing_id) or by_product.get(product.id)
        if row is None:
            row = Listing(
                id=new_id(),
                account_id=connection.account_id,
                product_id=product.id,
                marketplace_id=connection.id,
                attributes={},
                created_at=now,
            )
            session.add(row)
            by_product[product.id] = row
        row.listing_id, row.external_sku, row.listing_url = item.listing_id, item.external_sku, item.listing_url
        row.category_id = row.category_id or item.category_id
        row.marketplace_price, row.marketplace_quantity = item.price, item.quantity
        row.status, row.updated_at = "Live", now
    price_owned = await inventory.data_owner(session, connection.account_id, "Price") == "Marketplace"
    stock_owned = await inventory.data_owner(session, connection.account_id, "Stock") == "Marketplace"
    changes = []
    for item, product in matched:
        price: Decimal | None = item.price if price_owned and item.price is not None else None
        quantity = item.quantity if stock_owned and item.quantity is not None else None
        if (price is not None and price != product.price) or (quantity is not None and quantity != product.quantity):
            changes.append(inventory.SkuChange(product.id, price, quantity))
    if not changes:
        return 0
    source = inventory.ChangeSource(writer="MasterMirror", channel="Marketplace", user_platform_id=connection.id)
    applied = await inventory.apply_inventory_changes(rt, session, connection.account_id, changes, source)
    return len(applied)


async def mirror_listings(rt: Runtime, job: JobRun) -> int:
    """Pull every listing of the connection into the listings map, reporting LastPull as it goes."""
    connection = await _usable_connection(rt, job)
    if connection is None:
        return 0
    connector = connector_for(rt, connection)
    await _set_last_pull(rt, connection.id, PULL_IN_PROGRESS, total=0)
    cursor: str | None = None
    done = moved = 0
    try:
        while True:
            page = await _marketplace_call(rt, connection, connector.pull_listings(cursor, LISTING_PAGE))
            async with rt.db.transaction() as session:
                current = await repository.get_by_id(session, connection.id, for_update=True)
                if current is None:
                    await finish(rt, session, job, "Cancelled", "connection disconnected")
                    return moved
                moved += await _mirror_page(rt, session, current, page.listings)
                done += len(page.listings)
                current.last_pull_total_skus, current.last_pull_current_sku = page.total, done
                await _set_progress(rt, session, job, done, page.total)
            cursor = page.next_cursor
            if not cursor:
                break
    except (RetryLater, LeaseLost, asyncio.CancelledError):
        raise
    except Exception:
        await _set_last_pull(rt, connection.id, PULL_FAILED)
        raise
    async with rt.db.transaction() as session:
        current = await repository.get_by_id(session, connection.id, for_update=True)
        if current is not None:
            current.last_pull_status = PULL_COMPLETED
        await finish(rt, session, job, "Completed")
    return moved


@task(LISTING_MIRROR)
async def listing_mirror_task(rt: Runtime, job: JobRun) -> None:
    await mirror_listings(rt, job)


# -- outbound price & stock feed -------------------------------------------------------------------------


async def _await_feed(rt: Runtime, connection: MarketplaceConnection, marketplace_feed_id: str) -> FeedResult:
    connector = connector_for(rt, connection)
    for attempt in range(FEED_POLLS):
        result: FeedResult = await _marketplace_call(rt, connection, connector.feed_result(marketplace_feed_id))
        if result.status != "Processing":
            return result
        await asyncio.sleep(FEED_POLL_INTERVAL_S * min(attempt + 1, 10))
    # Still processing: come back later; resubmitting the same feed id finds this feed again.
    raise RetryLater(5.0, "feed still processing")


async def push_price_stock(rt: Runtime, job: JobRun) -> FeedResult | None:
    """Send the job's products' price and stock to one marketplace as one feed: per listing only the values
    that differ from what the marketplace holds, never a price it refuses (docs/decisions/0047).

    The feed id is the job id, so a recovered job re-submits idempotently: the marketplace returns the
    feed it already has and never applies a row twice.
    """
    connection = await _usable_connection(rt, job)
    if connection is None:
        return None
    product_ids = None if job.payload.get("AllListings") else [str(p) for p in job.payload.get("ProductIds") or []]
    async with rt.db.read() as session:
        rows = await repository.listing_lines(session, connection.id, product_ids)
    accepts_zero_price = kind_of(connection.platform).accepts_zero_price
    lines: list[PriceStockLine] = []
    row_ids: dict[str, str] = {}
    for row in rows:
        # Only what differs from what the marketplace holds, never a price it refuses (0047).
        values = rules.price_stock_values(
            row.price, row.quantity, row.held_price, row.held_quantity, accepts_zero_price=accepts_zero_price
        )
        if values is not None:
            lines.append(PriceStockLine(row.external_sku, *values))
            row_ids[row.external_sku] = row.listing_row_id
    total = len(lines)
    if not lines:
        async with rt.db.transaction() as session:
            await _set_progress(rt, session, job, 0, 0)
            await finish(rt, session, job, "Completed")
        return None
    if job.progress_total != total or job.progress_done is None:
        await job.progress(job.progress_done or 0, total)
    feed_id = str(job.payload.get(FEED_MARKER) or "")
    if not feed_id:
        connector = connector_for(rt, connection)
        feed_id = await _marketplace_call(rt, connection, connector.submit_price_stock(job.job_id, lines))
        # Remembered so a throttled retry polls this feed instead of spending its budget resubmitting.
        job.payload = {**job.payload, FEED_MARKER: feed_id}
        async with rt.db.transaction() as session:
            now = rt.clock.now()
            if not await repository.remember_in_payload(session, job.job_id, job.worker_id, job.payload, now):
                raise LeaseLost(job.job_id)
    result = await _await_feed(rt, connection, feed_id)
    failed = {error.reference for error in result.errors}
    applied = (
        [(row_ids[line.external_sku], line.price, line.quantity) for line in lines if line.external_sku not in failed]
        if result.status == "Done"
        else []
    )
    # ProgressDone counts the rows the marketplace applied; every row refused is a failed job (0042).
    status = rules.feed_job_status(total, len(applied))
    async with rt.db.transaction() as session:
        await repository.record_marketplace_values(session, applied, rt.clock.now())
        await _set_progress(rt, session, job, len(applied), total)
        if result.status == "Rejected":
            events.feed_outcome(rt, session, connection, "Price & stock", "Rejected", result.status, total)
            await finish(rt, session, job, "Failed", f"feed {feed_id} rejected: {result.message}"[:2000])
        else:
            if result.errors:
                events.feed_outcome(
                    rt, session, connection, "Price & stock", "ProcessedWithErrors", result.status, total - len(applied)
                )
            reason = f"feed {feed_id}: every line refused: {result.message}"[:2000] if status == "Failed" else None
            await finish(rt, session, job, status, reason)
    return result


@task(PRICE_STOCK_PUSH)
async def price_stock_push_task(rt: Runtime, job: JobRun) -> None:
    await push_price_stock(rt, job)


# -- running one job now (operator commands, the demo) ---------------------------------------------------

HANDLERS: dict[str, Callable[[Runtime, JobRun], Awaitable[Any]]] = {
    ORDER_PULL: pull_orders,
    LISTING_MIRROR: mirror_listings,
    PRICE_STOCK_PUSH: push_price_stock,
}


async def run_now(rt: Runtime, job_id: str, *, wait_s: float = 60.0) -> tuple[str, Any]:
    """Run one queued job in this process and return (its final status, what the handler returned).

    When a worker got to it first, wait for that worker to finish it instead.
    """
    worker_id = f"run-now:{new_id()[-8:]}"
    async with rt.db.transaction() as session:
        claimed = await repository.claim_job(session, job_id, worker_id, rt.clock.now(), rt.settings.job_lease_s)
        snapshot = None
        if claimed is not None:
            snapshot = JobRun(
                rt=rt,
                job_id=claimed.id,
                account_id=claimed.account_id,
                type=claimed.type,
                payload=dict(claimed.payload or {}),
                recovery_count=claimed.recovery_count,
                worker_id=worker_id,
                progress_done=claimed.progress_done,
                progress_total=claimed.progress_total,
            )
    outcome: Any = None
    if snapshot is not None:
        outcome = await _run_claimed(rt, snapshot)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while True:
        async with rt.db.read() as session:
            job = await repository.job_by_id(session, job_id)
        status = job.status if job is not None else "Unknown"
        if status in ("Completed", "Failed", "Cancelled", "Unknown") or loop.time() > deadline:
            return status, outcome
        await asyncio.sleep(0.2)


async def _run_claimed(rt: Runtime, job: JobRun) -> Any:
    """Run a job claimed by `run_now`, with a heartbeat, ending it as a worker would."""

    async def heartbeat() -> None:
        while True:
            await asyncio.sleep(max(0.05, rt.settings.job_lease_s / 3))
            async with rt.db.transaction() as session:
                await jobs_repository.renew_lease(
                    session, job.job_id, job.worker_id, rt.clock.now(), rt.settings.job_lease_s
                )

    beat = asyncio.create_task(heartbeat())
    try:
        return await HANDLERS[job.type](rt, job)
    except RetryLater as exc:
        async with rt.db.transaction() as session:
            now = rt.clock.now()
            await jobs_repository.requeue(session, job.job_id, job.worker_id, now, now + timedelta(seconds=exc.delay_s))
        return None
    except LeaseLost:
        return None
    except Exception as exc:
        async with rt.db.transaction() as session:
            await jobs_repository.finish(
                session, job.job_id, job.worker_id, rt.clock.now(), "Failed", f"{type(exc).__name__}: {exc}"[:2000]
            )
        return None
    finally:
        beat.cancel()
