"""Amazon's orders (Orders API v0) as the service's pulled orders: statuses, money, the pull's cursor.
Pure: no I/O (the connector calls SP-API). Decisions: docs/decisions/0371-amazon-order-statuses.md (the status
table) and docs/decisions/0376-amazon-customer-data.md (personal data only through a Restricted Data Token).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from marketsync.kit import jsonio
from marketsync.kit.clock import iso
from marketsync.marketplaces.connector import MarketplaceOrder, MarketplaceOrderItem, PostalAddress

__all__ = [
    "CUSTOMER_DATA_ELEMENTS",
    "FIRST_PULL_LOOKBACK",
    "ORDER_STATUS",
    "OrderCursor",
    "item_status",
    "marketplace_order",
    "order_status",
]

# Amazon's OrderStatus -> the marketplace status the service's order rules read (orders/rules.py): Pending holds an
# order back; Shipped and Cancelled move an item's counters. PartiallyShipped is decided per item (item_status).
ORDER_STATUS: dict[str, str] = {
    "PendingAvailability": "Pending",
    "Pending": "Pending",
    "Unshipped": "Unshipped",
    "PartiallyShipped": "PartiallyShipped",
    "Shipped": "Shipped",
    "InvoiceUnconfirmed": "Shipped",
    "Canceled": "Cancelled",
    "Unfulfillable": "Cancelled",
}

# What the customer block (IncludeCustomerData) holds, in the Tokens API's data elements for getOrders: the buyer's
# name and email, and the shipping address (its name and phone with it). Nothing else is asked for.
CUSTOMER_DATA_ELEMENTS = ("buyerInfo", "shippingAddress")

# A connection's first pull reaches this far back; every later one continues from the last.
FIRST_PULL_LOOKBACK = timedelta(days=30)
# Amazon answers orders changed up to two minutes ago (LastUpdatedBefore no later); a walk stops a minute short of
# that, so a clock a little ahead of Amazon's is never refused.
WINDOW_LAG = timedelta(minutes=3)


def order_status(amazon_status: str) -> str:
    """The marketplace status of an Amazon OrderStatus (an unknown one counts as Unshipped: paid, not shipped)."""
    return ORDER_STATUS.get(amazon_status, "Unshipped")


def item_status(order_status_: str, quantity_ordered: int, quantity_shipped: int) -> str:
    """An item's marketplace status: Amazon reports shipping per item only as QuantityShipped."""
    if order_status_ in ("Pending", "Cancelled"):
        return order_status_
    if quantity_ordered > 0 and quantity_shipped >= quantity_ordered:
        return "Shipped"
    return "Unshipped"


def _money(value: Any) -> Decimal:
    if not isinstance(value, dict):
        return Decimal("0")
    try:
        amount = Decimal(str(value.get("Amount") or "0"))
    except InvalidOperation:
        return Decimal("0")
    return amount if amount.is_finite() else Decimal("0")


def _timestamp(value: str) -> datetime:
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def marketplace_order(
    order: dict[str, Any], items: list[dict[str, Any]], customer: dict[str, Any] | None, default_currency: str
) -> MarketplaceOrder:
    """One Amazon order with its items. `customer`: the same order as getOrders answered with a Restricted Data
    Token (its BuyerInfo and ShippingAddress carry personal data), or None: then no personal data is held."""
    status = order_status(str(order["OrderStatus"]))
    currency = str((order.get("OrderTotal") or {}).get("CurrencyCode") or "")
    lines = _order_lines(status, items)
    source = customer or {}
    buyer = source.get("BuyerInfo") or {}
    address = source.get("ShippingAddress") or {}
    return MarketplaceOrder(
        marketplace_order_id=str(order["AmazonOrderId"]),
        status=status,
        purchase_date=_timestamp(str(order["PurchaseDate"])),
        changed_at=_timestamp(str(order["LastUpdateDate"])),
        currency=currency or lines.currency or default_currency,
        items=lines.items,
        buyer_name=str(buyer.get("BuyerName") or address.get("Name") or ""),
        buyer_email=_text(buyer.get("BuyerEmail")),
        buyer_phone=_text(address.get("Phone")),
        # Without a Restricted Data Token Amazon still tells where an order goes (city, region, postcode, country):
        # kept, as the other marketplaces' orders keep it; the name, street, phone and email only come with the token.
        shipping_address=_shipping_address(address, order.get("ShippingAddress") or {}),
        shipping_total=lines.shipping,
        tax_total=lines.tax,
    )


@dataclass
class _OrderLines:
    items: list[MarketplaceOrderItem] = field(default_factory=list)
    shipping: Decimal = Decimal("0")
    tax: Decimal = Decimal("0")
    currency: str = ""  # the first item price's, for an order that names none


def _order_lines(status: str, items: list[dict[str, Any]]) -> _OrderLines:
    lines = _OrderLines()
    for item in items:
        quantity = int(item.get("QuantityOrdered") or 0)
        line = _money(item.get("ItemPrice"))  # Amazon's ItemPrice is the line's price: unit price x quantity
        lines.currency = lines.currency or str((item.get("ItemPrice") or {}).get("CurrencyCode") or "")
        lines.shipping += _money(item.get("ShippingPrice")) - _money(item.get("ShippingDiscount"))
        lines.tax += _money(item.get("ItemTax")) + _money(item.get("ShippingTax"))
        lines.items.append(
            MarketplaceOrderItem(
                marketplace_item_id=str(item["OrderItemId"]),
                sku=str(item.get("SellerSKU") or item.get("ASIN") or ""),
                title=str(item.get("Title") or ""),
                quantity=quantity,
                unit_price=(line / quantity).quantize(Decimal("0.0001")) if quantity else line,
                status=item_status(status, quantity, int(item.get("QuantityShipped") or 0)),
            )
        )
    return lines


def _shipping_address(address: dict[str, Any], shape: dict[str, Any]) -> PostalAddress:
    """`address`: the Restricted Data Token's full address (or empty); `shape`: where the order goes without one."""
    lines = [_text(address.get(name)) for name in ("AddressLine1", "AddressLine2", "AddressLine3")]
    street = [line for line in lines if line]
    return PostalAddress(
        name=str(address.get("Name") or ""),
        line1=street[0] if street else "",
        line2=", ".join(street[1:]) or None,
        city=str(address.get("City") or shape.get("City") or ""),
        region=_text(address.get("StateOrRegion")) or _text(shape.get("StateOrRegion")),
        postal_code=str(address.get("PostalCode") or shape.get("PostalCode") or ""),
        country_code=str(address.get("CountryCode") or shape.get("CountryCode") or ""),
        phone=_text(address.get("Phone")),
    )


@dataclass(frozen=True)
class OrderCursor:
    """Where the order pull stands. A walk asks for the orders changed in [`after`, `before`] (both inclusive at
    Amazon), `before` a little older than Amazon's newest answerable moment (WINDOW_LAG), page by page with Amazon's
    NextToken; the next walk starts at this walk's `before`. An order changed exactly at the boundary is pulled twice,
    and an identical re-pull changes nothing."""

    after: datetime
    next_token: str | None = None
    before: datetime | None = None  # set while a walk is under way

    def encode(self) -> str:
        body: dict[str, str] = {"After": iso(self.after)}
        if self.next_token:
            body["NextToken"] = self.next_token
        if self.before is not None:
            body["Before"] = iso(self.before)
        return jsonio.dumps(body).decode()

    @classmethod
    def decode(cls, text: str | None, first_pull_from: datetime) -> OrderCursor:
        """The stored cursor; a missing or unreadable one starts at `first_pull_from`."""
        if not text:
            return cls(first_pull_from)
        try:
            body = jsonio.loads(text)
            after = _timestamp(str(body["After"]))
            before = _timestamp(str(body["Before"])) if body.get("Before") else None
            token = body.get("NextToken")
            return cls(after, token if isinstance(token, str) and token else None, before)
        except (ValueError, KeyError, TypeError):
            return cls(first_pull_from)

    def walk(self, now: datetime) -> OrderCursor | None:
        """The walk to start now (its `before` set), or None when no time has passed since the last one."""
        before = now - WINDOW_LAG
        return OrderCursor(self.after, None, before) if before > self.after else None

    def after_page(self, next_token: str | None) -> OrderCursor:
        """The cursor once a page of this walk was read, with Amazon's NextToken for the next one (None: the last)."""
        if next_token:
            return OrderCursor(self.after, next_token, self.before)
        return OrderCursor(self.before or self.after)
