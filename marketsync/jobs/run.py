"""A running job: the handle its task body receives, and the one path every run takes (worker or `run_now`).

Every method that writes checks the lease: when another worker has taken the job over (this one was presumed
dead), the write does not happen and `LeaseLost` is raised, so the caller's transaction is rolled back with it.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

import structlog
from prometheus_client import Counter
from sqlalchemy.ext.asyncio import AsyncSession
from structlog.contextvars import bound_contextvars

from marketsync.db import database_unavailable
from marketsync.jobs import registry, repository
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


async def execute(rt: Runtime, run: JobRun) -> JobStatus | None:
    """Run a claimed job to its end with a heartbeat: the handler's own end state, or Completed when it returns,
    Failed (with the reason, visible in the app) when it raises; RetryLater re-queues it. Returns the end state,
    None when the job went back to the queue or another worker took it over."""
    # Every log line of the run names its account and job (ids only).
    with bound_contextvars(account_id=run.account_id, job_id=run.job_id):
        return await _execute(rt, run)


async def _execute(rt: Runtime, run: JobRun) -> JobStatus | None:
    handler = registry.TASKS[run.type]
    runner = asyncio.current_task()
    heartbeat = asyncio.create_task(_heartbeat(rt, run, runner))
    status, reason = JobStatus.COMPLETED, None
    try:
        try:
            run.outcome = await handler(rt, run)
        except Exception as exc:
            if not database_unavailable(exc):
                raise
            # The database went away under the job (restart, lost connection): not the job's failure. Its writes
            # were rolled back; it runs again once the requeue is written (_record waits for the database).
            raise RetryLater(DATABASE_RETRY_S, f"database unavailable: {type(exc).__name__}") from exc
    except RetryLater as exc:
        JOB_OUTCOMES.labels(run.type, "Retried").inc()
        delay = timedelta(seconds=exc.delay_s)
        await _record(
            rt, run, lambda session: repository.requeue(
                session, run.job_id, run.worker_id, rt.clock.now(), rt.clock.now() + delay
            )
        )  # fmt: skip
        log.info("job_requeued", job_id=run.job_id, delay_s=exc.delay_s, reason=str(exc))
        return None
    except LeaseLost:
        JOB_OUTCOMES.labels(run.type, "LeaseLost").inc()
        log.warning("job_lease_lost", job_id=run.job_id)
        return None
    except asyncio.CancelledError:
        if run.lease_lost:
            JOB_OUTCOMES.labels(run.type, "LeaseLost").inc()
            log.warning("job_lease_lost", job_id=run.job_id)
            return None
        # The worker is stopping (Worker.shutdown hands the job back to the queue): nothing was lost.
        JOB_OUTCOMES.labels(run.type, "Interrupted").inc()
        log.info("job_interrupted", job_id=run.job_id, type=run.type)
        raise
    except Exception as exc:
        status, reason = JobStatus.FAILED, f"{type(exc).__name__}: {exc}"
        log.exception("job_failed", job_id=run.job_id, type=run.type)
    finally:
        heartbeat.cancel()
    if run.finished:  # the handler ended the job with its outcome
        log.info("job_finished_by_handler", job_id=run.job_id, type=run.type)
        # A handler that returned committed the end state it gave `finish` (no read back); one that raised after
        # `finish` may have rolled it back: the stored state is read.
        ended = run.finished_status if status == JobStatus.COMPLETED else await _status_of(rt, run.job_id)
        JOB_OUTCOMES.labels(run.type, str(ended or "Unknown")).inc()
        return ended
    recorded = await _record(
        rt, run, lambda session: repository.finish(
            session, run.job_id, run.worker_id, rt.clock.now(), status, reason[:MAX_REASON] if reason else None
        )
    )  # fmt: skip
    if recorded:
        JOB_OUTCOMES.labels(run.type, str(status)).inc()
        log.info("job_finished", job_id=run.job_id, type=run.type, status=status)
        return status
    return await _status_of(rt, run.job_id)


async def _record(rt: Runtime, run: JobRun, write: Callable[[AsyncSession], Awaitable[bool]]) -> bool:
    """Write a run's outcome (its requeue or its end), again while the database is unavailable (a restart). Giving up
    would leave the job InProcess under this worker's name, and a worker never takes over its own job: under
    `marketsync serve` (one worker) it stayed so until the process restarted. Each write is conditional on this
    worker still owning the job, so a late one, after another worker took the job over, changes nothing."""
    delay = DATABASE_RETRY_S / 10
    while True:
        try:
            async with rt.db.transaction() as session:
                return await write(session)
        except Exception as exc:
            if not database_unavailable(exc):
                raise
            log.warning("job_outcome_not_recorded", job_id=run.job_id, error_class=type(exc).__name__, retry_s=delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, OUTCOME_RETRY_MAX_S)


async def _status_of(rt: Runtime, job_id: str) -> JobStatus | None:
    async with rt.db.read() as session:
        job = await repository.get_any(session, job_id)
    return JobStatus(job.status) if job is not None else None


async def _heartbeat(rt: Runtime, run: JobRun, runner: asyncio.Task[Any] | None) -> None:
    lease_s = rt.settings.job_lease_s
    while True:
        await asyncio.sleep(max(0.05, lease_s / 3))
        try:
            async with rt.db.transaction() as session:
                kept = await repository.renew_lease(session, run.job_id, run.worker_id, rt.clock.now(), lease_s)
        except Exception:
            log.exception("job_heartbeat_failed", job_id=run.job_id)
            continue
        if not kept:
            run.lease_lost = True
            if runner is not None:
                runner.cancel()
            return
