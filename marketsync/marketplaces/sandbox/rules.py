"""Pure rules of the sandbox marketplaces (no I/O): throttling, feed faults, feed line validation."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

FEED_FAULTS = ("none", "reject", "item-errors")
ORDER_ACTIONS = ("Confirm", "Cancel", "Refund")


@dataclass(frozen=True)
class Bucket:
    capacity: float
    refill_per_s: float
    tokens: float
    at: datetime


def take_token(bucket: Bucket, now: datetime) -> tuple[Bucket, float | None]:
    """Spend one token. Returns the new bucket and None, or the unchanged refill and whole seconds to wait."""
    elapsed = max(0.0, (now - bucket.at).total_seconds())
    tokens = min(bucket.capacity, bucket.tokens + elapsed * bucket.refill_per_s)
    if tokens >= 1.0:
        return Bucket(bucket.capacity, bucket.refill_per_s, tokens - 1.0, now), None
    wait = 60.0 if bucket.refill_per_s <= 0 else max(1.0, math.ceil((1.0 - tokens) / bucket.refill_per_s))
    return Bucket(bucket.capacity, bucket.refill_per_s, tokens, now), wait


def faulted_lines(mode: str, count: int) -> set[int]:
    """Indexes of the lines an `item-errors` feed fails: every other line, starting with the first."""
    if mode != "item-errors":
        return set()
    return set(range(0, count, 2))


def price_stock_line_error(
    line: dict[str, Any], known_external_skus: set[str], *, accepts_zero_price: bool = False
) -> str | None:
    sku = line.get("ExternalSku")
    if not isinstance(sku, str) or sku not in known_external_skus:
        return "No listing with this SKU."
    price, quantity = line.get("Price"), line.get("Quantity")
    if price is None and quantity is None:
        return "Nothing to update."
    if price is not None:
        try:
            value = Decimal(str(price))
        except InvalidOperation:
            return "Price is not a number."
        if not value.is_finite() or value < 0 or (value == 0 and not accepts_zero_price):
            return "Price must be above zero."
    if quantity is not None and (not isinstance(quantity, int) or quantity < 0):
        return "Quantity must be a whole number, zero or more."
    return None


def order_update_error(line: dict[str, Any], item: dict[str, Any] | None) -> str | None:
    """Whether the marketplace accepts one Confirm/Cancel/Refund line for an item in its current state."""
    action = line.get("Action")
    if action not in ORDER_ACTIONS:
        return f"Unknown action {action!r}."
    if item is None:
        return "No such order item."
    status = item.get("Status")
    details = line.get("Details") or {}
    if action == "Confirm":
        if status != "Unshipped":
            return f"Cannot confirm shipment of an item that is {status}."
        if not details.get("TrackingNumber") and not details.get("CarrierCode"):
            return "A shipment needs a carrier or a tracking number."
    elif action == "Cancel":
        if status != "Unshipped":
            return f"Cannot cancel an item that is {status}."
    elif status not in ("Unshipped", "Shipped"):
        return f"Cannot refund an item that is {status}."
    return None


def order_status(item_statuses: list[str]) -> str:
    """The order's status from its items' statuses."""
    statuses = set(item_statuses)
    if not statuses or statuses <= {"Cancelled"}:
        return "Cancelled"
    if statuses <= {"Refunded", "Cancelled"}:
        return "Refunded"
    if "Unshipped" in statuses:
        return "PartiallyShipped" if statuses & {"Shipped", "Refunded"} else "Unshipped"
    return "Shipped"
