"""POST /api/products/Create: every check of spec section 4 (items 1 to 7) and section 7, on both backends."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from marketsync.models import IdempotencyRecord, Listing, Product
from marketsync.runtime import Runtime
from tests.catalog.support import (
    anchor_id,
    counts,
    create,
    create_payload,
    events_of,
    load_taxonomies,
    phone_attributes,
    run_jobs,
    schema,
)
from tests.support.factories import Tenant, make_connection, make_tenant, problem


async def _tenant(rt: Runtime, api: httpx.AsyncClient) -> Tenant:
    await load_taxonomies(rt, ("P1", "P2"))
    return await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P2", "DE")))


async def _listing(rt: Runtime, account_id: str, sku: str) -> tuple[Product, Listing | None]:
    async with rt.db.read() as session:
        product = (
            await session.execute(select(Product).where(Product.account_id == account_id, Product.sku == sku))
        ).scalar_one()
        listing = (await session.execute(select(Listing).where(Listing.product_id == product.id))).scalar_one_or_none()
        return product, listing


async def test_each_check_rejects_a_payload_failing_it_alone_and_writes_nothing(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await _tenant(rt, api)
    base = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1")
    p1_phone = await schema(api, tenant, "P1", anchor_id("P1", "Smartphones"))
    p2_shirt = await schema(api, tenant, "P2", anchor_id("P2", "T-Shirts"))
    inner = (
        await api.post(
            "/api/product-types/Search",
            json={"MarketplaceId": tenant.marketplace("P2").id, "SearchText": "Mobile Phones"},
            headers=tenant.headers,
        )
    ).json()
    assert inner["TotalCount"] == 0  # an inner category: never returned by search

    def with_attributes(**changes: Any) -> dict[str, Any]:
        return {**base, "Attributes": phone_attributes(**changes)}

    without_model = {**base, "Attributes": {k: v for k, v in base["Attributes"].items() if k != "Model"}}
    cases: list[tuple[str, dict[str, Any], str, str]] = [
        ("unknown code", with_attributes(Bogus="x"), "Attributes.Bogus", "schema"),
        ("app-managed code", with_attributes(PromotionRate="5"), "Attributes.PromotionRate", "app"),
        ("closed set", with_attributes(Colour="PURPLE"), "Attributes.Colour", "not allowed"),
        ("narrowed closed set", with_attributes(StorageCapacityGb=16), "Attributes.StorageCapacityGb", "not allowed"),
        ("integer shape", with_attributes(BatteryLifeHours=12.5), "Attributes.BatteryLifeHours", "whole number"),
        ("integer text shape", with_attributes(BatteryLifeHours="12h"), "Attributes.BatteryLifeHours", "whole"),
        ("decimal shape", with_attributes(ScreenSizeIn="6,1"), "Attributes.ScreenSizeIn", "dot-decimal"),
        ("date shape", with_attributes(ReleaseDate="31/12/2024"), "Attributes.ReleaseDate", "YYYY-MM-DD"),
        ("boolean shape", with_attributes(BatteriesIncluded="yes"), "Attributes.BatteriesIncluded", "true or false"),
        ("required absent", without_model, "Attributes.Model", "Required."),
        (
            "view of another marketplace",
            {**base, "ProductTypeViewId": p1_phone["ProductTypeViewId"]},
            "ProductTypeViewId",
            "P1",
        ),
        (
            "view of another category",
            {**base, "ProductTypeViewId": p2_shirt["ProductTypeViewId"]},
            "ProductTypeViewId",
            "category",
        ),
        ("unknown view", {**base, "ProductTypeViewId": "01AAAAAAAAAAAAAAAAAAAAAAAA"}, "ProductTypeViewId", "Unknown"),
        (
            "P2 without CategoryId",
            {k: v for k, v in base.items() if k not in ("CategoryId", "ProductTypeViewId", "Attributes")},
            "CategoryId",
            "POST /api/product-types/Search",
        ),
        (
            "Attributes without CategoryId",
            {"Sku": "X", "MarketplaceId": tenant.marketplace("P1").id, "Attributes": {"Title": "x"}},
            "Attributes",
            "CategoryId",
        ),
        ("Sku missing", {k: v for k, v in base.items() if k != "Sku"}, "Sku", "Required."),
        ("Sku not a string", {**base, "Sku": 42}, "Sku", "string"),
        ("Quantity negative", {**base, "Quantity": -1}, "Quantity", "between"),
        ("Quantity beyond 64 bits", {**base, "Quantity": 10**20}, "Quantity", "between 0 and 2147483647"),
        ("Quantity too large", {**base, "Quantity": 2**31}, "Quantity", "between 0 and 2147483647"),
        ("Quantity a fraction", {**base, "Quantity": 1.5}, "Quantity", "whole number"),
        ("CategoryId a number", {**base, "CategoryId": 30022}, "CategoryId", "string"),
        ("unknown field", {**base, "sku": "lower"}, "sku", "case-exact"),
    ]
    for name, payload, key, fragment in cases:
        response = await create(api, tenant, payload)
        assert response.status_code == 400, (name, response.text)
        body = problem(response)
        assert body["code"] == "validation-failed"
        assert set(body["errors"]) == {key}, (name, body["errors"])
        assert fragment in " ".join(body["errors"][key]), (name, body["errors"])
    assert await counts(rt, tenant.account_id) == (0, 0, 0)


async def test_unknown_category_or_marketplace_is_404_and_writes_nothing(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await _tenant(rt, api)
    other = await make_tenant(rt, api, marketplaces=(("P2", "DE"),))
    base = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1")
    for payload in (
        {**base, "CategoryId": "999999999"},
        {**base, "CategoryId": anchor_id("P1", "T-Shirts")},  # a P1 category is not one of P2
        {**base, "MarketplaceId": other.marketplace("P2").id},  # another account's connection
    ):
        response = await create(api, tenant, payload)
        assert response.status_code == 404, response.text
        assert problem(response)["code"] == "not-found"
    assert await counts(rt, tenant.account_id) == (0, 0, 0)


async def test_an_unknown_marketplace_or_category_is_named_beside_every_other_bad_field(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """Spec section 7: "One 400 names every bad field". An unknown MarketplaceId or CategoryId is a 404 alone;
    with another bad field it is one of the fields the 400 names, and the attributes are still checked against
    the schema the caller named (ProductTypeViewId of that CategoryId)."""
    tenant = await _tenant(rt, api)
    other = await make_tenant(rt, api, marketplaces=(("P2", "DE"),))
    paused = await make_connection(rt, tenant.account_id, "P3", "US", state="Paused")
    base = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1")
    bad_attributes = {**base["Attributes"], "Colour": "PURPLE", "Model": None}
    cases: list[tuple[dict[str, Any], set[str], str]] = [
        ({**base, "CategoryId": "999999999", "Sku": 42}, {"Sku", "CategoryId"}, "CategoryId"),
        ({**base, "CategoryId": "999999999", "Quantity": -1}, {"Quantity", "CategoryId"}, "CategoryId"),
        ({**base, "MarketplaceId": other.marketplace("P2").id, "Sku": 42}, {"Sku", "MarketplaceId"}, "MarketplaceId"),
        ({**base, "MarketplaceId": paused.id, "ValidateOnly": 1}, {"ValidateOnly", "MarketplaceId"}, "MarketplaceId"),
        (
            {**base, "MarketplaceId": other.marketplace("P2").id, "Attributes": bad_attributes},
            {"MarketplaceId", "Attributes.Colour", "Attributes.Model"},
            "MarketplaceId",
        ),
        (
            {**base, "MarketplaceId": "no-such-marketplace", "Sku": "", "Attributes": bad_attributes},
            {"Sku", "MarketplaceId", "Attributes.Colour", "Attributes.Model"},
            "MarketplaceId",
        ),
    ]
    for payload, keys, unknown in cases:
        response = await create(api, tenant, payload)
        assert response.status_code == 400, (keys, response.text)
        errors = problem(response)["errors"]
        assert set(errors) == keys, errors
        assert any(word in errors[unknown][0] for word in ("No active marketplace", "not a category")), errors
    assert await counts(rt, tenant.account_id) == (0, 0, 0)


async def test_inner_category_is_refused(rt: Runtime, api: httpx.AsyncClient) -> None:
    from marketsync.marketplaces.sandbox import taxonomies as shipped

    tenant = await _tenant(rt, api)
    inner = next(c for c in shipped.generate("P2", 1, 300).categories if not c.is_leaf)
    base = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1")
    response = await create(api, tenant, {**base, "CategoryId": inner.category_id, "ProductTypeViewId": None})
    assert response.status_code == 400
    assert set(problem(response)["errors"]) == {"CategoryId"}
    assert await counts(rt, tenant.account_id) == (0, 0, 0)


async def test_one_400_names_five_failed_checks_at_once(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await _tenant(rt, api)
    base = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1")
    p1_phone = await schema(api, tenant, "P2", anchor_id("P2", "T-Shirts"))
    payload = {
        **base,
        "ProductTypeViewId": p1_phone["ProductTypeViewId"],  # another category's view
        "Attributes": {
            "Title": "Phone",
            "Brand": "Acme",
            "Condition": "NEW",
            # Model (required) missing
            "StorageCapacityGb": 16,  # not in this category's narrowed set
            "BatteryLifeHours": "ten",  # not a whole number
            "PromotionRate": "3",  # managed in the app
            "Bogus": 1,  # not in the schema
        },
    }
    response = await create(api, tenant, payload)
    assert response.status_code == 400
    errors = problem(response)["errors"]
    assert set(errors) == {
        "ProductTypeViewId",
        "Attributes.Model",
        "Attributes.StorageCapacityGb",
        "Attributes.BatteryLifeHours",
        "Attributes.PromotionRate",
        "Attributes.Bogus",
    }
    assert errors["Attributes.Model"] == ["Required."]
    assert await counts(rt, tenant.account_id) == (0, 0, 0)


async def test_values_are_normalised_closed_sets_case_insensitive_custom_values_kept(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await _tenant(rt, api)
    payload = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1")
    payload["Attributes"] = phone_attributes(
        Condition="new",  # closed set, other case
        Brand="My Own Brand",  # AllowsCustomValues: any value
        Colour="Silver",
        StorageCapacityGb="256",
        ScreenSizeIn=6.1,
        BatteryLifeHours=20.0,
        ReleaseDate="2025-09-01",
        BatteriesIncluded=True,
        Voltage="3.70",
    )
    response = await create(api, tenant, payload)
    assert response.status_code == 200, response.text
    _, listing = await _listing(rt, tenant.account_id, "PHONE-1")
    assert listing is not None
    assert listing.attributes == {
        "Title": "Acme Phone 12",
        "Brand": "My Own Brand",
        "Condition": "NEW",
        "Model": "AP-12",
        "Colour": "SILVER",
        "StorageCapacityGb": 256,
        "ScreenSizeIn": "6.1",
        "BatteryLifeHours": 20,
        "ReleaseDate": "2025-09-01",
        "BatteriesIncluded": True,
        "Voltage": "3.7",
    }
    assert listing.category_id == anchor_id("P2", "Smartphones")
    assert listing.status == "Pending"


async def test_p1_may_omit_category_and_attributes(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await _tenant(rt, api)
    response = await create(api, tenant, {"Sku": "BARE-1", "MarketplaceId": tenant.marketplace("P1").id})
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"RequestId", "ProductId", "Sku", "ListingAction", "ExistingListingId", "JobId", "Warnings"}
    assert body["ListingAction"] == "Create"
    assert body["ExistingListingId"] is None
    assert body["Warnings"] == []
    assert body["RequestId"] == response.headers["x-request-id"]
    product, listing = await _listing(rt, tenant.account_id, "BARE-1")
    assert product.id == body["ProductId"]
    assert listing is not None and listing.category_id is None and listing.attributes == {}
    job = await api.get(f"/api/jobs/{body['JobId']}", headers=tenant.headers)
    assert job.json()["Type"] == "ListingPublish"


async def test_p1_category_is_stamped_and_optional_view_id(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await _tenant(rt, api)
    payload = await create_payload(api, tenant, "P1", "Smartphones", "P1-PHONE")
    del payload["ProductTypeViewId"]  # optional: the current schema is used
    response = await create(api, tenant, payload)
    assert response.status_code == 200, response.text
    _, listing = await _listing(rt, tenant.account_id, "P1-PHONE")
    assert listing is not None and listing.category_id == "15032"


async def test_off_api_requirements_come_back_as_warnings(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await _tenant(rt, api)
    payload = await create_payload(api, tenant, "P2", "T-Shirts", "TEE-1")
    response = await create(api, tenant, payload)
    assert response.status_code == 200, response.text
    warnings = response.json()["Warnings"]
    assert len(warnings) == 1 and warnings[0].startswith("Images:")
    assert await counts(rt, tenant.account_id) == (1, 1, 1)  # saved and queued all the same


async def test_upsert_is_a_partial_update_counting_values_the_listing_holds(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await _tenant(rt, api)
    payload = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1", Quantity=5)
    first = await create(api, tenant, payload)
    assert first.status_code == 200, first.text
    await run_jobs(rt)
    _, listing = await _listing(rt, tenant.account_id, "PHONE-1")
    assert listing is not None and listing.listing_id and listing.status == "Live"

    update = {**payload, "Attributes": {"Title": "Acme Phone 12 (2025)"}}
    del update["Quantity"]
    second = await create(api, tenant, update)
    assert second.status_code == 200, second.text
    body = second.json()
    assert body["ListingAction"] == "Revise"
    assert body["ExistingListingId"] == listing.listing_id
    assert body["ProductId"] == first.json()["ProductId"]
    product, listing = await _listing(rt, tenant.account_id, "PHONE-1")
    assert listing is not None
    assert listing.attributes["Title"] == "Acme Phone 12 (2025)"
    assert listing.attributes["Model"] == "AP-12"  # held by the listing: counts as present
    assert product.quantity == 5  # Quantity omitted: stock untouched
    assert await counts(rt, tenant.account_id) == (1, 1, 2)

    cleared = {**update, "Attributes": {"Model": None}}  # null clears; Model is required
    response = await create(api, tenant, cleared)
    assert response.status_code == 400
    assert problem(response)["errors"] == {"Attributes.Model": ["Required."]}


async def test_quantity_moves_stock_through_inventory_and_fires_inventory_changed(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await _tenant(rt, api)
    payload = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1", Quantity=7)
    assert (await create(api, tenant, payload)).status_code == 200
    assert (await create(api, tenant, payload)).status_code == 200  # same quantity: nothing moves
    assert (await create(api, tenant, {**payload, "Quantity": 0})).status_code == 200
    events = await events_of(rt, tenant.account_id, "InventoryChanged")
    assert [e["changed"] for e in events] == [
        [{"sku": "PHONE-1", "price": None, "quantity": 7}],
        [{"sku": "PHONE-1", "price": None, "quantity": 0}],
    ]
    assert events[0]["source"] == {"writer": "MerchantPush", "channel": "Api", "userPlatformId": None}
    product, _ = await _listing(rt, tenant.account_id, "PHONE-1")
    assert product.quantity == 0


async def test_a_new_product_is_born_with_its_stock_and_the_inventory_changed_of_that_move(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """Create writes a new product's Quantity with the row (no read-back): the same InventoryChanged as a move from
    0, none for 0 or no Quantity; an existing product's Title and Quantity still move together."""
    tenant = await _tenant(rt, api)
    for sku, extra in (("NEW-0", {"Quantity": 0}), ("NEW-NONE", {}), ("NEW-5", {"Quantity": 5})):
        payload = await create_payload(api, tenant, "P2", "Smartphones", sku, **extra)
        assert (await create(api, tenant, payload)).status_code == 200
    events = await events_of(rt, tenant.account_id, "InventoryChanged")
    assert [e["changed"] for e in events] == [[{"sku": "NEW-5", "price": None, "quantity": 5}]]
    assert events[0]["source"] == {"writer": "MerchantPush", "channel": "Api", "userPlatformId": None}
    assert (events[0]["truncated"], events[0]["totalChanged"]) == (False, 1)
    born, _ = await _listing(rt, tenant.account_id, "NEW-5")
    assert born.quantity == 5
    # occurredAt is the product's LastModifiedDate (the event carries milliseconds)
    assert datetime.fromisoformat(events[0]["occurredAt"]) == born.modified_at.replace(
        microsecond=born.modified_at.microsecond // 1000 * 1000
    )
    assert [(await _listing(rt, tenant.account_id, sku))[0].quantity for sku in ("NEW-0", "NEW-NONE")] == [0, 0]

    attributes = phone_attributes(Title="Acme Phone 13")
    payload = await create_payload(api, tenant, "P2", "Smartphones", "NEW-5", Quantity=6, Attributes=attributes)
    assert (await create(api, tenant, payload)).status_code == 200
    moved, _ = await _listing(rt, tenant.account_id, "NEW-5")
    assert (moved.title, moved.quantity) == ("Acme Phone 13", 6)
    events = await events_of(rt, tenant.account_id, "InventoryChanged")
    assert [e["changed"] for e in events][1:] == [[{"sku": "NEW-5", "price": None, "quantity": 6}]]


async def test_sku_upserts_on_exact_casing_and_creates_case_variants(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await _tenant(rt, api)
    payload = await create_payload(api, tenant, "P2", "Smartphones", "Case-Sku")
    first = await create(api, tenant, payload)
    assert first.status_code == 200, first.text

    # Another casing is another SKU: a new product (spec: case variants can exist, reads then 409).
    variant = await create(api, tenant, {**payload, "Sku": "CASE-SKU"})
    assert variant.status_code == 200, variant.text
    body = variant.json()
    assert body["Sku"] == "CASE-SKU" and body["ProductId"] != first.json()["ProductId"]
    assert body["ListingAction"] == "Create"
    assert any("'Case-Sku'" in warning and "Ambiguous" in warning for warning in body["Warnings"])
    assert await counts(rt, tenant.account_id) == (2, 2, 2)

    # The exact casing upserts the existing entry.
    again = await create(api, tenant, {**payload, "Quantity": 4})
    assert again.status_code == 200 and again.json()["ProductId"] == first.json()["ProductId"]
    assert await counts(rt, tenant.account_id) == (2, 2, 3)

    conflict = await api.get("/api/products/case-sku", headers=tenant.headers)
    assert conflict.status_code == 409 and problem(conflict)["code"] == "conflict"
    exact = await api.get("/api/products/Case-Sku", headers=tenant.headers)
    assert exact.status_code == 200 and exact.json()["Product"]["Quantity"] == 4
    pushed = await api.post(
        "/api/inventory/price-quantity",
        json={"Items": [{"Sku": "case-sku", "Quantity": 1}, {"Sku": "CASE-SKU", "Quantity": 2}]},
        headers=tenant.headers,
    )
    assert pushed.status_code == 200
    assert pushed.json()["Results"] == [
        {"Sku": "case-sku", "Result": "Ambiguous"},
        {"Sku": "CASE-SKU", "Result": "Updated"},
    ]


async def test_idempotency_key_makes_a_retry_create_one_product_and_one_job(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await _tenant(rt, api)
    payload = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1", Quantity=3)
    first = await create(api, tenant, payload, **{"Idempotency-Key": "create-phone-1"})
    retry = await create(api, tenant, payload, **{"Idempotency-Key": "create-phone-1"})
    assert first.status_code == retry.status_code == 200
    assert retry.json() == first.json()
    assert retry.headers.get("idempotent-replayed") == "true"
    assert await counts(rt, tenant.account_id) == (1, 1, 1)
    assert len(await events_of(rt, tenant.account_id, "InventoryChanged")) == 1

    rejected = {**payload, "Attributes": {"Bogus": 1}}
    for _ in range(2):  # a rejection claims nothing: the same key may be retried with a fixed body
        response = await create(api, tenant, rejected, **{"Idempotency-Key": "create-phone-2"})
        assert response.status_code == 400
    fixed = await create(api, tenant, {**payload, "Sku": "PHONE-2"}, **{"Idempotency-Key": "create-phone-2"})
    assert fixed.status_code == 200, fixed.text
    assert await counts(rt, tenant.account_id) == (2, 2, 2)


async def test_validate_only_answers_the_outcome_and_writes_nothing(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await _tenant(rt, api)
    payload = await create_payload(api, tenant, "P2", "T-Shirts", "TEE-1", Quantity=4)
    dry = await create(api, tenant, {**payload, "ValidateOnly": True})
    assert dry.status_code == 200, dry.text
    body = dry.json()
    assert body["ListingAction"] == "Create"
    assert body["JobId"] is None and body["ProductId"] is None
    assert body["Warnings"] and body["Warnings"][0].startswith("Images:")
    # Nothing is saved by a dry run, and the warning does not claim otherwise.
    assert "If you create it, the listing is saved and queued" in body["Warnings"][0]
    assert "The listing is saved" not in body["Warnings"][0]
    assert await counts(rt, tenant.account_id) == (0, 0, 0)
    assert await events_of(rt, tenant.account_id, "InventoryChanged") == []

    bad = await create(api, tenant, {**payload, "ValidateOnly": True, "Attributes": {"Size": "XXXL"}})
    real_bad = await create(api, tenant, {**payload, "Attributes": {"Size": "XXXL"}})
    assert bad.status_code == real_bad.status_code == 400
    assert problem(bad)["errors"] == problem(real_bad)["errors"]
    assert await counts(rt, tenant.account_id) == (0, 0, 0)

    real = await create(api, tenant, payload)
    assert real.status_code == 200
    assert "The listing is saved and queued" in real.json()["Warnings"][0]
    await run_jobs(rt)  # T-Shirts lacks Images: the marketplace rejects it, so it stays a Create
    again = await create(api, tenant, {**payload, "ValidateOnly": True})
    assert again.json()["ListingAction"] == "Create"
    assert again.json()["ProductId"] is not None
    assert await counts(rt, tenant.account_id) == (1, 1, 1)


async def test_scopes_and_bad_json(rt: Runtime, api: httpx.AsyncClient) -> None:
    await load_taxonomies(rt, ("P1",))
    reader = await make_tenant(rt, api, scopes=("InventoryRead",), marketplaces=(("P1", "UK"),))
    response = await create(api, reader, {"Sku": "X", "MarketplaceId": reader.marketplace("P1").id})
    assert response.status_code == 403
    writer = await make_tenant(rt, api, scopes=("InventoryWrite",), marketplaces=(("P1", "UK"),))
    response = await api.post(
        "/api/products/Create", content=b"{not json", headers={**writer.headers, "Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert set(problem(response)["errors"]) == {"body"}
    assert await counts(rt, writer.account_id) == (0, 0, 0)


@pytest.mark.parametrize("key", ["", "k" * 256])
async def test_a_bad_idempotency_key_is_named_beside_every_bad_field(
    rt: Runtime, api: httpx.AsyncClient, key: str
) -> None:
    """A bad Idempotency-Key used to be the only field named (the key was read before the body was checked); it is
    one more bad field now, an unknown MarketplaceId (a 404 alone) is named beside it, and nothing is written."""
    tenant = await _tenant(rt, api)
    payload = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1")
    headers = {"Idempotency-Key": key}
    cases: list[tuple[dict[str, Any], set[str]]] = [
        (
            {**payload, "Sku": 42, "Attributes": {**payload["Attributes"], "Bogus": 1}},
            {"Idempotency-Key", "Sku", "Attributes.Bogus"},
        ),
        ({**payload, "MarketplaceId": "no-such-marketplace"}, {"Idempotency-Key", "MarketplaceId"}),
        ({**payload, "CategoryId": "999999999"}, {"Idempotency-Key", "CategoryId"}),
        (payload, {"Idempotency-Key"}),  # nothing else wrong: the key alone
    ]
    for body, keys in cases:
        response = await create(api, tenant, body, **headers)
        assert response.status_code == 400, (keys, response.text)
        errors = problem(response)["errors"]
        assert set(errors) == keys, errors
        assert errors["Idempotency-Key"] == ["Must be 1 to 255 printable characters."]
    assert await counts(rt, tenant.account_id) == (0, 0, 0)
    async with rt.db.read() as session:
        assert (await session.execute(select(func.count()).select_from(IdempotencyRecord))).scalar_one() == 0
