"""Use cases of the jobs core: enqueue inside the caller's transaction, look jobs up, cancel, run one now.

Only `marketsync/jobs/` touches the jobs table (tests/unit/test_boundaries.py holds every other module to it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.db import on_commit, wake_workers_on_commit
from marketsync.http.errors import NotFound
from marketsync.jobs import held, registry, repository
from marketsync.jobs.run import JobRun
from marketsync.jobs.types import (
    OPEN,
    QUEUED,
    TERMINAL,
    JobPayload,
    JobStatus,
    JobType,
    ListingPublishPayload,
    PriceStockPushPayload,
)
from marketsync.jobs.worker import execute
from marketsync.kit.ids import new_id
from marketsync.models import Job
from marketsync.runtime import Runtime

__all__ = [
    "JobDetails",
    "JobInfo",
    "cancel_queued_for",
    "enqueue",
    "enqueue_listing_publish",
    "enqueue_price_stock_push",
    "enqueue_price_stock_pushes",
    "failed_since",
    "get_job",
    "has_open_job",
    "job_details",
    "job_info",
    "job_status",
    "queue_stats",
    "recent_jobs",
    "run_now",
]


def enqueue(
    session: AsyncSession,
    now: datetime,
    account_id: str,
    payload: JobPayload,
    *,
    run_after: datetime | None = None,
    progress_total: int | None = None,
    job_id: str | None = None,
) -> Job:
    """Add a job to the caller's transaction: it exists only if that transaction commits.

    A job that may run at once is Published (queued); one held until a later time is NotStarted.
    """
    run_after = run_after or now
    job = Job(
        id=job_id or new_id(),
        account_id=account_id,
        type=payload.job_type,
        status=JobStatus.PUBLISHED if run_after <= now else JobStatus.NOT_STARTED,
        marketplace_id=payload.MarketplaceId,
        payload=payload.stored(),
        progress_done=0 if progress_total is not None else None,
        progress_total=progress_total,
        recovery_count=0,
        run_after=run_after,
        created_at=now,
        updated_at=now,
    )
    session.add(job)
    if job.status == JobStatus.PUBLISHED:
        wake_workers_on_commit(session)
    return job


async def enqueue_price_stock_push(
    session: AsyncSession, now: datetime, account_id: str, marketplace_id: str, product_ids: Sequence[str]
) -> str:
    """`enqueue_price_stock_pushes` for one connection."""
    return (await enqueue_price_stock_pushes(session, now, account_id, {marketplace_id: product_ids}))[0]


async def enqueue_price_stock_pushes(
    session: AsyncSession,
    now: datetime,
    account_id: str,
    per_connection: Mapping[str, Sequence[str]],
    *,
    hold_s: float = 0.0,
) -> list[str]:
    """A PriceStockPush per connection for its products, coalesced: when one for the connection is still queued (no
    worker has it yet), the products are added to it instead of a new job being queued (a loop of pushes makes one
    job per connection, not one per push), as a row of their own (docs/decisions/0304). The job reads the catalogue
    when it runs, so it sends the latest values. Returns the jobs' ids in connection id order.

    A fixed number of statements on the raw driver whatever the number of connections (docs/decisions/0260). A new
    job is runnable `hold_s` after `now`: the pushes that follow within it join it (docs/decisions/0458)."""
    database = held.database_of(session)
    holds: dict[str, frozenset[str]] = {}  # each job's products once this commits
    chosen, waiting = await _join_queued_pushes(session, now, account_id, per_connection, database, holds)
    fresh = []
    for marketplace_id in waiting:
        fresh_products = sorted(set(per_connection[marketplace_id]))
        payload = PriceStockPushPayload(MarketplaceId=marketplace_id, ProductIds=fresh_products)
        fresh.append(repository.NewJob(new_id(), marketplace_id, payload.stored(), len(payload.ProductIds)))
        chosen[marketplace_id] = fresh[-1].id
        holds[fresh[-1].id] = frozenset(fresh_products)
    if fresh:
        run_after = now + timedelta(seconds=hold_s) if hold_s else None
        await repository.insert_queued(session, account_id, JobType.PRICE_STOCK_PUSH, fresh, now, run_after)
        wake_workers_on_commit(session)
    if holds and not session.in_nested_transaction():  # a savepoint's work may yet be rolled back alone
        on_commit(session, lambda: held.HELD.remember(database, holds))
    return [chosen[marketplace_id] for marketplace_id in sorted(per_connection)]


async def _join_queued_pushes(
    session: AsyncSession,
    now: datetime,
    account_id: str,
    per_connection: Mapping[str, Sequence[str]],
    database: str,
    holds: dict[str, frozenset[str]],
) -> tuple[dict[str, str], list[str]]:
    """The connections' queued PriceStockPushes that take the products (connection id -> job id), and the connections
    left with none queued. `holds` gets what each job holds once this commits."""
    chosen: dict[str, str] = {}
    waiting = sorted(per_connection)
    for _ in range(3):  # a worker may claim a queued job between the read and the update: look again
        queued = await repository.queued_never_started(session, account_id, waiting, JobType.PRICE_STOCK_PUSH)
        additions = []
        for marketplace_id, job in queued.items():
            # Only products the job does not hold yet are written (docs/decisions/0461): a loop of pushes over the
            # same catalogue wrote every push's ids again, once per connection. The job is locked (PostgreSQL) or
            # the writer held (SQLite), so it is still queued when this commits and takes the products it holds.
            products = _products_held(database, job)
            if products is None:
                chosen[marketplace_id] = job.id  # a full resync is queued: it carries these products too
                continue
            new = sorted(set(per_connection[marketplace_id]) - products)
            holds[job.id] = products.union(new)
            if new:
                additions.append(repository.Addition(new_id(), job.id, new))
            else:
                chosen[marketplace_id] = job.id
        done = await repository.add_to_queued_jobs(session, additions, now)
        for addition in additions:
            if addition.job_id not in done:
                del holds[addition.job_id]  # claimed meanwhile: no longer queued
        chosen.update((job.marketplace_id, job.id) for job in queued.values() if job.id in done)
        waiting = [marketplace_id for marketplace_id in waiting if marketplace_id not in chosen]
        if len(done) == len(additions):
            break  # every queued job found took the products: the others have none queued
    return chosen, waiting


def _products_held(database: str, job: repository.QueuedJob) -> frozenset[str] | None:
    """The products a queued PriceStockPush holds, known from this process's last commit (0468) or read; None for a
    full resync (AllListings)."""
    known = held.HELD.get(database, job.id, job.progress_total)
    if known is not None:
        return known
    payload = PriceStockPushPayload.of(job.payload)
    if payload.AllListings:
        return None
    return frozenset((*payload.ProductIds, *(product for added in job.added for product in added)))


# A held ListingPublish takes creates up to a feed of this many listings; the next create queues another.
MAX_JOINED_LISTINGS = 500


async def enqueue_listing_publish(
    session: AsyncSession, now: datetime, account_id: str, marketplace_id: str, listing_id: str, *, hold_s: float = 0.0
) -> str:
    """A ListingPublish of a created product's listing; the job's id, which is its journey (ListingPublished's
    JourneyId).

    With a hold (docs/decisions/0460), the job is runnable `hold_s` after `now` and the creates that follow join it:
    while a ListingPublish of the connection is queued and never ran, the listing joins it (the one holding the listing
    already, else the newest, up to MAX_JOINED_LISTINGS) and that job's id is returned, so a client creating products in
    a loop sends the marketplace one feed a second, not one a product. Without a hold, a job of its own, at once."""
    if hold_s:
        queued = [
            (job, ListingPublishPayload.of(job.payload))
            for job in await repository.every_queued_never_started(
                session, account_id, [marketplace_id], JobType.LISTING_PUBLISH
            )
        ]
        for job, payload in queued:
            if listing_id in payload.ListingIds:
                # Nothing to write (as 0461 for a push): the job is locked (PostgreSQL) or the writer held (SQLite)
                # until this commits, so it is still queued then and publishes the listing as it is by then.
                return job.id
        if queued:
            job, payload = queued[-1]
            listing_ids = [*payload.ListingIds, listing_id]
            joined = payload.model_copy(update={"ListingIds": listing_ids})
            if len(listing_ids) <= MAX_JOINED_LISTINGS and await repository.replace_queued_payload(
                session, job.id, joined.stored(), len(listing_ids), now
            ):
                return job.id
    job_id = new_id()
    payload = ListingPublishPayload(MarketplaceId=marketplace_id, ListingIds=[listing_id], JourneyId=job_id)
    run_after = now + timedelta(seconds=hold_s) if hold_s else None
    new_job = repository.NewJob(job_id, marketplace_id, payload.stored(), 1)
    await repository.insert_queued(session, account_id, JobType.LISTING_PUBLISH, [new_job], now, run_after)
    wake_workers_on_commit(session)
    return job_id


async def price_stock_push_products(session: AsyncSession, job_id: str, payload: PriceStockPushPayload) -> list[str]:
    """A PriceStockPush's products: its payload's, then those pushes added while it was queued, each once."""
    products = dict.fromkeys(payload.ProductIds)
    for added in await repository.added_products(session, job_id):
        products.update(dict.fromkeys(added))
    return list(products)


async def has_open_job(session: AsyncSession, account_id: str, marketplace_id: str, job_type: JobType) -> bool:
    """Whether a job of this type for this connection is queued or running (schedules enqueue one at most)."""
    return await repository.count_for_marketplace(session, account_id, marketplace_id, OPEN, job_type) > 0


async def cancel_queued_for(session: AsyncSession, now: datetime, account_id: str, marketplace_id: str) -> int:
    """Cancel every queued job of a connection (pause, disconnect); running ones end on their own check."""
    return await repository.cancel_queued_for_marketplace(session, now, account_id, marketplace_id, QUEUED)


async def get_job(session: AsyncSession, account_id: str, job_id: str) -> Job:
    job = await repository.get_job(session, account_id, job_id)
    if job is None:
        raise NotFound("No job with this id.")
    return job


async def job_status(rt: Runtime, job_id: str) -> JobStatus | None:
    async with rt.db.read() as session:
        job = await repository.get_any(session, job_id)
    return JobStatus(job.status) if job is not None else None


async def run_now(rt: Runtime, job_id: str, *, wait_s: float = 60.0) -> tuple[JobStatus | None, object]:
    """Run one queued job in this process through the worker's own path (operator commands, the demo): its end
    state and what its handler returned. When a worker got to it first, wait for that worker to end it instead
    (the outcome is then None)."""
    registry.load_all(rt.settings)
    worker_id = f"run-now:{new_id()[-8:]}"
    async with rt.db.transaction() as session:
        claimed = await repository.claim_by_id(session, job_id, worker_id, rt.clock.now(), rt.settings.job_lease_s)
        run = JobRun.of(rt, claimed, worker_id) if claimed is not None else None
    if run is not None:
        await execute(rt, run)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while True:
        status = await job_status(rt, job_id)
        if status is None or status in TERMINAL or loop.time() > deadline:
            return status, run.outcome if run is not None else None
        await asyncio.sleep(0.2)


async def recent_jobs(
    session: AsyncSession,
    account_id: str,
    limit: int = 50,
    *,
    status: str | None = None,
    job_type: str | None = None,
    before: tuple[datetime, str] | None = None,
) -> list[Job]:
    """An account's latest jobs, newest first, with their failure reasons (the app shows them; the API never);
    of one status and one type when given, older than `before` (the (created_at, id) of a page's last job)."""
    return await repository.recent(session, account_id, limit, status=status, job_type=job_type, before=before)


async def job_table(
    session: AsyncSession,
    account_id: str,
    *,
    status: str | None,
    job_type: str | None,
    sort: str,
    descending: bool,
    limit: int,
    offset: int,
) -> tuple[list[Job], int]:
    """The app's jobs table (docs/decisions/0436-app-tables.md): a page sorted by created time, type or status, and
    how many jobs the filters hold; one statement each."""
    jobs = await repository.table_page(
        session, account_id, status=status, job_type=job_type, sort=sort, descending=descending, limit=limit,
        offset=offset,
    )  # fmt: skip
    return jobs, await repository.table_count(session, account_id, status=status, job_type=job_type)


@dataclass(frozen=True)
class JobInfo:
    """What another domain may know of a job (its page shows it beside its own rows)."""

    id: str
    type: str
    status: JobStatus
    progress_done: int | None
    progress_total: int | None
    started_at: datetime | None
    finished_at: datetime | None
    failure_reason: str | None

    @property
    def is_complete(self) -> bool:
        return self.status in TERMINAL


@dataclass(frozen=True)
class JobDetails:
    """A job as its page in the app shows it: the API's fields, the failure reason (the app's only) and what it
    worked on (its stored payload)."""

    info: JobInfo
    created_at: datetime
    recovery_count: int
    marketplace_id: str | None
    payload: dict[str, Any]


async def job_details(session: AsyncSession, account_id: str, job_id: str) -> JobDetails:
    """One job of the account; another account's id, or an unknown one, is NotFound (as in the API)."""
    job = await get_job(session, account_id, job_id)
    info = JobInfo(
        job.id, job.type, JobStatus(job.status), job.progress_done, job.progress_total, job.started_at,
        job.finished_at, job.failure_reason,
    )  # fmt: skip
    return JobDetails(info, job.created_at, job.recovery_count, job.marketplace_id, dict(job.payload or {}))


async def job_info(session: AsyncSession, account_id: str, job_id: str) -> JobInfo:
    job = await get_job(session, account_id, job_id)
    return JobInfo(
        job.id, job.type, JobStatus(job.status), job.progress_done, job.progress_total, job.started_at,
        job.finished_at, job.failure_reason,
    )  # fmt: skip


async def queue_stats(session: AsyncSession, now: datetime) -> list[tuple[str, str, int, datetime | None]]:
    """Open jobs by (type, status) with the oldest ready time: the metrics' queue depth and age."""
    return await repository.queue_stats(session, now)


async def failed_since(session: AsyncSession, account_id: str, since: datetime, at_most: int) -> int:
    """How many of the account's jobs created since `since` failed, counted up to `at_most + 1`."""
    return await repository.failed_since(session, account_id, since, at_most)
