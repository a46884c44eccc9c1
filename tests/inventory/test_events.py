"""InventoryChanged in the outbox, byte for byte against spec §6, with a frozen clock."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import httpx
import pytest

from marketsync.inventory.service import ChangeSource, SkuChange, apply_inventory_changes
from marketsync.kit.clock import Clock, FrozenClock
from marketsync.runtime import Runtime
from tests.inventory.support import add_products, inventory_events, payloads, push_ok
from tests.support.factories import make_tenant

NOW = datetime(2026, 3, 1, 12, 30, 45, 123456, tzinfo=UTC)


@pytest.fixture
def clock() -> Clock:
    return FrozenClock(NOW)


async def test_api_push_event_bytes(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("b-2", "5", 0), ("A-1", "1.25", 3), ("c-3", "9", 9)])

    await push_ok(
        api,
        tenant,
        [
            {"Sku": "b-2", "Quantity": 0, "Price": 6},
            {"Sku": "A-1", "Price": 1.3, "Quantity": 0},
            {"Sku": "c-3", "Price": 9, "Quantity": 9},
        ],
    )

    [event] = await inventory_events(rt, tenant.account_id)
    assert event.type == "InventoryChanged"
    assert event.occurred_at == NOW
    assert event.body == (
        b'{"occurredAt":"2026-03-01T12:30:45.123Z",'
        b'"source":{"writer":"MerchantPush","channel":"Api","userPlatformId":null},'
        b'"changed":[{"sku":"A-1","price":1.3,"quantity":0},{"sku":"b-2","price":6.0,"quantity":null}],'
        b'"truncated":false,"totalChanged":2}'
    )


async def test_mirror_batch_above_500_is_truncated(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    ids = await add_products(rt, tenant.account_id, [(f"SKU-{i:04d}", "1", 1) for i in range(620)])
    source = ChangeSource(writer="MasterMirror", channel="Marketplace", user_platform_id=tenant.marketplace("P1").id)
    changes = [SkuChange(product_id, Decimal("2"), None) for product_id in ids.values()]
    changes.append(SkuChange("01J00000000000000000000000", Decimal("3"), 3))  # unknown id: ignored

    async with rt.db.transaction() as session:
        applied = await apply_inventory_changes(rt, session, tenant.account_id, changes, source)

    assert len(applied) == 620
    [event] = payloads(await inventory_events(rt, tenant.account_id))
    assert event["source"] == {
        "writer": "MasterMirror",
        "channel": "Marketplace",
        "userPlatformId": tenant.marketplace("P1").id,
    }
    assert event["truncated"] is True and event["totalChanged"] == 620
    assert len(event["changed"]) == 500
    assert [entry["sku"] for entry in event["changed"]] == [f"SKU-{i:04d}" for i in range(500)]
    assert event["changed"][0] == {"sku": "SKU-0000", "price": 2.0, "quantity": None}

    async with rt.db.transaction() as session:
        again = await apply_inventory_changes(rt, session, tenant.account_id, changes, source)
    assert again == []
    assert len(await inventory_events(rt, tenant.account_id)) == 1, "nothing moved: no event"


async def test_event_rolls_back_with_the_change(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    ids = await add_products(rt, tenant.account_id, [("R", "1", 1)])
    source = ChangeSource(writer="MerchantPush", channel="Api")

    with pytest.raises(RuntimeError):
        async with rt.db.transaction() as session:
            await apply_inventory_changes(rt, session, tenant.account_id, [SkuChange(ids["R"], None, 5)], source)
            raise RuntimeError("the caller's transaction fails after the change")

    assert await inventory_events(rt, tenant.account_id) == []
