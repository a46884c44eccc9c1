"""Housekeeping schedules of the jobs core."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete

from marketsync.jobs.registry import schedule
from marketsync.models import Job
from marketsync.runtime import Runtime

JOB_RETENTION = timedelta(days=30)


@schedule("jobs.retention", interval_s=lambda s: 3600.0)
async def sweep_finished_jobs(rt: Runtime) -> None:
    cutoff = rt.clock.now() - JOB_RETENTION
    async with rt.db.transaction() as session:
        await session.execute(
            delete(Job).where(Job.status.in_(("Completed", "Failed", "Cancelled")), Job.finished_at < cutoff)
        )
