"""The SDK's reconciliation helper converges on the service's catalogue from real deliveries (pushes, a file
import, a marketplace mirror), delivered out of order and twice, and from the ModifiedSince walk when a delivery
never arrives."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path

import httpx
from marketsync_client import InventoryMirror, webhooks
from marketsync_client.reconcile import Difference

from marketsync.inventory import service as inventory_service
from marketsync.jobs import service as jobs_service
from marketsync.marketplaces.sandbox import state as sandbox_state
from marketsync.runtime import Runtime
from tests.inventory.support import add_products, stored
from tests.marketplaces.support import enqueue, listed_product
from tests.support.factories import make_tenant
from tests.support.sdk import sdk
from tests.webhooks.receiver import Receiver
from tests.webhooks.support import pump, subscribe

SKUS = [f"R-{index:03d}" for index in range(40)]


async def test_the_mirror_converges_through_reordered_duplicated_and_missing_deliveries(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver, tmp_path: Path
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    p1 = tenant.marketplace("P1")
    await add_products(rt, tenant.account_id, [(sku, "10.00", 10) for sku in SKUS])
    await listed_product(rt, p1, "R-LISTED", price="8.00", quantity=4)
    secret = (await subscribe(api, tenant, receiver.url(), ["InventoryChanged", "OrdersDownloaded"]))["Secret"]
    reported: list[Difference] = []
    mirror = InventoryMirror(on_difference=reported.append)

    async with sdk(api, tenant) as client:
        first = await mirror.reconcile_async(client)
        assert first.walked == 41 and {sku: mirror.items[sku].quantity for sku in SKUS} == dict.fromkeys(SKUS, 10)
        assert mirror.cursor is not None and len(reported) == 41
        reported.clear()

        # 1. Two API pushes moving R-000 twice (5, then 3), and prices.
        await client.push_price_quantity(
            [{"Sku": "R-000", "Quantity": 5, "Price": Decimal("11.00")}, {"Sku": "R-001", "Price": Decimal("12.34")}]
        )
        await asyncio.sleep(0.01)  # the two changes are milliseconds apart, as event times can tell
        await client.push_price_quantity([{"Sku": "R-000", "Quantity": 3}, {"Sku": "R-002", "Quantity": 0}])
        # 2. A file import (channel FileImport).
        csv_file = tmp_path / "stock.csv"
        csv_file.write_text("Sku,Price,Quantity\nR-010,20.00,1\nR-011,,7\nR-012,0.99,\n")
        await inventory_service.import_inventory_file(rt, tenant.account_id, csv_file)
        # 3. A change made at the marketplace, mirrored back (writer MasterMirror): the marketplace owns both values.
        async with rt.db.transaction() as session:
            for kind in ("Price", "Stock"):
                await inventory_service.set_data_owner(rt, session, tenant.account_id, kind, "Marketplace")
            seller = await sandbox_state.ensure_seller(session, p1.id, p1.platform, p1.country, rt.clock.now())
            await sandbox_state.put_listing(
                session, seller, rt.clock.now(), sku="R-LISTED", price=Decimal("9.50"), quantity=2
            )
        mirror_job = await enqueue(rt, tenant.account_id, "ListingMirror", {"MarketplaceId": p1.id})
        assert (await jobs_service.run_now(rt, mirror_job))[0] == "Completed"

        await pump(rt, lambda: len(receiver.received) >= 4)
        deliveries = [webhooks.construct_event(secret, r.headers, r.body) for r in receiver.received]
        events = sorted((d.event.occurredAt, d) for d in deliveries if isinstance(d.event, webhooks.InventoryChanged))
        push_1, push_2, imported, mirrored = (delivery for _at, delivery in events)
        assert [d.event.source.channel for d in (push_1, push_2, imported, mirrored)] == [
            "Api",
            "Api",
            "FileImport",
            "Marketplace",
        ]

        # Newest first, then everything again: each applied once, and R-000 stays at its newest quantity.
        for delivery in [mirrored, push_2, push_1, push_2, mirrored, push_1]:
            mirror.apply_delivery(delivery)
        assert mirror.duplicates == 3
        assert (mirror.items["R-000"].quantity, mirror.items["R-000"].price) == (3, Decimal("11.00"))
        assert (mirror.items["R-LISTED"].quantity, mirror.items["R-LISTED"].price) == (2, Decimal("9.50"))
        assert [d.sku for d in reported if d.source == "event"] == ["R-LISTED", "R-000", "R-002", "R-000", "R-001"]
        assert mirror.uncertain == set()

        # The file import's delivery never arrives: the walk finds its stock changes (it cannot show prices).
        assert mirror.items["R-010"].quantity == 10
        reported.clear()
        second = await mirror.reconcile_async(client)
        assert {(d.sku, d.quantity) for d in second.differences} == {("R-010", 1), ("R-011", 7)}
        assert all(d.source == "walk" for d in second.differences) and reported == second.differences

        held = {sku: item.quantity for sku, item in mirror.items.items()}
        service = await stored(rt, tenant.account_id)
        assert held == {sku: quantity for sku, (_price, quantity, _at) in service.items()}
        for sku in ("R-000", "R-001", "R-LISTED"):
            assert mirror.items[sku].price == service[sku][0], sku
        assert mirror.items["R-012"].price is None  # only the lost delivery carried it

        # The late delivery is still welcome: its prices are applied, its quantities already held.
        late = mirror.apply_delivery(imported)
        assert {(d.sku, d.price, d.quantity) for d in late} == {
            ("R-010", Decimal("20.00"), None),
            ("R-012", Decimal("0.99"), None),
        }
        # Converged: another pass finds nothing to change.
        assert (await mirror.reconcile_async(client)).differences == []
