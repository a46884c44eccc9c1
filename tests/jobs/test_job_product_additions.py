"""Products added to a queued PriceStockPush as rows of their own (migration 0023, docs/decisions/0304): the job
sends them, a push adds only its own products whatever the job holds already, they go with their job, and going
back to 0022 folds them into the payloads, on both databases."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from sqlalchemy import delete, func, select

from marketsync import migrate
from marketsync.db import Database
from marketsync.jobs import repository
from marketsync.jobs import service as job_service
from marketsync.jobs.types import PriceStockPushPayload
from marketsync.kit.ids import new_id
from marketsync.models import Job, JobProductAddition
from marketsync.runtime import Runtime
from tests.inventory.support import FIXED_TIME, insert_accounts
from tests.support.databases import downgrade
from tests.support.factories import make_account, make_connection

ACCOUNT = "ACCT0".ljust(26, "0")


async def test_a_push_adds_only_its_own_products_the_queued_job_lacks(rt: Runtime) -> None:
    account_id = await make_account(rt)
    connection = await make_connection(rt, account_id, "P1", "UK")
    window = [[f"P-{n:05d}" for n in range(250 * push, 250 * push + 500)] for push in range(4)]  # overlapping
    async with rt.db.transaction() as session:
        job_id = await job_service.enqueue_price_stock_push(
            session, rt.clock.now(), account_id, connection.id, window[0]
        )
    for pushed in window[1:]:
        async with rt.db.transaction() as session:
            repeated = [*reversed(pushed), pushed[0]]  # a push names its products in any order, some twice
            assert (
                await job_service.enqueue_price_stock_push(session, rt.clock.now(), account_id, connection.id, repeated)
                == job_id
            )

    async with rt.db.read() as session:
        job = await repository.get_any(session, job_id)
        assert job is not None
        added = await repository.added_products(session, job_id)
        products = await job_service.price_stock_push_products(session, job_id, PriceStockPushPayload.of(job.payload))
    assert job.payload["ProductIds"] == window[0]  # never rewritten
    # A row per push: the products it named that the job did not hold yet, each once, sorted (docs/decisions/0461).
    assert added == [pushed[250:] for pushed in window[1:]]
    assert products == [f"P-{n:05d}" for n in range(1250)]  # what the job sends: each product once
    # While queued, the total counts the job's products, each once.
    assert (job.progress_done, job.progress_total) == (0, 1250)


async def _push(rt: Runtime, account_id: str, connection_id: str, products: list[str]) -> str:
    async with rt.db.transaction() as session:
        return await job_service.enqueue_price_stock_push(session, rt.clock.now(), account_id, connection_id, products)


async def _added_elsewhere(rt: Runtime, job_id: str, products: list[str]) -> None:
    """Products another process added to the queued job (its own commits: this process never saw them)."""
    async with rt.db.transaction() as session:
        addition = repository.Addition(new_id(), job_id, products)
        assert await repository.add_to_queued_jobs(session, [addition], rt.clock.now()) == {job_id}


async def _held(rt: Runtime, job_id: str) -> tuple[list[list[str]], int | None]:
    """The job's additions (sorted: two made in one millisecond have ids in either order) and its total."""
    async with rt.db.read() as session:
        job = await repository.get_any(session, job_id)
        assert job is not None
        return sorted(await repository.added_products(session, job_id)), job.progress_total


async def test_a_push_after_this_process_s_own_commit_knows_what_the_job_holds_without_reading_it(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The products the job held when this process last added to it are kept (docs/decisions/0468)."""
    account_id = await make_account(rt)
    connection = await make_connection(rt, account_id, "P1", "UK")
    job_id = await _push(rt, account_id, connection.id, ["P-0", "P-1"])
    await _push(rt, account_id, connection.id, ["P-1", "P-2"])

    def unread(_job: repository.QueuedJob) -> None:
        raise AssertionError("the job's products were read again")

    monkeypatch.setattr(repository.QueuedJob, "payload", property(unread))
    monkeypatch.setattr(repository.QueuedJob, "added", property(unread))
    assert await _push(rt, account_id, connection.id, ["P-2", "P-3"]) == job_id
    assert await _push(rt, account_id, connection.id, ["P-0", "P-3"]) == job_id  # holds them all: nothing written
    assert await _held(rt, job_id) == ([["P-2"], ["P-3"]], 4)


async def test_a_job_another_process_added_to_is_read_again(rt: Runtime) -> None:
    """What this process kept is a subset of what the job holds: another process's addition changed the job's total,
    so the push reads the job's products and adds only those it lacks, each once."""
    account_id = await make_account(rt)
    connection = await make_connection(rt, account_id, "P1", "UK")
    job_id = await _push(rt, account_id, connection.id, ["P-0", "P-1"])
    await _added_elsewhere(rt, job_id, ["P-2"])

    assert await _push(rt, account_id, connection.id, ["P-2", "P-3"]) == job_id

    assert await _held(rt, job_id) == ([["P-2"], ["P-3"]], 4)


async def test_a_push_rolled_back_leaves_nothing_known_of_its_products(rt: Runtime) -> None:
    """Only a commit tells what a job holds: a rolled-back push's products, were they kept, would match the total
    once another process added as many, and the next push would skip them (they would never be sent)."""
    account_id = await make_account(rt)
    connection = await make_connection(rt, account_id, "P1", "UK")
    job_id = await _push(rt, account_id, connection.id, ["P-0"])
    with pytest.raises(RuntimeError, match="rolled back"):
        async with rt.db.transaction() as session:
            await job_service.enqueue_price_stock_push(session, rt.clock.now(), account_id, connection.id, ["P-1"])
            raise RuntimeError("rolled back")
    await _added_elsewhere(rt, job_id, ["P-9"])  # the job now holds two products, as the rolled-back push would say

    assert await _push(rt, account_id, connection.id, ["P-1"]) == job_id

    async with rt.db.read() as session:
        job = await repository.get_any(session, job_id)
        assert job is not None
        products = await job_service.price_stock_push_products(session, job_id, PriceStockPushPayload.of(job.payload))
    assert sorted(products) == ["P-0", "P-1", "P-9"]  # each once (two additions of one millisecond: either order)


async def test_the_additions_go_with_their_job(rt: Runtime) -> None:
    account_id = await make_account(rt)
    connection = await make_connection(rt, account_id, "P1", "UK")
    for products in (["P-0"], ["P-1"], ["P-2"]):
        async with rt.db.transaction() as session:
            job_id = await job_service.enqueue_price_stock_push(
                session, rt.clock.now(), account_id, connection.id, products
            )
    async with rt.db.transaction() as session:
        assert (await session.execute(select(func.count()).select_from(JobProductAddition))).scalar_one() == 2
        await session.execute(delete(Job).where(Job.id == job_id))  # as the retention sweep deletes it
    async with rt.db.read() as session:
        assert (await session.execute(select(func.count()).select_from(JobProductAddition))).scalar_one() == 0


async def test_going_back_to_0022_folds_the_additions_into_the_payloads(empty_url: str) -> None:
    db = Database(empty_url)
    try:
        await migrate.upgrade(db)
        async with db.write_engine.connect() as conn:
            await insert_accounts(conn, [ACCOUNT])
            for job_id, products in (("J1", ["P-0", "P-1"]), ("J2", ["P-9"])):
                await conn.execute(
                    sa.insert(Job),
                    {
                        "id": job_id.ljust(26, "0"),
                        "account_id": ACCOUNT,
                        "type": "PriceStockPush",
                        "marketplace_id": "M".ljust(26, "0"),
                        "status": "Published",
                        "payload": {"MarketplaceId": "M".ljust(26, "0"), "ProductIds": products},
                        "progress_done": 0,
                        "progress_total": len(products),
                        "recovery_count": 0,
                        "run_after": FIXED_TIME,
                        "created_at": FIXED_TIME,
                        "updated_at": FIXED_TIME,
                    },
                )
            job = "J1".ljust(26, "0")
            additions = [("A1", ["P-2", "P-1"]), ("A2", ["P-3"])]
            rows = [{"job_id": job, "id": key.ljust(26, "0"), "product_ids": ids} for key, ids in additions]
            await conn.execute(sa.insert(JobProductAddition), rows)
            await conn.commit()

            await conn.run_sync(downgrade, "0022")
            tables = await conn.run_sync(lambda sync: set(sa.inspect(sync).get_table_names()))
            payloads = dict((await conn.execute(sa.text("SELECT id, payload FROM jobs ORDER BY id"))).all())
        assert "job_product_additions" not in tables
        products = {
            job_id[:2]: (json.loads(payload) if isinstance(payload, str) else payload)["ProductIds"]
            for job_id, payload in payloads.items()
        }
        assert products == {"J1": ["P-0", "P-1", "P-2", "P-3"], "J2": ["P-9"]}  # in order, each once
    finally:
        await db.dispose()
