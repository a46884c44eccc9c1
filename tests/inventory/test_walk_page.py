"""A page of POST /api/products/List (spec §4), with ModifiedSince or by Offset: on PostgreSQL its page, TotalCount and
listings are one statement (docs/decisions/0342-products-page-statement.md); the answer is the one the three separate
reads give, on both databases."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from marketsync.db import DriverReader
from marketsync.inventory import repository, rules, service
from marketsync.inventory.rules import wire_timestamp
from marketsync.runtime import Runtime
from tests.inventory.support import add_listing, add_products
from tests.support.factories import make_connection, make_tenant

LIST = "/api/products/List"


async def three_reads(
    reader: DriverReader, account_id: str, *, sku: str | None, since: Any, limit: int, offset: int
) -> dict[str, Any]:
    """The page as the three separate reads build it (the SQLite path, and PostgreSQL's before 0323 and 0342)."""
    key = rules.sku_key(sku) if sku is not None else None
    at_most = offset + service.WALK_COUNT_AHEAD if since is not None else None
    rows = await repository.page_of_products(
        reader, account_id, key=key, modified_since=since, limit=limit, offset=offset
    )
    total = await repository.count_of_products(reader, account_id, key=key, modified_since=since, at_most=at_most)
    listings = await repository.listing_documents(reader, account_id, [row[0] for row in rows])
    return {
        "Products": [
            {
                "Sku": sku_,
                "Quantity": quantity,
                "LastModifiedDate": service._wire_time(modified_at),
                "Listings": listings.get(product_id, []),
            }
            for product_id, sku_, quantity, modified_at in rows
        ],
        "TotalCount": total,
    }


class Counting:
    """A DriverReader that counts the statements it runs."""

    def __init__(self, reader: DriverReader) -> None:
        self.reader = reader
        self.postgres = reader.postgres
        self.statements = 0

    async def fetch(self, sql: str, arguments: Sequence[Any]) -> list[Sequence[Any]]:
        self.statements += 1
        return await self.reader.fetch(sql, arguments)


async def test_pages_answer_as_the_three_reads(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Products with several listings (in platform then country order), with only a listing not yet at the
    marketplace, with none; pages at Offsets, past the end (empty, TotalCount still counted), a Sku filter, and
    another account's products left out."""
    tenant = await make_tenant(rt, api, marketplaces=(("P2", "DE"), ("P1", "UK")))
    p1_de = (await make_connection(rt, tenant.account_id, "P1", "DE")).id
    since = rt.clock.now() - timedelta(days=2)
    ids = await add_products(rt, tenant.account_id, [(f"W-{i:03d}", "1", i) for i in range(30)])
    for marketplace, listing in (
        (tenant.marketplace("P2").id, "DE-3"),
        (tenant.marketplace("P1").id, "UK-3"),
        (p1_de, "DE-3x"),
    ):
        await add_listing(rt, tenant.account_id, ids["W-003"], marketplace, listing_id=listing)
    await add_listing(rt, tenant.account_id, ids["W-004"], tenant.marketplace("P1").id, listing_id=None, status="Draft")
    await add_listing(rt, tenant.account_id, ids["W-029"], tenant.marketplace("P2").id, listing_id="DE-29")
    other = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    other_ids = await add_products(rt, other.account_id, [("W-003", "1", 1)])
    await add_listing(rt, other.account_id, other_ids["W-003"], other.marketplace("P1").id, listing_id="UK-other")

    cases = [
        {"sku": None, "limit": 200, "offset": 0},
        {"sku": None, "limit": 4, "offset": 2},
        {"sku": None, "limit": 5, "offset": 27},
        {"sku": None, "limit": 5, "offset": 30},
        {"sku": None, "limit": 5, "offset": 500},
        {"sku": "w-003", "limit": 200, "offset": 0},
        {"sku": "nothing", "limit": 200, "offset": 0},
    ]
    for case in cases:
        for modified_since in (since, None):

            async def both(
                reader: DriverReader, case: dict[str, Any] = case, modified_since: datetime | None = modified_since
            ) -> tuple[dict[str, Any], dict[str, Any]]:
                page = await service.products_page(reader, tenant.account_id, modified_since=modified_since, **case)
                return page, await three_reads(reader, tenant.account_id, since=modified_since, **case)

            page, expected = await rt.db.driver_read(both)
            assert page == expected, (case, modified_since)
            assert page["Products"] or case["offset"] >= 30 or case["sku"] == "nothing", case

    whole = await api.post(LIST, json={"ModifiedSince": wire_timestamp(since), "Limit": 200}, headers=tenant.headers)
    assert whole.status_code == 200, whole.text
    body = whole.json()
    assert body["TotalCount"] == 30
    assert [p["Sku"] for p in body["Products"]] == [f"W-{i:03d}" for i in range(30)]
    by_sku = {p["Sku"]: p for p in body["Products"]}
    assert [(x["Platform"], x["Country"], x["ListingId"]) for x in by_sku["W-003"]["Listings"]] == [
        ("P1", "DE", "DE-3x"),
        ("P1", "UK", "UK-3"),
        ("P2", "DE", "DE-3"),
    ]
    assert by_sku["W-003"]["Listings"][1] == {
        "Platform": "P1",
        "Country": "UK",
        "ListingId": "UK-3",
        "ExternalSku": "EXT-UK-3",
        "ListingUrl": "https://listings.example/UK-3",
    }
    assert by_sku["W-004"]["Listings"] == [], "a listing not yet at the marketplace is not listed"
    assert [x["ListingId"] for x in by_sku["W-029"]["Listings"]] == ["DE-29"]
    assert by_sku["W-000"]["Listings"] == []

    past = await api.post(
        LIST, json={"ModifiedSince": wire_timestamp(since), "Limit": 10, "Offset": 40}, headers=tenant.headers
    )
    assert past.json() == {"Products": [], "TotalCount": 30}


@pytest.mark.parametrize("walk", [True, False], ids=["ModifiedSince", "Offset"])
async def test_a_page_is_one_statement_on_postgresql(rt: Runtime, walk: bool) -> None:
    """One statement, so one snapshot on the driver reader's autocommit connection (three statements were three
    snapshots: a push between them could show a page whose count or listings were read after it)."""
    if rt.db.dialect != "postgresql":
        pytest.skip("SQLite reads the three statements inside one transaction of its file")
    since = rt.clock.now() - timedelta(days=2) if walk else None

    async def work(reader: DriverReader) -> tuple[dict[str, Any], int]:
        counting = Counting(reader)
        page = await service.products_page(counting, "acct", sku=None, modified_since=since, limit=200, offset=0)
        return page, counting.statements

    page, statements = await rt.db.driver_read(work)
    assert statements == 1
    assert page == {"Products": [], "TotalCount": 0}, "an account without products (nor their count's row)"


async def test_walk_and_offset_orders_hold_where_they_differ(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Changes made in another order than the SKUs', several at one instant with ids not in SKU order, SKUs that
    differ only by case or by punctuation, and page boundaries between them: each page is the three reads' page, the
    walk in (modified_at, id) order and the Offset pages in SKU order ignoring case, then exact SKU."""
    tenant = await make_tenant(rt, api, marketplaces=(("P2", "DE"), ("P1", "UK")))
    base = rt.clock.now() - timedelta(days=1)
    # (sku, microseconds after base), created in this order: ids grow down the list.
    specs = [("b", 5), ("TWO", 1), ("a.b", 3), ("Two", 1), ("B", 3), ("a-b", 1), ("zed", 0), ("Alpha", 3)]
    ids: dict[str, str] = {}
    for sku, after in specs:
        ids |= await add_products(
            rt, tenant.account_id, [(sku, "1", len(ids))], modified_at=base + timedelta(microseconds=after)
        )
    for sku in ("TWO", "a.b", "Alpha"):
        for platform in ("P2", "P1"):
            await add_listing(
                rt, tenant.account_id, ids[sku], tenant.marketplace(platform).id, listing_id=f"{platform}-{sku}"
            )
    since = base - timedelta(seconds=1)
    pages: dict[str | None, list[str]] = {}
    for modified_since in (since, None):
        for limit, offset in ((200, 0), (3, 0), (3, 1), (2, 3), (2, 5), (1, 7), (4, 8)):

            async def both(
                reader: DriverReader, modified_since: datetime | None = modified_since, limit: int = limit,
                offset: int = offset,
            ) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
                case = {"sku": None, "limit": limit, "offset": offset}
                page = await service.products_page(reader, tenant.account_id, modified_since=modified_since, **case)
                return page, await three_reads(reader, tenant.account_id, since=modified_since, **case)

            page, expected = await rt.db.driver_read(both)
            assert page == expected, (modified_since, limit, offset)
            if limit == 200:
                pages["walk" if modified_since else "offset"] = [p["Sku"] for p in page["Products"]]
    assert pages["offset"] == ["a-b", "a.b", "Alpha", "B", "b", "TWO", "Two", "zed"]
    at_one_microsecond = sorted(("TWO", "Two", "a-b"), key=lambda sku: ids[sku])
    at_three = sorted(("a.b", "B", "Alpha"), key=lambda sku: ids[sku])
    assert pages["walk"] == ["zed", *at_one_microsecond, *at_three, "b"]
    listed = await api.post(LIST, json={"Limit": 3, "Offset": 1}, headers=tenant.headers)
    assert listed.status_code == 200, listed.text
    assert [(p["Sku"], [x["Platform"] for x in p["Listings"]]) for p in listed.json()["Products"]] == [
        ("a.b", ["P1", "P2"]),
        ("Alpha", ["P1", "P2"]),
        ("B", []),
    ]


async def test_the_page_is_built_whatever_order_the_rows_arrive_in() -> None:
    """`page_statement_sql`'s rows carry no order (a UNION ALL): the page is the same from rows in any order."""
    stamp = datetime(2026, 11, 28, 21, 0, 0, 1)
    rows: list[tuple[Any, ...]] = [
        (7, None, None, None, None, None, None, None, None, None),
        *[(None, n, f"S-{n}", n, stamp + timedelta(microseconds=n), None, None, None, None, None) for n in (1, 2, 3)],
        *[
            (None, n, None, None, None, platform, country, f"{platform}{country}-{n}", f"S-{n}", None)
            for n in (1, 3)
            for platform, country in (("P1", "UK"), ("P2", "DE"), ("P1", "DE"))
        ],
    ]

    class Rows:
        postgres = True

        def __init__(self, rows: list[tuple[Any, ...]]) -> None:
            self.rows = rows

        async def fetch(self, sql: str, arguments: Sequence[Any]) -> list[Sequence[Any]]:
            return list(self.rows)

    async def page_of(rows: list[tuple[Any, ...]]) -> dict[str, Any]:
        return await service._products_page_postgres(Rows(rows), "acct", None, None, 200, 0, None)  # type: ignore[arg-type]

    expected = await page_of(rows)
    assert expected["TotalCount"] == 7
    assert [p["Sku"] for p in expected["Products"]] == ["S-1", "S-2", "S-3"]
    assert [(x["Platform"], x["Country"]) for x in expected["Products"][0]["Listings"]] == [
        ("P1", "DE"),
        ("P1", "UK"),
        ("P2", "DE"),
    ]
    assert expected["Products"][1]["Listings"] == []
    for seed in range(20):
        shuffled = list(rows)
        random.Random(seed).shuffle(shuffled)
        assert await page_of(shuffled) == expected, seed
    assert await page_of(list(reversed(rows))) == expected


@pytest.mark.parametrize(
    "stored",
    [
        datetime(2026, 11, 28, 18, 30, 5, 123456),
        datetime(2026, 1, 1),
        datetime(1, 1, 1, 0, 0, 0, 1),
        datetime(9999, 12, 31, 23, 59, 59, 999999),
        "2026-11-28 18:30:05.000007",
        "2026-11-28 18:30:05",
    ],
)
def test_last_modified_date_is_the_wire_timestamp_of_the_stored_time(stored: datetime | str) -> None:
    """The page's LastModifiedDate, from a driver's naive UTC value (PostgreSQL) or stored text (SQLite), is what
    `wire_timestamp` gives for that instant (the page formats it without a time-zone conversion)."""
    instant = datetime.fromisoformat(stored) if isinstance(stored, str) else stored
    assert service._wire_time(stored) == wire_timestamp(instant.replace(tzinfo=UTC))
