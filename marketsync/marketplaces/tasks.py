"""Task handlers and schedules of the marketplace side: health checks, and the PriceStockPush feed.

Order pulls live in orders/tasks.py and listing mirrors in inventory/mirror.py: each handler belongs to the domain
that owns the tables it writes. Every feed goes through marketplaces/feeds.py. A handler talks to the marketplace
outside any transaction, then records what happened, its events and the job's end state in ONE transaction: if
the job's lease was lost meanwhile (another worker recovered it) that transaction rolls back, so no event is ever
recorded twice.
"""

from __future__ import annotations

from decimal import Decimal

import structlog

from marketsync.jobs import service as jobs
from marketsync.jobs.registry import schedule, task
from marketsync.jobs.run import JobRun
from marketsync.jobs.types import JobStatus, JobType, PriceStockPushPayload
from marketsync.kinds import kind_of
from marketsync.marketplaces import events, feeds, repository, rules, service
from marketsync.marketplaces.connector import FeedResult, PriceStockLine, connector_for
from marketsync.models.base import money_from_storage
from marketsync.runtime import Runtime

log = structlog.get_logger("marketsync.marketplaces")


@schedule("marketplaces.health", interval_s=lambda s: s.health_check_interval_s)
async def health_checks(rt: Runtime) -> None:
    async with rt.db.read() as session:
        connections = list(await repository.list_all_active(session))
    for connection in connections:
        try:
            await service.check_health(rt, connection)
        except Exception:
            log.exception("health_check_failed", marketplace_id=connection.id)


# The values a feed applied are recorded this many at a time, each chunk in its own transaction with the job's
# progress, the last with the job's end: a worker behind coalesces thousands of products into one feed, and
# recording 10,000 in one transaction held SQLite's one writer for up to 430 ms while the API's pushes waited; 500 a
# chunk still held a push back on the demo's tenant (docs/decisions/0463).
# Recording is idempotent: a run resumed after a crash polls the same feed and records the same values again.
RECORD_CHUNK = 100

# A coalesced feed's lines are compared with what the marketplace holds in stretches of this many, the requests in
# flight going first between them (`RequestsFirst.pause`): 6,000 lines took the event loop 20-35 ms in one go
# (docs/decisions/0303, 0463).
PAUSE_EVERY_LINES = 100

# The lines a PriceStockPush sends, in its job state: [listing row id, external SKU, price or None, quantity or None].
SENT_LINES = "PriceStockLines"


def _encoded(line: PriceStockLine) -> list[str | int | None]:
    return [line.external_sku, None if line.price is None else str(line.price), line.quantity]


def _sent_lines(job: JobRun) -> tuple[list[PriceStockLine] | None, dict[str, str]]:
    """The lines an earlier run of this job kept before sending its feed (None: no run got that far)."""
    kept = job.state.get(SENT_LINES)
    if kept is None:
        return None, {}
    lines = [
        PriceStockLine(sku, None if price is None else Decimal(price), quantity) for _, sku, price, quantity in kept
    ]
    return lines, {sku: row_id for row_id, sku, _, _ in kept}


async def _lines_to_send(
    rt: Runtime, job: JobRun, args: PriceStockPushPayload, connection_id: str, *, accepts_zero_price: bool
) -> tuple[list[PriceStockLine], dict[str, str]]:
    """Per listing of the job's products (every listing for a resync), the catalogue's values that differ from what
    the marketplace is known to hold."""
    async with rt.db.read() as session:
        product_ids = None if args.AllListings else await jobs.price_stock_push_products(session, job.job_id, args)
        rows = await repository.listing_lines(session, connection_id, product_ids)
    lines: list[PriceStockLine] = []
    row_ids: dict[str, str] = {}
    for index, row in enumerate(rows):
        if index and not index % PAUSE_EVERY_LINES:
            await rt.db.requests_first.pause()
        values = rules.price_stock_values(
            row.price_units,
            row.quantity,
            row.held_price_units,
            row.held_quantity,
            accepts_zero_price=accepts_zero_price,
        )
        if values is not None:
            price_units, quantity = values
            lines.append(PriceStockLine(row.external_sku, money_from_storage(price_units), quantity))
            row_ids[row.external_sku] = row.listing_row_id
    return lines, row_ids


@task(JobType.PRICE_STOCK_PUSH)
async def push_price_stock(rt: Runtime, job: JobRun) -> FeedResult | None:
    """Send the job's products' price and stock to one marketplace as one feed: per listing only the values
    that differ from what the marketplace holds, never a price it refuses (docs/decisions/0047).

    The feed is submitted once (feeds.submit_and_await remembers it in the job), so a recovered job polls the
    feed it already sent and the marketplace never applies a row twice.
    """
    args = job.args(PriceStockPushPayload)
    connection = await service.usable_connection(rt, job)
    if connection is None:
        return None
    lines, row_ids = _sent_lines(job)
    if lines is None:
        accepts_zero_price = kind_of(connection.platform).accepts_zero_price
        lines, row_ids = await _lines_to_send(rt, job, args, connection.id, accepts_zero_price=accepts_zero_price)
        if lines:
            # Kept with the job before the feed is sent: a run resumed after a crash or a retry polls the feed already
            # sent and must record the values THAT feed carried. Values read again would be the catalogue's by then:
            # recorded as the marketplace's, they made a later push of the same values look needless (kill -9).
            kept = [[row_ids[line.external_sku], *_encoded(line)] for line in lines]
            await job.remember({SENT_LINES: kept}, progress=(0, len(lines)))
    total = len(lines)
    if not lines:
        async with rt.db.transaction() as session:
            await job.finish(session, JobStatus.COMPLETED, progress=(0, 0))
        return None
    if job.progress_total != total or job.progress_done is None:
        await job.progress(job.progress_done or 0, total)
    connector = connector_for(rt, connection)
    result = await feeds.submit_and_await(rt, job, connection, lambda: connector.submit_price_stock(job.job_id, lines))
    failed = {error.reference for error in result.errors}
    applied = (
        [(row_ids[line.external_sku], line.price, line.quantity) for line in lines if line.external_sku not in failed]
        if result.status == "Done"
        else []
    )
    # ProgressDone counts the rows the marketplace applied; every row refused is a failed job (0042).
    status = JobStatus(rules.feed_job_status(total, len(applied)))
    last_chunk = max(len(applied) - 1, 0) // RECORD_CHUNK * RECORD_CHUNK  # where the last (or only) chunk starts
    for start in range(0, last_chunk, RECORD_CHUNK):
        async with rt.db.transaction() as session:
            await repository.record_marketplace_values(session, applied[start : start + RECORD_CHUNK], rt.clock.now())
            await job.progress_in(session, start + RECORD_CHUNK, total)  # a run that lost its lease records nothing
    async with rt.db.transaction() as session:
        await repository.record_marketplace_values(session, applied[last_chunk:], rt.clock.now())
        reason = None
        if result.status == "Rejected":
            events.feed_outcome(rt, session, connection, "Price & stock", "Rejected", result.status, total)
            status, reason = JobStatus.FAILED, f"feed {result.feed_id} rejected: {result.message}"
        else:
            if result.errors:
                events.feed_outcome(
                    rt, session, connection, "Price & stock", "ProcessedWithErrors", result.status, total - len(applied)
                )
            if status == JobStatus.FAILED:
                reason = f"feed {result.feed_id}: every line refused: {result.message}"
        await job.finish(session, status, reason, progress=(len(applied), total))
    return result
