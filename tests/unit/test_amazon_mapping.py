"""Amazon's product type schemas on the spec's attribute model, and listings both ways (docs/decisions/0372, 0375,
0378): pure mappings, tested without a database or the simulator's HTTP."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from marketsync.catalog.taxonomy import AllowedValue
from marketsync.marketplaces.amazon import listings
from marketsync.marketplaces.amazon.product_types import amazon_attributes, map_schema
from marketsync.marketplaces.amazon.regions import site_for_country
from marketsync.marketplaces.amazon.simulator import product_types as sim_types
from marketsync.marketplaces.connector import ListingDraft

UK = site_for_country("UK")


def _scalar(value: dict[str, Any], *, localised: bool = True, required: tuple[str, ...] = ("value",)) -> dict[str, Any]:
    properties: dict[str, Any] = {"value": value, "marketplace_id": {"$ref": "#/$defs/marketplace_id"}}
    if localised:
        properties["language_tag"] = {"$ref": "#/$defs/language_tag"}
    return {"type": "array", "items": {"type": "object", "required": list(required), "properties": properties}}


SCHEMA: dict[str, Any] = {
    "$defs": {"marketplace_id": {"type": "string"}, "language_tag": {"type": "string"}},
    "required": ["item_name", "main_product_image_locator", "battery", "release_date"],
    "properties": {
        "item_name": {"title": "Item Name", **_scalar({"type": "string"})},
        "release_date": {"title": "Release Date", **_scalar({"type": "string", "format": "date"})},
        "main_product_image_locator": {
            "title": "Main Image",
            "type": "array",
            "items": {"type": "object", "properties": {"media_location": {"type": "string"}}},
        },
        "battery": {
            "title": "Battery",
            "type": "array",
            "items": {
                "type": "object",
                "required": ["cell_composition"],
                "properties": {"cell_composition": {"type": "array", "items": {"type": "object"}}},
            },
        },
        "purchasable_offer": {"title": "Offer", "type": "array", "items": {"type": "object"}},
        "optional_nested": {
            "title": "Nested",
            "type": "array",
            "items": {"type": "object", "properties": {"deep": {"type": "object"}}},
        },
    },
}


def test_what_the_model_cannot_carry_becomes_requirements_named_in_warnings() -> None:
    mapped = map_schema(SCHEMA)
    assert [a.code for a in mapped.attributes] == ["item_name", "release_date"]
    assert mapped.attributes[1].type == "Date"
    # A required main image is the app's Images; a required attribute nested deeper than the model is named; an
    # optional one is left out; the offer is the catalogue's.
    assert mapped.off_api_requirements == ("Images", "Amazon attribute battery")


def test_every_simulated_product_type_maps_with_each_required_attribute_carried_or_named() -> None:
    for product_type in sim_types.PRODUCT_TYPES:
        schema = sim_types.product_schema(product_type, UK)
        mapped = map_schema(schema)
        codes = {a.code.split(".")[0] for a in mapped.attributes if a.is_required}
        named = {r.removeprefix("Amazon attribute ") for r in mapped.off_api_requirements}
        required = set(schema["required"]) - {"purchasable_offer", "fulfillment_availability"}
        assert required <= codes | named, product_type.name


def test_closed_sets_suggestions_booleans_and_measures() -> None:
    mapped = map_schema(sim_types.product_schema(sim_types.PRODUCT_TYPES[0], UK))  # LUGGAGE
    by_code = {a.code: a for a in mapped.attributes}
    assert by_code["shell_type"].is_closed_set
    assert by_code["color"].allows_custom_values and AllowedValue("black", "Black") in by_code["color"].allowed_values
    weight, unit = by_code["item_weight.value"], by_code["item_weight.unit"]
    assert (weight.type, unit.type, unit.is_closed_set) == ("Decimal", "Text", True)
    assert mapped.shapes["item_weight"].fields == {"value": "number", "unit": "string"}
    assert mapped.shapes["item_name"].has_language_tag and not mapped.shapes["item_weight"].has_language_tag
    watch = map_schema(sim_types.product_schema(next(p for p in sim_types.PRODUCT_TYPES if p.batteries), UK))
    batteries = next(a for a in watch.attributes if a.code == "batteries_required")
    assert (batteries.type, [v.value for v in batteries.allowed_values]) == ("Boolean", ["true", "false"])


def test_flat_values_go_back_in_amazons_shape() -> None:
    mapped = map_schema(sim_types.product_schema(sim_types.PRODUCT_TYPES[0], UK))
    sent = amazon_attributes(
        mapped.shapes,
        {"item_name": "Case", "item_weight.value": "2.50", "item_weight.unit": "kilograms", "number_of_wheels": 4},
        UK.marketplace_id,
        UK.language,
    )
    assert sent == {
        "item_name": [{"value": "Case", "language_tag": "en_GB", "marketplace_id": "A1F83G8C2ARO7P"}],
        "item_weight": [{"value": 2.5, "unit": "kilograms", "marketplace_id": "A1F83G8C2ARO7P"}],
        "number_of_wheels": [{"value": 4, "marketplace_id": "A1F83G8C2ARO7P"}],
    }


def _draft(price: str | None, images: list[str]) -> ListingDraft:
    return ListingDraft(
        reference="L1", sku="SKU-1", external_sku=None, listing_id=None, category_id="LUGGAGE",
        attributes={}, title="A title", price=None if price is None else Decimal(price), quantity=3,
        app_fields={"Images": images},
    )  # fmt: skip


def test_a_publish_carries_title_offer_stock_and_images_and_without_a_price_only_the_product() -> None:
    shapes = map_schema(sim_types.product_schema(sim_types.PRODUCT_TYPES[0], UK)).shapes
    body = listings.put_request(_draft("12.00", ["https://img/1.jpg", "https://img/2.jpg"]), shapes, UK, "M")
    assert body["requirements"] == "LISTING"
    attributes = body["attributes"]
    assert attributes["item_name"] == [{"value": "A title", "language_tag": "en_GB", "marketplace_id": "M"}]
    assert attributes["purchasable_offer"][0]["our_price"] == [{"schedule": [{"value_with_tax": 12}]}]
    assert attributes["fulfillment_availability"] == [{"fulfillment_channel_code": "DEFAULT", "quantity": 3}]
    assert attributes["main_product_image_locator"] == [{"media_location": "https://img/1.jpg", "marketplace_id": "M"}]
    assert attributes["other_product_image_locator_1"][0]["media_location"] == "https://img/2.jpg"
    priceless = listings.put_request(_draft(None, []), shapes, UK, "M")
    assert priceless["requirements"] == "LISTING_PRODUCT_ONLY" and "purchasable_offer" not in priceless["attributes"]


def test_amazons_answer_decides_and_only_errors_for_the_site_refuse() -> None:
    warning = {"code": "1", "message": "consider", "severity": "WARNING", "categories": []}
    elsewhere = {"code": "2", "message": "not here", "severity": "ERROR", "categories": [], "marketplaceIds": ["X"]}
    refused = {"code": "3", "message": "brand not approved", "severity": "ERROR", "categories": []}
    identifiers = [{"marketplaceId": "M", "asin": "B0TEST"}]
    accepted = {"status": "ACCEPTED", "issues": [warning, elsewhere], "identifiers": identifiers}
    assert listings.put_answer(accepted, "S", "M") == ["S", "ACCEPTED", "B0TEST", []]
    assert listings.put_answer({"status": "ACCEPTED", "issues": [refused]}, "S", "M") == [
        "S",
        "INVALID",
        "",
        ["brand not approved (Amazon 3)"],
    ]


def test_a_mirrored_item_is_the_sites_offer_and_own_stock() -> None:
    item = {
        "sku": "SKU-1",
        "summaries": [{"marketplaceId": UK.marketplace_id, "asin": "B0X", "productType": "SHOES"}],
        "offers": [
            {"marketplaceId": "OTHER", "offerType": "B2C", "price": {"amount": "1.00", "currencyCode": "EUR"}},
            {
                "marketplaceId": UK.marketplace_id,
                "offerType": "B2B",
                "price": {"amount": "8.00", "currencyCode": "GBP"},
            },
            {
                "marketplaceId": UK.marketplace_id,
                "offerType": "B2C",
                "price": {"amount": "9.50", "currencyCode": "GBP"},
            },
        ],
        "fulfillmentAvailability": [
            {"fulfillmentChannelCode": "AMAZON_EU", "quantity": 40},
            {"fulfillmentChannelCode": "DEFAULT", "quantity": 4},
        ],
    }
    mirrored = listings.mirrored(item, UK)
    assert (mirrored.listing_id, mirrored.external_sku, mirrored.price, mirrored.quantity, mirrored.category_id) == (
        "SKU-1",
        "SKU-1",
        Decimal("9.50"),
        4,
        "SHOES",
    )
    assert mirrored.listing_url == "https://www.amazon.co.uk/dp/B0X"
    bare = listings.mirrored({"sku": "NEW 1"}, UK)
    assert (bare.price, bare.quantity) == (None, None)
    assert bare.listing_url.startswith(UK.seller_central) and "NEW%201" in bare.listing_url


def test_a_conditional_requirement_is_said_in_the_titles_and_stays_optional() -> None:
    watch = next(p for p in sim_types.PRODUCT_TYPES if p.name == "WATCH")
    mapped = map_schema(sim_types.product_schema(watch, UK))
    # The battery (a nested cell composition) cannot be carried: the attribute its condition is on names it.
    batteries = next(a for a in mapped.attributes if a.code == "batteries_required")
    assert batteries.is_required and "when true, Amazon also requires Battery" in batteries.title
    assert mapped.conditional_requirements == ("battery when batteries_required is true",)
    assert "Amazon attribute battery" not in mapped.off_api_requirements  # never holds a listing that needs none

    # One the model carries stays optional (the model has no conditional requirement) and its title says when.
    schema: dict[str, Any] = {
        "required": ["is_fragile"],
        "properties": {
            "is_fragile": {"title": "Fragile", **_scalar({"type": "boolean"}, localised=False)},
            "packaging": {"title": "Packaging", **_scalar({"type": "string"})},
        },
        "allOf": [
            {
                "if": {
                    "required": ["is_fragile"],
                    "properties": {"is_fragile": {"contains": {"properties": {"value": {"const": True}}}}},
                },
                "then": {"required": ["packaging"]},
            }
        ],
    }
    packaging = next(a for a in map_schema(schema).attributes if a.code == "packaging")
    assert (packaging.is_required, packaging.title) == (False, "Packaging (required by Amazon when Fragile is true)")
