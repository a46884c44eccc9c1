"""Request and response models with the API's field names, case-exact (spec sections 2 and 4).

Responses accept fields this version does not know (``model_extra``), so a service that grows a field does not
break an older client; sdk/python/tests checks every model against the service's OpenAPI document, field by field.
Money is `Decimal` both ways: responses are parsed without binary floats and requests send exact JSON numbers.
Timestamps are timezone-aware datetimes both ways: a naive one is refused before anything is sent, and a response
timestamp without an offset is a contract breach, refused (ValidationError) rather than handed over naive.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, ClassVar, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

__all__ = [
    "Address",
    "AllowedValue",
    "Attribute",
    "AttributeType",
    "CancelItem",
    "CancelReason",
    "ConfirmItem",
    "CreateProductResult",
    "Customer",
    "DeleteSubscriptionResult",
    "EventType",
    "Job",
    "JobStatus",
    "LastPull",
    "Listing",
    "ListingAction",
    "Marketplace",
    "NewSubscription",
    "Order",
    "OrderItem",
    "OrderItemResult",
    "OrderPage",
    "OrderRefund",
    "OrderRefundItem",
    "OrderStatus",
    "OrderWriteResult",
    "Product",
    "ProductPage",
    "ProductSummary",
    "ProductType",
    "ProductTypePage",
    "ProductTypeSchema",
    "PushItem",
    "PushOutcome",
    "PushResult",
    "PushResultLine",
    "RefundItem",
    "RefundReason",
    "RefundResult",
    "RefundWriteResult",
    "SendTestEventRequest",
    "SentTestEvent",
    "Shipment",
    "ShippingAddress",
    "Subscription",
    "SubscriptionCreated",
    "Token",
    "UpdateOrderResult",
]

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
JobStatus = Literal["NotStarted", "Published", "InProcess", "Completed", "Failed", "Cancelled"]
PushOutcome = Literal["Updated", "Unchanged", "NotFound", "Ambiguous", "Failed"]
ListingAction = Literal["Create", "Revise"]
AttributeType = Literal["Text", "Integer", "Decimal", "Date", "Boolean"]
EventType = Literal[
    "OrdersDownloaded",
    "ListingPublished",
    "FeedOutcome",
    "MarketplaceUnhealthy",
    "MarketplaceRestored",
    "InventoryChanged",
]


class Response(BaseModel):
    """A response body. Unknown fields are kept in ``model_extra``, never refused."""

    model_config = ConfigDict(extra="allow")


class Request(BaseModel):
    """A request body: unknown fields are a mistake here, refused before sending.

    A field left out is never sent. A field given as None is sent as null (``ExternalReference=None`` clears the
    reference, ``Price=None`` is "not provided"), except the fields in ``OMIT_IF_NONE``: the service takes those
    as absent but refuses a null, so None there means "left out" (sdk/python/tests checks the set against the document).
    """

    model_config = ConfigDict(extra="forbid")
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _omit_refused_nulls(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name in self.OMIT_IF_NONE:
                if name in data and data[name] is None:
                    del data[name]
        return data


# ------------------------------------------------------------------------------------------------- token


class Token(Response):
    access_token: str
    token_type: str = "Bearer"
    expires_in: int
    scope: str


# ------------------------------------------------------------------------------------------------- orders


class ListOrdersRequest(Request):
    ServiceOrderIDs: list[str] | None = None
    OrderStatuses: list[OrderStatus] | None = None
    UpdatedSince: AwareDatetime | None = None
    FromDate: AwareDatetime | None = None
    ToDate: AwareDatetime | None = None
    Limit: int | None = None
    Cursor: str | None = None
    IncludeCustomerData: bool | None = None


class Address(Response):
    Region: str | None
    CountryCode: str


class ShippingAddress(Response):
    Name: str
    Line1: str
    Line2: str | None
    City: str
    Region: str | None
    PostalCode: str
    CountryCode: str
    Phone: str | None


class Customer(Response):
    Name: str
    Email: str | None
    Phone: str | None
    ShippingAddress: ShippingAddress


# The field below is named like its model, and a field with a default shadows its type in the class body.
_Customer = Customer


class OrderItem(Response):
    OrderItemId: str
    MarketplaceItemId: str
    Sku: str
    Title: str
    Quantity: int
    UnitPrice: Decimal
    LineTotal: Decimal
    Status: str
    ShippedQuantity: int
    CancelledQuantity: int
    RefundedQuantity: int
    RefundedAmount: Decimal
    CancelReason: str | None


class Shipment(Response):
    ShipmentId: str
    OrderItemId: str
    Quantity: int
    ShipDate: AwareDatetime
    CarrierCode: str | None
    CarrierName: str | None
    ServiceLevel: str | None
    TrackingNumber: str | None


class OrderRefundItem(Response):
    OrderItemId: str
    Quantity: int
    Amount: Decimal


class OrderRefund(Response):
    RefundId: str
    Reason: str
    Currency: str
    Amount: Decimal
    CreatedDate: AwareDatetime
    Items: list[OrderRefundItem]


class Order(Response):
    ServiceOrderID: str
    MarketplaceOrderId: str
    MarketplaceId: str
    Platform: str
    Country: str
    Status: str
    MarketplaceStatus: str
    PurchaseDate: AwareDatetime
    LastModifiedDate: AwareDatetime
    CreatedDate: AwareDatetime
    Currency: str
    ItemsTotal: Decimal
    ShippingTotal: Decimal
    TaxTotal: Decimal
    OrderTotal: Decimal
    RefundedTotal: Decimal
    ExternalReference: str | None
    Address: Address
    Items: list[OrderItem]
    Shipments: list[Shipment]
    Refunds: list[OrderRefund]
    # Present only when customer data was asked for (IncludeCustomerData / include_customer_data=True).
    Customer: _Customer | None = None


class OrderPage(Response):
    Orders: list[Order]
    NextCursor: str | None
    # Start the next walk with this as UpdatedSince: it covers every change made while this walk ran.
    NextUpdatedSince: AwareDatetime


class ConfirmItem(Request):
    OrderItemId: str
    ShipDate: AwareDatetime | None = None
    CarrierCode: str | None = None
    CarrierName: str | None = None
    ServiceLevel: str | None = None
    TrackingNumber: str | None = None


class ConfirmRequest(Request):
    OrderItems: list[ConfirmItem]


class CancelItem(Request):
    OrderItemId: str
    Quantity: int | None = None  # units to cancel; omitted: every unit not yet shipped


class CancelRequest(Request):
    CancelReason: CancelReason
    OrderItems: list[CancelItem]


class RefundItem(Request):
    OrderItemId: str
    Amount: Decimal  # in the order's currency
    Quantity: int | None = None  # units returned; omitted or 0: a refund without a return


class RefundRequest(Request):
    Reason: RefundReason
    Currency: str
    OrderItems: list[RefundItem]


class UpdateOrderRequest(Request):
    ServiceOrderID: str
    ExternalReference: str | None  # None clears it (sent as null, never omitted)


class OrderItemResult(Response):
    OrderItemId: str
    ServiceOrderID: str
    Status: str


class RefundResult(Response):
    RefundId: str
    ServiceOrderID: str
    Amount: Decimal
    Currency: str


class OrderWriteResult(Response):
    """Confirm and Cancel. Check ``Warnings``: for P2, P3 and P4 the change is stored, never sent."""

    RequestId: str
    Warnings: list[str]
    JobIds: list[str]
    Items: list[OrderItemResult]


class RefundWriteResult(OrderWriteResult):
    Refunds: list[RefundResult]


class UpdateOrderResult(Response):
    RequestId: str
    Warnings: list[str]
    ServiceOrderID: str
    ExternalReference: str | None


# ------------------------------------------------------------------------------------------------- inventory


class PushItem(Request):
    Sku: str
    Price: Decimal | None = None  # None: not provided, the stored price stays (never zero)
    Quantity: int | None = None  # None: not provided; 0 means none in stock


class PushRequest(Request):
    Items: list[PushItem]
    PropagateToListings: bool | None = None


class PushResultLine(Response):
    Sku: str
    Result: str  # Updated, Unchanged, NotFound, Ambiguous or Failed (see PushOutcome)


class PushResult(Response):
    RequestId: str
    Results: list[PushResultLine]
    Updated: int
    Unchanged: int
    NotFound: int
    Ambiguous: int
    Failed: int
    JobIds: list[str]
    Warnings: list[str]


class Listing(Response):
    Platform: str
    Country: str
    ListingId: str
    ExternalSku: str
    ListingUrl: str


class ListProductsRequest(Request):
    Sku: str | None = None
    Limit: int | None = None
    Offset: int | None = None
    ModifiedSince: AwareDatetime | None = None


class ProductSummary(Response):
    """A catalogue entry as products/List returns it (no price)."""

    Sku: str
    Quantity: int
    LastModifiedDate: AwareDatetime
    Listings: list[Listing]


class ProductPage(Response):
    Products: list[ProductSummary]
    TotalCount: int


class Product(Response):
    Sku: str
    Quantity: int
    Listings: list[Listing]


class ProductEnvelope(Response):
    Product: Product


# ------------------------------------------------------------------------------------------------- catalog


class SearchProductTypesRequest(Request):
    MarketplaceId: str
    SearchText: str | None = None
    Limit: int | None = None
    Offset: int | None = None


class ProductType(Response):
    CategoryId: str
    Title: str
    Path: str


class ProductTypePage(Response):
    ProductTypes: list[ProductType]
    TotalCount: int


class AllowedValue(Response):
    Value: str
    Title: str


class Attribute(Response):
    Code: str
    Title: str
    Type: str  # see AttributeType (descriptive; closed sets are AllowedValues)
    IsRequired: bool
    AllowedValues: list[AllowedValue]
    AllowsCustomValues: bool


class ProductTypeSchema(Response):
    ProductTypeViewId: str
    CategoryId: str
    CategoryPath: str
    ProductTypeCode: str
    SchemaVersion: str
    Attributes: list[Attribute]


class CreateProductRequest(Request):
    OMIT_IF_NONE = frozenset({"ValidateOnly"})

    Sku: str
    Quantity: int | None = None
    MarketplaceId: str
    ProductTypeViewId: str | None = None
    CategoryId: str | None = None
    Attributes: dict[str, Any] | None = None
    ValidateOnly: bool | None = None


class CreateProductResult(Response):
    """HTTP 200 means the catalogue is updated and a publish is queued: follow ``JobId``."""

    RequestId: str
    ProductId: str | None
    Sku: str
    ListingAction: str  # Create or Revise (see ListingAction)
    ExistingListingId: str | None
    JobId: str | None
    Warnings: list[str]


# ------------------------------------------------------------------------------------------------- marketplaces, jobs


class LastPull(Response):
    Status: str
    TotalSkus: int
    CurrentSku: int


class Marketplace(Response):
    MarketplaceId: str
    Platform: str
    Country: str
    HealthStatus: str | None  # None: nothing known yet, not broken
    HealthStatusMessage: str
    IsHealthy: bool
    RequiresReauthorization: bool  # the one state retrying never clears: reconnect in the app
    LastPull: LastPull


class MarketplaceList(Response):
    Marketplaces: list[Marketplace]


class Job(Response):
    JobId: str
    Type: str
    Status: str  # see JobStatus
    IsComplete: bool
    IsSuccessful: bool
    StartedAt: AwareDatetime  # never None: when the job was accepted until a worker starts it
    ProgressDone: int | None  # None: the job does not count rows (not zero)
    ProgressTotal: int | None
    RecoveryCount: int


# ------------------------------------------------------------------------------------------------- webhooks


class CreateSubscriptionRequest(Request):
    Url: str
    EventTypes: list[str]  # names of EventType; a name this version does not know may still be sent


class DeleteSubscriptionRequest(Request):
    SubscriptionId: str


class SendTestEventRequest(Request):
    SubscriptionId: str
    EventType: str | None = None  # one of the subscription's EventTypes; None: its first one


class Subscription(Response):
    SubscriptionId: str
    Url: str
    EventTypes: list[str]
    IsActive: bool
    ConsecutiveFailures: int
    DisabledDate: AwareDatetime | None
    DisabledReason: str | None
    LastSuccessDate: AwareDatetime | None
    CreatedDate: AwareDatetime


class NewSubscription(Subscription):
    # The signing secret, shown once: in the original create response only. A replay of the same
    # Idempotency-Key carries none (and a warning saying so): delete the subscription and create a new one.
    Secret: str | None = None


class SubscriptionCreated(Response):
    Subscription: NewSubscription
    RequestId: str
    Warnings: list[str]


class SubscriptionList(Response):
    Subscriptions: list[Subscription]


class DeleteSubscriptionResult(Response):
    SubscriptionId: str
    Deleted: bool
    RequestId: str
    Warnings: list[str]


class SentTestEvent(Response):
    SubscriptionId: str
    EventType: str
    DeliveryId: str  # the X-SVC-Delivery-Id of the test delivery
    RequestId: str
    Warnings: list[str]
