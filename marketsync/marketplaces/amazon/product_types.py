"""Amazon product types as the service's categories, and a product type definition's JSON Schema as the spec's
attribute model (docs/decisions/0372-amazon-product-types-as-categories.md). Pure: no I/O.

A product type is a leaf category: `CategoryId` is its name (LUGGAGE), its title and `CategoryPath` its display
name (Luggage). Its definition's schema maps attribute by attribute:

- an attribute whose items hold one scalar `value` (beside the `marketplace_id` and `language_tag` the connector
  fills in) is one attribute of that code; one whose items hold several scalars (a value and its unit, an
  identifier and its type) is one attribute per scalar, coded `<attribute>.<field>`;
- `string` is Text (Date with a date format), `integer` Integer, `number` Decimal, `boolean` Boolean;
- `enum` (titled by `enumNames`) is a closed set; an `anyOf`/`oneOf` offering the enum beside a free value makes
  the enum suggestions (`AllowsCustomValues`);
- required: the schema's `required` attributes, and within them their items' required fields;
- conditionally required (`allOf` if/then, docs/decisions/0380): the spec's model has no such requirement, so the
  attribute stays optional and its title says when Amazon requires it; one the model cannot carry is named in the
  title of the attribute its condition is on. Amazon's issues on the publish enforce them (0378);
- what the connector fills from the catalogue (price, quantity) is not an attribute; the images are the app's
  `Images`; a required attribute nested deeper than the model carries is named in `OffApiRequirements` (a Warning on
  create) and an optional one is left out.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from marketsync.catalog.taxonomy import AllowedValue, AttributeSpec, AttributeType, CategorySpec, Taxonomy

__all__ = [
    "CATALOGUE_FILLED",
    "IMAGE_ATTRIBUTES",
    "AttributeShape",
    "MappedSchema",
    "amazon_attributes",
    "map_schema",
    "product_type_taxonomy",
]

# Filled by the connector from the catalogue's price and stock, never attributes of the create.
CATALOGUE_FILLED = frozenset({"purchasable_offer", "fulfillment_availability"})
# The listing's images: the app's Images field (the first is the main image).
MAIN_IMAGE = "main_product_image_locator"
IMAGE_ATTRIBUTES = (MAIN_IMAGE, *(f"other_product_image_locator_{n}" for n in range(1, 9)))
# Filled in by the connector in every value: the site, and the site's language for text.
SELECTORS = frozenset({"marketplace_id", "language_tag"})
IMAGES_REQUIREMENT = "Images"

_TYPES: dict[str, AttributeType] = {"string": "Text", "integer": "Integer", "number": "Decimal", "boolean": "Boolean"}


def product_type_taxonomy(product_types: list[dict[str, Any]], revision: int = 1) -> Taxonomy:
    """searchDefinitionsProductTypes' product types as a flat tree of leaves (their schemas come on demand):
    CategoryId the name (LUGGAGE), the name and the path its display name (Luggage)."""
    seen: dict[str, CategorySpec] = {}
    for item in product_types:
        name = str(item.get("name") or "").strip()
        if not name or name in seen:
            continue
        title = str(item.get("displayName") or name).strip() or name
        seen[name] = CategorySpec(
            category_id=name, parent_id=None, name=title, path=title, depth=1, is_leaf=True, department=title,
            product_type_code=name,
        )  # fmt: skip
    return Taxonomy("Amazon", revision, tuple(seen.values()), source="amazon:searchDefinitionsProductTypes")


@dataclass(frozen=True)
class AttributeShape:
    """How the service's flat attribute codes are sent as one Amazon attribute."""

    name: str
    fields: dict[str, str]  # its items' scalar fields ("value", or "value" and "unit", ...) -> their JSON type
    has_language_tag: bool
    has_marketplace_id: bool


@dataclass(frozen=True)
class MappedSchema:
    attributes: tuple[AttributeSpec, ...]
    off_api_requirements: tuple[str, ...]
    shapes: dict[str, AttributeShape]  # Amazon attribute name -> its shape (what publish needs)
    # "battery when batteries_required is true": each conditional requirement of the schema's allOf, in words
    conditional_requirements: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Conditional:
    required: tuple[str, ...]  # the attributes `then` requires
    on: str  # the attribute the `if` looks at
    value: str | None  # the value it must hold (None: only that it is given)


def _conditionals(schema: dict[str, Any]) -> list[_Conditional]:
    """The schema's `allOf` if/then requirements of the meta-schema's form: `if` one attribute is given (and holds a
    value), `then` others are required."""
    found: list[_Conditional] = []
    for entry in schema.get("allOf") or []:
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("if"), dict)
            or not isinstance(entry.get("then"), dict)
        ):
            continue
        then_required = [str(name) for name in entry["then"].get("required") or []]
        condition = entry["if"]
        watched = [str(name) for name in condition.get("required") or []]
        if not then_required or not watched:
            continue
        found.append(_Conditional(tuple(then_required), watched[0], _condition_value(condition, watched[0])))
    return found


def _condition_value(condition: dict[str, Any], watched: str) -> str | None:
    """The value an `if` wants the watched attribute to hold, in words (None: only that it is given)."""
    shape = (condition.get("properties") or {}).get(watched)
    held = (
        ((shape or {}).get("contains") or {}).get("properties", {}).get("value", {}) if isinstance(shape, dict) else {}
    )
    if isinstance(held, dict) and "const" in held:
        return str(held["const"]).lower() if isinstance(held["const"], bool) else str(held["const"])
    if isinstance(held, dict) and isinstance(held.get("enum"), list):
        return " or ".join(str(v).lower() if isinstance(v, bool) else str(v) for v in held["enum"])
    return None


def _ref(schema: dict[str, Any], node: Any) -> dict[str, Any]:
    """`node` with a local `$ref` resolved (Amazon's schemas refer to `#/$defs/...`)."""
    if isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/"):
        target: Any = schema
        for part in node["$ref"][2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return target if isinstance(target, dict) else {}
    return node if isinstance(node, dict) else {}


def _choices(node: dict[str, Any]) -> tuple[list[AllowedValue], bool, str | None]:
    """(allowed values, whether other values are allowed too, JSON type) of a scalar's definition."""
    if "enum" in node:
        values = [str(v).lower() if isinstance(v, bool) else str(v) for v in node["enum"]]
        titles = node.get("enumNames")
        names: list[Any] = titles if isinstance(titles, list) else []
        enumerated = [AllowedValue(v, str(names[i]) if i < len(names) else v) for i, v in enumerate(values)]
        return enumerated, False, node.get("type") if isinstance(node.get("type"), str) else None
    options = node.get("anyOf") or node.get("oneOf")
    if isinstance(options, list):
        allowed: list[AllowedValue] = []
        free = False
        kind: str | None = node.get("type") if isinstance(node.get("type"), str) else None
        for option in options:
            if not isinstance(option, dict):
                continue
            sub, sub_free, sub_kind = _choices(option)
            allowed.extend(sub)
            free = free or sub_free or not sub
            kind = kind or sub_kind
        return allowed, free and bool(allowed), kind
    return [], True, node.get("type") if isinstance(node.get("type"), str) else None


def _attribute_type(kind: str | None, node: dict[str, Any]) -> AttributeType | None:
    if kind is None:
        return None
    mapped = _TYPES.get(kind)
    if mapped == "Text" and node.get("format") in ("date", "date-time"):
        return "Date"
    return mapped


def map_schema(schema: dict[str, Any]) -> MappedSchema:
    """A product type definition's JSON Schema (the document its `schema.link` points to), mapped."""
    declared = schema.get("properties")
    properties: dict[str, Any] = declared if isinstance(declared, dict) else {}
    required = set(schema.get("required") or [])
    attributes: list[AttributeSpec] = []
    off_api: list[str] = []
    shapes: dict[str, AttributeShape] = {}
    for name, raw in properties.items():
        definition = _ref(schema, raw)
        is_required = name in required
        if name in CATALOGUE_FILLED:
            continue
        if name in IMAGE_ATTRIBUTES:
            if is_required and IMAGES_REQUIREMENT not in off_api:
                off_api.append(IMAGES_REQUIREMENT)
            continue
        items = _ref(schema, definition.get("items"))
        fields = _ref(schema, items.get("properties")) if items else {}
        item_required = set(items.get("required") or [])
        scalars = _scalar_fields(schema, fields, item_required)
        if not scalars:
            if is_required:
                off_api.append(f"Amazon attribute {name}")
            continue
        shapes[name] = AttributeShape(
            name,
            {f: str(_choices(node)[2]) for f, node in scalars},
            "language_tag" in fields,
            "marketplace_id" in fields,
        )
        attributes.extend(_attribute_specs(name, definition, scalars, item_required, is_required=is_required))
    return _with_conditions(schema, properties, required, attributes, off_api, shapes)


def _with_conditions(
    schema: dict[str, Any],
    properties: dict[str, Any],
    required: set[str],
    attributes: list[AttributeSpec],
    off_api: list[str],
    shapes: dict[str, AttributeShape],
) -> MappedSchema:
    """The mapped attributes with each conditional requirement said in a title (see the module's docstring)."""

    def title_of(name: str) -> str:
        return str(_ref(schema, properties.get(name)).get("title") or name)

    titles = {a.code: a.title for a in attributes}
    sentences: list[str] = []
    for conditional in _conditionals(schema):
        when = (
            f"{title_of(conditional.on)} is {conditional.value}"
            if conditional.value
            else f"{title_of(conditional.on)} is given"
        )
        for name in conditional.required:
            if name in required:
                continue
            sentences.append(f"{name} when {conditional.on} is {conditional.value or 'given'}")
            carried = [code for code in titles if code.split(".")[0] == name]
            for code in carried:
                titles[code] += f" (required by Amazon when {when})"
            if not carried:
                watched = [code for code in titles if code.split(".")[0] == conditional.on]
                for code in watched:
                    titles[code] += (
                        f" (when {conditional.value or 'given'}, Amazon also requires {title_of(name)}, which cannot be"
                        " sent through the API)"
                    )
    annotated = tuple(
        a if titles[a.code] == a.title else dataclasses.replace(a, title=titles[a.code]) for a in attributes
    )
    return MappedSchema(annotated, tuple(off_api), shapes, tuple(sentences))


def _scalar_fields(
    schema: dict[str, Any], fields: dict[str, Any], item_required: set[str]
) -> list[tuple[str, dict[str, Any]]]:
    """The fields of an attribute's item the service can carry (of a scalar type; selectors left out). None of them
    when a required field is not a scalar: the attribute is then beyond the API."""
    scalars: list[tuple[str, dict[str, Any]]] = []
    for field_name, field_raw in fields.items():
        if field_name in SELECTORS:
            continue
        field = _ref(schema, field_raw)
        _, _, kind = _choices(field)
        if kind in _TYPES:
            scalars.append((field_name, field))
        elif field_name in item_required:
            return []
    return scalars


def _attribute_specs(
    name: str,
    definition: dict[str, Any],
    scalars: list[tuple[str, dict[str, Any]]],
    item_required: set[str],
    *,
    is_required: bool,
) -> list[AttributeSpec]:
    """The service's attributes of one Amazon attribute: itself when its one field is `value`, else one per field."""
    single = len(scalars) == 1 and scalars[0][0] == "value"
    title = str(definition.get("title") or name)
    specs: list[AttributeSpec] = []
    for field_name, field in scalars:
        allowed, custom, kind = _choices(field)
        attribute_type = _attribute_type(kind, field)
        if attribute_type is None:
            continue
        specs.append(
            AttributeSpec(
                code=name if single else f"{name}.{field_name}",
                title=title if single else f"{title}: {field.get('title') or field_name}",
                type=attribute_type,
                is_required=is_required and (single or field_name in item_required),
                allowed_values=tuple(allowed),
                allows_custom_values=custom if allowed else False,
            )
        )
    return specs


def amazon_attributes(
    shapes: dict[str, AttributeShape],
    values: dict[str, Any],
    marketplace_id: str,
    language_tag: str,
) -> dict[str, list[dict[str, Any]]]:
    """The service's flat attribute values as Amazon's attributes (codes of no known shape are left out)."""
    grouped: dict[str, dict[str, Any]] = {}
    for code, value in values.items():
        name, _, field = code.partition(".")
        shape = shapes.get(name)
        if shape is None:
            continue
        grouped.setdefault(name, {})[field or "value"] = value
    attributes: dict[str, list[dict[str, Any]]] = {}
    for name, fields in grouped.items():
        shape = shapes[name]
        item: dict[str, Any] = {
            field: _json_value(value, shape.fields[field]) for field, value in fields.items() if field in shape.fields
        }
        if not item:
            continue
        if shape.has_language_tag:
            item["language_tag"] = language_tag
        if shape.has_marketplace_id:
            item["marketplace_id"] = marketplace_id
        attributes[name] = [item]
    return attributes


def _json_value(value: Any, json_type: str) -> Any:
    """A stored attribute value (Decimal and Date as text) as Amazon's JSON type of its field."""
    if json_type == "number" and isinstance(value, str):
        number = Decimal(value)
        return int(number) if number == number.to_integral_value() else float(number)
    if json_type == "integer" and not isinstance(value, bool):
        return int(value)
    if json_type == "string" and not isinstance(value, str):
        return str(value).lower() if isinstance(value, bool) else str(value)
    return value
