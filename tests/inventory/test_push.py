"""POST /api/inventory/price-quantity: every rule of spec §4, on both databases, over real HTTP."""

from __future__ import annotations

from decimal import Decimal

import httpx

from marketsync.inventory import service
from marketsync.jobs import repository as job_repository
from marketsync.jobs import service as job_service
from marketsync.jobs.types import PriceStockPushPayload
from marketsync.runtime import Runtime
from tests.inventory.support import (
    add_listing,
    add_products,
    drop_failure_trigger,
    install_failure_trigger,
    inventory_events,
    jobs_of,
    payloads,
    push,
    push_ok,
    stored,
)
from tests.support.factories import make_tenant, problem

COUNTS = ("Updated", "Unchanged", "NotFound", "Ambiguous", "Failed")


def counts(body: dict[str, object]) -> dict[str, object]:
    return {key: body[key] for key in COUNTS}


async def test_push_writes_what_differs_and_reports_every_sku(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("A-1", "10.00", 5), ("B-2", "1.50", 3), ("C-3", None, 9)])
    before = await stored(rt, tenant.account_id)

    body = await push_ok(
        api,
        tenant,
        [
            {"Sku": "A-1", "Price": 12.5},
            {"Sku": "B-2", "Price": 1.5, "Quantity": 3},
            {"Sku": "C-3", "Quantity": 0},
            {"Sku": "NOPE", "Quantity": 1},
        ],
    )

    assert body["Results"] == [
        {"Sku": "A-1", "Result": "Updated"},
        {"Sku": "B-2", "Result": "Unchanged"},
        {"Sku": "C-3", "Result": "Updated"},
        {"Sku": "NOPE", "Result": "NotFound"},
    ]
    assert counts(body) == {"Updated": 2, "Unchanged": 1, "NotFound": 1, "Ambiguous": 0, "Failed": 0}
    assert body["JobIds"] == []
    assert isinstance(body["RequestId"], str) and body["RequestId"]
    assert isinstance(body["Warnings"], list)
    after = await stored(rt, tenant.account_id)
    # Quantity omitted leaves stock alone; Quantity 0 means nothing in stock; Price omitted stays.
    assert after["A-1"][:2] == (Decimal("12.5"), 5)
    assert after["C-3"][:2] == (None, 0)
    assert after["B-2"] == before["B-2"], "an unchanged product keeps its LastModifiedDate"
    assert after["A-1"][2] > before["A-1"][2]


async def test_null_and_omitted_never_mean_zero(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("SKU", "4.99", 12)])

    body = await push_ok(api, tenant, [{"Sku": "SKU", "Price": None, "Quantity": None}])
    assert body["Results"] == [{"Sku": "SKU", "Result": "Unchanged"}]
    body = await push_ok(api, tenant, [{"Sku": "SKU"}])
    assert body["Results"] == [{"Sku": "SKU", "Result": "Unchanged"}]
    assert (await stored(rt, tenant.account_id))["SKU"][:2] == (Decimal("4.99"), 12)
    assert await inventory_events(rt, tenant.account_id) == []


async def test_a_repeated_sku_collapses_to_its_last_occurrence(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("R", "1.00", 1), ("S", "2.00", 2)])

    body = await push_ok(
        api,
        tenant,
        [{"Sku": "R", "Price": 9.99}, {"Sku": "S", "Quantity": 7}, {"Sku": "R", "Quantity": 3}],
    )

    assert body["Results"] == [{"Sku": "R", "Result": "Updated"}, {"Sku": "S", "Result": "Updated"}]
    after = await stored(rt, tenant.account_id)
    assert after["R"][:2] == (Decimal("1.00"), 3), "the earlier occurrence (Price 9.99) is dropped whole"
    [event] = payloads(await inventory_events(rt, tenant.account_id))
    assert event["changed"] == [{"sku": "R", "price": None, "quantity": 3}, {"sku": "S", "price": None, "quantity": 7}]


async def test_case_insensitive_matching_exact_casing_wins_else_ambiguous(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("abc", "1", 1), ("ABC", "1", 1), ("Solo-1", "1", 1)])

    body = await push_ok(
        api,
        tenant,
        [{"Sku": "Abc", "Quantity": 5}, {"Sku": "ABC", "Quantity": 6}, {"Sku": "SOLO-1", "Quantity": 7}],
    )

    assert body["Results"] == [
        {"Sku": "Abc", "Result": "Ambiguous"},
        {"Sku": "ABC", "Result": "Updated"},
        {"Sku": "SOLO-1", "Result": "Updated"},
    ]
    assert counts(body) == {"Updated": 2, "Unchanged": 0, "NotFound": 0, "Ambiguous": 1, "Failed": 0}
    after = await stored(rt, tenant.account_id)
    assert (after["abc"][1], after["ABC"][1], after["Solo-1"][1]) == (1, 6, 7)
    [event] = payloads(await inventory_events(rt, tenant.account_id))
    # The event names the product's own SKU, not the spelling the caller used.
    assert [entry["sku"] for entry in event["changed"]] == ["ABC", "Solo-1"]


async def test_case_variants_naming_one_product_collapse_to_the_last_occurrence(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("PLN-OLI-00018", "10.00", 67), ("Q-1", "1.00", 1)])

    body = await push_ok(api, tenant, [{"Sku": "PLN-OLI-00018", "Price": 77}, {"Sku": "pln-oli-00018", "Quantity": 67}])
    # One distinct SKU, one Result, under the last occurrence's spelling; the last occurrence wins whole.
    assert body["Results"] == [{"Sku": "pln-oli-00018", "Result": "Unchanged"}]
    assert counts(body) == {"Updated": 0, "Unchanged": 1, "NotFound": 0, "Ambiguous": 0, "Failed": 0}

    body = await push_ok(
        api,
        tenant,
        [
            {"Sku": "Q-1", "Quantity": 5},
            {"Sku": "Q-1", "Quantity": 6},
            {"Sku": "q-1", "Quantity": 7},
            {"Sku": "nope", "Quantity": 1},
            {"Sku": "NOPE", "Quantity": 2},
        ],
    )
    assert body["Results"] == [{"Sku": "q-1", "Result": "Updated"}, {"Sku": "NOPE", "Result": "NotFound"}]
    assert counts(body) == {"Updated": 1, "Unchanged": 0, "NotFound": 1, "Ambiguous": 0, "Failed": 0}
    after = await stored(rt, tenant.account_id)
    assert after["PLN-OLI-00018"][:2] == (Decimal("10.00"), 67)
    assert after["Q-1"][:2] == (Decimal("1.00"), 7)
    [event] = payloads(await inventory_events(rt, tenant.account_id))
    assert event["changed"] == [{"sku": "Q-1", "price": None, "quantity": 7}]


async def test_each_ambiguous_spelling_is_reported(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("abc", "1", 1), ("ABC", "1", 1)])

    body = await push_ok(
        api,
        tenant,
        [
            {"Sku": "Abc", "Quantity": 5},
            {"Sku": "aBC", "Quantity": 6},
            {"Sku": "abc", "Quantity": 2},
            {"Sku": "Abc", "Quantity": 8},
            {"Sku": "abc", "Quantity": 3},
        ],
    )
    assert body["Results"] == [
        {"Sku": "Abc", "Result": "Ambiguous"},
        {"Sku": "aBC", "Result": "Ambiguous"},
        {"Sku": "abc", "Result": "Updated"},
    ]
    assert counts(body) == {"Updated": 1, "Unchanged": 0, "NotFound": 0, "Ambiguous": 2, "Failed": 0}
    after = await stored(rt, tenant.account_id)
    assert (after["abc"][1], after["ABC"][1]) == (3, 1)


async def test_an_equal_push_changes_nothing_and_fires_no_event(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    ids = await add_products(rt, tenant.account_id, [("E-1", "3.10", 4), ("E-2", "0.99", 0)])
    await add_listing(rt, tenant.account_id, ids["E-1"], tenant.marketplace("P1").id)
    items = [{"Sku": "E-1", "Price": 3.2, "Quantity": 4}, {"Sku": "E-2", "Price": 0.99, "Quantity": 1}]

    first = await push_ok(api, tenant, items)
    snapshot = await stored(rt, tenant.account_id)
    second = await push_ok(api, tenant, items)

    assert first["Updated"] == 2 and len(first["JobIds"]) == 1
    assert counts(second) == {"Updated": 0, "Unchanged": 2, "NotFound": 0, "Ambiguous": 0, "Failed": 0}
    assert second["JobIds"] == [], "nothing moved, so nothing is pushed to marketplaces"
    assert await stored(rt, tenant.account_id) == snapshot
    assert len(await inventory_events(rt, tenant.account_id)) == 1
    assert len(await jobs_of(rt, tenant.account_id)) == 1


async def test_prices_are_exact_decimals(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("X", "0", 0), ("Y", "0", 0)])

    response = await api.post(
        "/api/inventory/price-quantity",
        content=b'{"Items": [{"Sku": "X", "Price": 12345678901.1234}, {"Sku": "Y", "Price": 0.1000}]}',
        headers={**tenant.headers, "Content-Type": "application/json"},
    )

    assert response.status_code == 200, response.text
    after = await stored(rt, tenant.account_id)
    assert after["X"][0] == Decimal("12345678901.1234")
    assert after["Y"][0] == Decimal("0.1")


async def test_invalid_items_are_rejected_per_field_and_nothing_is_written(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("V", "1.00", 1)])
    items = [
        {"Sku": "V", "Quantity": 2},
        {"Sku": "V", "Price": 1.12345},
        {"Sku": "V", "Quantity": 1.5},
        {"Sku": "V", "Price": -0.01},
        {"Sku": "V", "Quantity": -1},
        {"Sku": ""},
        {"Price": 1},
        {"Sku": "V", "price": 1},
    ]

    response = await push(api, tenant, items)

    assert response.status_code == 400
    errors = problem(response)["errors"]
    assert problem(response)["code"] == "validation-failed"
    assert set(errors) == {
        "Items[1].Price",
        "Items[2].Quantity",
        "Items[3].Price",
        "Items[4].Quantity",
        "Items[5].Sku",
        "Items[6].Sku",
        "Items[7].price",
    }
    assert errors["Items[3].Price"] == ["Must not be negative."]
    assert errors["Items[1].Price"] == ["At most 4 decimal places."]
    assert (await stored(rt, tenant.account_id))["V"][1] == 1


async def test_a_price_in_quotes_is_refused_like_a_quantity_in_quotes(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Spec section 4: Price is a decimal and Quantity an integer, both JSON numbers: "19.99" and "3" are strings."""
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("V", "1.00", 1)])
    items = [
        {"Sku": "V", "Price": "19.99"},
        {"Sku": "V", "Quantity": "3"},
        {"Sku": "V", "Price": "19.99", "Quantity": "3"},
        {"Sku": "V", "Price": True},
        {"Sku": "V", "Price": ["1"]},
        {"Sku": "V", "Price": 19.99, "Quantity": 3},
    ]
    response = await push(api, tenant, items)
    assert response.status_code == 400, response.text
    errors = problem(response)["errors"]
    assert set(errors) == {
        "Items[0].Price",
        "Items[1].Quantity",
        "Items[2].Price",
        "Items[2].Quantity",
        "Items[3].Price",
        "Items[4].Price",
    }
    assert all("JSON number" in message for message in errors["Items[0].Price"])
    assert (await stored(rt, tenant.account_id))["V"][:2] == (Decimal("1.00"), 1)

    # The same values as numbers are taken.
    body = await push_ok(api, tenant, [{"Sku": "V", "Price": 19.99, "Quantity": 3}])
    assert body["Updated"] == 1
    assert (await stored(rt, tenant.account_id))["V"][:2] == (Decimal("19.99"), 3)


async def test_item_count_limits(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    for body in ({"Items": []}, {"Items": [{"Sku": f"S{i}", "Quantity": 1} for i in range(501)]}, {}):
        response = await api.post("/api/inventory/price-quantity", json=body, headers=tenant.headers)
        assert response.status_code == 400, body
        assert "Items" in problem(response)["errors"]
    ok = await push_ok(api, tenant, [{"Sku": f"S{i}", "Quantity": 1} for i in range(500)])
    assert ok["NotFound"] == 500 and len(ok["Results"]) == 500


async def test_one_failing_sku_does_not_stop_the_others(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("OK-1", "1", 1), ("BOOM", "1", 1), ("OK-2", "1", 1)])
    await install_failure_trigger(rt, "BOOM")
    try:
        body = await push_ok(
            api,
            tenant,
            [{"Sku": "OK-1", "Quantity": 10}, {"Sku": "BOOM", "Quantity": 10}, {"Sku": "OK-2", "Price": 2}],
        )
    finally:
        await drop_failure_trigger(rt)

    assert body["Results"] == [
        {"Sku": "OK-1", "Result": "Updated"},
        {"Sku": "BOOM", "Result": "Failed"},
        {"Sku": "OK-2", "Result": "Updated"},
    ]
    assert counts(body) == {"Updated": 2, "Unchanged": 0, "NotFound": 0, "Ambiguous": 0, "Failed": 1}
    after = await stored(rt, tenant.account_id)
    assert (after["OK-1"][1], after["BOOM"][1], after["OK-2"][0]) == (10, 1, Decimal("2"))
    [event] = payloads(await inventory_events(rt, tenant.account_id))
    assert [entry["sku"] for entry in event["changed"]] == ["OK-1", "OK-2"]


async def test_a_sku_with_surrounding_white_space_is_looked_up_as_sent(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Decision 0339: the push never trims a SKU nor refuses it for its white space (Create does: such a SKU is never
    stored by the API). " PAD-1 " is a SKU no product carries: NotFound, echoed as sent, and the rest of the batch
    is applied (rule 4); it is not Failed (nothing matched) and not a 400 (that would stop the whole batch)."""
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("PAD-1", "1", 1), ("PAD-2", "1", 1)])
    body = await push_ok(
        api,
        tenant,
        [
            {"Sku": " PAD-1 ", "Quantity": 5},
            {"Sku": "PAD-1", "Quantity": 3},
            {"Sku": "PAD-2\t", "Quantity": 9},
            {"Sku": "pad-2 ", "Price": 4},
        ],
    )
    assert body["Results"] == [
        {"Sku": " PAD-1 ", "Result": "NotFound"},
        {"Sku": "PAD-1", "Result": "Updated"},
        {"Sku": "PAD-2\t", "Result": "NotFound"},
        {"Sku": "pad-2 ", "Result": "NotFound"},
    ]
    assert counts(body) == {"Updated": 1, "Unchanged": 0, "NotFound": 3, "Ambiguous": 0, "Failed": 0}
    after = await stored(rt, tenant.account_id)
    assert (after["PAD-1"][1], after["PAD-2"][:2]) == (3, (Decimal("1"), 1))
    assert (await push(api, tenant, [{"Sku": "  ", "Quantity": 1}])).status_code == 400  # blank: still a 400


async def test_propagation_schedules_one_job_per_affected_active_connection(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P2", "DE"), ("P3", "US"), ("P4", "FR")))
    p1, p2, p3, p4 = (tenant.marketplace(p).id for p in ("P1", "P2", "P3", "P4"))
    ids = await add_products(rt, tenant.account_id, [("A", "1", 1), ("B", "1", 1), ("C", "1", 1), ("D", "1", 1)])
    await add_listing(rt, tenant.account_id, ids["A"], p1)
    await add_listing(rt, tenant.account_id, ids["A"], p2)
    await add_listing(rt, tenant.account_id, ids["B"], p1)
    await add_listing(rt, tenant.account_id, ids["C"], p3)  # P3 is paused below: skipped
    await add_listing(rt, tenant.account_id, ids["D"], p4, listing_id=None, status="Draft")  # not at P4 yet
    async with rt.db.transaction() as session:
        from marketsync.marketplaces import service as marketplaces

        await marketplaces.set_state(session, tenant.account_id, p3, "Paused")

    body = await push_ok(api, tenant, [{"Sku": s, "Quantity": 5} for s in "ABCD"])

    assert body["Updated"] == 4
    assert len(body["JobIds"]) == 2
    jobs = {job.payload["MarketplaceId"]: job for job in await jobs_of(rt, tenant.account_id)}
    assert set(jobs) == {p1, p2}
    assert jobs[p1].payload == {"MarketplaceId": p1, "ProductIds": sorted([ids["A"], ids["B"]])}
    assert jobs[p2].payload == {"MarketplaceId": p2, "ProductIds": [ids["A"]]}
    assert {job.id for job in jobs.values()} == set(body["JobIds"])
    for stored_job in jobs.values():
        response = await api.get(f"/api/jobs/{stored_job.id}", headers=tenant.headers)
        assert response.status_code == 200, response.text
        job = response.json()
        assert job["Type"] == "PriceStockPush"
        assert job["Status"] == "Published" and job["IsComplete"] is False
        assert job["ProgressTotal"] == len(stored_job.payload["ProductIds"])


async def test_propagate_false_schedules_nothing(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    ids = await add_products(rt, tenant.account_id, [("A", "1", 1)])
    await add_listing(rt, tenant.account_id, ids["A"], tenant.marketplace("P1").id)

    body = await push_ok(api, tenant, [{"Sku": "A", "Quantity": 2}], PropagateToListings=False)

    assert body["Updated"] == 1 and body["JobIds"] == []
    assert await jobs_of(rt, tenant.account_id) == []
    assert len(await inventory_events(rt, tenant.account_id)) == 1


async def test_drift_warning_while_a_marketplace_owns_the_pushed_kind(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("W", "1", 1)])

    never_set = await push_ok(api, tenant, [{"Sku": "W", "Price": 2, "Quantity": 2}])
    assert len(never_set["Warnings"]) == 2
    assert "Price is owned by the marketplace" in never_set["Warnings"][0]
    assert "Stock is owned by the marketplace" in never_set["Warnings"][1]
    assert never_set["Updated"] == 1, "a push of a value a marketplace owns still writes"

    async with rt.db.transaction() as session:
        await service.set_data_owner(rt, session, tenant.account_id, "Price", "Merchant")
    price_only = await push_ok(api, tenant, [{"Sku": "W", "Price": 3}])
    assert price_only["Warnings"] == []
    stock = await push_ok(api, tenant, [{"Sku": "W", "Quantity": 3}])
    assert len(stock["Warnings"]) == 1 and "Stock" in stock["Warnings"][0]

    async with rt.db.transaction() as session:
        await service.set_data_owner(rt, session, tenant.account_id, "stock", "merchant")
        assert await service.data_owner(session, tenant.account_id, "Stock") == "Merchant"
    both = await push_ok(api, tenant, [{"Sku": "W", "Price": 3, "Quantity": 3}])
    assert both["Warnings"] == [] and both["Unchanged"] == 1


async def test_push_needs_inventory_write_and_sees_only_its_account(rt: Runtime, api: httpx.AsyncClient) -> None:
    reader = await make_tenant(rt, api, scopes=("InventoryRead",))
    response = await push(api, reader, [{"Sku": "A", "Quantity": 1}])
    assert response.status_code == 403
    assert problem(response)["code"] == "insufficient-scope"

    owner = await make_tenant(rt, api)
    other = await make_tenant(rt, api)
    await add_products(rt, owner.account_id, [("MINE", "1", 1)])
    body = await push_ok(api, other, [{"Sku": "MINE", "Quantity": 50}])
    assert body["Results"] == [{"Sku": "MINE", "Result": "NotFound"}]
    assert (await stored(rt, owner.account_id))["MINE"][1] == 1


async def test_a_loop_of_pushes_queues_one_job_per_connection_not_one_per_push(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """Backpressure (issue 14's probe: a 60-second push loop queued 1,516 jobs): pushes coalesce into the job still
    queued for the connection, which sends the latest values when it runs."""
    from marketsync.jobs.worker import Worker
    from tests.marketplaces.support import listed_product, sandbox_listings

    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    connection = tenant.marketplace("P1")
    products = [await listed_product(rt, connection, sku) for sku in ("LOOP-A", "LOOP-B")]
    job_ids = set()
    for quantity in range(6, 36):
        sku = "LOOP-A" if quantity % 2 else "LOOP-B"
        job_ids |= set((await push_ok(api, tenant, [{"Sku": sku, "Quantity": quantity}]))["JobIds"])
    [job] = await jobs_of(rt, tenant.account_id)
    assert job_ids == {job.id}
    # Each product once, in the order first pushed (LOOP-B, then LOOP-A); a later push's products are a row of their
    # own, not a rewrite of the payload (docs/decisions/0304), and only those the job lacks (0461): 28 of the 30
    # pushes added nothing. The total counts the job's products.
    assert job.payload == {"MarketplaceId": connection.id, "ProductIds": [products[1].id]}
    async with rt.db.read() as session:
        sent = await job_service.price_stock_push_products(session, job.id, PriceStockPushPayload.of(job.payload))
        assert await job_repository.added_products(session, job.id) == [[products[0].id]]
    assert sent == [products[1].id, products[0].id]
    assert job.progress_total == 2

    await Worker(rt).drain()
    [done] = await jobs_of(rt, tenant.account_id)
    assert done.status == "Completed"
    remote = await sandbox_listings(rt, connection)
    assert (remote["LOOP-A"].quantity, remote["LOOP-B"].quantity) == (35, 34)  # the latest values, sent once
    assert remote["LOOP-A"].feed_updates == remote["LOOP-B"].feed_updates == 1
    # A job that already ran is never extended: the next push queues a new one.
    again = await push_ok(api, tenant, [{"Sku": "LOOP-A", "Quantity": 99}])
    assert again["JobIds"] and again["JobIds"][0] != job.id
