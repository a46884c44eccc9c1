"""Request and response shapes of the catalog endpoints (spec section 2 and 4 field names)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from marketsync.catalog.listings import rules
from marketsync.catalog.taxonomy import AttributeSpec
from marketsync.http.bodies import StrictRequest
from marketsync.inventory.rules import MAX_OFFSET
from marketsync.models.catalog import ProductTypeView


class SearchIn(StrictRequest):
    MarketplaceId: str = Field(min_length=1, description="From GET /api/marketplaces.")
    SearchText: str | None = Field(
        None,
        max_length=200,
        description="Case-insensitive match on the category name; a number also matches the category id. "
        "Omit to walk the whole tree.",
    )
    Limit: int | None = Field(None, ge=1, le=200, description="Default 50, maximum 200.")
    Offset: int | None = Field(None, ge=0, le=MAX_OFFSET, description=f"0 to {MAX_OFFSET}.")


class ProductTypeOut(BaseModel):
    CategoryId: str
    Title: str
    Path: str


class SearchOut(BaseModel):
    ProductTypes: list[ProductTypeOut]
    TotalCount: int


class AllowedValueOut(BaseModel):
    Value: str
    Title: str


class AttributeOut(BaseModel):
    Code: str
    Title: str
    Type: str
    IsRequired: bool
    AllowedValues: list[AllowedValueOut]
    AllowsCustomValues: bool

    @classmethod
    def of(cls, attribute: AttributeSpec) -> AttributeOut:
        return cls(
            Code=attribute.code,
            Title=attribute.title,
            Type=attribute.type,
            IsRequired=attribute.is_required,
            AllowedValues=[AllowedValueOut(Value=v.value, Title=v.title) for v in attribute.allowed_values],
            AllowsCustomValues=attribute.allows_custom_values,
        )


class SchemaOut(BaseModel):
    ProductTypeViewId: str
    CategoryId: str
    CategoryPath: str
    ProductTypeCode: str
    SchemaVersion: str
    Attributes: list[AttributeOut]

    @classmethod
    def of(cls, view: ProductTypeView, attributes: tuple[AttributeSpec, ...]) -> SchemaOut:
        # Only what the API can carry: app-managed attributes and off-API requirements stay out.
        return cls(
            ProductTypeViewId=view.id,
            CategoryId=view.category_id,
            CategoryPath=view.category_path,
            ProductTypeCode=view.product_type_code,
            SchemaVersion=view.schema_version,
            Attributes=[AttributeOut.of(a) for a in attributes if a.api_settable],
        )


class CreateProductIn(BaseModel):
    """Documentation of the create payload. The endpoint checks it field by field itself (catalog.listings.rules),
    so that one 400 names every bad field, shape problems and schema problems together."""

    model_config = ConfigDict(extra="forbid")

    Sku: str = Field(
        min_length=1, max_length=rules.MAX_SKU_LENGTH, description="Required. Upserts on the SKU (exact casing)."
    )
    Quantity: int | None = Field(
        None, ge=0, le=rules.MAX_QUANTITY, description="Omitted leaves stock untouched, never zero."
    )
    MarketplaceId: str = Field(description="An active connection from GET /api/marketplaces.")
    ProductTypeViewId: str | None = Field(
        None, description="From GET /api/product-types/Schema; must be the current one for CategoryId."
    )
    CategoryId: str | None = Field(None, description="Required for P2, P3 and P4; optional for P1.")
    Attributes: dict[str, Any] | None = Field(None, description="Keys are the schema's attribute Codes.")
    ValidateOnly: bool = Field(
        False, description="Beyond the spec: validate and answer the would-be outcome; write nothing."
    )


class CreateProductOut(BaseModel):
    RequestId: str
    ProductId: str | None
    Sku: str
    ListingAction: str
    ExistingListingId: str | None
    JobId: str | None
    Warnings: list[str]
