"""The catalogue as a table (docs/decisions/0436-app-tables.md), over real HTTP on both databases: "1-50 of N",
sorted by SKU, price, stock and last change, each header's link sorting the other way when chosen again; a product's
price shown in the currency of each of its listings' sites."""

from __future__ import annotations

import re

import httpx
import pytest
from sqlalchemy import inspect

from marketsync.console import catalogue
from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.inventory.support import add_listing, add_products
from tests.support.factories import make_tenant

SKU_LINK = re.compile(r'<a href="/app/product\?sku=[^"]+">([^<]+)</a>')


async def test_the_catalogue_sorts_by_its_main_columns_and_counts(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P2", "DE")))
    specs = [(f"SKU-{n:02d}", f"{(n * 7) % 53}.50", (n * 11) % 17) for n in range(55)]
    ids = await add_products(rt, tenant.account_id, specs)
    await add_listing(rt, tenant.account_id, ids["SKU-00"], tenant.marketplace("P1").id)
    await add_listing(rt, tenant.account_id, ids["SKU-00"], tenant.marketplace("P2").id, listing_id="L-2")
    person = await signed_in(api, await make_person(rt, tenant.account_id, "Staff"))

    first = await person.page("/app/catalogue")
    assert '<span class="range" id="range">1–50 of 55</span>' in first.text
    assert SKU_LINK.findall(first.text)[:2] == ["SKU-00", "SKU-01"]
    assert "0.50 GBP<br>0.50 EUR" in first.text  # SKU-00's price in each listing's site currency
    assert 'href="/app/catalogue?offset=50" rel="next"' in first.text
    last = await person.page("/app/catalogue?offset=50")
    assert '<span class="range" id="range">51–55 of 55</span>' in last.text

    by_price = await person.page("/app/catalogue?sort=price&dir=desc")
    prices = sorted(((n * 7) % 53, f"SKU-{n:02d}") for n in range(55))
    assert SKU_LINK.findall(by_price.text)[0] == prices[-1][1] and 'aria-sort="descending"' in by_price.text
    assert 'href="/app/catalogue?sort=price&amp;dir=asc" id="sort-price"' in by_price.text  # again: the other way
    by_stock = await person.page("/app/catalogue?sort=stock&dir=asc")
    stocks = [int(cell) for cell in re.findall(r'<td data-label="Stock">(\d+)</td>', by_stock.text)]
    assert stocks == sorted(stocks) and len(stocks) == 50
    newest = await person.page("/app/catalogue?sort=changed")
    assert SKU_LINK.findall(newest.text)[0] == "SKU-54"
    refused = await person.page("/app/catalogue?sort=colour")
    assert refused.status_code == 400 and 'id="error-sort"' in refused.text
    await person.client.aclose()


async def test_price_and_stock_sort_the_whole_catalogue_up_to_their_bound(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Price and stock have no index (every push moves them: docs/decisions/0457): the last page sorted by stock is
    in order, and over SORT_BY_VALUE_MAX_PRODUCTS the headers are no longer links and the address names the bound."""
    tenant = await make_tenant(rt, api)
    specs = [(f"SKU-{n:02d}", f"{(n * 7) % 53}.50", (n * 11) % 17) for n in range(55)]
    ids = await add_products(rt, tenant.account_id, specs)
    person = await signed_in(api, await make_person(rt, tenant.account_id, "Staff"))
    deepest = await person.page("/app/catalogue?sort=stock&dir=desc&offset=50")
    expected = sorted(((stock, ids[sku], sku) for sku, _, stock in specs), reverse=True)  # ties: the later id first
    assert SKU_LINK.findall(deepest.text) == [sku for _, _, sku in expected[50:]]

    monkeypatch.setattr(catalogue, "SORT_BY_VALUE_MAX_PRODUCTS", 54)
    plain = await person.page("/app/catalogue")
    assert plain.status_code == 200 and 'id="sort-price"' not in plain.text and 'id="sort-stock"' not in plain.text
    assert '<th scope="col">Price</th>' in plain.text and 'id="sort-changed"' in plain.text
    refused = await person.page("/app/catalogue?sort=price")
    assert refused.status_code == 400 and "offered for up to 54 products, and this catalogue holds 55" in refused.text
    await person.client.aclose()


async def test_no_index_of_the_products_holds_price_or_stock(rt: Runtime) -> None:
    """Every 500-SKU push moves both: an index on either cost the push two writes a product (docs/decisions/0457)."""
    async with rt.db.read() as session:
        connection = await session.connection()
        indexes = await connection.run_sync(lambda sync: inspect(sync).get_indexes("products"))
    assert indexes and not [index["name"] for index in indexes if {"price", "quantity"} & set(index["column_names"])]
