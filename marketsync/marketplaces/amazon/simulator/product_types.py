"""Amazon product types as the simulator serves them: definitions and their JSON Schema documents.

A schema is written in Amazon's product type definition format (docs/decisions/0360): JSON Schema 2019-09 under
Amazon's meta-schema (`$schema` .../product-types/meta-schema/v1), every attribute an array of value objects with
`selectors` (marketplace_id, language_tag...), `maxUniqueItems`, `editable`/`hidden`, `maxUtf8ByteLength`, closed sets
as `enum` + `enumNames`, open sets (custom values allowed) as `anyOf` of a free string and the suggested `enum`, and
conditional requirements in `allOf` if/then. The catalogue holds hand-written product types (PRODUCT_TYPES) and a
generator for scale (generated_product_types).

Listings attributes are validated against a schema with `jsonschema` (Draft 2019-09 extended with the meta-schema's
validating keywords maxUtf8ByteLength, minUtf8ByteLength and maxUniqueItems).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft201909Validator, validators
from jsonschema.exceptions import ValidationError

from marketsync.marketplaces.amazon.regions import Site

META_SCHEMA_ID = "https://schemas.amazon.com/selling-partners/definitions/product-types/meta-schema/v1"
VOCABULARY_ID = "https://schemas.amazon.com/selling-partners/definitions/product-types/vocabulary/v1"
SCHEMA_ID_PREFIX = "https://schemas.amazon.com/selling-partners/definitions/product-types/schema/v1/"
REQUIREMENTS = ("LISTING", "LISTING_PRODUCT_ONLY", "LISTING_OFFER_ONLY")

# Amazon's meta-schema extends 2019-09 with its vocabulary; this copy declares the same keywords (the real document is
# not network addressable either: its URI is an identifier).
META_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2019-09/schema",
    "$id": META_SCHEMA_ID,
    "$vocabulary": {
        "https://json-schema.org/draft/2019-09/vocab/core": True,
        "https://json-schema.org/draft/2019-09/vocab/applicator": True,
        "https://json-schema.org/draft/2019-09/vocab/validation": True,
        "https://json-schema.org/draft/2019-09/vocab/meta-data": True,
        "https://json-schema.org/draft/2019-09/vocab/format": False,
        "https://json-schema.org/draft/2019-09/vocab/content": True,
        VOCABULARY_ID: True,
    },
    "$recursiveAnchor": True,
    "title": "Amazon Product Type Definition Meta-Schema (simulator's copy)",
    "allOf": [{"$ref": "https://json-schema.org/draft/2019-09/schema"}],
    "properties": {
        "editable": {"type": "boolean"},
        "enumNames": {"type": "array", "items": {"type": "string"}},
        "hidden": {"type": "boolean"},
        "maxUniqueItems": {"type": "integer", "minimum": 0},
        "minUniqueItems": {"type": "integer", "minimum": 0},
        "maxUtf8ByteLength": {"type": "integer", "minimum": 0},
        "minUtf8ByteLength": {"type": "integer", "minimum": 0},
        "selectors": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    },
}

CONDITIONS = {
    "new_new": "New",
    "new_open_box": "New - Open Box",
    "used_like_new": "Used - Like New",
    "used_very_good": "Used - Very Good",
    "used_good": "Used - Good",
    "used_acceptable": "Used - Acceptable",
    "refurbished_refurbished": "Refurbished",
}
COUNTRIES = {
    "CN": "China", "DE": "Germany", "ES": "Spain", "FR": "France", "GB": "United Kingdom", "IN": "India",
    "IT": "Italy", "JP": "Japan", "MX": "Mexico", "NL": "Netherlands", "PL": "Poland", "PT": "Portugal",
    "SE": "Sweden", "TR": "Turkey", "TW": "Taiwan", "US": "United States", "VN": "Vietnam",
}  # fmt: skip
DG_REGULATIONS = {
    "ghs": "GHS",
    "not_applicable": "Not Applicable",
    "other": "Other",
    "storage": "Storage",
    "transportation": "Transportation",
    "unknown": "Unknown",
}
IDENTIFIER_TYPES = {"ean": "EAN", "gtin": "GTIN", "isbn": "ISBN", "upc": "UPC"}
WEIGHT_UNITS = {"grams": "Grams", "kilograms": "Kilograms", "ounces": "Ounces", "pounds": "Pounds"}
LENGTH_UNITS = {"centimeters": "Centimeters", "meters": "Meters", "inches": "Inches", "millimeters": "Millimeters"}


@dataclass(frozen=True)
class Attribute:
    """One product-type-specific attribute. kind: text | closed | open | integer | number | boolean | measure."""

    name: str
    title: str
    kind: str
    values: Mapping[str, str] = field(default_factory=dict)  # closed/open sets and measure units: value -> label
    required: bool = False
    max_length: int = 200


@dataclass(frozen=True)
class ProductType:
    name: str
    display_name: str
    keywords: tuple[str, ...]
    attributes: tuple[Attribute, ...] = ()
    batteries: bool = False  # batteries_required, and when it is true, battery (a conditional requirement)


def _labels(*values: str) -> dict[str, str]:
    return {v: v.replace("_", " ").title() for v in values}


COLORS = _labels("black", "white", "red", "blue", "green", "grey", "brown", "pink", "yellow", "multicolour")
MATERIALS = _labels("cotton", "polyester", "leather", "wool", "plastic", "wood", "metal", "glass", "ceramic", "steel")
SIZES = _labels("xx_small", "x_small", "small", "medium", "large", "x_large", "xx_large", "one_size")
AGE_RANGES = _labels("baby", "toddler", "kid", "teen", "adult")
DEPARTMENTS = _labels("womens", "mens", "girls", "boys", "unisex_adult", "unisex_child")


def _color() -> Attribute:
    return Attribute("color", "Colour", "open", COLORS, required=True)


def _material(required: bool = False) -> Attribute:
    return Attribute("material", "Material", "open", MATERIALS, required=required)


def _size() -> Attribute:
    return Attribute("size", "Size", "open", SIZES, required=True)


def _department() -> Attribute:
    return Attribute("department", "Department", "closed", DEPARTMENTS, required=True)


def _weight(required: bool = False) -> Attribute:
    return Attribute("item_weight", "Item Weight", "measure", WEIGHT_UNITS, required=required)


def _length(name: str = "item_length", title: str = "Item Length") -> Attribute:
    return Attribute(name, title, "measure", LENGTH_UNITS)


def _integer(name: str, title: str, required: bool = False) -> Attribute:
    return Attribute(name, title, "integer", required=required)


PRODUCT_TYPES: tuple[ProductType, ...] = (
    ProductType("LUGGAGE", "Luggage", ("suitcase", "luggage", "travel", "bag"), (
        _color(), _material(True), _weight(), _integer("number_of_wheels", "Number of Wheels"),
        Attribute("shell_type", "Shell Type", "closed", _labels("hard", "soft", "hybrid")),
    )),
    ProductType("SHOES", "Shoes", ("shoe", "trainer", "sneaker", "boot", "footwear"), (
        _color(), _department(), Attribute("footwear_size", "Shoe Size", "text", required=True, max_length=20),
        _material(), Attribute("closure_type", "Closure", "open", _labels("lace_up", "slip_on", "buckle", "zip")),
    )),
    ProductType("SHIRT", "Shirt", ("shirt", "t-shirt", "tee", "top", "blouse"), (
        _color(), _size(), _department(), _material(),
        Attribute("sleeve_type", "Sleeve Type", "closed", _labels("short_sleeve", "long_sleeve", "sleeveless")),
    )),
    ProductType("PANTS", "Trousers", ("trousers", "pants", "jeans", "chinos"), (
        _color(), _size(), _department(), _material(), Attribute("fit_type", "Fit", "open", _labels("slim", "regular")),
    )),
    ProductType("DRESS", "Dress", ("dress", "gown", "frock"), (_color(), _size(), _department(), _material())),
    ProductType("BACKPACK", "Backpack", ("backpack", "rucksack", "daypack", "bag"), (
        _color(), _material(), Attribute("capacity", "Capacity", "measure", _labels("liters")),
    )),
    ProductType("WATCH", "Watch", ("watch", "wristwatch", "smartwatch"), (
        _color(), _department(), Attribute("watch_movement_type", "Movement", "closed", _labels("quartz", "automatic")),
        Attribute("water_resistance_level", "Water Resistance", "closed", _labels("not_water_resistant",
                  "water_resistant", "waterproof")),
    ), batteries=True),
    ProductType("NECKLACE", "Necklace", ("necklace", "pendant", "chain", "jewellery"), (
        Attribute("metal_type", "Metal Type", "closed", _labels("gold", "silver", "platinum", "stainless_steel"),
                  required=True),
        _length("chain_length", "Chain Length"),
    )),
    ProductType("HEADPHONES", "Headphones", ("headphones", "earbuds", "headset", "earphones"), (
        _color(), Attribute("connectivity_technology", "Connectivity", "open", _labels("bluetooth", "wired", "usb")),
        Attribute("noise_control", "Noise Control", "closed", _labels("active_noise_cancellation", "none")),
    ), batteries=True),
    ProductType("CELLULAR_PHONE_CASE", "Phone Case", ("phone case", "cover", "mobile case"), (
        _color(), _material(), Attribute("compatible_phone_models", "Compatible Phone Models", "text", required=True),
    )),
    ProductType("TOY_FIGURE", "Toy Figure", ("action figure", "figure", "toy"), (
        Attribute("age_range_description", "Age Range", "closed", AGE_RANGES, required=True), _material(),
    )),
    ProductType("BOARD_GAME", "Board Game", ("board game", "game", "family game"), (
        Attribute("age_range_description", "Age Range", "closed", AGE_RANGES, required=True),
        _integer("number_of_players", "Number of Players"),
    )),
    ProductType("PUZZLES", "Puzzles", ("jigsaw", "puzzle"), (_integer("number_of_pieces", "Number of Pieces", True),)),
    ProductType("SMALL_HOME_APPLIANCES", "Small Home Appliances", ("kettle", "toaster", "blender", "appliance"), (
        _color(), Attribute("wattage", "Wattage", "measure", _labels("watts")),
        Attribute("voltage", "Voltage", "measure", _labels("volts")),
    )),
    ProductType("LAMP", "Lamp", ("lamp", "light", "lighting", "table lamp"), (
        _color(), _material(), Attribute("light_source_type", "Light Source", "open", _labels("led", "halogen")),
    )),
    ProductType("CHAIR", "Chair", ("chair", "seat", "stool", "office chair"), (_color(), _material(True), _weight())),
    ProductType("TABLE", "Table", ("table", "dining table", "coffee table"), (_color(), _material(True), _length())),
    ProductType("SOFA", "Sofa", ("sofa", "couch", "settee"), (
        _color(), Attribute("fabric_type", "Fabric Type", "text", required=True), _integer("seating_capacity", "Seats"),
    )),
    ProductType("DESK", "Desk", ("desk", "workstation", "writing desk"), (_color(), _material(True), _length())),
    ProductType("CABINET", "Cabinet", ("cabinet", "cupboard", "storage"), (_color(), _material(), _weight())),
    ProductType("PET_SUPPLIES", "Pet Supplies", ("pet", "dog", "cat", "pet bed", "leash"), (
        Attribute("target_species", "Target Species", "open", _labels("dog", "cat", "bird", "fish"), required=True),
        _size(),
    )),
    ProductType("SPORTING_GOODS", "Sporting Goods", ("sports", "fitness", "gym", "exercise"), (
        _color(), Attribute("sport_type", "Sport", "open", _labels("running", "football", "tennis", "yoga")),
    )),
    ProductType("BICYCLE", "Bicycle", ("bike", "bicycle", "cycle"), (
        _color(), Attribute("frame_size", "Frame Size", "measure", LENGTH_UNITS, required=True),
        _integer("number_of_speeds", "Number of Speeds"),
    )),
    ProductType("ABIS_BOOK", "Book", ("book", "novel", "paperback", "hardcover"), (
        Attribute("author", "Author", "text", required=True),
        Attribute("binding", "Binding", "closed", _labels("paperback", "hardcover", "board_book"), required=True),
        _integer("pages", "Pages"),
    )),
    ProductType("HEALTH_PERSONAL_CARE", "Health & Personal Care", ("health", "personal care", "toothbrush"), (
        Attribute("unit_count", "Unit Count", "number"), Attribute("scent", "Scent", "text"),
    ), batteries=True),
    ProductType("BEAUTY", "Beauty", ("beauty", "cosmetics", "make-up", "skincare"), (
        Attribute("skin_type", "Skin Type", "open", _labels("dry", "oily", "sensitive", "all")),
        Attribute("item_volume", "Volume", "measure", _labels("milliliters", "liters")),
    )),
    ProductType("GROCERY", "Grocery", ("food", "grocery", "snack", "drink"), (
        Attribute("flavor", "Flavour", "text"), _weight(True),
        Attribute("allergen_information", "Allergens", "open", _labels("gluten", "milk", "nuts", "soy", "eggs")),
    )),
    ProductType("OFFICE_PRODUCTS", "Office Products", ("stationery", "office", "pen", "notebook"), (
        _color(), _integer("number_of_items", "Number of Items"),
    )),
    ProductType("HOME_BED_AND_BATH", "Bed & Bath", ("bedding", "towel", "duvet", "pillow"), (
        _color(), _size(), _material(), Attribute("thread_count", "Thread Count", "integer"),
    )),
    ProductType("SLEEPING_MAT", "Sleeping Mat", ("sleeping mat", "camping mat", "roll mat"), (
        _color(), _length(), _weight(),
    )),
    ProductType("FIGURINE", "Figurine", ("figurine", "ornament", "statue"), (_material(True), _color())),
    ProductType("DECORATIVE_SIGNAGE", "Decorative Signage", ("sign", "plaque", "wall decor"), (
        _material(), Attribute("theme", "Theme", "text"),
    )),
)  # fmt: skip


def generated_product_types(count: int, seed: int = 0) -> list[ProductType]:
    """`count` more product types (GENERATED_0001...), each with 3-8 attributes drawn from the kinds above: for
    searches and schema loads at scale."""
    rng = random.Random(seed)
    pool: list[Attribute] = [
        _color(), _material(), _size(), _department(), _weight(), _length(),
        _integer("number_of_items", "Number of Items"), Attribute("theme", "Theme", "text"),
        Attribute("age_range_description", "Age Range", "closed", AGE_RANGES),
        Attribute("style", "Style", "open", _labels("modern", "classic", "vintage", "rustic")),
        Attribute("pattern", "Pattern", "open", _labels("solid", "striped", "floral", "checked")),
        Attribute("is_assembly_required", "Assembly Required", "boolean"),
    ]  # fmt: skip
    made = []
    for index in range(1, count + 1):
        picked = rng.sample(pool, rng.randint(3, 8))
        made.append(
            ProductType(
                f"GENERATED_{index:04d}",
                f"Generated Type {index}",
                (f"generated {index}", rng.choice(("home", "toy"))),
                tuple(Attribute(a.name, a.title, a.kind, a.values, rng.random() < 0.3, a.max_length) for a in picked),
                batteries=rng.random() < 0.2,
            )
        )
    return made


# -- the schema document ---------------------------------------------------------------------------------------------


def _set(values: Mapping[str, str]) -> dict[str, Any]:
    return {"type": "string", "enum": list(values), "enumNames": list(values.values())}


def _value(attribute: Attribute) -> dict[str, Any]:
    kind = attribute.kind
    if kind == "closed":
        return {"title": attribute.title, "editable": True, "hidden": False, **_set(attribute.values)}
    if kind == "open":
        return {
            "title": attribute.title, "editable": True, "hidden": False, "type": "string",
            "maxUtf8ByteLength": attribute.max_length, "anyOf": [{"type": "string"}, _set(attribute.values)],
        }  # fmt: skip
    if kind == "integer":
        return {"title": attribute.title, "editable": True, "hidden": False, "type": "integer", "minimum": 0}
    if kind == "number":
        return {"title": attribute.title, "editable": True, "hidden": False, "type": "number", "minimum": 0}
    if kind == "boolean":
        return {"title": attribute.title, "editable": True, "hidden": False, "type": "boolean", "enum": [True, False],
                "enumNames": ["Yes", "No"]}  # fmt: skip
    return {
        "title": attribute.title, "editable": True, "hidden": False, "type": "string", "minLength": 1,
        "maxLength": attribute.max_length, "maxUtf8ByteLength": attribute.max_length * 2,
    }  # fmt: skip


def _text_attribute(attribute: Attribute, max_values: int = 1, localised: bool = True) -> dict[str, Any]:
    selectors = ["marketplace_id", "language_tag"] if localised else ["marketplace_id"]
    properties: dict[str, Any] = {"value": _value(attribute), "marketplace_id": {"$ref": "#/$defs/marketplace_id"}}
    required = ["value"]
    if localised:
        properties["language_tag"] = {"$ref": "#/$defs/language_tag"}
        required.append("language_tag")
    return {
        "title": attribute.title, "description": f"Provide the {attribute.title.lower()} of the item",
        "examples": [next(iter(attribute.values.values()), attribute.title)], "type": "array", "minItems": 1,
        "minUniqueItems": 1, "maxUniqueItems": max_values, "selectors": selectors,
        "items": {"type": "object", "required": required, "additionalProperties": False, "properties": properties},
    }  # fmt: skip


def _measure_attribute(attribute: Attribute) -> dict[str, Any]:
    return {
        "title": attribute.title, "description": f"Provide the {attribute.title.lower()} and its unit",
        "examples": ["1"], "type": "array", "minItems": 1, "minUniqueItems": 1, "maxUniqueItems": 1,
        "selectors": ["marketplace_id"],
        "items": {
            "type": "object", "required": ["value", "unit"], "additionalProperties": False,
            "properties": {
                "value": {"title": attribute.title, "type": "number", "minimum": 0, "editable": True, "hidden": False},
                "unit": {"title": "Unit", "editable": True, "hidden": False, **_set(attribute.values)},
                "marketplace_id": {"$ref": "#/$defs/marketplace_id"},
            },
        },
    }  # fmt: skip


def _schema_attribute(attribute: Attribute) -> dict[str, Any]:
    if attribute.kind == "measure":
        return _measure_attribute(attribute)
    return _text_attribute(attribute, localised=attribute.kind in ("text", "open"))


def _offer_attributes(site: Site) -> dict[str, Any]:
    money = {"type": "number", "minimum": 0, "editable": True, "hidden": False}
    return {
        "purchasable_offer": {
            "title": "Purchasable Offer", "description": "The price at which the item is sold",
            "type": "array", "minItems": 1, "minUniqueItems": 1, "maxUniqueItems": 1,
            "selectors": ["marketplace_id", "currency", "audience"],
            "items": {
                "type": "object", "required": ["currency", "our_price"], "additionalProperties": False,
                "properties": {
                    "currency": {"title": "Currency", "editable": True, "hidden": False, "type": "string",
                                 "enum": [site.currency], "enumNames": [site.currency]},
                    "audience": {"title": "Audience", "type": "string", "enum": ["ALL"],
                                 "enumNames": ["Sell on Amazon"], "default": "ALL", "editable": True, "hidden": False},
                    "marketplace_id": {"$ref": "#/$defs/marketplace_id"},
                    "our_price": {
                        "title": "Your Price", "type": "array", "minItems": 1, "maxItems": 1,
                        "items": {
                            "type": "object", "required": ["schedule"], "additionalProperties": False,
                            "properties": {
                                "schedule": {
                                    "type": "array", "minItems": 1, "maxItems": 1,
                                    "items": {
                                        "type": "object", "required": ["value_with_tax"], "additionalProperties": False,
                                        "properties": {"value_with_tax": {"title": "Price", **money}},
                                    },
                                }
                            },
                        },
                    },
                    "start_at": {"type": "object", "properties": {"value": {"type": "string", "format": "date-time"}}},
                },
            },
        },
        "fulfillment_availability": {
            "title": "Fulfillment Availability", "description": "The quantity available and how it ships",
            "type": "array", "minItems": 1, "minUniqueItems": 1, "selectors": ["fulfillment_channel_code"],
            "items": {
                "type": "object", "required": ["fulfillment_channel_code"], "additionalProperties": False,
                "properties": {
                    "fulfillment_channel_code": {"title": "Fulfillment Channel Code", "type": "string",
                                                 "editable": True, "hidden": False, "minLength": 1},
                    "quantity": {"title": "Quantity", "type": "integer", "minimum": 0, "editable": True,
                                 "hidden": False},
                    "lead_time_to_ship_max_days": {"title": "Handling Time", "type": "integer", "minimum": 0},
                    "is_inventory_available": {"type": "boolean"},
                },
            },
        },
        "list_price": {
            "title": "List Price", "description": "The manufacturer's suggested retail price", "type": "array",
            "minItems": 1, "maxUniqueItems": 1, "selectors": ["marketplace_id", "currency"],
            "items": {
                "type": "object", "required": ["value", "currency"], "additionalProperties": False,
                "properties": {"value": {"title": "List Price", **money},
                               "currency": {"type": "string", "enum": [site.currency], "enumNames": [site.currency]},
                               "marketplace_id": {"$ref": "#/$defs/marketplace_id"}},
            },
        },
    }  # fmt: skip


COMMON_PRODUCT = (
    Attribute("item_name", "Item Name", "text", required=True, max_length=200),
    Attribute("brand", "Brand Name", "text", required=True, max_length=100),
    Attribute("product_description", "Product Description", "text", required=True, max_length=2000),
    Attribute("item_type_keyword", "Item Type Keyword", "text", required=True, max_length=100),
    Attribute("manufacturer", "Manufacturer", "text", max_length=100),
    Attribute("country_of_origin", "Country/Region of Origin", "closed", COUNTRIES, required=True),
    Attribute("supplier_declared_dg_hz_regulation", "Dangerous Goods Regulations", "closed", DG_REGULATIONS,
              required=True),
)  # fmt: skip
CONDITION = Attribute("condition_type", "Item Condition", "closed", CONDITIONS, required=True)
OFFER_REQUIRED = ("condition_type", "purchasable_offer", "fulfillment_availability")


def product_schema(product_type: ProductType, site: Site, requirements: str = "LISTING") -> dict[str, Any]:
    """The JSON Schema document of a product type on a site, for a requirements set (enforced)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    product_facts = requirements != "LISTING_OFFER_ONLY"
    offer = requirements != "LISTING_PRODUCT_ONLY"
    if product_facts:
        for attribute in (*COMMON_PRODUCT, *product_type.attributes):
            properties[attribute.name] = _schema_attribute(attribute)
            required += [attribute.name] if attribute.required else []
        properties["bullet_point"] = _text_attribute(Attribute("bullet_point", "Bullet Point", "text"), max_values=5)
        required.append("bullet_point")
        properties["externally_assigned_product_identifier"] = {
            "title": "External Product ID", "description": "The barcode of the item", "type": "array",
            "minItems": 1, "maxUniqueItems": 1, "selectors": ["marketplace_id", "type"],
            "items": {"type": "object", "required": ["type", "value"], "additionalProperties": False,
                      "properties": {"type": {"title": "Type", **_set(IDENTIFIER_TYPES)},
                                     "value": {"title": "Value", "type": "string", "pattern": "^[0-9]{8,14}$"},
                                     "marketplace_id": {"$ref": "#/$defs/marketplace_id"}}},
        }  # fmt: skip
    if offer:
        properties[CONDITION.name] = _schema_attribute(CONDITION)
        properties.update(_offer_attributes(site))
        required += list(OFFER_REQUIRED)
    all_of: list[dict[str, Any]] = []
    if product_type.batteries and product_facts:
        battery_types = _labels("lithium_ion", "alkaline", "nimh", "lithium_metal")
        properties["batteries_required"] = _text_attribute(
            Attribute("batteries_required", "Batteries Required", "boolean"), localised=False
        )
        properties["battery"] = {
            "title": "Battery", "description": "The battery type and count", "type": "array", "minItems": 1,
            "maxUniqueItems": 1, "selectors": ["marketplace_id"],
            "items": {"type": "object", "required": ["cell_composition"], "additionalProperties": False,
                      "properties": {"cell_composition": {"type": "array", "minItems": 1, "items": {
                          "type": "object", "required": ["value"],
                          "properties": {"value": {"title": "Cell Composition", **_set(battery_types)}}}},
                          "marketplace_id": {"$ref": "#/$defs/marketplace_id"}}},
        }  # fmt: skip
        required.append("batteries_required")
        all_of.append(
            {
                "if": {
                    "required": ["batteries_required"],
                    "properties": {
                        "batteries_required": {
                            "contains": {"required": ["value"], "properties": {"value": {"const": True}}}
                        }
                    },
                },
                "then": {"required": ["battery"]},
            }
        )
    schema: dict[str, Any] = {
        "$schema": META_SCHEMA_ID,
        "$id": SCHEMA_ID_PREFIX + product_type.name,
        "$comment": f"Amazon product type definition for {product_type.name} product type",
        "$defs": {
            "marketplace_id": {
                "default": site.marketplace_id, "editable": False, "hidden": True, "examples": [site.name],
                "type": "string",
                "anyOf": [{"type": "string"}, {"type": "string", "enum": [site.marketplace_id],
                                               "enumNames": [site.name]}],
            },
            "language_tag": {
                "default": site.language, "editable": False, "hidden": True, "examples": [site.language],
                "type": "string",
                "anyOf": [{"type": "string"}, {"type": "string", "enum": [site.language],
                                               "enumNames": [site.language]}],
            },
        },
        "type": "object",
        "required": sorted(set(required)),
        "properties": properties,
    }  # fmt: skip
    if all_of:
        schema["allOf"] = all_of
    return schema


def not_enforced(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The same schema without required and conditionally required attributes (requirementsEnforced NOT_ENFORCED):
    each attribute given is checked on its own, as for a partial update or a patch."""
    relaxed = copy.deepcopy(dict(schema))
    relaxed.pop("required", None)
    relaxed.pop("allOf", None)
    return relaxed


def property_groups(product_type: ProductType) -> dict[str, Any]:
    specific = [a.name for a in product_type.attributes]
    groups: dict[str, Any] = {
        "offer": {"title": "Offer", "description": "Label to describe the offer",
                  "propertyNames": ["condition_type", "purchasable_offer", "list_price", "fulfillment_availability"]},
        "product_identity": {"title": "Product Identity", "description": "Information to uniquely identify the item",
                             "propertyNames": ["item_name", "brand", "externally_assigned_product_identifier",
                                               "item_type_keyword", "manufacturer"]},
        "product_details": {"title": "Product Details", "description": "Information about the item",
                            "propertyNames": ["product_description", "bullet_point", *specific]},
        "safety_and_compliance": {"title": "Safety & Compliance", "description": "Regulatory information",
                                  "propertyNames": ["country_of_origin", "supplier_declared_dg_hz_regulation"]},
    }  # fmt: skip
    if product_type.batteries:
        groups["safety_and_compliance"]["propertyNames"] += ["batteries_required", "battery"]
    return groups


def document_bytes(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def checksum(body: bytes) -> str:
    """Amazon's SchemaLink checksum: the Base64 MD5 of the schema document."""
    return base64.b64encode(hashlib.md5(body, usedforsecurity=False).digest()).decode()


def version_of(product_type: ProductType, site: Site) -> str:
    """A stable productTypeVersion (Amazon's are opaque strings) that changes when the definition does."""
    digest = hashlib.sha256(document_bytes(product_schema(product_type, site))).hexdigest()
    return "U" + digest[:20]


# -- attribute validation against a schema --------------------------------------------------------------------------


def _utf8_max(validator: Any, limit: int, instance: Any, schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    if isinstance(instance, str) and len(instance.encode()) > limit:
        yield ValidationError(f"{instance!r} is longer than {limit} UTF-8 bytes")


def _utf8_min(validator: Any, limit: int, instance: Any, schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    if isinstance(instance, str) and len(instance.encode()) < limit:
        yield ValidationError(f"{instance!r} is shorter than {limit} UTF-8 bytes")


def _max_unique(validator: Any, limit: int, instance: Any, schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    """Values are unique by their selectors (e.g. one item_name per marketplace_id and language_tag)."""
    if not isinstance(instance, list):
        return
    selectors = schema.get("selectors", [])
    keys = {json.dumps([v.get(s) for s in selectors] if isinstance(v, dict) else v, default=str) for v in instance}
    if len(keys) > limit:
        yield ValidationError(f"has {len(keys)} unique values; at most {limit} allowed")


AmazonSchemaValidator = validators.extend(
    Draft201909Validator,
    {"maxUtf8ByteLength": _utf8_max, "minUtf8ByteLength": _utf8_min, "maxUniqueItems": _max_unique},
)


def attribute_errors(schema: Mapping[str, Any] | Any, attributes: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(kind, attribute name, message) for each problem: kind is "missing" or "invalid". `schema` is a schema or an
    AmazonSchemaValidator made of one (reused: making one per listing is most of the cost)."""
    validator = AmazonSchemaValidator(schema) if isinstance(schema, Mapping) else schema
    found: list[tuple[str, str, str]] = []
    if validator.is_valid(dict(attributes)):
        return found
    for error in validator.iter_errors(dict(attributes)):
        if error.validator == "required" and not error.absolute_path:
            missing = error.message.split("'")[1] if "'" in error.message else error.message
            found.append(("missing", missing, f"'{missing}' is required but not supplied."))
            continue
        path = list(error.absolute_path)
        name = str(path[0]) if path else "attributes"
        detail = ".".join(str(p) for p in path[1:] if not isinstance(p, int))
        message = error.message if len(error.message) <= 160 else error.message[:157] + "..."
        found.append(("invalid", f"{name}.{detail}" if detail else name, f"'{name}': {message}"))
    return found
