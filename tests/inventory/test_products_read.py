"""POST /api/products/List and GET /api/products/{sku} (spec §2 Product/Listing, §4 catalogue reads)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest

from marketsync.db._fast import DriverSql
from marketsync.inventory import repository
from marketsync.inventory.rules import wire_timestamp
from marketsync.runtime import Runtime
from tests.inventory.support import add_listing, add_products, push_ok
from tests.support.factories import make_tenant, problem

LIST = "/api/products/List"


async def list_page(api: httpx.AsyncClient, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    response = await api.post(LIST, json=body, headers=headers)
    assert response.status_code == 200, response.text
    page: dict[str, Any] = response.json()
    return page


async def test_list_pages_with_offset_and_total_count(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P2", "DE")))
    ids = await add_products(rt, tenant.account_id, [(f"P-{i:03d}", "9.99", i) for i in range(120)])
    await add_listing(rt, tenant.account_id, ids["P-007"], tenant.marketplace("P2").id, listing_id="DE-7")
    await add_listing(rt, tenant.account_id, ids["P-007"], tenant.marketplace("P1").id, listing_id="UK-7")
    await add_listing(rt, tenant.account_id, ids["P-008"], tenant.marketplace("P1").id, listing_id=None, status="Draft")
    other = await make_tenant(rt, api)
    await add_products(rt, other.account_id, [("P-000", "1", 1)])

    response = await api.post(LIST, json={}, headers=tenant.headers)  # every field optional
    assert response.status_code == 200, response.text
    first = response.json()
    assert first["TotalCount"] == 120
    assert len(first["Products"]) == 50, "Limit defaults to 50"

    seen = []
    for offset in range(0, 120, 50):
        page = await list_page(api, tenant.headers, Limit=50, Offset=offset)
        assert page["TotalCount"] == 120
        seen += [p["Sku"] for p in page["Products"]]
    assert sorted(seen) == [f"P-{i:03d}" for i in range(120)]

    entries = {p["Sku"]: p for p in (await list_page(api, tenant.headers, Limit=200))["Products"]}
    assert set(entries["P-007"]) == {"Sku", "Quantity", "LastModifiedDate", "Listings"}, "no price in a list entry"
    assert entries["P-007"]["Quantity"] == 7
    assert entries["P-007"]["Listings"] == [
        {
            "Platform": "P1",
            "Country": "UK",
            "ListingId": "UK-7",
            "ExternalSku": "EXT-UK-7",
            "ListingUrl": "https://listings.example/UK-7",
        },
        {
            "Platform": "P2",
            "Country": "DE",
            "ListingId": "DE-7",
            "ExternalSku": "EXT-DE-7",
            "ListingUrl": "https://listings.example/DE-7",
        },
    ]
    assert entries["P-008"]["Listings"] == [], "a listing not yet at the marketplace is not listed"
    assert entries["P-009"]["Listings"] == []


async def test_offset_pages_are_in_sku_order_and_a_change_moves_no_product(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Without ModifiedSince, pages are in SKU order ignoring case (decision 0297): a push between two pages moves no
    product from one page to another, so Offset paging neither skips nor repeats one."""
    tenant = await make_tenant(rt, api)
    await add_products(
        rt, tenant.account_id, [(sku, "1", 1) for sku in ("delta", "Two", "Alpha", "Echo", "CHARLIE", "TWO", "bravo")]
    )

    page = await list_page(api, tenant.headers, Limit=200)
    skus = [p["Sku"] for p in page["Products"]]
    assert skus[:5] == ["Alpha", "bravo", "CHARLIE", "delta", "Echo"]
    assert sorted(skus[5:]) == ["TWO", "Two"], "case variants sit together"

    first = await list_page(api, tenant.headers, Limit=3)
    await push_ok(api, tenant, [{"Sku": "Alpha", "Quantity": 2}, {"Sku": "delta", "Quantity": 2}])
    rest = [await list_page(api, tenant.headers, Limit=3, Offset=offset) for offset in (3, 6)]
    walked = [p["Sku"] for one in (first, *rest) for p in one["Products"]]
    assert walked == skus
    assert [p["Quantity"] for p in rest[0]["Products"] if p["Sku"] == "delta"] == [2]


@pytest.mark.parametrize("statistics", [False, True], ids=["without statistics", "after ANALYZE"])
@pytest.mark.parametrize("sku", [None, "sku-1"], ids=["every product", "one SKU"])
async def test_sqlite_reads_an_offset_page_in_index_order(rt: Runtime, statistics: bool, sku: str | None) -> None:
    """The page is read in the order of the unique index on (account_id, sku_lower, sku), sorting nothing: without
    statistics SQLite sorted the account's whole catalogue for the id order (18.6 ms a first page of 100,000
    products, 66.7 ms at Offset 5,000), and even a sort of case variants reads the table for every product the
    Offset skips."""
    if rt.db.dialect != "sqlite":
        pytest.skip("the plan is SQLite's to choose without statistics; PostgreSQL's autovacuum keeps its own")
    sql = DriverSql(postgres=False)
    query = repository.page_of_products_sql(sql, "acct", key=sku, modified_since=None, limit=200, offset=5000)
    async with rt.db.transaction() as session:
        connection = await session.connection()
        if statistics:
            await connection.exec_driver_sql("ANALYZE")
        plan = [
            str(row[3]) for row in await connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {query}", tuple(sql.params))
        ]
    assert plan[0].startswith("SEARCH products USING INDEX uq_products_account_sku_lower_sku (account_id=?"), plan
    assert not [step for step in plan if "TEMP B-TREE" in step], plan


async def test_list_limits_and_filters(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("Mixed-Case", "1", 3), ("other", "1", 4)])

    for bad in ({"Limit": 201}, {"Limit": 0}, {"Offset": -1}, {"ModifiedSince": "yesterday"}, {"limit": 5}):
        response = await api.post(LIST, json=bad, headers=tenant.headers)
        assert response.status_code == 400, bad
        assert set(problem(response)["errors"]) == set(bad)
    assert len((await list_page(api, tenant.headers, Limit=200))["Products"]) == 2

    page = await list_page(api, tenant.headers, Sku="mixed-CASE")
    assert page["TotalCount"] == 1
    assert [p["Sku"] for p in page["Products"]] == ["Mixed-Case"]

    response = await api.post(LIST, json={}, headers=(await make_tenant(rt, api, scopes=("OrdersRead",))).headers)
    assert response.status_code == 403


async def test_modified_since_walk_is_lossless_through_a_500_sku_batch(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    skus = [f"W-{i:04d}" for i in range(700)]
    await add_products(rt, tenant.account_id, [(sku, "1", 0) for sku in skus])
    cursor_start = wire_timestamp(rt.clock.now() - timedelta(seconds=1))
    # One batch moves 500 products at once: they all change at the same instant.
    await push_ok(api, tenant, [{"Sku": sku, "Quantity": 1} for sku in skus[100:600]], PropagateToListings=False)

    walked: dict[str, str] = {}
    cursor, pages = cursor_start, 0
    while True:
        page = await list_page(api, tenant.headers, ModifiedSince=cursor, Limit=200)
        pages += 1
        stamps = [p["LastModifiedDate"] for p in page["Products"]]
        assert stamps == sorted(stamps), "oldest change first"
        fresh = [p for p in page["Products"] if p["Sku"] not in walked]
        walked.update({p["Sku"]: p["LastModifiedDate"] for p in page["Products"]})
        if not fresh:
            break
        cursor = page["Products"][-1]["LastModifiedDate"]
        assert pages < 10, "the walk must always move forward"
    assert sorted(walked) == skus[100:600]
    assert pages <= 4


async def test_get_product_case_insensitive_exact_wins_conflict(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    ids = await add_products(
        rt, tenant.account_id, [("abc", "1", 1), ("ABC", "1", 2), ("Solo", "1", 3), ("Dir/Sub", "1", 4)]
    )
    await add_listing(rt, tenant.account_id, ids["Solo"], tenant.marketplace("P1").id, listing_id="S-1")

    async def get(sku: str) -> httpx.Response:
        return await api.get(f"/api/products/{sku}", headers=tenant.headers)

    solo = await get("SOLO")
    assert solo.status_code == 200, solo.text
    assert solo.json() == {
        "Product": {
            "Sku": "Solo",
            "Quantity": 3,
            "Listings": [
                {
                    "Platform": "P1",
                    "Country": "UK",
                    "ListingId": "S-1",
                    "ExternalSku": "EXT-S-1",
                    "ListingUrl": "https://listings.example/S-1",
                }
            ],
        }
    }
    assert (await get("ABC")).json()["Product"]["Quantity"] == 2
    assert (await get("abc")).json()["Product"]["Quantity"] == 1
    conflict = await get("Abc")
    assert conflict.status_code == 409
    assert problem(conflict)["code"] == "conflict"
    assert (await get("Dir%2Fsub")).json()["Product"]["Sku"] == "Dir/Sub"
    missing = await get("nothing-here")
    assert missing.status_code == 404 and problem(missing)["code"] == "not-found"

    other = await make_tenant(rt, api)
    response = await api.get("/api/products/Solo", headers=other.headers)
    assert response.status_code == 404


async def test_huge_numbers_and_deep_nesting_are_400_not_500(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("H-1", "1", 3)])

    for bad in ({"Offset": 10**30}, {"Offset": 2**63}, {"Limit": 10**30}, {"Limit": -(10**30)}):
        response = await api.post(LIST, json=bad, headers=tenant.headers)
        assert response.status_code == 400, (bad, response.text)
        assert set(problem(response)["errors"]) == set(bad)
    page = await list_page(api, tenant.headers, Offset=2**31 - 1)
    assert (page["Products"], page["TotalCount"]) == ([], 1)

    nested = b"[" * 100_000
    for path in (LIST, "/api/inventory/price-quantity"):
        response = await api.post(path, content=nested, headers={**tenant.headers, "Content-Type": "application/json"})
        assert response.status_code == 400, (path, response.status_code)
        assert "body" in problem(response)["errors"], path
