"""The worker: claims jobs with leases, heartbeats them, runs schedules and pollers.

Any number of workers may run against one database. A claimed job carries a lease that the worker
renews; a job whose lease expired (its worker died) is taken over by another worker, which increments
RecoveryCount. Handlers are idempotent because recovery means at-least-once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from datetime import timedelta

import structlog

from marketsync.jobs import registry, repository
from marketsync.jobs.run import JobRun, LeaseLost, RetryLater
from marketsync.kit.ids import new_id
from marketsync.runtime import Runtime

log = structlog.get_logger("marketsync.worker")


def worker_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{new_id()[-6:]}"


class Worker:
    def __init__(self, rt: Runtime, *, worker_id: str | None = None, concurrency: int | None = None) -> None:
        self.rt = rt
        self.worker_id = worker_id or worker_identity()
        self.concurrency = concurrency or rt.settings.worker_concurrency
        self._running: dict[str, asyncio.Task[None]] = {}
        self._side_tasks: dict[str, asyncio.Task[None]] = {}
        self._wake = asyncio.Event()
        registry.load_all(rt.settings)

    @property
    def lease_s(self) -> float:
        return self.rt.settings.job_lease_s

    def wake(self) -> None:
        """Skip the idle wait: something was just enqueued in this process."""
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        log.info("worker_started", worker_id=self.worker_id, concurrency=self.concurrency)
        try:
            while not stop.is_set():
                busy = await self.tick()
                if not busy:
                    self._wake.clear()
                    waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self._wake.wait())]
                    await asyncio.wait(
                        waiters, timeout=self.rt.settings.worker_poll_s, return_when=asyncio.FIRST_COMPLETED
                    )
                    for waiter in waiters:
                        waiter.cancel()
        finally:
            await self.shutdown()

    async def tick(self, *, side_work: bool = True) -> bool:
        """One cycle; True when it found work (so the loop does not sleep)."""
        found = False
        while len(self._running) < self.concurrency:
            claimed = await self._claim()
            if claimed is None:
                break
            found = True
        if side_work:
            self._start_side_work()
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
                run = JobRun(
                    rt=self.rt,
                    job_id=job.id,
                    account_id=job.account_id,
                    type=job.type,
                    payload=dict(job.payload or {}),
                    recovery_count=job.recovery_count,
                    worker_id=self.worker_id,
                    progress_done=job.progress_done,
                    progress_total=job.progress_total,
                )
        except Exception:
            log.exception("job_claim_failed")
            return None
        if recovered:
            log.warning("job_recovered", job_id=run.job_id, type=run.type, recovery_count=run.recovery_count)
        self._running[run.job_id] = asyncio.create_task(self._execute(run), name=f"job:{run.job_id}")
        return run

    async def _execute(self, run: JobRun) -> None:
        try:
            await self._run_to_end(run)
        finally:
            # Only now is the job's end state committed: drain() and shutdown() rely on this.
            self._running.pop(run.job_id, None)

    async def _run_to_end(self, run: JobRun) -> None:
        handler = registry.TASKS[run.type]
        heartbeat = asyncio.create_task(self._heartbeat(run, asyncio.current_task()))
        status, reason = "Completed", None
        try:
            await handler(self.rt, run)
        except RetryLater as exc:
            async with self.rt.db.transaction() as session:
                now = self.rt.clock.now()
                await repository.requeue(session, run.job_id, self.worker_id, now, now + timedelta(seconds=exc.delay_s))
            log.info("job_requeued", job_id=run.job_id, delay_s=exc.delay_s)
            return
        except (LeaseLost, asyncio.CancelledError):
            log.warning("job_lease_lost", job_id=run.job_id)
            return
        except Exception as exc:
            status, reason = "Failed", f"{type(exc).__name__}: {exc}"[:2000]
            log.exception("job_failed", job_id=run.job_id, type=run.type)
        finally:
            heartbeat.cancel()
        async with self.rt.db.transaction() as session:
            recorded = await repository.finish(session, run.job_id, self.worker_id, self.rt.clock.now(), status, reason)
        if recorded:
            log.info("job_finished", job_id=run.job_id, type=run.type, status=status)
        else:  # the handler recorded its own end state with its outcome (or lost the lease)
            log.info("job_finished_by_handler", job_id=run.job_id, type=run.type)

    async def _heartbeat(self, run: JobRun, runner: asyncio.Task[None] | None) -> None:
        interval = max(0.05, self.lease_s / 3)
        while True:
            await asyncio.sleep(interval)
            try:
                async with self.rt.db.transaction() as session:
                    kept = await repository.renew_lease(
                        session, run.job_id, self.worker_id, self.rt.clock.now(), self.lease_s
                    )
            except Exception:
                log.exception("job_heartbeat_failed", job_id=run.job_id)
                continue
            if not kept:
                run._lease_lost = True
                if runner is not None:
                    runner.cancel()
                return

    def _start_side_work(self) -> None:
        for name, fn in registry.POLLERS.items():
            key = f"poller:{name}"
            if key not in self._side_tasks or self._side_tasks[key].done():
                self._side_tasks[key] = asyncio.create_task(self._guard(key, fn(self.rt, self.worker_id)))
        for spec in registry.SCHEDULES.values():
            key = f"schedule:{spec.name}"
            if key not in self._side_tasks or self._side_tasks[key].done():
                self._side_tasks[key] = asyncio.create_task(self._guard(key, self._run_schedule(spec)))

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
            claimed = await repository.claim_schedule(session, spec.name, self.worker_id, self.rt.clock.now(), lease)
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
            found = await self.tick(side_work=False)
            if not found and not self._running:
                return
            if self._running:
                await asyncio.wait(list(self._running.values()), timeout=0.05)
        raise TimeoutError("worker did not drain in time")
