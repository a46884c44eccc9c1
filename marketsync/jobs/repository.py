"""All job and schedule queries: enqueue, claim with lease, heartbeat, finish."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, case, func, select, type_coerce, update
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.db import insert_for
from marketsync.jobs.types import QUEUED, JobStatus
from marketsync.models import Job, Schedule
from marketsync.models.base import UTCDateTime

IN_PROCESS = JobStatus.IN_PROCESS


async def get_job(session: AsyncSession, account_id: str, job_id: str) -> Job | None:
    result = await session.execute(select(Job).where(Job.id == job_id, Job.account_id == account_id))
    return result.scalar_one_or_none()


async def recent(session: AsyncSession, account_id: str, limit: int) -> list[Job]:
    query = select(Job).where(Job.account_id == account_id).order_by(Job.created_at.desc(), Job.id.desc())
    return list((await session.execute(query.limit(limit))).scalars())


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


async def queued_for_marketplace(
    session: AsyncSession, account_id: str, marketplace_id: str, job_type: str
) -> Job | None:
    """The oldest job of this type still queued (Published, runnable) for the connection."""
    query = (
        select(Job)
        .where(
            Job.account_id == account_id,
            Job.marketplace_id == marketplace_id,
            Job.type == job_type,
            Job.status == JobStatus.PUBLISHED,
        )
        .order_by(Job.run_after, Job.id)
        .limit(1)
    )
    return (await session.execute(query)).scalar_one_or_none()


async def extend_queued(session: AsyncSession, job_id: str, payload: dict[str, Any], total: int, now: datetime) -> bool:
    """Replace a queued job's payload, only if it is still queued (a worker claims with a status check too)."""
    result = await session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == JobStatus.PUBLISHED)
        .values(payload=payload, progress_total=total, progress_done=0, updated_at=now)
    )
    return bool(getattr(result, "rowcount", 0))


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
    session: AsyncSession, job_id: str, worker_id: str, payload: dict[str, Any], now: datetime
) -> bool:
    result = await session.execute(
        update(Job)
        .where(Job.id == job_id, Job.lease_owner == worker_id, Job.status == IN_PROCESS)
        .values(payload=payload, updated_at=now)
    )
    return bool(getattr(result, "rowcount", 0))


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
    queued = and_(Job.status.in_(QUEUED), Job.run_after <= now, Job.type.in_(types))
    for condition, recovered in ((expired, True), (queued, False)):
        candidate = (
            select(Job.id).where(condition).order_by(Job.run_after, Job.id).limit(1).with_for_update(skip_locked=True)
        )
        job_id = (await session.execute(candidate)).scalar_one_or_none()
        if job_id is None:
            continue
        values: dict[str, Any] = {
            "status": IN_PROCESS,
            "lease_owner": worker_id,
            "lease_expires_at": now + timedelta(seconds=lease_s),
            "updated_at": now,
        }
        if recovered:
            values["recovery_count"] = Job.recovery_count + 1
        result = await session.execute(update(Job).where(Job.id == job_id, condition).values(**values).returning(Job))
        job = result.scalar_one_or_none()
        if job is not None:
            if job.started_at is None:
                job.started_at = now
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
) -> bool:
    result = await session.execute(
        update(Job)
        .where(Job.id == job_id, Job.lease_owner == worker_id, Job.status == IN_PROCESS)
        .values(
            status=status,
            finished_at=now,
            updated_at=now,
            lease_owner=None,
            lease_expires_at=None,
            failure_reason=failure_reason,
        )
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


async def claim_schedule(session: AsyncSession, name: str, worker_id: str, now: datetime, lease_s: float) -> bool:
    await session.execute(
        insert_for(session, Schedule)
        .values(name=name, next_run_at=now, last_run_at=None, lease_owner=None, lease_expires_at=None)
        .on_conflict_do_nothing(index_elements=["name"])
    )
    result = await session.execute(
        update(Schedule)
        .where(
            Schedule.name == name,
            Schedule.next_run_at <= now,
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
