"""Pure rules of the listings (no I/O): the create request's shape, the attribute validator, a publish's failure
reason, and the fields a listing gets in the app (images, business policies, a change held).

`validate_attributes` is the heart of spec section 4, "creating a product", check list: codes must exist
and be settable through the API, closed sets are case-insensitive unless custom values are allowed,
values must fit their type (whole numbers for Integer, dot decimals for Decimal), and every required
attribute must be present, counting the values the existing listing already holds.
Errors are keyed `Attributes.<code>`, so one 400 can name every bad field.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from marketsync.catalog.taxonomy import AttributeSpec

MAX_TEXT_LENGTH = 1000
MAX_SKU_LENGTH = 200
MAX_QUANTITY = 2**31 - 1
MAX_INTEGER = 10**15
# ASCII digits, the whole text (fullmatch): `\d` is any script's digit (Arabic-Indic, full-width), and `$` lets a
# trailing newline through.
_INTEGER = re.compile(r"[+-]?[0-9]+")
_OUT_OF_RANGE = f"Must be between -{MAX_INTEGER} and {MAX_INTEGER}."
_MAX_INTEGER_DIGITS = len(str(MAX_INTEGER))
_MAX_NUMBER_TEXT = 400  # characters of a value written out: the smallest float has 324 decimals
_DECIMAL = re.compile(r"[+-]?([0-9]+(\.[0-9]+)?|\.[0-9]+)")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_SHOWN_VALUES = 20

REQUIRED = "Required."
UNKNOWN_FIELD = "Unknown field; field names are case-exact."
CREATE_FIELDS = ("Sku", "Quantity", "MarketplaceId", "ProductTypeViewId", "CategoryId", "Attributes", "ValidateOnly")

Errors = dict[str, list[str]]


def add_error(errors: Errors, key: str, message: str) -> None:
    errors.setdefault(key, []).append(message)


# --------------------------------------------------------------------------------------------------
# The create request


@dataclass(frozen=True)
class CreateRequest:
    """A create payload after its shape checks. Fields that failed a shape check are None."""

    sku: str | None
    quantity: int | None
    marketplace_id: str | None
    product_type_view_id: str | None
    category_id: str | None
    attributes: dict[str, Any] | None
    validate_only: bool
    # Whether the field was present and not null (Attributes without CategoryId is a 400 even if malformed).
    attributes_sent: bool


def parse_create_request(raw: Any) -> tuple[CreateRequest, Errors]:
    """Check the payload's shape field by field, collecting every problem (nothing stops at the first)."""
    errors: Errors = {}
    if not isinstance(raw, dict):
        add_error(errors, "body", "The body must be a JSON object.")
        return CreateRequest(None, None, None, None, None, None, False, False), errors
    for key in raw:
        if key not in CREATE_FIELDS:
            add_error(errors, str(key), UNKNOWN_FIELD)
    sku = _sku(raw.get("Sku"), errors)
    quantity = _quantity(raw.get("Quantity"), errors)
    marketplace_id = _id_field(raw, "MarketplaceId", errors, required=True)
    view_id = _id_field(raw, "ProductTypeViewId", errors, required=False)
    category_id = _category_id(raw.get("CategoryId"), errors)
    attributes = raw.get("Attributes")
    attributes_sent = attributes is not None
    if attributes is not None and not isinstance(attributes, dict):
        add_error(errors, "Attributes", "Must be an object whose keys are attribute codes.")
        attributes = None
    request = CreateRequest(
        sku=sku,
        quantity=quantity,
        marketplace_id=marketplace_id,
        product_type_view_id=view_id,
        category_id=category_id,
        attributes=attributes,
        validate_only=_validate_only(raw.get("ValidateOnly", False), errors),
        attributes_sent=attributes_sent,
    )
    return request, errors


def _sku(sku: Any, errors: Errors) -> str | None:
    problem = None
    if sku is None or (isinstance(sku, str) and not sku.strip()):
        problem = REQUIRED
    elif not isinstance(sku, str):
        problem = "Must be a string."
    elif len(sku) > MAX_SKU_LENGTH:
        problem = f"At most {MAX_SKU_LENGTH} characters."
    elif sku != sku.strip():
        problem = "Must not start or end with white space."
    if problem is None and isinstance(sku, str):
        return sku
    add_error(errors, "Sku", problem or REQUIRED)
    return None


def _quantity(quantity: Any, errors: Errors) -> int | None:
    if quantity is None:
        return None
    # A whole number beyond 64 bits reaches us as a float (the JSON parser's choice), yet it is a whole
    # number: what is wrong with it is its size.
    huge = isinstance(quantity, float) and quantity.is_integer()
    if huge or (isinstance(quantity, int) and not isinstance(quantity, bool) and not 0 <= quantity <= MAX_QUANTITY):
        add_error(errors, "Quantity", f"Must be a whole number between 0 and {MAX_QUANTITY}.")
        return None
    if isinstance(quantity, bool) or not isinstance(quantity, int):
        add_error(errors, "Quantity", "Must be a whole number.")
        return None
    return quantity


def _category_id(category_id: Any, errors: Errors) -> str | None:
    if category_id is None:
        return None
    if not isinstance(category_id, str):
        add_error(errors, "CategoryId", "Must be a string: category ids can exceed the exact JSON number range.")
        return None
    if not category_id.strip():
        add_error(errors, "CategoryId", "Must not be empty; omit it instead.")
        return None
    return category_id.strip()


def _validate_only(validate_only: Any, errors: Errors) -> bool:
    if validate_only is None:
        return False
    if not isinstance(validate_only, bool):
        add_error(errors, "ValidateOnly", "Must be true or false.")
        return False
    return validate_only


def off_api_warning(platform: str, name: str, *, validate_only: bool) -> str:
    """Spec §4 item 7: a required thing the API cannot carry never fails the create; it is a warning."""
    what = "If you create it, the listing is saved and queued" if validate_only else "The listing is saved and queued"
    return (
        f"{name}: required by {platform} for this category but cannot be sent through the API. {what}; "
        f"{platform} rejects it until {name} is filled in in the app."
    )


# How many refused listings a failed publish's reason names, each with the marketplace's own words.
REASON_LISTINGS = 5


def publish_failure_reason(refused: Sequence[tuple[str, str]], feed_message: str) -> str:
    """A failed ListingPublish's reason: each refused listing's SKU with what the marketplace said of it (the fields it
    found missing or refused), a few at most; the feed's own message when it was rejected whole."""
    named = [f"{sku}: {why}" for sku, why in refused[:REASON_LISTINGS] if why]
    if not named:
        return f"no listing published: {feed_message or 'the marketplace gave no reason'}"
    more = len(refused) - REASON_LISTINGS
    return "no listing published: " + "; ".join(named) + (f"; and {more} more listing(s)" if more > 0 else "")


def case_variant_warning(sku: str, variants: Sequence[str], *, validate_only: bool) -> str:
    """Create upserts on the exact SKU only: another casing becomes a new product, which makes reads and
    pushes by any other spelling ambiguous (spec: GET 409 conflict, push Result Ambiguous)."""
    shown = ", ".join(f"'{variant}'" for variant in variants[:5])
    more = f" and {len(variants) - 5} more" if len(variants) > 5 else ""
    created = "would be created" if validate_only else "was created"
    return (
        f"Products differing from '{sku}' only in letter case exist ({shown}{more}); create matches SKUs exactly, "
        f"so a new product '{sku}' {created}. GET /api/products/{{sku}} and pushes that spell the SKU with none of the "
        "stored casings are now Ambiguous (409 conflict); send the exact SKU to update an existing product."
    )


def _id_field(raw: dict[str, Any], name: str, errors: Errors, *, required: bool) -> str | None:
    value = raw.get(name)
    if value is None:
        if required:
            add_error(errors, name, REQUIRED)
        return None
    if not isinstance(value, str) or not value.strip():
        add_error(errors, name, "Must be a non-empty string.")
        return None
    return value.strip()


# --------------------------------------------------------------------------------------------------
# Attribute values


class ValueProblem(ValueError):
    """A value that does not fit its attribute; the message is the user-facing text."""


def normalize_value(attribute: AttributeSpec, value: Any) -> Any:
    """The stored form of one value (Text/Date/Decimal as strings, Integer as int, Boolean as bool),
    or ValueProblem. Closed-set values come back as the schema's own code."""
    if isinstance(value, (list, dict)):
        raise ValueProblem("Must be a single value, not an array or object.")
    kind = attribute.type
    normalized: Any
    if kind == "Text":
        if not isinstance(value, str):
            raise ValueProblem("Must be a string.")
        normalized = value.strip()
        if len(normalized) > MAX_TEXT_LENGTH:
            raise ValueProblem(f"At most {MAX_TEXT_LENGTH} characters.")
    elif kind == "Integer":
        normalized = _integer(value)
    elif kind == "Decimal":
        normalized = _decimal(value)
    elif kind == "Date":
        normalized = _date(value)
    else:
        normalized = _boolean(value)
    if attribute.allowed_values:
        match = _allowed_match(attribute, normalized)
        if match is not None:
            return match
        if not attribute.allows_custom_values:
            shown = ", ".join(v.value for v in attribute.allowed_values[:_SHOWN_VALUES])
            more = ", ..." if len(attribute.allowed_values) > _SHOWN_VALUES else ""
            raise ValueProblem(f"'{_display(normalized)}' is not allowed in this category; one of: {shown}{more}.")
    return normalized


def _display(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _allowed_match(attribute: AttributeSpec, normalized: Any) -> Any:
    """The schema's code that `normalized` denotes (case-insensitive; numerically for numbers)."""
    for allowed in attribute.allowed_values:
        if attribute.type == "Integer":
            if _INTEGER.fullmatch(allowed.value) and int(Decimal(allowed.value)) == normalized:
                return normalized
        elif attribute.type == "Decimal":
            if _DECIMAL.fullmatch(allowed.value) and Decimal(allowed.value) == Decimal(normalized):
                return allowed.value
        elif attribute.type == "Boolean":
            if allowed.value.lower() == _display(normalized):
                return normalized
        elif allowed.value.casefold() == str(normalized).casefold():
            return allowed.value
    return None


def _integer(value: Any) -> int:
    message = "Must be a whole number."
    if isinstance(value, bool):
        raise ValueProblem(message)
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise ValueProblem(message)
        number = int(value)
    elif isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        _within_digits(value.strip())
        number = int(value.strip())
    else:
        raise ValueProblem(message)
    if abs(number) > MAX_INTEGER:
        raise ValueProblem(_OUT_OF_RANGE)
    return number


def _within_digits(text: str) -> None:
    """Out of range by its count of whole digits alone, before any conversion: converting a text of a million digits
    costs seconds (int of a Decimal grows with the square of the digits) and int() refuses 4,300."""
    whole = text.lstrip("+-").split(".")[0].lstrip("0")
    if len(whole) > _MAX_INTEGER_DIGITS or len(text) > _MAX_NUMBER_TEXT:
        raise ValueProblem(_OUT_OF_RANGE)


def _decimal(value: Any) -> str:
    message = "Must be a dot-decimal number, e.g. 12.5."
    if isinstance(value, bool):
        raise ValueProblem(message)
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueProblem(message)
        text = repr(value)
        if "e" in text or "E" in text:
            text = format(Decimal(text), "f")
    elif isinstance(value, str) and _DECIMAL.fullmatch(value.strip()):
        text = value.strip()
        _within_digits(text)
    else:
        raise ValueProblem(message)
    try:
        number = Decimal(text)
    except InvalidOperation as exc:
        raise ValueProblem(message) from exc
    if abs(number) > MAX_INTEGER:
        raise ValueProblem(_OUT_OF_RANGE)
    # Canonical text: no exponent, no superfluous sign or trailing zeros after the point.
    canonical = format(number.normalize(), "f") if number != number.to_integral_value() else str(int(number))
    return canonical


def _date(value: Any) -> str:
    message = "Must be a date as YYYY-MM-DD."
    if not isinstance(value, str) or not _DATE.fullmatch(value.strip()):
        raise ValueProblem(message)
    try:
        return date.fromisoformat(value.strip()).isoformat()
    except ValueError as exc:
        raise ValueProblem(message) from exc


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueProblem("Must be true or false.")


def _is_blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def validate_attributes(
    schema: Sequence[AttributeSpec],
    sent: Mapping[str, Any] | None,
    existing: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], Errors]:
    """Validate `sent` against a category schema, merged over the values `existing` already holds.

    Returns the merged, normalized values and the errors keyed `Attributes.<code>`. A code sent as null
    (or a blank string) clears the value. Existing values carry over when their code is in this schema
    and they still fit it (a re-import or a category change may have narrowed it); others are dropped.
    """
    by_code = {a.code: a for a in schema}
    errors: Errors = {}
    merged = _carried_over(by_code, existing or {})
    for code, value in (sent or {}).items():
        problem = _merge_sent(by_code, merged, code, value)
        if problem is not None:
            add_error(errors, f"Attributes.{code}", problem)
    for attribute in schema:
        key = f"Attributes.{attribute.code}"
        if attribute.is_required and attribute.api_settable and attribute.code not in merged and key not in errors:
            add_error(errors, key, REQUIRED)
    return merged, errors


def _carried_over(by_code: Mapping[str, AttributeSpec], existing: Mapping[str, Any]) -> dict[str, Any]:
    """The values held already that are still attributes of the schema and still fit them."""
    kept: dict[str, Any] = {}
    for code, value in existing.items():
        attribute = by_code.get(code)
        if attribute is None or _is_blank(value):
            continue
        try:
            kept[code] = normalize_value(attribute, value)
        except ValueProblem:
            continue
    return kept


def _merge_sent(by_code: Mapping[str, AttributeSpec], merged: dict[str, Any], code: Any, value: Any) -> str | None:
    """One sent value merged (a blank one clears), or what is wrong with it."""
    attribute = by_code.get(code)
    if attribute is None:
        folded = {a.code.casefold(): a.code for a in by_code.values() if a.api_settable}
        hint = folded.get(str(code).casefold())
        suffix = f" Did you mean '{hint}'?" if hint else ""
        return f"Not an attribute of this category's schema (GET /api/product-types/Schema).{suffix}"
    if not attribute.api_settable:
        return "Managed in the app; it cannot be set through the API."
    if _is_blank(value):
        merged.pop(code, None)
        return None
    try:
        merged[code] = normalize_value(attribute, value)
    except ValueProblem as problem:
        return str(problem)
    return None


# --------------------------------------------------------------------------------------------------
# A listing's fields filled in the app (docs/decisions/0121-listing-fields-in-the-app.md) and a change held there
# (decision 0400)

MAX_IMAGES = 12
POLICY_KINDS = ("Payment", "Return", "Shipping")


# A change saved in the app but not sent yet (decision 0400): `listings.app_fields["Held"]` holds the chosen category,
# its schema's view id and the attribute values (API-settable and app-managed) until the category's every need is met.
HELD = "Held"


@dataclass(frozen=True)
class HeldChange:
    """A category and its attribute values saved in the app, not published: the category needs more (images, a
    business policy) before the marketplace would take the listing, and the listing stays as the marketplace has it."""

    category_id: str
    view_id: str
    attributes: dict[str, Any]  # API-settable, as validated
    app_attributes: dict[str, Any]  # app-managed (ApiSettable false)

    @classmethod
    def of(cls, app_fields: Mapping[str, Any] | None) -> HeldChange | None:
        held = (app_fields or {}).get(HELD)
        if not isinstance(held, dict):
            return None
        return cls(
            str(held.get("CategoryId") or ""),
            str(held.get("ProductTypeViewId") or ""),
            dict(held.get("Attributes") or {}),
            dict(held.get("AppAttributes") or {}),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "CategoryId": self.category_id,
            "ProductTypeViewId": self.view_id,
            "Attributes": self.attributes,
            "AppAttributes": self.app_attributes,
        }


def missing_requirements(requirements: Sequence[str], app_fields: Mapping[str, Any]) -> list[str]:
    """The off-API requirements (`Images`, `BusinessPolicy`) the app fields do not fill: what a marketplace rejects."""
    return [name for name in requirements if not app_fields.get(name)]


def app_field_problems(
    images: list[str], policy: dict[str, str], attributes: dict[str, str], app_managed: list[AttributeSpec]
) -> dict[str, list[str]]:
    problems: dict[str, list[str]] = {}
    if len(images) > MAX_IMAGES:
        problems["Images"] = [f"At most {MAX_IMAGES} images."]
    for index, url in enumerate(images):
        if not url.startswith("https://") or len(url) > 2048 or any(c.isspace() for c in url):
            problems.setdefault(f"Images[{index}]", []).append("An https URL of the image (up to 2,048 characters).")
    for kind, value in policy.items():
        if kind not in POLICY_KINDS:
            problems.setdefault("BusinessPolicy", []).append(
                f"Unknown policy {kind!r}; one of {', '.join(POLICY_KINDS)}."
            )
        elif not 1 <= len(value) <= 100:
            problems[f"BusinessPolicy.{kind}"] = ["The marketplace's policy id, 1 to 100 characters."]
    allowed = {a.code: a for a in app_managed}
    for code, value in attributes.items():
        spec = allowed.get(code)
        if spec is None:
            problems[f"Attributes.{code}"] = ["Not an app-managed attribute of this listing's category."]
        elif len(value) > 500:
            problems[f"Attributes.{code}"] = ["At most 500 characters."]
    return problems


def clean_images(images: Sequence[str]) -> list[str]:
    return [url.strip() for url in images if url.strip()]


def clean_policy(policy: Mapping[str, str]) -> dict[str, str]:
    return {kind: value.strip() for kind, value in policy.items() if value.strip()}


def form_value(value: Any) -> str:
    """A stored attribute value as a form field holds it (Boolean as true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)
