"""A running job: the handle its task body receives (the one path every run takes is `jobs.worker.execute`).

Every method that writes checks the lease: when another worker has taken the job over (this one was presumed
dead), the write does not happen and `LeaseLost` is raised, so the caller's transaction is rolled back with it.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import structlog
from prometheus_client import Counter
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.jobs import repository
from marketsync.jobs.types import STATE_KEY, JobPayload, JobStatus
from marketsync.models import Job
from marketsync.runtime import Runtime

log = structlog.get_logger("marketsync.jobs")
# Ends (Completed, Failed, Cancelled), retries (RetryLater) and lost leases of every run, by job type.
JOB_OUTCOMES = Counter("marketsync_job_runs_total", "Job runs by type and how they ended", ["type", "outcome"])
PayloadT = TypeVar("PayloadT", bound=JobPayload)
MAX_REASON = 2000
DATABASE_RETRY_S = 1.0
OUTCOME_RETRY_MAX_S = 5.0  # the longest pause between two attempts to record a run's outcome


class RetryLater(Exception):
    """Raised by a task to go back to the queue (e.g. a marketplace's Retry-After); not a failure."""

    def __init__(self, delay_s: float, reason: str = "") -> None:
        super().__init__(reason or f"retry in {delay_s}s")
        self.delay_s = delay_s


class LeaseLost(Exception):
    """Another worker took the job over; this run must stop without touching it further."""


@dataclass
class JobRun:
    rt: Runtime
    job_id: str
    account_id: str
    type: str
    payload: dict[str, Any]
    recovery_count: int = 0
    worker_id: str = "inline"
    progress_done: int | None = None
    progress_total: int | None = None
    finished: bool = field(default=False, repr=False)
    # Set by the heartbeat when another worker took the job over: the cancellation it sends then means that, not a
    # worker stopping.
    lease_lost: bool = field(default=False, repr=False)
    # The end state `finish` committed with the handler's outcome (execute returns it without reading it back).
    finished_status: JobStatus | None = field(default=None, repr=False)
    # What the handler returned (operator commands report it, e.g. how many orders a pull stored).
    outcome: object = field(default=None, repr=False)

    @classmethod
    def of(cls, rt: Runtime, job: Job, worker_id: str) -> JobRun:
        return cls(
            rt=rt,
            job_id=job.id,
            account_id=job.account_id,
            type=job.type,
            payload=dict(job.payload or {}),
            recovery_count=job.recovery_count,
            worker_id=worker_id,
            progress_done=job.progress_done,
            progress_total=job.progress_total,
        )

    def args(self, payload_type: builtins.type[PayloadT]) -> PayloadT:
        """The job's typed payload."""
        return payload_type.of(self.payload)

    @property
    def state(self) -> dict[str, Any]:
        """What earlier runs of this job remembered (`remember`), e.g. the id of a feed already submitted."""
        return dict(self.payload.get(STATE_KEY) or {})

    async def remember(
        self, values: Mapping[str, Any], *, progress: tuple[int | None, int | None] | None = None
    ) -> None:
        """Keep values across retries and recoveries, committed now (before the next step's side effects), with the
        job's progress when given (one write)."""
        stored = {**self.payload, STATE_KEY: {**self.state, **values}}
        async with self.rt.db.transaction() as session:
            now = self.rt.clock.now()
            if not await repository.store_payload(session, self.job_id, self.worker_id, stored, now, progress=progress):
                raise LeaseLost(self.job_id)
        self.payload = stored
        if progress is not None:
            self.progress_done, self.progress_total = progress

    async def progress(self, done: int | None, total: int | None) -> None:
        """Report progress in a transaction of its own."""
        async with self.rt.db.transaction() as session:
            await self.progress_in(session, done, total)

    async def progress_in(self, session: AsyncSession, done: int | None, total: int | None) -> None:
        """Report progress inside the caller's transaction (with the work it counts)."""
        if not await repository.set_progress(session, self.job_id, self.worker_id, self.rt.clock.now(), done, total):
            raise LeaseLost(self.job_id)
        self.progress_done, self.progress_total = done, total

    async def finish(
        self,
        session: AsyncSession,
        status: JobStatus,
        reason: str | None = None,
        *,
        progress: tuple[int | None, int | None] | None = None,
    ) -> None:
        """End the job inside the caller's transaction, atomically with its outcome and events (its progress too:
        one statement)."""
        now = self.rt.clock.now()
        reason = reason[:MAX_REASON] if reason else None
        if not await repository.finish(session, self.job_id, self.worker_id, now, status, reason, progress=progress):
            raise LeaseLost(self.job_id)
        if progress is not None:
            self.progress_done, self.progress_total = progress
        self.finished, self.finished_status = True, status
