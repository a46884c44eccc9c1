"""Amazon's product types as categories: the site's list loaded into the local taxonomy (search as for any kind),
each product type's definition mapped onto the spec's attribute model when its schema is asked for, create
validated against it and published with putListingsItem, Amazon's issues deciding Live or Rejected
(docs/decisions/0372-amazon-product-types-as-categories.md, 0378-amazon-publish.md)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from marketsync.catalog.taxonomy import service as catalog
from marketsync.jobs.worker import Worker
from marketsync.kit.clock import Clock, FrozenClock
from marketsync.marketplaces.amazon.simulator import product_types as sim_types
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime
from tests.marketplaces import support
from tests.marketplaces.amazon.support import amazon_connection, amazon_settings, spapi_calls
from tests.support.amazon import AmazonServer
from tests.support.factories import Tenant, make_tenant, problem


@pytest.fixture
def clock() -> Clock:
    return FrozenClock()


@pytest.fixture
def settings_overrides(amazon_simulator: AmazonServer) -> dict[str, Any]:
    return amazon_settings(amazon_simulator)


async def _tenant(rt: Runtime, api: httpx.AsyncClient, server: AmazonServer) -> tuple[Tenant, MarketplaceConnection]:
    tenant = await make_tenant(rt, api)
    connection, _ = await amazon_connection(rt, server, tenant.account_id)
    async with rt.db.transaction() as session:
        assert await catalog.load_categories_if_missing(rt, session, connection) is not None
    await Worker(rt).drain()
    return tenant, connection


async def _schema(api: httpx.AsyncClient, tenant: Tenant, connection: MarketplaceConnection, category: str) -> Any:
    answer = await api.get(
        "/api/product-types/Schema",
        params={"marketplaceId": connection.id, "categoryId": category},
        headers=tenant.headers,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


LUGGAGE = {
    "item_name": "Cabin case",
    "brand": "Acme",
    "product_description": "A hard cabin case.",
    "item_type_keyword": "suitcases",
    "bullet_point": "Fits in the overhead locker",
    "country_of_origin": "DE",
    "supplier_declared_dg_hz_regulation": "not_applicable",
    "condition_type": "new_new",
    "color": "teal",  # not a suggested value: custom values are allowed
    "material": "plastic",
    "item_weight.value": "2.5",
    "item_weight.unit": "kilograms",
}


async def test_search_is_amazons_product_type_list_held_locally(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer
) -> None:
    tenant, connection = await _tenant(rt, api, amazon_simulator)
    before = len(amazon_simulator.sim.requests)
    found = await api.post(
        "/api/product-types/Search",
        json={"MarketplaceId": connection.id, "SearchText": "lugg"},
        headers=tenant.headers,
    )
    assert found.status_code == 200, found.text
    assert found.json() == {
        "ProductTypes": [{"CategoryId": "LUGGAGE", "Title": "Luggage", "Path": "Luggage"}],
        "TotalCount": 1,
    }
    walk = await api.post("/api/product-types/Search", json={"MarketplaceId": connection.id}, headers=tenant.headers)
    assert walk.json()["TotalCount"] == len(sim_types.PRODUCT_TYPES)
    assert spapi_calls(amazon_simulator, before) == []  # searched locally


async def test_the_schema_is_the_definition_mapped_onto_the_attribute_model(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer
) -> None:
    tenant, connection = await _tenant(rt, api, amazon_simulator)

    schema = await _schema(api, tenant, connection, "LUGGAGE")

    site_version = sim_types.version_of(amazon_simulator.sim.product_types["LUGGAGE"], sim_site("UK"))
    assert (schema["CategoryId"], schema["CategoryPath"], schema["ProductTypeCode"]) == (
        "LUGGAGE",
        "Luggage",
        "LUGGAGE",
    )
    assert schema["SchemaVersion"] == site_version
    attributes = {a["Code"]: a for a in schema["Attributes"]}
    assert attributes["item_name"] == {
        "Code": "item_name",
        "Title": "Item Name",
        "Type": "Text",
        "IsRequired": True,
        "AllowedValues": [],
        "AllowsCustomValues": False,
    }
    color = attributes["color"]
    assert (color["Type"], color["IsRequired"], color["AllowsCustomValues"]) == ("Text", True, True)
    assert {"Value": "black", "Title": "Black"} in color["AllowedValues"]
    shell = attributes["shell_type"]
    assert (shell["IsRequired"], shell["AllowsCustomValues"]) == (False, False)
    assert [v["Value"] for v in shell["AllowedValues"]] == ["hard", "soft", "hybrid"]
    assert attributes["number_of_wheels"]["Type"] == "Integer"
    assert (attributes["item_weight.value"]["Type"], attributes["item_weight.unit"]["Type"]) == ("Decimal", "Text")
    assert attributes["condition_type"]["IsRequired"] is True
    # Price and stock are the catalogue's, never attributes of the create.
    assert not {"purchasable_offer", "fulfillment_availability"} & {code.split(".")[0] for code in attributes}

    again = await _schema(api, tenant, connection, "LUGGAGE")
    assert again["ProductTypeViewId"] == schema["ProductTypeViewId"]  # the same definition: the same view


async def test_a_boolean_attribute_and_a_changed_definition_gets_a_new_view(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer, clock: FrozenClock
) -> None:
    tenant, connection = await _tenant(rt, api, amazon_simulator)
    watch = await _schema(api, tenant, connection, "WATCH")
    batteries = next(a for a in watch["Attributes"] if a["Code"] == "batteries_required")
    assert (batteries["Type"], batteries["IsRequired"]) == ("Boolean", True)

    changed = amazon_simulator.sim.product_types["WATCH"]
    amazon_simulator.sim.add_product_types(
        [sim_types.ProductType(changed.name, changed.display_name, changed.keywords, changed.attributes[:1])]
    )
    forget_definitions(rt)  # as if the connector's copy of the definition had aged out
    newer = await _schema(api, tenant, connection, "WATCH")
    assert newer["ProductTypeViewId"] != watch["ProductTypeViewId"]
    assert newer["SchemaVersion"] != watch["SchemaVersion"]
    stale = await api.post(
        "/api/products/Create",
        json={
            "Sku": "W-1",
            "MarketplaceId": connection.id,
            "CategoryId": "WATCH",
            "ProductTypeViewId": watch["ProductTypeViewId"],
            "Attributes": {},
        },
        headers=tenant.headers,
    )
    assert stale.status_code == 400
    assert "Superseded" in problem(stale)["errors"]["ProductTypeViewId"][0]


async def test_create_validates_against_the_schema_and_a_missing_category_names_the_fix(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer
) -> None:
    tenant, connection = await _tenant(rt, api, amazon_simulator)
    schema = await _schema(api, tenant, connection, "LUGGAGE")
    no_category = await api.post(
        "/api/products/Create", json={"Sku": "L-1", "MarketplaceId": connection.id}, headers=tenant.headers
    )
    assert no_category.status_code == 400
    assert "Required for Amazon" in problem(no_category)["errors"]["CategoryId"][0]
    bad = await api.post(
        "/api/products/Create",
        json={
            "Sku": "L-1",
            "MarketplaceId": connection.id,
            "CategoryId": "LUGGAGE",
            "ProductTypeViewId": schema["ProductTypeViewId"],
            "Attributes": {**LUGGAGE, "brand": None, "shell_type": "cardboard", "number_of_wheels": "four"},
        },
        headers=tenant.headers,
    )
    assert bad.status_code == 400
    errors = problem(bad)["errors"]
    assert set(errors) == {"Attributes.brand", "Attributes.shell_type", "Attributes.number_of_wheels"}
    assert errors["Attributes.brand"] == ["Required."]
    unknown = await api.post(
        "/api/products/Create",
        json={"Sku": "L-1", "MarketplaceId": connection.id, "CategoryId": "NOT_A_TYPE", "Attributes": {}},
        headers=tenant.headers,
    )
    assert unknown.status_code == 404


async def test_create_publishes_with_put_listings_item_and_amazon_accepting_it_is_live(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer
) -> None:
    tenant, connection = await _tenant(rt, api, amazon_simulator)
    schema = await _schema(api, tenant, connection, "LUGGAGE")
    created = await api.post(
        "/api/products/Create",
        json={
            "Sku": "CASE-1",
            "Quantity": 4,
            "MarketplaceId": connection.id,
            "CategoryId": "LUGGAGE",
            "ProductTypeViewId": schema["ProductTypeViewId"],
            "Attributes": LUGGAGE,
        },
        headers=tenant.headers,
    )
    assert created.status_code == 200, created.text
    body = created.json()
    assert (body["ListingAction"], body["Warnings"]) == ("Create", [])
    before = len(amazon_simulator.sim.requests)

    await Worker(rt).drain()

    assert spapi_calls(amazon_simulator, before) == ["putListingsItem"]  # the definition was fetched already
    listing = await support.our_listing(rt, connection, body["ProductId"])
    assert listing is not None
    assert (await support.job(rt, body["JobId"])).status == "Completed", listing.last_error
    assert (listing.status, listing.listing_id, listing.external_sku) == ("Live", "CASE-1", "CASE-1")
    assert connection.seller_id is not None
    held = amazon_simulator.sim.listing(connection.seller_id, "UK", "CASE-1")
    assert held is not None and held.product_type == "LUGGAGE" and held.quantity == 4
    assert held.attributes["item_weight"] == [{"value": 2.5, "unit": "kilograms", "marketplace_id": "A1F83G8C2ARO7P"}]
    assert held.attributes["brand"] == [{"value": "Acme", "language_tag": "en_GB", "marketplace_id": "A1F83G8C2ARO7P"}]
    fired = await support.events(rt, tenant.account_id, "ListingPublished")
    assert [(e["payload"]["PublishedCount"], e["payload"]["FailedCount"]) for e in fired] == [(1, 0)]


async def test_amazons_issues_reject_the_listing_with_their_messages_shown(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer
) -> None:
    tenant, connection = await _tenant(rt, api, amazon_simulator)
    schema = await _schema(api, tenant, connection, "LUGGAGE")
    amazon_simulator.sim.reject_listing("CASE-2", "The brand Acme is not approved for this category.")
    created = await api.post(
        "/api/products/Create",
        json={
            "Sku": "CASE-2",
            "MarketplaceId": connection.id,
            "CategoryId": "LUGGAGE",
            "ProductTypeViewId": schema["ProductTypeViewId"],
            "Attributes": LUGGAGE,
        },
        headers=tenant.headers,
    )
    assert created.status_code == 200, created.text

    await Worker(rt).drain()

    listing = await support.our_listing(rt, connection, created.json()["ProductId"])
    assert listing is not None and listing.status == "Rejected"
    assert "The brand Acme is not approved for this category." in (listing.last_error or "")
    assert (await support.job(rt, created.json()["JobId"])).status == "Failed"
    fired = await support.events(rt, tenant.account_id)
    assert sorted((e["type"], e["payload"].get("FailedCount")) for e in fired) == [
        ("FeedOutcome", 1),
        ("ListingPublished", 1),
    ]


async def test_a_schema_amazon_cannot_send_is_a_503_until_one_is_stored(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer, clock: FrozenClock
) -> None:
    tenant, connection = await _tenant(rt, api, amazon_simulator)
    amazon_simulator.sim.fail_next("getDefinitionsProductType", status=503)
    answer = await api.get(
        "/api/product-types/Schema",
        params={"marketplaceId": connection.id, "categoryId": "SHOES"},
        headers=tenant.headers,
    )
    assert answer.status_code == 503
    assert problem(answer)["code"] == "unavailable"
    stored = await _schema(api, tenant, connection, "SHOES")
    forget_definitions(rt)
    amazon_simulator.sim.fail_next("getDefinitionsProductType", status=503)
    assert (await _schema(api, tenant, connection, "SHOES"))["ProductTypeViewId"] == stored["ProductTypeViewId"]
    assert catalog.SEARCH_DEFAULT_LIMIT == 50


def forget_definitions(rt: Runtime) -> None:
    from marketsync.marketplaces.amazon.client import services_of
    from marketsync.marketplaces.amazon.connector import _cache_of

    _cache_of(services_of(rt)).definitions.clear()


def sim_site(country: str) -> Any:
    from marketsync.marketplaces.amazon.regions import site_for_country

    return site_for_country(country)
