"""Jobs (spec sections 2 and 3): GET /api/jobs/{id}, the worker, leases, recovery after kill -9, schedules."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select, update
from structlog.testing import capture_logs

from marketsync.jobs import registry
from marketsync.jobs import service as job_service
from marketsync.jobs.run import JobRun, RetryLater
from marketsync.jobs.types import JobPayload, payload_for
from marketsync.jobs.worker import Worker, worker_identity
from marketsync.kit.clock import FrozenClock, iso
from marketsync.models import Account, Job, Schedule
from marketsync.models.jobs import LEASE_OWNER_LENGTH
from marketsync.runtime import Runtime
from tests.support import tasks as test_tasks
from tests.support.factories import make_account, make_tenant
from tests.support.processes import spawn

JOB_FIELDS = {
    "JobId", "Type", "Status", "IsComplete", "IsSuccessful", "StartedAt",
    "ProgressDone", "ProgressTotal", "RecoveryCount",
}  # fmt: skip


@pytest.fixture
def settings_overrides() -> dict[str, object]:
    return {"task_modules": "tests.support.tasks", "job_lease_s": 1.0}


async def enqueue(rt: Runtime, account_id: str, job_type: str, **payload: object) -> str:
    async with rt.db.transaction() as session:
        job = job_service.enqueue(session, rt.clock.now(), account_id, payload_for(job_type, dict(payload)))
        return job.id


async def job_row(rt: Runtime, job_id: str) -> Job:
    async with rt.db.read() as session:
        job = await session.get(Job, job_id)
        assert job is not None
        return job


async def test_queued_job_as_the_api_shows_it(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    job_id = await enqueue(rt, tenant.account_id, test_tasks.SLOW_EFFECT)
    body = (await api.get(f"/api/jobs/{job_id}", headers=tenant.headers)).json()
    assert set(body) == JOB_FIELDS
    assert body["Status"] == "Published"
    assert body["IsComplete"] is False and body["IsSuccessful"] is False
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", body["StartedAt"])  # never null (below)
    assert body["ProgressDone"] is None and body["ProgressTotal"] is None  # does not count rows: null, not zero
    assert body["RecoveryCount"] == 0


@pytest.mark.parametrize("clock", [FrozenClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))])
async def test_started_at_is_when_the_job_was_accepted_until_a_worker_starts_it(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    """Spec section 2, Job: StartedAt is a timestamp, never null (only the progress counts may be null). A job no
    worker has started answers the time it was accepted; once a worker starts it, the time it started."""
    tenant = await make_tenant(rt, api)
    accepted = clock.now()
    queued_id = await enqueue(rt, tenant.account_id, test_tasks.SLOW_EFFECT)
    async with rt.db.transaction() as session:
        held = job_service.enqueue(
            session, accepted, tenant.account_id, payload_for(test_tasks.SLOW_EFFECT, {}),
            run_after=accepted + timedelta(hours=1),
        )  # fmt: skip
    for job_id, status in ((queued_id, "Published"), (held.id, "NotStarted")):
        body = (await api.get(f"/api/jobs/{job_id}", headers=tenant.headers)).json()
        assert (body["Status"], body["StartedAt"]) == (status, iso(accepted)), body

    started = clock.advance(seconds=90)
    await Worker(rt).drain()
    body = (await api.get(f"/api/jobs/{queued_id}", headers=tenant.headers)).json()
    assert (body["Status"], body["StartedAt"]) == ("Completed", iso(started))


async def test_a_cancelled_job_is_complete_and_not_successful(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Spec sections 2 and 3: IsComplete is true for Completed, Failed and Cancelled. A job cancelled before any
    worker ran it (its connection was paused) is complete, not successful, and still has its StartedAt."""
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    marketplace_id = tenant.marketplace("P1").id
    async with rt.db.transaction() as session:
        job_id = await job_service.enqueue_price_stock_push(
            session, rt.clock.now(), tenant.account_id, marketplace_id, []
        )
    async with rt.db.transaction() as session:
        assert await job_service.cancel_queued_for(session, rt.clock.now(), tenant.account_id, marketplace_id) == 1
    body = (await api.get(f"/api/jobs/{job_id}", headers=tenant.headers)).json()
    assert (body["Status"], body["IsComplete"], body["IsSuccessful"]) == ("Cancelled", True, False)
    assert body["StartedAt"] is not None


class BoomPayload(JobPayload):
    job_type = "Test.Boom"


class ThrottledPayload(JobPayload):
    job_type = "Test.Throttled"


async def test_completed_job_counts_progress(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    job_id = await enqueue(rt, tenant.account_id, test_tasks.SLOW_EFFECT)
    await Worker(rt).drain()
    body = (await api.get(f"/api/jobs/{job_id}", headers=tenant.headers)).json()
    assert (body["Status"], body["IsComplete"], body["IsSuccessful"]) == ("Completed", True, True)
    assert (body["ProgressDone"], body["ProgressTotal"]) == (1, 1)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", body["StartedAt"])  # UTC, milliseconds


async def test_a_worker_on_a_host_with_a_long_name_runs_jobs(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pod's host name may be 63 characters: the identity the worker writes as lease owner is cut to fit (it failed
    every claim on PostgreSQL, and the worker ran nothing), keeping the pid and random part that tell workers apart."""
    host = "marketsync-worker-production-eu-west-1-7d9f8b6c5d-x2x9k-abcdef"
    monkeypatch.setattr(socket, "gethostname", lambda: host)
    first, second = worker_identity(), worker_identity()
    assert len(first) <= LEASE_OWNER_LENGTH and first.startswith(host[:20]) and first != second
    assert first.split(":")[1] == str(os.getpid())
    tenant_account = await make_account(rt)
    job_id = await enqueue(rt, tenant_account, test_tasks.SLOW_EFFECT)
    await Worker(rt).drain()
    assert (await job_row(rt, job_id)).status == "Completed"


async def test_failed_job_is_complete_unsuccessful_and_hides_its_reason(rt: Runtime, api: httpx.AsyncClient) -> None:
    @registry.task("Test.Boom")
    async def boom(_rt: Runtime, _job: JobRun) -> None:
        raise RuntimeError("secret internal detail")

    tenant = await make_tenant(rt, api)
    job_id = await enqueue(rt, tenant.account_id, "Test.Boom")
    await Worker(rt).drain()
    response = await api.get(f"/api/jobs/{job_id}", headers=tenant.headers)
    body = response.json()
    assert (body["Status"], body["IsComplete"], body["IsSuccessful"]) == ("Failed", True, False)
    assert "secret internal detail" not in response.text
    assert "secret internal detail" in (await job_row(rt, job_id)).failure_reason  # kept for the app


async def test_retry_later_requeues_without_failing(rt: Runtime) -> None:
    attempts: list[int] = []

    @registry.task("Test.Throttled")
    async def throttled(_rt: Runtime, _job: JobRun) -> None:
        attempts.append(1)
        if len(attempts) == 1:
            raise RetryLater(0.0)

    account_id = await make_account(rt)
    job_id = await enqueue(rt, account_id, "Test.Throttled")
    await Worker(rt).drain()
    job = await job_row(rt, job_id)
    assert (job.status, len(attempts), job.recovery_count) == ("Completed", 2, 0)


async def test_jobs_enqueued_in_a_rolled_back_transaction_do_not_exist(rt: Runtime) -> None:
    account_id = await make_account(rt)
    with pytest.raises(RuntimeError):
        async with rt.db.transaction() as session:
            job_service.enqueue(session, rt.clock.now(), account_id, test_tasks.SlowEffectPayload())
            raise RuntimeError("the change failed")
    async with rt.db.read() as session:
        assert (await session.execute(select(func.count()).select_from(Job))).scalar_one() == 0


async def test_expired_lease_is_taken_over_in_process(rt: Runtime) -> None:
    account_id = await make_account(rt)
    job_id = await enqueue(rt, account_id, test_tasks.SLOW_EFFECT, sleep_s=0)
    from marketsync.jobs import repository

    async with rt.db.transaction() as session:  # a worker claims it, then vanishes without a heartbeat
        claimed = await repository.claim_next(session, "dead-worker", rt.clock.now(), 0.2, [test_tasks.SLOW_EFFECT])
        assert claimed is not None
    await asyncio.sleep(0.3)
    await Worker(rt, worker_id="survivor").drain()
    job = await job_row(rt, job_id)
    assert (job.status, job.recovery_count) == ("Completed", 1)


async def test_a_stopping_worker_hands_its_running_job_back_without_calling_it_lost(rt: Runtime) -> None:
    account_id = await make_account(rt)
    job_id = await enqueue(rt, account_id, test_tasks.SLOW_EFFECT, sleep_s=30)
    worker = Worker(rt, worker_id="stopping")
    assert await worker.tick(side_work=False)
    await wait_for(rt, job_id, lambda j: j.status == "InProcess" and j.progress_total == 1)
    with capture_logs() as logs:
        await worker.shutdown(grace_s=0.05)
    events = [entry["event"] for entry in logs]
    assert "job_interrupted" in events and "job_lease_lost" not in events, events
    job = await job_row(rt, job_id)
    assert (job.status, job.lease_owner, job.recovery_count) == ("Published", None, 0)


async def test_a_job_taken_over_by_another_worker_is_reported_lost(rt: Runtime) -> None:
    account_id = await make_account(rt)
    job_id = await enqueue(rt, account_id, test_tasks.SLOW_EFFECT, sleep_s=30)
    worker = Worker(rt, worker_id="slow-to-notice")
    with capture_logs() as logs:
        assert await worker.tick(side_work=False)
        await wait_for(rt, job_id, lambda j: j.status == "InProcess" and j.progress_total == 1)
        async with rt.db.transaction() as session:  # the lease passes to another worker (as after an expiry)
            await session.execute(
                update(Job).where(Job.id == job_id).values(lease_owner="other-worker", recovery_count=1)
            )
        for _ in range(200):  # the heartbeat (every lease_s / 3) finds the lease gone and stops the run
            if any(entry["event"] in ("job_lease_lost", "job_interrupted") for entry in logs):
                break
            await asyncio.sleep(0.05)
    events = [entry["event"] for entry in logs]
    assert "job_lease_lost" in events and "job_interrupted" not in events, events
    assert (await job_row(rt, job_id)).lease_owner == "other-worker"


async def wait_for(rt: Runtime, job_id: str, predicate: object, timeout: float = 60.0) -> Job:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        job = await job_row(rt, job_id)
        if predicate(job):  # type: ignore[operator]
            return job
        await asyncio.sleep(0.1)
    raise AssertionError(f"job {job_id} never reached the expected state: {job.status}")


@pytest.mark.slow
async def test_job_survives_kill_9_of_its_worker(rt: Runtime, tmp_path: Path) -> None:
    account_id = await make_account(rt)
    job_id = await enqueue(rt, account_id, test_tasks.SLOW_EFFECT, sleep_s=3)
    first = spawn(rt, "worker", log_path=tmp_path / "first.log")
    try:
        await wait_for(rt, job_id, lambda j: j.status == "InProcess" and j.progress_total == 1)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    second = spawn(rt, "worker", log_path=tmp_path / "second.log")
    try:
        job = await wait_for(rt, job_id, lambda j: j.status == "Completed")
    finally:
        second.terminate()
        second.wait(timeout=30)
    assert job.recovery_count == 1
    assert job.progress_done == 1
    async with rt.db.read() as session:
        effects = await session.execute(select(func.count()).where(Account.name == test_tasks.effect_name(job_id)))
        assert effects.scalar_one() == 1


async def test_a_schedule_runs_on_one_worker_at_a_time(rt: Runtime) -> None:
    runs: list[str] = []
    gate = asyncio.Event()

    @registry.schedule("test.exclusive", interval_s=lambda s: 3600.0)
    async def exclusive(_rt: Runtime) -> None:
        runs.append("run")
        await gate.wait()

    try:
        first, second = Worker(rt, worker_id="w1"), Worker(rt, worker_id="w2")
        spec = registry.SCHEDULES["test.exclusive"]
        running = asyncio.create_task(first._run_schedule(spec))
        await asyncio.sleep(0.2)
        await second._run_schedule(spec)  # leased by w1: skipped
        gate.set()
        await running
        await second._run_schedule(spec)  # not due for an hour: skipped
        assert runs == ["run"]
        async with rt.db.read() as session:
            row = await session.get(Schedule, "test.exclusive")
            assert row is not None and row.lease_owner is None and row.last_run_at is not None
    finally:
        registry.SCHEDULES.pop("test.exclusive", None)


async def test_a_look_at_the_schedules_claims_only_those_due(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "SCHEDULES", {})  # this test's schedule alone
    runs: list[str] = []

    @registry.schedule("test.hourly", interval_s=lambda s: 3600.0)
    async def hourly(_rt: Runtime) -> None:
        runs.append("run")

    first, second = Worker(rt, worker_id="w1"), Worker(rt, worker_id="w2")
    await first._start_due_schedules()  # never run: due
    await first._side_tasks["schedule:test.hourly"]
    await second._start_due_schedules()  # ran a moment ago: not due for an hour, so not claimed
    assert runs == ["run"]
    assert "schedule:test.hourly" not in second._side_tasks
    async with rt.db.read() as session:
        row = await session.get(Schedule, "test.hourly")
        assert row is not None and row.lease_owner is None and row.last_run_at is not None
        assert row.next_run_at - row.last_run_at == timedelta(hours=1)


async def test_a_shortened_interval_takes_effect_from_the_last_run_not_the_next_one_planned(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An operator shortens a schedule's interval (e.g. MARKETSYNC_LISTING_MIRROR_INTERVAL_S) and restarts: the run
    the longer interval planned was up to that interval away; the schedule is due once the new interval has passed
    since its last run."""
    monkeypatch.setattr(registry, "SCHEDULES", {})
    runs: list[str] = []
    interval = {"s": 3600.0}

    @registry.schedule("test.tunable", interval_s=lambda s: interval["s"])
    async def tunable(_rt: Runtime) -> None:
        runs.append("run")

    worker = Worker(rt, worker_id="w1")
    await worker._start_due_schedules()
    await worker._side_tasks["schedule:test.tunable"]
    await asyncio.sleep(0.05)
    await worker._start_due_schedules()  # an hour planned: not due
    assert runs == ["run"]
    interval["s"] = 0.01  # the operator's new setting, read at the restart
    restarted = Worker(rt, worker_id="w2")
    await restarted._start_due_schedules()
    await restarted._side_tasks["schedule:test.tunable"]
    assert runs == ["run", "run"]
    async with rt.db.read() as session:
        row = await session.get(Schedule, "test.tunable")
        assert row is not None and row.next_run_at - row.last_run_at == timedelta(seconds=0.01)  # type: ignore[operator]
