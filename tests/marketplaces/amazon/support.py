"""Listing attributes in Amazon's shape, shared by the simulator's listings and feeds tests."""

from __future__ import annotations

from typing import Any

UK = "A1F83G8C2ARO7P"


def text(value: str) -> list[dict[str, str]]:
    return [{"value": value, "language_tag": "en_GB", "marketplace_id": UK}]


def luggage(price: float = 49.99, quantity: int = 7) -> dict[str, Any]:
    return {
        "item_name": text("Cabin case"),
        "brand": text("Tortuga"),
        "product_description": text("A small case"),
        "bullet_point": text("Light"),
        "item_type_keyword": text("suitcases"),
        "color": text("teal"),
        "material": text("polycarbonate"),
        "country_of_origin": [{"value": "GB", "marketplace_id": UK}],
        "supplier_declared_dg_hz_regulation": [{"value": "not_applicable", "marketplace_id": UK}],
        "condition_type": [{"value": "new_new", "marketplace_id": UK}],
        "purchasable_offer": [
            {
                "currency": "GBP",
                "marketplace_id": UK,
                "audience": "ALL",
                "our_price": [{"schedule": [{"value_with_tax": price}]}],
            }
        ],
        "fulfillment_availability": [{"fulfillment_channel_code": "DEFAULT", "quantity": quantity}],
    }
