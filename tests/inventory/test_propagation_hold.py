"""A propagation's PriceStockPush is held `propagation_hold_s` before a worker may take it (docs/decisions/0458): the
pushes that follow within it join the job, so a client pushing in a loop sends one feed per connection, not one per
push, even while the workers are idle."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from marketsync.jobs.worker import Worker
from marketsync.kit.clock import Clock, FrozenClock
from marketsync.runtime import Runtime
from tests.inventory.support import jobs_of, push_ok
from tests.marketplaces.support import listed_product, sandbox_listings
from tests.support.factories import make_tenant


@pytest.fixture
def clock() -> Clock:
    return FrozenClock()


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"propagation_hold_s": 1.0}


async def test_pushes_within_the_hold_join_one_job_per_connection_which_runs_once_it_passes(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    connection = tenant.marketplace("P1")
    for sku in ("HOLD-A", "HOLD-B"):
        await listed_product(rt, connection, sku)

    first = await push_ok(api, tenant, [{"Sku": "HOLD-A", "Quantity": 7}])
    clock.advance(seconds=0.5)
    second = await push_ok(api, tenant, [{"Sku": "HOLD-B", "Quantity": 8}, {"Sku": "HOLD-A", "Quantity": 9}])
    assert len(first["JobIds"]) == 1 and second["JobIds"] == first["JobIds"]

    await Worker(rt).drain()  # the hold has not passed: nothing is taken
    queued = await jobs_of(rt, tenant.account_id)
    assert sorted(job.id for job in queued) == sorted(first["JobIds"])
    assert {job.status for job in queued} == {"Published"}

    clock.advance(seconds=0.5)
    await Worker(rt).drain()
    assert {job.status for job in await jobs_of(rt, tenant.account_id)} == {"Completed"}
    remote = await sandbox_listings(rt, connection)
    assert (remote["HOLD-A"].quantity, remote["HOLD-B"].quantity) == (9, 8)  # the latest values, in one feed
    assert remote["HOLD-A"].feed_updates == remote["HOLD-B"].feed_updates == 1


async def test_the_hold_defaults_to_one_second() -> None:
    from marketsync.config import Settings

    assert Settings.model_fields["propagation_hold_s"].default == 1.0
