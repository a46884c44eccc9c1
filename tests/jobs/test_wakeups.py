"""Wake-ups (marketsync/db/_wakeups.py): an idle worker whose poll interval is far away starts a job the moment the
transaction that queued it commits: through NOTIFY from another process on PostgreSQL, in-process on SQLite. A
rolled-back transaction wakes nobody, and a lost LISTEN connection comes back. A wake-up names its kind of work (a job,
an event: docs/decisions/0451)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import asyncpg  # type: ignore[import-untyped]
import pytest

from marketsync.db import EVENTS, EVERY_KIND, JOBS
from marketsync.db._fast import asyncpg_connect_args
from marketsync.db._wakeups import CHANNEL, WakeUps
from marketsync.jobs import service as job_service
from marketsync.jobs.types import JobStatus, payload_for
from marketsync.jobs.worker import Worker
from marketsync.runtime import Runtime
from marketsync.webhooks.outbox import record_event, record_event_on_driver
from tests.support import tasks as test_tasks
from tests.support.factories import make_account
from tests.webhooks.support import add_subscription

POLL_S = 30.0  # far beyond every wait below: only a wake-up can explain a prompt start
# How soon a woken worker has the job done: a third of the poll interval. The worker's first cycle runs its schedules
# too (sweeps, purges), and on a loaded machine (the suite's workers on two cores) that took 3.9 s once in CI.
WOKEN_WITHIN_S = 10.0


@pytest.fixture
def settings_overrides() -> dict[str, object]:
    return {"task_modules": "tests.support.tasks", "worker_poll_s": POLL_S}


@pytest.fixture
async def idle_worker(rt: Runtime) -> AsyncIterator[Worker]:
    worker = Worker(rt)
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    await asyncio.sleep(0.3)  # its first tick found nothing: it is now waiting out a 30 s poll
    yield worker
    stop.set()
    await running


async def _enqueue(rt: Runtime, account_id: str) -> str:
    async with rt.db.transaction() as session:
        job = job_service.enqueue(session, rt.clock.now(), account_id, payload_for(test_tasks.SLOW_EFFECT, {}))
        return job.id


async def _completed_within(rt: Runtime, job_id: str, seconds: float) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline:
        if await job_service.job_status(rt, job_id) == JobStatus.COMPLETED:
            return True
        await asyncio.sleep(0.02)
    return False


async def test_an_idle_worker_starts_a_job_as_its_transaction_commits(rt: Runtime, idle_worker: Worker) -> None:
    job_id = await _enqueue(rt, await make_account(rt))
    assert await _completed_within(rt, job_id, WOKEN_WITHIN_S)


async def test_a_job_queued_by_another_process_wakes_the_worker_through_notify(
    rt: Runtime, idle_worker: Worker, make_runtime: Callable[..., Runtime]
) -> None:
    if rt.db.is_sqlite:
        pytest.skip("SQLite has no cross-process notification: its workers run in the API process (serve)")
    other_process = make_runtime(task_modules="tests.support.tasks")
    job_id = await _enqueue(other_process, await make_account(rt))
    assert await _completed_within(rt, job_id, WOKEN_WITHIN_S)


async def test_a_rolled_back_transaction_notifies_nobody(rt: Runtime) -> None:
    if rt.db.is_sqlite:
        pytest.skip("SQLite signals in-process after commit only; nothing crosses processes to observe")
    args, kwargs = asyncpg_connect_args(rt.db.url, rt.db.engine.dialect)
    listener = await asyncpg.connect(*args, **kwargs)
    heard: list[str] = []
    await listener.add_listener(CHANNEL, lambda *notification: heard.append(notification[2]))
    account_id = await make_account(rt)

    class Abandoned(Exception):
        pass

    with pytest.raises(Abandoned):
        async with rt.db.transaction() as session:
            job_service.enqueue(session, rt.clock.now(), account_id, payload_for(test_tasks.SLOW_EFFECT, {}))
            raise Abandoned
    await asyncio.sleep(0.3)
    assert heard == []
    await _enqueue(rt, account_id)
    for _ in range(500):  # up to 10 s: a loaded machine (the suite on several xdist workers) is slow to deliver it
        if heard:
            break
        await asyncio.sleep(0.02)
    assert heard == [CHANNEL]
    await listener.close()


async def test_the_listener_comes_back_after_its_connection_is_terminated(rt: Runtime, idle_worker: Worker) -> None:
    if rt.db.is_sqlite:
        pytest.skip("SQLite has no LISTEN connection to lose")
    args, kwargs = asyncpg_connect_args(rt.db.url, rt.db.engine.dialect)
    admin = await asyncpg.connect(*args, **kwargs)
    terminated = await admin.fetchval(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
        " WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid() AND datname = current_database()"
    )
    await admin.close()
    assert terminated >= 1
    await asyncio.sleep(1.0)  # the listener reconnects (backoff from 0.1 s)
    job_id = await _enqueue(rt, await make_account(rt))
    assert await _completed_within(rt, job_id, WOKEN_WITHIN_S)


async def test_a_wake_up_names_its_kind_and_the_poll_interval_wakes_every_kind(rt: Runtime) -> None:
    wakeups = WakeUps(None)
    wakeups.signal({EVENTS})
    assert await wakeups.wait(asyncio.Event(), 5) == {EVENTS}
    wakeups.signal({JOBS})
    wakeups.signal({EVENTS})
    assert wakeups.take() == {JOBS, EVENTS}
    assert await wakeups.wait(asyncio.Event(), 0.05) == EVERY_KIND  # nothing signalled: the poll looks at everything


async def test_a_recorded_event_wakes_the_webhook_pollers_and_a_queued_job_the_queue(rt: Runtime) -> None:
    account_id = await make_account(rt)
    async with rt.db.transaction() as session:
        record_event(session, account_id, "InventoryChanged", {"Items": []}, rt.clock.now())
    assert rt.db.wakeups.take() == {EVENTS}
    await _enqueue(rt, account_id)
    assert rt.db.wakeups.take() == {JOBS}


async def test_a_raw_event_wakes_the_webhook_pollers_only_when_it_is_left_for_the_fan_out(rt: Runtime) -> None:
    """The push's event (record_event_on_driver): dispatched as it is recorded for an account with no active
    subscription, which gives the pollers nothing to do; left for the fan-out, and waking them, with one."""
    account_id = await make_account(rt)
    async with rt.db.transaction() as session:
        await record_event_on_driver(session, account_id, "InventoryChanged", {"Items": []}, rt.clock.now())
    assert rt.db.wakeups.take() == frozenset()
    await add_subscription(rt, account_id, rt.clock.now())
    async with rt.db.transaction() as session:
        await record_event_on_driver(session, account_id, "InventoryChanged", {"Items": []}, rt.clock.now())
    assert rt.db.wakeups.take() == {EVENTS}


async def test_a_wake_up_for_events_leaves_the_queue_to_its_own_wake_up_or_the_next_poll(rt: Runtime) -> None:
    worker = Worker(rt)
    await worker.tick(side_work=False)  # the queue was looked at now: the next look is a poll interval away
    job_id = await _enqueue(rt, await make_account(rt))
    assert not await worker.tick(side_work=False, woken=frozenset({EVENTS}))
    assert await job_service.job_status(rt, job_id) == JobStatus.PUBLISHED
    assert await worker.tick(side_work=False, woken=frozenset({JOBS}))
    await worker.drain()
    assert await job_service.job_status(rt, job_id) == JobStatus.COMPLETED


async def test_a_process_does_not_hear_its_own_notification_twice(rt: Runtime) -> None:
    if rt.db.is_sqlite:
        pytest.skip("SQLite has no cross-process notification: its workers run in the API process (serve)")
    args, kwargs = asyncpg_connect_args(rt.db.url, rt.db.engine.dialect)
    wakeups = WakeUps((args, kwargs))
    listener = asyncio.create_task(wakeups.listen())
    try:
        await asyncio.wait_for(wakeups.wait(asyncio.Event(), 10), 11)  # listening: it signals once
        sender = await asyncpg.connect(*args, **kwargs)
        try:
            await sender.execute(f"SELECT pg_notify('{CHANNEL}', $1)", wakeups.notification({JOBS}))
            assert await wakeups.wait(asyncio.Event(), 0.5) == EVERY_KIND  # the poll's, not a wake-up's
            await sender.execute(f"SELECT pg_notify('{CHANNEL}', $1)", "another-process:events")
            assert await asyncio.wait_for(wakeups.wait(asyncio.Event(), 10), 11) == {EVENTS}
            await sender.execute(f"SELECT pg_notify('{CHANNEL}', '')")  # another version's: every kind
            assert await asyncio.wait_for(wakeups.wait(asyncio.Event(), 10), 11) == EVERY_KIND
        finally:
            await sender.close()
    finally:
        listener.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await listener
