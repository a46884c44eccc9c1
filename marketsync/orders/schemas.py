"""Request models (spec field names, case-exact) and the one shape of an order on the wire.

`order_json` builds the order dict used identically by POST /api/orders/List and GET /api/orders/{id}.
The response models below document that shape in the OpenAPI; responses are built as dicts and
serialised with orjson (a page of 200 orders is on the hot path).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints

from marketsync.kit.clock import iso
from marketsync.orders import rules

Id = Annotated[str, StringConstraints(min_length=1, max_length=64)]
OrderStatus = Literal["Pending", "Unshipped", "PartiallyShipped", "Shipped", "Cancelled", "Refunded"]
CancelReason = Literal[
    "OutOfStock", "CustomerRequest", "PricingError", "UndeliverableAddress", "SuspectedFraud", "Other"
]
RefundReason = Literal[
    "CustomerReturn",
    "ItemNotReceived",
    "ItemDamaged",
    "NotAsDescribed",
    "WrongItemSent",
    "Cancellation",
    "PriceAdjustment",
    "Goodwill",
    "Other",
]
ShortText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)]
Amount = Annotated[Decimal, Field(gt=0, max_digits=14, decimal_places=2)]
BATCH_MAX = 500

assert set(rules.ORDER_STATUSES) == set(OrderStatus.__args__)  # type: ignore[attr-defined]
assert set(rules.CANCEL_REASONS) == set(CancelReason.__args__)  # type: ignore[attr-defined]
assert set(rules.REFUND_REASONS) == set(RefundReason.__args__)  # type: ignore[attr-defined]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---------------------------------------------------------------- requests


class ListOrdersRequest(Strict):
    ServiceOrderIDs: Annotated[list[Id], Field(max_length=200)] | None = None
    OrderStatuses: Annotated[list[OrderStatus], Field(max_length=len(rules.ORDER_STATUSES))] | None = None
    UpdatedSince: AwareDatetime | None = None
    FromDate: AwareDatetime | None = None
    ToDate: AwareDatetime | None = None
    Limit: Annotated[int, Field(ge=1, le=200)] = 50
    Cursor: Annotated[str, StringConstraints(min_length=1, max_length=500)] | None = None
    IncludeCustomerData: bool = False


class ConfirmItem(Strict):
    OrderItemId: Id
    ShipDate: AwareDatetime | None = None
    CarrierCode: ShortText | None = None
    CarrierName: ShortText | None = None
    ServiceLevel: ShortText | None = None
    TrackingNumber: ShortText | None = None


class ConfirmRequest(Strict):
    OrderItems: Annotated[list[ConfirmItem], Field(min_length=1, max_length=BATCH_MAX)]


class CancelItem(Strict):
    OrderItemId: Id
    # Units to cancel; omitted: every unit not yet shipped.
    Quantity: Annotated[int, Field(ge=1)] | None = None


class CancelRequest(Strict):
    CancelReason: CancelReason
    OrderItems: Annotated[list[CancelItem], Field(min_length=1, max_length=BATCH_MAX)]


class RefundItem(Strict):
    OrderItemId: Id
    # The money returned for this item, in the order's currency (at most 2 decimals).
    Amount: Amount
    # Units returned by the buyer (0 or omitted: a refund without a return, e.g. a price adjustment).
    Quantity: Annotated[int, Field(ge=0)] = 0


class RefundRequest(Strict):
    Reason: RefundReason
    Currency: Annotated[str, StringConstraints(pattern=r"^[A-Z]{3}$")]
    OrderItems: Annotated[list[RefundItem], Field(min_length=1, max_length=BATCH_MAX)]


class UpdateRequest(Strict):
    ServiceOrderID: Id
    # The caller's own reference for the order; null clears it.
    ExternalReference: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)] | None


# ---------------------------------------------------------------- the order on the wire


def order_json(
    order: Any,
    items: Sequence[Any],
    shipments: Sequence[Any],
    refund_lines: Sequence[Any],
    *,
    include_customer: bool,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "ServiceOrderID": order.id,
        "MarketplaceOrderId": order.marketplace_order_id,
        "MarketplaceId": order.marketplace_id,
        "Platform": order.platform,
        "Country": order.country,
        "Status": order.status,
        "MarketplaceStatus": order.marketplace_status,
        "PurchaseDate": iso(order.purchase_date),
        "LastModifiedDate": iso(order.updated_at),
        "CreatedDate": iso(order.created_at),
        "Currency": order.currency,
        "ItemsTotal": order.items_total,
        "ShippingTotal": order.shipping_total,
        "TaxTotal": order.tax_total,
        "OrderTotal": order.items_total + order.shipping_total + order.tax_total,
        "RefundedTotal": order.refunded_total,
        "ExternalReference": order.external_reference,
        "Address": {"Region": order.ship_region, "CountryCode": order.ship_country_code},
        "Items": [
            {
                "OrderItemId": item.id,
                "MarketplaceItemId": item.marketplace_item_id,
                "Sku": item.sku,
                "Title": item.title,
                "Quantity": item.quantity,
                "UnitPrice": item.unit_price,
                "LineTotal": item.unit_price * item.quantity,
                "Status": item.status,
                "ShippedQuantity": item.shipped_quantity,
                "CancelledQuantity": item.cancelled_quantity,
                "RefundedQuantity": item.refunded_quantity,
                "RefundedAmount": item.refunded_amount,
                "CancelReason": item.cancel_reason,
            }
            for item in items
        ],
        "Shipments": [
            {
                "ShipmentId": shipment.id,
                "OrderItemId": shipment.order_item_id,
                "Quantity": shipment.quantity,
                "ShipDate": iso(shipment.ship_date),
                "CarrierCode": shipment.carrier_code,
                "CarrierName": shipment.carrier_name,
                "ServiceLevel": shipment.service_level,
                "TrackingNumber": shipment.tracking_number,
            }
            for shipment in shipments
        ],
        "Refunds": _refunds_json(refund_lines),
    }
    if include_customer:
        body["Customer"] = {
            "Name": order.buyer_name,
            "Email": order.buyer_email,
            "Phone": order.buyer_phone,
            "ShippingAddress": {
                "Name": order.ship_name,
                "Line1": order.ship_line1,
                "Line2": order.ship_line2,
                "City": order.ship_city,
                "Region": order.ship_region,
                "PostalCode": order.ship_postal_code,
                "CountryCode": order.ship_country_code,
                "Phone": order.ship_phone,
            },
        }
    return body


def _refunds_json(lines: Sequence[Any]) -> list[dict[str, Any]]:
    refunds: dict[str, dict[str, Any]] = {}
    for line in lines:
        refund = refunds.get(line.refund_id)
        if refund is None:
            refund = refunds[line.refund_id] = {
                "RefundId": line.refund_id,
                "Reason": line.reason,
                "Currency": line.currency,
                "Amount": Decimal("0"),
                "CreatedDate": iso(line.created_at),
                "Items": [],
            }
        refund["Amount"] += line.amount
        refund["Items"].append({"OrderItemId": line.order_item_id, "Quantity": line.quantity, "Amount": line.amount})
    return list(refunds.values())


# ---------------------------------------------------------------- response models (OpenAPI documentation)


class AddressOut(BaseModel):
    Region: str | None
    CountryCode: str


class ShippingAddressOut(BaseModel):
    Name: str
    Line1: str
    Line2: str | None
    City: str
    Region: str | None
    PostalCode: str
    CountryCode: str
    Phone: str | None


class CustomerOut(BaseModel):
    Name: str
    Email: str | None
    Phone: str | None
    ShippingAddress: ShippingAddressOut


class OrderItemOut(BaseModel):
    OrderItemId: str
    MarketplaceItemId: str
    Sku: str
    Title: str
    Quantity: int
    UnitPrice: Decimal
    LineTotal: Decimal
    Status: OrderStatus
    ShippedQuantity: int
    CancelledQuantity: int
    RefundedQuantity: int
    RefundedAmount: Decimal
    CancelReason: CancelReason | None


class ShipmentOut(BaseModel):
    ShipmentId: str
    OrderItemId: str
    Quantity: int
    ShipDate: datetime
    CarrierCode: str | None
    CarrierName: str | None
    ServiceLevel: str | None
    TrackingNumber: str | None


class RefundItemOut(BaseModel):
    OrderItemId: str
    Quantity: int
    Amount: Decimal


class RefundOut(BaseModel):
    RefundId: str
    Reason: RefundReason
    Currency: str
    Amount: Decimal
    CreatedDate: datetime
    Items: list[RefundItemOut]


class OrderOut(BaseModel):
    ServiceOrderID: str
    MarketplaceOrderId: str
    MarketplaceId: str
    Platform: str
    Country: str
    Status: OrderStatus
    MarketplaceStatus: str
    PurchaseDate: datetime
    LastModifiedDate: datetime = Field(description="Last-changed time; UpdatedSince/FromDate/ToDate bound it.")
    CreatedDate: datetime
    Currency: str
    ItemsTotal: Decimal
    ShippingTotal: Decimal
    TaxTotal: Decimal
    OrderTotal: Decimal
    RefundedTotal: Decimal
    ExternalReference: str | None
    Address: AddressOut
    Items: list[OrderItemOut]
    Shipments: list[ShipmentOut]
    Refunds: list[RefundOut]
    Customer: CustomerOut | None = Field(
        None, description="Present only with IncludeCustomerData / includeCustomerData=true."
    )


class OrderListOut(BaseModel):
    Orders: list[OrderOut]
    NextCursor: str | None = Field(description="Pass back as Cursor (same filters) for the next page; null at the end.")
    NextUpdatedSince: datetime = Field(
        description="Start the next walk with this as UpdatedSince: it covers every change made while this walk ran."
    )


class OrderOneOut(BaseModel):
    Order: OrderOut


class ItemResultOut(BaseModel):
    OrderItemId: str
    ServiceOrderID: str
    Status: OrderStatus


class RefundResultOut(BaseModel):
    RefundId: str
    ServiceOrderID: str
    Amount: Decimal
    Currency: str


class WriteOut(BaseModel):
    RequestId: str
    Warnings: list[str]
    JobIds: list[str] = Field(description="OrderWriteBack jobs sending the change to the marketplace (P1 only).")
    Items: list[ItemResultOut]


class RefundWriteOut(WriteOut):
    Refunds: list[RefundResultOut]


class UpdateOut(BaseModel):
    RequestId: str
    Warnings: list[str]
    ServiceOrderID: str
    ExternalReference: str | None
