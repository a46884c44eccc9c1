"""Request and response shapes of the inventory endpoints, with the spec's field names (spec §2, §4).

Bodies are read by `marketsync.http.bodies` like every route's. The push's is parsed with exact decimals: a JSON
number such as 19.99 never passes through a binary float on its way to the database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BaseModel, Field, StrictBool, StrictInt, StrictStr, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from marketsync.http.bodies import StrictRequest, read_body
from marketsync.http.errors import ValidationFailed, merged_errors, validation_errors
from marketsync.inventory import rules
from marketsync.inventory.rules import MAX_OFFSET, MAX_PUSH_ITEMS, PushItem
from marketsync.kit.numbers import JsonNumber
from marketsync.kit.timestamps import UtcDatetime


class PushItemIn(StrictRequest):
    # The bounds are checked by the validators below (their own messages); `json_schema_extra` states them in the
    # document only.
    Sku: StrictStr = Field(json_schema_extra={"minLength": 1, "maxLength": rules.MAX_SKU_LENGTH})
    # A JSON number, strictly (like Quantity): "19.99" in quotes is refused, not read as a number.
    Price: Annotated[Decimal, JsonNumber()] | None = Field(
        None,
        description="Exact decimal (a JSON number), at most 4 decimal places; omitted or null: untouched.",
        json_schema_extra={"minimum": 0, "maximum": float(rules.MAX_PRICE)},
    )
    Quantity: StrictInt | None = Field(
        None,
        description="Whole number; omitted or null: untouched; 0 means none in stock.",
        json_schema_extra={"minimum": 0, "maximum": rules.MAX_QUANTITY},
    )

    @field_validator("Sku")
    @classmethod
    def _sku(cls, value: str) -> str:
        if problem := rules.sku_problem(value):
            raise PydanticCustomError("sku", problem)
        return value

    @field_validator("Price")
    @classmethod
    def _price(cls, value: Decimal | None) -> Decimal | None:
        if value is None:
            return None
        if problem := rules.price_problem(value):
            raise PydanticCustomError("price", problem)
        return rules.unsigned_zero(value)

    @field_validator("Quantity")
    @classmethod
    def _quantity(cls, value: int | None) -> int | None:
        if value is not None and (problem := rules.quantity_problem(value)):
            raise PydanticCustomError("quantity", problem)
        return value


class PushIn(StrictRequest):
    Items: list[PushItemIn] = Field(min_length=1, max_length=MAX_PUSH_ITEMS)
    PropagateToListings: StrictBool | None = Field(
        None, description="Default true: schedule the outbound write to every marketplace holding a listing."
    )

    def items(self) -> list[PushItem]:
        return [PushItem(sku=item.Sku, price=item.Price, quantity=item.Quantity) for item in self.Items]

    @property
    def propagate(self) -> bool:
        return self.PropagateToListings is not False


_ITEM_FIELDS = frozenset(("Sku", "Price", "Quantity"))
_PUSH_FIELDS = frozenset(("Items", "PropagateToListings"))


def _checked_item(item: Any) -> PushItem | None:
    """One push item checked by hand as PushItemIn would, or None when PushItemIn must say what is wrong."""
    if type(item) is not dict or not item.keys() <= _ITEM_FIELDS:
        return None
    sku = item.get("Sku")
    price = item.get("Price")
    quantity = item.get("Quantity")
    if type(sku) is not str or rules.sku_problem(sku):
        return None
    if price is not None:
        # A JSON integer is a price like any other (the cap and the sign apply to 5 as to 5.0).
        if type(price) is int:
            price = Decimal(price)
        if type(price) is not Decimal or rules.price_problem(price):
            return None
        price = rules.unsigned_zero(price)
    if quantity is not None and (type(quantity) is not int or rules.quantity_problem(quantity)):
        return None
    return PushItem(sku, price, quantity)


def _checked_push(data: Any) -> tuple[list[PushItem], bool] | None:
    """The push body checked by hand (PushIn's rules, without building 500 models), or None when PushIn must
    report what is wrong: a valid body gets the same values either way, an invalid one the same 400."""
    if type(data) is not dict or not data.keys() <= _PUSH_FIELDS:
        return None
    raw_items = data.get("Items")
    propagate = data.get("PropagateToListings")
    if type(raw_items) is not list or not 1 <= len(raw_items) <= MAX_PUSH_ITEMS:
        return None
    if propagate is not None and type(propagate) is not bool:
        return None
    items = []
    for raw_item in raw_items:
        item = _checked_item(raw_item)
        if item is None:
            return None
        items.append(item)
    return items, propagate is not False


def parse_push(raw: bytes, also: Mapping[str, Sequence[str]] | None = None) -> tuple[list[PushItem], bool]:
    """The push body with exact decimals, as (items, propagate); every bad field in one 400 keyed like
    `Items[3].Price`, beside the problems `also` names (a bad Idempotency-Key: docs/decisions/0344)."""
    try:
        data = read_body(raw, exact_decimals=True)
        checked = _checked_push(data)
        if checked is None:
            try:
                body = PushIn.model_validate(data)
            except ValidationError as exc:
                raise ValidationFailed(errors=validation_errors(exc.errors())) from None
            checked = body.items(), body.propagate
    except ValidationFailed as exc:
        if also:
            raise ValidationFailed(exc.title, errors=merged_errors(also, exc.errors)) from None
        raise
    if also:
        raise ValidationFailed(errors=also)
    return checked


class ListingOut(BaseModel):
    """Only listings the marketplace accepted are shown (0024): the three ids come together from its answer."""

    Platform: str
    Country: str
    ListingId: str
    ExternalSku: str
    ListingUrl: str


class PushResultOut(BaseModel):
    Sku: str
    Result: str = Field(description="Updated, Unchanged, NotFound, Ambiguous or Failed.")


class PushOut(BaseModel):
    RequestId: str
    Results: list[PushResultOut]
    Updated: int
    Unchanged: int
    NotFound: int
    Ambiguous: int
    Failed: int
    JobIds: list[str]
    Warnings: list[str]


class ProductListIn(StrictRequest):
    Sku: StrictStr | None = Field(None, description="Case-insensitive SKU filter.")
    Limit: Annotated[int, Field(ge=1, le=200)] | None = Field(None, description="Default 50, maximum 200.")
    Offset: Annotated[int, Field(ge=0, le=MAX_OFFSET)] | None = Field(
        None,
        description=f"0 to {MAX_OFFSET}; page against TotalCount. Without ModifiedSince, products come in SKU order "
        "ignoring case: a change of price or stock moves none of them between pages.",
    )
    ModifiedSince: UtcDatetime | None = Field(
        None,
        description="Inclusive bound; the page is then ordered oldest change first. Resume with the "
        "last entry's LastModifiedDate (that entry comes back first: skip what you already hold).",
    )


class ProductEntryOut(BaseModel):
    Sku: str
    Quantity: int
    LastModifiedDate: str
    Listings: list[ListingOut]


class ProductsOut(BaseModel):
    Products: list[ProductEntryOut]
    TotalCount: int = Field(
        description="How many products match. With ModifiedSince, counted up to Offset + 10,000: exact when fewer "
        "remain, else Offset + 10,000 (keep paging while Offset < TotalCount)."
    )


class ProductOut(BaseModel):
    Sku: str
    Quantity: int
    Listings: list[ListingOut]


class ProductEnvelopeOut(BaseModel):
    Product: ProductOut
