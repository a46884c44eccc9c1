"""Use cases: enqueue a job inside the caller's transaction; read one for the API."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.errors import NotFound
from marketsync.jobs import repository
from marketsync.kit.ids import new_id
from marketsync.models import Job


def enqueue(
    session: AsyncSession,
    now: datetime,
    account_id: str,
    job_type: str,
    payload: dict[str, Any] | None = None,
    *,
    run_after: datetime | None = None,
    progress_total: int | None = None,
) -> Job:
    """Add a job to the caller's transaction: it exists only if that transaction commits.

    A job that may run at once is Published (queued); one held until a later time is NotStarted.
    """
    run_after = run_after or now
    job = Job(
        id=new_id(),
        account_id=account_id,
        type=job_type,
        status="Published" if run_after <= now else "NotStarted",
        payload=payload or {},
        progress_done=0 if progress_total is not None else None,
        progress_total=progress_total,
        recovery_count=0,
        run_after=run_after,
        created_at=now,
        updated_at=now,
    )
    session.add(job)
    return job


async def get_job(session: AsyncSession, account_id: str, job_id: str) -> Job:
    job = await repository.get_job(session, account_id, job_id)
    if job is None:
        raise NotFound("No job with this id.")
    return job
