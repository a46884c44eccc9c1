"""The SDK's iterators walk every paged read to its end: 1,000+ orders by cursor, 1,000+ products by offset and
by ModifiedSince (resumable), and a marketplace's whole category tree."""

from __future__ import annotations

import asyncio

import httpx
from marketsync_client import models as m

from marketsync.runtime import Runtime
from tests.catalog.support import load_taxonomies
from tests.inventory.support import add_products
from tests.orders.support import ingest, pulled_order
from tests.support.factories import make_tenant
from tests.support.sdk import Seen, collect, sdk

COUNT = 1_050


async def test_orders_walk_by_cursor(rt: Runtime, api: httpx.AsyncClient, flavour: str) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    pulled = [pulled_order() for _ in range(COUNT)]
    await ingest(rt, tenant.marketplace("P1"), *pulled)
    seen = Seen()
    async with sdk(api, tenant, flavour, seen=seen) as client:
        orders, state = await collect(client, "iter_orders")
        assert len(orders) == COUNT and all(isinstance(order, m.Order) for order in orders)
        assert {o.MarketplaceOrderId for o in orders} == {p.marketplace_order_id for p in pulled}
        assert len({o.ServiceOrderID for o in orders}) == COUNT
        stamps = [(o.LastModifiedDate, o.ServiceOrderID) for o in orders]
        assert stamps == sorted(stamps)  # oldest change first, across pages
        assert state.pages == 6 and state.items == COUNT  # 200 a page
        assert state.next_updated_since is not None
        # Only the requests the walk needed: one token, six pages.
        assert len(seen.paths("/api/orders/List")) == 6

        # The filters go with every page's request.
        chosen = [o.ServiceOrderID for o in orders[::35]]
        picked, picked_state = await collect(client, "iter_orders", service_order_ids=chosen, page_size=7)
        assert sorted(o.ServiceOrderID for o in picked) == sorted(chosen) and picked_state.pages == 5
        shipped, shipped_state = await collect(client, "iter_orders", order_statuses=["Shipped"])
        assert shipped == [] and shipped_state.pages == 1


async def test_products_walk_by_offset_and_by_modified_since(rt: Runtime, api: httpx.AsyncClient, flavour: str) -> None:
    tenant = await make_tenant(rt, api)
    skus = [f"SKU-{index:05d}" for index in range(COUNT)]
    await add_products(rt, tenant.account_id, [(sku, "1.00", index) for index, sku in enumerate(skus)])
    async with sdk(api, tenant, flavour) as client:
        by_offset, offset_state = await collect(client, "iter_products")
        assert sorted(p.Sku for p in by_offset) == skus and offset_state.pages == 6

        walked, state = await collect(client, "iter_products_modified_since", page_size=100)
        assert [p.Sku for p in walked] == skus  # oldest change first; each product once (no boundary repeats)
        assert [p.Quantity for p in walked] == list(range(COUNT))
        assert state.cursor == walked[-1].LastModifiedDate
        assert state.pages == 11  # 10 full pages of 100 distinct products (each after the first starts with
        # the previous page's last product) plus the tail

        # Three products change; resuming from the cursor yields them (and the product at the cursor again).
        pushed = await client.push_price_quantity([{"Sku": sku, "Quantity": 5_000} for sku in skus[:3]])
        assert pushed.Updated == 3
        resumed, _ = await collect(client, "iter_products_modified_since", state.cursor)
        assert [p.Sku for p in resumed] == [skus[-1], *skus[:3]]
        assert [p.Quantity for p in resumed[1:]] == [5_000] * 3

        # Offset pages with a SKU filter walk only what matches.
        one, _ = await collect(client, "iter_products", sku="sku-00007")
        assert [p.Sku for p in one] == ["SKU-00007"]


async def test_category_search_walks_the_whole_tree(rt: Runtime, api: httpx.AsyncClient, flavour: str) -> None:
    await load_taxonomies(rt, ("P1",))
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    marketplace_id = tenant.marketplace("P1").id
    async with sdk(api, tenant, flavour) as client:
        total = (await client.search_product_types(marketplace_id, limit=1)).TotalCount
        leaves, state = await collect(client, "iter_product_types", marketplace_id, page_size=50)
        assert len(leaves) == total > 50 and state.pages == -(-total // 50)
        assert len({leaf.CategoryId for leaf in leaves}) == total
        phones, _ = await collect(client, "iter_product_types", marketplace_id, search_text="phone", page_size=2)
        assert phones and all("phone" in (leaf.Title + leaf.Path).lower() for leaf in phones)


async def test_products_created_during_an_offset_walk_repeat_nothing(
    rt: Runtime, api: httpx.AsyncClient, flavour: str
) -> None:
    """Products created ahead of the offset while the walk runs shift the later pages: the product at each page
    boundary would come again; the walk hands over each SKU once, and every product that was there at the start."""
    tenant = await make_tenant(rt, api)
    skus = [f"SKU-{index:03d}" for index in range(50)]
    await add_products(rt, tenant.account_id, [(sku, "1.00", 1) for sku in skus])
    created = 0
    loop = asyncio.get_running_loop()

    async def create_ahead() -> None:
        nonlocal created
        created += 1
        await add_products(rt, tenant.account_id, [(f"AAA-{created:03d}", "1.00", 1)])

    async with sdk(api, tenant, flavour) as client:
        if flavour == "sync":
            walk = client.client.iter_products(page_size=10)

            def walk_and_create() -> list[m.ProductSummary]:
                seen = []
                for product in walk:
                    seen.append(product)
                    if len(seen) % 10 == 0:  # a page used up: two products appear ahead of the offset
                        for _ in range(2):
                            asyncio.run_coroutine_threadsafe(create_ahead(), loop).result()
                return seen

            walked = await asyncio.to_thread(walk_and_create)
            state = walk.state
        else:
            async_walk = client.iter_products(page_size=10)
            walked = []
            async for product in async_walk:
                walked.append(product)
                if len(walked) % 10 == 0:
                    await create_ahead()
                    await create_ahead()
            state = async_walk.state
    got = [p.Sku for p in walked]
    assert len(got) == len(set(got))  # nothing twice
    assert set(skus) <= set(got)  # nothing that was there from the start is missed
    assert created >= 10 and state.items == len(got)
