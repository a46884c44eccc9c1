"""The listing & stock mirror: listings map, LastPull progress, and the drift the push warns about."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import httpx
import pytest

from marketsync.inventory import mirror, tasks
from marketsync.inventory import service as inventory_service
from marketsync.jobs import service as jobs_service
from marketsync.jobs.worker import Worker
from marketsync.marketplaces.connector import ListingPage
from marketsync.marketplaces.sandbox import state as sandbox_state
from marketsync.marketplaces.sandbox.connector import SandboxConnector
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime
from tests.inventory.support import jobs_of, statements_of
from tests.marketplaces import support
from tests.marketplaces.sides import Side
from tests.support.factories import make_tenant


async def _sandbox_set(
    rt: Runtime, connection: MarketplaceConnection, sku: str, price: str | None = None, quantity: int | None = None
) -> None:
    """What `marketsync sandbox set` does: a change made at the marketplace."""
    async with rt.db.transaction() as session:
        seller = await sandbox_state.ensure_seller(
            session, connection.id, connection.platform, connection.country, rt.clock.now()
        )
        await sandbox_state.put_listing(
            session, seller, rt.clock.now(), sku=sku, price=None if price is None else Decimal(price), quantity=quantity
        )


async def _set_owner(rt: Runtime, account_id: str, kind: str, owner: str) -> None:
    async with rt.db.transaction() as session:
        await inventory_service.set_data_owner(rt, session, account_id, kind, owner)


async def _mirror_now(rt: Runtime, connection: MarketplaceConnection) -> str:
    job_id = await support.enqueue(rt, connection.account_id, "ListingMirror", {"MarketplaceId": connection.id})
    status, _ = await jobs_service.run_now(rt, job_id)
    assert status == "Completed"
    return job_id


@pytest.mark.parametrize("side", ["P1", "Amazon"], indirect=True)
async def test_drift_pushed_value_is_overwritten_by_the_owning_marketplace(
    rt: Runtime, api: httpx.AsyncClient, side: Side
) -> None:
    tenant = await make_tenant(rt, api)
    p1 = await side.connect(tenant.account_id)
    product = await side.listed_product(p1, "DRIFT-1", price="10.00", quantity=5)
    await _set_owner(rt, tenant.account_id, "Price", "Marketplace")
    await _set_owner(rt, tenant.account_id, "Stock", "Merchant")

    pushed = await api.post(
        "/api/inventory/price-quantity",
        json={"Items": [{"Sku": "DRIFT-1", "Price": 15, "Quantity": 6}]},
        headers=tenant.headers,
    )
    assert pushed.status_code == 200, pushed.text
    assert pushed.json()["Results"] == [{"Sku": "DRIFT-1", "Result": "Updated"}]
    assert pushed.json()["Warnings"], "the push warns that the marketplace owns Price"

    # Meanwhile the merchant changes the price in the marketplace's own tools.
    await side.set_listing(p1, "DRIFT-1", price="11.00", quantity=2)
    await _mirror_now(rt, p1)

    stored = await support.product(rt, product.id)
    assert stored.price == Decimal("11.00")  # the marketplace owns Price: its value wins
    assert stored.quantity == 6  # the merchant owns Stock: the marketplace's 2 is not mirrored
    changed = await support.events(rt, tenant.account_id, "InventoryChanged")
    assert [e["payload"]["source"] for e in changed] == [
        {"writer": "MerchantPush", "channel": "Api", "userPlatformId": None},
        {"writer": "MasterMirror", "channel": "Marketplace", "userPlatformId": p1.id},
    ]
    mirrored = changed[1]["payload"]
    assert [c["sku"] for c in mirrored["changed"]] == ["DRIFT-1"]
    assert Decimal(str(mirrored["changed"][0]["price"])) == Decimal("11")
    assert mirrored["changed"][0]["quantity"] is None
    assert mirrored["totalChanged"] == 1 and mirrored["truncated"] is False

    # Mirroring again changes nothing and is silent.
    await _mirror_now(rt, p1)
    assert len(await support.events(rt, tenant.account_id, "InventoryChanged")) == 2
    ours = await support.our_listing(rt, p1, product.id)
    assert ours is not None and (ours.marketplace_price, ours.marketplace_quantity) == (Decimal("11.00"), 2)


async def test_mirror_fills_the_listings_map_and_reports_last_pull(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P2", "DE"),))
    p2 = tenant.marketplace("P2")
    await _set_owner(rt, tenant.account_id, "Price", "Merchant")
    await _set_owner(rt, tenant.account_id, "Stock", "Merchant")
    # Listed here but not yet known at the marketplace; and a listing made in the marketplace's tools.
    await support.listed_product(rt, p2, "MAP-1", at_marketplace=False)
    await _sandbox_set(rt, p2, "map-1", price="9.50", quantity=3)  # case differs: still that product
    await _sandbox_set(rt, p2, "NOT-IN-CATALOGUE", price="1.00", quantity=1)

    await _mirror_now(rt, p2)

    response = await api.get("/api/products/MAP-1", headers=tenant.headers)
    assert response.status_code == 200, response.text
    [listing] = response.json()["Product"]["Listings"]
    assert listing["Platform"] == "P2" and listing["ListingId"].startswith("P2DE-L")
    assert listing["ExternalSku"] == "map-1"
    assert listing["ListingUrl"].startswith("https://p2.sandbox.invalid/de/item/")
    marketplaces = (await api.get("/api/marketplaces", headers=tenant.headers)).json()["Marketplaces"]
    assert marketplaces[0]["LastPull"] == {"Status": "Completed", "TotalSkus": 2, "CurrentSku": 2}
    assert await support.events(rt, tenant.account_id, "InventoryChanged") == []


async def test_mirror_reports_progress_page_by_page(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P3", "US"),))
    p3 = tenant.marketplace("P3")
    async with rt.db.transaction() as session:
        seller = await sandbox_state.ensure_seller(session, p3.id, "P3", "US", rt.clock.now())
        known = [
            sandbox_state.KnownListing(f"BULK-{i:04d}", None, None, None, None, Decimal("2.00"), 1)
            for i in range(mirror.LISTING_PAGE + 5)
        ]
        await sandbox_state.seed_listings(session, seller, rt.clock.now(), known)

    await tasks.schedule_listing_mirrors(rt)
    await Worker(rt).drain()

    async with rt.db.read() as session:
        stored = await session.get(MarketplaceConnection, p3.id)
        assert stored is not None
        assert (stored.last_pull_status, stored.last_pull_total_skus, stored.last_pull_current_sku) == (
            "Completed",
            mirror.LISTING_PAGE + 5,
            mirror.LISTING_PAGE + 5,
        )


async def test_a_remirror_keeps_known_listings_and_maps_new_ones_in_the_same_page(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """A listing the map already holds is matched by its listing id (no SKU lookup); a new one in the same page is
    matched by SKU, case-insensitively, as on the first mirror."""
    tenant = await make_tenant(rt, api, marketplaces=(("P2", "DE"),))
    p2 = tenant.marketplace("P2")
    await _set_owner(rt, tenant.account_id, "Price", "Merchant")
    await _set_owner(rt, tenant.account_id, "Stock", "Merchant")
    known = await support.listed_product(rt, p2, "MIX-1", at_marketplace=False)
    await _sandbox_set(rt, p2, "mix-1", price="9.50", quantity=3)
    await _mirror_now(rt, p2)
    first = await support.our_listing(rt, p2, known.id)
    assert first is not None and first.listing_id is not None

    new = await support.listed_product(rt, p2, "MIX-2", at_marketplace=False)
    await _sandbox_set(rt, p2, "mix-1", quantity=7)
    await _sandbox_set(rt, p2, "Mix-2", price="4.00", quantity=1)
    await _mirror_now(rt, p2)

    again = await support.our_listing(rt, p2, known.id)
    assert again is not None and (again.id, again.listing_id) == (first.id, first.listing_id)
    assert (again.marketplace_price, again.marketplace_quantity) == (Decimal("9.50"), 7)
    mapped = await support.our_listing(rt, p2, new.id)
    assert mapped is not None and mapped.listing_id is not None and mapped.listing_id != first.listing_id
    assert (mapped.external_sku, mapped.marketplace_quantity) == ("Mix-2", 1)
    marketplaces = (await api.get("/api/marketplaces", headers=tenant.headers)).json()["Marketplaces"]
    assert marketplaces[0]["LastPull"] == {"Status": "Completed", "TotalSkus": 2, "CurrentSku": 2}


async def test_a_remirror_writes_only_the_listings_that_changed_at_the_marketplace(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """Mirroring 100,000 unchanged listings rewrote every row (each page's transaction holding SQLite's writer): a
    listing the marketplace still holds as the map has it is left alone, its updated_at included."""
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    p1 = tenant.marketplace("P1")
    await _set_owner(rt, tenant.account_id, "Price", "Merchant")
    await _set_owner(rt, tenant.account_id, "Stock", "Merchant")
    same = await support.listed_product(rt, p1, "SAME-1", price="10.00", quantity=5)
    moved = await support.listed_product(rt, p1, "MOVED-1", price="10.00", quantity=5)
    await _mirror_now(rt, p1)
    before = {product.id: await support.our_listing(rt, p1, product.id) for product in (same, moved)}

    await _sandbox_set(rt, p1, "MOVED-1", quantity=2)
    await _mirror_now(rt, p1)

    unchanged = await support.our_listing(rt, p1, same.id)
    changed = await support.our_listing(rt, p1, moved.id)
    assert unchanged is not None and changed is not None
    was_same, was_moved = before[same.id], before[moved.id]
    assert was_same is not None and was_moved is not None
    assert (unchanged.marketplace_quantity, unchanged.updated_at) == (5, was_same.updated_at)
    assert changed.marketplace_quantity == 2 and changed.updated_at > was_moved.updated_at


async def test_a_remirror_reads_no_product_while_the_merchant_owns_price_and_stock(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """A re-mirror compares the marketplace's values with the inventory's only where the marketplace owns a kind: with
    the merchant owning both, a known listing's product is not read (a million-listing mirror read a million products
    for nothing); once the marketplace owns Stock, it is, and its stock follows the marketplace's."""
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    p1 = tenant.marketplace("P1")
    await _set_owner(rt, tenant.account_id, "Price", "Merchant")
    await _set_owner(rt, tenant.account_id, "Stock", "Merchant")
    product = await support.listed_product(rt, p1, "OWN-1", price="10.00", quantity=5)
    await _mirror_now(rt, p1)
    await _sandbox_set(rt, p1, "OWN-1", quantity=2)

    with statements_of(rt) as merchant_owned:
        await _mirror_now(rt, p1)
    assert not [s for s, _ in merchant_owned if "FROM products" in s]
    assert (await support.our_listing(rt, p1, product.id)).marketplace_quantity == 2  # type: ignore[union-attr]
    assert (await api.get("/api/products/OWN-1", headers=tenant.headers)).json()["Product"]["Quantity"] == 5

    await _set_owner(rt, tenant.account_id, "Stock", "Marketplace")
    with statements_of(rt) as marketplace_owned:
        await _mirror_now(rt, p1)
    assert [s for s, _ in marketplace_owned if "FROM products" in s]
    assert (await api.get("/api/products/OWN-1", headers=tenant.headers)).json()["Product"]["Quantity"] == 2


async def test_the_marketplace_counts_a_listing_pull_once_and_pages_through_every_listing(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """The total a listing pull reports is counted for its first page and carried by the cursor (counted again for
    each of 500 pages it was most of a 100,000-listing mirror on PostgreSQL); the pages still cover every listing
    once, and a listing added mid-pull is found by the pull without changing the total it started with."""
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    p1 = tenant.marketplace("P1")
    async with rt.db.transaction() as session:
        seller = await sandbox_state.ensure_seller(session, p1.id, "P1", "UK", rt.clock.now())
        known = [
            sandbox_state.KnownListing(f"PAGE-{i:03d}", None, None, None, None, Decimal("2.00"), 1) for i in range(7)
        ]
        await sandbox_state.seed_listings(session, seller, rt.clock.now(), known)
    seen, totals, cursor = [], [], None
    while True:
        async with rt.db.read() as session:
            rows, total, cursor = await sandbox_state.listings_page(session, p1.id, cursor, 3)
        seen.extend(row.sku for row in rows)
        totals.append(total)
        if len(seen) == 3:
            await _sandbox_set(rt, p1, "PAGE-999", quantity=1)  # listed at the marketplace mid-pull
        if cursor is None:
            break
    assert sorted(seen) == [*(f"PAGE-{i:03d}" for i in range(7)), "PAGE-999"]
    assert totals == [7, 7, 7]


async def test_two_marketplaces_owning_stock_flip_flop_the_catalogue_on_each_mirror(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """Pins the known limitation of docs/decisions/0309: Data Flow names the marketplace as owner, not one
    connection, so every connected marketplace owns Stock. Two that hold different stock take the catalogue in turn,
    each mirror firing an InventoryChanged; the mirror pushes nothing, so each marketplace keeps its own value."""
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P2", "DE")))
    p1, p2 = tenant.marketplace("P1"), tenant.marketplace("P2")
    product = await support.listed_product(rt, p1, "FLIP-1", price="10.00", quantity=5)
    await _sandbox_set(rt, p2, "FLIP-1", price="10.00", quantity=7)  # the same SKU, other stock at P2
    await _set_owner(rt, tenant.account_id, "Price", "Merchant")  # Stock stays the marketplace's (the default)

    seen = []
    for connection in (p1, p2, p1, p2):
        await _mirror_now(rt, connection)
        seen.append((await support.product(rt, product.id)).quantity)

    assert seen == [5, 7, 5, 7]  # whichever mirror ran last
    changed = await support.events(rt, tenant.account_id, "InventoryChanged")
    assert [e["payload"]["source"]["userPlatformId"] for e in changed] == [p2.id, p1.id, p2.id]
    assert [e["payload"]["changed"][0]["quantity"] for e in changed] == [7, 5, 7]
    async with rt.db.read() as session:
        held = [await sandbox_state.listing_by_sku(session, c.id, "FLIP-1") for c in (p1, p2)]
    assert [remote.quantity for remote in held if remote is not None] == [5, 7]
    assert [job.type for job in await jobs_of(rt, tenant.account_id)] == ["ListingMirror"] * 4


async def test_a_page_read_before_a_push_was_recorded_does_not_undo_the_push(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mirror asked for a page (quantity 5), a push of 7 was sent and recorded meanwhile, then the page arrived:
    writing its 5 as what the marketplace holds made the push back to 5 look needless, never sent, and the
    marketplace kept 7 for good."""
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    connection = tenant.marketplace("P1")
    async with rt.db.transaction() as session:
        for kind in ("Stock", "Price"):
            await inventory_service.set_data_owner(rt, session, tenant.account_id, kind, "Merchant")
    product = await support.listed_product(rt, connection, "RACE-1", price="10.00", quantity=5)
    page_read, release = asyncio.Event(), asyncio.Event()
    pull_listings = SandboxConnector.pull_listings

    async def slow_page(self: SandboxConnector, cursor: str | None, limit: int = 200) -> ListingPage:
        page = await pull_listings(self, cursor, limit)
        page_read.set()
        await release.wait()  # the answer still on its way back
        return page

    monkeypatch.setattr(SandboxConnector, "pull_listings", slow_page)

    async def push(quantity: int) -> None:
        pushed = await api.post(
            "/api/inventory/price-quantity",
            headers=tenant.headers,
            json={"Items": [{"Sku": "RACE-1", "Quantity": quantity}]},
        )
        assert pushed.status_code == 200, pushed.text
        for job_id in pushed.json()["JobIds"]:
            await jobs_service.run_now(rt, job_id)

    mirror_id = await support.enqueue(rt, tenant.account_id, "ListingMirror", {"MarketplaceId": connection.id})
    mirror = asyncio.create_task(jobs_service.run_now(rt, mirror_id))
    await asyncio.wait_for(page_read.wait(), 10)
    await push(7)
    assert (await support.sandbox_listings(rt, connection))["RACE-1"].quantity == 7
    release.set()
    await mirror
    listing = await support.our_listing(rt, connection, product.id)
    assert listing is not None and listing.marketplace_quantity == 7  # what the push recorded, not the older page

    await push(5)
    assert (await support.sandbox_listings(rt, connection))["RACE-1"].quantity == 5
    assert (await support.product(rt, product.id)).quantity == 5
