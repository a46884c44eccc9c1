"""Database faults on PostgreSQL: connections terminated under the service (between requests, mid-request, under an
idle worker) and connections that go silent without being closed (a network partition). Requests answer 503 problem
details with Retry-After, never a 500 and never a partial write; the service recovers by itself within seconds and
workers resume."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
import httpx
import pytest
from sqlalchemy import text

from marketsync.db_fast import asyncpg_connect_args
from marketsync.jobs import service as job_service
from marketsync.jobs.types import JobStatus, payload_for
from marketsync.runtime import Runtime
from marketsync.wakeups import CHANNEL, WakeUps
from marketsync.worker import Worker
from tests.conftest import test_settings as settings_for
from tests.inventory.support import add_products, stored
from tests.support import tasks as test_tasks
from tests.support.factories import make_account, make_tenant
from tests.support.silent_network import silent_network_to

TASKS = {"task_modules": "tests.support.tasks"}


@pytest.fixture(params=["postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    """Terminating server connections is PostgreSQL's fault mode (SQLite is a file in the process)."""
    return str(request.param)


@pytest.fixture
def settings_overrides() -> dict[str, object]:
    return dict(TASKS)


async def _terminate_everything(rt: Runtime) -> int:
    """pg_terminate_backend on every other connection of the test database (what a PostgreSQL restart does)."""
    args, kwargs = asyncpg_connect_args(rt.db.url, rt.db.engine.dialect)
    admin = await asyncpg.connect(*args, **kwargs)
    try:
        return int(
            await admin.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
    finally:
        await admin.close()


def _unavailable_or_ok(response: httpx.Response) -> None:
    assert response.status_code in (200, 503), (response.status_code, response.text)
    if response.status_code == 503:
        assert response.headers["content-type"].startswith("application/problem+json")
        assert response.headers["retry-after"] == "1" and response.json()["code"] == "unavailable"


async def _recovers(api: httpx.AsyncClient, headers: dict[str, str], seconds: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline:
        response = await api.post("/api/products/List", json={"Limit": 5}, headers=headers)
        _unavailable_or_ok(response)
        if response.status_code == 200:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the service did not recover from lost connections")


async def test_requests_after_lost_connections_answer_503_then_the_service_recovers(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("MUG", "9.50", 4)])
    assert (await api.post("/api/products/List", json={}, headers=tenant.headers)).status_code == 200
    assert await _terminate_everything(rt) >= 1
    for _ in range(5):
        _unavailable_or_ok(await api.post("/api/products/List", json={"Limit": 5}, headers=tenant.headers))
    await _recovers(api, tenant.headers)


async def test_pushes_cut_mid_request_are_either_applied_whole_or_not_at_all(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api)
    skus = [f"SKU-{n}" for n in range(20)]
    await add_products(rt, tenant.account_id, [(sku, "1.00", 0) for sku in skus])
    answered: list[tuple[int, httpx.Response]] = []

    async def push(value: int) -> None:
        items = [{"Sku": sku, "Quantity": value} for sku in skus]
        response = await api.post("/api/inventory/price-quantity", json={"Items": items}, headers=tenant.headers)
        answered.append((value, response))

    pushes = [asyncio.create_task(push(value)) for value in range(1, 31)]
    for _ in range(3):
        await asyncio.sleep(0.05)
        await _terminate_everything(rt)
    await asyncio.gather(*pushes)
    for _value, response in answered:
        _unavailable_or_ok(response)
    await _recovers(api, tenant.headers)
    # One transaction per push: every SKU holds the same value, one of the pushes' (never a mix of two).
    quantities = {quantity for _price, quantity, _at in (await stored(rt, tenant.account_id)).values()}
    assert len(quantities) == 1
    [final] = quantities
    assert final == 0 or final in {value for value, response in answered if response.status_code in (200, 503)}


@asynccontextmanager
async def running(worker: Worker) -> AsyncIterator[Worker]:
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    try:
        yield worker
    finally:
        stop.set()
        await task


async def _cycled(worker: Worker) -> None:
    """Until the worker's loop has run a few cycles (its pool, LISTEN and side tasks' connections are open)."""
    for _ in range(200):
        if worker.health()["status"] == "ok":
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.3)


async def _enqueue_once_the_database_answers(rt: Runtime, account_id: str, deadline: float) -> str:
    """A job committed through `rt` (whose own pool may meet a dead connection first: then it tries again)."""
    loop = asyncio.get_running_loop()
    while loop.time() < deadline:
        try:
            async with rt.db.transaction() as session:
                job = job_service.enqueue(session, rt.clock.now(), account_id, payload_for(test_tasks.SLOW_EFFECT, {}))
        except Exception:  # the commit met a dead connection: nothing was written, try again
            await asyncio.sleep(0.1)
            continue
        return job.id  # only once committed: an id from a failed commit names a job that does not exist
    raise AssertionError("could not enqueue a job")


async def _completes(rt: Runtime, job_id: str, deadline: float) -> None:
    loop = asyncio.get_running_loop()
    while loop.time() < deadline:
        try:
            if await job_service.job_status(rt, job_id) == JobStatus.COMPLETED:
                return
        except Exception:  # this test's own pool may still hold a dead connection
            pass
        await asyncio.sleep(0.1)
    raise AssertionError(f"job {job_id} was not completed: the worker did not resume")


async def test_a_worker_resumes_after_its_connections_are_terminated(rt: Runtime) -> None:
    account_id = await make_account(rt)
    async with running(Worker(rt)) as worker:
        await _cycled(worker)
        assert await _terminate_everything(rt) >= 2  # at least the worker's pool and its LISTEN connection
        deadline = asyncio.get_running_loop().time() + 15
        job_id = await _enqueue_once_the_database_answers(rt, account_id, deadline)
        await _completes(rt, job_id, deadline)


async def test_a_worker_whose_connections_go_silent_resumes(rt: Runtime, tmp_path: Path) -> None:
    """Every connection of the worker stops answering without being closed; without bounded waits its loop and side
    tasks would wait on them forever. MARKETSYNC_DB_COMMAND_TIMEOUT_S (1 s here) discards them, new ones are opened."""
    account_id = await make_account(rt)
    async with silent_network_to(rt.db.url) as network:
        settings = settings_for(network.url_for(rt.db.url), tmp_path / "var", db_command_timeout_s=1.0, **TASKS)
        worker_rt = Runtime.create(settings)
        worker = Worker(worker_rt)
        stop = asyncio.Event()
        worker_task = asyncio.create_task(worker.run(stop))
        try:
            await _cycled(worker)
            carried = network.silence()
            assert carried >= 2
            deadline = asyncio.get_running_loop().time() + 20
            job_id = await _enqueue_once_the_database_answers(rt, account_id, deadline)
            await _completes(rt, job_id, deadline)
            assert network.opened > carried  # the work went through connections opened after the silence
            assert worker.health()["status"] == "ok"
        finally:
            await network.close()  # first: a worker still stuck on a silent connection is told it closed
            stop.set()
            await worker_task
            await worker_rt.close()


async def test_a_silent_listen_connection_is_replaced_and_wakes_again(rt: Runtime) -> None:
    async def woken(wakeups: WakeUps, seconds: float) -> None:
        await asyncio.wait_for(wakeups.wait(asyncio.Event(), seconds), timeout=seconds + 1)

    async with silent_network_to(rt.db.url) as network:
        args, kwargs = asyncpg_connect_args(network.url_for(rt.db.url), rt.db.engine.dialect)
        wakeups = WakeUps((args, {**kwargs, "command_timeout": 0.5, "timeout": 0.5}), check_every_s=0.5)
        listener = asyncio.create_task(wakeups.listen())
        try:
            await woken(wakeups, 5)  # the first LISTEN connection signals once
            opened_before = network.opened
            network.silence()
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            while network.opened == opened_before and loop.time() < deadline:
                await asyncio.sleep(0.05)
            assert network.opened > opened_before, "the silent LISTEN connection was never replaced"
            await woken(wakeups, 5)  # the new connection signals once it listens
            async with rt.db.transaction() as session:
                await session.execute(text(f"SELECT pg_notify('{CHANNEL}', '')"))
            signal_seen = loop.time()
            await woken(wakeups, 5)
            assert loop.time() - signal_seen < 5
        finally:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener
