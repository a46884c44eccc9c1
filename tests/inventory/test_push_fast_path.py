"""What the push's one-statement fast path special-cases (docs/decisions/0240-push-fast-path.md), on both databases,
over real HTTP: a failing SKU sends the batch through the isolated retry (the others still Updated, one event, one
set of jobs), case variants and repeats collapse before the one statement, a hand-checked body gives what the model
gives; and the ModifiedSince walk's bounded TotalCount (0241)."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from marketsync.db._fast import DriverSql
from marketsync.inventory import repository, service, statements
from marketsync.inventory.rules import StoredProduct
from marketsync.runtime import Runtime
from tests.inventory.support import (
    add_listing,
    add_products,
    drop_failure_trigger,
    install_failure_trigger,
    inventory_events,
    jobs_of,
    payloads,
    push_ok,
    stored,
)
from tests.support.factories import make_tenant, problem


async def test_a_failing_sku_in_a_full_batch_is_failed_and_the_rest_updated_with_one_event_and_one_job_set(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P2", "DE")))
    p1, p2 = tenant.marketplace("P1").id, tenant.marketplace("P2").id
    skus = [f"F-{i:03d}" for i in range(500)]
    ids = await add_products(rt, tenant.account_id, [(sku, "1", 1) for sku in skus])
    for sku in skus[:3]:
        await add_listing(rt, tenant.account_id, ids[sku], p1)
    await add_listing(rt, tenant.account_id, ids[skus[1]], p2)  # only the failing SKU is listed on P2
    await install_failure_trigger(rt, skus[1])
    try:
        body = await push_ok(api, tenant, [{"Sku": sku, "Quantity": 7} for sku in skus], PropagateToListings=True)
    finally:
        await drop_failure_trigger(rt)

    assert [line["Result"] for line in body["Results"]] == ["Updated"] + ["Failed"] + ["Updated"] * 498
    assert (body["Updated"], body["Failed"]) == (499, 1)
    after = await stored(rt, tenant.account_id)
    assert after[skus[1]][1] == 1 and {after[sku][1] for sku in skus if sku != skus[1]} == {7}
    # The rolled-back first attempt left nothing: one event (without the failed SKU), one job, for P1 only.
    [event] = payloads(await inventory_events(rt, tenant.account_id))
    assert event["totalChanged"] == 499 and skus[1] not in {entry["sku"] for entry in event["changed"]}
    [job] = await jobs_of(rt, tenant.account_id)
    assert body["JobIds"] == [job.id]
    assert job.payload == {"MarketplaceId": p1, "ProductIds": sorted([ids[skus[0]], ids[skus[2]]])}


async def test_a_locked_row_missing_at_its_address_sends_the_batch_again_by_id(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write finds each locked row at the address its lock read returned (SQLite's rowid, PostgreSQL's ctid:
    docs/decisions/0466). Were one ever elsewhere, the write counts one row short: the batch goes again by id,
    isolated, and no change is lost."""
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("Addr-1", "1", 1), ("Addr-2", "1", 1)])
    lock_read = repository.lock_products_by_sku_keys

    async def first_row_elsewhere(*args: Any) -> list[StoredProduct]:
        rows = await lock_read(*args)
        assert len(rows) == 2 and None not in {row.address for row in rows}
        return [rows[0]._replace(address=rows[1].address), rows[1]]

    monkeypatch.setattr(repository, "lock_products_by_sku_keys", first_row_elsewhere)
    body = await push_ok(api, tenant, [{"Sku": "Addr-1", "Quantity": 5}, {"Sku": "Addr-2", "Quantity": 6}])

    assert [line["Result"] for line in body["Results"]] == ["Updated", "Updated"]
    after = await stored(rt, tenant.account_id)
    assert (after["Addr-1"][1], after["Addr-2"][1]) == (5, 6)
    [event] = payloads(await inventory_events(rt, tenant.account_id))
    assert event["totalChanged"] == 2


async def test_case_variants_and_repeats_collapse_before_the_one_statement(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("Cv-1", "1", 1), ("DUP", "1", 1), ("Two", "1", 1), ("TWO", "1", 1)])

    body = await push_ok(
        api,
        tenant,
        [
            {"Sku": "cv-1", "Quantity": 2},  # names Cv-1 (its one case-insensitive match)
            {"Sku": "DUP", "Quantity": 3},
            {"Sku": "CV-1", "Quantity": 4},  # the same product again: the last occurrence wins, spelt as sent
            {"Sku": "DUP", "Price": 9.5},  # a repeat collapses whole: its Quantity is not provided
            {"Sku": "two", "Quantity": 5},  # two case variants stored, none exact: Ambiguous
            {"Sku": "TWO", "Quantity": 6},  # exact casing wins
        ],
    )

    assert body["Results"] == [
        {"Sku": "CV-1", "Result": "Updated"},
        {"Sku": "DUP", "Result": "Updated"},
        {"Sku": "two", "Result": "Ambiguous"},
        {"Sku": "TWO", "Result": "Updated"},
    ]
    after = await stored(rt, tenant.account_id)
    assert after["Cv-1"][:2] == (Decimal("1"), 4)
    assert after["DUP"][:2] == (Decimal("9.5"), 1)
    assert (after["Two"][1], after["TWO"][1]) == (1, 6)
    [event] = payloads(await inventory_events(rt, tenant.account_id))
    assert [entry["sku"] for entry in event["changed"]] == ["Cv-1", "DUP", "TWO"]


async def test_the_hand_checked_body_takes_what_the_model_takes(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("N-1", "1", 1), ("N-2", "1", 1)])

    body = await push_ok(
        api, tenant, [{"Sku": "N-1", "Price": 5, "Quantity": None}, {"Sku": "N-2", "Price": 0.1234, "Quantity": 0}]
    )

    assert body["Updated"] == 2
    after = await stored(rt, tenant.account_id)
    assert after["N-1"][:2] == (Decimal("5"), 1) and after["N-2"][:2] == (Decimal("0.1234"), 0)
    # Anything the hand check does not take goes to the model, which names every bad field.
    response = await api.post(
        "/api/inventory/price-quantity",
        json={"Items": [{"Sku": "N-1", "Price": 1.00001}, {"Sku": "N-2", "Quantity": True}], "Extra": 1},
        headers=tenant.headers,
    )
    assert response.status_code == 400
    assert set(problem(response)["errors"]) == {"Items[0].Price", "Items[1].Quantity", "Extra"}


async def test_an_import_batch_with_a_failing_row_is_retried_isolated(
    rt: Runtime, api: httpx.AsyncClient, tmp_path: Path
) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("I-1", "1", 1), ("BAD", "1", 1), ("I-2", "1", 1)])
    path = tmp_path / "stock.csv"
    path.write_text("Sku,Price,Quantity\nI-1,,5\nBAD,,5\nI-2,2.5,\n", encoding="utf-8")
    await install_failure_trigger(rt, "BAD")
    try:
        report = await service.import_inventory_file(rt, tenant.account_id, path, propagate=False)
    finally:
        await drop_failure_trigger(rt)

    assert report.counts == {"Updated": 2, "Unchanged": 0, "NotFound": 0, "Ambiguous": 0, "Failed": 1}
    assert [(error.line, error.sku) for error in report.errors] == [(3, "BAD")]
    assert report.events == 1
    assert len(await inventory_events(rt, tenant.account_id)) == 1


async def test_a_modified_since_page_counts_a_bounded_number_ahead(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "WALK_COUNT_AHEAD", 3)
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [(f"W-{i}", "1", 1) for i in range(5)])

    async def page(**query: object) -> dict[str, object]:
        response = await api.post("/api/products/List", json=query, headers=tenant.headers)
        assert response.status_code == 200, response.text
        body: dict[str, object] = response.json()
        return body

    since = "2000-01-01T00:00:00Z"
    # More than 3 remain past Offset: Offset + 3, a lower bound that keeps Offset paging going.
    assert (await page(ModifiedSince=since, Limit=2))["TotalCount"] == 3
    assert (await page(ModifiedSince=since, Limit=2, Offset=1))["TotalCount"] == 4
    # Fewer remain: exact.
    assert (await page(ModifiedSince=since, Limit=2, Offset=2))["TotalCount"] == 5
    # Without ModifiedSince the count is always exact.
    assert (await page(Limit=2))["TotalCount"] == 5


def _listed_on_connections_sql() -> tuple[str, tuple[str, ...]]:
    return statements.LISTED_ON_ACTIVE_CONNECTIONS.text(False, 2), ("acct", "p-1", "p-2", "acct", "Active")


def _listing_documents_sql() -> tuple[str, tuple[str, ...]]:
    sql = DriverSql(postgres=False)
    return repository.listing_documents_sql(sql, "acct", ["p-1", "p-2"]), tuple(sql.params)


@pytest.mark.parametrize("statistics", [False, True], ids=["without statistics", "after ANALYZE"])
@pytest.mark.parametrize(
    "read", [_listed_on_connections_sql, _listing_documents_sql], ids=["the push's propagation", "a product's listings"]
)
async def test_sqlite_reads_the_listings_of_products_by_their_ids(
    rt: Runtime, statistics: bool, read: Callable[[], tuple[str, tuple[str, ...]]]
) -> None:
    """Which active connections list a pushed product, and the Listings of a product page or of GET one product:
    both read those products' listings through (account_id, product_id) (migration 0020). SQLite has no statistics
    until someone runs ANALYZE, and with the account's column alone indexed it read every listing of the account:
    200 ms a push and 105 ms a GET at 400,000 listings."""
    if rt.db.dialect != "sqlite":
        pytest.skip("the join order is SQLite's to choose; PostgreSQL's autovacuum keeps its statistics")
    sql, params = read()
    async with rt.db.transaction() as session:
        connection = await session.connection()
        if statistics:
            await connection.exec_driver_sql("ANALYZE")
        steps = [str(row[3]) for row in await connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params)]
    assert steps[0].startswith("SEARCH l USING ") and steps[0].endswith("product_id=?)"), steps


@pytest.mark.parametrize(
    ("price", "message"),
    [
        (-5, "Must not be negative."),
        (100_000_000_000, "Must not exceed 99999999999.9999."),
        (2**70, "Must not exceed 99999999999.9999."),  # beyond 64 bits: a 400 like the rest, never a 500
    ],
    ids=["negative", "over the cap", "beyond 64 bits"],
)
async def test_an_integer_price_is_validated_as_a_decimal_one(
    rt: Runtime, api: httpx.AsyncClient, price: int, message: str
) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("INT-1", "1", 1), ("INT-2", "1", 1)])

    response = await api.post(
        "/api/inventory/price-quantity",
        json={"Items": [{"Sku": "INT-1", "Quantity": 5}, {"Sku": "INT-2", "Price": price}]},
        headers=tenant.headers,
    )

    # A bad value is a 400 naming it (0022), as for `-5.0`: the batch is refused whole, nothing is written.
    assert response.status_code == 400
    assert problem(response)["errors"] == {"Items[1].Price": [message]}
    after = await stored(rt, tenant.account_id)
    assert after["INT-1"][:2] == (Decimal("1"), 1) and after["INT-2"][:2] == (Decimal("1"), 1)
    assert await inventory_events(rt, tenant.account_id) == []


@pytest.mark.parametrize("spelling", ["-0", "-0.00", "-0.0e3"])
async def test_a_negative_zero_price_is_stored_and_echoed_as_zero(
    rt: Runtime, api: httpx.AsyncClient, spelling: str
) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("NZ-1", "3", 1)])

    response = await api.post(
        "/api/inventory/price-quantity",
        content=b'{"Items": [{"Sku": "NZ-1", "Price": %s}]}' % spelling.encode(),
        headers={**tenant.headers, "Content-Type": "application/json"},
    )

    assert response.status_code == 200, response.text
    assert response.json()["Results"] == [{"Sku": "NZ-1", "Result": "Updated"}]
    price = (await stored(rt, tenant.account_id))["NZ-1"][0]
    assert price == 0 and not price.is_signed()
    [event] = await inventory_events(rt, tenant.account_id)
    # The price's own text, not the whole body: the body carries dates, and a date holds "-0" on many days.
    price_text = json.loads(event.body, parse_int=str, parse_float=str)["changed"][0]["price"]
    assert price_text in {"0", "0.0"} and payloads([event])[0]["changed"][0]["price"] == 0
