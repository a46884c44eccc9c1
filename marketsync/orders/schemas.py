"""Request models (spec field names, case-exact), how request bodies are read, and the one shape of an
order on the wire.

Request models are strict for JSON: a value of the wrong JSON type (`Limit: "5"`, `Limit: true`,
`UpdatedSince: 1234`) is a 400 naming the field, never coerced; timestamps are ISO 8601 strings with an offset.
Write bodies are read leniently (`read_write_body`, on kit.bodies `StrictRequest.check`): every shape error is
collected, and the well-formed fields of every item are kept, so the service can add existence and state refusals
to the same 400. So is the List body (`check_list_body`): a shape error does not hide a bad Cursor.

`orders_json` renders the one shape of an order; each change stores it as the order's document
(docs/decisions/0066-order-documents.md), and POST /api/orders/List and GET /api/orders/{id} answer with the
stored bytes. The response models below document that shape in the OpenAPI; responses are never validated
against them per request (a page of 200 orders is on the hot path).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    StringConstraints,
    WithJsonSchema,
)
from pydantic_core import PydanticCustomError

from marketsync.http.bodies import Checked, NullIsDefault, StrictRequest, read_body, valid_fields
from marketsync.http.errors import ValidationFailed, merged_errors
from marketsync.kit import jsonio
from marketsync.kit.clock import iso
from marketsync.kit.numbers import JsonNumber
from marketsync.kit.timestamps import UtcDatetime
from marketsync.models.orders import Order, OrderItem, OrderRefundLine, OrderShipment
from marketsync.orders import rules
from marketsync.orders.rules import CancelReason, RefundReason

Id = Annotated[str, StringConstraints(min_length=1, max_length=64)]
OrderStatus = Literal["Pending", "Unshipped", "PartiallyShipped", "Shipped", "Cancelled", "Refunded"]
ShortText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)]
# A JSON number, strictly: pydantic's Decimal would take "5.00" in quotes even in strict mode.
Amount = Annotated[Decimal, Field(gt=0, max_digits=14, decimal_places=2), JsonNumber()]
BATCH_MAX = 500

assert set(rules.ORDER_STATUSES) == set(OrderStatus.__args__)  # type: ignore[attr-defined]
# A status in a response is an open string (spec section 3: "Full list of order statuses: not shown"): the document
# names the known ones and a client must accept one it has not seen (docs/decisions/0393). The filter above stays
# closed: the service refuses a value it does not know.
StatusOut = Annotated[
    str,
    Field(
        description="Known values: "
        + ", ".join(rules.ORDER_STATUSES)
        + ". The list is open: a client accepts a status it has not seen (statuses may be added)."
    ),
]

T = TypeVar("T")


def _at_least_one(values: list[T]) -> list[T]:
    # An empty selection is refused rather than read as "no filter": a caller's empty list is never widened.
    if not values:
        raise PydanticCustomError("at_least_one", "At least one value; omit the field to apply no filter.")
    return values


# ---------------------------------------------------------------- requests


class ListOrdersRequest(StrictRequest):
    ServiceOrderIDs: Annotated[list[Id], Field(max_length=200), AfterValidator(_at_least_one)] | None = None
    OrderStatuses: (
        Annotated[list[OrderStatus], Field(max_length=len(rules.ORDER_STATUSES)), AfterValidator(_at_least_one)] | None
    ) = None
    UpdatedSince: UtcDatetime | None = None
    FromDate: UtcDatetime | None = None
    ToDate: UtcDatetime | None = None
    Limit: Annotated[int, Field(ge=1, le=200), NullIsDefault(50)] = 50
    Cursor: Annotated[str, StringConstraints(min_length=1, max_length=500)] | None = None
    IncludeCustomerData: Annotated[bool, NullIsDefault(False)] = False


class ConfirmItem(StrictRequest):
    OrderItemId: Id
    ShipDate: UtcDatetime | None = None
    CarrierCode: ShortText | None = None
    CarrierName: ShortText | None = None
    ServiceLevel: ShortText | None = None
    TrackingNumber: ShortText | None = None


class ConfirmRequest(StrictRequest):
    OrderItems: Annotated[list[ConfirmItem], Field(min_length=1, max_length=BATCH_MAX)]


class CancelItem(StrictRequest):
    OrderItemId: Id
    # Units to cancel; omitted: every unit not yet shipped.
    Quantity: Annotated[int, Field(ge=1)] | None = None


class CancelRequest(StrictRequest):
    CancelReason: CancelReason
    OrderItems: Annotated[list[CancelItem], Field(min_length=1, max_length=BATCH_MAX)]


class RefundItem(StrictRequest):
    OrderItemId: Id
    # The money returned for this item, in the order's currency (at most 2 decimals).
    Amount: Amount
    # Units returned by the buyer (0 or omitted: a refund without a return, e.g. a price adjustment).
    Quantity: Annotated[int, Field(ge=0), NullIsDefault(0)] = 0


class RefundRequest(StrictRequest):
    Reason: RefundReason
    Currency: Annotated[str, StringConstraints(pattern=r"^[A-Z]{3}$")]
    OrderItems: Annotated[list[RefundItem], Field(min_length=1, max_length=BATCH_MAX)]


class UpdateRequest(StrictRequest):
    ServiceOrderID: Id
    # The caller's own reference for the order; null clears it.
    ExternalReference: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)] | None


# ---------------------------------------------------------------- reading request bodies

RequestT = TypeVar("RequestT", bound=StrictRequest)


def read_list_body(raw: bytes) -> ListOrdersRequest:
    """The List filters; no body at all (or only whitespace) means no filter, like `{}`."""
    return ListOrdersRequest.read(raw, optional=True)


def check_list_body(raw: bytes) -> Checked[ListOrdersRequest]:
    """The List filters read leniently: a shape error still lets the Cursor be checked (service.list_orders)."""
    return ListOrdersRequest.check(raw, optional=True)


@dataclass(frozen=True)
class WriteBody(Generic[RequestT]):
    """A write body read leniently (kit.bodies `StrictRequest.check`), its `OrderItems` entry by entry.

    `request` is the validated request when the body has no shape error. Otherwise `errors` names every
    shape error, `fields` holds the top-level fields that are valid and `items` the valid fields of each
    `OrderItems` entry (absent optional fields at their default), so existence and state checks can still
    run for every item whose `OrderItemId` is well-formed. `errors` also names a bad Idempotency-Key header
    (`also`), so the service refuses the batch whole before applying anything.
    """

    request: RequestT | None
    errors: dict[str, list[str]]
    fields: dict[str, Any]
    items: list[dict[str, Any]]

    def valid(self) -> RequestT:
        if self.request is None or self.errors:
            raise ValidationFailed(errors=self.errors)
        return self.request


def read_write_body(
    raw: bytes,
    model: type[RequestT],
    item_model: type[BaseModel] | None = None,
    also: Mapping[str, Sequence[str]] | None = None,
) -> WriteBody[RequestT]:
    """`also`: problems of the request outside its body (a bad Idempotency-Key), named in the same 400."""
    checked = model.check(raw, skip="OrderItems")
    errors = merged_errors(also or {}, checked.errors)
    if checked.request is not None:
        request = checked.request
        return WriteBody(request, errors, dict(request), [dict(item) for item in getattr(request, "OrderItems", ())])
    raw_items = read_body(raw).get("OrderItems")
    items: list[dict[str, Any]] = []
    # Over the limit the batch is refused whole (named by its shape error): its items are not looked up.
    if item_model is not None and isinstance(raw_items, list) and len(raw_items) <= BATCH_MAX:
        items = [valid_fields(item_model, entry) if isinstance(entry, dict) else {} for entry in raw_items]
    return WriteBody(None, errors, checked.fields, items)


# ---------------------------------------------------------------- the order on the wire


def _money(amount: Decimal) -> float:
    """The wire number of an exact amount (money fields are JSON numbers; docs/decisions/0009-money.md)."""
    return float(amount)


def order_json(
    order: Order,
    items: Sequence[OrderItem],
    shipments: Sequence[OrderShipment],
    refund_lines: Sequence[OrderRefundLine],
) -> dict[str, Any]:
    """One order as plain JSON values, customer block included (`order_document` splits it off), from its
    entities: a new field is one column on the model and one line here."""
    return {
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
        "ItemsTotal": _money(order.items_total),
        "ShippingTotal": _money(order.shipping_total),
        "TaxTotal": _money(order.tax_total),
        "OrderTotal": _money(order.items_total + order.shipping_total + order.tax_total),
        "RefundedTotal": _money(order.refunded_total),
        "ExternalReference": order.external_reference,
        "Address": {"Region": order.ship_region, "CountryCode": order.ship_country_code},
        "Items": [
            {
                "OrderItemId": item.id,
                "MarketplaceItemId": item.marketplace_item_id,
                "Sku": item.sku,
                "Title": item.title,
                "Quantity": item.quantity,
                "UnitPrice": _money(item.unit_price),
                "LineTotal": _money(item.unit_price * item.quantity),
                "Status": item.status,
                "ShippedQuantity": item.shipped_quantity,
                "CancelledQuantity": item.cancelled_quantity,
                "RefundedQuantity": item.refunded_quantity,
                "RefundedAmount": _money(item.refunded_amount),
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
        "Customer": {
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
        },
    }


def _refunds_json(lines: Sequence[OrderRefundLine]) -> list[dict[str, Any]]:
    """Refund lines (oldest first) grouped into refunds; amounts summed exactly before they become numbers."""
    refunds: dict[str, dict[str, Any]] = {}
    totals: dict[str, Decimal] = {}
    for line in lines:
        refund = refunds.get(line.refund_id)
        if refund is None:
            refund = refunds[line.refund_id] = {
                "RefundId": line.refund_id,
                "Reason": line.reason,
                "Currency": line.currency,
                "Amount": None,
                "CreatedDate": iso(line.created_at),
                "Items": [],
            }
            totals[line.refund_id] = Decimal(0)
        totals[line.refund_id] += line.amount
        refund["Items"].append(
            {"OrderItemId": line.order_item_id, "Quantity": line.quantity, "Amount": _money(line.amount)}
        )
    for refund_id, refund in refunds.items():
        refund["Amount"] = _money(totals[refund_id])
    return list(refunds.values())


# ---------------------------------------------------------------- stored documents (decision 0066)

# The renderer's version, stored with each document: raise it whenever `order_json` changes what it writes,
# and documents of older versions are rendered from their rows (and re-stored by the orders.documents schedule).
DOCUMENT_VERSION = 1
_CUSTOMER_KEY = b',"Customer":'


def order_document(order: dict[str, Any]) -> tuple[bytes, bytes]:
    """(document, customer_document) of one `order_json` dict.

    The order without its customer block and the block alone, so a read without customer data never
    touches personal data, and a read with it splices the block back in (`with_customer`).
    """
    customer = order.pop("Customer")
    return jsonio.dumps(order), jsonio.dumps(customer)


def with_customer(document: bytes, customer_document: bytes) -> bytes:
    """The document with its customer block as the last member: the bytes `order_json` + orjson would give."""
    return b"".join((document[:-1], _CUSTOMER_KEY, customer_document, b"}"))


def list_body(documents: Sequence[bytes], next_cursor: str | None, next_updated_since: str) -> bytes:
    """The List response (OrderListOut) around documents already serialised: joined, never parsed again."""
    tail = jsonio.dumps({"NextCursor": next_cursor, "NextUpdatedSince": next_updated_since})
    return b"".join((b'{"Orders":[', b",".join(documents), b"],", tail[1:]))


# ---------------------------------------------------------------- response models (OpenAPI documentation)

# What `jsonio` writes for an amount: a JSON number (a Decimal's float, exact at 2 decimals), never a string.
Money = Annotated[Decimal, WithJsonSchema({"type": "number"})]


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
    UnitPrice: Money
    LineTotal: Money
    Status: StatusOut
    ShippedQuantity: int
    CancelledQuantity: int
    RefundedQuantity: int
    RefundedAmount: Money
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
    Amount: Money


class RefundOut(BaseModel):
    RefundId: str
    Reason: RefundReason
    Currency: str
    Amount: Money
    CreatedDate: datetime
    Items: list[RefundItemOut]


class OrderOut(BaseModel):
    ServiceOrderID: str
    MarketplaceOrderId: str
    MarketplaceId: str
    Platform: str
    Country: str
    Status: StatusOut
    MarketplaceStatus: str
    PurchaseDate: datetime
    LastModifiedDate: datetime = Field(description="Last-changed time; UpdatedSince/FromDate/ToDate bound it.")
    CreatedDate: datetime
    Currency: str
    ItemsTotal: Money
    ShippingTotal: Money
    TaxTotal: Money
    OrderTotal: Money
    RefundedTotal: Money
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


class ItemResultOut(BaseModel):
    OrderItemId: str
    ServiceOrderID: str
    Status: StatusOut


class RefundResultOut(BaseModel):
    RefundId: str
    ServiceOrderID: str
    Amount: Money
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
