"""All job and schedule queries: enqueue, claim with lease, heartbeat, finish."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, and_, case, exists, func, or_, select, type_coerce, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from marketsync.db import DriverSql, dialect_of, hold_locks_requests_take, insert_for, older_than, session_driver
from marketsync.jobs import statements
from marketsync.jobs.types import QUEUED, JobStatus, JobType
from marketsync.kit import jsonio
from marketsync.models import Job, JobProductAddition, Schedule
from marketsync.models.base import UTCDateTime

IN_PROCESS = JobStatus.IN_PROCESS


async def get_job(session: AsyncSession, account_id: str, job_id: str) -> Job | None:
    result = await session.execute(select(Job).where(Job.id == job_id, Job.account_id == account_id))
    return result.scalar_one_or_none()


async def recent(
    session: AsyncSession,
    account_id: str,
    limit: int,
    *,
    status: str | None = None,
    job_type: str | None = None,
    before: tuple[datetime, str] | None = None,
) -> list[Job]:
    """Newest first; `before` is the (created_at, id) of the last job of the previous page."""
    query = select(Job).where(Job.account_id == account_id)
    if status is not None:
        query = query.where(Job.status == status)
    if job_type is not None:
        query = query.where(Job.type == job_type)
    if before is not None:
        query = query.where(older_than(Job.created_at, Job.id, before))
    query = query.order_by(Job.created_at.desc(), Job.id.desc())
    return list((await session.execute(query.limit(limit))).scalars())


# The app's jobs table: its sortable columns, each in an index (account_id, column, created_at, id) (migration 0038).
TABLE_SORTS = {"created": (Job.created_at,), "type": (Job.type, Job.created_at), "status": (Job.status, Job.created_at)}


def _table_filter(account_id: str, status: str | None, job_type: str | None) -> list[ColumnElement[bool]]:
    conditions = [Job.account_id == account_id]
    if status is not None:
        conditions.append(Job.status == status)
    if job_type is not None:
        conditions.append(Job.type == job_type)
    return conditions


async def table_page(
    session: AsyncSession,
    account_id: str,
    *,
    status: str | None,
    job_type: str | None,
    sort: str,
    descending: bool,
    limit: int,
    offset: int,
) -> list[Job]:
    """A page of the app's jobs table sorted by `sort` (TABLE_SORTS), then created time and id."""
    columns = [*TABLE_SORTS[sort], Job.id]
    order = [column.desc() if descending else column.asc() for column in columns]
    query = select(Job).where(*_table_filter(account_id, status, job_type)).order_by(*order)
    return list((await session.execute(query.limit(limit).offset(offset))).scalars())


async def table_count(session: AsyncSession, account_id: str, *, status: str | None, job_type: str | None) -> int:
    query = select(func.count()).select_from(Job).where(*_table_filter(account_id, status, job_type))
    return int((await session.execute(query)).scalar_one())


async def get_any(session: AsyncSession, job_id: str) -> Job | None:
    """A job of any account (the worker's own bookkeeping; never an API read)."""
    return await session.get(Job, job_id, populate_existing=True)


async def count_for_marketplace(
    session: AsyncSession, account_id: str, marketplace_id: str, statuses: Iterable[str], job_type: str | None = None
) -> int:
    query = select(func.count()).where(
        Job.account_id == account_id, Job.marketplace_id == marketplace_id, Job.status.in_(list(statuses))
    )
    if job_type is not None:
        query = query.where(Job.type == job_type)
    return int((await session.execute(query)).scalar_one())


async def cancel_queued_for_marketplace(
    session: AsyncSession, now: datetime, account_id: str, marketplace_id: str, statuses: Iterable[str]
) -> int:
    result = await session.execute(
        update(Job)
        .where(Job.account_id == account_id, Job.marketplace_id == marketplace_id, Job.status.in_(list(statuses)))
        .values(status=JobStatus.CANCELLED, finished_at=now, updated_at=now)
    )
    return int(getattr(result, "rowcount", 0) or 0)


# The price/stock push's enqueue on the raw driver (docs/decisions/0260): a fixed number of statements whatever the
# number of connections, no ORM unit of work. Payloads are JSON text (SQLite stores it so; on PostgreSQL cast to json).


@dataclass(frozen=True)
class QueuedJob:
    """A queued job that never ran, as `jobs.queued_never_started` read it: its payload and additions are parsed only
    when asked for (a push that knows what the job holds needs neither: docs/decisions/0468)."""

    id: str
    marketplace_id: str
    progress_total: int | None  # a PriceStockPush's products, each counted once (docs/decisions/0461)
    stored_payload: dict[str, Any] | str
    stored_added: str | None  # the additions' JSON arrays, joined by commas

    @property
    def payload(self) -> dict[str, Any]:
        stored = self.stored_payload
        return stored if isinstance(stored, dict) else jsonio.loads(stored)

    @property
    def added(self) -> list[list[str]]:
        """The products pushes added to it (job_product_additions), each push's list."""
        return jsonio.loads(f"[{self.stored_added}]") if self.stored_added else []


class Addition(NamedTuple):
    """Products a push adds to a queued job (docs/decisions/0304): its row's id, made where the addition is."""

    id: str
    job_id: str
    product_ids: list[str]


class NewJob(NamedTuple):
    id: str
    marketplace_id: str
    payload: dict[str, Any]
    progress_total: int


async def queued_never_started(
    session: AsyncSession, account_id: str, marketplace_ids: Collection[str], job_type: str
) -> dict[str, QueuedJob]:
    """Each connection's oldest job of this type queued (Published) that never ran, in one statement. One that ran and
    went back to the queue (throttled, its feed still processing) has read the catalogue and sent its feed already, so
    products added to it would never be sent. Locked until the caller commits, in one order (PostgreSQL): two pushes
    adding to the same jobs take their locks in the same order, and a worker's claim waits for the additions."""
    oldest: dict[str, QueuedJob] = {}
    for job in await every_queued_never_started(session, account_id, marketplace_ids, job_type):
        oldest.setdefault(job.marketplace_id, job)
    return oldest


async def every_queued_never_started(
    session: AsyncSession, account_id: str, marketplace_ids: Collection[str], job_type: str
) -> list[QueuedJob]:
    """`queued_never_started`, every such job, oldest first; locked alike."""
    if not marketplace_ids:
        return []
    driver = await session_driver(session)
    status = JobStatus.PUBLISHED.value
    if driver.postgres:
        arguments: tuple[Any, ...] = (account_id, list(marketplace_ids), job_type, status)
    else:
        arguments = (account_id, *marketplace_ids, job_type, status)
    rows = await driver.fetch(statements.QUEUED_NEVER_STARTED.text(driver.postgres, len(marketplace_ids)), arguments)
    if rows:
        await hold_locks_requests_take(session)
    return [QueuedJob(job_id, place, total, payload, added) for job_id, place, payload, total, added in rows]


async def add_to_queued_jobs(session: AsyncSession, additions: Sequence[Addition], now: datetime) -> set[str]:
    """Add products to queued jobs, each only if still queued and never run (a worker claims with a status check
    too): a row per job, whatever the products it holds already; its progress_total counts them. The ids of the
    jobs that took them. Two statements on PostgreSQL whatever the number of jobs."""
    if not additions:
        return set()
    driver = await session_driver(session)
    stamp = DriverSql(driver.postgres).time_value(now)
    count = statements.COUNT_ADDITIONS.text(driver.postgres)
    if driver.postgres:
        counted = ([a.job_id for a in additions], [len(a.product_ids) for a in additions], stamp)
        done = {row[0] for row in await driver.fetch(count, counted)}
    else:
        done = set()
        for addition in additions:
            counted_one = (len(addition.product_ids), stamp, addition.job_id)
            done.update(row[0] for row in await driver.fetch(count, counted_one))
    taken = [
        (addition.job_id, addition.id, jsonio.dumps(addition.product_ids).decode())
        for addition in additions
        if addition.job_id in done
    ]
    await driver.execute_rows(statements.INSERT_ADDITIONS.text(driver.postgres), taken)
    return done


async def replace_queued_payload(
    session: AsyncSession, job_id: str, payload: dict[str, Any], progress_total: int, now: datetime
) -> bool:
    """Give a queued job a new payload and total, only if it is still queued and never ran (a worker claims with a
    status check too): whether it took them."""
    driver = await session_driver(session)
    stamp = DriverSql(driver.postgres).time_value(now)
    arguments = (jsonio.dumps(payload).decode(), progress_total, stamp, job_id)
    return bool(await driver.fetch(statements.REPLACE_QUEUED_PAYLOAD.text(driver.postgres), arguments))


async def added_products(session: AsyncSession, job_id: str) -> list[list[str]]:
    """The products pushes added to a job while it was queued, in the pushes' order."""
    rows = await session.execute(
        select(JobProductAddition.product_ids)
        .where(JobProductAddition.job_id == job_id)
        .order_by(JobProductAddition.id)
    )
    return list(rows.scalars())


async def insert_queued(
    session: AsyncSession,
    account_id: str,
    job_type: str,
    jobs: Sequence[NewJob],
    now: datetime,
    run_after: datetime | None = None,
) -> None:
    """Queue these jobs (Published, runnable from `run_after`, default now) in one statement, in the caller's
    transaction."""
    if not jobs:
        return
    driver = await session_driver(session)
    sql = DriverSql(driver.postgres)
    stamp = sql.time_value(now)
    runnable = stamp if run_after is None else sql.time_value(run_after)
    status = JobStatus.PUBLISHED.value
    payloads = [jsonio.dumps(job.payload).decode() for job in jobs]
    insert = statements.INSERT_QUEUED.text(driver.postgres)
    if driver.postgres:
        columns = ([j.id for j in jobs], [j.marketplace_id for j in jobs], payloads)
        totals = [j.progress_total for j in jobs]
        await driver.execute(insert, (*columns, account_id, job_type, status, stamp, totals, runnable))
        return
    await driver.executemany(
        insert,
        [
            (
                job.id,
                account_id,
                job_type,
                job.marketplace_id,
                status,
                payload,
                job.progress_total,
                runnable,
                stamp,
                stamp,
            )
            for job, payload in zip(jobs, payloads, strict=True)
        ],
    )


async def claim_by_id(session: AsyncSession, job_id: str, worker_id: str, now: datetime, lease_s: float) -> Job | None:
    """Take one queued job, whatever its run_after (`run_now`); None when a worker has it already."""
    result = await session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status.in_(QUEUED))
        .values(
            status=IN_PROCESS,
            lease_owner=worker_id,
            lease_expires_at=now + timedelta(seconds=lease_s),
            started_at=func.coalesce(Job.started_at, now),
            updated_at=now,
        )
        .returning(Job)
    )
    return result.scalar_one_or_none()


async def store_payload(
    session: AsyncSession,
    job_id: str,
    worker_id: str,
    payload: dict[str, Any],
    now: datetime,
    *,
    progress: tuple[int | None, int | None] | None = None,
) -> bool:
    values: dict[str, Any] = {"payload": payload, "updated_at": now}
    if progress is not None:
        values["progress_done"], values["progress_total"] = progress
    result = await session.execute(
        update(Job).where(Job.id == job_id, Job.lease_owner == worker_id, Job.status == IN_PROCESS).values(**values)
    )
    return bool(getattr(result, "rowcount", 0))


# Job types that run one at a time per marketplace connection, in the order they were queued: a price/stock push
# tells the marketplace what the catalogue holds now, and two in flight could land in either order and leave the
# older values at the marketplace (and a wrong belief of what it holds). Coalescing keeps the queue short.
ONE_AT_A_TIME = frozenset({JobType.PRICE_STOCK_PUSH})
_running = aliased(Job)


def _not_behind_a_running_one() -> ColumnElement[bool]:
    """Nothing of the connection ahead of it: no job running, and no OLDER one that started and went back to the
    queue (throttled, its feed still processing, an outage). That one may have sent its feed already; it is still in
    line (a later run_after would otherwise let newer pushes overtake it and its late outcome be recorded last)."""
    return or_(
        Job.type.not_in(ONE_AT_A_TIME),
        Job.marketplace_id.is_(None),
        ~exists().where(
            _running.marketplace_id == Job.marketplace_id,
            _running.type == Job.type,
            or_(
                _running.status == IN_PROCESS,
                and_(_running.status.in_(QUEUED), _running.started_at.is_not(None), _running.id < Job.id),
            ),
        ),
    )


async def _first_in_line(session: AsyncSession, job_type: str, marketplace_id: str) -> bool:
    """On PostgreSQL two workers may each pick a different queued job of one connection at the same moment: a
    transaction-scoped advisory lock per connection orders them, and the second sees the first's claim once the
    lock is its own (SQLite's single writer serialises claims already)."""
    if dialect_of(session) != "postgresql":
        return True
    await session.execute(select(func.pg_advisory_xact_lock(func.hashtext(f"marketsync-job:{marketplace_id}"))))
    running = await session.execute(
        select(exists().where(Job.marketplace_id == marketplace_id, Job.type == job_type, Job.status == IN_PROCESS))
    )
    return not running.scalar_one()


async def claim_next(
    session: AsyncSession, worker_id: str, now: datetime, lease_s: float, types: Iterable[str]
) -> tuple[Job, bool] | None:
    """Take one runnable job: an expired lease first (recovery), else the oldest queued one.

    Returns the job and whether it was recovered from a dead worker.
    """
    types = list(types)
    # A worker never takes over its own job: a late heartbeat of a job it is still running is not a death.
    expired = and_(
        Job.status == IN_PROCESS, Job.lease_expires_at < now, Job.lease_owner != worker_id, Job.type.in_(types)
    )
    queued = and_(Job.status.in_(QUEUED), Job.run_after <= now, Job.type.in_(types), _not_behind_a_running_one())
    for condition, recovered in ((expired, True), (queued, False)):
        candidate = (
            select(Job.id, Job.type, Job.marketplace_id)
            .where(condition)
            .order_by(Job.run_after, Job.id)
            .limit(1)
            .with_for_update(skip_locked=True)
        )
        row = (await session.execute(candidate)).first()
        if row is None:
            continue
        await hold_locks_requests_take(session)  # the queued job a push extends: its next statements never wait
        job_id, job_type, marketplace_id = row
        in_line = recovered or job_type not in ONE_AT_A_TIME or marketplace_id is None
        if not in_line and not await _first_in_line(session, job_type, str(marketplace_id)):
            continue
        values: dict[str, Any] = {
            "status": IN_PROCESS,
            "lease_owner": worker_id,
            "lease_expires_at": now + timedelta(seconds=lease_s),
            # In the claim itself (not set on the returned row afterwards: a second UPDATE in the claim's write
            # transaction, on SQLite the one writer every API write queues behind).
            "started_at": func.coalesce(Job.started_at, now),
            "updated_at": now,
        }
        if recovered:
            values["recovery_count"] = Job.recovery_count + 1
        result = await session.execute(update(Job).where(Job.id == job_id, condition).values(**values).returning(Job))
        job = result.scalar_one_or_none()
        if job is not None:
            return job, recovered
    return None


async def renew_lease(session: AsyncSession, job_id: str, worker_id: str, now: datetime, lease_s: float) -> bool:
    result = await session.execute(
        update(Job)
        .where(Job.id == job_id, Job.lease_owner == worker_id, Job.status == IN_PROCESS)
        .values(lease_expires_at=now + timedelta(seconds=lease_s))
    )
    return bool(getattr(result, "rowcount", 0))


async def set_progress(
    session: AsyncSession, job_id: str, worker_id: str, now: datetime, done: int | None, total: int | None
) -> bool:
    result = await session.execute(
        update(Job)
        .where(Job.id == job_id, Job.lease_owner == worker_id, Job.status == IN_PROCESS)
        .values(progress_done=done, progress_total=total, updated_at=now)
    )
    return bool(getattr(result, "rowcount", 0))


async def finish(
    session: AsyncSession,
    job_id: str,
    worker_id: str,
    now: datetime,
    status: str,
    failure_reason: str | None = None,
    *,
    progress: tuple[int | None, int | None] | None = None,
) -> bool:
    """End a running job (with its final progress when given), only while this worker holds its lease."""
    values: dict[str, Any] = {
        "status": status,
        "finished_at": now,
        "updated_at": now,
        "lease_owner": None,
        "lease_expires_at": None,
        "failure_reason": failure_reason,
    }
    if progress is not None:
        values["progress_done"], values["progress_total"] = progress
    result = await session.execute(
        update(Job).where(Job.id == job_id, Job.lease_owner == worker_id, Job.status == IN_PROCESS).values(**values)
    )
    return bool(getattr(result, "rowcount", 0))


async def requeue(session: AsyncSession, job_id: str, worker_id: str, now: datetime, run_after: datetime) -> bool:
    """Hand a running job back to the queue (throttled, or a graceful shutdown)."""
    result = await session.execute(
        update(Job)
        .where(Job.id == job_id, Job.lease_owner == worker_id, Job.status == IN_PROCESS)
        .values(
            status=JobStatus.PUBLISHED, run_after=run_after, lease_owner=None, lease_expires_at=None, updated_at=now
        )
    )
    return bool(getattr(result, "rowcount", 0))


async def due_schedules(session: AsyncSession, intervals: Mapping[str, float], now: datetime) -> list[str]:
    """Of these schedules (name -> its interval now, in seconds), the ones due now and not leased, in name order: a
    worker claims only those, so a look at the schedules that finds none due writes nothing. One never run is due;
    so is one whose current interval has passed since its last run, though its stored next run is later: an
    operator who shortened the interval and restarted does not wait for the next run the longer one planned."""
    rows = await session.execute(
        select(Schedule.name, Schedule.next_run_at, Schedule.last_run_at, Schedule.lease_expires_at).where(
            Schedule.name.in_(intervals)
        )
    )
    known = {
        name: (next_run_at, last_run_at, lease_expires_at) for name, next_run_at, last_run_at, lease_expires_at in rows
    }

    def due(name: str) -> bool:  # claim_schedule's condition
        next_run_at, last_run_at, lease_expires_at = known[name]
        ran_long_enough_ago = last_run_at is not None and last_run_at <= now - timedelta(seconds=intervals[name])
        on_time = next_run_at is not None and next_run_at <= now
        return (on_time or ran_long_enough_ago) and (lease_expires_at is None or lease_expires_at < now)

    return sorted(name for name in intervals if name not in known or due(name))


async def claim_schedule(
    session: AsyncSession, name: str, worker_id: str, now: datetime, lease_s: float, interval_s: float
) -> bool:
    await session.execute(
        insert_for(session, Schedule)
        .values(name=name, next_run_at=now, last_run_at=None, lease_owner=None, lease_expires_at=None)
        .on_conflict_do_nothing(index_elements=["name"])
    )
    result = await session.execute(
        update(Schedule)
        .where(
            Schedule.name == name,
            (Schedule.next_run_at <= now) | (Schedule.last_run_at <= now - timedelta(seconds=interval_s)),
            (Schedule.lease_expires_at.is_(None)) | (Schedule.lease_expires_at < now),
        )
        .values(lease_owner=worker_id, lease_expires_at=now + timedelta(seconds=lease_s))
    )
    return bool(getattr(result, "rowcount", 0))


async def release_schedule(
    session: AsyncSession, name: str, worker_id: str, now: datetime, next_run_at: datetime
) -> None:
    await session.execute(
        update(Schedule)
        .where(Schedule.name == name, Schedule.lease_owner == worker_id)
        .values(lease_owner=None, lease_expires_at=None, last_run_at=now, next_run_at=next_run_at)
    )


async def queue_stats(session: AsyncSession, now: datetime) -> list[tuple[str, str, int, datetime | None]]:
    """(type, status, count, oldest run_after among those ready now) of every open job: one grouped scan of the
    open jobs (ix_jobs_claim), for the metrics."""
    ready = case((and_(Job.status.in_(QUEUED), Job.run_after <= now), Job.run_after), else_=None)
    rows = await session.execute(
        select(Job.type, Job.status, func.count(), type_coerce(func.min(ready), UTCDateTime()))
        .where(Job.status.in_((*QUEUED, IN_PROCESS)))
        .group_by(Job.type, Job.status)
    )
    return [(job_type, status, int(count), oldest) for job_type, status, count, oldest in rows.all()]


async def failed_since(session: AsyncSession, account_id: str, since: datetime, at_most: int) -> int:
    """The account's jobs created since `since` that failed, counted up to `at_most + 1`: one range of
    ix_jobs_account_status."""
    found = select(Job.id).where(Job.account_id == account_id, Job.status == JobStatus.FAILED, Job.created_at >= since)
    query = select(func.count()).select_from(found.limit(at_most + 1).subquery())
    return int((await session.execute(query)).scalar_one())
