"""Database faults on PostgreSQL: connections terminated under the service (between requests, mid-request, under an
idle worker), connections that go silent without being closed (a network partition), and a real restart of a private
PostgreSQL cluster under `marketsync serve`. Requests answer 503 problem details with Retry-After, never a 500 and
never a partial write; the service recovers by itself within seconds and workers resume."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import asyncpg  # type: ignore[import-untyped]
import httpx
import pytest
from sqlalchemy import exc as sa_exc
from sqlalchemy import text
from sqlalchemy.dialects.postgresql.asyncpg import AsyncAdapt_asyncpg_dbapi

from marketsync import migrate
from marketsync.auth import repository as auth_repository
from marketsync.db import Database, database_unavailable
from marketsync.db._fast import asyncpg_connect_args
from marketsync.db._wakeups import CHANNEL, WakeUps
from marketsync.jobs import service as job_service
from marketsync.jobs.types import JobStatus, payload_for
from marketsync.jobs.worker import Worker
from marketsync.marketplaces.registry import compose_connectors
from marketsync.runtime import Runtime
from tests.conftest import test_settings as settings_for
from tests.inventory.support import add_products, stored
from tests.support import tasks as test_tasks
from tests.support.databases import IN_CI
from tests.support.factories import fetch_token, make_account, make_credential, make_tenant, problem
from tests.support.private_postgres import PrivatePostgres, missing_binaries, private_postgres
from tests.support.processes import free_port, spawn
from tests.support.silent_network import silent_network_to

TASKS = {"task_modules": "tests.support.tasks"}
T = TypeVar("T")


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
    # One transaction per push: every SKU holds the same value, one of the pushes' (never a mix of two). Read again
    # if this read meets a connection of the pool that was terminated and has not been handed out since.
    products = await _eventually(lambda: stored(rt, tenant.account_id))
    quantities = {quantity for _price, quantity, _at in products.values()}
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


# A real PostgreSQL restart, on a private cluster of the test's own (the shared server is never restarted).

OUTAGE_S = 2.0  # how long the server stays down between its stop and its start
RECOVERY_BOUND_S = 5.0  # requests sent after the restart succeed again within this
REQUEST_TIMEOUT_S = 10.0  # an answer slower than this is a hang


@pytest.fixture
def private_cluster() -> Iterator[PrivatePostgres]:
    missing = missing_binaries()
    if missing:
        if IN_CI:
            pytest.fail(f"a private PostgreSQL cluster is required in CI: missing {', '.join(missing)}")
        pytest.skip(
            f"a private PostgreSQL cluster needs {', '.join(missing)} (MARKETSYNC_TEST_PG_BIN names their directory)"
        )
    with private_postgres() as cluster:
        yield cluster


@pytest.fixture
async def restartable(private_cluster: PrivatePostgres, tmp_path: Path) -> AsyncIterator[Runtime]:
    """A runtime on the private cluster, migrated: the test's own view of the database the service uses."""
    database = Database(private_cluster.url)
    try:
        await migrate.upgrade(database)
    finally:
        await database.dispose()
    settings = settings_for(private_cluster.url, tmp_path / "var", db_command_timeout_s=5.0, **TASKS)
    runtime = compose_connectors(Runtime.create(settings))
    try:
        yield runtime
    finally:
        await runtime.close()


@dataclass(frozen=True)
class Answer:
    kind: str  # "push" or "read"
    sent: float
    answered: float
    status: int | None  # None: no HTTP answer (a transport error or a timeout)
    value: int = 0  # the quantity a push set on every SKU
    detail: str = ""


async def _eventually(work: Callable[[], Awaitable[T]], seconds: float = 15.0) -> T:
    """`work()` once the test's own pool has replaced its connections lost in the restart."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        try:
            return await work()
        except Exception:
            if loop.time() > deadline:
                raise
            await asyncio.sleep(0.1)


async def _listening_since_restart(cluster: PrivatePostgres) -> int:
    """Connections of the cluster that LISTEN for wake-ups (their last statement) and were opened after the server
    last started: both times are the server's own, so the count holds whatever the test process's clock says."""
    connection = await asyncpg.connect(cluster.url, timeout=5)
    try:
        return int(
            await connection.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE query LIKE $1 "
                "AND backend_start > pg_postmaster_start_time()",
                f'LISTEN "{CHANNEL}"%',
            )
        )
    finally:
        await connection.close()


async def _serving(base_url: str, server: subprocess.Popen[bytes]) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=2) as client:
        for _ in range(300):
            assert server.poll() is None, "marketsync serve exited"
            with contextlib.suppress(httpx.TransportError):
                if (await client.get("/readyz")).status_code == 200:
                    return
            await asyncio.sleep(0.1)
    raise AssertionError("marketsync serve never became ready")


def _translated(driver_error: Exception) -> Exception:
    """`driver_error` as SQLAlchemy's asyncpg dialect raises it: its own DBAPI error class, caused by asyncpg's."""
    translated = AsyncAdapt_asyncpg_dbapi.InternalClientError(str(driver_error), driver_error)
    translated.__cause__ = driver_error
    return translated


def test_errors_a_restarting_server_causes_under_sqlalchemys_are_unavailable_not_internal_errors() -> None:
    # A connect refused while the server shuts down or starts up (57P03) is a bare DBAPIError: no connection existed
    # to invalidate.
    for message in ("the database system is shutting down", "the database system is starting up"):
        refused = _translated(asyncpg.exceptions.CannotConnectNowError(message))
        assert database_unavailable(sa_exc.DBAPIError("connect", None, refused))
    # A terminated connection met by a transaction begun on the raw driver (db._fast.session_driver): the dialect's
    # error, raised outside SQLAlchemy's execution.
    assert database_unavailable(
        _translated(
            asyncpg.exceptions.InternalClientError("cannot switch to state 15; another operation is in progress")
        )
    )
    # Still errors: a wrong statement, and a refused connection that is not the database's (a marketplace's).
    assert not database_unavailable(
        sa_exc.DBAPIError("SELECT", None, _translated(asyncpg.exceptions.UndefinedColumnError("no such column")))
    )
    try:
        raise RuntimeError("marketplace call failed") from ConnectionRefusedError()
    except RuntimeError as not_the_database:
        assert not database_unavailable(not_the_database)


@pytest.mark.slow
async def test_a_postgresql_restart_under_traffic_answers_503_then_the_service_and_its_workers_resume(
    private_cluster: PrivatePostgres, restartable: Runtime, tmp_path: Path
) -> None:
    """`marketsync serve` (API and workers in one process) on a private cluster, under concurrent pushes and reads
    with a job in flight, while PostgreSQL is stopped (fast shutdown: every client disconnected), kept down for
    OUTAGE_S and started again. The service is not restarted."""
    rt = restartable
    port = free_port()
    server = spawn(
        rt, "serve", "--port", str(port), log_path=tmp_path / "serve.log",
        MARKETSYNC_MIGRATE_ON_START="false", MARKETSYNC_WORKER_POLL_S="0.5",
    )  # fmt: skip
    base_url = f"http://127.0.0.1:{port}"
    loop = asyncio.get_running_loop()
    try:
        await _serving(base_url, server)
        account_id = await make_account(rt)
        credential = await make_credential(rt, account_id, ["InventoryRead", "InventoryWrite"])
        skus = [f"SKU-{n}" for n in range(20)]
        await add_products(rt, account_id, [(sku, "1.00", 0) for sku in skus])
        async with httpx.AsyncClient(base_url=base_url, timeout=REQUEST_TIMEOUT_S) as api:
            headers = {
                "Authorization": f"Bearer {await fetch_token(api, credential.client_id, credential.client_secret)}"
            }
            answers: list[Answer] = []
            values = itertools.count(1)
            traffic_over = asyncio.Event()

            async def client(kind: str) -> None:
                while not traffic_over.is_set():
                    value = next(values) if kind == "push" else 0
                    sent = loop.time()
                    try:
                        if kind == "push":
                            items = [{"Sku": sku, "Quantity": value} for sku in skus]
                            response = await api.post(
                                "/api/inventory/price-quantity", json={"Items": items}, headers=headers
                            )
                        else:
                            response = await api.post("/api/products/List", json={"Limit": 20}, headers=headers)
                    except httpx.HTTPError as exc:
                        answers.append(Answer(kind, sent, loop.time(), None, value, repr(exc)))
                    else:
                        detail = response.text if response.status_code not in (200, 503) else ""
                        answers.append(Answer(kind, sent, loop.time(), response.status_code, value, detail))
                        if response.status_code == 503:
                            problem_body = problem(response)
                            assert problem_body["code"] == "unavailable" and response.headers["retry-after"] == "1"
                    await asyncio.sleep(0.05)

            # A job in flight when the server goes down: its handler sleeps, then writes its effect.
            async with rt.db.transaction() as session:
                in_flight = job_service.enqueue(
                    session, rt.clock.now(), account_id, payload_for(test_tasks.SLOW_EFFECT, {"sleep_s": 1.0})
                ).id
            while await job_service.job_status(rt, in_flight) != JobStatus.IN_PROCESS:
                await asyncio.sleep(0.02)

            clients = [asyncio.create_task(client(kind)) for kind in ("push", "push", "push", "read", "read")]
            await asyncio.sleep(0.5)  # traffic answered 200 before the restart
            stopping = loop.time()
            await asyncio.to_thread(private_cluster.stop)  # fast shutdown: every connection of the service closed
            stopped = loop.time()
            await asyncio.sleep(OUTAGE_S)
            await asyncio.to_thread(private_cluster.start)  # returns once the server accepts connections
            started = loop.time()
            # Traffic goes on until requests sent after the restart have succeeded for a while (or the bound passes).
            while loop.time() - started < RECOVERY_BOUND_S + 1:
                if sum(1 for a in answers if a.sent >= started and a.status == 200) >= 20:
                    break
                await asyncio.sleep(0.1)
            traffic_over.set()
            await asyncio.gather(*clients)

            # A job enqueued after the restart is completed: the embedded worker resumed by itself.
            after = await _eventually(lambda: _committed_job(rt, account_id))
            after_enqueued = loop.time()
            deadline = loop.time() + 15
            await _completes(rt, after, deadline)
            after_completed = loop.time()
            # The worker listens again: its LISTEN connection is reopened (backing off up to wakeups.RECONNECT_MAX_S
            # while the server was down). Looked for now: the connection's own check (`SELECT 1`) replaces its query
            # text only after MARKETSYNC_DB_COMMAND_TIMEOUT_S (30 s by default).
            listening = 0
            while not listening and loop.time() < deadline:
                listening = await _listening_since_restart(private_cluster)
                await asyncio.sleep(0.1)
            listening_again = loop.time()
            await _completes(rt, in_flight, deadline)
            in_flight_completed = loop.time()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    log = (tmp_path / "serve.log").read_text(errors="replace")

    no_answer = [a for a in answers if a.status is None]
    assert not no_answer, f"requests without an answer within {REQUEST_TIMEOUT_S}s: {no_answer[:3]}"
    unexpected = [a for a in answers if a.status not in (200, 503)]
    assert not unexpected, f"answers other than 200 or 503: {unexpected[:3]}"
    assert '"unhandled_error"' not in log
    unavailable = [a for a in answers if a.status == 503]
    assert unavailable, "no request saw the outage"
    assert all(stopping <= a.answered for a in unavailable), "a 503 before the server was stopped"
    first_ok = {
        kind: min(
            (a.answered for a in answers if a.kind == kind and a.sent >= started and a.status == 200), default=None
        )
        for kind in ("push", "read")
    }
    for kind, at in first_ok.items():
        assert at is not None and at - started < RECOVERY_BOUND_S, f"{kind}: no 200 within {RECOVERY_BOUND_S}s"
    assert all(a.status == 200 for a in answers if a.sent >= started + RECOVERY_BOUND_S)

    # Never a partial write: every SKU holds one push's value (the pushes cut by the restart rolled back whole).
    quantities = {quantity for _price, quantity, _at in (await _eventually(lambda: stored(rt, account_id))).values()}
    assert len(quantities) == 1, quantities
    assert quantities <= {a.value for a in answers if a.kind == "push" and a.status in (200, 503)}
    # The job in flight ran again after the restart and wrote its effect once; the wake-up listener reconnected.
    assert await _eventually(lambda: _effect_written(rt, in_flight))
    assert listening >= 1, "no LISTEN connection was opened after the restart"

    def counted(kind: str, status: int) -> int:
        return sum(1 for a in answers if a.kind == kind and a.status == status)

    print(
        "FIGURES postgresql_restart"
        f" stop_s={stopped - stopping:.2f} down_s={started - stopped:.2f}"
        f" first_200_after_start_s=push:{first_ok['push'] - started:.2f},read:{first_ok['read'] - started:.2f}"
        f" pushes=200:{counted('push', 200)},503:{counted('push', 503)}"
        f" reads=200:{counted('read', 200)},503:{counted('read', 503)}"
        f" slowest_503_s={max(a.answered - a.sent for a in unavailable):.2f}"
        f" job_after_restart_enqueued_s={after_enqueued - started:.2f}"
        f" job_after_restart_completed_in_s={after_completed - after_enqueued:.2f}"
        f" job_in_flight_completed_s={in_flight_completed - started:.2f}"
        f" listening_again_s={listening_again - started:.2f}"
    )


async def _committed_job(rt: Runtime, account_id: str) -> str:
    async with rt.db.transaction() as session:
        job = job_service.enqueue(session, rt.clock.now(), account_id, payload_for(test_tasks.SLOW_EFFECT, {}))
    return job.id  # only once committed


async def _effect_written(rt: Runtime, job_id: str) -> bool:
    async with rt.db.read() as session:
        return await auth_repository.get_account_by_name(session, test_tasks.effect_name(job_id)) is not None
