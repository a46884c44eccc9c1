"""Listings Items and Product Type Definitions through the simulator over real HTTP: put (ACCEPTED / INVALID with
issues), get, patch, delete, search with paging; product type search, definitions, and the schema documents they
link to (Amazon's product type definition format, a JSON Schema a library validates listings with)."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema_rs
import pytest
from jsonschema import Draft201909Validator

from marketsync.marketplaces.amazon.regions import SITES
from marketsync.marketplaces.amazon.simulator import product_types as pt
from tests.marketplaces.amazon.support import UK, luggage
from tests.support.amazon import AmazonServer


async def _put(client: httpx.AsyncClient, seller: str, sku: str, attributes: dict[str, Any], **params: str) -> Any:
    answer = await client.put(
        f"/listings/2021-08-01/items/{seller}/{sku}",
        params={"marketplaceIds": UK, **params},
        json={"productType": "LUGGAGE", "requirements": "LISTING", "attributes": attributes},
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


async def test_put_get_patch_delete_a_listing(amazon_simulator: AmazonServer) -> None:
    sim = amazon_simulator.sim
    sid = sim.add_seller(countries=("UK",)).selling_partner_id
    async with amazon_simulator.seller_client(sid) as client:
        preview = await _put(client, sid, "CASE-1", luggage(), mode="VALIDATION_PREVIEW")
        assert (preview["status"], preview["issues"]) == ("VALID", [])
        assert sim.listing(sid, "UK", "CASE-1") is None
        accepted = await _put(client, sid, "CASE-1", luggage())
        assert (accepted["status"], accepted["sku"], accepted["issues"]) == ("ACCEPTED", "CASE-1", [])

        got = await client.get(
            f"/listings/2021-08-01/items/{sid}/CASE-1",
            params={"marketplaceIds": UK, "includedData": "summaries,attributes,offers,fulfillmentAvailability,issues"},
        )
        assert got.status_code == 200
        item = got.json()
        assert item["summaries"][0]["status"] == ["BUYABLE", "DISCOVERABLE"]
        assert item["summaries"][0]["itemName"] == "Cabin case" and item["summaries"][0]["productType"] == "LUGGAGE"
        assert item["offers"][0]["price"] == {"currencyCode": "GBP", "amount": "49.99"}
        assert item["fulfillmentAvailability"] == [{"fulfillmentChannelCode": "DEFAULT", "quantity": 7}]

        patched = await client.patch(
            f"/listings/2021-08-01/items/{sid}/CASE-1",
            params={"marketplaceIds": UK},
            json={
                "productType": "LUGGAGE",
                "patches": [
                    {
                        "op": "replace",
                        "path": "/attributes/fulfillment_availability",
                        "value": [{"fulfillment_channel_code": "DEFAULT", "quantity": 0}],
                    }
                ],
            },
        )
        assert patched.json()["status"] == "ACCEPTED"
        listing = sim.listing(sid, "UK", "CASE-1")
        assert listing is not None and listing.quantity == 0 and listing.statuses == ["DISCOVERABLE"]

        bad_patch = await client.patch(
            f"/listings/2021-08-01/items/{sid}/CASE-1",
            params={"marketplaceIds": UK},
            json={
                "productType": "LUGGAGE",
                "patches": [
                    {
                        "op": "replace",
                        "path": "/attributes/fulfillment_availability",
                        "value": [{"fulfillment_channel_code": "DEFAULT", "quantity": -3}],
                    }
                ],
            },
        )
        assert bad_patch.json()["status"] == "INVALID"
        assert bad_patch.json()["issues"][0]["attributeNames"] == ["fulfillment_availability"]

        deleted = await client.delete(f"/listings/2021-08-01/items/{sid}/CASE-1", params={"marketplaceIds": UK})
        assert deleted.json()["status"] == "ACCEPTED"
        gone = await client.get(f"/listings/2021-08-01/items/{sid}/CASE-1", params={"marketplaceIds": UK})
        assert gone.status_code == 404


async def test_put_answers_invalid_with_amazons_issues_and_stores_nothing(amazon_simulator: AmazonServer) -> None:
    sim = amazon_simulator.sim
    sid = sim.add_seller(countries=("UK",)).selling_partner_id
    attributes = luggage()
    del attributes["brand"]
    attributes["country_of_origin"] = [{"value": "Atlantis", "marketplace_id": UK}]
    async with amazon_simulator.seller_client(sid) as client:
        invalid = await _put(client, sid, "CASE-2", attributes)
        assert invalid["status"] == "INVALID"
        issues = {(i["code"], i["attributeNames"][0], i["categories"][0]) for i in invalid["issues"]}
        assert issues == {("90220", "brand", "MISSING_ATTRIBUTE"), ("99022", "country_of_origin", "INVALID_ATTRIBUTE")}
        assert sim.listing(sid, "UK", "CASE-2") is None

        sim.reject_listing("CASE-3", "Restricted brand")
        rejected = await _put(client, sid, "CASE-3", luggage())
        assert rejected["status"] == "INVALID" and rejected["issues"][0]["message"] == "Restricted brand"
        other = await client.get("/listings/2021-08-01/items/A0THERSELLER000/CASE-1", params={"marketplaceIds": UK})
        assert other.status_code == 403


async def test_search_listings_items_pages_through_the_sellers_listings(amazon_simulator: AmazonServer) -> None:
    sim = amazon_simulator.sim
    sid = sim.add_seller(countries=("UK", "DE")).selling_partner_id
    for n in range(25):
        sim.set_listing(sid, "UK", f"SKU-{n:02d}", price="1.00", quantity=n % 3)
    sim.set_listing(sid, "DE", "SKU-DE", price="2.00", quantity=1)
    async with amazon_simulator.seller_client(sid) as client:
        seen, token, pages = [], None, 0
        while True:
            params = {
                "marketplaceIds": UK,
                "pageSize": "10",
                "sortBy": "sku",
                "sortOrder": "ASC",
                "includedData": "summaries,fulfillmentAvailability",
            }
            if token:
                params["pageToken"] = token
            answer = await client.get(f"/listings/2021-08-01/items/{sid}", params=params)
            assert answer.status_code == 200
            body = answer.json()
            assert body["numberOfResults"] == 25
            seen += [item["sku"] for item in body["items"]]
            pages += 1
            token = body.get("pagination", {}).get("nextToken")
            if not token:
                break
        assert pages == 3 and seen == [f"SKU-{n:02d}" for n in range(25)]
        buyable = await client.get(
            f"/listings/2021-08-01/items/{sid}",
            params={"marketplaceIds": UK, "withStatus": "BUYABLE", "pageSize": "20"},
        )
        assert buyable.json()["numberOfResults"] == 16  # quantity 0 is not buyable
        by_sku = await client.get(
            f"/listings/2021-08-01/items/{sid}",
            params={"marketplaceIds": UK, "identifiers": "SKU-03,SKU-04", "identifiersType": "SKU"},
        )
        assert sorted(i["sku"] for i in by_sku.json()["items"]) == ["SKU-03", "SKU-04"]


async def test_product_types_are_searched_and_defined_with_a_schema_the_simulator_serves(
    amazon_simulator: AmazonServer,
) -> None:
    sim = amazon_simulator.sim
    sid = sim.add_seller(countries=("UK",)).selling_partner_id
    async with amazon_simulator.seller_client(sid) as client:
        everything = await client.get("/definitions/2020-09-01/productTypes", params={"marketplaceIds": UK})
        names = [p["name"] for p in everything.json()["productTypes"]]
        assert len(names) == len(pt.PRODUCT_TYPES) >= 20 and "LUGGAGE" in names
        found = await client.get(
            "/definitions/2020-09-01/productTypes", params={"marketplaceIds": UK, "keywords": "suitcase"}
        )
        assert [p["name"] for p in found.json()["productTypes"]] == ["LUGGAGE"]
        by_name = await client.get(
            "/definitions/2020-09-01/productTypes", params={"marketplaceIds": UK, "itemName": "Red running shoe"}
        )
        assert "SHOES" in [p["name"] for p in by_name.json()["productTypes"]]

        definition = await client.get("/definitions/2020-09-01/productTypes/LUGGAGE", params={"marketplaceIds": UK})
        assert definition.status_code == 200
        body = definition.json()
        assert body["productTypeVersion"]["latest"] is True and body["productTypeVersion"]["version"].startswith("U")
        assert body["requirements"] == "LISTING" and body["requirementsEnforced"] == "ENFORCED"
        assert "offer" in body["propertyGroups"]
        schema_answer = await client.get(body["schema"]["link"]["resource"])
        assert schema_answer.status_code == 200
        assert pt.checksum(schema_answer.content) == body["schema"]["checksum"]
        schema = schema_answer.json()
        assert schema["$schema"] == pt.META_SCHEMA_ID
        assert {"item_name", "brand", "color", "purchasable_offer"} <= set(schema["required"])
        assert schema["properties"]["item_name"]["selectors"] == ["marketplace_id", "language_tag"]
        condition = schema["properties"]["condition_type"]["items"]["properties"]["value"]
        assert condition["enum"][0] == "new_new" and condition["enumNames"][0] == "New"  # a closed set
        color = schema["properties"]["color"]["items"]["properties"]["value"]
        assert {"type": "string"} in color["anyOf"]  # an open set: custom values allowed
        meta = await client.get(body["metaSchema"]["link"]["resource"])
        Draft201909Validator.check_schema(meta.json())

        # A listing is validated with an off-the-shelf validator, as a connector would before create
        assert list(pt.AmazonSchemaValidator(schema).iter_errors(luggage())) == []
        assert any(e.validator == "required" for e in pt.AmazonSchemaValidator(schema).iter_errors({}))

        offer_only = await client.get(
            "/definitions/2020-09-01/productTypes/LUGGAGE",
            params={"marketplaceIds": UK, "requirements": "LISTING_OFFER_ONLY"},
        )
        offer_schema = (await client.get(offer_only.json()["schema"]["link"]["resource"])).json()
        assert set(offer_schema["required"]) == {"condition_type", "purchasable_offer", "fulfillment_availability"}
        unknown = await client.get("/definitions/2020-09-01/productTypes/SPACESHIP", params={"marketplaceIds": UK})
        assert unknown.status_code == 404


def _check_schema(schema: dict[str, Any]) -> None:
    """Against the 2019-09 meta-schema Amazon's extends (jsonschema-rs: 1 ms where jsonschema takes 150)."""
    jsonschema_rs.meta.validate({**schema, "$schema": "https://json-schema.org/draft/2019-09/schema"})


def test_generated_product_types_scale_and_stay_valid_schemas() -> None:
    generated = pt.generated_product_types(200, seed=7)
    assert len({p.name for p in generated}) == 200
    assert generated == pt.generated_product_types(200, seed=7)
    for product_type in generated:
        schema = pt.product_schema(product_type, SITES["DE"])
        _check_schema(schema)
        assert schema["$defs"]["marketplace_id"]["default"] == "A1PA6795UKMFR9"


def test_every_hand_written_product_type_is_a_valid_schema_on_every_site() -> None:
    assert len(pt.PRODUCT_TYPES) >= 30
    for product_type in pt.PRODUCT_TYPES:
        for site in SITES.values():
            for requirements in pt.REQUIREMENTS:
                _check_schema(pt.product_schema(product_type, site, requirements))
    with pytest.raises(ValueError):
        _check_schema({"type": "object", "properties": {"a": {"type": "strin"}}})
