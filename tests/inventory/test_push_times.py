"""LastModifiedDate of a push's products, which the one-statement write builds in the stored form directly
(repository.stored_modification_times): one microsecond apart in SKU order from the push's time, also when the batch
crosses a second, on the one-statement write and on the isolated retry alike (docs/decisions/0020, 0240)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from marketsync.inventory import rules
from marketsync.inventory.repository import sqlite_time, stored_modification_times, write_time
from marketsync.kit.clock import FrozenClock
from marketsync.runtime import Runtime
from tests.inventory.support import add_products, drop_failure_trigger, install_failure_trigger, push_ok, stored
from tests.support.factories import make_tenant

# 200 microseconds before a second ends: a 500-SKU batch's times cross into the next second.
START = datetime(2026, 3, 1, 9, 0, 0, 999_800, tzinfo=UTC)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(START)


def test_the_stored_times_are_the_rules_times_in_both_stored_forms() -> None:
    for start in (START, START.replace(microsecond=0), datetime(2026, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)):
        times = rules.modification_times(start, 500)
        assert stored_modification_times(start, 500, postgres=True) == [write_time(t) for t in times]
        assert stored_modification_times(start, 500, postgres=False) == [sqlite_time(t) for t in times]


async def test_a_pushs_products_move_one_microsecond_apart_in_sku_order_across_a_second(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    tenant = await make_tenant(rt, api)
    skus = [f"T-{i:03d}" for i in range(500)]
    await add_products(rt, tenant.account_id, [(sku, "1", 1) for sku in reversed(skus)])

    body = await push_ok(api, tenant, [{"Sku": sku, "Quantity": 7} for sku in reversed(skus)])
    assert body["Updated"] == 500
    after = await stored(rt, tenant.account_id)
    assert [after[sku][2] for sku in skus] == rules.modification_times(START, 500)

    later = clock.advance(seconds=1)
    await install_failure_trigger(rt, skus[0])  # the isolated retry writes row by row
    try:
        body = await push_ok(api, tenant, [{"Sku": sku, "Quantity": 8} for sku in skus])
    finally:
        await drop_failure_trigger(rt)
    assert (body["Updated"], body["Failed"]) == (499, 1)
    after = await stored(rt, tenant.account_id)
    # Times are given before the write: the failed SKU's is left unused.
    assert [after[sku][2] for sku in skus[1:]] == rules.modification_times(later, 500)[1:]
    assert after[skus[0]][2] == START and later - START == timedelta(seconds=1)
