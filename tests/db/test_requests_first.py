"""Requests first (marketsync/db/_requests_first.py): with the workers in the API's process, background work opens its
next transaction once the requests in flight are answered (or after a bounded wait), and SQLite's one writer goes
to a request before background work queued earlier."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import exc as sa_exc
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.app import create_app
from marketsync.db import Database, hold_locks_requests_take, session_driver
from marketsync.db._requests_first import (
    FOLLOW_UP_GRACE_S,
    STATEMENT_MAX_WAIT_S,
    RequestsFirst,
    WriterTurns,
    mark_background,
)
from marketsync.jobs import repository as job_repository
from marketsync.jobs import service as job_service
from marketsync.jobs.types import JobType
from marketsync.runtime import Runtime
from tests.support.factories import make_account, make_connection
from tests.support.server import serve

# Long enough that only the end of the request, never the bound, lets the background work through.
HELD_S = 5.0


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"requests_first_max_wait_s": HELD_S}


def in_background(work: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
    """A task marked as the worker's loop marks what it starts."""

    async def run() -> None:
        mark_background()
        await work()

    return asyncio.create_task(run())


async def settled() -> None:
    """Let every ready task run until it waits on something that has not happened yet."""
    for _ in range(20):
        await asyncio.sleep(0)
    await asyncio.sleep(0.05)


class HeldRequest:
    """A real HTTP request to the service's app, answered only when released."""

    def __init__(self, client: httpx.AsyncClient, release: asyncio.Event) -> None:
        self.release = release
        self.task = asyncio.create_task(client.get("/test/held"))


@pytest.fixture
async def held(rt: Runtime) -> AsyncIterator[Callable[[], Awaitable[HeldRequest]]]:
    app = create_app(rt)
    release = asyncio.Event()

    @app.get("/test/held")
    async def held_route() -> dict[str, str]:
        await release.wait()
        return {"status": "answered"}

    async with serve(app) as base_url, httpx.AsyncClient(base_url=base_url, timeout=30) as client:

        async def start() -> HeldRequest:
            request = HeldRequest(client, release)
            while rt.db.requests_first.in_flight == 0:
                await asyncio.sleep(0.005)
            return request

        yield start
        release.set()


async def test_background_work_opens_its_transaction_once_the_request_in_flight_is_answered(
    rt: Runtime, held: Callable[[], Awaitable[HeldRequest]]
) -> None:
    request = await held()
    done: list[str] = []

    async def write() -> None:
        async with rt.db.transaction() as session:
            await session.execute(text("SELECT 1"))
        done.append("background")

    background = in_background(write)
    await settled()
    assert done == [], "background work opened a transaction while a request was in flight"

    request.release.set()
    response = await request.task
    await asyncio.wait_for(background, 10)
    assert response.json() == {"status": "answered"}
    assert done == ["background"]
    assert rt.db.requests_first.in_flight == 0


async def test_background_python_pauses_between_its_stretches_until_the_request_in_flight_is_answered(
    rt: Runtime, held: Callable[[], Awaitable[HeldRequest]]
) -> None:
    """A long loop outside the database (a coalesced feed's lines) lets the request go first between stretches."""
    request = await held()
    stretches: list[str] = []

    async def two_stretches() -> None:
        stretches.append("first")
        await rt.db.requests_first.pause()
        stretches.append("second")

    background = in_background(two_stretches)
    await settled()
    assert stretches == ["first"], "background Python went on while a request was in flight"

    request.release.set()
    await request.task
    await asyncio.wait_for(background, 10)
    assert stretches == ["first", "second"]


async def test_a_pause_inside_a_database_use_or_outside_the_worker_never_waits(
    rt: Runtime, held: Callable[[], Awaitable[HeldRequest]]
) -> None:
    """Inside a transaction the work may hold what the request needs; outside the worker it is the request's own."""
    entered, request_started = asyncio.Event(), asyncio.Event()

    async def pause_inside_a_read() -> None:
        async with rt.db.read() as session:
            await session.execute(text("SELECT 1"))
            entered.set()
            await request_started.wait()
            await rt.db.requests_first.pause()

    background = in_background(pause_inside_a_read)
    await entered.wait()
    request = await held()
    await asyncio.wait_for(rt.db.requests_first.pause(), 1)  # not background
    request_started.set()
    await asyncio.wait_for(background, 2)
    assert rt.db.requests_first.in_flight == 1
    request.release.set()
    await request.task


async def test_requests_and_work_outside_the_worker_never_wait(
    rt: Runtime, held: Callable[[], Awaitable[HeldRequest]]
) -> None:
    request = await held()
    async with rt.db.transaction() as session:  # not background: the API's own work, a CLI command, a test
        assert (await session.execute(text("SELECT 1"))).scalar_one() == 1
    async with rt.db.read() as session:
        assert (await session.execute(text("SELECT 2"))).scalar_one() == 2
    request.release.set()
    await request.task


@pytest.mark.parametrize("backend", ["sqlite"])
async def test_on_sqlite_background_work_inside_its_transaction_goes_on_while_a_request_is_in_flight(
    rt: Runtime, held: Callable[[], Awaitable[HeldRequest]]
) -> None:
    """It may hold the writer the request needs: its nested reads and statements never wait."""
    entered = asyncio.Event()
    request_started = asyncio.Event()
    read_back: list[int] = []

    async def transaction_then_nested_read() -> None:
        async with rt.db.transaction() as session:
            await session.execute(text("SELECT 1"))
            entered.set()
            await request_started.wait()
            async with rt.db.read() as nested:
                read_back.append((await nested.execute(text("SELECT 7"))).scalar_one())

    background = in_background(transaction_then_nested_read)
    await entered.wait()
    request = await held()
    request_started.set()
    await asyncio.wait_for(background, 10)
    assert read_back == [7]
    request.release.set()
    await request.task


async def select_one(session: AsyncSession) -> None:
    await session.execute(text("SELECT 1"))


async def second_statement_during_a_request(
    rt: Runtime,
    held: Callable[[], Awaitable[HeldRequest]],
    first: Callable[[AsyncSession], Awaitable[None]] = select_one,
) -> tuple[asyncio.Task[None], HeldRequest, list[str]]:
    """A background transaction that runs `first`, then its second statement while a request is in flight: the
    background task, the request, and the list the second statement's end is noted in."""
    entered, go = asyncio.Event(), asyncio.Event()
    done: list[str] = []

    async def two_statements() -> None:
        async with rt.db.transaction() as session:
            await first(session)
            entered.set()
            await go.wait()
            await session.execute(text("SELECT 2"))
            done.append("second statement")

    background = in_background(two_statements)
    await entered.wait()
    request = await held()
    go.set()
    return background, request, done


async def waits_for_the_request_s_end(background: asyncio.Task[None], request: HeldRequest, done: list[str]) -> None:
    """The background transaction's second statement waited until the request was answered, then ran."""
    await settled()
    assert done == [], "a background statement ran while a request was in flight"
    request.release.set()
    await request.task
    await asyncio.wait_for(background, 10)
    assert done == ["second statement"]


async def ends_while_the_request_is_in_flight(
    rt: Runtime, background: asyncio.Task[None], request: HeldRequest, done: list[str]
) -> None:
    """The background transaction's second statement ran, and it ended, before the request was answered."""
    await asyncio.wait_for(background, 2)
    assert done == ["second statement"]
    assert rt.db.requests_first.in_flight == 1, "the statement waited for the request's end"
    request.release.set()
    await request.task


@pytest.mark.parametrize("backend", ["postgresql"])
async def test_on_postgresql_background_work_waits_before_each_statement_while_a_request_is_in_flight(
    rt: Runtime, held: Callable[[], Awaitable[HeldRequest]]
) -> None:
    """No single writer there: the loop, not a lock, is what a request waits for, so background statements wait too."""
    rt.db.requests_first.statement_max_wait_s = HELD_S
    await waits_for_the_request_s_end(*await second_statement_during_a_request(rt, held))


@pytest.mark.parametrize("backend", ["postgresql"])
async def test_on_postgresql_background_statements_on_the_raw_driver_wait_too(
    rt: Runtime, held: Callable[[], Awaitable[HeldRequest]]
) -> None:
    """The hot paths' hand-written statements (session_driver: a job's recorded values, the sandbox's feed) wait for
    the request in flight as SQLAlchemy's do (docs/decisions/0452)."""
    rt.db.requests_first.statement_max_wait_s = HELD_S
    entered, go = asyncio.Event(), asyncio.Event()
    done: list[str] = []

    async def two_statements() -> None:
        async with rt.db.transaction() as session:
            driver = await session_driver(session)
            await driver.fetch("SELECT 1", ())
            entered.set()
            await go.wait()
            await driver.fetch("SELECT 2", ())
            done.append("second statement")

    background = in_background(two_statements)
    await entered.wait()
    request = await held()
    go.set()
    await settled()
    assert done == [], "a raw background statement ran while a request was in flight"
    request.release.set()
    await request.task
    await asyncio.wait_for(background, 10)
    assert done == ["second statement"]


@pytest.mark.parametrize("backend", ["postgresql"])
async def test_on_postgresql_a_background_statement_waits_no_longer_than_its_own_bound(
    rt: Runtime, held: Callable[[], Awaitable[HeldRequest]]
) -> None:
    """Inside a transaction it may hold a row lock the request needs: it waits 25 ms at most, not the bound."""
    assert rt.db.requests_first.statement_max_wait_s == STATEMENT_MAX_WAIT_S < HELD_S
    await ends_while_the_request_is_in_flight(rt, *await second_statement_during_a_request(rt, held))


async def queued_push(rt: Runtime) -> tuple[str, str]:
    """A queued PriceStockPush: (account id, connection id)."""
    account_id = await make_account(rt)
    connection = await make_connection(rt, account_id, "P1", "UK")
    async with rt.db.transaction() as session:
        await job_service.enqueue_price_stock_push(session, rt.clock.now(), account_id, connection.id, ["P-0"])
    return account_id, connection.id


async def claims(rt: Runtime, session: AsyncSession) -> None:
    assert await job_repository.claim_next(session, "w", rt.clock.now(), 30, [JobType.PRICE_STOCK_PUSH]) is not None


async def extends(rt: Runtime, session: AsyncSession) -> None:
    account_id, connection_id = await queued_push(rt)
    queued = await job_repository.queued_never_started(session, account_id, [connection_id], JobType.PRICE_STOCK_PUSH)
    assert list(queued) == [connection_id]


@pytest.mark.parametrize("backend", ["postgresql"])
@pytest.mark.parametrize("locks", [claims, extends], ids=["a claim", "a push's queued-job lock read"])
async def test_on_postgresql_background_work_holding_locks_requests_take_never_waits_for_the_request_in_flight(
    rt: Runtime,
    held: Callable[[], Awaitable[HeldRequest]],
    locks: Callable[[Runtime, AsyncSession], Awaitable[None]],
) -> None:
    """A request may be waiting for those locks (a push extending the job a claim locked): waiting for it would hold
    it back until the bound, 25 ms a statement (docs/decisions/0468)."""
    rt.db.requests_first.statement_max_wait_s = HELD_S
    if locks is claims:
        await queued_push(rt)

    async def first(session: AsyncSession) -> None:
        await locks(rt, session)

    await ends_while_the_request_is_in_flight(rt, *await second_statement_during_a_request(rt, held, first))


@pytest.mark.parametrize("backend", ["postgresql"])
async def test_on_postgresql_background_work_that_only_wrote_still_waits_for_the_request_in_flight(
    rt: Runtime, held: Callable[[], Awaitable[HeldRequest]]
) -> None:
    """A write of rows no request locks (a mirror's page, a feed's lines) keeps the loop for the request (0468)."""
    rt.db.requests_first.statement_max_wait_s = HELD_S
    account_id = await make_account(rt)

    async def writes(session: AsyncSession) -> None:
        await session.execute(text("UPDATE accounts SET name = name WHERE id = :id"), {"id": account_id})

    await waits_for_the_request_s_end(*await second_statement_during_a_request(rt, held, writes))


@pytest.mark.parametrize("backend", ["postgresql"])
async def test_on_postgresql_a_request_waiting_for_a_row_a_background_transaction_locked_is_not_held_back(
    rt: Runtime,
) -> None:
    """A real request (over HTTP) that locks the row a background transaction of the same process holds is answered
    as soon as that transaction ends, not after the background statements' waits (0468)."""
    rt.db.requests_first.statement_max_wait_s = HELD_S
    account_id = await make_account(rt)
    app = create_app(rt)
    locked, go = asyncio.Event(), asyncio.Event()

    @app.get("/test/lock")
    async def lock_route() -> dict[str, str]:
        async with rt.db.transaction() as session:
            await session.execute(text("SELECT id FROM accounts WHERE id = :id FOR UPDATE"), {"id": account_id})
        return {"status": "locked"}

    async def background_claim() -> None:
        async with rt.db.transaction() as session:
            await session.execute(text("SELECT id FROM accounts WHERE id = :id FOR UPDATE"), {"id": account_id})
            await hold_locks_requests_take(session)  # as a claim does (jobs/repository.py)
            locked.set()
            await go.wait()
            for _ in range(3):  # a claim's later statements
                await session.execute(text("UPDATE accounts SET name = name WHERE id = :id"), {"id": account_id})

    background = in_background(background_claim)
    await locked.wait()
    async with serve(app) as base_url, httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        request = asyncio.create_task(client.get("/test/lock"))
        while rt.db.requests_first.in_flight == 0:
            await asyncio.sleep(0.005)
        go.set()
        answer = await asyncio.wait_for(request, 2)
    assert answer.status_code == 200 and answer.json() == {"status": "locked"}
    await asyncio.wait_for(background, 2)


@pytest.mark.parametrize("backend", ["postgresql"])
async def test_on_postgresql_a_transaction_that_held_locks_leaves_the_next_one_waiting_as_before(
    rt: Runtime, held: Callable[[], Awaitable[HeldRequest]]
) -> None:
    """The note that a transaction holds locks requests take ends with it: the same connection's next background
    transaction waits again (the pool has one connection in use at a time here)."""
    account_id = await make_account(rt)

    async def write_and_commit() -> None:
        async with rt.db.transaction() as session:
            await session.execute(text("SELECT id FROM accounts WHERE id = :id FOR UPDATE"), {"id": account_id})
            await hold_locks_requests_take(session)

    await asyncio.wait_for(in_background(write_and_commit), 5)
    await test_on_postgresql_background_work_waits_before_each_statement_while_a_request_is_in_flight(rt, held)


@pytest.mark.parametrize("settings_overrides", [{"requests_first_max_wait_s": 0.02}])
async def test_background_work_waits_no_longer_than_the_bound(
    rt: Runtime, held: Callable[[], Awaitable[HeldRequest]]
) -> None:
    """A steady stream of requests cannot starve the workers."""
    request = await held()

    async def read() -> None:
        async with rt.db.read() as session:
            await session.execute(text("SELECT 1"))

    await asyncio.wait_for(in_background(read), 10)
    assert rt.db.requests_first.in_flight == 1, "the background read finished before the request was answered"
    request.release.set()
    await request.task


async def test_every_answer_ends_its_count_errors_and_refusals_included(rt: Runtime, api: httpx.AsyncClient) -> None:
    for response in (
        await api.get("/healthz"),
        await api.get("/api/no-such-thing"),
        await api.post("/api/products/List", content=b"x", headers={"Content-Type": "text/plain"}),
        await api.get("/api/marketplaces"),  # 401: no token
    ):
        assert response.status_code in (200, 401, 404, 415)
    assert rt.db.requests_first.in_flight == 0


def sqlite_database(path: Path, max_wait_s: float) -> Database:
    return Database(f"sqlite:///{path / 'turns.db'}", requests_first_max_wait_s=max_wait_s)


async def writers_in_order(db: Database, *, before_request: Callable[[], Awaitable[None]]) -> list[str]:
    """A background transaction holds SQLite's writer; another background one queues, then a request's. The order
    in which the two queued ones get the writer once the first commits."""
    order: list[str] = []
    holding, release = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with db.transaction() as session:
            await session.execute(text("SELECT 1"))
            holding.set()
            await release.wait()

    async def write(name: str) -> None:
        async with db.transaction() as session:
            await session.execute(text("INSERT INTO t (name) VALUES (:name)"), {"name": name})
            order.append(name)

    holder = in_background(hold)
    await holding.wait()
    queued_background = in_background(lambda: write("background"))
    await settled()
    await before_request()
    request = asyncio.create_task(write("request"))
    await settled()
    release.set()
    await asyncio.wait_for(asyncio.gather(holder, queued_background, request), 10)
    return order


async def with_table(db: Database) -> Database:
    async with db.transaction() as session:
        await session.execute(text("CREATE TABLE t (name TEXT)"))
    return db


async def test_on_sqlite_a_request_takes_the_writer_before_background_work_queued_earlier(tmp_path: Path) -> None:
    db = await with_table(sqlite_database(tmp_path, HELD_S))
    try:
        assert await writers_in_order(db, before_request=settled) == ["request", "background"]
        async with db.read() as session:
            assert (await session.execute(text("SELECT count(*) FROM t"))).scalar_one() == 2
    finally:
        await db.dispose()


async def test_on_sqlite_background_work_waiting_longer_than_the_bound_goes_first(tmp_path: Path) -> None:
    db = await with_table(sqlite_database(tmp_path, 0.01))
    try:
        assert await writers_in_order(db, before_request=lambda: asyncio.sleep(0.05)) == ["background", "request"]
    finally:
        await db.dispose()


async def test_on_sqlite_a_request_never_waits_behind_background_work_queued_after_it(tmp_path: Path) -> None:
    """Four background loops each open their next transaction as soon as the last commits, every one holding the
    writer longer than the bound (listing mirrors of 100,000 listings did): a request still gets the writer after at
    most the holder and the three queued before it. It once waited for all of them, its whole 60 s, and got a 503."""
    db = await with_table(sqlite_database(tmp_path, 0.01))
    commits: list[str] = []
    stop = asyncio.Event()

    async def mirror(name: str) -> None:
        while not stop.is_set():
            async with db.transaction() as session:
                await session.execute(text("INSERT INTO t (name) VALUES (:name)"), {"name": name})
                await asyncio.sleep(0.03)
            commits.append(name)

    mirrors = [in_background(lambda name=f"mirror-{n}": mirror(name)) for n in range(4)]
    try:
        await asyncio.sleep(0.3)  # every mirror has by now waited longer than the bound for its turn
        arrived = len(commits)
        async with asyncio.timeout(10), db.transaction() as session:
            await session.execute(text("INSERT INTO t (name) VALUES ('request')"))
        commits.append("request")
        assert len(commits) - 1 - arrived <= 4, commits[arrived:]
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(*mirrors), 10)
        await db.dispose()


async def test_with_no_wait_allowed_the_writer_is_first_come_first_served(tmp_path: Path) -> None:
    db = await with_table(sqlite_database(tmp_path, 0.0))
    try:
        assert await writers_in_order(db, before_request=settled) == ["background", "request"]
    finally:
        await db.dispose()


async def test_a_writer_that_does_not_come_free_in_time_is_a_timeout() -> None:
    """The same error the one-connection pool gave (answered 503, retryable, by the middleware)."""
    turns = WriterTurns(timeout_s=0.05, background_max_wait_s=0.01)
    await turns.acquire()
    with pytest.raises(sa_exc.TimeoutError):
        await turns.acquire()
    turns.release()
    await asyncio.wait_for(turns.acquire(), 1)  # free again: nobody is left waiting


async def test_a_waiter_cancelled_as_it_is_handed_the_writer_hands_it_on() -> None:
    turns = WriterTurns(timeout_s=10, background_max_wait_s=0.01)
    await turns.acquire()
    first = asyncio.create_task(turns.acquire())
    second = asyncio.create_task(turns.acquire())
    await settled()
    turns.release()  # handed to `first`...
    first.cancel()  # ...which is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.wait_for(second, 1)
    turns.release()
    await asyncio.wait_for(turns.acquire(), 1)


async def test_background_work_lets_a_follow_up_request_go_first() -> None:
    """A client sending request after request on one connection has its next one in just after an answer: background
    work waits FOLLOW_UP_GRACE_S after the last answer, and a request whose task is already queued when the wait ends
    is counted before background work goes on (docs/decisions/0456)."""
    requests_first = RequestsFirst(5.0)
    loop = asyncio.get_running_loop()
    order: list[str] = []

    requests_first.request_started()
    requests_first.request_ended()
    answered_at = loop.time()

    async def background() -> None:
        await requests_first.pause()
        order.append("background")

    async def follow_up() -> None:
        requests_first.request_started()
        order.append("request started")
        await asyncio.sleep(0.05)
        order.append("request answered")
        requests_first.request_ended()

    waiting = in_background(background)
    await asyncio.sleep(0)
    assert order == [], "background work went on right after an answer"
    await asyncio.wait_for(waiting, 5)
    assert loop.time() - answered_at >= FOLLOW_UP_GRACE_S * 0.9
    assert order == ["background"]

    # Both queued in the same turn of the loop, background work first: the request still goes first.
    order.clear()
    waiting = in_background(background)
    request = asyncio.create_task(follow_up())
    await asyncio.wait_for(asyncio.gather(waiting, request), 5)
    assert order == ["request started", "request answered", "background"]
