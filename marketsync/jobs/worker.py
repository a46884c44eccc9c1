"""The worker: claims jobs with leases, heartbeats them, runs schedules and pollers.

Any number of workers may run against one database. A claimed job carries a lease that the worker
renews; a job whose lease expired (its worker died) is taken over by another worker, which increments
RecoveryCount. Handlers are idempotent because recovery means at-least-once.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import socket
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncSession
from structlog.contextvars import bound_contextvars

from marketsync.db import EVENTS, EVERY_KIND, JOBS, database_unavailable, mark_background
from marketsync.jobs import registry, repository
from marketsync.jobs.run import (
    DATABASE_RETRY_S,
    JOB_OUTCOMES,
    MAX_REASON,
    OUTCOME_RETRY_MAX_S,
    JobRun,
    LeaseLost,
    RetryLater,
)
from marketsync.jobs.types import JobStatus
from marketsync.kit.ids import new_id
from marketsync.models.jobs import LEASE_OWNER_LENGTH
from marketsync.runtime import Runtime

log = structlog.get_logger("marketsync.worker")
run_log = structlog.get_logger("marketsync.jobs")


def worker_identity() -> str:
    """host:pid:random, within what a lease owner holds: a long host name (a pod's, up to 63 characters) is cut,
    never the pid and random part that keep two workers apart (a longer identity failed every claim on PostgreSQL)."""
    unique = f":{os.getpid()}:{new_id()[-6:]}"
    return socket.gethostname()[: LEASE_OWNER_LENGTH - len(unique)] + unique


class Worker:
    def __init__(self, rt: Runtime, *, worker_id: str | None = None, concurrency: int | None = None) -> None:
        self.rt = rt
        self.worker_id = worker_id or worker_identity()
        self.concurrency = concurrency or rt.settings.worker_concurrency
        self._running: dict[str, asyncio.Task[None]] = {}
        self._last_cycle: float | None = None  # loop time of the last cycle (the health endpoint reads it)
        self._side_tasks: dict[str, asyncio.Task[None]] = {}
        # When the queue, the schedules and the pollers were last looked at (loop time): see tick.
        self._queue_looked_at = -math.inf
        self._schedules_looked_at = -math.inf
        self._pollers_looked_at = -math.inf
        registry.load_all(rt.settings)

    @property
    def lease_s(self) -> float:
        return self.rt.settings.job_lease_s

    async def run(self, stop: asyncio.Event) -> None:
        # Everything this loop starts (jobs, pollers, schedules) lets the process's requests go first.
        mark_background()
        log.info("worker_started", worker_id=self.worker_id, concurrency=self.concurrency)
        wakeups = self.rt.db.wakeups
        listener = asyncio.create_task(wakeups.listen(), name="wakeup-listener")
        try:
            woken = EVERY_KIND
            while not stop.is_set():
                self._last_cycle = asyncio.get_running_loop().time()
                busy = await self.tick(woken=woken)
                if busy:  # it claims again at once: more may be queued
                    woken = wakeups.take() | {JOBS}
                else:
                    # New work wakes the loop at once, only for its kind (marketsync/db/_wakeups.py); the poll is the
                    # fallback, and wakes every kind.
                    woken = await wakeups.wait(stop, self.rt.settings.worker_poll_s)
        finally:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener
            await self.shutdown()

    def health(self) -> dict[str, object]:
        """ok while the loop cycles (at least every poll interval when idle); stalled otherwise."""
        if self._last_cycle is None:
            return {"status": "starting", "worker_id": self.worker_id}
        age = asyncio.get_running_loop().time() - self._last_cycle
        stalled_after = max(30.0, 10 * self.rt.settings.worker_poll_s)
        return {
            "status": "ok" if age < stalled_after else "stalled",
            "worker_id": self.worker_id,
            "last_cycle_age_s": round(age, 3),
            "running_jobs": len(self._running),
        }

    async def tick(self, *, side_work: bool = True, woken: frozenset[str] = EVERY_KIND) -> bool:
        """One cycle, for the kinds of work `woken` names (a job queued claims, an event recorded runs the webhook
        pollers: docs/decisions/0451); True when it found work (so the loop does not sleep)."""
        found = False
        # Without a job's wake-up, the queue is still looked at once a poll interval (a job held until later, a
        # lease expired): wake-ups of the other kind arriving faster than that must not keep it from being looked at.
        now = asyncio.get_running_loop().time()
        claiming = JOBS in woken or now - self._queue_looked_at >= self.rt.settings.worker_poll_s
        if claiming:
            self._queue_looked_at = now
        while claiming and len(self._running) < self.concurrency:
            claimed = await self._claim()
            if claimed is None:
                break
            found = True
        if side_work:
            self._start_side_work(events=EVENTS in woken)
        return found

    async def _claim(self) -> JobRun | None:
        try:
            async with self.rt.db.transaction() as session:
                claimed = await repository.claim_next(
                    session, self.worker_id, self.rt.clock.now(), self.lease_s, registry.TASKS.keys()
                )
                if claimed is None:
                    return None
                job, recovered = claimed
                run = JobRun.of(self.rt, job, self.worker_id)
        except Exception:
            log.exception("job_claim_failed")
            return None
        if recovered:
            log.warning("job_recovered", job_id=run.job_id, type=run.type, recovery_count=run.recovery_count)
        self._running[run.job_id] = asyncio.create_task(self._execute(run), name=f"job:{run.job_id}")
        return run

    async def _execute(self, run: JobRun) -> None:
        try:
            await execute(self.rt, run)
        finally:
            # Only now is the job's end state committed: drain() and shutdown() rely on this.
            self._running.pop(run.job_id, None)
            # A slot is free: a job queued while every slot was busy starts now, not at the next poll.
            self.rt.db.wakeups.signal({JOBS})

    def _start_side_work(self, *, events: bool = True) -> None:
        now = asyncio.get_running_loop().time()
        # The pollers run when events were recorded, and once a poll interval otherwise (a delivery due for its
        # retry): a wake-up for a job (a push's propagation, a job's end) is not theirs.
        if events or now - self._pollers_looked_at >= self.rt.settings.worker_poll_s:
            self._pollers_looked_at = now
            for name, fn in registry.POLLERS.items():
                key = f"poller:{name}"
                if key not in self._side_tasks or self._side_tasks[key].done():
                    self._side_tasks[key] = asyncio.create_task(self._guard(key, fn(self.rt, self.worker_id)))
        # Schedules are looked at once a poll interval at most, as an idle loop would: a wake-up (a job, an event:
        # every push) is not theirs.
        looking = self._side_tasks.get("schedules")
        if (looking is None or looking.done()) and now - self._schedules_looked_at >= self.rt.settings.worker_poll_s:
            self._schedules_looked_at = now
            self._side_tasks["schedules"] = asyncio.create_task(self._guard("schedules", self._start_due_schedules()))

    async def _start_due_schedules(self) -> None:
        """One read finds the schedules due; only those are claimed, each a write transaction (on SQLite, the one
        writer). Claiming every schedule at every look cost 14 write transactions a second at the default poll, and
        on PostgreSQL a burst of 7 connections that outgrew the pool."""
        async with self.rt.db.read() as session:
            intervals = {name: spec.interval_s(self.rt.settings) for name, spec in registry.SCHEDULES.items()}
            due = await repository.due_schedules(session, intervals, self.rt.clock.now())
        for name in due:
            key = f"schedule:{name}"
            if key not in self._side_tasks or self._side_tasks[key].done():
                self._side_tasks[key] = asyncio.create_task(
                    self._guard(key, self._run_schedule(registry.SCHEDULES[name]))
                )

    async def _guard(self, key: str, work: object) -> None:
        try:
            await work  # type: ignore[misc]
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("side_work_failed", work=key)

    async def _run_schedule(self, spec: registry.ScheduleSpec) -> None:
        interval = spec.interval_s(self.rt.settings)
        lease = max(self.lease_s, interval)
        async with self.rt.db.transaction() as session:
            claimed = await repository.claim_schedule(
                session, spec.name, self.worker_id, self.rt.clock.now(), lease, interval
            )
        if not claimed:
            return
        try:
            await spec.fn(self.rt)
        finally:
            now = self.rt.clock.now()
            async with self.rt.db.transaction() as session:
                await repository.release_schedule(
                    session, spec.name, self.worker_id, now, now + timedelta(seconds=interval)
                )

    async def shutdown(self, grace_s: float = 10.0) -> None:
        """Stop side work, let running jobs finish briefly, then hand the rest back to the queue."""
        for task in self._side_tasks.values():
            task.cancel()
        if self._running:
            await asyncio.wait(list(self._running.values()), timeout=grace_s)
        for job_id, task in list(self._running.items()):
            task.cancel()
            with contextlib.suppress(Exception):
                async with self.rt.db.transaction() as session:
                    now = self.rt.clock.now()
                    await repository.requeue(session, job_id, self.worker_id, now, now)
        await asyncio.gather(*self._side_tasks.values(), return_exceptions=True)
        self._side_tasks.clear()
        log.info("worker_stopped", worker_id=self.worker_id)

    async def drain(self, timeout_s: float = 30.0) -> None:
        """Run until no job is runnable and none is running (tests, the `demo` command)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while loop.time() < deadline:
            # A job that ends while the tick looks (requeued to run at once) was not claimable when the tick looked:
            # only a tick that began with nothing running may end the drain.
            was_running = bool(self._running)
            found = await self.tick(side_work=False)
            if not found and not was_running and not self._running:
                return
            if self._running:
                await asyncio.wait(list(self._running.values()), timeout=0.05)
        raise TimeoutError("worker did not drain in time")


# -- running one claimed job (the worker's loop and `jobs.service.run_now`) ------------------------------------


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
        run_log.info("job_requeued", job_id=run.job_id, delay_s=exc.delay_s, reason=str(exc))
        return None
    except LeaseLost:
        JOB_OUTCOMES.labels(run.type, "LeaseLost").inc()
        run_log.warning("job_lease_lost", job_id=run.job_id)
        return None
    except asyncio.CancelledError:
        if run.lease_lost:
            JOB_OUTCOMES.labels(run.type, "LeaseLost").inc()
            run_log.warning("job_lease_lost", job_id=run.job_id)
            return None
        # The worker is stopping (Worker.shutdown hands the job back to the queue): nothing was lost.
        JOB_OUTCOMES.labels(run.type, "Interrupted").inc()
        run_log.info("job_interrupted", job_id=run.job_id, type=run.type)
        raise
    except Exception as exc:
        status, reason = JobStatus.FAILED, f"{type(exc).__name__}: {exc}"
        run_log.exception("job_failed", job_id=run.job_id, type=run.type)
    finally:
        heartbeat.cancel()
    if run.finished:  # the handler ended the job with its outcome
        run_log.info("job_finished_by_handler", job_id=run.job_id, type=run.type)
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
        run_log.info("job_finished", job_id=run.job_id, type=run.type, status=status)
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
            run_log.warning(
                "job_outcome_not_recorded", job_id=run.job_id, error_class=type(exc).__name__, retry_s=delay
            )
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
            run_log.exception("job_heartbeat_failed", job_id=run.job_id)
            continue
        if not kept:
            run.lease_lost = True
            if runner is not None:
                runner.cancel()
            return
